// `ethx bench` as a user runs it: real ethx-switch and ethx-node processes over shared memory.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "fabric/platform/child_process.hpp"
#include "tests/integration/cli_test_support.hpp"

namespace ethx {
namespace {

using test::CommandResult;
using test::ethx_binary;
using test::run_command;
using test::shm_files_with_prefix;

void expect_latency_pair(const nlohmann::json& value) {
  ASSERT_TRUE(value.is_object());
  EXPECT_TRUE(value["p50"].is_number_integer());
  EXPECT_TRUE(value["p99"].is_number_integer());
  EXPECT_GT(value["p50"].get<std::int64_t>(), 0);
  EXPECT_GE(value["p99"].get<std::int64_t>(), value["p50"].get<std::int64_t>());
}

TEST(BenchCli, JsonReportHasTheDocumentedKeysAndNoMismatches) {
  const CommandResult result =
      run_command(ethx_binary() + " bench --gpus 4 --transport shm --quick --json --quiet");
  ASSERT_EQ(result.exit_status, 0) << result.output;
  const nlohmann::json report = nlohmann::json::parse(result.output);  // stdout is one object
  EXPECT_EQ(report["gpus"], 4);
  EXPECT_EQ(report["transport"], "shm");
  expect_latency_pair(report["load_latency_ns"]);
  expect_latency_pair(report["baseline_rtt_ns"]);
  for (const char* size : {"64", "256", "1024", "4096"}) {
    ASSERT_TRUE(report["store_bandwidth_gbps"][size].is_number()) << size;
    EXPECT_GT(report["store_bandwidth_gbps"][size].get<double>(), 0.0) << size;
  }
  EXPECT_GT(report["verified_ops"].get<std::uint64_t>(), 1000u);
  EXPECT_EQ(report["mismatches"], 0);
  EXPECT_EQ(report["errors"], 0);
  EXPECT_EQ(report["switch_drops"], 0);
  EXPECT_EQ(report["quick"], true);

  // The simulator takes the report as it is and predicts every figure it fits or holds out
  // (how close is the host's business: docs/simulator.md, "Calibrating against the emulator").
  const auto path = std::filesystem::temp_directory_path() /
                    ("ethx-test-" + std::to_string(::getpid()) + "-bench.json");
  std::ofstream(path) << result.output;
  const CommandResult calibrated =
      run_command(ethx_binary() + " sim --calibrate " + path.string() + " --json");
  std::filesystem::remove(path);
  ASSERT_EQ(calibrated.exit_status, 0) << calibrated.output;
  const nlohmann::json table = nlohmann::json::parse(calibrated.output);
  EXPECT_EQ(table["engine"], "load-store");
  EXPECT_EQ(table["gpus"], 4);
  EXPECT_EQ(table["fitted"].size(), 4u);
  ASSERT_EQ(table["figures"].size(), 9u);
  for (const nlohmann::json& row : table["figures"]) {
    EXPECT_GT(row["predicted"].get<double>(), 0.0) << row.dump();
  }
}

TEST(BenchCli, ThirtyTwoGpusRunOnTwoCores) {
  const CommandResult result =
      run_command(ethx_binary() + " bench --gpus 32 --transport shm --quick --json --quiet");
  ASSERT_EQ(result.exit_status, 0) << result.output;
  const nlohmann::json report = nlohmann::json::parse(result.output);
  EXPECT_EQ(report["gpus"], 32);
  EXPECT_EQ(report["mismatches"], 0);
  EXPECT_GT(report["all_to_all_gbps"].get<double>(), 0.0);
}

TEST(BenchCli, BadConfigNamesTheField) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("ethx-test-" + std::to_string(::getpid()) + "-bad.toml");
  std::ofstream(path) << "[fabric]\ngpus = 1\n";
  const CommandResult result =
      run_command(ethx_binary() + " bench --config " + path.string() + " 2>&1");
  std::filesystem::remove(path);
  EXPECT_EQ(result.exit_status, 2);
  EXPECT_NE(result.output.find("fabric.gpus"), std::string::npos) << result.output;
}

TEST(BenchCli, UnknownTransportIsAClearError) {
  const CommandResult result =
      run_command(ethx_binary() + " bench --transport carrier-pigeon 2>&1");
  EXPECT_NE(result.exit_status, 0);
  EXPECT_NE(result.output.find("carrier-pigeon"), std::string::npos) << result.output;
}

TEST(BenchCli, CtrlCStopsEverythingAndLeavesNoSharedMemory) {
  ChildProcess bench = ChildProcess::spawn({ethx_binary(), "bench", "--gpus", "4", "--quiet"});
  const std::string prefix = "ethx-b" + std::to_string(bench.pid()) + "-";
  // Wait until the fabric is up: every node has created its memory file.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (shm_files_with_prefix(prefix + "hbm-").size() < 4) {
    ASSERT_TRUE(bench.running()) << "ethx bench ended before the fabric was up";
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "fabric did not come up";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(::kill(bench.pid(), SIGINT), 0);
  ASSERT_TRUE(bench.wait_exit(30'000));
  EXPECT_NE(bench.exit_description(), "exit status 0");
  EXPECT_TRUE(shm_files_with_prefix(prefix).empty());
}

TEST(BenchCli, SigkillOfTheCoordinatorLeavesNoProcessOrSharedMemory) {
  ChildProcess bench = ChildProcess::spawn({ethx_binary(), "bench", "--gpus", "4", "--quiet"});
  const std::string prefix = "ethx-b" + std::to_string(bench.pid()) + "-";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  // Up and running: all memory files exist and the control file was unlinked after attach.
  while (shm_files_with_prefix(prefix + "hbm-").size() < 4 ||
         !shm_files_with_prefix(prefix + "control").empty()) {
    ASSERT_TRUE(bench.running()) << "ethx bench ended before the fabric was up";
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "fabric did not come up";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(::kill(bench.pid(), SIGKILL), 0);
  ASSERT_TRUE(bench.wait_exit(10'000));
  // The switch and nodes get SIGTERM from the kernel (parent death) and clean up.
  while (!shm_files_with_prefix(prefix).empty()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "left behind: " << shm_files_with_prefix(prefix).front();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Nor a stats file: nobody is left to read it.
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::temp_directory_path() /
                                       (prefix + "switch-stats.json")));
}

}  // namespace
}  // namespace ethx

namespace ethx {
namespace {

// Without the reliability layer, injected loss and corruption must be visible, never silent:
// every lost request ends (timeout), the corrupt frames are counted at the switch, the report
// counts the errors and the run exits 1, and nothing hangs.
TEST(BenchCli, InjectedLossAndCorruptionAreCountedAndNeverHang) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("ethx-test-faults-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(path) << "[fabric]\ngpus = 4\nrequest_timeout_ns = 20000000\n"
                         "[[fault]]\nport = 1\ndrop_rate = 0.01\ncorrupt_rate = 0.001\n";
  const test::CommandResult result = test::run_command(
      test::ethx_binary() + " bench --quick --json --quiet --config " + path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(result.exit_status, 1) << result.output;
  const nlohmann::json report = nlohmann::json::parse(result.output);
  const nlohmann::json& port = report["switch"]["ports"][1];
  EXPECT_GT(port["faults_dropped"].get<std::uint64_t>(), 0u);
  EXPECT_GT(port["faults_corrupted"].get<std::uint64_t>(), 0u);
  // The CRC catches every flip, except one that turns the EtherType into another protocol's.
  EXPECT_GT(port["drops_malformed"].get<std::uint64_t>(), 0u);
  EXPECT_LE(port["drops_malformed"].get<std::uint64_t>(),
            port["faults_corrupted"].get<std::uint64_t>());
  EXPECT_GT(report["errors"].get<std::uint64_t>() + report["mismatches"].get<std::uint64_t>(), 0u);
  EXPECT_FALSE(report["failed_runs"].empty());
}

}  // namespace
}  // namespace ethx
