// The run overlay files `ethx soak` and `ethx bench --reliability` write.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "fabric/config/config_overlay.hpp"
#include "fabric/config/topology_config.hpp"

namespace ethx {
namespace {

TEST(ConfigOverlay, ReplacesTheModeAndTheFaultsOfABaseFileAndKeepsTheRest) {
  const auto directory = std::filesystem::temp_directory_path();
  const auto base = directory / ("ethx-overlay-base-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(base) << "[fabric]\ngpus = 4\nhbm_bytes = 16777216\n[reliability]\nmode = \"off\"\n"
                         "window_frames = 20\n[[fault]]\nport = 3\ndrop_rate = 0.5\n";
  ConfigOverlay overlay;
  overlay.reliability_mode = "go-back-n";
  overlay.faults = std::vector<std::pair<PortId, PortFaults>>{{0, PortFaults{0.01, 0.001, 0.0}},
                                                              {1, PortFaults{0.02, 0.0, 0.1}}};
  overlay.fault_seed = 99;
  {
    ScopedConfigOverlay written(base.string(), overlay, "test");
    const TopologyConfig config = load_topology(written.path());
    EXPECT_EQ(config.gpu_count, 4u);
    EXPECT_EQ(config.hbm_bytes, 16u << 20);
    EXPECT_TRUE(config.reliability.enabled);
    EXPECT_EQ(config.reliability.window_frames, 20u);
    ASSERT_EQ(config.faults.size(), 2u);  // the base's fault on port 3 is replaced
    EXPECT_EQ(config.faults[1].first, 1u);
    EXPECT_DOUBLE_EQ(config.faults[1].second.drop_rate, 0.02);
    EXPECT_DOUBLE_EQ(config.faults[1].second.reorder_rate, 0.1);
    EXPECT_EQ(config.fault_seed, 99u);
    ASSERT_TRUE(std::filesystem::exists(written.path()));
    std::filesystem::remove(base);
  }
  // The embedded default works as a base too.
  ConfigOverlay only_mode;
  only_mode.reliability_mode = "go-back-n";
  std::string path;
  {
    ScopedConfigOverlay written("", only_mode, "test-default");
    path = written.path();
    EXPECT_EQ(load_topology(path).gpu_count, 8u);
    EXPECT_TRUE(load_topology(path).reliability.enabled);
  }
  EXPECT_FALSE(std::filesystem::exists(path)) << "removed with its owner";
}

TEST(ConfigOverlay, ABadBaseFileIsReportedAsSuch) {
  ConfigOverlay overlay;
  overlay.reliability_mode = "off";
  EXPECT_THROW(ScopedConfigOverlay("/nonexistent/ethx.toml", overlay, "test-bad"), ConfigError);
}

}  // namespace
}  // namespace ethx
