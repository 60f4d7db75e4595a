// Boots the guest image under QEMU (TCG) with two ethx-gpu devices and checks, from inside
// the guest, what ethx-guest sees: identity, a SCRATCH round trip, and the device's answer to
// bad accesses. One boot serves every test (a TCG boot takes seconds); ctest label `vm`.
// Without QEMU or the image the tests fail and name the script that builds them.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qemu-device/ethx_gpu_regs.h"
#include "tests/integration/vm_test_support.hpp"

namespace {

using ethx::test::GuestBlock;
using nlohmann::json;

constexpr std::uint64_t kIdent = ETHX_IDENT;  // "ETHX"
constexpr std::uint64_t kScratchValue = 0x0123456789abcdef;

// The ethx-guest commands the VM runs, in order (commas for spaces: the /init protocol).
enum Step { kList, kPoke, kPeek, kBadRead, kStatusAfter, kOutsideBar, kBadWidth, kSteps };
const std::vector<std::string> kRuns = {
    "list",
    "poke,--gpu,3,--bar,0,--offset,0x20,--width,8,--value,0x0123456789abcdef",
    "peek,--gpu,3,--bar,0,--offset,0x20,--width,8",
    "peek,--gpu,3,--bar,0,--offset,0x100,--width,4",
    "status,--gpu,3",
    "peek,--gpu,5,--bar,0,--offset,0x1000,--width,4",
    "peek,--gpu,5,--bar,0,--offset,0,--width,3",
};

struct VmRun {
  std::string error;  // why there is no result; empty on success
  std::vector<GuestBlock> blocks;
  std::string console;
};

VmRun boot_once() {
  VmRun run;
  const auto prerequisites = ethx::test::find_vm_prerequisites();
  if (!prerequisites.missing.empty()) {
    run.error = prerequisites.missing;
    return run;
  }
  ::setenv("ETHX_QEMU", prerequisites.qemu.c_str(), 1);
  ::setenv("ETHX_GUEST_KERNEL", prerequisites.kernel.c_str(), 1);
  ::setenv("ETHX_GUEST_INITRD", prerequisites.initrd.c_str(), 1);
  std::vector<std::string> argv = {std::string(ETHX_SOURCE_DIR) + "/qemu-device/guest/run-vm.sh",
                                   "--gpus", "3,5", "--timeout", "150"};
  for (const auto& command : kRuns) {
    argv.push_back("--run");
    argv.push_back(command);
  }
  // A TCG boot takes ~3-4 s here; the deadline allows for a loaded 2-core machine.
  const auto result = ethx::test::run_with_deadline(argv, std::chrono::seconds(180));
  run.console = result.output;
  if (result.timed_out) {
    run.error = "the VM did not power off within 180 s; it was killed";
  } else if (result.exit_status != 0) {
    run.error = "run-vm.sh exited with status " + std::to_string(result.exit_status) +
                (result.exit_status == 124 ? " (its timeout killed QEMU)" : "");
  } else {
    run.blocks = ethx::test::parse_guest_blocks(result.output);
    if (run.blocks.size() != kSteps) {
      run.error = "expected " + std::to_string(kSteps) + " ETHX-BEGIN/END blocks, got " +
                  std::to_string(run.blocks.size());
    }
  }
  return run;
}

class VmBoot : public testing::Test {
 protected:
  static void SetUpTestSuite() { vm_ = new VmRun(boot_once()); }
  static void TearDownTestSuite() {
    delete vm_;
    vm_ = nullptr;
  }

  // The JSON a step printed; fails the test if the VM run or the step itself failed.
  static json step_json(Step step) {
    const GuestBlock& block = vm_->blocks.at(step);
    EXPECT_EQ(block.exit_status, 0) << kRuns[step] << " printed:\n" << block.text;
    return json::parse(block.text);
  }

  void SetUp() override {
    ASSERT_TRUE(vm_->error.empty()) << vm_->error << "\nconsole output:\n" << vm_->console;
  }

  static VmRun* vm_;
};

VmRun* VmBoot::vm_ = nullptr;

TEST_F(VmBoot, ListShowsBothGpusWithTheirIds) {
  const json list = step_json(kList);
  ASSERT_EQ(list.at("gpus").size(), 2u) << list.dump(2);
  std::set<std::uint64_t> ids;
  for (const json& gpu : list.at("gpus")) {
    ids.insert(gpu.at("gpu_id").get<std::uint64_t>());
    EXPECT_EQ(gpu.at("ident").get<std::uint64_t>(), kIdent);
    EXPECT_TRUE(gpu.at("ident_ok").get<bool>());
    EXPECT_EQ(gpu.at("version").get<std::uint64_t>(), std::uint64_t{ETHX_REGISTER_MAP_VERSION});
    EXPECT_EQ(gpu.at("status").get<std::uint64_t>(), 0u);  // no fabric yet, no error
  }
  EXPECT_EQ(ids, (std::set<std::uint64_t>{3, 5}));
}

TEST_F(VmBoot, ScratchPokeThenPeekReturnsTheValue) {
  EXPECT_EQ(step_json(kPoke).at("value").get<std::uint64_t>(), kScratchValue);
  const json peek = step_json(kPeek);
  EXPECT_EQ(peek.at("gpu_id").get<std::uint64_t>(), 3u);
  EXPECT_EQ(peek.at("value").get<std::uint64_t>(), kScratchValue);
}

// ethx_gpu.c: a read of an unknown register returns all-ones and latches BAD_REGISTER with
// the offset in FAULT_ADDR; STATUS shows the latched error.
TEST_F(VmBoot, UnknownRegisterReadsAllOnesAndLatchesTheError) {
  EXPECT_EQ(step_json(kBadRead).at("value").get<std::uint64_t>(), 0xffffffffu);
  const json status = step_json(kStatusAfter).at("gpus").at(0);
  EXPECT_EQ(status.at("gpu_id").get<std::uint64_t>(), 3u);
  EXPECT_EQ(status.at("registers").at("error").get<std::uint64_t>(), 1u);
  EXPECT_EQ(status.at("registers").at("fault_addr").get<std::uint64_t>(), 0x100u);
  EXPECT_EQ(status.at("registers").at("scratch").get<std::uint64_t>(), kScratchValue);
  EXPECT_TRUE(status.at("status_bits").at("error_latched").get<bool>());
  EXPECT_TRUE(status.at("error_bits").at("bad_register").get<bool>());
}

TEST_F(VmBoot, AccessOutsideTheBarIsRefusedByTheTool) {
  const GuestBlock& block = vm_->blocks.at(kOutsideBar);
  EXPECT_EQ(block.exit_status, 1);
  EXPECT_NE(block.text.find("outside the 4096-byte BAR"), std::string::npos) << block.text;
}

TEST_F(VmBoot, BadWidthIsAUsageError) {
  const GuestBlock& block = vm_->blocks.at(kBadWidth);
  EXPECT_EQ(block.exit_status, 2);
  EXPECT_NE(block.text.find("--width must be 1, 2, 4 or 8"), std::string::npos) << block.text;
}

}  // namespace
