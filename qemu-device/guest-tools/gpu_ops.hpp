// Register map operations (version 2 and later) on one ethx GPU: fabric geometry, latched errors,
// and, through libethx-gpu, the atomic command, the copy engine and the per-device lock. Only
// register accesses through GpuFunction (the SDK's too: GpuFunction::sdk), so the unit tests
// drive them with device models.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "qemu-device/guest-tools/ethx_gpu.hpp"

namespace ethx::guest {

// A command that parsed but cannot run here (no such GPU, access rejected); exit status 1.
struct CommandError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A command that ran but failed (an error latched, data did not verify): main prints `result`
// on stdout, the message on stderr, and exits with 1.
struct CommandFailed : CommandError {
  CommandFailed(const std::string& message, nlohmann::json result_json)
      : CommandError(message), result(std::move(result_json)) {}
  nlohmann::json result;
};

std::uint64_t now_ns();  // CLOCK_MONOTONIC

struct Geometry {
  std::uint32_t gpu_id = 0;
  std::uint32_t status = 0;
  std::uint32_t gpu_count = 0;
  std::uint32_t aperture_mib = 0;
  std::uint32_t hbm_mib = 0;
  std::uint64_t aperture_bytes() const { return std::uint64_t{aperture_mib} << 20; }
  std::uint64_t hbm_bytes() const { return std::uint64_t{hbm_mib} << 20; }
  // Window address of byte `offset` of GPU `target`'s memory.
  std::uint64_t window_addr(std::uint64_t target, std::uint64_t offset) const {
    return target * aperture_bytes() + offset;
  }
};

// Reads GPU_ID, STATUS, GPU_COUNT, APERTURE_MIB, HBM_MIB. With `need_fabric`, throws
// CommandError unless the device speaks register map 2 or later and has joined a fabric.
Geometry read_geometry(GpuFunction& gpu, bool need_fabric);

struct ErrorState {
  std::uint32_t bits = 0;
  std::uint64_t fault_addr = 0;
};
// Reads ERROR and FAULT_ADDR, then clears ERROR (RW1C, write back the bits read) if set.
ErrorState take_error(GpuFunction& gpu);
// {"error", "error_names": [set bits], "fault_addr"}.
nlohmann::json error_json(const ErrorState& error);
nlohmann::json error_names(std::uint32_t bits);
std::string status_code_name(std::uint32_t code);

// The atomic and copy registers are one set per GPU: processes of this VM serialise their use
// with libethx-gpu's lock (qemu-device/sdk/src/lock.c), an fcntl record lock on
// `<dir>/ethx-gpu-<BDF>.lock` that every program using the SDK takes too. Default dir:
// ETHX_DEV_LOCK_DIR, else /run/lock, /run, /tmp or /dev/shm, the first that exists.
std::filesystem::path default_lock_dir();
class DeviceLock {
 public:
  // Takes `gpu`'s lock through its SDK handle (GpuFunction::sdk) within
  // ETHX_DEV_LOCK_TIMEOUT_MS (10 s); throws CommandError naming the holder's PID.
  DeviceLock(GpuFunction& gpu, const std::filesystem::path& dir);
  ~DeviceLock();
  DeviceLock(const DeviceLock&) = delete;
  DeviceLock& operator=(const DeviceLock&) = delete;

  GpuFunction& gpu() const { return gpu_; }
  ethx_dev* device() const { return dev_; }

 private:
  GpuFunction& gpu_;
  ethx_dev* dev_;
};

// One atomic by libethx-gpu (ethx_dev_atomic: ATOMIC_ADDR, ATOMIC_OPERAND, ATOMIC_COMPARE for
// compare-swap, the ATOMIC_CMD doorbell, then ATOMIC_RESULT and ATOMIC_STATUS) under `lock`.
// Throws CommandError for what the SDK refuses (an address outside the window).
struct AtomicResult {
  std::uint64_t old_value = 0;
  std::uint32_t status = 0;  // 0 ok, else a status code
};
AtomicResult run_atomic(const DeviceLock& lock, AtomicOp op, std::uint64_t addr, unsigned width,
                        std::uint64_t operand, std::uint64_t compare = 0);

// One copy by libethx-gpu (ethx_dev_copy_start: COPY_SRC, COPY_DST, COPY_LEN and COPY_CMD start
// without interrupt; ethx_dev_copy_poll on COPY_STATUS until done or failed) under `lock`.
// Throws CommandError if the engine is busy before the start, refuses it, or the copy does not
// finish within `timeout`.
struct CopyResult {
  std::uint32_t state = 0;  // kCopyDone or kCopyFailed
  std::uint32_t code = 0;   // status code when failed
  std::uint64_t ns = 0;     // doorbell to completion seen
  std::uint64_t polls = 0;
};
CopyResult run_copy(const DeviceLock& lock, std::uint64_t src, std::uint64_t dst,
                    std::uint64_t bytes, std::chrono::nanoseconds timeout);

// Verification data: 8-byte word `index` of the stream `seed` (splitmix64).
std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t index);

}  // namespace ethx::guest
