// `ethx bench --transport afxdp|afpacket` as a user runs it: real ethx-switch and ethx-node
// processes, each node in its own network namespace on a veth to the switch's namespace. Checks
// the report, that nothing of the run is left (namespaces, veths, shared memory, run record),
// that SIGKILL of the coordinator leaves nothing a later reap cannot remove, and that without
// privileges the command fails fast and names them. Needs root (skips otherwise, except the
// unprivileged check, which then runs as the caller).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "fabric/control/fabric_launcher.hpp"
#include "fabric/platform/child_process.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/privileges.hpp"
#include "fabric/transport/net/socket_transport.hpp"
#include "tests/integration/cli_test_support.hpp"

namespace ethx {
namespace {

using test::CommandResult;
using test::ethx_binary;
using test::processes_of_tag;
using test::run_command;

std::string requirement_missing(const std::string& transport) {
  if (::geteuid() != 0) return "needs root (network namespaces, veths, raw sockets)";
  if (std::string error = check_privileges(privilege_needs(transport), "this test");
      !error.empty()) {
    return error;
  }
  if (netns::run_command({"ip", "-V"}).exit_code != 0) return "needs iproute2 (`ip`)";
  if (transport == "afxdp" && !built_with_xdp()) return "built without ETHX_WITH_XDP";
  return {};
}

// Everything of the run with coordinator `pid` that still exists, one per line.
std::string leftovers_of_run(pid_t pid) {
  std::string found;
  const std::string prefix = netns::run_prefix(bench_tag(pid));
  for (const std::string& name : netns::list_namespaces()) {
    if (name.rfind(prefix, 0) == 0) found += "namespace " + name + "\n";
  }
  for (const std::string& name : netns::list_interfaces()) {
    if (name.rfind(prefix, 0) == 0) found += "link " + name + "\n";
  }
  const std::string shm_prefix = "ethx-b" + std::to_string(pid) + "-";
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(shm_prefix, 0) == 0) found += "/dev/shm/" + name + "\n";
  }
  if (std::filesystem::exists("/run/ethx/bench/" + bench_tag(pid))) {
    found += "/run/ethx/bench/" + bench_tag(pid) + "\n";
  }
  return found;
}

class BenchTransport : public ::testing::TestWithParam<std::string> {};

TEST_P(BenchTransport, QuickRunVerifiesDataReportsTheTransportAndLeavesNothing) {
  if (const std::string why = requirement_missing(GetParam()); !why.empty()) GTEST_SKIP() << why;
  const auto stderr_path = std::filesystem::temp_directory_path() /
                           ("ethx-test-" + std::to_string(::getpid()) + "-bench.err");
  const CommandResult result =
      run_command(ethx_binary() + " bench --gpus 4 --quick --json --transport " + GetParam() +
                  " 2>" + stderr_path.string());
  std::ifstream err_file(stderr_path);
  const std::string progress((std::istreambuf_iterator<char>(err_file)),
                             std::istreambuf_iterator<char>());
  std::filesystem::remove(stderr_path);
  ASSERT_EQ(result.exit_status, 0) << result.output << progress;
  const nlohmann::json report = nlohmann::json::parse(result.output);
  EXPECT_EQ(report["transport"], GetParam());
  EXPECT_EQ(report["gpus"], 4);
  EXPECT_EQ(report["mismatches"], 0);
  EXPECT_EQ(report["errors"], 0);
  EXPECT_GT(report["verified_ops"].get<std::uint64_t>(), 1000u);
  EXPECT_GT(report["load_latency_ns"]["p50"].get<std::int64_t>(), 0);
  EXPECT_GT(report["baseline_rtt_ns"]["p50"].get<std::int64_t>(), 0);
  for (const char* size : {"64", "256", "1024", "4096"}) {
    EXPECT_GT(report["store_bandwidth_gbps"][size].get<double>(), 0.0) << size;
  }
  // The baselines measured in the same run: raw transport, bare forwarder echo and rate.
  EXPECT_GT(report["raw_pingpong_ns"]["p50"].get<std::int64_t>(), 0);
  EXPECT_GT(report["switch_echo_rtt_ns"]["p50"].get<std::int64_t>(), 0);
  for (const char* size : {"64", "1500"}) {
    EXPECT_GT(report["switch_mpps"][size].get<double>(), 0.0) << size;
    EXPECT_GT(report["bare_forwarder_mpps"][size].get<double>(), 0.0) << size;
  }
  EXPECT_EQ(report["forwarding_frames_lost"], 0);
  EXPECT_GT(report["switch"]["bare_forwarder"]["forwarded"].get<std::uint64_t>(), 0u);
  std::smatch match;
  ASSERT_TRUE(std::regex_search(progress, match, std::regex("fabric b([0-9]+)"))) << progress;
  const auto pid = static_cast<pid_t>(std::stol(match[1].str()));
  EXPECT_EQ(leftovers_of_run(pid), "");
}

TEST_P(BenchTransport, SigkillOfTheCoordinatorLeavesNothingTheNextReapCannotRemove) {
  if (const std::string why = requirement_missing(GetParam()); !why.empty()) GTEST_SKIP() << why;
  ChildProcess bench = ChildProcess::spawn(
      {ethx_binary(), "bench", "--gpus", "2", "--quiet", "--transport", GetParam()});
  const std::string tag = bench_tag(bench.pid());
  const std::string hbm_prefix = "/dev/shm/ethx-b" + std::to_string(bench.pid()) + "-hbm-";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  // Up: both nodes made their memory and the control file is gone (unlinked once all attached).
  while (!std::filesystem::exists(hbm_prefix + "0") || !std::filesystem::exists(hbm_prefix + "1") ||
         std::filesystem::exists("/dev/shm/ethx-b" + std::to_string(bench.pid()) + "-control")) {
    ASSERT_TRUE(bench.running()) << "ethx bench ended before the fabric was up";
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "fabric did not come up";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(::kill(bench.pid(), SIGKILL), 0);
  ASSERT_TRUE(bench.wait_exit(10'000));
  // The switch and nodes get SIGTERM from the kernel (PR_SET_PDEATHSIG) and exit.
  for (auto left = processes_of_tag(tag); !left.empty(); left = processes_of_tag(tag)) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "still running after the coordinator was killed: " << left.front().command_line;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The namespaces outlive the processes; the next `ethx bench` (or this) removes them.
  reap_stale_bench_runs();
  EXPECT_EQ(leftovers_of_run(bench.pid()), "");
}

INSTANTIATE_TEST_SUITE_P(Transports, BenchTransport, ::testing::Values("afxdp", "afpacket"),
                         [](const auto& param_info) { return param_info.param; });

TEST(BenchTransportPrivileges, UnprivilegedAfXdpFailsFastNamingWhatIsMissing) {
  std::string command = ethx_binary() + " bench --gpus 4 --transport afxdp 2>&1";
  if (::geteuid() == 0) {
    if (run_command("command -v setpriv >/dev/null 2>&1").exit_status != 0) {
      GTEST_SKIP() << "needs setpriv (util-linux) to drop root";
    }
    command = "setpriv --reuid 65534 --regid 65534 --clear-groups " + command;
  } else if (check_privileges(privilege_needs("afxdp"), "test").empty()) {
    GTEST_SKIP() << "runs with the capabilities AF_XDP needs, cannot test their absence";
  }
  const auto start = std::chrono::steady_clock::now();
  const CommandResult result = run_command(command);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_NE(result.exit_status, 0) << result.output;
  EXPECT_LT(elapsed, std::chrono::seconds(2));
  EXPECT_NE(result.output.find("CAP_NET_ADMIN"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("--transport shm"), std::string::npos) << result.output;
  EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 1) << result.output;
}

}  // namespace
}  // namespace ethx
