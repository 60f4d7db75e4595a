// `ethx up`, `ethx status`, `ethx bench --fabric`, `ethx down` as a user runs them, over every
// transport: the fabric stays up between commands, serves verified loads, stores and atomics,
// refuses a second `ethx up` of the same name, reports dead processes, and `ethx down` leaves
// no process, namespace, veth, XDP program, shared-memory file or run directory behind, also
// after every process was killed with SIGKILL. Socket transports need root (skip otherwise).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/privileges.hpp"
#include "fabric/transport/net/socket_transport.hpp"
#include "tests/integration/cli_test_support.hpp"
#ifdef ETHX_HAVE_XDP
#include <bpf/bpf.h>
#endif

namespace ethx {
namespace {

using test::CommandResult;
using test::ethx_binary;
using test::run_command;

std::string requirement_missing(const std::string& transport) {
  if (!is_socket_transport(transport)) return {};
  if (::geteuid() != 0) return "needs root (network namespaces, veths, raw sockets)";
  if (std::string error = check_privileges(privilege_needs(transport), "this test");
      !error.empty()) {
    return error;
  }
  if (transport == "afxdp" && !built_with_xdp()) return "built without ETHX_WITH_XDP";
  return {};
}

// Loaded BPF programs named like ethx's XDP program (0 without AF_XDP support).
int loaded_ethx_xdp_programs() {
  int count = 0;
#ifdef ETHX_HAVE_XDP
  __u32 id = 0;
  while (bpf_prog_get_next_id(id, &id) == 0) {
    const int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) continue;
    bpf_prog_info info{};
    __u32 length = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &length) == 0 &&
        std::string(info.name).rfind("ethx_xdp", 0) == 0) {
      ++count;
    }
    ::close(fd);
  }
#endif
  return count;
}

// Kills a process that is not our child and waits (on a pidfd) until it has ended.
void kill_and_wait(pid_t pid) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  ASSERT_GE(pidfd, 0) << "pid " << pid << " is not running";
  ASSERT_EQ(::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0), 0);
  pollfd pfd{pidfd, POLLIN, 0};
  EXPECT_EQ(::poll(&pfd, 1, 10'000), 1) << "pid " << pid << " survived SIGKILL for 10 s";
  ::close(pidfd);
}

class UpDown : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (const std::string why = requirement_missing(GetParam()); !why.empty()) {
      GTEST_SKIP() << why;
    }
    run_root_ = std::filesystem::temp_directory_path() /
                ("ethx-test-up-" + std::to_string(::getpid()) + "-" + GetParam());
    ::setenv("ETHX_RUN_DIR", run_root_.c_str(), 1);
    name_ = "t" + std::to_string(::getpid() % 100000);
  }
  void TearDown() override {
    if (run_root_.empty()) return;
    run_command(ethx_binary() + " down --quiet --name " + name_ + " 2>&1");
    std::filesystem::remove_all(run_root_);
    ::unsetenv("ETHX_RUN_DIR");
  }

  CommandResult ethx(const std::string& arguments) {
    return run_command(ethx_binary() + " " + arguments + " 2>&1");
  }
  nlohmann::json state() {
    std::ifstream in(run_root_ / name_ / "state.json");
    return nlohmann::json::parse(in);
  }
  // What of this fabric still exists, one item per line.
  std::string leftovers(const std::string& tag) {
    std::string found;
    if (!tag.empty()) {
      const std::string prefix = netns::run_prefix(tag);
      for (const std::string& ns : netns::list_namespaces()) {
        if (ns.rfind(prefix, 0) == 0) found += "namespace " + ns + "\n";
      }
      for (const std::string& link : netns::list_interfaces()) {
        if (link.rfind(prefix, 0) == 0) found += "link " + link + "\n";
      }
    }
    for (const std::string& file : test::shm_files_with_prefix("ethx-up-" + name_ + "-")) {
      found += "/dev/shm/" + file + "\n";
    }
    if (std::filesystem::exists(run_root_ / name_)) found += "run directory\n";
    return found;
  }

  std::filesystem::path run_root_;
  std::string name_;
};

TEST_P(UpDown, ServesVerifiedTrafficRefusesASecondUpAndDownAfterSigkillLeavesNothing) {
  // Programs of earlier tests may still be on their way out (freed asynchronously, below).
  const int programs_before = loaded_ethx_xdp_programs();
  const std::string common = " --name " + name_ + " --gpus 4 --quiet --transport " + GetParam();
  const CommandResult up = ethx("up" + common);
  ASSERT_EQ(up.exit_status, 0) << up.output;
  EXPECT_NE(up.output.find("is up"), std::string::npos) << up.output;
  const std::string tag = state()["netns_tag"].get<std::string>();
  EXPECT_EQ(tag.empty(), GetParam() == "shm");

  const CommandResult again = ethx("up" + common);
  EXPECT_EQ(again.exit_status, 1) << again.output;
  EXPECT_NE(again.output.find("already up"), std::string::npos) << again.output;

  const CommandResult status = ethx("status --json --name " + name_);
  ASSERT_EQ(status.exit_status, 0) << status.output;
  const nlohmann::json healthy = nlohmann::json::parse(status.output);
  EXPECT_TRUE(healthy["healthy"].get<bool>());
  EXPECT_EQ(healthy["processes"].size(), 5u);  // the switch and 4 nodes
  EXPECT_EQ(healthy["switch"]["ports"].size(), 4u);

  const CommandResult bench = run_command(
      ethx_binary() + " bench --quick --json --quiet --fabric " + name_ + " 2>/dev/null");
  ASSERT_EQ(bench.exit_status, 0) << bench.output;
  const nlohmann::json report = nlohmann::json::parse(bench.output);
  EXPECT_EQ(report["transport"], GetParam());
  EXPECT_EQ(report["mismatches"], 0);
  EXPECT_EQ(report["errors"], 0);
  EXPECT_GT(report["verified_ops"].get<std::uint64_t>(), 1000u);
  EXPECT_GT(report["atomic_rate_mops"].get<double>(), 0.0);
  if (GetParam() == "afxdp") {
    EXPECT_GE(loaded_ethx_xdp_programs(), programs_before + 5);  // 4 nodes + switch ports
  }

  const nlohmann::json recorded = state();
  ASSERT_FALSE(recorded["processes"].empty());
  for (const auto& process : recorded["processes"]) kill_and_wait(process["pid"].get<pid_t>());
  const CommandResult degraded = ethx("status --json --name " + name_);
  EXPECT_EQ(degraded.exit_status, 1) << degraded.output;
  EXPECT_FALSE(nlohmann::json::parse(degraded.output)["healthy"].get<bool>());

  const CommandResult down = ethx("down --name " + name_);
  ASSERT_EQ(down.exit_status, 0) << down.output;
  EXPECT_EQ(leftovers(tag), "");
  // The kernel frees a deleted namespace (and the XDP programs on its veths) from a work queue
  // after `ip netns delete` returns; there is no event to wait on, so poll with a deadline.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (loaded_ethx_xdp_programs() > programs_before &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_LE(loaded_ethx_xdp_programs(), programs_before);
  const CommandResult gone = ethx("status --name " + name_);
  EXPECT_EQ(gone.exit_status, 3) << gone.output;
}

TEST_P(UpDown, UpAfterItsProcessesDiedRemovesTheRemainsAndStartsAfresh) {
  const std::string common = " --name " + name_ + " --gpus 2 --quiet --transport " + GetParam();
  ASSERT_EQ(ethx("up" + common).exit_status, 0);
  const std::string first_tag = state()["netns_tag"].get<std::string>();
  const nlohmann::json recorded = state();
  ASSERT_FALSE(recorded["processes"].empty());
  for (const auto& process : recorded["processes"]) kill_and_wait(process["pid"].get<pid_t>());

  const CommandResult up = ethx("up" + common);
  ASSERT_EQ(up.exit_status, 0) << up.output;
  EXPECT_NE(up.output.find("removed the remains"), std::string::npos) << up.output;
  if (!first_tag.empty()) {
    EXPECT_NE(state()["netns_tag"].get<std::string>(), first_tag);
    for (const std::string& ns : netns::list_namespaces()) {
      EXPECT_NE(ns.rfind(netns::run_prefix(first_tag), 0), 0u) << ns << " survived";
    }
  }
  EXPECT_EQ(ethx("status --name " + name_).exit_status, 0);
  const std::string second_tag = state()["netns_tag"].get<std::string>();
  ASSERT_EQ(ethx("down --name " + name_).exit_status, 0);
  EXPECT_EQ(leftovers(second_tag), "");
}

INSTANTIATE_TEST_SUITE_P(Transports, UpDown, ::testing::Values("shm", "afxdp", "afpacket"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace ethx
