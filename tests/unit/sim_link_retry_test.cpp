// Link-level retry in `ethx sim` ([link] retry = "llr"): every hop, GPU to switch and switch to
// switch, repairs what the faults damage in both directions; its config and its errors.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "fabric/config/topology_config.hpp"
#include "fabric/sim/sim_command.hpp"
#include "fabric/sim/sim_report.hpp"

namespace ethx::sim {
namespace {

// 8 GPUs; GPU 1's hop corrupts frames both ways at `corrupt_rate`; `extra` adds tables.
TopologyConfig config_with(const std::string& extra, double corrupt_rate) {
  return parse_topology("[fabric]\ngpus = 8\n" + extra +
                            "\n[[fault]]\nport = 1\ndirection = \"both\"\ncorrupt_rate = " +
                            std::to_string(corrupt_rate) + "\n",
                        "t.toml");
}

SimReport run(const TopologyConfig& config, WorkloadKind workload, std::uint64_t bytes,
              std::uint64_t repeat, TopologyKind topology = TopologyKind::kSingle) {
  return simulate(config, topology, workload, bytes, 1, repeat);
}

std::string config_error(const std::string& text) {
  try {
    parse_topology(text, "t.toml");
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(SimLinkRetry, CorruptionBothWaysOnAHopCostsReplaysNotFailedOperations) {
  const SimReport report =
      run(config_with("[link]\nretry = \"llr\"", 0.01), WorkloadKind::kReadLatency, 8, 200);
  EXPECT_TRUE(report.complete);
  EXPECT_EQ(report.ops_failed, 0u);
  ASSERT_TRUE(report.link_retry.has_value());
  EXPECT_GT(report.link_retry->drops_bad_fcs, 0u);
  EXPECT_GT(report.link_retry->frames_replayed, 0u);
  EXPECT_GT(report.link_retry->naks_sent, 0u);
  // A repair costs a hop's round trip or a replay timeout (10 us), never a request timeout.
  EXPECT_LT(report.latency_max_ps, 20'000'000u);
}

TEST(SimLinkRetry, WithoutLinkRetryTheSameFaultsCostGoBackNItsTimeout) {
  const SimReport report = run(config_with("[reliability]\nmode = \"go-back-n\"", 0.01),
                               WorkloadKind::kReadLatency, 8, 200);
  EXPECT_TRUE(report.complete);
  EXPECT_EQ(report.ops_failed, 0u);
  EXPECT_FALSE(report.link_retry.has_value());
  EXPECT_GE(report.latency_max_ps, 2'000'000'000u);  // the 2 ms retransmit timer
}

TEST(SimLinkRetry, ClearHopsAddNothingButTheTrailerAndTheAcks) {
  const SimReport plain = run(config_with("", 0.0), WorkloadKind::kReadLatency, 8, 10);
  const SimReport llr =
      run(config_with("[link]\nretry = \"llr\"", 0.0), WorkloadKind::kReadLatency, 8, 10);
  ASSERT_TRUE(llr.link_retry.has_value());
  EXPECT_EQ(llr.link_retry->frames_replayed, 0u);
  EXPECT_EQ(llr.ops_ok, plain.ops_ok);
  // 12 trailer bytes per hop: a little more serialization, nothing else.
  EXPECT_GT(llr.latency_p50_ps, plain.latency_p50_ps);
  EXPECT_LT(llr.latency_p50_ps, plain.latency_p50_ps + 5'000u);
}

TEST(SimLinkRetry, LeafSpineHopsRunItTooAndRunsRepeatByteForByte) {
  TopologyConfig config = config_with("[link]\nretry = \"llr\"", 0.001);
  config.resize(64);
  const SimReport first = run(config, WorkloadKind::kAllToAll, 4096, 1, TopologyKind::kLeafSpine);
  EXPECT_TRUE(first.complete);
  EXPECT_EQ(first.ops_failed, 0u);
  ASSERT_TRUE(first.link_retry.has_value());
  // Every hop end stamps frames: 64 GPUs' NICs, and leaf and spine ports.
  EXPECT_GT(first.link_retry->frames_sent, first.frames_delivered);
  const SimReport second = run(config, WorkloadKind::kAllToAll, 4096, 1, TopologyKind::kLeafSpine);
  EXPECT_EQ(to_json(first).dump(), to_json(second).dump());
}

TEST(SimLinkRetry, AfterALinkGoesDownAndUpBothEndsRetrainAndTheWorkloadFinishes) {
  // GPU 1's link is down from 20 us to 60 us of a stream of loads from GPU 0: loads in flight
  // then fail (request timeout 100 us), and every load after the link is back succeeds.
  TopologyConfig config = parse_topology(
      "[fabric]\ngpus = 4\nrequest_timeout_ns = 100000\n[link]\nretry = \"llr\"\n"
      "[liveness]\ndown_after_timeouts = 0\n",
      "t.toml");
  const SimReport report = simulate(config, TopologyKind::kSingle, WorkloadKind::kReadLatency, 8, 1,
                                    100, {LinkFault{1, 20'000, 60'000}});
  EXPECT_TRUE(report.complete);
  ASSERT_TRUE(report.link_retry.has_value());
  EXPECT_GT(report.ops_ok, 9'900u);
  EXPECT_LE(report.ops_failed, 2u);
  // Afterwards the hop runs clean: the last load took an undisturbed round trip.
  EXPECT_LT(report.makespan_ps, 200'000'000'000u);
}

TEST(SimLinkRetry, AHopThatLosesEverythingEndsTheRunInsteadOfReplayingForever) {
  // Every frame the switch sends GPU 1 is lost: loads to it fail, its port gives up replaying,
  // and the run ends (it used to replay every 10 ms for ever).
  const TopologyConfig config = parse_topology(
      "[fabric]\ngpus = 4\nrequest_timeout_ns = 100000\n[link]\nretry = \"llr\"\n"
      "[[fault]]\nport = 1\ndirection = \"tx\"\ndrop_rate = 1.0\n",
      "t.toml");
  const SimReport report = run(config, WorkloadKind::kReadLatency, 8, 1);
  EXPECT_EQ(report.ops_ok, 0u);
  EXPECT_GT(report.ops_failed, 0u);
  ASSERT_TRUE(report.link_retry.has_value());
  EXPECT_GE(report.link_retry->gave_up, 1u);
}

TEST(SimLinkRetry, TheRdmaEngineIsRefusedByName) {
  const TopologyConfig config = config_with("[link]\nretry = \"llr\"", 0.0);
  SimRequest request;
  request.engine = SimEngine::kRoce;
  request.workload = WorkloadKind::kReadLatency;
  request.bytes = 8;
  try {
    simulate(config, request);
    FAIL() << "--engine roce ran with link-level retry";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("[link] retry"), std::string::npos);
  }
}

TEST(LinkConfig, BadRetrySettingsNameTheirField) {
  EXPECT_NE(config_error("[link]\nretry = \"fec\"").find("link.retry"), std::string::npos);
  const std::string small = config_error("[link]\nretry = \"llr\"\nreplay_buffer_bytes = 4096");
  EXPECT_NE(small.find("link.replay_buffer_bytes"), std::string::npos);
  EXPECT_NE(small.find("round trip"), std::string::npos);
  // The same small buffer is fine while link-level retry is off.
  EXPECT_EQ(config_error("[link]\nreplay_buffer_bytes = 4096"), "");
  EXPECT_NE(config_error("[[fault]]\nport = 1\ndirection = \"tx\"\nreorder_rate = 0.1")
                .find("fault[0].reorder_rate"),
            std::string::npos);
  EXPECT_NE(config_error("[[fault]]\nport = 1\ndirection = \"up\"").find("fault[0].direction"),
            std::string::npos);
}

TEST(LinkConfig, DirectionPutsFaultsOnEitherSideOfTheHop) {
  const TopologyConfig config = parse_topology(
      "[[fault]]\nport = 1\ndirection = \"tx\"\ndrop_rate = 0.5\n"
      "[[fault]]\nport = 2\ndrop_rate = 0.25\n",
      "t.toml");
  ASSERT_EQ(config.tx_faults.size(), 1u);
  EXPECT_EQ(config.tx_faults[0].first, 1u);
  ASSERT_EQ(config.faults.size(), 1u);
  EXPECT_EQ(config.faults[0].first, 2u);
  const SwitchConfig switch_config = config.switch_config();
  EXPECT_EQ(switch_config.tx_faults.size(), 1u);
  EXPECT_FALSE(switch_config.ports[0].link_retry);
}

TEST(LinkConfig, TheEmulatorRunsLinkRetryOnTheWallClockWithTrainingAndSmallerEngineFrames) {
  const TopologyConfig llr = parse_topology("[link]\nretry = \"llr\"\n", "t.toml");
  EXPECT_NO_THROW(require_emulated(llr));
  const SwitchConfig emulated = llr.emulated_switch_config(1, 5);
  EXPECT_TRUE(emulated.link_training);
  EXPECT_TRUE(emulated.ports[0].link_retry);
  EXPECT_FALSE(emulated.ports.back().link_retry);  // a guest NIC's port
  EXPECT_EQ(emulated.link_retry.replay_timeout_ns, kWallClockReplayTimeoutNs);
  EXPECT_EQ(emulated.link_retry.ack_delay_ns, kWallClockAckDelayNs);
  EXPECT_TRUE(emulated.link_retry.adaptive_replay_timeout);
  EXPECT_FALSE(llr.switch_config().link_retry.adaptive_replay_timeout);
  EXPECT_FALSE(llr.switch_config().link_training);  // the simulator's hops never train
  // A frame on the wire, trailer included, stays within fabric.frame_bytes_max.
  EXPECT_EQ(llr.engine_config(0).frame_bytes_max, llr.frame_bytes_max - kLlrTrailerBytes);
  EXPECT_EQ(parse_topology("", "t.toml").engine_config(0).frame_bytes_max, llr.frame_bytes_max);
}

}  // namespace
}  // namespace ethx::sim
