// One window access of a GpuDevice as every part of the device sees it: its status codes, its
// result, where in the fabric it goes (the window translated), and the request a caller waits
// on while the engine's owner performs it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "address-map/address_map.hpp"
#include "packet-engine/requester.hpp"
#include "qemu-device/ethx_gpu_regs.h"

namespace ethx {

// What happened to one access: the register map's status codes (ethx_gpu_regs.h), which the
// device shows in ATOMIC_STATUS and COPY_STATUS and latches as ERROR bit 1 << code. Code
// ETHX_GPU_INTERNAL is the C API's own (an exception caught there), never a DeviceStatus.
enum class DeviceStatus : std::uint32_t {
  kOk = ETHX_GPU_OK,
  kOutOfWindow = ETHX_GPU_OUT_OF_WINDOW,  // no window at that address
  kNoRights = ETHX_GPU_NO_RIGHTS,         // the window does not allow this access
  kTimeout = ETHX_GPU_TIMEOUT,            // no response within fabric.request_timeout_ns
  kRemoteError = ETHX_GPU_REMOTE_ERROR,   // the target refused (bounds, partition, rights, ...)
  kBadWidth = ETHX_GPU_BAD_WIDTH,         // not 1, 2, 4 or 8 bytes (atomics: 4 or 8)
  kUnreachable = ETHX_GPU_UNREACHABLE,    // the GPU is not in the fabric
};
const char* to_string(DeviceStatus status);
// A completion's wire status as the device reports it.
DeviceStatus from_wire(wire::Status status);

struct DeviceResult {
  DeviceStatus status = DeviceStatus::kOk;
  std::uint64_t value = 0;       // loads: the data; atomics: the old value
  std::uint64_t fault_addr = 0;  // window address of the failing access
};

// The counters every part that ends an access adds to (read by other threads).
struct FailureCounters {
  std::atomic<std::uint64_t> errors{0};
  std::atomic<std::uint64_t> timeouts{0};
  // Counts `status` if it is a failure (a timeout is also an error).
  void count(DeviceStatus status);
};

// Where one access goes: a single window's GPU and the address in its memory, or why there is
// no single target.
struct WindowTarget {
  DeviceStatus status = DeviceStatus::kOk;  // kOutOfWindow or kNoRights: no target
  std::uint64_t fault_addr = 0;             // window address of the first failing byte
  GpuId gpu = 0;
  std::uint64_t remote = 0;
  bool ok() const { return status == DeviceStatus::kOk; }
};
// An access straddling two windows has no single target: out of window at the second one.
WindowTarget translate_window(const AddressMap& map, std::uint64_t window_addr, std::uint64_t bytes,
                              Access access);

enum class RequestKind { kLoad, kStore, kAtomic, kFlushAll };

// One access from a caller's thread to the engine's owner, who finishes it; the caller waits on
// `done` (loads, atomics, flushes) or has already returned (posted stores).
struct DeviceRequest {
  RequestKind kind = RequestKind::kLoad;
  std::uint64_t window_addr = 0;
  unsigned width = 0;
  std::uint64_t value = 0;  // stores: the data; atomics: the operand
  std::uint64_t compare = 0;
  AtomicOp op = AtomicOp::kFetchAdd;
  GpuId dst = 0;  // translated (not for kFlushAll)
  std::uint64_t remote = 0;
  std::size_t flushes_left = 0;  // kFlushAll: GPUs whose flush is unanswered
  DeviceResult result;
  std::atomic<std::uint32_t> done{0};

  bool finished() const { return done.load(std::memory_order_acquire) != 0; }
  // Blocks until finish_request() ran; returns the result.
  DeviceResult wait();
};

// Records the outcome (a failure reads all-ones, as on real PCIe, and names `fault_addr`),
// counts a failure and wakes the waiting caller.
void finish_request(DeviceRequest& request, DeviceStatus status, std::uint64_t value,
                    std::uint64_t fault_addr, FailureCounters& counters);

// A request for one access of `kind`, checked and translated, or the error the access ends with
// at once (a bad width, no window, no right: no frame is sent).
struct PreparedRequest {
  std::shared_ptr<DeviceRequest> request;  // null: `error` is the answer
  DeviceResult error;
};
PreparedRequest prepare_request(const AddressMap& map, RequestKind kind, std::uint64_t window_addr,
                                unsigned width);

}  // namespace ethx
