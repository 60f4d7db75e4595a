// Wireshark as an independent judge of the RoCEv2 engine's frames: two RoceNodes in two
// network namespaces joined by a veth pair exchange WRITE, READ, SEND/RECV (with and without
// immediate), atomics and a NAKed bad-rkey WRITE through AF_PACKET sockets, while tshark
// records one veth end. tshark must then decode every captured frame as InfiniBand with the
// BTH opcodes the engines sent, validate every IPv4 header checksum, and report no malformed
// packet and no error- or warning-level expert info. Needs root, iproute2 and tshark/dumpcap
// (fabric/tools/debian-packages.txt); skipped with the reason otherwise. Every name starts
// with ethx-<tag>- and is removed afterwards, also when an assertion fails.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "fabric/platform/child_process.hpp"
#include "fabric/transport/doorbell.hpp"
#include "fabric/transport/net/af_packet_socket.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/privileges.hpp"
#include "fabric/transport/node_port.hpp"
#include "packet-engine/roce/roce_node.hpp"

namespace ethx {
namespace {

using roce::Opcode;
using Bytes = std::vector<std::byte>;

constexpr unsigned kMtu = 1778;
constexpr std::int64_t kDeadlineNs = 20'000'000'000;  // generous: 2 shared cores

std::string requirement_missing() {
  if (::geteuid() != 0) return "needs root (network namespaces, veths, raw sockets, capture)";
  const PrivilegeNeeds needs{.af_xdp = false, .af_packet = true, .namespaces = true};
  if (std::string error = check_privileges(needs, "this test"); !error.empty()) return error;
  if (netns::run_command({"ip", "-V"}).exit_code != 0) return "needs iproute2 (`ip`)";
  if (netns::run_command({"tshark", "-v"}).exit_code != 0 ||
      netns::run_command({"dumpcap", "-v"}).exit_code != 0) {
    return "needs tshark and dumpcap: apt-get install tshark (fabric/tools/debian-packages.txt)";
  }
  return {};
}

std::int64_t now_ns() {
  return monotonic_ns();
}

// ChildProcess takes a path, not a name to look up in PATH.
std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
    const std::string candidate = std::string(dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return name;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Records in a classic pcap file (the header is 24 B, each record 16 B + its bytes); -1 if the
// file is not (yet) a pcap file.
long pcap_records(const std::string& path) {
  const std::string bytes = read_file(path);
  if (bytes.size() < 24) return -1;
  std::uint32_t magic = 0;
  std::memcpy(&magic, bytes.data(), 4);
  if (magic != 0xa1b2c3d4 && magic != 0xa1b23c4d) return -1;  // written in host order
  long records = 0;
  std::size_t at = 24;
  while (at + 16 <= bytes.size()) {
    std::uint32_t caplen = 0;
    std::memcpy(&caplen, bytes.data() + at + 8, 4);
    if (at + 16 + caplen > bytes.size()) break;  // still being written
    at += 16 + caplen;
    ++records;
  }
  return records;
}

constexpr std::uint32_t kCanaryQp = 0x7777;  // no such QP: B counts and drops these
constexpr std::uint32_t kMarkerQp = 0x7778;

// Lines of the live capture's log that report a frame: "<number>|<BTH destination QP>".
int captured_lines(const std::string& log_path, std::uint32_t* with_dest_qp = nullptr) {
  std::istringstream lines(read_file(log_path));
  int count = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] < '0' || line[0] > '9') continue;
    const auto bar = line.find('|');
    if (with_dest_qp == nullptr) {
      ++count;
    } else if (bar != std::string::npos && bar + 1 < line.size() &&
               std::stoul(line.substr(bar + 1), nullptr, 0) == *with_dest_qp) {
      ++count;
    }
  }
  return count;
}

struct CollectSink final : FrameSink {
  std::vector<Bytes> frames;
  void on_frame(std::span<const std::byte> frame) override {
    frames.emplace_back(frame.begin(), frame.end());
  }
};

// One engine node on one veth end.
struct Endpoint {
  roce::RoceNode node;
  std::unique_ptr<AfPacketSocket> socket;
  roce::CqId cq = 0;
  std::map<int, int>* sent_opcodes = nullptr;  // BTH opcode -> frames put on the wire

  // `engine`: frames of the engine (counted); otherwise the test's own canary and marker.
  void transmit(Effects& effects, bool engine = true) {
    for (const auto& frame : effects.send) {
      if (engine) ++(*sent_opcodes)[std::to_integer<int>(frame[roce::kBthOffset])];
      SendResult result;
      while ((result = socket->try_send(frame)) == SendResult::kFull) socket->flush();
      ASSERT_EQ(result, SendResult::kQueued);
    }
    socket->flush();
    effects.clear();
  }
  void step() {
    CollectSink sink;
    socket->receive(64, sink);
    Effects effects;
    const auto now = static_cast<TimeNs>(now_ns());
    for (const auto& frame : sink.frames) node.on_frame(frame, now, effects);
    node.poll(now, effects);
    transmit(effects);
  }
};

// The namespaces, the capture process and the pcap file, removed in this order however the
// test ends.
class RoceTshark : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = requirement_missing(); !why.empty()) GTEST_SKIP() << why;
    tag_ = netns::random_tag();
    topology_ = std::make_unique<netns::VethTopology>(netns::pair_topology(tag_, kMtu));
    const std::string base = std::filesystem::temp_directory_path() / ("ethx-" + tag_ + "-roce");
    pcap_path_ = base + ".pcap";
    log_path_ = base + ".log";
  }
  void TearDown() override {
    capture_.reset();  // SIGTERM/SIGKILL by PID if it still runs (ChildProcess)
    if (topology_) {
      topology_->destroy();
      EXPECT_EQ(topology_->destroy_error(), "");
      const auto left = netns::cleanup_by_prefix(netns::run_prefix(tag_));
      EXPECT_TRUE(left.empty()) << "left behind: " << left.front();
    }
    std::error_code ignored;
    std::filesystem::remove(pcap_path_, ignored);
    std::filesystem::remove(log_path_, ignored);
  }

  std::string tag_;
  std::unique_ptr<netns::VethTopology> topology_;
  std::unique_ptr<ChildProcess> capture_;
  std::string pcap_path_;
  std::string log_path_;
};

roce::SendWr wr(std::uint64_t id, roce::WrOpcode opcode, const roce::MemoryRegion& local,
                std::size_t offset, std::uint32_t bytes, const roce::MemoryRegion& remote,
                std::size_t remote_offset) {
  roce::SendWr w;
  w.wr_id = id;
  w.opcode = opcode;
  w.sg_list = {roce::Sge{local.addr + offset, bytes, local.lkey}};
  w.remote_addr = remote.addr + remote_offset;
  w.rkey = remote.rkey;
  w.imm_data = 0x1000u + static_cast<std::uint32_t>(id);
  return w;
}

TEST_F(RoceTshark, EveryEngineFrameDecodesCleanlyAsInfiniBand) {
  const std::string ns0 = netns::node_namespace(tag_, 0);
  const std::string ns1 = netns::node_namespace(tag_, 1);
  const std::string if1 = netns::node_interface(tag_, 1);

  std::map<int, int> sent_opcodes;
  auto open = [&](std::size_t index) {
    AfPacketOptions options;
    options.interface = netns::node_interface(tag_, index);
    options.netns = netns::node_namespace(tag_, index);
    options.accept_rocev2 = true;
    // Through the qdisc: frames that bypass it skip the packet taps, so a capture on the
    // sender's own interface would not see them.
    options.qdisc_bypass = false;
    return std::make_unique<AfPacketSocket>(options);
  };
  Endpoint a{roce::RoceNode({.mac = default_mac_for_gpu(0), .ip = 0x0A4D0001}), open(0)};
  Endpoint b{roce::RoceNode({.mac = default_mac_for_gpu(1), .ip = 0x0A4D0002}), open(1)};
  a.sent_opcodes = b.sent_opcodes = &sent_opcodes;
  // Capture on node 1's veth end into a pcap file. tshark also prints one line per captured
  // frame with its destination QP (-P -l, flushed per frame): the signal that a given frame
  // has been taken off the interface.
  ChildProcess::SpawnOptions spawn;
  spawn.log_path = log_path_;
  capture_ = std::make_unique<ChildProcess>(ChildProcess::spawn({find_program("ip"),
                                                                 "netns",
                                                                 "exec",
                                                                 ns1,
                                                                 "tshark",
                                                                 "-i",
                                                                 if1,
                                                                 "-f",
                                                                 "udp port 4791",
                                                                 "-F",
                                                                 "pcap",
                                                                 "-w",
                                                                 pcap_path_,
                                                                 "-P",
                                                                 "-l",
                                                                 "-d",
                                                                 "udp.port==4791,infiniband",
                                                                 "-T",
                                                                 "fields",
                                                                 "-E",
                                                                 "separator=|",
                                                                 "-e",
                                                                 "frame.number",
                                                                 "-e",
                                                                 "infiniband.bth.destqp"},
                                                                spawn));

  // The capture is live once it has seen a frame: until then, send canaries (a SEND_ONLY to a
  // QP that does not exist, which B counts as unknown_qp and drops). tshark prints "Capturing
  // on" before the interface is open, so that line alone proves nothing.
  {
    roce::PacketAddress address;
    address.dst_mac = b.node.mac();
    address.src_mac = a.node.mac();
    address.src_ip = a.node.ip();
    address.dst_ip = b.node.ip();
    roce::PacketFields canary;
    canary.opcode = Opcode::kSendOnly;
    canary.dest_qp = kCanaryQp;
    const Bytes payload(16, std::byte{0xCA});
    const std::int64_t start = now_ns();
    while (captured_lines(log_path_) == 0) {
      ASSERT_TRUE(capture_->running()) << "tshark ended: " << read_file(log_path_);
      ASSERT_LT(now_ns() - start, kDeadlineNs) << "the capture never saw a frame";
      Effects effects;
      effects.send.push_back(roce::encode_packet(address, canary, payload));
      a.transmit(effects, false);
      for (int i = 0; i < 20 && captured_lines(log_path_) == 0; ++i) {
        ::poll(nullptr, 0, 10);  // re-check the log: the capture gives no other signal
      }
    }
  }

  a.cq = a.node.create_cq(1024);
  b.cq = b.node.create_cq(1024);
  roce::QpConfig config;
  config.path_mtu_bytes = 1024;
  config.ack_timeout_ns = 2'000'000'000;  // real time on a shared machine: no spurious resends
  auto connect = [&](std::uint32_t psn_a, std::uint32_t psn_b) {
    config.send_cq = config.recv_cq = a.cq;
    config.initial_psn = psn_a;
    const roce::QpNum qa = *a.node.create_qp(config);
    config.send_cq = config.recv_cq = b.cq;
    config.initial_psn = psn_b;
    const roce::QpNum qb = *b.node.create_qp(config);
    EXPECT_TRUE(a.node.connect_qp(qa, {b.node.mac(), b.node.ip(), qb, psn_b}));
    EXPECT_TRUE(b.node.connect_qp(qb, {a.node.mac(), a.node.ip(), qa, psn_a}));
    return std::make_pair(qa, qb);
  };
  const auto [qa, qb] = connect(0x100, 0x200);
  const auto [qa_bad, qb_bad] = connect(0x300, 0x400);

  Bytes local(64 * 1024);
  Bytes remote(64 * 1024);
  Bytes inbox(64 * 1024);
  for (std::size_t i = 0; i < local.size(); ++i) local[i] = static_cast<std::byte>(i * 7 + 3);
  for (std::size_t i = 0; i < remote.size(); ++i) remote[i] = static_cast<std::byte>(i * 13 + 1);
  const auto local_mr = a.node.register_memory(local, roce::kAccessLocalWrite);
  const auto remote_mr =
      b.node.register_memory(remote, roce::kAccessLocalWrite | roce::kAccessRemoteWrite |
                                         roce::kAccessRemoteRead | roce::kAccessRemoteAtomic);
  const auto inbox_mr = b.node.register_memory(inbox, roce::kAccessLocalWrite);
  const Bytes remote_before = remote;

  // Receives for the six messages that consume one (SENDs and WRITEs with immediate).
  for (std::uint64_t i = 0; i < 6; ++i) {
    ASSERT_EQ(b.node.post_recv(qb, {.wr_id = 100 + i,
                                    .sg_list = {{inbox_mr.addr + i * 4096, 4096, inbox_mr.lkey}}}),
              roce::PostResult::kOk);
  }
  using roce::WrOpcode;
  // Together these use every RC opcode from SEND_FIRST (0x00) to FETCH_ADD (0x14).
  const std::vector<roce::SendWr> wrs = {
      wr(1, WrOpcode::kRdmaWrite, local_mr, 0, 5000, remote_mr, 0),       // FIRST, MIDDLE x3, LAST
      wr(2, WrOpcode::kRdmaWrite, local_mr, 5000, 100, remote_mr, 5000),  // ONLY
      wr(3, WrOpcode::kRdmaWriteWithImm, local_mr, 5100, 64, remote_mr, 5100),    // ONLY_IMM
      wr(4, WrOpcode::kRdmaWriteWithImm, local_mr, 5164, 1500, remote_mr, 5164),  // LAST_IMM
      wr(5, WrOpcode::kRdmaRead, local_mr, 20000, 3000, remote_mr, 30000),        // resp F, M, L
      wr(6, WrOpcode::kRdmaRead, local_mr, 23000, 100, remote_mr, 33000),         // resp ONLY
      wr(7, WrOpcode::kSend, local_mr, 0, 2500, remote_mr, 0),            // FIRST, MIDDLE, LAST
      wr(8, WrOpcode::kSendWithImm, local_mr, 100, 10, remote_mr, 0),     // ONLY_IMM
      wr(9, WrOpcode::kSend, local_mr, 0, 0, remote_mr, 0),               // ONLY
      wr(10, WrOpcode::kSendWithImm, local_mr, 200, 2000, remote_mr, 0),  // LAST_IMM
  };
  for (const auto& w : wrs) ASSERT_EQ(a.node.post_send(qa, w), roce::PostResult::kOk);
  auto fetch_add = wr(11, WrOpcode::kAtomicFetchAdd, local_mr, 40000, 8, remote_mr, 40000);
  fetch_add.compare_add = 5;
  auto compare_swap = wr(12, WrOpcode::kAtomicCompareSwap, local_mr, 40008, 8, remote_mr, 40008);
  std::uint64_t expected_old = 0;
  std::memcpy(&expected_old, remote.data() + 40008, 8);
  compare_swap.compare_add = expected_old;
  compare_swap.swap = 0x1122334455667788;
  ASSERT_EQ(a.node.post_send(qa, fetch_add), roce::PostResult::kOk);
  ASSERT_EQ(a.node.post_send(qa, compare_swap), roce::PostResult::kOk);
  // A WRITE with an rkey B never issued: NAK remote access error, counted, memory untouched.
  auto bad = wr(13, WrOpcode::kRdmaWrite, local_mr, 0, 64, remote_mr, 0);
  bad.rkey ^= 0x7700;
  ASSERT_EQ(a.node.post_send(qa_bad, bad), roce::PostResult::kOk);
  static_cast<void>(qb_bad);

  {
    Effects effects;
    a.node.ring_doorbell(qa, static_cast<TimeNs>(now_ns()), effects);  // one doorbell, 12 WRs
    a.node.ring_doorbell(qa_bad, static_cast<TimeNs>(now_ns()), effects);
    a.transmit(effects);
  }
  std::vector<roce::WorkCompletion> a_done;
  std::vector<roce::WorkCompletion> b_done;
  const std::int64_t start = now_ns();
  while (a_done.size() < 13 || b_done.size() < 6) {
    ASSERT_LT(now_ns() - start, kDeadlineNs)
        << "completions: " << a_done.size() << "/13 on A, " << b_done.size() << "/6 on B";
    std::array<pollfd, 2> fds{{{a.socket->fd(), POLLIN, 0}, {b.socket->fd(), POLLIN, 0}}};
    ::poll(fds.data(), fds.size(), 10);  // wakes on a frame; 10 ms bound for the ACK timers
    a.step();
    b.step();
    std::array<roce::WorkCompletion, 16> batch;
    for (std::size_t n = a.node.poll_cq(a.cq, batch); n > 0; n = a.node.poll_cq(a.cq, batch)) {
      a_done.insert(a_done.end(), batch.begin(), batch.begin() + static_cast<long>(n));
    }
    for (std::size_t n = b.node.poll_cq(b.cq, batch); n > 0; n = b.node.poll_cq(b.cq, batch)) {
      b_done.insert(b_done.end(), batch.begin(), batch.begin() + static_cast<long>(n));
    }
  }

  // The data moved as asked.
  for (const auto& wc : a_done) {
    if (wc.wr_id == 13) {
      EXPECT_EQ(wc.status, roce::WcStatus::kRemoteAccessError);
    } else {
      EXPECT_EQ(wc.status, roce::WcStatus::kSuccess) << wc.wr_id << " " << to_string(wc.status);
    }
  }
  for (const auto& wc : b_done) EXPECT_EQ(wc.status, roce::WcStatus::kSuccess);
  EXPECT_TRUE(std::equal(local.begin(), local.begin() + 6664, remote.begin()));
  EXPECT_TRUE(std::equal(remote_before.begin() + 30000, remote_before.begin() + 33000,
                         local.begin() + 20000));
  // The WRITEs with immediate took the first two receives; the 2500 B SEND the third.
  EXPECT_TRUE(std::equal(local.begin(), local.begin() + 2500, inbox.begin() + 2 * 4096));
  std::uint64_t old_value = 0;
  std::memcpy(&old_value, local.data() + 40008, 8);
  EXPECT_EQ(old_value, expected_old);
  std::uint64_t swapped = 0;
  std::memcpy(&swapped, remote.data() + 40008, 8);
  EXPECT_EQ(swapped, 0x1122334455667788u);
  EXPECT_EQ(b.node.counters().access_bad_rkey, 1u);
  EXPECT_EQ(b.node.counters().access_naks_sent, 1u);
  EXPECT_EQ(a.node.counters().retransmitted_packets, 0u) << "a veth should not lose frames";

  // The end marker: one more SEND_ONLY to a QP that does not exist, sent after every
  // completion, so after every engine frame on this veth. Once the capture reports it, it has
  // taken everything before it; then stop it (SIGINT to our PID only): the file is complete
  // when it has exited.
  int total_sent = 0;
  for (const auto& [opcode, count] : sent_opcodes) total_sent += count;
  {
    roce::PacketAddress address;
    address.dst_mac = b.node.mac();
    address.src_mac = a.node.mac();
    address.src_ip = a.node.ip();
    address.dst_ip = b.node.ip();
    roce::PacketFields marker;
    marker.opcode = Opcode::kSendOnly;
    marker.dest_qp = kMarkerQp;
    Effects effects;
    effects.send.push_back(roce::encode_packet(address, marker, {}));
    a.transmit(effects, false);
    std::uint32_t marker_qp = kMarkerQp;
    const std::int64_t wait_start = now_ns();
    while (captured_lines(log_path_, &marker_qp) == 0) {
      ASSERT_LT(now_ns() - wait_start, kDeadlineNs)
          << "the capture never reported the end marker:\n"
          << read_file(log_path_);
      ::poll(nullptr, 0, 10);  // re-check the log: the capture gives no other signal
    }
  }
  ASSERT_EQ(::kill(capture_->pid(), SIGINT), 0);
  ASSERT_TRUE(capture_->wait_exit(10'000)) << read_file(log_path_);
  EXPECT_EQ(capture_->exit_status(), 0) << capture_->exit_description();
  capture_.reset();
  const long records = pcap_records(pcap_path_);
  ASSERT_GT(records, total_sent) << "engine frames plus canaries and the marker";

  // tshark's verdict. ip.check_checksum makes it verify every IPv4 header checksum itself.
  // The upper-layer protocols Wireshark guesses inside SEND payloads (RPC-over-RDMA, SMB
  // Direct, iSER, ...) are off: here the payloads are test patterns, and an empty SEND makes
  // the RPC-over-RDMA heuristic throw. The RoCEv2 transport headers are what is judged.
  std::vector<std::string> argv = {"tshark",
                                   "-r",
                                   pcap_path_,
                                   "-o",
                                   "ip.check_checksum:TRUE",
                                   "-d",
                                   "udp.port==4791,infiniband"};
  for (const char* protocol : {"rpcordma", "smb_direct", "iser", "nvme-rdma", "lnet", "smc",
                               "infiniband_sdp", "fcoib", "infiniband.eoib"}) {
    argv.insert(argv.end(), {"--disable-protocol", protocol});
  }
  for (const char* field :
       {"frame.number", "infiniband.bth.opcode", "infiniband.bth.destqp", "ip.checksum.status",
        "_ws.malformed", "_ws.expert.severity", "_ws.expert.message"}) {
    argv.insert(argv.end(), {"-e", field});
  }
  argv.insert(argv.end(), {"-T", "fields", "-E", "separator=|", "-E", "occurrence=a"});
  const netns::CommandResult tshark = netns::run_command(argv);
  ASSERT_EQ(tshark.exit_code, 0) << tshark.output;
  std::map<int, int> decoded_opcodes;
  int frames = 0;
  int malformed = 0;
  int expert_warnings_or_errors = 0;
  int bad_ip_checksums = 0;
  int canaries = 0;
  int markers = 0;
  std::istringstream lines(tshark.output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] < '0' || line[0] > '9') continue;  // "Running as root" etc.
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string field; std::getline(fields, field, '|');) f.push_back(field);
    f.resize(7);
    ++frames;
    ASSERT_FALSE(f[1].empty()) << "frame not decoded as InfiniBand: " << line;
    ASSERT_FALSE(f[2].empty()) << "no BTH destination QP: " << line;
    const auto dest_qp = std::stoul(f[2], nullptr, 0);
    if (dest_qp == kCanaryQp) {
      ++canaries;
    } else if (dest_qp == kMarkerQp) {
      ++markers;
    } else {
      ++decoded_opcodes[std::stoi(f[1])];
    }
    if (f[3] != "1") ++bad_ip_checksums;  // 1 = PROTO_CHECKSUM_E_GOOD (0 bad, 2 unverified)
    if (!f[4].empty()) ++malformed;
    // Severities: chat 0x200000, note 0x400000, warn 0x600000, error 0x800000.
    std::stringstream severities(f[5]);
    for (std::string s; std::getline(severities, s, ',');) {
      if (!s.empty() && std::stol(s) >= 0x600000) {
        ++expert_warnings_or_errors;
        ADD_FAILURE() << "expert info: " << line;
      }
    }
  }
  EXPECT_EQ(frames, records);
  EXPECT_EQ(frames - canaries - markers, total_sent);
  EXPECT_GE(canaries, 1);
  EXPECT_EQ(markers, 1);
  EXPECT_EQ(decoded_opcodes, sent_opcodes);
  EXPECT_EQ(malformed, 0);
  EXPECT_EQ(expert_warnings_or_errors, 0);
  EXPECT_EQ(bad_ip_checksums, 0);
  for (int opcode = 0x00; opcode <= 0x14; ++opcode) {
    EXPECT_GT(decoded_opcodes[opcode], 0)
        << "no " << roce::to_string(static_cast<Opcode>(opcode)) << " captured";
  }
  std::printf(
      "[ tshark   ] %d frames (%d engine, %d canaries, 1 marker), %zu distinct opcodes, "
      "%d malformed, %d expert warnings/errors, %d bad IPv4 checksums\n",
      frames, total_sent, canaries, decoded_opcodes.size(), malformed, expert_warnings_or_errors,
      bad_ip_checksums);
}

}  // namespace
}  // namespace ethx
