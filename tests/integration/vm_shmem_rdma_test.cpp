// OpenSHMEM's rdma backend (docs/shmem.md "The rdma backend"): the same test programs as
// vm_shmem_test, the same binaries, run by `oshrun --backend rdma` as 4 PEs in 2 VMs x 2 GPUs
// whose guest NICs carry Soft-RoCE (the RDMA guest image, rxe0). Root (taps, AF_PACKET); ctest
// test `shmem_rdma`, label vm. Proves that RDMA carried the job: rxe0's packet counters rise in
// both VMs by at least the job's operations, and shmem_ptr is NULL for every remote PE (there
// is no load/store path) while the own PE's object is returned.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fabric/control/run_state.hpp"
#include "fabric/vm/vm_plan.hpp"
#include "tests/integration/guest_nic_support.hpp"
#include "tests/integration/vm_test_support.hpp"

namespace ethx {
namespace {

using nlohmann::json;

const std::string kPrograms = ETHX_SHMEM_TEST_DIR;  // the test programs, built by CMake
const std::string kBin = ETHX_BIN_DIR;
constexpr int kPes = 4;

// One fabric for every test of the binary (both test suites): booted once, removed at the end.
class RdmaFabric : public ::testing::Environment {
 public:
  void SetUp() override {
    if (::geteuid() != 0) return;
    // A run-directory root of the suite's own (ETHX_RUN_DIR), removed at the end with the
    // lock files `ethx down` leaves.
    run_root = test::make_suite_run_root("ethx-shrd", up_output);
    if (run_root.empty()) return;
    name = "shrd-t" + std::to_string(::getpid() % 100000);
    const test::ProcessResult up = test::run_with_deadline(
        {kBin + "/ethx", "up", "--name", name, "--vms", "2", "--gpus-per-vm", "2", "--guest-nics",
         "--transport", "afpacket", "--quiet"},
        std::chrono::seconds(240));
    up_output = up.output;
    is_up = up.exit_status == 0;
  }

  void TearDown() override {
    if (name.empty()) return;
    const test::ProcessResult down = test::run_with_deadline(
        {kBin + "/ethx", "down", "--name", name, "--quiet"}, std::chrono::seconds(120));
    EXPECT_EQ(down.exit_status, 0) << down.output;
    test::remove_suite_run_root(run_root);
  }

  static inline std::string name, up_output;
  static inline std::filesystem::path run_root;
  static inline bool is_up = false;
};

[[maybe_unused]] ::testing::Environment* const kFabric =
    ::testing::AddGlobalTestEnvironment(new RdmaFabric);

class ShmemRdma : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (guest NICs: taps, AF_PACKET)";
    const std::string missing = test::missing_guest_nic_image();
    ASSERT_TRUE(missing.empty()) << missing;
    ASSERT_TRUE(RdmaFabric::is_up) << "ethx up --vms 2 --gpus-per-vm 2 --guest-nics failed:\n"
                                   << RdmaFabric::up_output;
  }

  // `oshrun --backend B -np 4 ./PROGRAM ARGS` in the suite's fabric, from the programs'
  // directory: stdout and stderr.
  static test::ProcessResult oshrun(const std::vector<std::string>& program_and_args,
                                    const std::string& backend = "rdma") {
    std::vector<std::string> argv = {"/bin/sh", "-c", ""};
    std::string command = "cd " + kPrograms + " && exec " + kBin + "/oshrun --name " +
                          RdmaFabric::name + " --timeout-s 600 --backend " + backend + " -np " +
                          std::to_string(kPes) + " ./";
    for (const std::string& word : program_and_args) command += word + " ";
    argv[2] = command + "</dev/null";
    return test::run_with_deadline(argv, std::chrono::seconds(900));
  }

  // rxe0's packets sent + received in VM `vm` (/sys/class/infiniband/.../hw_counters).
  static std::uint64_t rxe_packets(std::size_t vm) {
    const std::string counters = "/sys/class/infiniband/rxe0/ports/1/hw_counters/";
    const test::ProcessResult read = test::run_with_deadline(
        {kBin + "/ethx", "run", "--name", RdmaFabric::name, "--vm", std::to_string(vm), "--", "cat",
         counters + "sent_pkts", counters + "rcvd_pkts"},
        std::chrono::seconds(120));
    EXPECT_EQ(read.exit_status, 0) << read.output;
    std::uint64_t sent = 0;
    std::uint64_t received = 0;
    if (std::sscanf(read.output.c_str(), "%lu %lu", &sent, &received) != 2) {
      ADD_FAILURE() << "rxe0's counters in VM " << vm << ": " << read.output;
    }
    return sent + received;
  }
};

class ShmemRdmaProgram : public ShmemRdma, public ::testing::WithParamInterface<const char*> {};

// --allow-null-ptr: the checks that store through shmem_ptr skip the remote PEs (NULL here,
// as the spec allows); everything else is checked as over load/store.
TEST_P(ShmemRdmaProgram, PassesOnFourPesInTwoVmsOverRdma) {
  const test::ProcessResult result = oshrun({GetParam(), "-q", "--allow-null-ptr"});
  EXPECT_EQ(result.exit_status, 0) << result.output;
  EXPECT_EQ(result.output.find("FAIL"), std::string::npos) << result.output;
  for (int pe = 0; pe < kPes; ++pe) {
    const std::string pass = std::string(GetParam()) + " PE " + std::to_string(pe) + "/4: PASS";
    EXPECT_NE(result.output.find(pass), std::string::npos) << result.output;
  }
}

INSTANTIATE_TEST_SUITE_P(Functions, ShmemRdmaProgram,
                         ::testing::Values("rma_test", "amo_test", "sync_test", "static_test",
                                           "coll_test", "deprecated_test"),
                         [](const ::testing::TestParamInfo<const char*>& program) {
                           return std::string(program.param);
                         });

// Each PE asks shmem_ptr for the same heap object on every PE: NULL for the 3 others (the
// test program skips those checks), the object itself for its own PE (stores through it
// checked).
TEST_F(ShmemRdma, ShmemPtrIsNullForRemotePesAndTheObjectForTheOwnPe) {
  const test::ProcessResult result = oshrun({"ptr_test", "--allow-null-ptr"});
  EXPECT_EQ(result.exit_status, 0) << result.output;
  for (int pe = 0; pe < kPes; ++pe) {
    for (int target = 0; target < kPes; ++target) {
      const std::string line = "ptr_test PE " + std::to_string(pe) + "/4: ok   shmem_ptr to PE " +
                               std::to_string(target) + ": stores of 1/2/4/8 B and memcpy; loads";
      const std::string skipped = line + " (skipped: NULL, --allow-null-ptr)";
      if (target == pe) {
        EXPECT_NE(result.output.find(line + "\n"), std::string::npos) << line << result.output;
        EXPECT_EQ(result.output.find(skipped), std::string::npos) << skipped << result.output;
      } else {
        EXPECT_NE(result.output.find(skipped), std::string::npos) << skipped << result.output;
      }
    }
  }
}

// amo_test makes 200 atomics per PE on PE 0's counter alone (and more): every remote one is a
// request and a response through rxe0, local ones loop back through it. Both VMs' rxe0
// counters must rise by at least that.
TEST_F(ShmemRdma, TheJobsOperationsGoThroughRxe0InBothVms) {
  const std::uint64_t before0 = rxe_packets(0);
  const std::uint64_t before1 = rxe_packets(1);
  const test::ProcessResult result = oshrun({"amo_test", "-q", "--allow-null-ptr"});
  ASSERT_EQ(result.exit_status, 0) << result.output;
  const std::uint64_t after0 = rxe_packets(0);
  const std::uint64_t after1 = rxe_packets(1);
  // PEs 2 and 3 (VM 1) each make at least 200 fetching atomics on PE 0 (VM 0).
  EXPECT_GE(after0 - before0, 2u * 2u * 200u) << "VM 0: " << before0 << " -> " << after0;
  EXPECT_GE(after1 - before1, 2u * 2u * 200u) << "VM 1: " << before1 << " -> " << after1;
}

// The same benchmark binary with both backends in the same VMs, one after the other: both
// report, verify their data, and only load-store has a load/store pointer to time.
TEST_F(ShmemRdma, TheSameBenchmarkBinaryRunsWithBothBackends) {
  for (const std::string backend : {"load-store", "rdma"}) {
    const test::ProcessResult result = oshrun({"shmem_bench", "--quick"}, backend);
    ASSERT_EQ(result.exit_status, 0) << backend << ": " << result.output;
    const std::size_t start = result.output.find("{\"benchmark\"");
    ASSERT_NE(start, std::string::npos) << backend << ": " << result.output;
    const std::size_t end = result.output.find('\n', start);
    const json report = json::parse(result.output.substr(start, end - start), nullptr, false);
    ASSERT_FALSE(report.is_discarded()) << backend << ": " << result.output;
    EXPECT_EQ(report.value("mismatches", -1), 0) << backend;
    EXPECT_GT(report["get_latency_ns"]["8"]["p50"].get<double>(), 0) << backend;
    EXPECT_EQ(report["window_load_latency_ns"].is_null(), backend == "rdma") << report.dump();
  }
}

TEST_F(ShmemRdma, BadUseIsStillAClearError) {
  const test::ProcessResult result = oshrun({"bad_use_test", "pe-out-of-range"});
  EXPECT_NE(result.exit_status, 0) << result.output;
  EXPECT_NE(result.output.find("out of range"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace ethx
