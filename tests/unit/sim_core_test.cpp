// The simulator's building blocks: event order, link serialization, the [sim] config table,
// the leaf-spine builder, the heap on huge pages.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "fabric/sim/sim_event_queue.hpp"
#include "fabric/sim/sim_link.hpp"
#include "fabric/sim/sim_memory.hpp"
#include "fabric/sim/sim_topology.hpp"
#include "packet-engine/wire.hpp"
#include "switch/core/switch_core.hpp"

namespace ethx::sim {
namespace {

TEST(SimEventQueue, PopsByTimeThenByInsertionOrder) {
  EventQueue queue;
  queue.push(30, 0, 1);
  queue.push(10, 0, 2);
  queue.push(30, 0, 3);
  queue.push(20, 0, 4);
  queue.push(10, 0, 5);
  queue.push(30, 0, 6);
  std::vector<std::uint32_t> order;
  std::vector<TimePs> times;
  while (!queue.empty()) {
    const Event event = queue.pop();
    order.push_back(event.target);
    times.push_back(event.at);
  }
  EXPECT_EQ(order, (std::vector<std::uint32_t>{2, 5, 4, 1, 3, 6}));
  EXPECT_EQ(times, (std::vector<TimePs>{10, 10, 20, 30, 30, 30}));
}

TEST(SimEventQueue, ManyTiesKeepInsertionOrderAcrossInterleavedPops) {
  // A pseudo-random schedule with many equal times; pops interleaved with pushes. The result
  // must equal a stable sort of what was pushed by time.
  EventQueue queue;
  struct Pushed {
    TimePs at;
    std::uint32_t id;
  };
  std::vector<Pushed> pending;
  std::vector<std::uint32_t> popped;
  std::uint64_t state = 12345;
  TimePs now = 0;
  for (std::uint32_t id = 0; id < 5000; ++id) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const TimePs at = now + (state >> 33) % 8;  // lots of ties
    queue.push(at, 1, id, id);
    pending.push_back({at, id});
    if (id % 3 == 0) {
      const Event event = queue.pop();
      EXPECT_GE(event.at, now);
      now = event.at;
      popped.push_back(event.target);
    }
  }
  while (!queue.empty()) popped.push_back(queue.pop().target);
  // Replay with a reference: among events not yet popped, the one with the smallest (at, id).
  std::vector<std::uint32_t> expected;
  std::vector<bool> done(pending.size(), false);
  std::vector<Pushed> live;
  std::size_t next = 0;
  const auto pop_reference = [&] {
    std::size_t best = 0;
    for (std::size_t i = 1; i < live.size(); ++i) {
      if (live[i].at < live[best].at ||
          (live[i].at == live[best].at && live[i].id < live[best].id)) {
        best = i;
      }
    }
    expected.push_back(live[best].id);
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(best));
  };
  for (std::uint32_t id = 0; id < 5000; ++id) {
    live.push_back(pending[next++]);
    if (id % 3 == 0) pop_reference();
  }
  while (!live.empty()) pop_reference();
  EXPECT_EQ(popped, expected);
}

TEST(SimEventQueue, TheCalendarMatchesAnOrderedSetAcrossItsWindowAndFarEvents) {
  // The calendar keeps 1 us of buckets and a heap for later events. Delays here mix ties,
  // events inside one bucket, across the window, past its end and a second ahead, with pops
  // interleaved (some in bursts that empty the calendar, so the window jumps to a far event).
  // Every pop, and top() before it, must be the earliest (time, push order) still pending.
  EventQueue queue;
  std::set<std::pair<TimePs, std::uint32_t>> reference;
  std::uint64_t state = 99;
  const auto next_random = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  const TimePs window_ps = EventQueue::kBucketPs * EventQueue::kBuckets;
  const TimePs delays_ps[] = {0,
                              0,
                              1,
                              255,
                              256,
                              257,
                              3000,
                              window_ps - 1,
                              window_ps,
                              window_ps + 1,
                              5 * window_ps,
                              1'000'000'000'000};
  TimePs now = 0;
  std::size_t checked = 0;
  const auto pop_and_check = [&] {
    ASSERT_FALSE(reference.empty());
    const auto expected = *reference.begin();
    reference.erase(reference.begin());
    EXPECT_EQ(queue.top().at, expected.first);
    EXPECT_EQ(queue.top().target, expected.second);
    const Event event = queue.pop();
    ASSERT_EQ(event.at, expected.first);
    ASSERT_EQ(event.target, expected.second);
    now = event.at;
    ++checked;
  };
  for (std::uint32_t id = 0; id < 20000; ++id) {
    const TimePs delay = delays_ps[next_random() % std::size(delays_ps)] + next_random() % 3;
    queue.push(now + delay, 1, id);
    reference.emplace(now + delay, id);
    if (next_random() % 2 == 0) pop_and_check();
    if (next_random() % 500 == 0) {  // drain all but the far ones, sometimes all
      while (!reference.empty() && reference.begin()->first < now + 2 * window_ps) pop_and_check();
    }
  }
  while (!reference.empty()) pop_and_check();
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(checked, 20000u);
  EXPECT_EQ(queue.pushed(), 20000u);
}

TEST(SimLink, SerializesA1500ByteFrameAt100GbpsWithEthernetFraming) {
  // 1500 B + preamble/SFD 8 + FCS 4 + IFG 12 = 1524 B = 12192 bits; at 100 Gbit/s 121.92 ns.
  EXPECT_EQ(serialization_ps(1500, 100.0), 121'920u);
  // A runt is padded to 60 B first: 60 + 24 = 84 B = 672 bits, 0.84 ns at 800 Gbit/s.
  EXPECT_EQ(serialization_ps(40, 800.0), 840u);
  EXPECT_EQ(serialization_ps(40, 800.0), serialization_ps(60, 800.0));
  EXPECT_EQ(serialization_ps(1792, 800.0), (1792u + 24u) * 8u * 1000u / 800u);
}

TEST(SimLink, TheSerializationTableRemembersExactlyWhatTheFormulaGives) {
  SerializationTable table(333.3);  // a rate whose times need rounding
  for (std::size_t bytes : {9000u, 1u, 60u, 61u, 1792u, 1u, 9000u, 1500u}) {
    EXPECT_EQ(table(bytes, 333.3), serialization_ps(bytes, 333.3)) << bytes;
  }
  EXPECT_EQ(table(1500, 100.0), 121'920u);  // another rate: computed, not looked up
  EXPECT_EQ(table(1500, 333.3), serialization_ps(1500, 333.3));
}

TEST(SimConfig, SimTableHasDefaultsOverridesAndRejectsUnknownKeys) {
  const TopologyConfig defaults = load_topology("");
  EXPECT_EQ(defaults.sim_issue_ns, 20u);
  EXPECT_EQ(defaults.sim_completer_ns, 10u);
  EXPECT_EQ(defaults.sim_nic_latency_ns, 50u);
  const TopologyConfig custom =
      parse_topology("[sim]\nissue_ns = 7\ncompleter_ns = 0\nnic_latency_ns = 99\n", "t.toml");
  EXPECT_EQ(custom.sim_issue_ns, 7u);
  EXPECT_EQ(custom.sim_completer_ns, 0u);
  EXPECT_EQ(custom.sim_nic_latency_ns, 99u);
  EXPECT_FALSE(defaults.sim_crc);
  EXPECT_FALSE(custom.sim_crc);
  EXPECT_TRUE(parse_topology("[sim]\ncrc = true\n", "t.toml").sim_crc);
  EXPECT_THROW(parse_topology("[sim]\ncrc = 1\n", "t.toml"), ConfigError);
  try {
    parse_topology("[sim]\nissue_nss = 7\n", "t.toml");
    FAIL() << "unknown key accepted";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("sim.issue_nss: unknown key"), std::string::npos);
  }
}

TEST(SimSwitchCore, PopIntoHandsOverTheFrontFrameAndCountsLikePop) {
  SwitchConfig config;
  config.ports.assign(2, SwitchPortConfig{});
  config.learning = false;
  config.static_routes.emplace_back(default_mac_for_gpu(1), 1);
  SwitchCore moved(config);
  SwitchCore popped(config);
  wire::FrameBuilder builder(wire::kDefaultFrameBytesMax);
  builder.start(wire::FrameAddress{default_mac_for_gpu(1), default_mac_for_gpu(0), 0, 1, 0});
  builder.append(wire::TxnFields{wire::Opcode::kReadReq, wire::Status::kOk, 1, 8, 0}, 0);
  const wire::Frame frame = builder.finish();
  std::vector<PortId> touched;
  for (SwitchCore* core : {&moved, &popped}) {
    core->on_frame(0, frame, 5, touched);
    core->on_frame(0, frame, 6, touched);
  }
  wire::Frame out(3, std::byte{1});
  moved.pop_into(1, out);
  popped.pop(1);
  EXPECT_EQ(out, frame);
  EXPECT_EQ(moved.queued_bytes(1), popped.queued_bytes(1));
  EXPECT_EQ(moved.queued_frames(1), 1u);
  EXPECT_EQ(moved.counters(1).tx_frames, popped.counters(1).tx_frames);
  EXPECT_EQ(moved.counters(1).tx_bytes, popped.counters(1).tx_bytes);
  moved.pop_into(1, out);
  EXPECT_EQ(out, frame);
  EXPECT_EQ(moved.queued_bytes(1), 0u);
  moved.pop_into(1, out);  // empty queue
  EXPECT_TRUE(out.empty());
  moved.pop_into(7, out);  // out of range reads as empty
  EXPECT_TRUE(out.empty());
}

TEST(SimTopology, LeafSpineRoutesRemoteGpusUpToSpineDstModSpines) {
  TopologyConfig config = load_topology("");
  config.resize(64);
  const SimTopology topology = build_topology(config, TopologyKind::kLeafSpine);
  ASSERT_EQ(topology.leaves, 2u);
  ASSERT_EQ(topology.spines, 32u);
  ASSERT_EQ(topology.switches.size(), 34u);
  EXPECT_EQ(topology.switch_names[0], "leaf0");
  EXPECT_EQ(topology.switch_names[2], "spine0");
  const auto route_of = [&](std::size_t sw, GpuId gpu) {
    for (const auto& [mac, port] : topology.switches[sw].static_routes) {
      if (mac == default_mac_for_gpu(gpu)) return static_cast<long>(port);
    }
    return -1L;
  };
  for (std::size_t sw = 0; sw < topology.switches.size(); ++sw) {
    EXPECT_FALSE(topology.switches[sw].learning);
  }
  EXPECT_EQ(route_of(0, 5), 5);              // local GPU: its down port
  EXPECT_EQ(route_of(0, 40), 32 + 40 % 32);  // remote GPU: uplink to spine 40 % 32
  EXPECT_EQ(route_of(1, 40), 40 % 32);
  EXPECT_EQ(route_of(2 + 7, 40), 1);  // a spine routes by leaf
  EXPECT_EQ(route_of(2 + 7, 3), 0);
  // Every GPU has one uplink; every wired switch port has an egress link back.
  for (std::size_t gpu = 0; gpu < 64; ++gpu) {
    const Link& up = topology.links.at(topology.gpu_tx_link[gpu]);
    EXPECT_EQ(up.to.node, gpu / 32);
    EXPECT_EQ(up.to.port, gpu % 32);
  }
  const Link& leaf_up = topology.links.at(topology.egress_link[1][32 + 5]);
  EXPECT_EQ(leaf_up.to.node, 2u + 5u);
  EXPECT_EQ(leaf_up.to.port, 1u);
}

// Whether the mapping in /proc/self/smaps that holds `address` may get transparent huge pages.
bool thp_eligible(const void* address) {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t start = 0;
    std::uintptr_t end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> start >> dash >> end && dash == '-') {
      inside = start <= at && at < end;
    } else if (inside && line.rfind("THPeligible:", 0) == 0) {
      return line.find('1') != std::string::npos;
    }
  }
  return false;
}

// GCC says __SANITIZE_ADDRESS__, Clang __has_feature(address_sanitizer).
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ETHX_TEST_UNDER_ASAN 1
#endif
#endif
#ifndef ETHX_TEST_UNDER_ASAN
#define ETHX_TEST_UNDER_ASAN 0
#endif

// Transparent huge pages only where madvise asks for them (with "always" every heap gets them,
// with "never" none does: nothing to tell apart).
bool thp_on_request() {
  std::ifstream enabled("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(enabled, modes);
  return modes.find("[madvise]") != std::string::npos;
}

TEST(SimHeap, FrameSizedBlocksAllocatedAfterGrowingTheHeapMayUseHugePages) {
  if (!thp_on_request()) GTEST_SKIP() << "transparent huge pages are not in madvise mode here";
#if defined(__SANITIZE_ADDRESS__) || ETHX_TEST_UNDER_ASAN
  // AddressSanitizer replaces glibc's malloc: there is no glibc heap to grow (the function then
  // returns false, as it should; this test is about glibc's heap).
  GTEST_SKIP() << "AddressSanitizer's malloc is not glibc's";
#endif
  // In a fresh child (threadsafe: re-executed, so its heap is not this process's, fragmented
  // by the tests before): the malloc settings are the whole process's.
  const std::string style = GTEST_FLAG_GET(death_test_style);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        void* before = std::malloc(1500);
        const bool eligible_before = thp_eligible(before);
        const bool grown = grow_heap_with_huge_pages(std::size_t{64} << 20);
        std::vector<void*> frames;
        // Past the first 2 MiB boundary of the grown stretch (where madvise starts).
        for (int i = 0; i < 4096; ++i) frames.push_back(std::malloc(1500));
        const bool eligible_after = thp_eligible(frames.back());
        std::fprintf(stderr, "eligible before: %d, grown: %d, eligible after: %d\n",
                     eligible_before, grown, eligible_after);
        std::_Exit(!eligible_before && grown && eligible_after ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  GTEST_FLAG_SET(death_test_style, style);
}

}  // namespace
}  // namespace ethx::sim
