// One emulated GPU as a QEMU device sees it: local memory ("HBM") that remote GPUs reach
// through the fabric (a shared-memory file, or anonymous memory for the in-memory form the unit
// tests build), and a remote window whose 1/2/4/8-byte loads, stores and atomics, and bulk
// copies, travel as ethx frames.
//
// A composition of small parts, each with its own unit tests (tests/unit/):
//   EngineOwner   (engine_owner.hpp)   who drives the node: the service thread, or a vCPU for its
//                                      own load; the posted-work queue and the hand-off
//   RequestTable  (request_table.hpp)  the callers' requests, issued in order and tracked until
//                                      answered
//   CopyEngine    (copy_engine.hpp)    the copy engine, sans-I/O
//   perform_local (local_access.hpp)   accesses to the GPU's own window, on its memory
// GpuDevice opens the port and the node, runs the service thread and glues the parts together.
//
// Nothing here takes QEMU's big lock; the device drops it while a load waits
// (qemu-device/qemu/ethx_gpu.c). Every wait ends: the engine turns a lost response into a timeout
// after fabric.request_timeout_ns.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "address-map/fabric_types.hpp"
#include "fabric/config/topology_config.hpp"
#include "fabric/transport/node_port.hpp"
#include "packet-engine/requester.hpp"
#include "qemu-device/host/device_request.hpp"

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
  // GPU `gpu` of `topology` on a port someone else made (the unit tests: an in-memory fabric),
  // its HBM anonymous memory, no launcher to report to. Starts the service thread.
  GpuDevice(const TopologyConfig& topology, GpuId gpu, std::unique_ptr<NodePort> port);
  ~GpuDevice();  // stops the service thread; removes the HBM file
  GpuDevice(const GpuDevice&) = delete;
  GpuDevice& operator=(const GpuDevice&) = delete;

  GpuId gpu() const { return self_; }
  const TopologyConfig& topology() const { return topology_; }
  // The completer's mapping of the HBM, and its file's name in /dev/shm (map it again for a
  // BAR; empty for anonymous memory).
  std::span<std::byte> hbm() { return hbm_; }
  const std::string& hbm_name() const;
  // The remote window's size: the window table's span rounded up to a power of two.
  std::uint64_t window_bytes() const;

  // Blocks until the data arrives or the access fails.
  DeviceResult load(std::uint64_t window_addr, unsigned width);
  // Posted: returns once queued; only address errors are reported here (remote failures of a
  // posted write are counted by the target).
  // Waits for room when kMaxPostedRequests stores are queued already.
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
  struct Parts;  // what the device runs on, made before it starts
  struct Impl;
  static Parts open_parts(const GpuDeviceOptions& options);
  static Parts in_memory_parts(const TopologyConfig& topology, GpuId gpu,
                               std::unique_ptr<NodePort> port);
  GpuDevice(Parts&& parts, bool ready_when_told);
  DeviceResult submit_and_wait(const std::shared_ptr<DeviceRequest>& request);
  std::optional<DeviceResult> queue_store(std::uint64_t window_addr, unsigned width,
                                          std::uint64_t value, bool wait_for_room);
  void serve();
  void shut_down();
  // Engine owner only.
  void drive_while(const std::function<bool()>& busy, std::int64_t budget_ns);
  void hand_back(std::unique_lock<std::mutex>& engine);
  bool node_has_work(TimeNs now_ns);
  void run_engine_once();
  void advance_copy();
  void dispatch_completions();

  TopologyConfig topology_;
  GpuId self_;
  std::unique_ptr<Impl> impl_;
  std::span<std::byte> hbm_;
  std::thread service_;
};

}  // namespace ethx
