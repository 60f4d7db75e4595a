// Two network namespaces joined by one veth pair; a FrameSocket on each end (AF_XDP with
// ethx's XDP program, or AF_PACKET) ping-pongs 1000 fabric frames of varying sizes, checking
// every byte. Needs root; skipped otherwise. Every run uses its own ethx-<tag>- names and
// asserts that nothing of it is left afterwards.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "fabric/transport/net/af_packet_socket.hpp"
#include "fabric/transport/net/frame_socket.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/privileges.hpp"
#include "packet-engine/mac_addr.hpp"
#include "packet-engine/wire.hpp"
#ifdef ETHX_HAVE_XDP
#include "fabric/transport/net/afxdp_socket.hpp"
#endif

namespace ethx {
namespace {

constexpr std::size_t kRoundTrips = 1000;
constexpr unsigned kMtu = 1778;  // 1792 B frames: 2 KiB AF_XDP chunks minus 256 B

enum class Transport { kAfXdp, kAfPacket };

std::string requirement_missing(Transport transport) {
  if (::geteuid() != 0) return "needs root (network namespaces, veths, raw sockets)";
  const PrivilegeNeeds needs{.af_xdp = transport == Transport::kAfXdp,
                             .af_packet = transport == Transport::kAfPacket,
                             .namespaces = true};
  std::string error = check_privileges(needs, "this test");
  if (!error.empty()) return error;
  if (netns::run_command({"ip", "-V"}).exit_code != 0) return "needs iproute2 (`ip`)";
#ifndef ETHX_HAVE_XDP
  if (transport == Transport::kAfXdp) return "built without ETHX_WITH_XDP";
#endif
  return {};
}

std::unique_ptr<FrameSocket> open_socket(Transport transport, const std::string& ns,
                                         const std::string& interface, SocketRole role) {
  static_cast<void>(transport);  // only AF_PACKET exists without ETHX_WITH_XDP
#ifdef ETHX_HAVE_XDP
  if (transport == Transport::kAfXdp) {
    AfXdpOptions options;
    options.interface = interface;
    options.netns = ns;
    options.role = role;
    return std::make_unique<AfXdpSocket>(options);
  }
#endif
  AfPacketOptions options;
  options.interface = interface;
  options.netns = ns;
  options.role = role;
  return std::make_unique<AfPacketSocket>(options);
}

// Names this run left behind, in the namespaces list and the root namespace's links.
std::vector<std::string> leftovers(const std::string& prefix) {
  std::vector<std::string> found;
  const netns::CommandResult namespaces = netns::run_command({"ip", "netns", "list"});
  const netns::CommandResult links = netns::run_command({"ip", "-br", "link"});
  for (const auto* output : {&namespaces.output, &links.output}) {
    std::size_t pos = 0;
    while ((pos = output->find(prefix, pos)) != std::string::npos) {
      found.push_back(output->substr(pos, output->find_first_of(" \n@", pos) - pos));
      pos += prefix.size();
    }
  }
  return found;
}

struct CollectSink final : FrameSink {
  std::vector<std::vector<std::byte>> frames;
  void on_frame(std::span<const std::byte> frame) override {
    frames.emplace_back(frame.begin(), frame.end());
  }
};

std::vector<std::byte> make_frame(const MacAddr& dst, const MacAddr& src, std::uint16_t ether_type,
                                  std::size_t bytes, std::uint64_t sequence) {
  std::vector<std::byte> frame(bytes);
  for (std::size_t i = 0; i < 6; ++i) {
    frame[i] = std::byte{dst.octets[i]};
    frame[6 + i] = std::byte{src.octets[i]};
  }
  frame[12] = std::byte(ether_type >> 8);
  frame[13] = std::byte(ether_type & 0xff);
  std::memcpy(frame.data() + 14, &sequence, sizeof sequence);
  for (std::size_t i = 22; i < bytes; ++i) frame[i] = std::byte((i * 131 + sequence * 7) & 0xff);
  return frame;
}

class FrameSocketPingPong : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    if (const std::string why = requirement_missing(GetParam()); !why.empty()) GTEST_SKIP() << why;
    tag_ = netns::random_tag();
    prefix_ = netns::run_prefix(tag_);
    topology_ = std::make_unique<netns::VethTopology>(netns::pair_topology(tag_, kMtu));
  }
  void TearDown() override {
    if (!topology_) return;
    topology_.reset();
    EXPECT_EQ(leftovers(prefix_), std::vector<std::string>{}) << "left behind by this test";
  }

  std::string tag_;
  std::string prefix_;
  std::unique_ptr<netns::VethTopology> topology_;
};

TEST_P(FrameSocketPingPong, ThousandFabricFramesRoundTripWithCheckedContent) {
  const Transport transport = GetParam();
  auto a = open_socket(transport, netns::node_namespace(tag_, 0), netns::node_interface(tag_, 0),
                       SocketRole::kNode);
  auto b = open_socket(transport, netns::node_namespace(tag_, 1), netns::node_interface(tag_, 1),
                       SocketRole::kNode);
  ASSERT_EQ(a->max_frame_bytes(), 1792u);
  ASSERT_EQ(b->max_frame_bytes(), 1792u);
  const MacAddr mac_a = default_mac_for_gpu(0);
  const MacAddr mac_b = default_mac_for_gpu(1);

  // B echoes every frame back with the MAC addresses swapped, on its own thread; the guard
  // stops and joins it however the test body ends (a failed ASSERT returns early).
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> echoed{0};
  std::thread echo([&] {
    PollWaiter waiter;
    const std::array<int, 1> fds{b->fd()};
    CollectSink sink;
    while (!stop.load()) {
      sink.frames.clear();
      if (b->receive(64, sink) == 0) {
        waiter.wait(
            fds, [&] { return stop.load() || b->has_input(); }, 10'000'000);
        continue;
      }
      for (auto& frame : sink.frames) {
        std::swap_ranges(frame.begin(), frame.begin() + 6, frame.begin() + 6);
        while (b->try_send(frame) == SendResult::kFull && !stop.load()) b->flush();
        ++echoed;
      }
      b->flush();
    }
  });
  struct JoinOnExit {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~JoinOnExit() {
      stop.store(true);
      if (thread.joinable()) thread.join();
    }
  } join_echo{stop, echo};

  // Not ours: IPv4 to B. The node's XDP program / packet filter must hand it to the kernel,
  // not to the socket.
  const auto foreign = make_frame(mac_b, mac_a, 0x0800, 100, 0);
  ASSERT_EQ(a->try_send(foreign), SendResult::kQueued);
  a->flush();

  PollWaiter waiter;
  const std::array<int, 1> fds{a->fd()};
  CollectSink sink;
  std::vector<std::int64_t> rtts;
  std::uint64_t mismatches = 0;
  for (std::uint64_t sequence = 1; sequence <= kRoundTrips; ++sequence) {
    const std::size_t bytes = 60 + (sequence * 97) % (a->max_frame_bytes() - 60 + 1);
    const std::uint16_t ether_type = sequence % 2 ? wire::kEtherTypeFabric : wire::kEtherTypeEcho;
    const auto frame = make_frame(mac_b, mac_a, ether_type, bytes, sequence);
    const std::int64_t start = monotonic_ns();
    ASSERT_EQ(a->try_send(frame), SendResult::kQueued);
    a->flush();
    sink.frames.clear();
    while (sink.frames.empty()) {
      a->receive(1, sink);
      if (!sink.frames.empty()) break;
      ASSERT_LT(monotonic_ns() - start, 2'000'000'000) << "reply " << sequence << " lost";
      waiter.wait(
          fds, [&] { return a->has_input(); }, 100'000'000);
    }
    rtts.push_back(monotonic_ns() - start);
    auto expected = make_frame(mac_a, mac_b, ether_type, bytes, sequence);
    if (sink.frames.front() != expected) ++mismatches;
  }
  stop.store(true);
  echo.join();
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(echoed.load(), kRoundTrips);  // the IPv4 frame never reached the socket

  // A frame longer than the buffers allow is reported and counted, never dropped silently.
  const auto oversize = make_frame(mac_b, mac_a, wire::kEtherTypeFabric, 1793, 1);
  EXPECT_EQ(a->try_send(oversize), SendResult::kTooLarge);
  EXPECT_EQ(a->counters().tx_too_large, 1u);
  SocketNodePort port(std::move(a));
  EXPECT_THROW(port.try_send(oversize), FrameTooLarge);

#ifdef ETHX_HAVE_XDP
  if (transport == Transport::kAfXdp) {
    auto& xdp = dynamic_cast<AfXdpSocket&>(*b);
    EXPECT_FALSE(xdp.zero_copy());  // veth has no zero-copy
    const XdpProgramStats stats = xdp.program_stats();
    EXPECT_EQ(stats.redirected, kRoundTrips);
    EXPECT_GE(stats.passed, 1u);  // the IPv4 frame
    std::cout << "[ afxdp ] xdp mode " << xdp.xdp_mode() << ", program redirected "
              << stats.redirected << ", passed " << stats.passed << "\n";
  }
#endif
  std::sort(rtts.begin(), rtts.end());
  const auto percentile = [&](double p) {
    return rtts[static_cast<std::size_t>(p * static_cast<double>(rtts.size() - 1))];
  };
  std::cout << "[ " << (transport == Transport::kAfXdp ? "afxdp" : "afpacket") << " ] "
            << kRoundTrips << " round trips between two namespaces: p50 " << percentile(0.5)
            << " ns, p99 " << percentile(0.99) << " ns\n";
  RecordProperty("rtt_p50_ns", std::to_string(percentile(0.5)));
  RecordProperty("rtt_p99_ns", std::to_string(percentile(0.99)));
  port.socket().flush();
  b.reset();
}

#ifdef ETHX_HAVE_XDP
TEST(AfXdpSocketErrors, MissingProgramObjectIsNamedClearly) {
  if (const std::string why = requirement_missing(Transport::kAfXdp); !why.empty()) {
    GTEST_SKIP() << why;
  }
  const std::string tag = netns::random_tag();
  netns::VethTopology topology(netns::pair_topology(tag, kMtu));
  AfXdpOptions options;
  options.interface = netns::node_interface(tag, 0);
  options.netns = netns::node_namespace(tag, 0);
  options.program_path = "/nonexistent/ethx_xdp.bpf.o";
  try {
    AfXdpSocket socket(options);
    ADD_FAILURE() << "opened a socket without its XDP program";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/ethx_xdp.bpf.o"), std::string::npos)
        << error.what();
  }
  topology.destroy();
  EXPECT_EQ(leftovers(netns::run_prefix(tag)), std::vector<std::string>{});
}

TEST(AfXdpSocketErrors, RebindRightAfterCloseSucceeds) {
  if (const std::string why = requirement_missing(Transport::kAfXdp); !why.empty()) {
    GTEST_SKIP() << why;
  }
  const std::string tag = netns::random_tag();
  netns::VethTopology topology(netns::pair_topology(tag, kMtu));
  AfXdpOptions options;
  options.interface = netns::node_interface(tag, 0);
  options.netns = netns::node_namespace(tag, 0);
  for (int i = 0; i < 3; ++i) {
    AfXdpSocket socket(options);  // EBUSY right after the previous close is retried
    EXPECT_EQ(socket.max_frame_bytes(), 1792u);
  }
  topology.destroy();
  EXPECT_EQ(leftovers(netns::run_prefix(tag)), std::vector<std::string>{});
}

TEST(AfXdpSocketErrors, FrameLongerThanTheChunkOnTheWireIsCountedNotLostSilently) {
  if (const std::string why = requirement_missing(Transport::kAfXdp); !why.empty()) {
    GTEST_SKIP() << why;
  }
  const std::string tag = netns::random_tag();
  // MTU 3000: the veth carries 2014 B frames that a 2 KiB chunk (1792 B) cannot hold.
  netns::VethTopology topology(netns::pair_topology(tag, 3000));
  {
    AfXdpOptions options;
    options.interface = netns::node_interface(tag, 0);
    options.netns = netns::node_namespace(tag, 0);
    AfXdpSocket receiver(options);
    AfPacketOptions sender_options;
    sender_options.interface = netns::node_interface(tag, 1);
    sender_options.netns = netns::node_namespace(tag, 1);
    AfPacketSocket sender(sender_options);
    const MacAddr to = default_mac_for_gpu(0);
    const MacAddr from = default_mac_for_gpu(1);
    ASSERT_EQ(sender.try_send(make_frame(to, from, wire::kEtherTypeFabric, 2014, 1)),
              SendResult::kQueued);
    ASSERT_EQ(sender.try_send(make_frame(to, from, wire::kEtherTypeFabric, 1792, 2)),
              SendResult::kQueued);
    sender.flush();
    CollectSink sink;
    PollWaiter waiter;
    const std::array<int, 1> fds{receiver.fd()};
    const std::int64_t start = monotonic_ns();
    while (sink.frames.empty() && monotonic_ns() - start < 2'000'000'000) {
      waiter.wait(
          fds, [&] { return receiver.has_input(); }, 100'000'000);
      receiver.receive(64, sink);
    }
    ASSERT_EQ(sink.frames.size(), 1u);  // only the frame that fits
    EXPECT_EQ(sink.frames[0].size(), 1792u);
    receiver.refresh_kernel_counters();
    EXPECT_EQ(receiver.counters().rx_too_large, 1u);
    EXPECT_EQ(receiver.program_stats().oversize, 1u);
  }
  topology.destroy();
  EXPECT_EQ(leftovers(netns::run_prefix(tag)), std::vector<std::string>{});
}
#endif

INSTANTIATE_TEST_SUITE_P(Transports, FrameSocketPingPong,
                         ::testing::Values(Transport::kAfXdp, Transport::kAfPacket),
                         [](const auto& param_info) {
                           return param_info.param == Transport::kAfXdp ? std::string("AfXdp")
                                                                        : std::string("AfPacket");
                         });

}  // namespace
}  // namespace ethx
