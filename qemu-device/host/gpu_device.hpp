// One emulated GPU as a QEMU device sees it: local memory ("HBM") in a shared-memory file that
// remote GPUs reach through the fabric, and a remote window whose 1/2/4/8-byte loads, stores
// and atomics, and bulk copies, travel as ethx frames.
//
// Threads: the node (the packet engine, the port, the completer that serves remote requests on
// its own mapping of the HBM file) has one owner at a time, whoever holds the engine lock, so
// the port has one transmit owner. Normally that is the GPU's service thread. Other threads
// (QEMU vCPUs, the copy-engine doorbell) queue posted stores and copies for it; a thread that
// loads or runs an atomic takes the engine itself and drives it until its answer arrives (or
// for at most 1 ms, then it hands back and sleeps), which saves two thread hand-overs per load.
// Nothing here takes QEMU's big lock; the device drops it while a load waits
// (qemu-device/qemu/ethx_gpu.c). Every wait ends: the engine turns a lost response into a timeout
// after fabric.request_timeout_ns.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "address-map/fabric_types.hpp"
#include "fabric/config/topology_config.hpp"
#include "fabric/platform/shm_file.hpp"
#include "packet-engine/requester.hpp"
#include "qemu-device/ethx_gpu_regs.h"

namespace ethx {

struct GpuDeviceOptions {
  std::string fabric;  // the running fabric's instance name (`ethx up`: "up-<name>")
  GpuId gpu = 0;
  std::size_t gpus = 0;  // 0: from the topology
  std::string config_path;
  std::string transport = "shm";  // shm | afxdp | afpacket
  std::string netns_tag;          // socket transports: use this run's veth for the GPU
  std::string interface;          // socket transports: or this interface ...
  std::string netns;              // ... in this namespace
  // Report "ready" to the launcher only when report_ready() is called (a VM's guest tools are
  // up), not as soon as the device serves.
  bool ready_when_told = false;
};

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

struct DeviceResult {
  DeviceStatus status = DeviceStatus::kOk;
  std::uint64_t value = 0;       // loads: the data; atomics: the old value
  std::uint64_t fault_addr = 0;  // window address of the failing access
};

struct GpuDeviceCounters {
  std::uint64_t loads = 0;
  std::uint64_t stores = 0;
  std::uint64_t atomics = 0;
  std::uint64_t errors = 0;
  std::uint64_t timeouts = 0;
  std::uint64_t served_requests = 0;  // remote requests this GPU's completer performed
  std::uint64_t copies = 0;
  std::uint64_t copy_bytes = 0;
  std::uint64_t copy_drives = 0;  // times a polling caller drove the copy (drive_copy)
  std::uint64_t frames_sent = 0;
};

class GpuDevice {
 public:
  // Joins the running fabric as GPU options.gpu: creates its HBM file, opens its port, starts
  // the service thread. Throws (with the reason) if the fabric is not there.
  explicit GpuDevice(const GpuDeviceOptions& options);
  ~GpuDevice();  // stops the service thread; removes the HBM file
  GpuDevice(const GpuDevice&) = delete;
  GpuDevice& operator=(const GpuDevice&) = delete;

  GpuId gpu() const { return self_; }
  const TopologyConfig& topology() const { return topology_; }
  // The completer's mapping of the HBM file, and its name in /dev/shm (map it again for a BAR).
  std::span<std::byte> hbm() { return {hbm_.data(), hbm_.size_bytes()}; }
  const std::string& hbm_name() const { return hbm_.name(); }
  // The remote window's size: the window table's span rounded up to a power of two.
  std::uint64_t window_bytes() const;

  // Blocks until the data arrives or the access fails.
  DeviceResult load(std::uint64_t window_addr, unsigned width);
  // Posted: returns once queued; only address errors are reported here (remote failures of a
  // posted write are counted by the target).
  // Waits for room when kMaxQueuedRequests stores are queued already.
  DeviceResult store(std::uint64_t window_addr, unsigned width, std::uint64_t value);
  // The same, but never waits: nullopt (nothing queued, nothing counted) when the queue is
  // full. QEMU's store handler holds the big lock; it tries this first and drops the lock only
  // to wait in store() (a vCPU blocked under the big lock stops the VM's main loop: serial
  // ports, timers, virtio).
  std::optional<DeviceResult> try_store(std::uint64_t window_addr, unsigned width,
                                        std::uint64_t value);
  // Blocks until the old value arrives. width 4 or 8, naturally aligned.
  DeviceResult atomic(AtomicOp op, std::uint64_t window_addr, unsigned width, std::uint64_t operand,
                      std::uint64_t compare);
  // Copies `bytes` from window address `src` to window address `dst` (either may be this
  // GPU's own window: served from HBM without frames) with many reads in flight; the data is
  // globally visible (flushed) before `done` runs, on the engine's owner (the service thread or
  // a thread driving it for its own load). Returns false if a copy is already running (one at
  // a time).
  using CopyDone = std::function<void(const DeviceResult&)>;
  // kCallerDrives: the caller goes on to drive_copy() at once, so the service thread is not
  // woken to compete with it for the engine (drive_copy wakes it if the copy outlasts it).
  enum class CopyStart { kWakeService, kCallerDrives };
  bool start_copy(std::uint64_t src, std::uint64_t dst, std::uint64_t bytes, CopyDone done,
                  CopyStart how = CopyStart::kWakeService);
  // Drives the running copy on the calling thread (the engine owned for at most `budget_ns`)
  // instead of leaving it to the service thread: the copy progresses from the first poll, even
  // while the service thread naps. Returns whether a copy is still running.
  bool drive_copy(std::int64_t budget_ns);
  // Waits until every store queued so far (by any thread) is performed at its target: a fabric
  // flush to each GPU written to since the previous flush_all, or with a flush still in
  // flight. The requester's flush completes after every earlier write to that GPU was
  // performed there, go-back-N resends included (docs/register-map.md, FLUSH). A failed flush
  // reports its status and, as fault_addr, the window address of the failing GPU's memory.
  DeviceResult flush_all();

  GpuDeviceCounters counters() const;
  // Tells the launcher's control region (if there is one) that this GPU is ready.
  void report_ready();

 private:
  struct Request;
  struct CopyJob;
  // A request for one window access of `kind`, checked and translated; nullptr (and `error`
  // filled, the error counted) if the width or the address is bad.
  enum class RequestKind { kLoad, kStore, kAtomic, kFlushAll };
  std::shared_ptr<Request> prepare(RequestKind kind, std::uint64_t window_addr, unsigned width,
                                   DeviceResult& error);
  DeviceResult submit_and_wait(const std::shared_ptr<Request>& request);
  // How long a vCPU drives the engine itself for its load or atomic (spinning, then yielding)
  // before it hands the engine back to the service thread and sleeps. Remote loads take tens
  // of microseconds here; a timeout or a copy in the way takes longer and is not worth a core.
  static constexpr std::int64_t kDriveBudgetNs = 1'000'000;
  void drive_while(const std::function<bool()>& busy, std::int64_t budget_ns = kDriveBudgetNs);
  void hand_back(std::unique_lock<std::mutex>& engine);
  std::optional<DeviceResult> queue_store(std::uint64_t window_addr, unsigned width,
                                          std::uint64_t value, bool wait_for_room);
  // False (nothing queued) if the queue is full and `wait_for_room` is false.
  bool enqueue(std::shared_ptr<Request> request, bool wait_for_room);
  void serve();
  // Engine owner only (Impl::engine held).
  void take_incoming();
  void run_engine_once();
  void issue_requests();
  void issue_one(Request& request);
  void dispatch_completions();
  void finish_flush(Request& request, const Completion& completion, DeviceStatus status);
  void advance_copy();
  void finish_request(Request& request, DeviceStatus status, std::uint64_t value,
                      std::uint64_t fault_addr);
  bool translate_one(std::uint64_t window_addr, unsigned width, Access access, GpuId& dst,
                     std::uint64_t& remote, DeviceResult& error) const;

  struct Impl;
  TopologyConfig topology_;
  GpuId self_;
  shm::SharedMemoryFile hbm_;
  std::unique_ptr<Impl> impl_;
  std::thread service_;
};

}  // namespace ethx
