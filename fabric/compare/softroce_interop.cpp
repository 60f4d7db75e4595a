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

}  // namespace

json run_roce_interop(GuestAgent& agent, const InteropOptions& options) {
  if (options.write_bytes > options.region_bytes || options.region_bytes == 0) {
    throw std::invalid_argument("interop: write_bytes must be 1 .. region_bytes");
  }
  const std::string host_ns = netns::host_port_namespace(options.netns_tag);
  const std::optional<MacAddr> engine_mac = MacAddr::parse(host_port_mac());
  const std::optional<MacAddr> guest_mac = MacAddr::parse(guest_nic_mac(options.vm));
  const std::uint32_t engine_ip = parse_ip(host_port_ip());
  const std::uint32_t guest_ip = parse_ip(guest_nic_ip(options.vm));
  EnginePort port(host_ns, netns::host_port_interface(options.netns_tag), *engine_mac, engine_ip);
  roce::RoceNode& node = port.node();

  // Engine side first: its QPN and PSN go to the guest on the command line.
  std::vector<std::byte> source(options.region_bytes);
  std::vector<std::byte> readback(options.region_bytes, std::byte{0});
  for (std::size_t i = 0; i < source.size(); ++i) {
    source[i] = std::byte{interop_engine_byte(i, options.seed)};
  }
  const roce::MemoryRegion source_mr = node.register_memory(source, roce::kAccessLocalWrite);
  const roce::MemoryRegion readback_mr = node.register_memory(readback, roce::kAccessLocalWrite);
  const roce::CqId cq = node.create_cq(16);
  roce::QpConfig qp_config;
  qp_config.send_cq = cq;
  qp_config.recv_cq = cq;
  qp_config.path_mtu_bytes = 1024;  // rxe on a 1500 B netdev: IB MTU 1024
  qp_config.initial_psn = kEnginePsn;
  const std::optional<roce::QpNum> qpn = node.create_qp(qp_config);
  if (!qpn) throw std::logic_error("interop: create_qp failed");

  json report;
  report["engine_qp"] = {
      {"qpn", *qpn}, {"psn", kEnginePsn}, {"ip", host_port_ip()}, {"mac", host_port_mac()}};
  const std::string start = "!ethx-rxe-peer start --remote-ip " + host_port_ip() +
                            " --remote-qpn " + std::to_string(*qpn) + " --remote-psn " +
                            std::to_string(kEnginePsn) + " --psn " + std::to_string(kGuestPsn) +
                            " --size " + std::to_string(options.region_bytes) + " --mtu 1024";
  const GuestBlock started = run_while_pumping(port, agent, start, options.timeout_ms);
  const json guest = guest_json(started.output);
  if (started.exit_status != 0 || guest.is_null() || !guest.contains("qpn")) {
    throw std::runtime_error("interop: `" + start + "` in the guest failed (exit " +
                             std::to_string(started.exit_status) + "): " + started.output);
  }
  report["guest_qp"] = guest;
  roce::QpRemote remote;
  remote.mac = *guest_mac;
  remote.ip = guest_ip;
  remote.qpn = guest.at("qpn").get<std::uint32_t>();
  remote.initial_psn = guest.at("psn").get<std::uint32_t>();
  if (!node.connect_qp(*qpn, remote)) throw std::logic_error("interop: connect_qp failed");
  const std::uint64_t guest_addr = guest.at("addr").get<std::uint64_t>();
  const std::uint32_t rkey = guest.at("rkey").get<std::uint32_t>();

  auto complete = [&](const roce::SendWr& wr, const char* what,
                      roce::WcStatus expected = roce::WcStatus::kSuccess) {
    if (node.post_send(*qpn, wr) != roce::PostResult::kOk) {
      throw std::runtime_error(std::string("interop: post_send of the ") + what + " failed");
    }
    Effects effects;
    const std::int64_t started_ns = monotonic_ns();
    node.ring_doorbell(*qpn, static_cast<TimeNs>(started_ns), effects);
    port.transmit(effects);
    roce::WorkCompletion wc;
    bool done = false;
    const bool in_time = port.pump_until(
        [&] {
          done = done || node.poll_cq(cq, std::span<roce::WorkCompletion>(&wc, 1)) == 1;
          return done;
        },
        options.timeout_ms);
    const double us = static_cast<double>(monotonic_ns() - started_ns) / 1000.0;
    if (!in_time) {
      throw std::runtime_error(std::string("interop: the ") + what +
                               " did not complete in time (engine counters: " +
                               counters_json(node.counters()).dump() + ")");
    }
    if (wc.status != expected) {
      throw std::runtime_error(std::string("interop: the ") + what + " completed with " +
                               roce::to_string(wc.status) + ", expected " +
                               roce::to_string(expected));
    }
    return json{
        {"bytes", wr.sg_list.at(0).length}, {"us", us}, {"status", roce::to_string(wc.status)}};
  };

  roce::SendWr write;
  write.wr_id = 1;
  write.opcode = roce::WrOpcode::kRdmaWrite;
  write.sg_list = {{source_mr.addr, options.write_bytes, source_mr.lkey}};
  write.remote_addr = guest_addr;
  write.rkey = rkey;
  report["write"] = complete(write, "RDMA WRITE");

  roce::SendWr read;
  read.wr_id = 2;
  read.opcode = roce::WrOpcode::kRdmaRead;
  read.sg_list = {{readback_mr.addr, options.region_bytes, readback_mr.lkey}};
  read.remote_addr = guest_addr;
  read.rkey = rkey;
  report["read"] = complete(read, "RDMA READ");

  // What the engine read: its own WRITE, then the guest's untouched pattern.
  std::size_t mismatches = 0;
  long first_bad = -1;
  for (std::size_t i = 0; i < readback.size(); ++i) {
    const std::uint8_t want =
        i < options.write_bytes ? interop_engine_byte(i, options.seed) : interop_guest_byte(i);
    if (std::to_integer<std::uint8_t>(readback[i]) != want) {
      if (first_bad < 0) first_bad = static_cast<long>(i);
      ++mismatches;
    }
  }
  report["read"]["mismatches"] = mismatches;
  report["read"]["first_bad"] = first_bad;

  // A WRITE of other bytes with a wrong rkey: rxe must NAK it (remote access error) and leave
  // its memory alone, which the guest's byte check below proves. Last: the QP is in the error
  // state afterwards, as an RC QP must be after a remote access error.
  if (options.bad_rkey_write) {
    std::vector<std::byte> other(options.write_bytes, std::byte{0xEE});
    const roce::MemoryRegion other_mr = node.register_memory(other, roce::kAccessLocalWrite);
    roce::SendWr bad = write;
    bad.wr_id = 3;
    bad.sg_list = {{other_mr.addr, options.write_bytes, other_mr.lkey}};
    bad.rkey = rkey ^ 0x00ABCD00;
    report["bad_rkey_write"] =
        complete(bad, "RDMA WRITE with a wrong rkey", roce::WcStatus::kRemoteAccessError);
    report["bad_rkey_write"]["rkey"] = bad.rkey;
  }

  const std::string finish = "!ethx-rxe-peer finish --seed " + std::to_string(options.seed) +
                             " --written " + std::to_string(options.write_bytes);
  const GuestBlock finished = run_while_pumping(port, agent, finish, options.timeout_ms);
  const json checked = guest_json(finished.output);
  report["guest"] = checked.is_null() ? json(finished.output) : checked;
  report["engine"] = counters_json(node.counters());
  report["engine"]["arp_replies"] = port.arp_replies();
  report["engine"]["error_naks_received"] = node.counters().error_naks_received;
  const bool guest_ok =
      finished.exit_status == 0 && !checked.is_null() && checked.value("verified", false);
  report["verified"] = mismatches == 0 && guest_ok;
  report["region_bytes"] = options.region_bytes;
  report["write_bytes"] = options.write_bytes;
  report["path"] = "engine (AF_PACKET on " + netns::host_port_interface(options.netns_tag) +
                   ") -> ethx-switch -> tap " +
                   netns::tap_interface(options.netns_tag, options.vm) +
                   " -> virtio-net -> rdma_rxe in VM " + std::to_string(options.vm);
  return report;
}

}  // namespace ethx
