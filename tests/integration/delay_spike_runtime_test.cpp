// Delay spikes under the real-time shared-memory switch runtime (on a thread, rings in
// /dev/shm): a held frame is not forwarded before its release time, frames behind it keep their
// order, and the switch sleeps through the stall instead of spinning on the held frame.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "fabric/transport/shm/shm_fabric_region.hpp"
#include "switch/runtime/shm_switch_runtime.hpp"

namespace ethx {
namespace {

constexpr std::int64_t kSpikeNs = 50'000'000;

// An IPv4-typed frame from GPU 0 to GPU 1 (not ours to decode, so any body will do) whose
// length tells frames apart.
wire::Frame frame_to_gpu1(std::size_t body_bytes) {
  wire::Frame frame;
  for (const std::uint8_t octet : default_mac_for_gpu(1).octets) frame.push_back(std::byte{octet});
  for (const std::uint8_t octet : default_mac_for_gpu(0).octets) frame.push_back(std::byte{octet});
  frame.push_back(std::byte{0x08});
  frame.push_back(std::byte{0x00});
  frame.resize(frame.size() + body_bytes, std::byte{0x5a});
  return frame;
}

TEST(DelaySpikeRuntime, TheShmSwitchHoldsTheFramesUntilTheStallEndsAndSleepsMeanwhile) {
  const TopologyConfig topology = parse_topology(
      "[fabric]\ngpus = 2\n[[fault]]\nport = 0\ndelay_spike_rate = 1.0\ndelay_spike_us = " +
          std::to_string(kSpikeNs / 1000) + "\n",
      "delay spike test");
  std::optional<shm::ShmFabricRegion> region;
  region.emplace(
      shm::ShmFabricRegion::create("/ethx-test-" + std::to_string(::getpid()) + "-delay-spike", 2));
  ShmSwitchRuntime runtime(topology, *region);
  std::atomic<bool> stop{false};
  std::thread forwarding([&] { runtime.run(stop); });

  const wire::Frame first = frame_to_gpu1(100);
  const wire::Frame second = frame_to_gpu1(200);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(region->port(0).to_switch.try_push(first));
  ASSERT_TRUE(region->port(0).to_switch.try_push(second));
  shm::ring(region->header().switch_bell);

  std::vector<std::size_t> arrived;  // frame lengths, in arrival order
  std::chrono::steady_clock::duration first_after{};
  const auto deadline = start + std::chrono::seconds(10);
  while (arrived.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    const bool got = region->port(1).to_node.try_pop(
        [&](std::span<const std::byte> frame) { arrived.push_back(frame.size()); });
    if (got && arrived.size() == 1) first_after = std::chrono::steady_clock::now() - start;
    if (!got) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  stop.store(true);
  shm::ring(region->header().switch_bell);
  forwarding.join();

  ASSERT_EQ(arrived, (std::vector<std::size_t>{first.size(), second.size()}));
  EXPECT_GE(std::chrono::duration_cast<std::chrono::nanoseconds>(first_after).count(), kSpikeNs)
      << "a held frame left before its release time";
  const PortCounters& counters = runtime.core().counters(0);
  EXPECT_EQ(counters.faults_delay_spikes, 1u);
  // The second frame stayed in the node's ring (back-pressure) or was held behind the first;
  // either way exactly one stall delayed both, and nothing was lost.
  EXPECT_GE(counters.faults_delayed, 1u);
  EXPECT_EQ(runtime.core().counters(1).tx_frames, 2u);
  // Spinning through a 50 ms stall takes hundreds of thousands of passes; sleeping, a handful
  // per wait phase.
  EXPECT_LT(runtime.rounds(), 2000u);
  EXPECT_GE(runtime.wait_stats().sleeps, 1u);
}

}  // namespace
}  // namespace ethx
