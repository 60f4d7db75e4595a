// `ethx sim --link-down`: a GPU's switch port goes down (and up) in modelled time, and the
// requesters' peer liveness (packet-engine/requester.hpp) makes the workload fail fast instead
// of waiting a request timeout per operation; the option's parsing and its errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "fabric/sim/sim_command.hpp"
#include "fabric/sim/sim_fabric.hpp"
#include "fabric/sim/sim_link_faults.hpp"
#include "fabric/sim/sim_report.hpp"
#include "fabric/sim/sim_workloads.hpp"

namespace ethx::sim {
namespace {

// Short modelled timeouts keep the runs small: 50 us request timeout, probes every 20 us.
constexpr TimeNs kTimeoutNs = 50'000;
constexpr TimeNs kProbeNs = 20'000;

TopologyConfig fast_config(std::uint32_t down_after_timeouts = 3) {
  return parse_topology(
      "[fabric]\ngpus = 8\nrequest_timeout_ns = " + std::to_string(kTimeoutNs) +
          "\n[liveness]\ndown_after_timeouts = " + std::to_string(down_after_timeouts) +
          "\nprobe_interval_ns = " + std::to_string(kProbeNs) + "\n",
      "t.toml");
}

std::string error_of(const std::vector<std::string>& values, std::size_t gpus = 8) {
  try {
    parse_link_faults(values, gpus);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(SimLinkFaultOption, ParsesBothForms) {
  EXPECT_EQ(parse_link_fault("3@1000", 8), (LinkFault{3, 1000, std::nullopt}));
  EXPECT_EQ(parse_link_fault("0@0-5", 8), (LinkFault{0, 0, 5}));
  EXPECT_EQ(to_string(LinkFault{7, 10, 20}), "7@10-20");
  // One GPU may go down twice, as long as the intervals do not overlap (touching is fine).
  const auto faults = parse_link_faults({"2@10-100", "2@100-200", "5@50"}, 8);
  ASSERT_EQ(faults.size(), 3u);
  EXPECT_EQ(faults[1], (LinkFault{2, 100, 200}));
}

TEST(SimLinkFaultOption, BadValuesAreOneLineErrorsNamingTheOption) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"8@10", "GPU 8 is out of range"},
      {"x@10", "GPU must be"},
      {"3", "no '@'"},
      {"3@", "TIME_NS must be"},
      {"3@-5", "TIME_NS must be"},
      {"3@ 5", "TIME_NS must be"},
      {"3@10-5", "UNTIL_NS must be after TIME_NS"},
      {"3@10-10", "UNTIL_NS must be after TIME_NS"},
      {"3@10-", "UNTIL_NS must be"},
      {"3@5-7-9", "UNTIL_NS must be"},
      {"3@99999999999999999999", "TIME_NS must be"},
      {"3@3600000000001", "at most 3600000000000"},
  };
  for (const auto& [value, reason] : cases) {
    const std::string error = error_of({value});
    EXPECT_NE(error.find("--link-down \"" + value + "\""), std::string::npos) << error;
    EXPECT_NE(error.find(reason), std::string::npos) << value << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  EXPECT_NE(error_of({"3@10-100", "3@50"}).find("overlaps --link-down 3@10-100"),
            std::string::npos);
  EXPECT_NE(error_of({"3@10", "3@5000-6000"}).find("overlaps"), std::string::npos);
  EXPECT_EQ(error_of({"1@10"}, 2), "");
  EXPECT_NE(error_of({"2@10"}, 2).find("GPUs 0-1"), std::string::npos);
}

TEST(SimLinkFaultOption, TheCommandRejectsABadValueWithStatus2) {
  SimOptions options;
  options.gpus = 4;
  options.link_down = {"4@100"};
  EXPECT_EQ(run_sim_command(options), 2);
  options.link_down = {"1@100-50"};
  EXPECT_EQ(run_sim_command(options), 2);
}

TEST(SimLinkFaultOption, TheFabricRejectsAGpuOutsideIt) {
  const TopologyConfig config = fast_config();
  SimFabric fabric(config, TopologyKind::kSingle);
  EXPECT_THROW(fabric.schedule_link_faults({LinkFault{8, 0, std::nullopt}}), std::invalid_argument);
}

// GPU 0 loads from GPU 1 one at a time (100 loads) while GPU 1's link is down: three loads
// time out, GPU 1 is marked down, the other 97 fail at once with UNREACHABLE.
TEST(SimLinkDown, SerialLoadsToADeadGpuCostThreeTimeoutsNotOneEach) {
  const TopologyConfig config = fast_config();
  const std::vector<LinkFault> faults = {LinkFault{1, 0, std::nullopt}};
  const SimReport report =
      simulate(config, TopologyKind::kSingle, WorkloadKind::kLoadLatency, 8, 1, 1, faults);
  ASSERT_TRUE(report.complete);
  EXPECT_EQ(report.ops_ok, 0u);
  EXPECT_EQ(report.timeouts, 3u);
  EXPECT_EQ(report.unreachable, kLoadsPerRepeat - 3);
  EXPECT_EQ(report.liveness.peers_marked_down, 1u);
  EXPECT_EQ(report.liveness.ops_fast_failed, kLoadsPerRepeat - 3);
  EXPECT_EQ(report.liveness.peers_marked_up, 0u);
  ASSERT_TRUE(report.liveness.first_down_ps.has_value());
  EXPECT_GE(*report.liveness.first_down_ps, 3 * kTimeoutNs * kPsPerNs);
  EXPECT_LT(report.makespan_ps, 4 * kTimeoutNs * kPsPerNs);
  EXPECT_GT(report.drops_link_down, 0u);

  // Without liveness every load waits its whole timeout.
  const SimReport slow =
      simulate(fast_config(0), TopologyKind::kSingle, WorkloadKind::kLoadLatency, 8, 1, 1, faults);
  ASSERT_TRUE(slow.complete);
  EXPECT_EQ(slow.timeouts, kLoadsPerRepeat);
  EXPECT_EQ(slow.unreachable, 0u);
  EXPECT_GE(slow.makespan_ps, kLoadsPerRepeat * kTimeoutNs * kPsPerNs);
}

// All-to-all, 8 GPUs, GPU 3's link down mid-run for good: the run ends, every operation is
// accounted for, GPU 3 and its peers mark each other down, later operations fail fast.
TEST(SimLinkDown, AllToAllWithALinkDownMidRunFinishesWithinAFewTimeouts) {
  const TopologyConfig config = fast_config();
  constexpr std::uint64_t kRepeat = 200;
  constexpr TimeNs kDownNs = 10'000;
  const SimReport report = simulate(config, TopologyKind::kSingle, WorkloadKind::kAllToAll, 4096, 1,
                                    kRepeat, {LinkFault{3, kDownNs, std::nullopt}});
  ASSERT_TRUE(report.complete);
  EXPECT_EQ(report.ops_ok + report.ops_failed, 8u * 7u * kRepeat);
  EXPECT_GT(report.timeouts, 0u);
  EXPECT_GT(report.unreachable, 0u);
  EXPECT_EQ(report.ops_failed, report.timeouts + report.unreachable);
  EXPECT_EQ(report.unreachable, report.liveness.ops_fast_failed);
  // The 7 peers mark GPU 3 down, and GPU 3 marks all 7 down.
  EXPECT_EQ(report.liveness.peers_marked_down, 14u);
  EXPECT_EQ(report.liveness.peers_marked_up, 0u);
  // Operations between the other GPUs are unaffected: 6 x 7 pairs minus those with GPU 3.
  EXPECT_GE(report.ops_ok, 7u * 6u * kRepeat - 6u * kRepeat);
  ASSERT_TRUE(report.liveness.first_down_ps.has_value());
  // Requests issued before the link went down and lost with it time out first.
  EXPECT_GE(*report.liveness.first_down_ps, kTimeoutNs * kPsPerNs);
  EXPECT_LT(report.makespan_ps, (kDownNs + 3 * kTimeoutNs) * kPsPerNs);
  EXPECT_GT(report.drops_link_down, 0u);
  ASSERT_EQ(report.link_faults.size(), 1u);

  // Without liveness the operations to and from GPU 3 wait out their timeouts a tag budget at
  // a time.
  const SimReport slow = simulate(fast_config(0), TopologyKind::kSingle, WorkloadKind::kAllToAll,
                                  4096, 1, kRepeat, {LinkFault{3, kDownNs, std::nullopt}});
  EXPECT_EQ(slow.unreachable, 0u);
  EXPECT_GT(slow.makespan_ps, (kDownNs + 5 * kTimeoutNs) * kPsPerNs);
}

// An operation that waits out its timeout while thousands of others, to live peers, are issued
// and complete meanwhile keeps its own record (SimFabric keeps them in a ring of slots that
// this run wraps many times): with one slot per GPU, every record that is still needed goes
// through OpRecords' map, and the report must be exactly that of the default ring.
TEST(SimLinkDown, EveryOperationKeepsItsOwnRecordWhateverOrderTheyComplete) {
  const TopologyConfig config = fast_config();
  const auto run = [&config](std::size_t slots) {
    SimFabric fabric(config, TopologyKind::kSingle);
    if (slots > 0) fabric.set_op_record_slots(slots);
    fabric.schedule_link_faults({LinkFault{3, 0, std::nullopt}});
    WorkloadParams params;
    params.gpus = 8;
    params.bytes = 64;
    params.repeat = 2000;
    params.max_op_bytes = fabric.max_op_bytes();
    const auto workload = make_workload(WorkloadKind::kAllToAll, params);
    return to_json(fabric.run(*workload)).dump();
  };
  const std::string with_ring = run(0);
  EXPECT_EQ(run(1), with_ring);
  const nlohmann::json report = nlohmann::json::parse(with_ring);
  EXPECT_GT(report["timeouts"].get<std::uint64_t>(), 0u);
  EXPECT_GE(report["latency_ns"]["max"].get<double>(), static_cast<double>(kTimeoutNs));
}

// The same with the link back up at 200 us: the probes bring GPU 3 back and operations to and
// from it succeed again.
TEST(SimLinkDown, ALinkBackUpIsFoundByTheProbeAndLaterOpsSucceed) {
  const TopologyConfig config = fast_config();
  constexpr std::uint64_t kRepeat = 1000;
  constexpr TimeNs kUpNs = 200'000;
  const SimReport forever = simulate(config, TopologyKind::kSingle, WorkloadKind::kAllToAll, 4096,
                                     1, kRepeat, {LinkFault{3, 10'000, std::nullopt}});
  const SimReport back = simulate(config, TopologyKind::kSingle, WorkloadKind::kAllToAll, 4096, 1,
                                  kRepeat, {LinkFault{3, 10'000, kUpNs}});
  ASSERT_TRUE(back.complete);
  EXPECT_EQ(back.liveness.peers_marked_down, 14u);
  EXPECT_EQ(back.liveness.peers_marked_up, 14u);
  EXPECT_GT(back.liveness.probes_answered, 0u);
  ASSERT_TRUE(back.liveness.first_up_ps.has_value());
  // Up at the first probe after the link came back (a probe interval, plus the round trip).
  EXPECT_GE(*back.liveness.first_up_ps, kUpNs * kPsPerNs);
  EXPECT_LT(*back.liveness.first_up_ps, (kUpNs + 2 * kProbeNs) * kPsPerNs);
  // Still running then, and what GPU 3 sent and received afterwards succeeded.
  EXPECT_GT(back.makespan_ps, *back.liveness.first_up_ps);
  EXPECT_GT(back.ops_ok, forever.ops_ok);
  EXPECT_LT(back.unreachable, forever.unreachable);
  EXPECT_EQ(forever.liveness.peers_marked_up, 0u);
}

// A down peer is probed, and a go-back-N sender resends to it, for ever: once the workload is
// done those timers must not keep the run going. Without a fault the run still drains every
// timer, so go-back-N's last delayed ACKs are sent and counted.
TEST(SimLinkDown, EndlessTimersEndTheRunOnlyWhileSomethingIsDown) {
  const TopologyConfig go_back_n = parse_topology(
      "[fabric]\ngpus = 8\nrequest_timeout_ns = 50000\n[reliability]\nmode = \"go-back-n\"\n"
      "[liveness]\ndown_after_timeouts = 0\n",
      "t.toml");
  const SimReport retrying = simulate(go_back_n, TopologyKind::kSingle, WorkloadKind::kAllToAll,
                                      4096, 1, 20, {LinkFault{3, 1'000, std::nullopt}});
  EXPECT_TRUE(retrying.complete);
  EXPECT_EQ(retrying.liveness.peers_marked_down, 0u);
  EXPECT_GT(retrying.timeouts, 0u);

  const TopologyConfig down_from_the_start = parse_topology(
      "[fabric]\ngpus = 2\nrequest_timeout_ns = 10000\n[[fault]]\nport = 1\nlink = \"down\"\n",
      "t.toml");
  const SimReport probing =
      simulate(down_from_the_start, TopologyKind::kSingle, WorkloadKind::kLoadLatency, 8, 1, 1);
  EXPECT_TRUE(probing.complete);
  EXPECT_EQ(probing.unreachable, kLoadsPerRepeat - 3);

  // 8 GPUs x 7 peers x (3 write frames + 3 acks), plus 56 standalone go-back-N ACKs that leave
  // after the last completion (docs/reliability.md: 392 instead of 336 frames).
  const SimReport lossless = simulate(
      parse_topology("[fabric]\ngpus = 8\n[reliability]\nmode = \"go-back-n\"\n", "t.toml"),
      TopologyKind::kSingle, WorkloadKind::kAllToAll, 4096, 1, 1);
  EXPECT_EQ(lossless.frames_delivered, 392u);
}

TEST(SimFabric, GoBackNFramesReachTheEndpointInSequenceOrder) {
  // 8 B writes to 7 peers: each GPU's link carries requests and answers to the same peer back
  // to back. A frame of answers that overtook the requests queued for the completer before it
  // was a sequence gap with nothing lost: a NAK, everything after it resent, and the 2 ms
  // timer when the resends crossed (0.46 instead of 48 Mops/s per GPU before the fix).
  const std::string fabric = "[fabric]\ngpus = 8\n";
  SimRequest request;
  request.workload = WorkloadKind::kMessageRate;
  request.bytes = 8;
  const SimReport off = simulate(parse_topology(fabric, "t.toml"), request);
  const SimReport on =
      simulate(parse_topology(fabric + "[reliability]\nmode = \"go-back-n\"\n", "t.toml"), request);
  ASSERT_TRUE(on.complete);
  EXPECT_EQ(on.ops_failed, 0u);
  EXPECT_NEAR(on.message_rate_mops(), off.message_rate_mops(), 0.05 * off.message_rate_mops());
  EXPECT_LT(on.latency_p99_ps, 2 * off.latency_p99_ps);
}

TEST(SimLinkDown, SameSeedAndFaultsGiveByteIdenticalJson) {
  TopologyConfig config = fast_config();
  config.resize(40);  // two leaves, so the fault is on a leaf port behind a spine
  const std::vector<LinkFault> faults = {LinkFault{33, 5'000, 150'000}, LinkFault{2, 20'000, {}}};
  const auto run = [&](std::uint64_t seed) {
    return to_json(simulate(config, TopologyKind::kLeafSpine, WorkloadKind::kRandom, 4096, seed, 8,
                            faults))
        .dump();
  };
  const std::string first = run(7);
  EXPECT_EQ(first, run(7));
  EXPECT_NE(first, run(8));
  const auto json = nlohmann::json::parse(first);
  EXPECT_TRUE(json["complete"].get<bool>());
  EXPECT_GT(json["liveness"]["peers_marked_down"].get<std::uint64_t>(), 0u);
  EXPECT_GT(json["unreachable"].get<std::uint64_t>(), 0u);
  ASSERT_EQ(json["link_down"].size(), 2u);
  EXPECT_EQ(json["link_down"][0]["up_ns"].get<std::uint64_t>(), 150'000u);
  EXPECT_TRUE(json["link_down"][1]["up_ns"].is_null());
  // The text table carries the same figures.
  const std::string text = format_table(
      simulate(config, TopologyKind::kLeafSpine, WorkloadKind::kRandom, 4096, 7, 8, faults));
  EXPECT_NE(text.find("GPU 33 at 5000 ns, up at 150000 ns"), std::string::npos) << text;
  EXPECT_NE(text.find("peers marked down (first at"), std::string::npos) << text;
}

}  // namespace
}  // namespace ethx::sim
