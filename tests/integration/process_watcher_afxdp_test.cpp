// The AF_XDP twins of process_watcher_cli_test.cpp: a coordinator whose node dies stops within
// 5 s, exit status 1, with one line naming the node, and leaves no namespace, shared-memory file
// or process of the run behind. Each node runs in its own network namespace on a veth to the
// switch's, so these live in ethx_netns_tests and need root (they skip otherwise).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fabric/platform/child_process.hpp"
#include "fabric/platform/process_identity.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/privileges.hpp"
#include "fabric/transport/net/socket_transport.hpp"
#include "tests/integration/cli_test_support.hpp"

namespace ethx {
namespace {

using Clock = std::chrono::steady_clock;
using test::ethx_binary;
using test::run_command;
using test::shm_files_with_prefix;

constexpr auto kStopWithin = std::chrono::seconds(5);
constexpr std::int64_t kHangGuardMs = 60'000;
// Namespaces, veths and XDP programs take longer to set up than shared memory alone.
constexpr auto kComeUpWithin = std::chrono::seconds(120);

std::string requirement_missing() {
  if (::geteuid() != 0) return "needs root (network namespaces, veths, AF_XDP sockets)";
  if (std::string error = check_privileges(privilege_needs("afxdp"), "this test"); !error.empty()) {
    return error;
  }
  if (netns::run_command({"ip", "-V"}).exit_code != 0) return "needs iproute2 (`ip`)";
  if (!built_with_xdp()) return "built without ETHX_WITH_XDP";
  return {};
}

struct Process {
  pid_t pid = -1;
  std::string start_time;
  std::string command_line;  // arguments joined by spaces
};

// Live processes whose command line carries `--netns-tag <tag>`: the run's switch and nodes.
std::vector<Process> processes_of_tag(const std::string& tag) {
  std::vector<Process> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline(entry.path() / "cmdline");
    std::string arguments((std::istreambuf_iterator<char>(cmdline)), {});
    std::replace(arguments.begin(), arguments.end(), '\0', ' ');
    if (arguments.find("--netns-tag " + tag + " ") == std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    const std::string text((std::istreambuf_iterator<char>(stat)), {});
    const std::size_t close = text.rfind(')');
    if (close == std::string::npos || close + 2 >= text.size() || text[close + 2] == 'Z') continue;
    const auto pid = static_cast<pid_t>(std::stol(name));
    found.push_back({pid, process_start_time(pid), arguments});
  }
  return found;
}

// Network namespaces of the run tagged `tag`, one per line.
std::string namespaces_of_tag(const std::string& tag) {
  std::string found;
  for (const std::string& name : netns::list_namespaces()) {
    if (name.rfind(netns::run_prefix(tag), 0) == 0) found += name + "\n";
  }
  return found;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) lines.push_back(line);
  }
  return lines;
}

class WatchedAfXdpBench : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = requirement_missing(); !why.empty()) GTEST_SKIP() << why;
    output_ = (std::filesystem::temp_directory_path() /
               ("ethx-test-watch-afxdp-" + std::to_string(::getpid()) + ".log"))
                  .string();
    std::filesystem::remove(output_);
  }
  void TearDown() override {
    if (!output_.empty()) std::filesystem::remove(output_);
  }

  // Kills `victim` with SIGKILL and waits for `bench` to end; returns the seconds between.
  double kill_and_time_the_stop(ChildProcess& bench, pid_t victim) {
    const auto killed_at = Clock::now();
    EXPECT_EQ(::kill(victim, SIGKILL), 0);
    EXPECT_TRUE(bench.wait_exit(kHangGuardMs)) << "ethx bench still runs 60 s after the kill";
    return std::chrono::duration<double>(Clock::now() - killed_at).count();
  }

  void expect_one_line_naming(const std::string& role, pid_t pid, const std::string& how) {
    const std::string output = read_file(output_);
    const std::string named = role + " (pid " + std::to_string(pid) + ")";
    const std::vector<std::string> naming = lines_with(output, named);
    ASSERT_EQ(naming.size(), 1u) << output;
    EXPECT_NE(naming[0].find(named + " exited" + how), std::string::npos) << naming[0];
  }

  std::string output_;
};

TEST_F(WatchedAfXdpBench, SigkillOfANodeStopsTheBenchWithinFiveSecondsNamingIt) {
  ChildProcess::SpawnOptions spawn_options;
  spawn_options.log_path = output_;
  ChildProcess bench = ChildProcess::spawn(
      {ethx_binary(), "bench", "--gpus", "8", "--quiet", "--transport", "afxdp"}, spawn_options);
  const std::string tag = bench_tag(bench.pid());
  const std::string prefix = "ethx-b" + std::to_string(bench.pid()) + "-";
  // Up: all memory files exist and the control file was unlinked once every node attached.
  const auto deadline = Clock::now() + kComeUpWithin;
  while (shm_files_with_prefix(prefix + "hbm-").size() < 8 ||
         !shm_files_with_prefix(prefix + "control").empty()) {
    ASSERT_TRUE(bench.running()) << read_file(output_);
    ASSERT_LT(Clock::now(), deadline) << "fabric did not come up";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const std::vector<Process> started = processes_of_tag(tag);
  ASSERT_EQ(started.size(), 9u) << "the switch and 8 nodes";
  // GPU 1 is the peer GPU 0 measures against: its requests to a dead GPU 1 would each wait for
  // the request timeout.
  pid_t victim = -1;
  for (const Process& process : started) {
    if (process.command_line.find("ethx-node --gpu 1 ") != std::string::npos) victim = process.pid;
  }
  ASSERT_GT(victim, 0);

  const double seconds = kill_and_time_the_stop(bench, victim);
  EXPECT_LT(seconds, std::chrono::duration<double>(kStopWithin).count());
  EXPECT_EQ(bench.exit_description(), "exit status 1") << read_file(output_);
  expect_one_line_naming("node-1", victim, ": killed by SIGKILL");
  EXPECT_TRUE(shm_files_with_prefix(prefix).empty()) << shm_files_with_prefix(prefix).front();
  EXPECT_EQ(namespaces_of_tag(tag), "");
  for (const Process& process : started) {
    EXPECT_FALSE(same_process_running(process.pid, process.start_time))
        << "left running: " << process.command_line;
  }
  std::cerr << "ethx bench --transport afxdp stopped " << seconds << " s after node-1 was killed\n";
}

TEST_F(WatchedAfXdpBench, SigkillOfANodeOfAnUpFabricStopsTheAttachedBench) {
  const auto run_root = std::filesystem::temp_directory_path() /
                        ("ethx-test-watch-afxdp-up-" + std::to_string(::getpid()));
  ::setenv("ETHX_RUN_DIR", run_root.c_str(), 1);
  const std::string name = "x" + std::to_string(::getpid() % 100000);
  const std::string ethx = ethx_binary() + " ";
  const test::CommandResult up =
      run_command(ethx + "up --quiet --gpus 4 --transport afxdp --name " + name + " 2>&1");
  ASSERT_EQ(up.exit_status, 0) << up.output;
  const nlohmann::json state = nlohmann::json::parse(read_file(run_root / name / "state.json"));
  const std::string tag = state["netns_tag"].get<std::string>();
  pid_t victim = -1;
  for (const auto& process : state["processes"]) {
    if (process["role"] == "node-1") victim = process["pid"].get<pid_t>();
  }
  ASSERT_GT(victim, 0);

  ChildProcess::SpawnOptions spawn_options;
  spawn_options.log_path = output_;
  ChildProcess bench =
      ChildProcess::spawn({ethx_binary(), "bench", "--fabric", name}, spawn_options);
  // Attached: the suite has begun.
  const auto deadline = Clock::now() + kComeUpWithin;
  while (read_file(output_).find("latency") == std::string::npos) {
    ASSERT_TRUE(bench.running()) << read_file(output_);
    ASSERT_LT(Clock::now(), deadline) << "the bench did not start";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double seconds = kill_and_time_the_stop(bench, victim);
  EXPECT_LT(seconds, std::chrono::duration<double>(kStopWithin).count());
  EXPECT_EQ(bench.exit_description(), "exit status 1") << read_file(output_);
  expect_one_line_naming("node-1", victim, "");

  const test::CommandResult status = run_command(ethx + "status --name " + name + " 2>&1");
  EXPECT_EQ(status.exit_status, 1) << status.output;
  EXPECT_NE(status.output.find("DEGRADED"), std::string::npos) << status.output;
  EXPECT_NE(status.output.find("GONE"), std::string::npos) << status.output;
  const test::CommandResult down = run_command(ethx + "down --name " + name + " 2>&1");
  EXPECT_EQ(down.exit_status, 0) << down.output;
  EXPECT_TRUE(shm_files_with_prefix("ethx-up-" + name + "-").empty());
  EXPECT_EQ(namespaces_of_tag(tag), "");
  EXPECT_FALSE(std::filesystem::exists(run_root / name));
  for (const auto& process : state["processes"]) {
    EXPECT_FALSE(
        same_process_running(process["pid"].get<pid_t>(), process["start_time"].get<std::string>()))
        << process.dump();
  }
  std::filesystem::remove_all(run_root);
  ::unsetenv("ETHX_RUN_DIR");
  std::cerr << "ethx bench --fabric (afxdp) stopped " << seconds << " s after node-1 was killed\n";
}

}  // namespace
}  // namespace ethx
