#include "fabric/config/topology_config.hpp"

#include <gtest/gtest.h>

#include <string>

namespace ethx {
namespace {

// The message of the ConfigError that parsing `text` throws, or "" if it parses.
std::string error_of(const std::string& text) {
  try {
    parse_topology(text, "t.toml");
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(TopologyConfigTest, EmbeddedDefaultIsEightGpusOnOneSwitch) {
  const TopologyConfig config = load_topology("");
  EXPECT_EQ(config.gpu_count, 8u);
  EXPECT_EQ(config.hbm_bytes, 64ull << 20);
  EXPECT_EQ(config.frame_bytes_max, 1792u);
  EXPECT_EQ(config.switch_forwarding_latency_ns, 250u);
  EXPECT_DOUBLE_EQ(config.link_rate_gbps, 800.0);
  ASSERT_EQ(config.gpus.size(), 8u);
  EXPECT_EQ(config.gpus[3].mac, default_mac_for_gpu(3));
  const AddressMap map = config.address_map();
  EXPECT_EQ(map.windows().size(), 8u);
  EXPECT_EQ(map.windows()[5].window_offset, 5 * (64ull << 20));
}

TEST(TopologyConfigTest, EngineAndSwitchConfigsFollowTheTopology) {
  const TopologyConfig config = parse_topology(
      "[fabric]\ngpus = 3\nmax_outstanding = 64\n[[gpu]]\nid = 2\npartition = 7\n"
      "export_rights = \"r\"\n",
      "t.toml");
  const EngineConfig engine = config.engine_config(2);
  EXPECT_EQ(engine.self, 2);
  EXPECT_EQ(engine.partition, 7);
  EXPECT_EQ(engine.export_rights, kRightRead);
  EXPECT_EQ(engine.max_outstanding, 64u);
  ASSERT_EQ(engine.gpu_macs.size(), 3u);
  const SwitchConfig switch_config = config.switch_config();
  EXPECT_EQ(switch_config.ports.size(), 3u);
  ASSERT_EQ(switch_config.static_routes.size(), 3u);
  EXPECT_EQ(switch_config.static_routes[1].first, default_mac_for_gpu(1));
  EXPECT_EQ(switch_config.static_routes[1].second, 1u);
}

TEST(TopologyConfigTest, ErrorsNameTheFieldAndTheReason) {
  EXPECT_NE(
      error_of("[fabric]\ngpus = 1\n").find("t.toml: fabric.gpus: must be between 2 and 1024"),
      std::string::npos);
  EXPECT_NE(error_of("[fabric]\ngpus = \"eight\"\n").find("fabric.gpus: must be an integer"),
            std::string::npos);
  EXPECT_NE(
      error_of("[switch]\negress_qeue_bytes = 5\n").find("switch.egress_qeue_bytes: unknown key"),
      std::string::npos);
  EXPECT_NE(error_of("[fabric]\ndefault_rights = \"rx\"\n").find("fabric.default_rights"),
            std::string::npos);
  EXPECT_NE(error_of("[link]\nrate_gbps = -1\n").find("link.rate_gbps"), std::string::npos);
  EXPECT_NE(error_of("[fabric]\nhbm_bytes = 5000\n").find("fabric.hbm_bytes: must be a multiple"),
            std::string::npos);
  EXPECT_NE(error_of("[[gpu]]\nmac = \"02:00:00:00:00:01\"\n").find("gpu[0].id: is required"),
            std::string::npos);
  EXPECT_NE(error_of("[[gpu]]\nid = 9\n").find("gpu.id: 9 is not below fabric.gpus"),
            std::string::npos);
  EXPECT_NE(error_of("[[gpu]]\nid = 1\nmac = \"01:00:5e:00:00:01\"\n").find("unicast"),
            std::string::npos);
  EXPECT_NE(error_of("[[gpu]]\nid = 1\nmac = \"02:e7:68:00:00:00\"\n").find("used by two GPUs"),
            std::string::npos);
  EXPECT_NE(error_of("[fabric\ngpus = 2\n").find("not valid TOML"), std::string::npos);
  EXPECT_NE(error_of("mystery = 1\n").find("mystery: unknown key"), std::string::npos);
}

TEST(TopologyConfigTest, CustomWindowsReplaceTheDefaultLayoutAndBadOnesNameTheWindows) {
  const TopologyConfig config = parse_topology(
      "[fabric]\ngpus = 2\nhbm_bytes = 8192\naperture_bytes = 8192\n"
      "[[window]]\nname = \"peer\"\noffset = 0\nsize = 4096\ngpu = 1\nrights = \"r\"\n",
      "t.toml");
  ASSERT_EQ(config.windows().size(), 1u);
  EXPECT_EQ(config.windows()[0].name, "peer");
  EXPECT_EQ(config.windows()[0].rights, kRightRead);

  const std::string overlap = error_of(
      "[fabric]\ngpus = 2\nhbm_bytes = 8192\naperture_bytes = 8192\n"
      "[[window]]\nname = \"a\"\noffset = 0\nsize = 4096\ngpu = 1\n"
      "[[window]]\nname = \"b\"\noffset = 2048\nsize = 4096\ngpu = 0\n");
  EXPECT_NE(overlap.find("'a'"), std::string::npos) << overlap;
  EXPECT_NE(overlap.find("'b'"), std::string::npos) << overlap;

  const std::string past_end = error_of(
      "[fabric]\ngpus = 2\nhbm_bytes = 8192\naperture_bytes = 8192\n"
      "[[window]]\nname = \"big\"\noffset = 0\nsize = 8192\ngpu = 1\nremote_base = 4096\n");
  EXPECT_NE(past_end.find("big"), std::string::npos) << past_end;
  EXPECT_NE(
      error_of("[[window]]\nname = \"x\"\nsize = 4096\ngpu = 1\n").find("offset: is required"),
      std::string::npos);
}

TEST(TopologyConfigTest, ResizeKeepsOverridesOfGpusThatRemainAndRejectsBadCounts) {
  TopologyConfig config = parse_topology("[[gpu]]\nid = 1\npartition = 4\n", "t.toml");
  config.resize(32);
  EXPECT_EQ(config.gpu_count, 32u);
  EXPECT_EQ(config.gpus.size(), 32u);
  EXPECT_EQ(config.gpus[1].partition, 4);
  EXPECT_EQ(config.address_map().windows().size(), 32u);
  EXPECT_THROW(config.resize(1), ConfigError);
  EXPECT_THROW(config.resize(5000), ConfigError);
}

}  // namespace
}  // namespace ethx

namespace ethx {
namespace {

TEST(TopologyConfigTest, AGpuCanNameARealInterfaceAndNamespace) {
  const TopologyConfig config = parse_topology(
      "[fabric]\ngpus = 2\n[[gpu]]\nid = 1\ninterface = \"enp3s0f1\"\nnetns = \"rack\"\n", "t");
  EXPECT_EQ(config.gpus[1].interface, "enp3s0f1");
  EXPECT_EQ(config.gpus[1].netns, "rack");
  EXPECT_EQ(config.gpus[0].interface, "");  // the default: the veth ethx creates
  EXPECT_NE(error_of("[[gpu]]\nid = 0\ninterface = \"a-name-far-too-long\"\n")
                .find("gpu[0].interface: must be an interface name"),
            std::string::npos);
  EXPECT_NE(error_of("[[gpu]]\nid = 0\nnetns = \"../x\"\n").find("gpu[0].netns"),
            std::string::npos);
}

}  // namespace
}  // namespace ethx

namespace ethx {
namespace {

TEST(TopologyConfigTest, FaultTablesReachTheSwitchAndBadRatesNameTheField) {
  const TopologyConfig config = parse_topology(
      "[switch]\nfault_seed = 42\n[[fault]]\nport = 1\ndrop_rate = 0.01\ncorrupt_rate = 0.001\n",
      "t");
  const SwitchConfig switch_config = config.switch_config();
  ASSERT_EQ(switch_config.faults.size(), 1u);
  EXPECT_EQ(switch_config.faults[0].first, 1u);
  EXPECT_DOUBLE_EQ(switch_config.faults[0].second.drop_rate, 0.01);
  EXPECT_DOUBLE_EQ(switch_config.faults[0].second.corrupt_rate, 0.001);
  EXPECT_EQ(switch_config.fault_seed, 42u);
  EXPECT_NE(error_of("[[fault]]\nport = 0\ndrop_rate = 2.0\n").find("fault[0].drop_rate"),
            std::string::npos);
  EXPECT_NE(error_of("[[fault]]\ndrop_rate = 0.1\n").find("fault[0].port: is required"),
            std::string::npos);
}

TEST(ReliabilityConfig, TheTableSetsEveryGpusEngineAndAGpuMayOverrideIt) {
  const TopologyConfig config = parse_topology(
      "[fabric]\ngpus = 3\n[reliability]\nmode = \"go-back-n\"\nwindow_frames = 32\n"
      "retransmit_timeout_ns = 250000\nack_delay_ns = 5000\n[[gpu]]\nid = 2\n"
      "reliability = \"off\"\n",
      "t.toml");
  const EngineConfig first = config.engine_config(0);
  EXPECT_TRUE(first.reliability.enabled);
  EXPECT_EQ(first.reliability.window_frames, 32u);
  EXPECT_EQ(first.reliability.retransmit_timeout_ns, 250'000u);
  EXPECT_EQ(first.reliability.ack_delay_ns, 5'000u);
  EXPECT_FALSE(config.engine_config(2).reliability.enabled);
}

TEST(ReliabilityConfig, TheEmbeddedDefaultIsOffAndBadValuesNameTheirField) {
  EXPECT_FALSE(load_topology("").engine_config(0).reliability.enabled);
  EXPECT_NE(error_of("[reliability]\nmode = \"tcp\"\n").find("reliability.mode"),
            std::string::npos);
  EXPECT_NE(error_of("[reliability]\nwindow_frames = 256\n").find("reliability.window_frames"),
            std::string::npos);
  EXPECT_NE(error_of("[reliability]\nretransmit_timeout_ns = 10\n")
                .find("reliability.retransmit_timeout_ns"),
            std::string::npos);
  EXPECT_NE(error_of("[reliability]\nspeed = 1\n").find("speed"), std::string::npos);
  EXPECT_NE(error_of("[[gpu]]\nid = 1\nreliability = \"yes\"\n").find("reliability"),
            std::string::npos);
}

TEST(LivenessConfig, TheTableSetsEveryGpusEngineAndBadValuesNameTheirField) {
  const EngineConfig defaults = load_topology("").engine_config(1);
  EXPECT_EQ(defaults.liveness.down_after_timeouts, 3u);
  EXPECT_EQ(defaults.liveness.probe_interval_ns, 100'000'000u);
  const TopologyConfig config = parse_topology(
      "[liveness]\ndown_after_timeouts = 5\ntimeout_window_ns = 2000000\n"
      "probe_interval_ns = 7000\n",
      "t.toml");
  const EngineConfig engine = config.engine_config(0);
  EXPECT_EQ(engine.liveness.down_after_timeouts, 5u);
  EXPECT_EQ(engine.liveness.timeout_window_ns, 2'000'000u);
  EXPECT_EQ(engine.liveness.probe_interval_ns, 7'000u);
  EXPECT_NE(error_of("[liveness]\nprobe_interval_ns = 1\n").find("liveness.probe_interval_ns"),
            std::string::npos);
  EXPECT_NE(error_of("[liveness]\nafter = 1\n").find("after"), std::string::npos);
}

TEST(TopologyConfigTest, FaultTablesCarryDelaySpikesAndLinkStateAndCheckThem) {
  const TopologyConfig config = parse_topology(
      "[[fault]]\nport = 2\ndelay_spike_rate = 0.25\ndelay_spike_us = 300\nlink = \"down\"\n", "t");
  const SwitchConfig switch_config = config.switch_config();
  ASSERT_EQ(switch_config.faults.size(), 1u);
  const PortFaults& faults = switch_config.faults[0].second;
  EXPECT_DOUBLE_EQ(faults.delay_spike_rate, 0.25);
  EXPECT_EQ(faults.delay_spike_ns, 300'000u);
  EXPECT_TRUE(faults.link_down);
  // A switch built from it has the port down from the start.
  EXPECT_FALSE(SwitchCore(switch_config).port_up(2));
  EXPECT_NE(error_of("[[fault]]\nport = 0\nlink = \"sideways\"\n").find("fault[0].link"),
            std::string::npos);
  EXPECT_NE(
      error_of("[[fault]]\nport = 0\ndelay_spike_rate = 0.5\n").find("fault[0].delay_spike_us"),
      std::string::npos);
  EXPECT_NE(error_of("[[fault]]\nport = 0\ndelay_spike_us = 5\n").find("fault[0].delay_spike_rate"),
            std::string::npos);
  EXPECT_NE(error_of("[[fault]]\nport = 0\ndelay_spike_rate = 1.5\ndelay_spike_us = 5\n")
                .find("fault[0].delay_spike_rate"),
            std::string::npos);
}

}  // namespace
}  // namespace ethx
