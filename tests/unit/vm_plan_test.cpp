// The shared root on the QEMU command line (docs/guest-image.md): -virtfs and ethx.root=9p
// only when the QEMU binary has virtio-9p, asked of the binary (here: fake QEMUs, scripts
// that print a device listing).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fabric/vm/qemu_features.hpp"
#include "fabric/vm/vm_plan.hpp"

namespace ethx {
namespace {

class SharedRootPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ethx-vm-plan-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A fake QEMU whose `-device help` prints `listing`.
  std::string fake_qemu(const std::string& name, const std::string& listing) {
    const std::filesystem::path path = dir_ / name;
    std::ofstream(path) << "#!/bin/sh\n[ \"$1 $2\" = \"-device help\" ] || exit 1\ncat <<'EOF'\n"
                        << listing << "EOF\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path.string();
  }

  static VmPlan plan_with(const std::string& qemu) {
    VmPlan plan;
    plan.count = 2;
    plan.qemu = qemu;
    plan.kernel = "/k";
    plan.initrd = "/i";
    return plan;
  }

  std::filesystem::path dir_;
};

constexpr const char* kWith9p =
    "Storage devices:\nname \"virtio-9p-pci\", bus PCI, alias \"virtio-9p\"\n"
    "name \"virtio-serial-pci\", bus PCI, alias \"virtio-serial\"\n";
constexpr const char* kWithout9p = "Storage devices:\nname \"virtio-blk-pci\", bus PCI\n";

std::string kernel_command_line(const std::vector<std::string>& argv) {
  const auto append = std::find(argv.begin(), argv.end(), "-append");
  return append == argv.end() ? std::string() : *(append + 1);
}

TEST_F(SharedRootPlan, CommandLineExportsTheHostRootOnceAndTellsTheGuest) {
  VmPlan plan = plan_with("/q");
  plan.shared_root = true;
  const VmFabric fabric{"up-x", "shm", "", "", 2, "/run/x"};
  const std::vector<std::string> argv = qemu_command(plan, 1, fabric);
  const auto virtfs = std::find(argv.begin(), argv.end(), "-virtfs");
  ASSERT_NE(virtfs, argv.end());
  EXPECT_EQ(*(virtfs + 1), "local,path=/,mount_tag=ethxroot,security_model=none,multidevs=remap");
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "-virtfs"), 1);
  EXPECT_NE(kernel_command_line(argv).find(" ethx.root=9p"), std::string::npos)
      << kernel_command_line(argv);

  plan.shared_root = false;
  const std::vector<std::string> plain = qemu_command(plan, 1, fabric);
  EXPECT_EQ(std::find(plain.begin(), plain.end(), "-virtfs"), plain.end());
  EXPECT_EQ(kernel_command_line(plain).find("ethx.root"), std::string::npos);
}

TEST_F(SharedRootPlan, VirtfsIsAskedOfTheBinary) {
  EXPECT_TRUE(qemu_supports_virtfs(fake_qemu("with", kWith9p)));
  EXPECT_TRUE(qemu_has_device(dir_ / "with", "virtio-serial-pci"));
  EXPECT_FALSE(qemu_has_device(dir_ / "with", "virtio-serial"));  // an alias, not a name
  EXPECT_FALSE(qemu_supports_virtfs(fake_qemu("without", kWithout9p)));
  EXPECT_FALSE(qemu_supports_virtfs((dir_ / "absent").string()));
  // Rebuilt with virtfs: the same path is asked again (its size and time changed).
  const std::string rebuilt = fake_qemu("without", std::string(kWithout9p) + kWith9p);
  EXPECT_TRUE(qemu_supports_virtfs(rebuilt));
}

TEST_F(SharedRootPlan, LocateTurnsItOnOnlyForAQemuWithVirtfsUnlessSwitchedOff) {
  std::ofstream(dir_ / "vmlinux") << "k";
  std::ofstream(dir_ / "initrd") << "i";
  auto located = [&](const std::string& qemu) {
    VmPlan plan = plan_with(qemu);
    plan.kernel = (dir_ / "vmlinux").string();
    plan.initrd = (dir_ / "initrd").string();
    locate_vm_image(plan);
    return plan.shared_root;
  };
  const std::string with = fake_qemu("with", kWith9p);
  EXPECT_TRUE(located(with));
  const std::string without = fake_qemu("without", kWithout9p);
  EXPECT_FALSE(located(without));
  VmPlan plan = plan_with(without);
  EXPECT_EQ(shared_root_absence(plan),
            without + " has no virtio-9p (qemu-device/build-qemu.sh builds it with virtfs)");
  plan.shared_root = true;
  EXPECT_EQ(shared_root_absence(plan), "");
  ::setenv("ETHX_SHARED_ROOT", "0", 1);
  EXPECT_FALSE(located(with));
  EXPECT_EQ(shared_root_absence(plan_with(with)), "ETHX_SHARED_ROOT=0");
  ::unsetenv("ETHX_SHARED_ROOT");
}

}  // namespace
}  // namespace ethx
