// `ethx soak` as a user runs it: a short soak over shared memory with injected loss and
// corruption must verify everything, and the same faults without reliability must be caught.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/integration/cli_test_support.hpp"

namespace ethx {
namespace {

const nlohmann::json& run_labelled(const nlohmann::json& report, const std::string& label) {
  for (const nlohmann::json& run : report["runs"]) {
    if (run["label"] == label) return run;
  }
  static const nlohmann::json kNone;
  ADD_FAILURE() << "no run labelled " << label;
  return kNone;
}

TEST(SoakCli, GoBackNLosesNothingUnderLossAndCorruption) {
  const test::CommandResult result = test::run_command(
      test::ethx_binary() +
      " soak --gpus 4 --ops 200000 --baseline-ops 50000 --loss 0.02 --corrupt 0.005 --json "
      "--quiet");
  ASSERT_EQ(result.exit_status, 0) << result.output;
  const nlohmann::json report = nlohmann::json::parse(result.output);
  EXPECT_TRUE(report["passed"].get<bool>());
  const nlohmann::json& faulted = run_labelled(report, "faulted");
  EXPECT_EQ(faulted["ops"].get<std::uint64_t>(), 200000u);
  EXPECT_GT(faulted["verified_ops"].get<std::uint64_t>(), 100000u);
  EXPECT_EQ(faulted["mismatches"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(faulted["hung_ops"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(faulted["errors"].get<std::uint64_t>(), 0u);
  // The faults really happened, and were repaired rather than avoided.
  EXPECT_GT(faulted["switch_faults_dropped"].get<std::uint64_t>(), 0u);
  EXPECT_GT(faulted["switch_faults_corrupted"].get<std::uint64_t>(), 0u);
  // The switch's CRC check catches the corrupted frames before they reach a node.
  EXPECT_GT(faulted["switch_drops_malformed"].get<std::uint64_t>(), 0u);
  EXPECT_GT(faulted["retransmitted_on_nak"].get<std::uint64_t>() +
                faulted["retransmitted_on_timer"].get<std::uint64_t>(),
            0u);
  const nlohmann::json& bare = run_labelled(report, "bare");
  const nlohmann::json& sequenced = run_labelled(report, "sequenced");
  EXPECT_EQ(bare["acks_sent"].get<std::uint64_t>(), 0u) << "off means no link frames";
  EXPECT_EQ(sequenced["mismatches"].get<std::uint64_t>(), 0u);
  EXPECT_GT(sequenced["load_p50_ns"].get<double>(), 0.0);
  EXPECT_GT(report["sequenced_to_bare_throughput"].get<double>(), 0.0);
}

TEST(SoakCli, WithoutReliabilityTheSameFaultsAreCaughtAndTheRunFails) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("ethx-test-soak-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(path) << "[fabric]\ngpus = 4\nrequest_timeout_ns = 20000000\n";
  const test::CommandResult result =
      test::run_command(test::ethx_binary() + " soak --config " + path.string() +
                        " --ops 40000 --loss 0.02 --reliability off --no-baselines --json --quiet");
  std::filesystem::remove(path);
  EXPECT_EQ(result.exit_status, 1) << result.output;
  const nlohmann::json report = nlohmann::json::parse(result.output);
  EXPECT_FALSE(report["passed"].get<bool>());
  const nlohmann::json& faulted = run_labelled(report, "faulted");
  EXPECT_GT(faulted["mismatches"].get<std::uint64_t>() + faulted["hung_ops"].get<std::uint64_t>(),
            0u);
}

// Link-level retry alone (end-to-end reliability off) repairs loss and corruption on both
// directions of every GPU's hop: the node's LlrNodePort and the switch port replay.
TEST(SoakCli, LinkLevelRetryAloneLosesNothingWithFaultsOnBothDirectionsOfEveryHop) {
  const test::CommandResult result =
      test::run_command(test::ethx_binary() +
                        " soak --gpus 4 --ops 100000 --loss 0.01 --corrupt 0.002 --reliability off "
                        "--link-retry llr --fault-direction both --no-baselines --json --quiet");
  ASSERT_EQ(result.exit_status, 0) << result.output;
  const nlohmann::json report = nlohmann::json::parse(result.output);
  EXPECT_TRUE(report["passed"].get<bool>());
  EXPECT_EQ(report["link_retry"], "llr");
  const nlohmann::json& faulted = run_labelled(report, "faulted");
  EXPECT_EQ(faulted["mismatches"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(faulted["hung_ops"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(faulted["errors"].get<std::uint64_t>(), 0u);
  EXPECT_GT(faulted["switch_faults_dropped"].get<std::uint64_t>(), 0u);
  EXPECT_GT(faulted["switch_faults_corrupted"].get<std::uint64_t>(), 0u);
  // Both ends replayed (the switch for its tx faults, the GPUs for the rx ones), NAKs went out,
  // and nothing was left for the end-to-end layer, which is off.
  EXPECT_GT(faulted["llr_frames_replayed_by_gpus"].get<std::uint64_t>(), 0u);
  EXPECT_GT(faulted["llr_frames_replayed_by_switch"].get<std::uint64_t>(), 0u);
  EXPECT_GT(faulted["llr_naks_sent"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(faulted["retransmitted_on_nak"].get<std::uint64_t>(), 0u);
  EXPECT_GE(faulted["llr_trainings"].get<std::uint64_t>(), 4u) << "each GPU trains its hop";
}

TEST(SoakCli, CreditsOverLinkLevelRetryLoseNothingWhileSendersWaitForCredit) {
  // Two frames of credit per class and hop, so senders run out (the GPUs about 100-200 times
  // in 100 000 operations, the switch's ports fewer).
  const std::string config = (std::filesystem::temp_directory_path() /
                              ("ethx-soak-cbfc-" + std::to_string(::getpid()) + ".toml"))
                                 .string();
  std::ofstream(config) << "[link]\nclass_buffer_bytes = 4096\ncredit_update_bytes = 1024\n";
  const test::CommandResult result = test::run_command(
      test::ethx_binary() + " soak --config " + config +
      " --gpus 4 --ops 100000 --loss 0.01 --corrupt 0.002 --reliability off --link-retry llr "
      "--flow-control cbfc --fault-direction both --no-baselines --json --quiet");
  std::filesystem::remove(config);
  ASSERT_EQ(result.exit_status, 0) << result.output;
  const nlohmann::json report = nlohmann::json::parse(result.output);
  EXPECT_EQ(report["flow_control"], "cbfc");
  const nlohmann::json& faulted = run_labelled(report, "faulted");
  EXPECT_EQ(faulted["mismatches"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(faulted["hung_ops"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(faulted["errors"].get<std::uint64_t>(), 0u);
  EXPECT_GT(faulted["switch_faults_dropped"].get<std::uint64_t>(), 0u);
  // Credit went both ways (as LLR data: the faults hit updates too, and replays repaired them),
  // the GPUs waited for it, and no GPU overran the switch's buffer.
  EXPECT_GT(faulted["flow_credit_updates_sent_by_gpus"].get<std::uint64_t>(), 0u);
  EXPECT_GT(faulted["flow_credit_updates_sent_by_switch"].get<std::uint64_t>(), 0u);
  EXPECT_GT(faulted["flow_frames_held_at_gpus"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(faulted["flow_buffer_overruns_at_switch"].get<std::uint64_t>(), 0u);
}

TEST(SoakCli, BadRatesAndModesNameTheOption) {
  const test::CommandResult rate = test::run_command(test::ethx_binary() + " soak --loss 1.5 2>&1");
  EXPECT_EQ(rate.exit_status, 2);
  EXPECT_NE(rate.output.find("--loss"), std::string::npos) << rate.output;
  const test::CommandResult mode =
      test::run_command(test::ethx_binary() + " soak --reliability tcp 2>&1");
  EXPECT_EQ(mode.exit_status, 2);
  EXPECT_NE(mode.output.find("--reliability"), std::string::npos) << mode.output;
  const test::CommandResult llr =
      test::run_command(test::ethx_binary() + " soak --link-retry crc 2>&1");
  EXPECT_EQ(llr.exit_status, 2);
  EXPECT_NE(llr.output.find("--link-retry"), std::string::npos) << llr.output;
  const test::CommandResult flow =
      test::run_command(test::ethx_binary() + " soak --flow-control xon 2>&1");
  EXPECT_EQ(flow.exit_status, 2);
  EXPECT_NE(flow.output.find("--flow-control"), std::string::npos) << flow.output;
  // The emulator runs flow control over link-level retry only: the error names both fields.
  const test::CommandResult bare = test::run_command(
      test::ethx_binary() + " soak --flow-control cbfc --link-retry none --ops 1000 2>&1");
  EXPECT_EQ(bare.exit_status, 2);
  EXPECT_NE(bare.output.find("link.flow_control"), std::string::npos) << bare.output;
  EXPECT_NE(bare.output.find("link.retry"), std::string::npos) << bare.output;
  const test::CommandResult direction =
      test::run_command(test::ethx_binary() + " soak --fault-direction both --reorder 0.01 2>&1");
  EXPECT_EQ(direction.exit_status, 2);
  EXPECT_NE(direction.output.find("--reorder"), std::string::npos) << direction.output;
}

}  // namespace
}  // namespace ethx
