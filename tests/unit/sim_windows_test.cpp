// The two-partition simulator (fabric/sim/sim_partition.hpp, sim_windows.cpp): its window plan,
// where its threads meet, and that it reports exactly what the one-partition loop does.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <thread>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "fabric/sim/sim_command.hpp"
#include "fabric/sim/sim_fabric.hpp"
#include "fabric/sim/sim_window_meeting.hpp"
#include "fabric/sim/sim_window_plan.hpp"
#include "fabric/sim/sim_workloads.hpp"

namespace ethx::sim {
namespace {

constexpr Lookahead kLookahead{310'000, 61'000};  // the default config's, in ps

TEST(WindowPlan, RunsUpToTheSoonerOfEachSidesNextEventPlusItsLookahead) {
  WindowSummary gpus;
  WindowSummary switches;
  gpus.next_ps = 1'000'000;
  gpus.queued = 1;
  switches.next_ps = 1'200'000;
  switches.queued = 1;
  WindowPlan plan = plan_window(gpus, switches, kLookahead);
  EXPECT_FALSE(plan.stop);
  EXPECT_EQ(plan.end_ps, 1'200'000u + 61'000u);  // the switches' frames reach GPUs soonest
  switches.next_ps = 2'000'000;
  plan = plan_window(gpus, switches, kLookahead);
  EXPECT_EQ(plan.end_ps, 1'000'000u + 310'000u);
}

TEST(WindowPlan, FramesSentInTheLastWindowCountAsTheReceiversNextEvents) {
  WindowSummary gpus;
  WindowSummary switches;
  gpus.next_ps = 5'000'000;
  gpus.queued = 1;
  // Nothing queued at the switches, but a frame on its way to one from the GPUs.
  gpus.sent = 1;
  gpus.sent_next_ps = 1'400'000;
  const WindowPlan plan = plan_window(gpus, switches, kLookahead);
  EXPECT_FALSE(plan.stop);
  EXPECT_EQ(plan.end_ps, 1'400'000u + 61'000u);
}

TEST(WindowPlan, StopsWhenNothingIsLeftOrOnlyEndlessTimersOrASideFailed) {
  WindowSummary gpus;
  WindowSummary switches;
  EXPECT_TRUE(plan_window(gpus, switches, kLookahead).stop);  // no event anywhere
  // Only timers left, the workload done, but nothing down: the timers end by themselves.
  gpus.next_ps = 9'000'000;
  gpus.queued = 2;
  gpus.timers = 2;
  EXPECT_FALSE(plan_window(gpus, switches, kLookahead).stop);
  // A link down: a requester's probes would go on for ever.
  switches.down = 1;
  EXPECT_TRUE(plan_window(gpus, switches, kLookahead).stop);
  // ... unless some GPU still has work.
  switches.gpus_left = 1;
  EXPECT_FALSE(plan_window(gpus, switches, kLookahead).stop);
  switches.gpus_left = 0;
  switches.down = 0;
  gpus.failed = true;
  EXPECT_TRUE(plan_window(gpus, switches, kLookahead).stop);
}

TEST(WindowPlan, ASideWithNoEventsDoesNotOverflowTheEnd) {
  WindowSummary gpus;
  WindowSummary switches;
  gpus.next_ps = kNoEventPs - 5;
  gpus.queued = 1;
  const WindowPlan plan = plan_window(gpus, switches, kLookahead);
  EXPECT_FALSE(plan.stop);
  EXPECT_EQ(plan.end_ps, kNoEventPs);  // saturated, not wrapped round to a small time
}

TEST(WindowMeeting, TheLastToArrivePlansOnceAndBothSeeItsPlan) {
  constexpr int kRounds = 20'000;
  WindowMeeting meeting;
  std::vector<int> written(2, -1);
  int plan = -1;
  int plans_made = 0;
  bool saw_both = true;
  const auto side = [&](int index, int& mismatches) {
    for (int round = 0; round < kRounds; ++round) {
      written[index] = round;
      meeting.arrive_and_wait([&] {
        saw_both = saw_both && written[0] == round && written[1] == round;
        plan = round;
        ++plans_made;
      });
      mismatches += plan != round;
    }
  };
  int mismatches_other = 0;
  int mismatches_main = 0;
  std::thread other([&] { side(1, mismatches_other); });
  side(0, mismatches_main);
  other.join();
  EXPECT_EQ(plans_made, kRounds);
  EXPECT_TRUE(saw_both);
  EXPECT_EQ(mismatches_main + mismatches_other, 0);
}

TEST(CoreDistance, MeasuresARoundTripWhenAnsweredAndGivesUpWhenNot) {
  CoreDistance answered;
  std::thread other([&] { answered.answer(); });
  const double round_trip_ns = answered.measure_ns();
  other.join();  // answer() returned
  EXPECT_GT(round_trip_ns, 0.0);
  EXPECT_LT(round_trip_ns, CoreDistance::kNoAnswerNs);
  // Nobody answers: no answer within the budget, not a hang.
  CoreDistance alone;
  EXPECT_EQ(alone.measure_ns(), CoreDistance::kNoAnswerNs);
}

struct SimCase {
  std::size_t gpus;
  TopologyKind topology;
  WorkloadKind workload;
  std::uint64_t bytes;
  std::uint64_t repeat;
  std::vector<LinkFault> faults;
};

std::string report_of(const TopologyConfig& config, const SimCase& run, unsigned threads,
                      SimPartitioning partitioning) {
  SimRequest request;
  request.topology = run.topology;
  request.workload = run.workload;
  request.bytes = run.bytes;
  request.seed = 3;
  request.repeat = run.repeat;
  request.link_faults = run.faults;
  request.threads = threads;
  request.partitioning = partitioning;
  request.ignore_core_distance = true;  // really two threads, wherever the host put the cores
  TopologyConfig sized = config;
  sized.resize(run.gpus);
  return to_json(simulate(sized, request)).dump();
}

TEST(SimWindows, TwoPartitionsOnOneOrTwoThreadsReportWhatOnePartitionDoes) {
  const TopologyConfig config = load_topology("");
  const std::vector<SimCase> runs = {
      {32, TopologyKind::kSingle, WorkloadKind::kAllToAll, 64, 3, {}},
      {64, TopologyKind::kSingle, WorkloadKind::kIncast, 65536, 1, {}},  // drops and timeouts
      {8, TopologyKind::kSingle, WorkloadKind::kRandom, 4096, 2, {}},
      {16, TopologyKind::kSingle, WorkloadKind::kAllReduceRing, 4096, 1, {}},  // GPUs not apart
      {16, TopologyKind::kSingle, WorkloadKind::kMessageRate, 8, 1, {}},
      {64, TopologyKind::kLeafSpine, WorkloadKind::kAllToAll, 1024, 1, {}},
      // A link down and up again, and one down for good (only endless timers left at the end).
      {8, TopologyKind::kSingle, WorkloadKind::kAllToAll, 4096, 1, {{3, 2000, 40000}}},
      {8, TopologyKind::kSingle, WorkloadKind::kAllToAll, 4096, 1, {{5, 1000, std::nullopt}}},
  };
  for (const SimCase& run : runs) {
    const std::string one = report_of(config, run, 1, SimPartitioning::kOne);
    EXPECT_EQ(report_of(config, run, 1, SimPartitioning::kAuto), one) << to_string(run.workload);
    EXPECT_EQ(report_of(config, run, 2, SimPartitioning::kAuto), one) << to_string(run.workload);
  }
}

TEST(SimWindows, FaultsAndGoBackNGiveTheSameReportInTwoPartitions) {
  // Drops, corruption, reordering and delay spikes at the switch, resent end to end.
  const TopologyConfig faulty = parse_topology(
      "[fabric]\ngpus = 16\nrequest_timeout_ns = 200000\n"
      "[reliability]\nmode = \"go-back-n\"\nretransmit_timeout_ns = 20000\n"
      "retransmit_timeout_max_ns = 200000\nack_delay_ns = 2000\n"
      "[liveness]\nprobe_interval_ns = 20000\n[switch]\nfault_seed = 5\n"
      "[[fault]]\nport = 1\ndrop_rate = 0.02\ncorrupt_rate = 0.02\nreorder_rate = 0.05\n"
      "[[fault]]\nport = 3\ndelay_spike_rate = 0.01\ndelay_spike_us = 3\n",
      "faulty.toml");
  for (WorkloadKind workload : {WorkloadKind::kRandom, WorkloadKind::kAllToAll}) {
    const SimCase run{16, TopologyKind::kSingle, workload, 3000, 2, {}};
    const std::string one = report_of(faulty, run, 1, SimPartitioning::kOne);
    EXPECT_GT(nlohmann::json::parse(one)["drops"].get<std::uint64_t>(), 0u);  // faults acted
    EXPECT_EQ(report_of(faulty, run, 2, SimPartitioning::kAuto), one) << to_string(workload);
  }
}

TEST(SimWindows, TheLinkLayerAndTheRoceEngineRunInOnePartition) {
  TopologyConfig config = load_topology("");
  config.resize(8);
  EXPECT_TRUE(SimFabric::partitioned(config, SimEngine::kLoadStore));
  EXPECT_FALSE(SimFabric::partitioned(config, SimEngine::kRoce));
  config.link_retry = true;
  EXPECT_FALSE(SimFabric::partitioned(config, SimEngine::kLoadStore));
  config.link_retry = false;
  config.flow_control.mode = FlowControlMode::kCbfc;
  EXPECT_FALSE(SimFabric::partitioned(config, SimEngine::kLoadStore));
}

TEST(Workloads, ListWorkloadsKeepTheirGpusApartAndSayWhenEachIsDone) {
  WorkloadParams params;
  params.gpus = 4;
  params.bytes = 64;
  const auto all_to_all = make_workload(WorkloadKind::kAllToAll, params);
  EXPECT_TRUE(all_to_all->independent_gpus());
  EXPECT_FALSE(make_workload(WorkloadKind::kAllReduceRing, params)->independent_gpus());
  EXPECT_FALSE(make_workload(WorkloadKind::kReadLatency, params)->independent_gpus());
  // GPU 2 issues and completes its three messages; the others have not started.
  std::vector<GpuId> wake;
  OpSpec op;
  for (int message = 0; message < 3; ++message) {
    ASSERT_TRUE(all_to_all->peek(2, op));
    all_to_all->issued(2);
    EXPECT_FALSE(all_to_all->gpu_done(2));
    all_to_all->completed(2, wake);
  }
  EXPECT_TRUE(wake.empty());  // wakes no other GPU
  EXPECT_TRUE(all_to_all->gpu_done(2));
  EXPECT_FALSE(all_to_all->gpu_done(1));
  EXPECT_FALSE(all_to_all->done());
  // An incast's target sends nothing: done from the start.
  const auto incast = make_workload(WorkloadKind::kIncast, params);
  EXPECT_TRUE(incast->gpu_done(0));
  EXPECT_FALSE(incast->gpu_done(1));
}

}  // namespace
}  // namespace ethx::sim
