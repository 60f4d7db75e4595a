// `ethx run` and `ethx guest` on two VMs × two GPUs (`ethx up --vms 2 --gpus-per-vm 2`, TCG)
// through ethx-agent's virtio-serial ports (docs/programs.md, docs/agent-protocol.md): exit
// status and signals, stdin, --per-gpu's environment, `ethx guest` answering while a long run
// holds a port, --timeout-s, bad input, and a dying VM ending a run. With the shared root
// (the guest sees the host's files, /run/ethx-host) a program compiled here by the host's gcc
// runs once per GPU and writes files this test reads back; without it that test skips.
// Label `vm`; needs QEMU and the guest image (fails naming the scripts).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/integration/cli_test_support.hpp"
#include "tests/integration/vm_test_support.hpp"

namespace {

using ethx::test::CommandResult;
using ethx::test::run_command;
using nlohmann::json;

constexpr int kHangGuardMs = 180'000;  // only against a hang; nothing here is timed

// A command running in the background with its stdout and stderr on a pipe.
struct Background {
  pid_t pid = -1;
  int output_fd = -1;
  std::string output;

  // Reads until `needle` appears or the output ends; true if it appeared.
  bool wait_for(const std::string& needle) {
    while (output.find(needle) == std::string::npos) {
      pollfd wait{output_fd, POLLIN, 0};
      if (::poll(&wait, 1, kHangGuardMs) <= 0) return false;
      char buffer[4096];
      const ssize_t got = ::read(output_fd, buffer, sizeof buffer);
      if (got <= 0) return false;
      output.append(buffer, static_cast<std::size_t>(got));
    }
    return true;
  }
  // The exit status after reading the rest of the output.
  int finish() {
    wait_for("\x01never\x01");
    ::close(output_fd);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
};

Background start_background(const std::string& command) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  return {pid, fds[0], ""};
}

class VmRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = ethx::test::make_suite_run_root("ethx-vmrun", setup_error_);
    if (root_.empty()) return;
    const CommandResult up = run_command(
        ethx("up --name vmr --vms 2 --gpus-per-vm 2 --transport shm --quiet") + " 2>&1");
    if (up.exit_status != 0) setup_error_ = "ethx up failed: " + up.output;
  }
  static void TearDownTestSuite() {
    if (root_.empty()) return;
    run_command(ethx("down --name vmr --quiet"));
    ethx::test::remove_suite_run_root(root_);
  }
  void SetUp() override { ASSERT_TRUE(setup_error_.empty()) << setup_error_; }

  static std::string ethx(const std::string& arguments) {
    return ethx::test::ethx_binary() + " " + arguments;
  }
  // `ethx run --name vmr OPTIONS` from `/` (a directory every guest has, shared root or not).
  static CommandResult run(const std::string& options, const std::string& stdin_text = "") {
    const std::string input = stdin_text.empty() ? "</dev/null" : "";
    const std::string feed = stdin_text.empty() ? "" : "printf '" + stdin_text + "' | ";
    return run_command("cd / && " + feed + ethx("run --name vmr " + options) + " " + input +
                       " 2>&1");
  }
  static json guest_list(int vm) {
    const CommandResult result =
        run_command(ethx("guest --name vmr --vm " + std::to_string(vm) + " -- list"));
    return json::parse(result.output, nullptr, false);
  }

  static inline std::string setup_error_;
  static inline std::filesystem::path root_;
};

TEST_F(VmRun, ExitStatusAndOutputOfOneCopyComeBackUnprefixed) {
  const CommandResult result = run("-- sh -c 'echo hello; echo oops >&2; exit 3'");
  EXPECT_EQ(result.exit_status, 3) << result.output;
  EXPECT_NE(result.output.find("hello\n"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("oops\n"), std::string::npos) << result.output;
  EXPECT_EQ(result.output.find("[vm"), std::string::npos) << result.output;
}

TEST_F(VmRun, ASignalEndsWith128PlusItsNumber) {
  const CommandResult result = run("--vm 1 -- sh -c 'kill -TERM $$'");
  EXPECT_EQ(result.exit_status, 128 + SIGTERM) << result.output;
}

TEST_F(VmRun, StdinGoesToTheProgram) {
  const CommandResult result = run("-- wc -l", "a\\nb\\nc\\n");
  EXPECT_EQ(result.exit_status, 0) << result.output;
  EXPECT_NE(result.output.find('3'), std::string::npos) << result.output;
}

TEST_F(VmRun, PerGpuRunsOncePerGpuOfEveryVmWithItsEnvironment) {
  const CommandResult result =
      run("--all-vms --per-gpu --env GREETING=hi -- "
          "sh -c 'echo $GREETING $ETHX_VM $ETHX_GPU_ID $ETHX_GPU_COUNT $ETHX_GPU_BDF'");
  ASSERT_EQ(result.exit_status, 0) << result.output;
  std::set<int> gpus;
  for (int vm = 0; vm < 2; ++vm) {
    const json list = guest_list(vm);
    ASSERT_TRUE(list.contains("gpus")) << list.dump();
    for (const json& gpu : list["gpus"]) {
      const int id = gpu["gpu_id"].get<int>();
      const std::string line = "[vm " + std::to_string(vm) + " gpu " + std::to_string(id) +
                               "] hi " + std::to_string(vm) + " " + std::to_string(id) + " 2 " +
                               gpu["bdf"].get<std::string>() + "\n";
      EXPECT_NE(result.output.find(line), std::string::npos) << line << "in\n" << result.output;
      gpus.insert(id);
    }
  }
  EXPECT_EQ(gpus, (std::set<int>{0, 1, 2, 3}));
}

TEST_F(VmRun, GuestAnswersWhileALongRunHoldsAPortAndCtrlCStopsIt) {
  Background long_run = start_background(
      "cd / && exec " + ethx("run --name vmr -- sh -c 'echo started; sleep 30'") + " </dev/null");
  ASSERT_TRUE(long_run.wait_for("started")) << long_run.output;
  const json list = guest_list(0);
  ASSERT_TRUE(list.contains("gpus")) << list.dump();
  EXPECT_EQ(list["gpus"].size(), 2u);
  // A second run next to it takes another port as well.
  const CommandResult second = run("-- echo second");
  EXPECT_EQ(second.exit_status, 0) << second.output;
  ::kill(long_run.pid, SIGINT);
  EXPECT_EQ(long_run.finish(), 130) << long_run.output;
  EXPECT_NE(long_run.output.find("interrupted; stopped what was still running: vm 0"),
            std::string::npos)
      << long_run.output;
  const CommandResult left = run("-- sh -c 'ps | grep -c \"[s]leep 30\"'");
  EXPECT_NE(left.output.find('0'), std::string::npos)
      << "still running in the guest: " << left.output;
}

TEST_F(VmRun, TimeoutStopsEveryCopyAndNamesThem) {
  const CommandResult result = run("--all-vms --timeout-s 3 -- sleep 60");
  EXPECT_EQ(result.exit_status, 124) << result.output;
  EXPECT_NE(result.output.find("--timeout-s 3 reached; stopped what was still running: vm 0, "
                               "vm 1"),
            std::string::npos)
      << result.output;
}

TEST_F(VmRun, BadInputIsOneLineAndLeavesNothingRunning) {
  const CommandResult missing = run("-- ethx-no-such-program --flag");
  EXPECT_EQ(missing.exit_status, 127) << missing.output;
  EXPECT_EQ(ethx::test::lines_with(missing.output, "").size(), 1u) << missing.output;
  EXPECT_NE(missing.output.find("vm 0: program not found in the guest: ethx-no-such-program"),
            std::string::npos)
      << missing.output;
  const CommandResult range = run("--vm 2 -- true");
  EXPECT_EQ(range.exit_status, 2) << range.output;
  EXPECT_NE(range.output.find("--vm 2: fabric 'vmr' has 2 VMs (0-1)"), std::string::npos)
      << range.output;
  const CommandResult no_fabric = run_command(ethx("run --name nosuch -- true") + " 2>&1");
  EXPECT_EQ(no_fabric.exit_status, 3) << no_fabric.output;
  EXPECT_NE(no_fabric.output.find("no fabric 'nosuch' is up"), std::string::npos)
      << no_fabric.output;
  const CommandResult usage = run("--vm 1 --all-vms -- true");
  EXPECT_EQ(usage.exit_status, 2) << usage.output;
  // No `ethx run` of this fabric is left on the host.
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string command_line = ethx::test::read_file((entry.path() / "cmdline").string());
    std::replace(command_line.begin(), command_line.end(), '\0', ' ');
    EXPECT_EQ(command_line.find("ethx run --name vmr "), std::string::npos) << command_line;
  }
}

// Needs the shared root (the guest sees the host's files): a program compiled here, with the
// host's gcc, in this test's directory, once per GPU of both VMs.
TEST_F(VmRun, HostProgramRunsPerGpuAndWritesFilesTheHostReads) {
  const CommandResult root = run("-- test -d /run/ethx-host");
  if (root.exit_status != 0) {
    GTEST_SKIP() << "the guests have no shared root (/run/ethx-host): they cannot see this "
                    "host's files";
  }
  const std::filesystem::path dir = root_ / "program";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "writer.c")
      << "#include <stdio.h>\n#include <stdlib.h>\n"
         "int main(void) {\n"
         "  char name[64];\n"
         "  snprintf(name, sizeof name, \"gpu-%s.txt\", getenv(\"ETHX_GPU_ID\"));\n"
         "  FILE* out = fopen(name, \"w\");\n"
         "  if (!out) return 1;\n"
         "  fprintf(out, \"%s %s %s\\n\", getenv(\"ETHX_VM\"), getenv(\"ETHX_GPU_BDF\"),\n"
         "          getenv(\"ETHX_GPU_COUNT\"));\n"
         "  return fclose(out) == 0 ? 0 : 1;\n"
         "}\n";
  const CommandResult built =
      run_command("cd " + dir.string() + " && gcc -O2 -o writer writer.c 2>&1");
  ASSERT_EQ(built.exit_status, 0) << built.output;
  const CommandResult result =
      run_command("cd " + dir.string() + " && " +
                  ethx("run --name vmr --all-vms --per-gpu -- ./writer") + " </dev/null 2>&1");
  ASSERT_EQ(result.exit_status, 0) << result.output;
  for (int gpu = 0; gpu < 4; ++gpu) {
    const std::string text = ethx::test::read_file(dir / ("gpu-" + std::to_string(gpu) + ".txt"));
    EXPECT_TRUE(
        std::regex_match(text, std::regex(std::to_string(gpu / 2) + " 0000:[0-9a-f:.]+ 2\n")))
        << "gpu " << gpu << ": " << text;
  }
}

// Last: it kills VM 1's QEMU.
TEST_F(VmRun, ZDyingVmEndsTheRunNamingIt) {
  Background run_all = start_background(
      "cd / && exec " + ethx("run --name vmr --all-vms -- sh -c 'echo started; sleep 60'") +
      " </dev/null");
  ASSERT_TRUE(run_all.wait_for("[vm 1] started")) << run_all.output;
  const json state = json::parse(ethx::test::read_file((root_ / "vmr" / "state.json").string()));
  pid_t qemu = -1;
  for (const json& process : state["processes"]) {
    if (process["role"] == "vm-1") qemu = process["pid"].get<pid_t>();
  }
  ASSERT_GT(qemu, 0) << state.dump();
  ::kill(qemu, SIGKILL);
  EXPECT_EQ(run_all.finish(), 1) << run_all.output;
  EXPECT_TRUE(run_all.output.find("vm-1 (pid " + std::to_string(qemu) + ")") != std::string::npos ||
              run_all.output.find("vm 1: the VM closed the agent connection") != std::string::npos)
      << run_all.output;
  EXPECT_NE(run_all.output.find("stopped what was still running: vm 0"), std::string::npos)
      << run_all.output;
}

}  // namespace
