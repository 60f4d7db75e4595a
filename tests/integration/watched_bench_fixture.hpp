// The two scenarios of the WatchedBench tests, for any transport: process_watcher_cli_test.cpp
// runs them over shared memory, process_watcher_afxdp_test.cpp over AF_XDP (as root). A
// coordinator whose node dies stops within 5 s, exit status 1, with one line naming the node
// (fabric/platform/process_watcher.hpp), and leaves nothing of its run behind.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fabric/platform/child_process.hpp"
#include "fabric/platform/process_identity.hpp"
#include "tests/integration/cli_test_support.hpp"

namespace ethx::test {

class WatchedBenchTest : public ::testing::Test {
 protected:
  static constexpr auto kStopWithin = std::chrono::seconds(5);
  // Only against hangs; the waits end on the event they wait for.
  static constexpr auto kHangGuard = std::chrono::seconds(60);
  // The first progress line after every GPU reported ready (the suite has begun).
  static constexpr const char* kSuiteBegun = "ethx bench: latency:";

  void SetUp() override {
    const std::string suite = ::testing::UnitTest::GetInstance()->current_test_suite()->name();
    output_ = (std::filesystem::temp_directory_path() /
               ("ethx-test-" + suite + "-" + std::to_string(::getpid()) + ".log"))
                  .string();
    std::ofstream{output_, std::ios::trunc};  // exists (empty) before the bench writes to it
  }

  void TearDown() override {
    bench_.reset();  // ends a bench a failed test left running
    if (!fabric_name_.empty() && std::filesystem::exists(run_root_ / fabric_name_)) {
      run_command(ethx_binary() + " down --name " + fabric_name_ + " >/dev/null 2>&1");
    }
    if (!run_root_.empty()) {
      std::filesystem::remove_all(run_root_);
      ::unsetenv("ETHX_RUN_DIR");
    }
    if (!output_.empty()) std::filesystem::remove(output_);
  }

  // `ethx bench <arguments>` with its own fabric of `gpus` GPUs: SIGKILL to node-1 once the
  // suite has begun, then the stop (see the top) and that no /dev/shm file and none of the
  // switch and node processes of the run are left. Sets bench_pid_.
  void kill_a_node_during_bench(const std::vector<std::string>& arguments, std::size_t gpus) {
    ASSERT_NO_FATAL_FAILURE(start_bench(arguments));
    bench_pid_ = bench_->pid();
    const std::vector<ProcessInfo> started = children_of(bench_pid_);
    ASSERT_EQ(started.size(), gpus + 1) << "the switch and " << gpus << " nodes";
    // GPU 1 is the peer GPU 0 measures against: its requests to a dead GPU 1 would each wait
    // for the request timeout.
    pid_t victim = -1;
    for (const ProcessInfo& process : started) {
      if (process.command_line.find("ethx-node --gpu 1 ") != std::string::npos) {
        victim = process.pid;
      }
    }
    ASSERT_GT(victim, 0);
    ASSERT_NO_FATAL_FAILURE(expect_stop_after_killing(victim, ": killed by SIGKILL"));
    const std::string prefix = "ethx-b" + std::to_string(bench_pid_) + "-";
    EXPECT_EQ(shm_files_with_prefix(prefix), std::vector<std::string>{});
    for (const ProcessInfo& process : started) {
      EXPECT_FALSE(same_process_running(process.pid, process.start_time))
          << "left running: " << process.command_line;
    }
  }

  // `ethx up --quiet --name <name> <up_arguments>` (run directory in the temporary directory),
  // `ethx bench --fabric <name>`, and SIGKILL to node-1 of the fabric once the suite has begun:
  // the stop (see the top), `ethx status` says DEGRADED and GONE (exit 1), and `ethx down`
  // ends the rest and removes the /dev/shm files and the run directory. Sets state_.
  void kill_a_node_of_an_up_fabric(const std::string& name, const std::string& up_arguments) {
    run_root_ = std::filesystem::temp_directory_path() /
                ("ethx-test-up-" + name + "-" + std::to_string(::getpid()));
    ::setenv("ETHX_RUN_DIR", run_root_.c_str(), 1);
    fabric_name_ = name;
    const std::string ethx = ethx_binary() + " ";
    const CommandResult up =
        run_command(ethx + "up --quiet --name " + name + " " + up_arguments + " 2>&1");
    ASSERT_EQ(up.exit_status, 0) << up.output;
    state_ = nlohmann::json::parse(read_file((run_root_ / name / "state.json").string()));
    pid_t victim = -1;
    for (const auto& process : state_["processes"]) {
      if (process["role"] == "node-1") victim = process["pid"].get<pid_t>();
    }
    ASSERT_GT(victim, 0);

    ASSERT_NO_FATAL_FAILURE(start_bench({"--fabric", name}));
    ASSERT_NO_FATAL_FAILURE(expect_stop_after_killing(victim, ""));
    const CommandResult status = run_command(ethx + "status --name " + name + " 2>&1");
    EXPECT_EQ(status.exit_status, 1) << status.output;
    EXPECT_NE(status.output.find("DEGRADED"), std::string::npos) << status.output;
    EXPECT_NE(status.output.find("GONE"), std::string::npos) << status.output;
    const CommandResult down = run_command(ethx + "down --name " + name + " 2>&1");
    EXPECT_EQ(down.exit_status, 0) << down.output;
    EXPECT_EQ(shm_files_with_prefix("ethx-up-" + name + "-"), std::vector<std::string>{});
    EXPECT_FALSE(std::filesystem::exists(run_root_ / name));
    for (const auto& process : state_["processes"]) {
      EXPECT_FALSE(same_process_running(process["pid"].get<pid_t>(),
                                        process["start_time"].get<std::string>()))
          << process.dump();
    }
  }

  pid_t bench_pid_ = -1;  // kill_a_node_during_bench: its bench_tag names the run's namespaces
  nlohmann::json state_;  // kill_a_node_of_an_up_fabric: the fabric's state.json

 private:
  // Starts `ethx bench <arguments>` writing to output_ and waits until its suite has begun.
  void start_bench(const std::vector<std::string>& arguments) {
    std::vector<std::string> argv = {ethx_binary(), "bench"};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    ChildProcess::SpawnOptions options;
    options.log_path = output_;
    bench_.emplace(ChildProcess::spawn(argv, options));
    ASSERT_TRUE(wait_for_output(bench_->pid(), output_, kSuiteBegun, kHangGuard))
        << "the suite did not begin (" << (bench_->running() ? "still running" : "exited") << "):\n"
        << read_file(output_);
  }

  // SIGKILL to `victim`, then the bench must end within kStopWithin, exit status 1, with one
  // line naming node-1 and how it ended (`how`: the watcher can tell only for its children).
  void expect_stop_after_killing(pid_t victim, const std::string& how) {
    const auto killed_at = std::chrono::steady_clock::now();
    ASSERT_EQ(::kill(victim, SIGKILL), 0);
    ASSERT_TRUE(bench_->wait_exit(std::chrono::milliseconds(kHangGuard).count()))
        << "ethx bench still runs 60 s after the kill";
    const std::chrono::duration<double> stopped_after =
        std::chrono::steady_clock::now() - killed_at;
    EXPECT_LT(stopped_after, kStopWithin);
    EXPECT_EQ(bench_->exit_description(), "exit status 1") << read_file(output_);
    const std::string output = read_file(output_);
    const std::string named = "node-1 (pid " + std::to_string(victim) + ")";
    const std::vector<std::string> naming = lines_with(output, named);
    ASSERT_EQ(naming.size(), 1u) << output;
    EXPECT_NE(naming[0].find(named + " exited" + how), std::string::npos) << naming[0];
    std::cerr << "ethx bench stopped " << stopped_after.count() << " s after node-1 was killed\n";
  }

  std::string output_;
  std::optional<ChildProcess> bench_;
  std::filesystem::path run_root_;
  std::string fabric_name_;
};

}  // namespace ethx::test
