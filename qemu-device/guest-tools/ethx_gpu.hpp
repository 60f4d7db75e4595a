// An ethx-gpu PCI device seen from inside the guest: its BARs and its control registers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "qemu-device/guest-tools/ethx_regs.hpp"
#include "qemu-device/guest-tools/mmio_bar.hpp"
#include "qemu-device/guest-tools/pci_scan.hpp"

struct ethx_dev;  // libethx-gpu's device handle (<ethx/gpu.h>)

namespace ethx::guest {

// One ethx GPU as the commands use it: its PCI address and its BARs. EthxGpu is the sysfs
// one; the unit tests implement it with device models.
class GpuFunction {
 public:
  GpuFunction() = default;
  virtual ~GpuFunction() = default;
  // The SDK handle is tied to this object's address (its register access calls back here): a
  // moved-to GPU opens its own.
  GpuFunction(GpuFunction&& /*other*/) noexcept {}
  GpuFunction& operator=(GpuFunction&& /*other*/) noexcept { return *this; }
  virtual const std::string& bdf() const = 0;
  // BAR `index` (0 control, 2 HBM, 4 window). Throws std::runtime_error if there is none.
  virtual BarAccess& bar(unsigned index) = 0;

  std::uint64_t read(const Register& reg) { return bar(kControlBar).read(reg.offset, reg.width); }
  void write(const Register& reg, std::uint64_t value) {
    bar(kControlBar).write(reg.offset, reg.width, value);
  }

  // libethx-gpu's handle on this GPU (qemu-device/sdk): its register accesses go through
  // bar(kControlBar), so the SDK's atomic and copy sequences and its lock (in `lock_dir`) run on
  // any GpuFunction, device models included. Opened on first use (later calls return it, their
  // lock_dir unused); needs BAR 4. Throws std::runtime_error.
  ethx_dev* sdk(const std::filesystem::path& lock_dir);

 private:
  struct SdkClose {
    void operator()(ethx_dev* dev) const;
  };
  std::unique_ptr<ethx_dev, SdkClose> sdk_;
};

using GpuList = std::vector<std::unique_ptr<GpuFunction>>;

// The sysfs one: libethx-gpu's handle on the device (qemu-device/sdk), opened on first use
// without checks (so `list` and `status` show a device outside a fabric, or a foreign IDENT),
// its BARs the SDK's mappings.
class EthxGpu : public GpuFunction {
 public:
  EthxGpu(std::string bdf, std::filesystem::path sysfs_dir)
      : bdf_(std::move(bdf)), sysfs_dir_(std::move(sysfs_dir)) {}

  const std::string& bdf() const override { return bdf_; }

  // BAR `index` (0, 2 or 4), mapped by the SDK on first use. Throws std::runtime_error with
  // the SDK's reason (no such BAR, open or mmap failed).
  BarAccess& bar(unsigned index) override;

  // The SDK's handle (the open throws std::runtime_error with the SDK's reason).
  ethx_dev* device();

 private:
  struct DevClose {
    void operator()(ethx_dev* dev) const;
  };
  std::string bdf_;
  std::filesystem::path sysfs_dir_;
  std::unique_ptr<ethx_dev, DevClose> dev_;  // outlives bars_, which view its mappings
  std::map<unsigned, std::unique_ptr<MmioBar>> bars_;
};

// Every ethx-gpu function under `devices_dir`, in BDF order.
std::vector<EthxGpu> find_ethx_gpus(const std::filesystem::path& devices_dir = kSysfsPciDevices);
GpuList open_ethx_gpus(const std::filesystem::path& devices_dir = kSysfsPciDevices);

}  // namespace ethx::guest
