// A dead node fails fast (docs/reliability.md "When a component dies"): on a shared-memory
// fabric (switch and GPUs 0 and 2 on threads of this process, GPU 1 a real ethx-node
// process), GPU 1 is killed with SIGKILL; after a few timeouts GPU 0 marks it down, and then
// 1000 loads to it complete at once with UNREACHABLE while loads to GPU 2 still succeed. A
// fresh ethx-node for GPU 1 is reachable again without restarting anyone else.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fabric/config/fabric_names.hpp"
#include "fabric/node/node_runtime.hpp"
#include "fabric/transport/shm/shm_fabric_region.hpp"
#include "fabric/transport/shm/shm_node_port.hpp"
#include "switch/runtime/shm_switch_runtime.hpp"

namespace ethx {
namespace {

constexpr std::size_t kGpus = 3;
constexpr GpuId kVictim = 1;
constexpr GpuId kLivePeer = 2;
constexpr const char* kTopology =
    "[fabric]\ngpus = 3\nhbm_bytes = 8388608\naperture_bytes = 8388608\n"
    "request_timeout_ns = 200000000\n";
constexpr TimeNs kHangGuardNs = 10'000'000'000;

struct LocalNode {
  std::vector<std::byte> memory = std::vector<std::byte>(8 << 20, std::byte{0});
  std::unique_ptr<ShmNodePort> port;
  std::unique_ptr<NodeRuntime> runtime;
  std::atomic<bool> stop{false};
  std::thread thread;
};

class PeerDownTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fabric_ = "pdt" + std::to_string(::getpid());
    config_path_ = std::filesystem::temp_directory_path() / ("ethx-" + fabric_ + ".toml");
    std::ofstream(config_path_) << kTopology;
    region_.emplace(shm::ShmFabricRegion::create(switch_region_name(fabric_), kGpus));
    switch_ = std::make_unique<ShmSwitchRuntime>(topology_, *region_);
    switch_thread_ = std::thread([this] { switch_->run(switch_stop_); });
    for (const GpuId gpu : {GpuId{0}, kLivePeer}) {
      LocalNode& node = nodes_[gpu];
      node.port = std::make_unique<ShmNodePort>(*region_, gpu);
      node.runtime = std::make_unique<NodeRuntime>(topology_, gpu, node.memory, *node.port);
    }
    LocalNode& live = nodes_[kLivePeer];
    live.thread = std::thread([&live] {
      while (!live.stop.load()) live.runtime->pump(1'000'000, [&live] { return live.stop.load(); });
    });
  }

  void TearDown() override {
    if (victim_pid_ > 0) kill_victim();
    LocalNode& live = nodes_[kLivePeer];
    live.stop.store(true);
    shm::ring(live.port->node_bell());
    if (live.thread.joinable()) live.thread.join();
    switch_stop_.store(true);
    shm::ring(region_->header().switch_bell);
    if (switch_thread_.joinable()) switch_thread_.join();
    std::filesystem::remove(config_path_);
  }

  void start_victim() {
    const std::string binary = std::string(ETHX_BIN_DIR) + "/ethx-node";
    const std::string gpu = std::to_string(kVictim);
    victim_pid_ = ::fork();
    ASSERT_GE(victim_pid_, 0);
    if (victim_pid_ == 0) {
      ::execl(binary.c_str(), binary.c_str(), "--fabric", fabric_.c_str(), "--gpu", gpu.c_str(),
              "--config", config_path_.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  void kill_victim() {
    ::kill(victim_pid_, SIGKILL);
    ::waitpid(victim_pid_, nullptr, 0);
    victim_pid_ = -1;
    // A killed node leaves its memory file behind; the next one creates it anew.
    ::shm_unlink(hbm_file_name(fabric_, kVictim).c_str());
  }

  Completion load(GpuId dst) {
    NodeRuntime& node = *nodes_[0].runtime;
    node.endpoint().requester().read(dst, 0, 8, monotonic_now_ns(), node.effects());
    node.transmit();
    return node.wait_for_completion();
  }
  // Loads from `dst` until one completes with `status`; false after the hang guard.
  bool load_until(GpuId dst, wire::Status status) {
    const TimeNs give_up = monotonic_now_ns() + kHangGuardNs;
    while (monotonic_now_ns() < give_up) {
      if (load(dst).status == status) return true;
      // A program keeps its node pumping: that is when probes leave and answers come in.
      nodes_[0].runtime->pump(1'000'000);
    }
    return false;
  }
  Requester& requester() { return nodes_[0].runtime->endpoint().requester(); }

  TopologyConfig topology_ = parse_topology(kTopology, "peer down test");
  std::string fabric_;
  std::filesystem::path config_path_;
  std::optional<shm::ShmFabricRegion> region_;
  std::unique_ptr<ShmSwitchRuntime> switch_;
  std::atomic<bool> switch_stop_{false};
  std::thread switch_thread_;
  std::array<LocalNode, kGpus> nodes_;
  pid_t victim_pid_ = -1;
};

TEST_F(PeerDownTest, AKilledNodeFailsFastAndAFreshOneIsReachableAgain) {
  start_victim();
  ASSERT_TRUE(load_until(kVictim, wire::Status::kOk)) << "ethx-node for GPU 1 never answered";

  kill_victim();
  // Three request timeouts (200 ms each) in a row mark GPU 1 down.
  ASSERT_TRUE(load_until(kVictim, wire::Status::kUnreachable));
  EXPECT_TRUE(requester().peer_down(kVictim));
  EXPECT_EQ(requester().counters().peers_marked_down, 1u);

  const TimeNs start_ns = monotonic_now_ns();
  std::size_t unreachable = 0;
  for (int i = 0; i < 1000; ++i) {
    if (load(kVictim).status == wire::Status::kUnreachable) ++unreachable;
  }
  const TimeNs elapsed_ns = monotonic_now_ns() - start_ns;
  std::printf("1000 loads to the dead GPU: %.3f ms in total\n",
              static_cast<double>(elapsed_ns) / 1e6);
  EXPECT_EQ(unreachable, 1000u);
  EXPECT_LT(elapsed_ns, TimeNs{5'000'000'000});  // a hang guard, not a performance bar

  for (int i = 0; i < 10; ++i) EXPECT_EQ(load(kLivePeer).status, wire::Status::kOk);

  start_victim();  // a fresh process for GPU 1; nobody else restarts
  const TimeNs restarted_ns = monotonic_now_ns();
  ASSERT_TRUE(load_until(kVictim, wire::Status::kOk)) << "GPU 1 never came back";
  std::printf("reachable again %.1f ms after the new node was started\n",
              static_cast<double>(monotonic_now_ns() - restarted_ns) / 1e6);
  EXPECT_FALSE(requester().peer_down(kVictim));
  EXPECT_EQ(requester().counters().peers_marked_up, 1u);
}

}  // namespace
}  // namespace ethx
