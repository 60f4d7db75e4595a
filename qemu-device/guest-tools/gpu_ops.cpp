#include "qemu-device/guest-tools/gpu_ops.hpp"

#include <time.h>

#include <thread>

#include "qemu-device/sdk/src/sdk_internal.h"

namespace ethx::guest {

std::uint64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

Geometry read_geometry(GpuFunction& gpu, bool need_fabric) {
  Geometry geometry;
  geometry.gpu_id = static_cast<std::uint32_t>(gpu.read(kGpuId));
  const auto version = gpu.read(kVersion);
  if (version < 2) {
    if (!need_fabric) return geometry;
    throw CommandError("ethx GPU " + gpu.bdf() + " speaks register map version " +
                       std::to_string(version) + "; this command needs version 2 or later");
  }
  geometry.status = static_cast<std::uint32_t>(gpu.read(kStatus));
  geometry.gpu_count = static_cast<std::uint32_t>(gpu.read(kGpuCount));
  geometry.aperture_mib = static_cast<std::uint32_t>(gpu.read(kApertureMib));
  geometry.hbm_mib = static_cast<std::uint32_t>(gpu.read(kHbmMib));
  if (need_fabric && ((geometry.status & kStatusFabricUp) == 0 || geometry.gpu_count == 0 ||
                      geometry.aperture_mib == 0)) {
    throw CommandError("ethx GPU " + gpu.bdf() + " (gpu id " + std::to_string(geometry.gpu_id) +
                       ") has not joined a fabric (STATUS.FABRIC_UP is 0; start QEMU with "
                       "-device ethx-gpu,...,fabric=NAME after `ethx up`)");
  }
  return geometry;
}

ErrorState take_error(GpuFunction& gpu) {
  ErrorState error;
  error.bits = static_cast<std::uint32_t>(gpu.read(kError));
  if (error.bits == 0) return error;
  error.fault_addr = gpu.read(kFaultAddr);
  gpu.write(kError, error.bits);  // RW1C
  return error;
}

nlohmann::json error_names(std::uint32_t bits) {
  auto names = nlohmann::json::array();
  for (unsigned bit = 0; bit < 32; ++bit) {
    if ((bits >> bit & 1u) == 0) continue;
    names.push_back(bit < std::size(kErrorBitNames) ? kErrorBitNames[bit]
                                                    : "bit" + std::to_string(bit));
  }
  return names;
}

nlohmann::json error_json(const ErrorState& error) {
  return {{"error", error.bits},
          {"error_names", error_names(error.bits)},
          {"fault_addr", error.fault_addr}};
}

std::string status_code_name(std::uint32_t code) {
  return code < std::size(kStatusCodeNames) ? kStatusCodeNames[code]
                                            : "code" + std::to_string(code);
}

AtomicResult run_atomic(const DeviceLock& lock, AtomicOp op, std::uint64_t addr, unsigned width,
                        std::uint64_t operand, std::uint64_t compare) {
  AtomicResult result;
  const int status = ethx_dev_atomic(lock.device(), static_cast<int>(op), addr, width, operand,
                                     compare, &result.old_value);
  if (status < 0) throw CommandError(ethx_dev_last_error(lock.device()));
  result.status = static_cast<std::uint32_t>(status);
  return result;
}

CopyResult run_copy(const DeviceLock& lock, std::uint64_t src, std::uint64_t dst,
                    std::uint64_t bytes, std::chrono::nanoseconds timeout) {
  ethx_dev* dev = lock.device();
  // From before the start: the COPY_CMD write itself drives the copy for up to 200 us (QEMU),
  // so a small copy is over when it returns. The time includes the start's four register
  // accesses before the doorbell (a microsecond under TCG).
  const std::uint64_t start = now_ns();
  if (ethx_dev_copy_start(dev, src, dst, bytes) != ETHX_GPU_OK) {
    throw CommandError(ethx_dev_last_error(dev));
  }
  CopyResult result;
  // Spin for the first millisecond (small copies), then poll every 20 us.
  for (;;) {
    int status = ETHX_GPU_OK;
    const bool running = ethx_dev_copy_poll(dev, &status) != 0;
    ++result.polls;
    const std::uint64_t elapsed = now_ns() - start;
    if (!running) {
      if (status < 0) throw CommandError(ethx_dev_last_error(dev));  // the start was refused
      result.state = status == ETHX_GPU_OK ? kCopyDone : kCopyFailed;
      result.code = static_cast<std::uint32_t>(status);
      result.ns = elapsed;
      return result;
    }
    if (elapsed > static_cast<std::uint64_t>(timeout.count())) {
      throw CommandError("copy of " + std::to_string(bytes) + " bytes on " + lock.gpu().bdf() +
                         " did not finish within " + std::to_string(timeout.count() / 1000000) +
                         " ms (the copy engine is still busy)");
    }
    if (elapsed > 1'000'000) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

std::filesystem::path default_lock_dir() {
  return ethx_sdk_lock_dir();
}

DeviceLock::DeviceLock(GpuFunction& gpu, const std::filesystem::path& dir)
    : gpu_(gpu), dev_(nullptr) {
  ethx_dev* dev = nullptr;
  try {
    dev = gpu.sdk(dir);
  } catch (const std::runtime_error& error) {
    throw CommandError(error.what());
  }
  if (ethx_dev_lock(dev, -1) != ETHX_GPU_OK) throw CommandError(ethx_dev_last_error(dev));
  dev_ = dev;
}

DeviceLock::~DeviceLock() {
  ethx_dev_unlock(dev_);
}

std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace ethx::guest
