#include "qemu-device/guest-tools/ethx_gpu.hpp"

#include <stdexcept>

#include "qemu-device/sdk/src/sdk_internal.h"

namespace ethx::guest {

namespace {

// The SDK's register access for a GpuFunction. Nothing may unwind through the SDK's C frames:
// a refused access (it never is: the SDK checks offsets first) reads all-ones.
std::uint64_t read_register(void* context, std::uint64_t offset, unsigned width) noexcept {
  try {
    return static_cast<GpuFunction*>(context)->bar(kControlBar).read(offset, width);
  } catch (const std::exception&) {
    return ~std::uint64_t{0};
  }
}

void write_register(void* context, std::uint64_t offset, unsigned width,
                    std::uint64_t value) noexcept {
  try {
    static_cast<GpuFunction*>(context)->bar(kControlBar).write(offset, width, value);
  } catch (const std::exception&) {
    return;  // as a device ignores a write it refuses
  }
}

}  // namespace

void GpuFunction::SdkClose::operator()(ethx_dev* dev) const {
  ethx_dev_close(dev);
}

ethx_dev* GpuFunction::sdk(const std::filesystem::path& lock_dir) {
  if (sdk_) return sdk_.get();
  const ethx_sdk_io io{read_register, write_register, this};
  const std::uint64_t window_bytes = bar(kWindowBar).size();
  char error[ETHX_SDK_ERROR_BYTES] = "";
  sdk_.reset(ethx_sdk_open_io(&io, bdf().c_str(), window_bytes,
                              lock_dir.empty() ? nullptr : lock_dir.c_str(), error, sizeof error));
  if (!sdk_) throw std::runtime_error(error);
  return sdk_.get();
}

void EthxGpu::DevClose::operator()(ethx_dev* dev) const {
  ethx_dev_close(dev);
}

ethx_dev* EthxGpu::device() {
  if (dev_) return dev_.get();
  char error[ETHX_SDK_ERROR_BYTES] = "";
  dev_.reset(
      ethx_sdk_open_at(sysfs_dir_.c_str(), bdf_.c_str(), ETHX_SDK_OPEN_RAW, error, sizeof error));
  if (!dev_) throw std::runtime_error("ethx GPU " + bdf_ + ": " + error);
  return dev_.get();
}

BarAccess& EthxGpu::bar(unsigned index) {
  auto found = bars_.find(index);
  if (found != bars_.end()) return *found->second;
  ethx_dev* dev = device();
  const ethx_sdk_bar* mapped = nullptr;
  if (index == kControlBar) {
    mapped = &dev->regs;
  } else if (index == kHbmBar) {
    if (ethx_dev_hbm(dev, nullptr) == nullptr) throw std::runtime_error(ethx_dev_last_error(dev));
    mapped = &dev->hbm;
  } else if (index == kWindowBar) {
    if (ethx_sdk_map_window(dev) != 0) throw std::runtime_error(ethx_dev_last_error(dev));
    mapped = &dev->window;
  } else {
    throw std::runtime_error("ethx GPU " + bdf_ + " has no BAR " + std::to_string(index));
  }
  auto view = std::make_unique<MmioBar>(mapped->base, mapped->bytes, index == kHbmBar);
  return *bars_.emplace(index, std::move(view)).first->second;
}

std::vector<EthxGpu> find_ethx_gpus(const std::filesystem::path& devices_dir) {
  std::vector<EthxGpu> gpus;
  for (std::string& bdf : find_ethx_bdfs(devices_dir)) {
    std::filesystem::path dir = devices_dir / bdf;
    gpus.emplace_back(std::move(bdf), std::move(dir));
  }
  return gpus;
}

GpuList open_ethx_gpus(const std::filesystem::path& devices_dir) {
  GpuList gpus;
  for (auto& gpu : find_ethx_gpus(devices_dir)) {
    gpus.push_back(std::make_unique<EthxGpu>(std::move(gpu)));
  }
  return gpus;
}

}  // namespace ethx::guest
