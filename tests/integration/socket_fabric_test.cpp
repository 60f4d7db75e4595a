// A whole fabric over real sockets: 4 GPU nodes, each in its own network namespace, joined by
// veth pairs to a switch namespace where SocketSwitchRuntime forwards between one socket per
// port from one thread. NodeRuntime and BenchWorkloads run unchanged over SocketNodePort.
// Loads, stores and atomics with data checks, over AF_XDP and over AF_PACKET; afterwards
// nothing of the run may be left. Needs root; skipped otherwise.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <memory>
#include <thread>

#include "fabric/transport/net/af_packet_socket.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/privileges.hpp"
#include "fabric/workloads/bench_workloads.hpp"
#include "switch/runtime/socket_switch_runtime.hpp"
#ifdef ETHX_HAVE_XDP
#include "fabric/transport/net/afxdp_socket.hpp"
#endif

namespace ethx {
namespace {

constexpr std::size_t kGpus = 4;
constexpr std::uint64_t kHbmBytes = 8ull << 20;
constexpr unsigned kMtu = 1778;

enum class Transport { kAfXdp, kAfPacket };

std::string requirement_missing(Transport transport) {
  if (::geteuid() != 0) return "needs root (network namespaces, veths, raw sockets)";
  const PrivilegeNeeds needs{.af_xdp = transport == Transport::kAfXdp,
                             .af_packet = transport == Transport::kAfPacket,
                             .namespaces = true};
  if (std::string error = check_privileges(needs, "this test"); !error.empty()) return error;
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

bool anything_left(const std::string& prefix, std::string& what) {
  what = netns::run_command({"ip", "netns", "list"}).output + "\n" +
         netns::run_command({"ip", "-br", "link"}).output;
  return what.find(prefix) != std::string::npos;
}

struct TestNode {
  std::vector<std::byte> memory;
  SocketNodePort* port = nullptr;
  std::unique_ptr<SocketNodePort> owned_port;
  std::unique_ptr<NodeRuntime> runtime;
  std::unique_ptr<BenchWorkloads> workloads;
  std::atomic<bool> stop{false};
  std::thread thread;
};

class SocketFabricTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    if (const std::string why = requirement_missing(GetParam()); !why.empty()) GTEST_SKIP() << why;
    tag_ = netns::random_tag();
    prefix_ = netns::run_prefix(tag_);
    veths_ = std::make_unique<netns::VethTopology>(netns::star_topology(tag_, kGpus, kMtu));
    topology_ = parse_topology(
        "[fabric]\n"
        "gpus = 4\n"
        "hbm_bytes = 8388608\n"
        "aperture_bytes = 8388608\n"
        "request_timeout_ns = 200000000\n",
        "test");
    std::vector<FrameSocket*> switch_ports;
    for (std::size_t gpu = 0; gpu < kGpus; ++gpu) {
      switch_sockets_.push_back(open_socket(GetParam(), netns::switch_namespace(tag_),
                                            netns::switch_interface(tag_, gpu),
                                            SocketRole::kSwitchPort));
      switch_ports.push_back(switch_sockets_.back().get());
    }
    switch_ = std::make_unique<SocketSwitchRuntime>(topology_, switch_ports);
    switch_thread_ = std::thread([this] { switch_->run(switch_stop_); });
    layout_ = BenchLayout::for_memory(kHbmBytes, kGpus);
    for (std::size_t gpu = 0; gpu < kGpus; ++gpu) {
      auto& node = nodes_[gpu];
      node.memory.assign(kHbmBytes, std::byte{0});
      node.owned_port = std::make_unique<SocketNodePort>(
          open_socket(GetParam(), netns::node_namespace(tag_, gpu),
                      netns::node_interface(tag_, gpu), SocketRole::kNode));
      node.port = node.owned_port.get();
      node.runtime = std::make_unique<NodeRuntime>(topology_, static_cast<GpuId>(gpu), node.memory,
                                                   *node.port);
      node.workloads = std::make_unique<BenchWorkloads>(*node.runtime, layout_);
      node.workloads->fill_local_pattern(node.memory);
    }
    for (std::size_t gpu = 1; gpu < kGpus; ++gpu) {
      auto& node = nodes_[gpu];
      node.thread = std::thread([&node] {
        while (!node.stop.load())
          node.runtime->pump(1'000'000, [&node] { return node.stop.load(); });
      });
    }
  }

  void TearDown() override {
    if (!veths_) return;
    for (auto& node : nodes_) {
      node.stop.store(true);
      if (node.port != nullptr) node.port->interrupt();
      if (node.thread.joinable()) node.thread.join();
    }
    switch_stop_.store(true);
    if (switch_) switch_->interrupt();
    if (switch_thread_.joinable()) switch_thread_.join();
    for (auto& node : nodes_) {
      node.workloads.reset();
      node.runtime.reset();
      node.owned_port.reset();  // detaches the node's XDP program in its namespace
    }
    switch_.reset();
    switch_sockets_.clear();
    veths_.reset();
    std::string what;
    EXPECT_FALSE(anything_left(prefix_, what)) << "left behind by this test:\n" << what;
  }

  std::string tag_;
  std::string prefix_;
  std::unique_ptr<netns::VethTopology> veths_;
  TopologyConfig topology_;
  std::vector<std::unique_ptr<FrameSocket>> switch_sockets_;
  std::unique_ptr<SocketSwitchRuntime> switch_;
  std::atomic<bool> switch_stop_{false};
  std::thread switch_thread_;
  BenchLayout layout_;
  std::array<TestNode, kGpus> nodes_;
};

TEST_P(SocketFabricTest, LoadsStoresAndAtomicsAcrossTheSwitchCarryVerifiedData) {
  BenchWorkloads& bench = *nodes_[0].workloads;
  for (GpuId peer = 1; peer < kGpus; ++peer) {
    LatencyRun echoes = bench.echo_latency(peer, 50);
    EXPECT_EQ(echoes.errors, 0u);

    LatencyRun loads = bench.load_latency(peer, 200, 8, peer);
    EXPECT_EQ(loads.verified_ops, 200u);
    EXPECT_EQ(loads.mismatches, 0u);
    EXPECT_EQ(loads.errors, 0u);

    ThroughputRun stores = bench.store_bandwidth(peer, 256, 256 * 1024, 42 + peer);
    EXPECT_EQ(stores.mismatches, 0u);
    EXPECT_EQ(stores.errors, 0u);
    EXPECT_EQ(stores.verified_ops, 1024u);

    for (std::uint32_t outstanding : {1u, 8u}) {
      ThroughputRun atomics = bench.atomic_rate(peer, 500, outstanding);
      EXPECT_EQ(atomics.verified_ops, 500u);
      EXPECT_EQ(atomics.mismatches, 0u);
      EXPECT_EQ(atomics.errors, 0u);
    }
    ThroughputRun reads = bench.read_bandwidth(peer, 1024, 1024 * 300, 8);
    EXPECT_EQ(reads.verified_ops, 300u);
    EXPECT_EQ(reads.mismatches, 0u);
    EXPECT_EQ(reads.errors, 0u);
  }
  // All to all: every GPU's slice at every peer, written by GPU 0 and read back.
  ThroughputRun written = bench.all_to_all_store(64 * 1024, 99);
  EXPECT_EQ(written.errors, 0u);
  ThroughputRun verified = bench.all_to_all_verify(64 * 1024, 99);
  EXPECT_EQ(verified.mismatches, 0u);
  EXPECT_EQ(verified.errors, 0u);

  const SwitchCore& core = switch_->core();
  for (PortId port = 0; port < kGpus; ++port) {
    EXPECT_EQ(core.counters(port).drops_malformed, 0u);
    EXPECT_EQ(core.counters(port).drops_queue_full, 0u);
  }
  EXPECT_EQ(switch_->counters().tx_too_large, 0u);
  std::cout << "[ " << (GetParam() == Transport::kAfXdp ? "afxdp" : "afpacket")
            << " ] switch rounds " << switch_->counters().rounds << ", sleeps "
            << switch_->wait_stats().sleeps << ", port 1 rx/tx " << core.counters(1).rx_frames
            << "/" << core.counters(1).tx_frames << "\n";
}

INSTANTIATE_TEST_SUITE_P(Transports, SocketFabricTest,
                         ::testing::Values(Transport::kAfXdp, Transport::kAfPacket),
                         [](const auto& param_info) {
                           return param_info.param == Transport::kAfXdp ? std::string("AfXdp")
                                                                        : std::string("AfPacket");
                         });

}  // namespace
}  // namespace ethx
