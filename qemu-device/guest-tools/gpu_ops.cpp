#include "qemu-device/guest-tools/gpu_ops.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <thread>

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
                       std::to_string(version) + "; this command needs version 2");
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

AtomicResult run_atomic(GpuFunction& gpu, AtomicOp op, std::uint64_t addr, unsigned width,
                        std::uint64_t operand, std::uint64_t compare) {
  gpu.write(kAtomicAddr, addr);
  gpu.write(kAtomicOperand, operand);
  if (op == AtomicOp::kCompareSwap) gpu.write(kAtomicCompare, compare);
  gpu.write(kAtomicCmd, atomic_command(op, width));  // returns when the atomic has completed
  AtomicResult result;
  result.old_value = gpu.read(kAtomicResult);
  result.status = static_cast<std::uint32_t>(gpu.read(kAtomicStatus));
  return result;
}

CopyResult run_copy(GpuFunction& gpu, std::uint64_t src, std::uint64_t dst, std::uint64_t bytes,
                    std::chrono::nanoseconds timeout) {
  const auto before = static_cast<std::uint32_t>(gpu.read(kCopyStatus));
  if (copy_state(before) == kCopyBusy) {
    throw CommandError("the copy engine of " + gpu.bdf() +
                       " is busy (COPY_STATUS 1) before the start; is another copy running?");
  }
  gpu.write(kCopySrc, src);
  gpu.write(kCopyDst, dst);
  gpu.write(kCopyLen, bytes);
  const std::uint64_t start = now_ns();
  gpu.write(kCopyCmd, kCopyStart);
  CopyResult result;
  // Spin for the first millisecond (small copies), then poll every 20 us.
  for (;;) {
    const auto status = static_cast<std::uint32_t>(gpu.read(kCopyStatus));
    ++result.polls;
    const std::uint64_t elapsed = now_ns() - start;
    const std::uint32_t state = copy_state(status);
    if (state == kCopyDone || state == kCopyFailed) {
      result.state = state;
      result.code = copy_code(status);
      result.ns = elapsed;
      return result;
    }
    if (elapsed > static_cast<std::uint64_t>(timeout.count())) {
      char text[64];
      std::snprintf(text, sizeof text, "0x%x", status);
      throw CommandError("copy of " + std::to_string(bytes) + " bytes on " + gpu.bdf() +
                         " did not finish within " + std::to_string(timeout.count() / 1000000) +
                         " ms (COPY_STATUS " + text + ")");
    }
    if (elapsed > 1'000'000) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

std::filesystem::path default_lock_dir() {
  for (const char* dir : {"/run/lock", "/run", "/tmp", "/dev/shm"}) {
    std::error_code error;
    if (std::filesystem::is_directory(dir, error)) return dir;
  }
  return "/tmp";
}

DeviceLock::DeviceLock(const std::string& bdf, const std::filesystem::path& dir) {
  const auto file = dir / ("ethx-gpu-" + bdf + ".lock");
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    throw CommandError("cannot open the device lock " + file.string() + ": " +
                       std::strerror(errno));
  }
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int error = errno;
    ::close(fd_);
    throw CommandError("cannot lock " + file.string() + ": " + std::strerror(error));
  }
}

DeviceLock::~DeviceLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace ethx::guest
