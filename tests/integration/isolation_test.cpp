// Isolation on a real shared-memory fabric (the switch runtime on a thread): GPUs 0 and 1 in
// partition 0, GPUs 2 and 3 in partition 1. A compromised node can put any frame on its own
// port (the threat model); the switch's port security drops frames whose source is not the
// port's GPU, and the completer refuses requests from another partition. Either way the
// target's memory is unchanged and the rejection is counted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "fabric/node/node_runtime.hpp"
#include "fabric/transport/shm/shm_fabric_region.hpp"
#include "fabric/transport/shm/shm_node_port.hpp"
#include "packet-engine/wire.hpp"
#include "switch/runtime/shm_switch_runtime.hpp"

namespace ethx {
namespace {

constexpr std::size_t kGpus = 4;
constexpr std::uint64_t kHbmBytes = 1 << 20;
constexpr std::uint64_t kTarget = 0x4000;  // in GPU 3's memory

struct Node {
  std::vector<std::byte> memory = std::vector<std::byte>(kHbmBytes, std::byte{0});
  std::unique_ptr<ShmNodePort> port;
  std::unique_ptr<NodeRuntime> runtime;
  std::atomic<bool> stop{false};
  std::thread thread;
};

class IsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    region_.emplace(shm::ShmFabricRegion::create(
        "/ethx-test-" + std::to_string(::getpid()) + "-isolation", kGpus));
    switch_ = std::make_unique<ShmSwitchRuntime>(topology_, *region_);
    switch_thread_ = std::thread([this] { switch_->run(switch_stop_); });
    for (std::size_t gpu = 0; gpu < kGpus; ++gpu) {
      Node& node = nodes_[gpu];
      node.port = std::make_unique<ShmNodePort>(*region_, static_cast<std::uint32_t>(gpu));
      node.runtime = std::make_unique<NodeRuntime>(topology_, static_cast<GpuId>(gpu), node.memory,
                                                   *node.port);
    }
    for (std::size_t gpu = 1; gpu < kGpus; ++gpu) {  // GPU 0 is driven by the test
      Node& node = nodes_[gpu];
      node.thread = std::thread([&node] {
        while (!node.stop.load())
          node.runtime->pump(1'000'000, [&node] { return node.stop.load(); });
      });
    }
  }
  void TearDown() override {
    for (std::size_t gpu = 1; gpu < kGpus; ++gpu) {
      nodes_[gpu].stop.store(true);
      shm::ring(nodes_[gpu].port->node_bell());
      nodes_[gpu].thread.join();
    }
    stop_switch();
  }
  void stop_switch() {
    if (!switch_thread_.joinable()) return;
    switch_stop_.store(true);
    shm::ring(region_->header().switch_bell);
    switch_thread_.join();
  }
  // Puts raw bytes on GPU `gpu`'s link, as a compromised node would.
  void inject(std::size_t gpu, std::span<const std::byte> frame) {
    ASSERT_TRUE(region_->port(static_cast<std::uint32_t>(gpu)).to_switch.try_push(frame));
    shm::ring(region_->header().switch_bell);
  }
  // A round trip GPU 0 -> GPU 1 (same partition): everything injected before it has been
  // through the switch when it returns (one switch thread, FIFO per port pair).
  void round_trip() {
    Requester& requester = nodes_[0].runtime->endpoint().requester();
    requester.read(1, 0, 8, monotonic_now_ns(), nodes_[0].runtime->effects());
    nodes_[0].runtime->transmit();
    ASSERT_TRUE(nodes_[0].runtime->wait_for_completion().ok());
  }
  std::uint64_t target_word() {
    std::uint64_t value = 0;
    std::memcpy(&value, nodes_[3].memory.data() + kTarget, 8);
    return value;
  }

  TopologyConfig topology_ = parse_topology(
      "[fabric]\ngpus = 4\nhbm_bytes = 1048576\naperture_bytes = 1048576\n"
      "request_timeout_ns = 200000000\n"
      "[[gpu]]\nid = 2\npartition = 1\n[[gpu]]\nid = 3\npartition = 1\n",
      "isolation test");
  std::optional<shm::ShmFabricRegion> region_;
  std::unique_ptr<ShmSwitchRuntime> switch_;
  std::atomic<bool> switch_stop_{false};
  std::thread switch_thread_;
  std::array<Node, kGpus> nodes_;
};

TEST_F(IsolationTest, AFrameForgedAsAnotherPartitionsGpuIsDroppedAtTheSwitchAndCounted) {
  // GPU 0 (partition 0) forges posted writes into GPU 3 (partition 1): once posing as GPU 2
  // entirely, once with its own MAC but GPU 2's id and partition in the fabric header.
  auto forge = [&](const MacAddr& src_mac) {
    wire::FrameBuilder builder(topology_.frame_bytes_max);
    builder.start(wire::FrameAddress{topology_.gpus[3].mac, src_mac, 2, 3, 1});
    wire::TxnFields fields;
    fields.opcode = wire::Opcode::kWritePosted;
    fields.length = 8;
    fields.address = kTarget;
    std::span<std::byte> data = builder.append(fields, 8);
    std::memset(data.data(), 0x66, data.size());
    return builder.finish();
  };
  inject(0, forge(topology_.gpus[2].mac));
  inject(0, forge(topology_.gpus[0].mac));
  round_trip();
  EXPECT_EQ(target_word(), 0u);
  stop_switch();  // counters are read once the switch thread has stopped
  EXPECT_EQ(switch_->core().counters(0).drops_spoofed, 2u);
  EXPECT_EQ(switch_->core().counters(3).tx_frames, 0u);  // nothing reached GPU 3
}

TEST_F(IsolationTest, TheCompleterRefusesRequestsFromAnotherPartition) {
  NodeRuntime& gpu0 = *nodes_[0].runtime;
  Requester& requester = gpu0.endpoint().requester();
  const std::array<std::byte, 8> data{std::byte{0x77}, std::byte{0x77}, std::byte{0x77},
                                      std::byte{0x77}, std::byte{0x77}, std::byte{0x77},
                                      std::byte{0x77}, std::byte{0x77}};
  // A genuine request from partition 0 into partition 1: refused by GPU 3 itself.
  requester.write(3, kTarget, data, monotonic_now_ns(), gpu0.effects());
  gpu0.transmit();
  const Completion write = gpu0.wait_for_completion();
  EXPECT_EQ(write.status, wire::Status::kPartition);
  requester.read(3, kTarget, 8, monotonic_now_ns(), gpu0.effects());
  gpu0.transmit();
  EXPECT_EQ(gpu0.wait_for_completion().status, wire::Status::kPartition);
  EXPECT_EQ(target_word(), 0u);
  // Within partition 0 the same request is performed.
  requester.write(1, kTarget, data, monotonic_now_ns(), gpu0.effects());
  gpu0.transmit();
  EXPECT_TRUE(gpu0.wait_for_completion().ok());
  std::uint64_t written = 0;
  std::memcpy(&written, nodes_[1].memory.data() + kTarget, 8);
  EXPECT_EQ(written, 0x7777777777777777ull);
  stop_switch();
  EXPECT_GE(nodes_[3].runtime->endpoint().completer().counters().errors, 2u);
}

}  // namespace
}  // namespace ethx
