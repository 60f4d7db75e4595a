// A whole fabric in one process: the shared-memory switch runtime and node runtimes on
// threads, over a real shared-memory region. Same code as the ethx-switch / ethx-node
// processes, but the test can stop a node (a crash) and read the switch's counters.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <thread>

#include "fabric/transport/doorbell.hpp"
#include "fabric/transport/shm/shm_fabric_region.hpp"
#include "fabric/transport/shm/shm_node_port.hpp"
#include "fabric/workloads/bench_workloads.hpp"
#include "fabric/workloads/memory_pattern.hpp"
#include "switch/runtime/shm_switch_runtime.hpp"

namespace ethx {
namespace {

constexpr std::size_t kGpus = 4;
constexpr std::uint64_t kHbmBytes = 8ull << 20;

TopologyConfig small_topology() {
  TopologyConfig topology = parse_topology(
      "[fabric]\n"
      "gpus = 4\n"
      "hbm_bytes = 8388608\n"
      "aperture_bytes = 8388608\n"
      "request_timeout_ns = 200000000\n",
      "test");
  return topology;
}

// One GPU: its memory, port and runtime. Serving nodes pump on their own thread.
struct TestNode {
  std::vector<std::byte> memory;
  std::unique_ptr<ShmNodePort> port;
  std::unique_ptr<NodeRuntime> runtime;
  std::unique_ptr<BenchWorkloads> workloads;
  std::atomic<bool> stop{false};
  std::thread thread;
};

class ShmFabricTest : public ::testing::Test {
 protected:
  void SetUp() override {
    region_name_ = "/ethx-test-" + std::to_string(::getpid()) + "-switch";
    region_.emplace(shm::ShmFabricRegion::create(region_name_, kGpus));
    switch_ = std::make_unique<ShmSwitchRuntime>(topology_, *region_);
    switch_thread_ = std::thread([this] { switch_->run(switch_stop_); });
    layout_ = BenchLayout::for_memory(kHbmBytes, kGpus);
    for (std::size_t gpu = 0; gpu < kGpus; ++gpu) {
      auto& node = nodes_[gpu];
      node.memory.assign(kHbmBytes, std::byte{0});
      node.port = std::make_unique<ShmNodePort>(*region_, static_cast<std::uint32_t>(gpu));
      node.runtime = std::make_unique<NodeRuntime>(topology_, static_cast<GpuId>(gpu), node.memory,
                                                   *node.port);
      node.workloads = std::make_unique<BenchWorkloads>(*node.runtime, layout_);
      node.workloads->fill_local_pattern(node.memory);
    }
    // GPU 0 is driven by the test thread; the others serve.
    for (std::size_t gpu = 1; gpu < kGpus; ++gpu) start_serving(gpu);
  }

  void TearDown() override {
    for (std::size_t gpu = 1; gpu < kGpus; ++gpu) stop_serving(gpu);
    stop_switch();
  }

  void start_serving(std::size_t gpu) {
    auto& node = nodes_[gpu];
    node.thread = std::thread([&node] {
      while (!node.stop.load()) node.runtime->pump(1'000'000, [&node] { return node.stop.load(); });
    });
  }
  void stop_serving(std::size_t gpu) {
    auto& node = nodes_[gpu];
    node.stop.store(true);
    shm::ring(node.port->node_bell());
    if (node.thread.joinable()) node.thread.join();
  }
  void stop_switch() {
    switch_stop_.store(true);
    shm::ring(region_->header().switch_bell);
    if (switch_thread_.joinable()) switch_thread_.join();
  }

  // Injects raw bytes into GPU `gpu`'s transmit ring, as a misbehaving node would.
  void inject(std::size_t gpu, std::span<const std::byte> frame) {
    ASSERT_TRUE(region_->port(static_cast<std::uint32_t>(gpu)).to_switch.try_push(frame));
    shm::ring(region_->header().switch_bell);
  }

  NodeRuntime& gpu0() { return *nodes_[0].runtime; }

  TopologyConfig topology_ = small_topology();
  std::string region_name_;
  std::optional<shm::ShmFabricRegion> region_;
  std::unique_ptr<ShmSwitchRuntime> switch_;
  std::atomic<bool> switch_stop_{false};
  std::thread switch_thread_;
  BenchLayout layout_;
  std::array<TestNode, kGpus> nodes_;
};

TEST_F(ShmFabricTest, LoadsStoresAndAtomicsAcrossTheSwitchCarryVerifiedData) {
  BenchWorkloads& bench = *nodes_[0].workloads;
  for (GpuId peer = 1; peer < kGpus; ++peer) {
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
    for (std::uint32_t outstanding : {1u, 8u}) {
      ThroughputRun reads = bench.read_bandwidth(peer, 64, 64 * 300, outstanding);
      EXPECT_EQ(reads.verified_ops, 300u);
      EXPECT_EQ(reads.mismatches, 0u);
      EXPECT_EQ(reads.errors, 0u);
    }
  }
}

TEST_F(ShmFabricTest, GarbageAfterAValidEthernetHeaderIsCountedAndTheFabricKeepsServing) {
  std::vector<std::byte> garbage(200);
  const MacAddr dst = default_mac_for_gpu(1);
  const MacAddr src = default_mac_for_gpu(2);
  for (std::size_t i = 0; i < 6; ++i) {
    garbage[i] = std::byte{dst.octets[i]};
    garbage[6 + i] = std::byte{src.octets[i]};
  }
  garbage[12] = std::byte{0x88};
  garbage[13] = std::byte{0xB5};
  for (std::size_t i = 14; i < garbage.size(); ++i) garbage[i] = std::byte(i * 37 + 11);
  inject(2, garbage);

  LatencyRun loads = nodes_[0].workloads->load_latency(1, 100, 8, 7);
  EXPECT_EQ(loads.verified_ops, 100u);
  EXPECT_EQ(loads.mismatches, 0u);

  stop_switch();  // the counters are read once the switch thread has stopped
  EXPECT_EQ(switch_->core().counters(2).drops_malformed, 1u);
  EXPECT_EQ(nodes_[1].runtime->endpoint().counters().malformed, 0u);  // never reached GPU 1
}

TEST_F(ShmFabricTest, ACrashedNodeTurnsRequestsToItIntoErrorsAndDoesNotWedgeTheOthers) {
  stop_serving(3);  // GPU 3 "crashes": its ring is no longer drained

  Requester& requester = gpu0().endpoint().requester();
  requester.read(3, 0, 8, monotonic_now_ns(), gpu0().effects());
  const Completion lost = gpu0().wait_for_completion();
  EXPECT_EQ(lost.status, wire::Status::kTimeout);

  // Flood the dead node with posted stores: more than its ring and its egress queue hold.
  std::vector<std::byte> data(1024, std::byte{0x5a});
  for (std::uint64_t i = 0; i < 4096; ++i) {
    requester.write_posted(3, layout_.store_offset + (i % 1024) * 1024, data, monotonic_now_ns(),
                           gpu0().effects());
    if (i % 16 == 0) {
      gpu0().transmit();
      while (gpu0().backlog_frames() > 64) gpu0().pump(100'000);
    }
  }
  gpu0().transmit();

  // The live peers still answer, with correct data.
  LatencyRun loads = nodes_[0].workloads->load_latency(1, 100, 8, 9);
  EXPECT_EQ(loads.verified_ops, 100u);
  EXPECT_EQ(loads.mismatches, 0u);
  EXPECT_EQ(loads.errors, 0u);

  stop_switch();
  EXPECT_GT(switch_->core().counters(3).drops_queue_full, 0u);
}

}  // namespace
}  // namespace ethx

namespace ethx {
namespace {

// A runtime that could not run for longer than the request timeout (a loaded machine: other
// processes had the CPU) finds the response to its read already in its port. The read was
// answered in time; the engine's timer must not call it lost. It looks into the port before
// it expires anything.
TEST_F(ShmFabricTest, AResponseWaitingInThePortIsNotTimedOutByARuntimeThatWasStarved) {
  NodeRuntime& node = gpu0();
  Requester& requester = node.endpoint().requester();
  const std::uint64_t address = 0x1000;
  std::uint64_t expected = 0;
  std::memcpy(&expected, nodes_[1].memory.data() + address, sizeof expected);
  const OpId id = requester.read(1, address, 8, monotonic_now_ns(), node.effects());
  node.transmit();
  // GPU 1 answers; the response lands in GPU 0's port, which nobody reads yet.
  while (!nodes_[0].port->has_input()) std::this_thread::yield();
  // GPU 0's runtime is "starved" past the read's deadline (the fabric's 200 ms timeout).
  std::this_thread::sleep_for(std::chrono::nanoseconds(topology_.request_timeout_ns) +
                              std::chrono::milliseconds(20));
  node.transmit();  // the engine's timers run first thing when its owner is back (GpuDevice)
  const std::optional<Completion> completion = requester.take_completion();
  ASSERT_TRUE(completion.has_value());
  EXPECT_EQ(completion->id, id);
  EXPECT_EQ(completion->status, wire::Status::kOk);
  std::uint64_t value = 0;
  ASSERT_EQ(completion->data.size(), sizeof value);
  std::memcpy(&value, completion->data.data(), sizeof value);
  EXPECT_EQ(value, expected);
  EXPECT_EQ(requester.counters().timeouts, 0u);
  EXPECT_EQ(requester.counters().stale_responses, 0u);
}

}  // namespace
}  // namespace ethx
