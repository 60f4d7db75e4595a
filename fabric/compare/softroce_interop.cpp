#include "fabric/compare/softroce_interop.hpp"
#include "fabric/platform/clock.hpp"

#include <arpa/inet.h>
#include <poll.h>

#include <chrono>
#include <cstring>
#include <future>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include "fabric/bench/vm_bench.hpp"
#include "fabric/transport/net/af_packet_socket.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/node_port.hpp"
#include "fabric/vm/guest_agent.hpp"
#include "fabric/vm/vm_plan.hpp"
#include "packet-engine/roce/roce_node.hpp"

namespace ethx {
namespace {

using nlohmann::json;

constexpr std::uint16_t kEtherTypeArp = 0x0806;
constexpr std::uint32_t kEnginePsn = 0x1357;
constexpr std::uint32_t kGuestPsn = 0x2468;

std::uint32_t parse_ip(const std::string& text) {
  in_addr address{};
  if (::inet_pton(AF_INET, text.c_str(), &address) != 1) {
    throw std::invalid_argument("not an IPv4 address: " + text);
  }
  return ntohl(address.s_addr);
}

struct CollectSink final : FrameSink {
  std::vector<std::vector<std::byte>> frames;
  void on_frame(std::span<const std::byte> frame) override {
    frames.emplace_back(frame.begin(), frame.end());
  }
};

std::uint16_t load16(const std::vector<std::byte>& frame, std::size_t at) {
  return static_cast<std::uint16_t>((std::to_integer<unsigned>(frame[at]) << 8) |
                                    std::to_integer<unsigned>(frame[at + 1]));
}

// The engine on the host port: a RoceNode over an AF_PACKET socket, plus the ARP answers a
// kernel peer needs before it can address us (rxe resolves the GID's IPv4 address by ARP).
class EnginePort {
 public:
  EnginePort(const std::string& netns, const std::string& interface, const MacAddr& mac,
             std::uint32_t ip)
      : socket_(make_options(netns, interface)), node_(roce::RoceNodeConfig{mac, ip}) {}

  roce::RoceNode& node() { return node_; }
  std::uint64_t arp_replies() const { return arp_replies_; }
  std::uint64_t frames_rx() const { return frames_rx_; }

  void transmit(Effects& effects) {
    for (const auto& frame : effects.send) send(frame);
    socket_.flush();
    effects.send.clear();
    if (effects.wake_at) wake_at_ = std::min(wake_at_, *effects.wake_at);
    effects.wake_at.reset();
  }

  // Receives and serves until done() or the deadline; false on the deadline.
  template <class Done>
  bool pump_until(Done done, std::int64_t timeout_ms) {
    const std::int64_t deadline = monotonic_ns() + timeout_ms * 1'000'000;
    while (!done()) {
      if (monotonic_ns() > deadline) return false;
      if (!step()) {
        pollfd pfd{socket_.fd(), POLLIN, 0};
        (void)::poll(&pfd, 1, 1);  // at most 1 ms: timers and the agent's thread are polled too
      }
    }
    return true;
  }

 private:
  static AfPacketOptions make_options(const std::string& netns, const std::string& interface) {
    AfPacketOptions options;
    options.netns = netns;
    options.interface = interface;
    options.role = SocketRole::kSwitchPort;  // ARP too, not only RoCEv2
    return options;
  }

  void send(std::span<const std::byte> frame) {
    SendResult result;
    while ((result = socket_.try_send(frame)) == SendResult::kFull) socket_.flush();
    if (result != SendResult::kQueued) {
      throw std::runtime_error("the host port cannot send a " + std::to_string(frame.size()) +
                               " B frame");
    }
  }

  // True if anything happened.
  bool step() {
    CollectSink sink;
    socket_.receive(64, sink);
    Effects effects;
    const auto now = static_cast<TimeNs>(monotonic_ns());
    for (const auto& frame : sink.frames) {
      ++frames_rx_;
      if (frame.size() >= 42 && load16(frame, 12) == kEtherTypeArp) {
        answer_arp(frame);
      } else {
        node_.on_frame(frame, now, effects);
      }
    }
    if (now >= wake_at_ || !sink.frames.empty()) {
      wake_at_ = kNever;
      node_.poll(now, effects);
    }
    transmit(effects);
    return !sink.frames.empty();
  }

  void answer_arp(const std::vector<std::byte>& request) {
    // Ethernet 14, then ARP: htype 2, ptype 2, hlen 1, plen 1, op 2, sha 6, spa 4, tha 6, tpa 4.
    if (load16(request, 14) != 1 || load16(request, 16) != 0x0800 || load16(request, 20) != 1) {
      return;
    }
    std::uint32_t target = 0;
    for (std::size_t i = 0; i < 4; ++i)
      target = (target << 8) | std::to_integer<unsigned>(request[38 + i]);
    if (target != node_.ip()) return;
    std::vector<std::byte> reply(42);
    const MacAddr mac = node_.mac();
    for (std::size_t i = 0; i < 6; ++i) {
      reply[i] = request[6 + i];                 // to the asker
      reply[6 + i] = std::byte{mac.octets[i]};   // from us
      reply[22 + i] = std::byte{mac.octets[i]};  // sender hardware address
      reply[32 + i] = request[22 + i];           // target hardware address
    }
    const std::uint8_t header[] = {0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x02};
    for (std::size_t i = 0; i < sizeof header; ++i) reply[12 + i] = std::byte{header[i]};
    for (std::size_t i = 0; i < 4; ++i) {
      reply[28 + i] = request[38 + i];  // sender protocol address: ours
      reply[38 + i] = request[28 + i];  // target protocol address: the asker's
    }
    send(reply);
    socket_.flush();
    ++arp_replies_;
  }

  static constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();
  AfPacketSocket socket_;
  roce::RoceNode node_;
  TimeNs wake_at_ = kNever;
  std::uint64_t arp_replies_ = 0;
  std::uint64_t frames_rx_ = 0;
};

// Runs one agent command on another thread while the engine keeps serving (the guest's
// command may need ARP answers or our ACKs to finish).
GuestBlock run_while_pumping(EnginePort& port, GuestAgent& agent, const std::string& command,
                             std::int64_t timeout_ms) {
  auto pending = std::async(std::launch::async, [&agent, &command, timeout_ms] {
    return agent.run(command, timeout_ms);
  });
  port.pump_until(
      [&pending] { return pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready; },
      timeout_ms + 5'000);
  return pending.get();  // rethrows the agent's error, if any
}

json counters_json(const roce::RoceCounters& c) {
  return {{"frames_rx", c.frames_rx},
          {"frames_tx", c.frames_tx},
          {"not_for_us", c.not_for_us},
          {"unknown_qp", c.unknown_qp},
          {"wrong_peer", c.wrong_peer},
          {"request_packets", c.request_packets},
          {"retransmitted_packets", c.retransmitted_packets},
          {"timeouts", c.timeouts},
          {"seq_naks_received", c.seq_naks_received},
          {"error_naks_received", c.error_naks_received},
          {"send_completions", c.send_completions},
          {"error_completions", c.error_completions}};
}

// The engine's side of the procedure: its buffers (the WRITE's source, the READ's target),
// registered, and one CQ and one RC QP, whose QPN and PSN go to the guest on the command line.
class EngineQp {
 public:
  EngineQp(EnginePort& port, const InteropOptions& options)
      : port_(port),
        node_(port.node()),
        timeout_ms_(options.timeout_ms),
        source_(options.region_bytes),
        readback_(options.region_bytes, std::byte{0}) {
    for (std::size_t i = 0; i < source_.size(); ++i) {
      source_[i] = std::byte{interop_engine_byte(i, options.seed)};
    }
    source_mr_ = node_.register_memory(source_, roce::kAccessLocalWrite);
    readback_mr_ = node_.register_memory(readback_, roce::kAccessLocalWrite);
    cq_ = node_.create_cq(16);
    roce::QpConfig qp_config;
    qp_config.send_cq = cq_;
    qp_config.recv_cq = cq_;
    qp_config.path_mtu_bytes = 1024;  // rxe on a 1500 B netdev: IB MTU 1024
    qp_config.initial_psn = kEnginePsn;
    const std::optional<roce::QpNum> qpn = node_.create_qp(qp_config);
    if (!qpn) throw std::logic_error("interop: create_qp failed");
    qpn_ = *qpn;
  }

  roce::QpNum qpn() const { return qpn_; }
  const std::vector<std::byte>& readback() const { return readback_; }
  const roce::MemoryRegion& source_mr() const { return source_mr_; }
  const roce::MemoryRegion& readback_mr() const { return readback_mr_; }

  void connect(const roce::QpRemote& remote) {
    if (!node_.connect_qp(qpn_, remote)) throw std::logic_error("interop: connect_qp failed");
  }

  // Posts `wr`, rings the doorbell and serves until its completion: {"bytes", "us", "status"}.
  // Throws when it does not complete in time or completes with another status.
  json complete(const roce::SendWr& wr, const char* what,
                roce::WcStatus expected = roce::WcStatus::kSuccess) {
    if (node_.post_send(qpn_, wr) != roce::PostResult::kOk) {
      throw std::runtime_error(std::string("interop: post_send of the ") + what + " failed");
    }
    Effects effects;
    const std::int64_t started_ns = monotonic_ns();
    node_.ring_doorbell(qpn_, static_cast<TimeNs>(started_ns), effects);
    port_.transmit(effects);
    roce::WorkCompletion wc;
    bool done = false;
    const bool in_time = port_.pump_until(
        [&] {
          done = done || node_.poll_cq(cq_, std::span<roce::WorkCompletion>(&wc, 1)) == 1;
          return done;
        },
        timeout_ms_);
    const double us = static_cast<double>(monotonic_ns() - started_ns) / 1000.0;
    if (!in_time) {
      throw std::runtime_error(std::string("interop: the ") + what +
                               " did not complete in time (engine counters: " +
                               counters_json(node_.counters()).dump() + ")");
    }
    if (wc.status != expected) {
      throw std::runtime_error(std::string("interop: the ") + what + " completed with " +
                               roce::to_string(wc.status) + ", expected " +
                               roce::to_string(expected));
    }
    return json{
        {"bytes", wr.sg_list.at(0).length}, {"us", us}, {"status", roce::to_string(wc.status)}};
  }

 private:
  EnginePort& port_;
  roce::RoceNode& node_;
  std::int64_t timeout_ms_;
  std::vector<std::byte> source_;
  std::vector<std::byte> readback_;
  roce::MemoryRegion source_mr_;
  roce::MemoryRegion readback_mr_;
  roce::CqId cq_ = 0;
  roce::QpNum qpn_ = 0;
};

// `ethx-rxe-peer start` in the guest: its QP, connected to ours; returns what it printed
// (qpn, psn, addr, rkey). Throws with the guest's output when it fails.
json start_guest_peer(EnginePort& port, GuestAgent& agent, const EngineQp& engine,
                      const InteropOptions& options) {
  const std::string start = "!ethx-rxe-peer start --remote-ip " + host_port_ip() +
                            " --remote-qpn " + std::to_string(engine.qpn()) + " --remote-psn " +
                            std::to_string(kEnginePsn) + " --psn " + std::to_string(kGuestPsn) +
                            " --size " + std::to_string(options.region_bytes) + " --mtu 1024";
  const GuestBlock started = run_while_pumping(port, agent, start, options.timeout_ms);
  json guest = guest_json(started.output);
  if (started.exit_status != 0 || guest.is_null() || !guest.contains("qpn")) {
    throw std::runtime_error("interop: `" + start + "` in the guest failed (exit " +
                             std::to_string(started.exit_status) + "): " + started.output);
  }
  return guest;
}

struct ReadbackCheck {
  std::size_t mismatches = 0;
  long first_bad = -1;  // the first byte that differs, -1 for none
};

// What the engine read: its own WRITE, then the guest's untouched pattern.
ReadbackCheck check_readback(const std::vector<std::byte>& readback,
                             const InteropOptions& options) {
  ReadbackCheck check;
  for (std::size_t i = 0; i < readback.size(); ++i) {
    const std::uint8_t want =
        i < options.write_bytes ? interop_engine_byte(i, options.seed) : interop_guest_byte(i);
    if (std::to_integer<std::uint8_t>(readback[i]) != want) {
      if (check.first_bad < 0) check.first_bad = static_cast<long>(i);
      ++check.mismatches;
    }
  }
  return check;
}

// A WRITE of other bytes with a wrong rkey: rxe must NAK it (remote access error) and leave
// its memory alone, which the guest's byte check proves. Last: the QP is in the error state
// afterwards, as an RC QP must be after a remote access error.
json bad_rkey_write(roce::RoceNode& node, EngineQp& engine, const roce::SendWr& write,
                    const InteropOptions& options) {
  std::vector<std::byte> other(options.write_bytes, std::byte{0xEE});
  const roce::MemoryRegion other_mr = node.register_memory(other, roce::kAccessLocalWrite);
  roce::SendWr bad = write;
  bad.wr_id = 3;
  bad.sg_list = {{other_mr.addr, options.write_bytes, other_mr.lkey}};
  bad.rkey = write.rkey ^ 0x00ABCD00;
  json result =
      engine.complete(bad, "RDMA WRITE with a wrong rkey", roce::WcStatus::kRemoteAccessError);
  result["rkey"] = bad.rkey;
  return result;
}

// `ethx-rxe-peer finish`: the guest checks its memory byte by byte. Its report (or its raw
// output), and whether it verified.
std::pair<json, bool> finish_guest_peer(EnginePort& port, GuestAgent& agent,
                                        const InteropOptions& options) {
  const std::string finish = "!ethx-rxe-peer finish --seed " + std::to_string(options.seed) +
                             " --written " + std::to_string(options.write_bytes);
  const GuestBlock finished = run_while_pumping(port, agent, finish, options.timeout_ms);
  const json checked = guest_json(finished.output);
  const bool guest_ok =
      finished.exit_status == 0 && !checked.is_null() && checked.value("verified", false);
  return {checked.is_null() ? json(finished.output) : checked, guest_ok};
}

roce::SendWr rdma_wr(std::uint64_t wr_id, roce::WrOpcode opcode, const roce::MemoryRegion& local,
                     std::uint32_t bytes, std::uint64_t remote_addr, std::uint32_t rkey) {
  roce::SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = opcode;
  wr.sg_list = {{local.addr, bytes, local.lkey}};
  wr.remote_addr = remote_addr;
  wr.rkey = rkey;
  return wr;
}

}  // namespace

json run_roce_interop(GuestAgent& agent, const InteropOptions& options) {
  if (options.write_bytes > options.region_bytes || options.region_bytes == 0) {
    throw std::invalid_argument("interop: write_bytes must be 1 .. region_bytes");
  }
  const std::optional<MacAddr> engine_mac = MacAddr::parse(host_port_mac());
  const std::optional<MacAddr> guest_mac = MacAddr::parse(guest_nic_mac(options.vm));
  const std::uint32_t engine_ip = parse_ip(host_port_ip());
  const std::uint32_t guest_ip = parse_ip(guest_nic_ip(options.vm));
  EnginePort port(netns::host_port_namespace(options.netns_tag),
                  netns::host_port_interface(options.netns_tag), *engine_mac, engine_ip);
  EngineQp engine(port, options);

  json report;
  report["engine_qp"] = {
      {"qpn", engine.qpn()}, {"psn", kEnginePsn}, {"ip", host_port_ip()}, {"mac", host_port_mac()}};
  const json guest = start_guest_peer(port, agent, engine, options);
  report["guest_qp"] = guest;
  engine.connect(roce::QpRemote{*guest_mac, guest_ip, guest.at("qpn").get<std::uint32_t>(),
                                guest.at("psn").get<std::uint32_t>()});
  const auto guest_addr = guest.at("addr").get<std::uint64_t>();
  const auto rkey = guest.at("rkey").get<std::uint32_t>();

  const roce::SendWr write = rdma_wr(1, roce::WrOpcode::kRdmaWrite, engine.source_mr(),
                                     options.write_bytes, guest_addr, rkey);
  report["write"] = engine.complete(write, "RDMA WRITE");
  report["read"] = engine.complete(rdma_wr(2, roce::WrOpcode::kRdmaRead, engine.readback_mr(),
                                           options.region_bytes, guest_addr, rkey),
                                   "RDMA READ");
  const ReadbackCheck readback = check_readback(engine.readback(), options);
  report["read"]["mismatches"] = readback.mismatches;
  report["read"]["first_bad"] = readback.first_bad;
  if (options.bad_rkey_write) {
    report["bad_rkey_write"] = bad_rkey_write(port.node(), engine, write, options);
  }

  const auto [checked, guest_ok] = finish_guest_peer(port, agent, options);
  report["guest"] = checked;
  report["engine"] = counters_json(port.node().counters());
  report["engine"]["arp_replies"] = port.arp_replies();
  report["engine"]["error_naks_received"] = port.node().counters().error_naks_received;
  report["verified"] = readback.mismatches == 0 && guest_ok;
  report["region_bytes"] = options.region_bytes;
  report["write_bytes"] = options.write_bytes;
  report["path"] = "engine (AF_PACKET on " + netns::host_port_interface(options.netns_tag) +
                   ") -> ethx-switch -> tap " +
                   netns::tap_interface(options.netns_tag, options.vm) +
                   " -> virtio-net -> rdma_rxe in VM " + std::to_string(options.vm);
  return report;
}

}  // namespace ethx
