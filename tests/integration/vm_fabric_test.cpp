// Two VMs × two GPUs on one fabric (`ethx up --vms 2 --gpus-per-vm 2`, TCG): from inside the
// guests, through each VM's command agent (`ethx guest`), loads, stores of every width,
// atomics and a copy that cross between the two QEMU processes, all with data checks; and a
// load of an unmapped window address that returns all-ones, latches the error and leaves the
// VM responsive. Label `vm`; needs QEMU and the guest image (fails naming the scripts).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/integration/cli_test_support.hpp"
#include "tests/integration/vm_test_support.hpp"

namespace {

using ethx::test::CommandResult;
using ethx::test::run_command;
using nlohmann::json;

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kAperture = 64 * kMiB;  // GPU k's window starts at k × 64 MiB ...
constexpr std::uint64_t kHbm = 32 * kMiB;       // ... and only its first 32 MiB are mapped

class VmFabric : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = ethx::test::make_suite_run_root("ethx-vmtest", setup_error_);
    if (root_.empty()) return;
    config_ = root_ / "fabric.toml";
    std::ofstream(config_) << "[fabric]\ngpus = 4\nhbm_bytes = " << kHbm
                           << "\naperture_bytes = " << kAperture
                           << "\nrequest_timeout_ns = 200000000\n"
                           << "[reliability]\nmode = \"go-back-n\"\n";
    const CommandResult up = run_command(
        ethx("up --name vmt --vms 2 --gpus-per-vm 2 --quiet --config " + config_.string()));
    if (up.exit_status != 0) setup_error_ = "ethx up failed: " + up.output;
  }
  static void TearDownTestSuite() {
    if (root_.empty()) return;
    run_command(ethx("down --name vmt --quiet"));
    ethx::test::remove_suite_run_root(root_);
  }
  void SetUp() override { ASSERT_TRUE(setup_error_.empty()) << setup_error_; }

  static std::string ethx(const std::string& arguments) {
    return ethx::test::ethx_binary() + " " + arguments + " 2>&1";
  }
  // Runs an ethx-guest command in VM `vm`; its exit status and JSON.
  static std::pair<int, json> guest(int vm, const std::string& arguments) {
    const CommandResult result = run_command(
        ethx("guest --name vmt --vm " + std::to_string(vm) + " --timeout-s 60 -- " + arguments));
    json value = json::parse(result.output.substr(0, result.output.find('\n')), nullptr, false);
    if (value.is_discarded()) value = json{{"raw", result.output}};
    return {result.exit_status, value};
  }
  static std::string window(int gpu, std::uint64_t offset) {
    return std::to_string(gpu * kAperture + offset);
  }

  static inline std::string setup_error_;
  static inline std::filesystem::path root_;
  static inline std::filesystem::path config_;
};

TEST_F(VmFabric, StoresOfEveryWidthFromOneVmAreLoadedByTheOther) {
  const std::uint64_t values[] = {0x5a, 0xbeef, 0xdeadbeef, 0x0123456789abcdef};
  const int widths[] = {1, 2, 4, 8};
  for (int i = 0; i < 4; ++i) {
    const std::string at = window(3, 0x1000 + 16 * i);  // GPU 3 lives in VM 1
    const auto [stored, store] =
        guest(0, "store --gpu 1 --addr " + at + " --width " + std::to_string(widths[i]) +
                     " --value " + std::to_string(values[i]));
    ASSERT_EQ(stored, 0) << store.dump();
    const auto [loaded, load] =
        guest(1, "load --gpu 2 --addr " + at + " --width " + std::to_string(widths[i]));
    ASSERT_EQ(loaded, 0) << load.dump();
    EXPECT_EQ(load["value"].get<std::uint64_t>(), values[i]) << "width " << widths[i];
    EXPECT_EQ(load["error"].get<std::uint64_t>(), 0u);
  }
}

TEST_F(VmFabric, AtomicsFromBothVmsAreEachPerformedOnce) {
  const std::string counter = window(2, 0x3000);  // GPU 2 lives in VM 1
  const auto [a, first] =
      guest(0, "atomic --gpu 0 --op fetch-add --addr " + counter + " --width 8 --operand 5");
  ASSERT_EQ(a, 0) << first.dump();
  const auto [b, second] =
      guest(1, "atomic --gpu 3 --op fetch-add --addr " + counter + " --width 8 --operand 7");
  ASSERT_EQ(b, 0) << second.dump();
  EXPECT_EQ(second["old"].get<std::uint64_t>(), first["old"].get<std::uint64_t>() + 5);
  const std::uint64_t now = second["old"].get<std::uint64_t>() + 7;
  const auto [c, swap] = guest(0, "atomic --gpu 1 --op cas --addr " + counter +
                                      " --width 8 --operand 100 --compare " + std::to_string(now));
  ASSERT_EQ(c, 0) << swap.dump();
  EXPECT_EQ(swap["old"].get<std::uint64_t>(), now);
  EXPECT_EQ(guest(1, "load --gpu 2 --addr " + counter + " --width 8").second["value"], 100);
}

TEST_F(VmFabric, CopyEngineMovesDataBetweenGpusOfBothVms) {
  // 16 words into GPU 1 (VM 0), copied by GPU 3 (VM 1) into GPU 2 (VM 1), read back by VM 0.
  for (int word = 0; word < 16; ++word) {
    const std::uint64_t value = 0x1111111111111111ull * (word + 1);
    ASSERT_EQ(guest(0, "store --gpu 0 --addr " + window(1, 0x2000 + 8 * word) +
                           " --width 8 --value " + std::to_string(value))
                  .first,
              0);
  }
  const auto [copied, copy] = guest(1, "copy --gpu 3 --src " + window(1, 0x2000) + " --dst " +
                                           window(2, 0x8000) + " --bytes 128");
  ASSERT_EQ(copied, 0) << copy.dump();
  EXPECT_TRUE(copy["done"].get<bool>());
  for (int word = 0; word < 16; ++word) {
    const auto [status, load] =
        guest(0, "load --gpu 1 --addr " + window(2, 0x8000 + 8 * word) + " --width 8");
    ASSERT_EQ(status, 0) << load.dump();
    EXPECT_EQ(load["value"].get<std::uint64_t>(), 0x1111111111111111ull * (word + 1)) << word;
  }
}

TEST_F(VmFabric, UnmappedWindowLoadReturnsAllOnesLatchesTheErrorAndTheVmKeepsRunning) {
  const std::uint64_t unmapped = 1 * kAperture + kHbm + 0x100;  // past GPU 1's memory
  const auto [status, load] =
      guest(0, "load --gpu 0 --addr " + std::to_string(unmapped) + " --width 8");
  EXPECT_EQ(status, 1) << load.dump();
  EXPECT_EQ(load["value"].get<std::uint64_t>(), ~std::uint64_t{0}) << load.dump();
  EXPECT_EQ(load["fault_addr"].get<std::uint64_t>(), unmapped);
  EXPECT_NE(load["error_names"].dump().find("out_of_window"), std::string::npos) << load.dump();
  // Still serving: the same GPU loads a mapped address, and the VM answers.
  EXPECT_EQ(guest(0, "load --gpu 0 --addr " + window(3, 0) + " --width 4").first, 0);
  const auto [listed, list] = guest(0, "list");
  ASSERT_EQ(listed, 0);
  EXPECT_EQ(list["gpus"].size(), 2u);
}

}  // namespace

namespace {

// `ethx bench --vms` with no fabric up: boots temporary VMs, runs the in-guest suite with
// data checks, reports the headless bench's keys plus mmio_trap_ns, and leaves nothing.
// Last in the suite: it replaces the switch the other tests used. The VMs' devices keep their
// ports (the shm rings or sockets outlive the switch) and their go-back-N state, so accesses
// across VMs simply continue.
TEST_F(VmFabric, AfterASwitchRestartTheVmsCarryOn) {
  const CommandResult restart = run_command(ethx("restart-switch --name vmt"));
  ASSERT_EQ(restart.exit_status, 0) << restart.output;
  const std::string at = window(3, 0x7000);
  ASSERT_EQ(guest(0, "store --gpu 0 --addr " + at + " --width 8 --value 4242").first, 0);
  const auto [loaded, load] = guest(1, "load --gpu 2 --addr " + at + " --width 8");
  ASSERT_EQ(loaded, 0) << load.dump();
  EXPECT_EQ(load["value"], 4242);
  const auto [added, add] =
      guest(0, "atomic --gpu 1 --op fetch-add --addr " + at + " --width 8 --operand 1");
  ASSERT_EQ(added, 0) << add.dump();
  EXPECT_EQ(add["old"], 4242);
}

TEST(VmBench, QuickRunOnTemporaryVmsVerifiesDataAndLeavesNothing) {
  const ethx::test::VmPrerequisites found = ethx::test::find_vm_prerequisites();
  ASSERT_TRUE(found.missing.empty()) << found.missing;
  const auto root =
      std::filesystem::temp_directory_path() / ("ethx-vmbench-" + std::to_string(::getpid()));
  ::setenv("ETHX_RUN_DIR", root.c_str(), 1);
  const CommandResult result = run_command(ethx::test::ethx_binary() +
                                           " bench --vms 2 --gpus-per-vm 2 --quick --json --quiet");
  ::unsetenv("ETHX_RUN_DIR");
  std::filesystem::remove_all(root);
  ASSERT_EQ(result.exit_status, 0) << result.output;
  const json report = json::parse(result.output);
  EXPECT_EQ(report["gpus"], 4);
  EXPECT_EQ(report["mismatches"], 0);
  EXPECT_EQ(report["errors"], 0);
  EXPECT_GT(report["verified_ops"].get<std::uint64_t>(), 100000u);
  EXPECT_GT(report["load_latency_ns"]["p50"].get<std::uint64_t>(), 0u);
  EXPECT_GT(report["baseline_rtt_ns"]["p50"].get<std::uint64_t>(), 0u);
  EXPECT_GT(report["mmio_trap_ns"].get<std::uint64_t>(), 0u);
  EXPECT_GT(report["atomic_rate_mops"].get<double>(), 0.0);
  EXPECT_EQ(report["guests"].size(), 2u);
  const std::string fabric = "ethx-v";
  for (const std::string& file : ethx::test::shm_files_with_prefix(fabric)) {
    ADD_FAILURE() << "left behind: /dev/shm/" << file;
  }
}

// The QEMU devices run link-level retry too (LlrNodePort, opened by GpuDevice): with 1 % loss
// and 0.1 % corruption on both directions of both GPUs' hops and end-to-end reliability off,
// the in-guest suite verifies its data, and the switch's ports show the replays it took.
// LLR and CBFC with two frames of credit per class and hop in the QEMU devices (FlowNodePort
// above LlrNodePort) and the switch; end-to-end reliability off.
TEST(VmBench, LinkLevelRetryAndCreditsCarryTheInGuestSuiteThroughFaultsOnBothDirections) {
  const ethx::test::VmPrerequisites found = ethx::test::find_vm_prerequisites();
  ASSERT_TRUE(found.missing.empty()) << found.missing;
  const auto root =
      std::filesystem::temp_directory_path() / ("ethx-vmllr-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root);
  std::string config =
      "[fabric]\ngpus = 2\n[link]\nretry = \"llr\"\nflow_control = \"cbfc\"\n"
      "class_buffer_bytes = 4096\ncredit_update_bytes = 1024\n[reliability]\nmode = \"off\"\n";
  for (int port = 0; port < 2; ++port) {
    config += "[[fault]]\nport = " + std::to_string(port) +
              "\ndirection = \"both\"\ndrop_rate = 0.01\ncorrupt_rate = 0.001\n";
  }
  std::ofstream(root / "llr.toml") << config;
  ::setenv("ETHX_RUN_DIR", root.c_str(), 1);
  const CommandResult result =
      run_command(ethx::test::ethx_binary() +
                  " bench --vms 1 --gpus-per-vm 2 --quick --transport shm --config " +
                  (root / "llr.toml").string() + " --json --quiet");
  ::unsetenv("ETHX_RUN_DIR");
  std::filesystem::remove_all(root);
  ASSERT_EQ(result.exit_status, 0) << result.output;
  const json report = json::parse(result.output);
  EXPECT_EQ(report["mismatches"], 0);
  EXPECT_EQ(report["errors"], 0);
  EXPECT_GT(report["verified_ops"].get<std::uint64_t>(), 100000u);
  std::uint64_t injected = 0, replayed = 0, updates = 0, held = 0, overruns = 0;
  for (const json& port : report["switch"]["ports"]) {
    injected += port["faults_dropped"].get<std::uint64_t>() +
                port["faults_tx_dropped"].get<std::uint64_t>();
    replayed += port["link_retry"]["frames_replayed"].get<std::uint64_t>();
    const json& flow = port["flow_control"];
    updates += flow["credit_updates_received"].get<std::uint64_t>();  // from the devices
    held += flow["frames_held"].get<std::uint64_t>();
    overruns += flow["buffer_overruns"].get<std::uint64_t>();
  }
  EXPECT_GT(injected, 0u);
  EXPECT_GT(replayed, 0u);
  EXPECT_GT(updates, 0u) << "the devices returned credit";
  EXPECT_GT(held, 0u) << "the switch waited for the devices' credit";
  EXPECT_EQ(overruns, 0u) << "no device sent past its credit";
}

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The QEMU child of `parent` whose command line names `vm` ("vm-1"); -1 if none.
pid_t qemu_child(pid_t parent, const std::string& vm) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = file_text(entry.path() / "stat");
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string state;
    long ppid = 0;
    fields >> state >> ppid;
    const std::string cmdline = file_text(entry.path() / "cmdline");
    if (ppid == parent && cmdline.find("qemu-system") != std::string::npos &&
        cmdline.find("/" + vm + ".console") != std::string::npos) {
      return static_cast<pid_t>(std::stol(name));
    }
  }
  return -1;
}

// The peer VM dies while the other VM's in-guest bench loads from it: `ethx bench --vms` stops
// within 10 s, exit status 1, with one line naming the VM (fabric/platform/process_watcher.hpp).
TEST(VmBench, SigkillOfThePeerVmStopsTheBenchWithinTenSecondsNamingIt) {
  const ethx::test::VmPrerequisites found = ethx::test::find_vm_prerequisites();
  ASSERT_TRUE(found.missing.empty()) << found.missing;
  const auto root =
      std::filesystem::temp_directory_path() / ("ethx-vmkill-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root);
  ::setenv("ETHX_RUN_DIR", (root / "run").c_str(), 1);
  const std::string output = (root / "bench.out").string();
  const std::string binary = ethx::test::ethx_binary();
  std::vector<std::string> argv = {binary, "bench", "--vms", "2", "--gpus-per-vm", "2", "--quick"};
  std::vector<char*> args;
  for (std::string& arg : argv) args.push_back(arg.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t bench = -1;
  ASSERT_EQ(::posix_spawn(&bench, binary.c_str(), &actions, nullptr, args.data(), environ), 0);
  ::posix_spawn_file_actions_destroy(&actions);
  ::unsetenv("ETHX_RUN_DIR");

  // VM 0's first GPU loads from VM 1's: kill VM 1 once that benchmark has begun.
  int status = 0;
  const auto boot_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (file_text(output).find("VM 0: ethx-guest bench") == std::string::npos) {
    ASSERT_EQ(::waitpid(bench, &status, WNOHANG), 0) << file_text(output);
    ASSERT_LT(std::chrono::steady_clock::now(), boot_deadline) << file_text(output);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const pid_t victim = qemu_child(bench, "vm-1");
  ASSERT_GT(victim, 0) << "no QEMU of vm-1 among ethx bench's children";
  const auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  // Hang guard: well past the 10 s the test asks for.
  while (::waitpid(bench, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - killed_at > std::chrono::seconds(120)) {
      ::kill(bench, SIGKILL);
      ::waitpid(bench, &status, 0);
      FAIL() << "ethx bench still ran 120 s after the kill:\n" << file_text(output);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  const std::string text = file_text(output);
  EXPECT_LT(seconds, 10.0) << text;
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 1) << text;
  const std::string named = "vm-1 (pid " + std::to_string(victim) + ") exited: killed by SIGKILL";
  EXPECT_NE(text.find(named), std::string::npos) << text;
  EXPECT_EQ(text.find(named), text.rfind("vm-1 (pid")) << "named more than once:\n" << text;
  EXPECT_TRUE(ethx::test::shm_files_with_prefix("ethx-v" + std::to_string(bench) + "-").empty());
  std::filesystem::remove_all(root);
  std::error_code ignored;  // the consoles, kept because the run failed
  std::filesystem::remove_all(
      std::filesystem::temp_directory_path() / ("ethx-v" + std::to_string(bench)), ignored);
  std::cerr << "ethx bench --vms stopped " << seconds << " s after vm-1 was killed\n";
}

}  // namespace
