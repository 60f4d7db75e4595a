// Flow control per traffic class in `ethx sim` ([link] flow_control): an incast the tail-drop
// switch loses is carried whole under credits and under pauses; its config and its errors.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "fabric/config/topology_config.hpp"
#include "fabric/sim/sim_command.hpp"
#include "fabric/sim/sim_report.hpp"

namespace ethx::sim {
namespace {

// 32 GPUs, 64 KiB egress queues (the tail-drop limit), 64 KiB per class and hop.
TopologyConfig incast_config(const std::string& mode, const std::string& extra = "") {
  return parse_topology(
      "[fabric]\ngpus = 32\n[switch]\negress_queue_bytes = 65536\n[link]\n"
      "flow_control = \"" +
          mode + "\"\nclass_buffer_bytes = 65536\n" + extra,
      "t.toml");
}

// Every GPU but 0 writes 64 KiB to GPU 0, twice.
SimReport incast(const TopologyConfig& config) {
  return simulate(config, TopologyKind::kSingle, WorkloadKind::kIncast, 65536, 1, 2);
}

std::string config_error(const std::string& text) {
  try {
    parse_topology(text, "t.toml");
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(SimFlowControl, WithoutItAnIncastOverflowsTheEgressQueueAndWritesAreLost) {
  const SimReport report = incast(incast_config("none"));
  EXPECT_GT(report.drops_queue_full, 0u);
  EXPECT_GT(report.ops_failed, 0u);
  EXPECT_FALSE(report.flow_control.has_value()) << "no flow_control key in the report";
}

TEST(SimFlowControl, CreditsCarryTheIncastWholeNearLineRate) {
  const SimReport report = incast(incast_config("cbfc"));
  EXPECT_TRUE(report.complete);
  EXPECT_EQ(report.ops_ok, 62u);
  EXPECT_EQ(report.drops, 0u);
  ASSERT_TRUE(report.flow_control.has_value());
  EXPECT_EQ(report.flow_control_mode, "cbfc");
  EXPECT_GT(report.flow_control->credit_updates_sent, 0u);
  EXPECT_EQ(report.flow_control->credit_updates_sent, report.flow_control->credit_updates_received);
  EXPECT_EQ(report.flow_control->buffer_overruns, 0u) << "no sender went past its credit";
  EXPECT_GT(report.flow_control->frames_held, 0u) << "senders waited for credit";
  // 62 x 64 KiB through GPU 0's 800 Gbit/s port takes 40.6 us at line rate.
  EXPECT_GT(report.bandwidth_gbps(), 600.0);
}

TEST(SimFlowControl, PausesCarryTheIncastWholeWithinTheirHeadroom) {
  const SimReport report = incast(incast_config("pfc"));
  EXPECT_TRUE(report.complete);
  EXPECT_EQ(report.ops_ok, 62u);
  EXPECT_EQ(report.drops, 0u);
  ASSERT_TRUE(report.flow_control.has_value());
  EXPECT_GT(report.flow_control->pause_frames_sent, 0u);
  EXPECT_EQ(report.flow_control->pause_frames_sent, report.flow_control->pause_frames_received);
  EXPECT_EQ(report.flow_control->buffer_overruns, 0u) << "the headroom took what was in flight";
  EXPECT_GT(report.bandwidth_gbps(), 600.0);
}

TEST(SimFlowControl, LeafSpineHopsRunItTooAndRunsRepeatByteForByte) {
  TopologyConfig config = incast_config("cbfc");
  config.resize(64);
  const SimReport first =
      simulate(config, TopologyKind::kLeafSpine, WorkloadKind::kAllToAll, 4096, 1, 1);
  EXPECT_TRUE(first.complete);
  EXPECT_EQ(first.ops_failed, 0u);
  EXPECT_EQ(first.drops, 0u);
  const SimReport second =
      simulate(config, TopologyKind::kLeafSpine, WorkloadKind::kAllToAll, 4096, 1, 1);
  EXPECT_EQ(to_json(first).dump(), to_json(second).dump());
}

TEST(SimFlowControl, WithLinkLevelRetryTheControlFramesAreRepairedToo) {
  // Corruption both ways on GPU 5's hop: credit updates are replayed like data, so nothing is
  // lost and no sender waits for credit that never comes back.
  const SimReport report = incast(incast_config(
      "cbfc", "retry = \"llr\"\n[[fault]]\nport = 5\ndirection = \"both\"\ncorrupt_rate = 0.01\n"));
  EXPECT_TRUE(report.complete);
  EXPECT_EQ(report.ops_failed, 0u);
  ASSERT_TRUE(report.link_retry.has_value());
  EXPECT_GT(report.link_retry->frames_replayed, 0u);
}

TEST(SimFlowControl, AfterALinkGoesDownAndUpCreditStartsAgainAndNoSenderIsStuck) {
  // GPU 3's link is down from 2 us to 30 us of the incast (8 rounds, ~180 us): the writes it
  // had on the wire then fail (request timeout 1 ms). The NIC spent its credit on frames the
  // down port threw away; when the link is back both ends start again with full credit, and
  // every later write, GPU 3's included, completes. (Before the restart at link-up, all 8 of
  // GPU 3's writes failed.)
  TopologyConfig config = incast_config("cbfc", "[liveness]\ndown_after_timeouts = 0\n");
  config.request_timeout_ns = 1'000'000;
  const SimReport report = simulate(config, TopologyKind::kSingle, WorkloadKind::kIncast, 65536, 1,
                                    8, {LinkFault{3, 2'000, 30'000}});
  EXPECT_TRUE(report.complete);
  EXPECT_EQ(report.ops_ok + report.ops_failed, 248u);
  EXPECT_GT(report.ops_failed, 0u);
  EXPECT_LE(report.ops_failed, 4u) << "only writes GPU 3 had on the wire while it was down";
  ASSERT_TRUE(report.flow_control.has_value());
  EXPECT_EQ(report.flow_control->buffer_overruns, 0u);
}

TEST(SimFlowControl, TheRdmaEngineIsRefusedByName) {
  SimRequest request;
  request.engine = SimEngine::kRoce;
  request.workload = WorkloadKind::kIncast;
  request.bytes = 64;
  try {
    simulate(incast_config("cbfc"), request);
    FAIL() << "--engine roce ran with flow control";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("[link] flow_control"), std::string::npos);
  }
}

TEST(FlowConfig, BadFlowControlSettingsNameTheirField) {
  EXPECT_NE(config_error("[link]\nflow_control = \"xon\"").find("link.flow_control"),
            std::string::npos);
  const std::string below_mtu =
      config_error("[link]\nflow_control = \"cbfc\"\nclass_buffer_bytes = 1024");
  EXPECT_NE(below_mtu.find("link.class_buffer_bytes"), std::string::npos) << below_mtu;
  EXPECT_NE(below_mtu.find("largest frame"), std::string::npos) << below_mtu;
  const std::string no_headroom =
      config_error("[link]\nflow_control = \"pfc\"\nclass_buffer_bytes = 4096");
  EXPECT_NE(no_headroom.find("link.class_buffer_bytes"), std::string::npos) << no_headroom;
  EXPECT_NE(no_headroom.find("headroom"), std::string::npos) << no_headroom;
  EXPECT_NE(config_error("[link]\nflow_control = \"cbfc\"\ncredit_update_bytes = 100000")
                .find("link.credit_update_bytes"),
            std::string::npos);
  // Losses CBFC cannot recover from without link-level retry, and stalls it does not model.
  const std::string lossy =
      config_error("[link]\nflow_control = \"cbfc\"\n[[fault]]\nport = 1\ndrop_rate = 0.01");
  EXPECT_NE(lossy.find("fault[0].drop_rate"), std::string::npos) << lossy;
  EXPECT_NE(lossy.find("link.retry"), std::string::npos) << lossy;
  EXPECT_EQ(config_error("[link]\nflow_control = \"cbfc\"\nretry = \"llr\"\n[[fault]]\nport = "
                         "1\ndrop_rate = 0.01"),
            "");
  EXPECT_NE(config_error("[link]\nflow_control = \"pfc\"\n[[fault]]\nport = 1\n"
                         "delay_spike_rate = 0.1\ndelay_spike_us = 5")
                .find("fault[0].delay_spike_rate"),
            std::string::npos);
  // The same small buffer is fine while flow control is off.
  EXPECT_EQ(config_error("[link]\nclass_buffer_bytes = 1024"), "");
}

TEST(FlowConfig, TheEmulatorRunsFlowControlOnlyWithLinkLevelRetryNamingTheField) {
  try {
    require_emulated(parse_topology("[link]\nflow_control = \"pfc\"\n", "t.toml"));
    FAIL() << "the emulator accepted flow control without link training under it";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("link.flow_control"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("link.retry"), std::string::npos);
  }
  for (const char* mode : {"cbfc", "pfc"}) {
    EXPECT_NO_THROW(require_emulated(parse_topology(
        std::string("[link]\nretry = \"llr\"\nflow_control = \"") + mode + "\"\n", "t.toml")))
        << mode;
  }
}

}  // namespace
}  // namespace ethx::sim
