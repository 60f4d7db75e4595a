#include "qemu-device/host/gpu_device.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "fabric/config/fabric_names.hpp"
#include "fabric/node/node_port_factory.hpp"
#include "fabric/node/node_runtime.hpp"
#include "fabric/transport/shm/control_region.hpp"

namespace ethx {
namespace {

// Bounded so a vCPU storing faster than the fabric drains is slowed down, not the heap grown.
constexpr std::size_t kMaxQueuedRequests = 4096;
// Posted writes wait while this many frames are queued in front of a full port.
constexpr std::size_t kMaxBacklogFrames = 64;
constexpr std::uint32_t kCopyChunkBytes = 4096;
// Reads a copy keeps in flight: 32 x 4 KiB, as many as the host-process read benchmark keeps
// (ethx bench "reads, 4096 B, 32 outstanding"), which is what large copies are held against.
constexpr std::size_t kCopyReadsInFlight = 32;
constexpr std::int64_t kIdleWaitNs = 50'000'000;
// A guest's MMIO stores reach the device one by one (each a trap, ~0.5 µs under TCG): hold a
// frame of posted writes this long so consecutive stores share it (unless the config sets
// fabric.write_combine_ns). A load or flush sends it at once.
constexpr TimeNs kDeviceWriteCombineNs = 2'000;
// Spin this long before yielding, like the shared-memory waiters (fabric/transport/doorbell.hpp):
// the switch and the peer that answer may need this very core.
constexpr std::int64_t kDriveSpinNs = 2'000;
// While vCPUs drive the engine (one did within kVcpuActiveNs, or one holds it now), the service
// thread naps in slices of kServiceNapNs instead of watching the port: otherwise every response
// a vCPU waits for would also wake the service thread, and on these machines (a nested VM) a
// cross-core wake-up costs the waker microseconds, on the load's path. Queued stores and copies
// end a nap at once (interrupt()); remote requests that arrive meanwhile are served by the
// next driving vCPU or at the end of the slice. A slice of 50 µs instead of 500 µs cost
// ~25 % in load latency: its timer interrupts land on the cores the load's path runs on.
constexpr std::int64_t kVcpuActiveNs = 200'000;
constexpr std::int64_t kServiceNapNs = 500'000;

DeviceStatus from_wire(wire::Status status) {
  switch (status) {
    case wire::Status::kOk:
      return DeviceStatus::kOk;
    case wire::Status::kTimeout:
      return DeviceStatus::kTimeout;
    case wire::Status::kUnreachable:
      return DeviceStatus::kUnreachable;
    case wire::Status::kNoRights:
      return DeviceStatus::kNoRights;
    default:
      return DeviceStatus::kRemoteError;
  }
}

bool valid_width(unsigned width) {
  return width == 1 || width == 2 || width == 4 || width == 8;
}

std::uint64_t read_le(const std::byte* bytes, unsigned width) {
  std::uint64_t value = 0;
  std::memcpy(&value, bytes, width);  // x86-64 and the wire are both little-endian
  return value;
}

}  // namespace

const char* to_string(DeviceStatus status) {
  switch (status) {
    case DeviceStatus::kOk:
      return "ok";
    case DeviceStatus::kOutOfWindow:
      return "out of window";
    case DeviceStatus::kNoRights:
      return "no rights";
    case DeviceStatus::kTimeout:
      return "timeout";
    case DeviceStatus::kRemoteError:
      return "remote error";
    case DeviceStatus::kBadWidth:
      return "bad width";
    case DeviceStatus::kUnreachable:
      return "unreachable";
  }
  return "unknown";
}

struct GpuDevice::Request {
  using Kind = RequestKind;
  Kind kind = Kind::kLoad;
  std::uint64_t window_addr = 0;
  unsigned width = 0;
  std::uint64_t value = 0;
  std::uint64_t compare = 0;
  AtomicOp op = AtomicOp::kFetchAdd;
  GpuId dst = 0;
  std::uint64_t remote = 0;
  std::size_t flushes_left = 0;
  DeviceResult result;
  std::atomic<std::uint32_t> done{0};
};

struct GpuDevice::CopyJob {
  std::uint64_t src = 0;
  std::uint64_t dst = 0;
  std::uint64_t bytes = 0;
  std::uint64_t issued = 0;  // bytes whose read was issued (or served locally)
  std::size_t reads_in_flight = 0;
  std::size_t flushes_left = 0;
  bool flushing = false;
  std::vector<GpuId> written_gpus;
  DeviceResult result;
  CopyDone done;
};

struct GpuDevice::Impl {
  // What an outstanding engine operation belongs to.
  struct Target {
    enum class Kind { kRequest, kCopyRead, kCopyFlush };
    Kind kind = Kind::kRequest;
    std::shared_ptr<Request> request;   // kRequest
    std::uint64_t dst_window_addr = 0;  // kCopyRead: where the data goes
  };

  std::optional<ControlRegion> control;  // the launcher's mailboxes: where "ready" is reported
  std::unique_ptr<NodePort> port;
  std::unique_ptr<NodeRuntime> node;
  AddressMap callers_map;  // read-only copy the submitting threads translate with

  // Whoever holds `engine` owns the node (its engine, its port except interrupt() and
  // wait_unowned()) and everything marked "engine owner only": the service thread while it
  // works, or a vCPU driving its own load. Never held across a sleep, so lock() is short.
  std::mutex engine;
  // Until when the service thread sleeps (ns, monotonic): a driving vCPU that leaves an earlier
  // timer behind wakes it.
  std::atomic<TimeNs> service_wake_ns{0};
  // When a vCPU last handed the engine back with nothing left to do; 0 when it left work
  // behind (it gave up driving: the service thread must watch the port for it, not nap).
  std::atomic<TimeNs> last_drive_end_ns{0};
  // Set by a caller that hands back work: ends the service thread's nap (interrupt() alone
  // only rings the doorbell; a nap goes back to sleep unless its condition holds).
  std::atomic<bool> service_kicked{false};

  std::mutex mutex;
  std::condition_variable space;
  std::deque<std::shared_ptr<Request>> incoming;  // guarded by mutex
  std::atomic<bool> has_incoming{false};
  std::atomic<bool> stop{false};

  // Engine owner only.
  std::deque<std::shared_ptr<Request>> pending;
  std::unordered_map<OpId, Target> in_flight;
  std::optional<CopyJob> copy;
  std::vector<bool> written_since_flush;  // by GPU: posted writes a flush_all must cover
  // By GPU: flush_all flushes sent and not answered yet. A flush_all must wait for the writes
  // an earlier, still unanswered flush covers too, so it flushes such a GPU again (behind
  // those writes on the in-order path, its answer implies theirs) instead of skipping it.
  std::vector<std::uint32_t> flushes_in_flight;

  std::atomic<bool> copy_busy{false};
  std::mutex copy_mutex;
  std::optional<CopyJob> copy_incoming;  // guarded by copy_mutex

  std::atomic<std::uint64_t> loads{0}, stores{0}, atomics{0}, errors{0}, timeouts{0}, served{0},
      copies{0}, copy_bytes{0}, copy_drives{0}, frames_sent{0};
};

GpuDevice::GpuDevice(const GpuDeviceOptions& options)
    : topology_([&] {
        TopologyConfig topology = load_topology(options.config_path, options.gpus);
        if (topology.write_combine_ns == 0) topology.write_combine_ns = kDeviceWriteCombineNs;
        return topology;
      }()),
      self_(options.gpu),
      hbm_([&] {
        if (options.gpu >= topology_.gpu_count) {
          throw ConfigError("gpu-id " + std::to_string(options.gpu) + " is not below the " +
                            std::to_string(topology_.gpu_count) + " GPUs of the fabric");
        }
        return shm::SharedMemoryFile::create(hbm_file_name(options.fabric, options.gpu),
                                             topology_.hbm_bytes);
      }()),
      impl_(std::make_unique<Impl>()) {
  impl_->callers_map = topology_.address_map();
  NodePortOptions port_options;
  port_options.fabric = options.fabric;
  port_options.transport = options.transport;
  port_options.netns_tag = options.netns_tag;
  port_options.interface = options.interface;
  if (!options.netns.empty()) port_options.netns = options.netns;
  port_options.program = "ethx-gpu " + std::to_string(options.gpu);
  impl_->port = open_node_port(topology_, self_, port_options);
  impl_->node = std::make_unique<NodeRuntime>(topology_, self_, hbm(), *impl_->port);
  impl_->written_since_flush.assign(topology_.gpu_count, false);
  impl_->flushes_in_flight.assign(topology_.gpu_count, 0);
  // Everything that can throw comes before the service thread starts: an exception with a
  // joinable std::thread alive would end in std::terminate (an abort of QEMU) instead of the
  // clean error the C API reports.
  if (shm::SharedMemoryFile::exists(control_region_name(options.fabric))) {
    impl_->control.emplace(ControlRegion::attach(control_region_name(options.fabric)));
    if (self_ < impl_->control->node_count()) {
      impl_->node->publish_peer_health_to(impl_->control->node(self_).peer_health);
    }
  }
  service_ = std::thread([this] { serve(); });
  // Tell whoever started the fabric (`ethx up --vms`) that this GPU serves now, as ethx-node
  // does. Mailbox commands are not served: a VM's GPUs are driven from inside the guest.
  if (impl_->control && self_ < impl_->control->node_count()) {
    impl_->control->node(self_).pid.store(::getpid());
  }
  if (!options.ready_when_told) report_ready();
}

void GpuDevice::report_ready() {
  if (!impl_->control || self_ >= impl_->control->node_count()) return;
  impl_->control->node(self_).state.store(static_cast<std::uint32_t>(NodeState::kReady));
  shm::ring(impl_->control->header().coordinator_bell);
}

GpuDevice::~GpuDevice() {
  if (impl_->control && self_ < impl_->control->node_count()) {
    impl_->control->node(self_).state.store(static_cast<std::uint32_t>(NodeState::kExited));
  }
  impl_->stop.store(true);
  impl_->port->interrupt();
  if (service_.joinable()) service_.join();
}

std::uint64_t GpuDevice::window_bytes() const {
  return impl_->callers_map.bar_bytes();
}

bool GpuDevice::translate_one(std::uint64_t window_addr, unsigned width, Access access, GpuId& dst,
                              std::uint64_t& remote, DeviceResult& error) const {
  // Every MMIO access translates: reuse this thread's segment buffer instead of allocating.
  thread_local std::vector<Segment> segments;
  segments.clear();
  const TranslateResult result = impl_->callers_map.translate(window_addr, width, access, segments);
  if (!result.ok()) {
    error.status = result.error == TranslateError::kNoRights ? DeviceStatus::kNoRights
                                                             : DeviceStatus::kOutOfWindow;
    error.fault_addr = result.fault_addr;
    return false;
  }
  if (segments.size() != 1) {  // an access straddling two windows: no single target
    error.status = DeviceStatus::kOutOfWindow;
    error.fault_addr = segments.at(1).window_addr;
    return false;
  }
  dst = segments[0].dst_gpu;
  remote = segments[0].remote_addr;
  return true;
}

bool GpuDevice::enqueue(std::shared_ptr<Request> request, bool wait_for_room) {
  {
    std::unique_lock lock(impl_->mutex);
    const auto room = [this] {
      return impl_->incoming.size() < kMaxQueuedRequests || impl_->stop.load();
    };
    if (!wait_for_room && !room()) return false;
    impl_->space.wait(lock, room);
    impl_->incoming.push_back(std::move(request));
    // Already set: the requests queued since the engine's owner last took them have already
    // woken it (or a driving vCPU takes them); an interrupt per store would cost a system call
    // per MMIO store.
    if (impl_->has_incoming.exchange(true)) return true;
  }
  impl_->port->interrupt();
  return true;
}

// The waiting vCPU drives the engine itself instead of handing the request to the service
// thread and being woken by it: that saves two thread hand-overs (each a scheduler round trip
// on these 2-core machines) per load. Everything queued before the request is issued first, in
// order, so a load still never passes the same vCPU's posted stores.
DeviceResult GpuDevice::submit_and_wait(const std::shared_ptr<Request>& request) {
  {
    std::unique_lock engine(impl_->engine);
    take_incoming();
    impl_->pending.push_back(request);
    run_engine_once();
    drive_while([&] { return request->done.load(std::memory_order_acquire) == 0; });
    // A device going away answers nothing more (its service thread may already have finished
    // what was pending).
    if (impl_->stop.load() && request->done.load() == 0) {
      finish_request(*request, DeviceStatus::kUnreachable, 0, request->window_addr);
    }
    hand_back(engine);
  }
  request->done.wait(0);
  return request->result;
}

// The copy engine driven by the thread that polls it (QEMU: a vCPU reading COPY_STATUS, with
// the big lock dropped), as loads are: no hand-over to the service thread, which may be in a
// nap because vCPUs were busy. Returns whether the copy is still running.
bool GpuDevice::drive_copy(std::int64_t budget_ns) {
  if (!impl_->copy_busy.load()) return false;
  std::unique_lock engine(impl_->engine);
  ++impl_->copy_drives;
  run_engine_once();
  drive_while([&] { return impl_->copy_busy.load(); }, budget_ns);
  hand_back(engine);
  return impl_->copy_busy.load();
}

// Engine owner only: pumps the port and runs engine rounds while `busy()` holds, at most
// `budget_ns` (spinning briefly, then yielding: the switch and the peer that answer may need
// this very core).
void GpuDevice::drive_while(const std::function<bool()>& busy, std::int64_t budget_ns) {
  NodeRuntime& node = *impl_->node;
  NodePort& port = *impl_->port;
  const TimeNs start_ns = monotonic_now_ns();
  while (busy()) {
    const TimeNs now_ns = monotonic_now_ns();
    if (impl_->stop.load() || now_ns >= start_ns + static_cast<TimeNs>(budget_ns)) break;
    // Look at the port and the clock cheaply; run a round only when there is something to do
    // (a round that finds nothing still costs a system call on AF_XDP).
    const std::optional<TimeNs> wake_ns = node.next_wake_ns();
    if (port.has_input() || impl_->has_incoming.load() || (wake_ns && now_ns >= *wake_ns) ||
        (node.backlog_frames() > 0 && port.can_send())) {
      node.pump(0);
      run_engine_once();
    } else if (now_ns < start_ns + kDriveSpinNs) {
      shm::detail::cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

// Hands the engine back after a caller drove it: wakes the service thread if work or a timer
// it does not know of is left.
void GpuDevice::hand_back(std::unique_lock<std::mutex>& engine) {
  NodeRuntime& node = *impl_->node;
  const std::optional<TimeNs> wake_ns = node.next_wake_ns();
  const bool work_left = !impl_->pending.empty() || !impl_->in_flight.empty() ||
                         impl_->copy.has_value() || node.backlog_frames() > 0;
  impl_->last_drive_end_ns.store(work_left ? 0 : monotonic_now_ns());
  if (work_left) impl_->service_kicked.store(true);
  engine.unlock();
  if (work_left || (wake_ns && *wake_ns < impl_->service_wake_ns.load())) impl_->port->interrupt();
}

std::shared_ptr<GpuDevice::Request> GpuDevice::prepare(RequestKind kind, std::uint64_t window_addr,
                                                       unsigned width, DeviceResult& error) {
  error.fault_addr = window_addr;
  error.value = ~std::uint64_t{0};  // what a failed load reads, as on real PCIe
  auto request = std::make_shared<Request>();
  const bool width_ok =
      kind == Request::Kind::kAtomic ? width == 4 || width == 8 : valid_width(width);
  const Access access = kind == Request::Kind::kLoad    ? Access::kRead
                        : kind == Request::Kind::kStore ? Access::kWrite
                                                        : Access::kAtomic;
  if (!width_ok) {
    error.status = DeviceStatus::kBadWidth;
  } else if (translate_one(window_addr, width, access, request->dst, request->remote, error)) {
    request->kind = kind;
    request->window_addr = window_addr;
    request->width = width;
    return request;
  }
  ++impl_->errors;
  return nullptr;
}

DeviceResult GpuDevice::load(std::uint64_t window_addr, unsigned width) {
  ++impl_->loads;
  DeviceResult error;
  auto request = prepare(Request::Kind::kLoad, window_addr, width, error);
  return request ? submit_and_wait(request) : error;
}

DeviceResult GpuDevice::store(std::uint64_t window_addr, unsigned width, std::uint64_t value) {
  return *queue_store(window_addr, width, value, true);
}

std::optional<DeviceResult> GpuDevice::try_store(std::uint64_t window_addr, unsigned width,
                                                 std::uint64_t value) {
  return queue_store(window_addr, width, value, false);
}

std::optional<DeviceResult> GpuDevice::queue_store(std::uint64_t window_addr, unsigned width,
                                                   std::uint64_t value, bool wait_for_room) {
  DeviceResult error;
  auto request = prepare(Request::Kind::kStore, window_addr, width, error);
  if (!request) {
    ++impl_->stores;
    return error;
  }
  request->value = value;
  if (!enqueue(std::move(request), wait_for_room)) return std::nullopt;
  ++impl_->stores;
  return DeviceResult{};
}

DeviceResult GpuDevice::atomic(AtomicOp op, std::uint64_t window_addr, unsigned width,
                               std::uint64_t operand, std::uint64_t compare) {
  ++impl_->atomics;
  DeviceResult error;
  auto request = prepare(Request::Kind::kAtomic, window_addr, width, error);
  if (!request) return error;
  request->op = op;
  request->value = operand;
  request->compare = compare;
  return submit_and_wait(request);
}

DeviceResult GpuDevice::flush_all() {
  auto request = std::make_shared<Request>();
  request->kind = Request::Kind::kFlushAll;
  return submit_and_wait(request);
}

bool GpuDevice::start_copy(std::uint64_t src, std::uint64_t dst, std::uint64_t bytes, CopyDone done,
                           CopyStart how) {
  bool expected = false;
  if (!impl_->copy_busy.compare_exchange_strong(expected, true)) return false;
  {
    std::lock_guard lock(impl_->copy_mutex);
    CopyJob job;
    job.src = src;
    job.dst = dst;
    job.bytes = bytes;
    job.done = std::move(done);
    impl_->copy_incoming.emplace(std::move(job));
  }
  impl_->has_incoming.store(true);
  if (how == CopyStart::kWakeService) impl_->port->interrupt();
  return true;
}

GpuDeviceCounters GpuDevice::counters() const {
  GpuDeviceCounters c;
  c.loads = impl_->loads.load();
  c.stores = impl_->stores.load();
  c.atomics = impl_->atomics.load();
  c.errors = impl_->errors.load();
  c.timeouts = impl_->timeouts.load();
  c.served_requests = impl_->served.load();
  c.copies = impl_->copies.load();
  c.copy_bytes = impl_->copy_bytes.load();
  c.copy_drives = impl_->copy_drives.load();
  c.frames_sent = impl_->frames_sent.load();
  return c;
}

void GpuDevice::finish_request(Request& request, DeviceStatus status, std::uint64_t value,
                               std::uint64_t fault_addr) {
  request.result.status = status;
  request.result.value = status == DeviceStatus::kOk ? value : ~std::uint64_t{0};
  request.result.fault_addr = status == DeviceStatus::kOk ? 0 : fault_addr;
  if (status != DeviceStatus::kOk) ++impl_->errors;
  if (status == DeviceStatus::kTimeout) ++impl_->timeouts;
  request.done.store(1);
  request.done.notify_all();
}

// Requests for this GPU's own window never leave it (the switch would not send a frame back
// out of the port it came in on): served from the completer's mapping, on this thread.
void GpuDevice::issue_one(Request& request) {
  const std::span<std::byte> memory = hbm();
  const bool local = request.dst == self_;
  if (local && request.kind != Request::Kind::kFlushAll &&
      request.remote + request.width > memory.size()) {
    finish_request(request, DeviceStatus::kRemoteError, 0, request.window_addr);
    return;
  }
  switch (request.kind) {
    case Request::Kind::kStore: {
      if (local) {
        std::memcpy(memory.data() + request.remote, &request.value, request.width);
        return;
      }
      std::byte data[8];
      std::memcpy(data, &request.value, request.width);
      impl_->written_since_flush[request.dst] = true;
      impl_->node->endpoint().requester().write_posted(request.dst, request.remote,
                                                       std::span(data, request.width),
                                                       monotonic_now_ns(), impl_->node->effects());
      return;
    }
    case Request::Kind::kLoad: {
      if (local) {
        finish_request(request, DeviceStatus::kOk,
                       read_le(memory.data() + request.remote, request.width), 0);
        return;
      }
      // The shared_ptr in in_flight keeps the request alive until its completion.
      break;
    }
    case Request::Kind::kAtomic: {
      if (local) {
        if (request.remote % request.width != 0) {
          finish_request(request, DeviceStatus::kRemoteError, 0, request.window_addr);
          return;
        }
        std::uint64_t old = 0;
        auto apply = [&](auto& cell) {
          using T = std::remove_reference_t<decltype(cell.load())>;
          const auto operand = static_cast<T>(request.value);
          switch (request.op) {
            case AtomicOp::kFetchAdd:
              old = cell.fetch_add(operand);
              break;
            case AtomicOp::kSwap:
              old = cell.exchange(operand);
              break;
            case AtomicOp::kCompareSwap: {
              T expected = static_cast<T>(request.compare);
              cell.compare_exchange_strong(expected, operand);
              old = expected;
              break;
            }
          }
        };
        if (request.width == 8) {
          std::atomic_ref cell(*reinterpret_cast<std::uint64_t*>(memory.data() + request.remote));
          apply(cell);
        } else {
          std::atomic_ref cell(*reinterpret_cast<std::uint32_t*>(memory.data() + request.remote));
          apply(cell);
        }
        finish_request(request, DeviceStatus::kOk, old, 0);
        return;
      }
      break;
    }
    case Request::Kind::kFlushAll:
      break;
  }
}

void GpuDevice::issue_requests() {
  Requester& requester = impl_->node->endpoint().requester();
  NodeRuntime& node = *impl_->node;
  while (!impl_->pending.empty()) {
    std::shared_ptr<Request> request = impl_->pending.front();
    const bool remote = request->dst != self_ || request->kind == Request::Kind::kFlushAll;
    if (remote && request->kind == Request::Kind::kStore &&
        node.backlog_frames() > kMaxBacklogFrames) {
      return;  // the port is backed up: keep the rest in order for later
    }
    if (remote && request->kind != Request::Kind::kStore) {
      const std::size_t needed = request->kind == Request::Kind::kFlushAll
                                     ? topology_.gpu_count
                                     : requester.tags_needed(request->width);
      if (requester.free_tags() < needed) return;  // wait for completions to free tags
    }
    impl_->pending.pop_front();
    const TimeNs now = monotonic_now_ns();
    if (!remote) {
      issue_one(*request);
      continue;
    }
    switch (request->kind) {
      case Request::Kind::kStore:
        issue_one(*request);
        break;
      case Request::Kind::kLoad: {
        const OpId id =
            requester.read(request->dst, request->remote, request->width, now, node.effects());
        impl_->in_flight.emplace(id, Impl::Target{Impl::Target::Kind::kRequest, request, 0});
        break;
      }
      case Request::Kind::kAtomic: {
        const OpId id = requester.atomic(request->dst, request->remote, request->op,
                                         static_cast<std::uint8_t>(request->width), request->value,
                                         request->compare, now, node.effects());
        impl_->in_flight.emplace(id, Impl::Target{Impl::Target::Kind::kRequest, request, 0});
        break;
      }
      case Request::Kind::kFlushAll: {
        request->flushes_left = 0;
        for (std::size_t gpu = 0; gpu < topology_.gpu_count; ++gpu) {
          if (!impl_->written_since_flush[gpu] && impl_->flushes_in_flight[gpu] == 0) continue;
          impl_->written_since_flush[gpu] = false;
          ++impl_->flushes_in_flight[gpu];
          const OpId id = requester.flush(static_cast<GpuId>(gpu), now, node.effects());
          impl_->in_flight.emplace(id, Impl::Target{Impl::Target::Kind::kRequest, request, 0});
          ++request->flushes_left;
        }
        if (request->flushes_left == 0) finish_request(*request, DeviceStatus::kOk, 0, 0);
        break;
      }
    }
  }
}

void GpuDevice::advance_copy() {
  if (!impl_->copy) {
    std::lock_guard lock(impl_->copy_mutex);
    if (!impl_->copy_incoming) return;
    impl_->copy = std::move(impl_->copy_incoming);
    impl_->copy_incoming.reset();
  }
  CopyJob& job = *impl_->copy;
  Requester& requester = impl_->node->endpoint().requester();
  NodeRuntime& node = *impl_->node;
  const std::span<std::byte> memory = hbm();
  auto fail = [&](DeviceStatus status, std::uint64_t fault_addr) {
    if (job.result.status == DeviceStatus::kOk) {
      job.result.status = status;
      job.result.fault_addr = fault_addr;
    }
    job.issued = job.bytes;  // issue nothing more; what is in flight drains
  };
  auto write_out = [&](std::uint64_t dst_addr, std::span<const std::byte> data) {
    GpuId dst_gpu = 0;
    std::uint64_t remote = 0;
    DeviceResult error;
    if (!translate_one(dst_addr, static_cast<unsigned>(data.size()), Access::kWrite, dst_gpu,
                       remote, error)) {
      fail(error.status, error.fault_addr);
      return;
    }
    if (dst_gpu == self_) {
      if (remote + data.size() > memory.size()) {
        fail(DeviceStatus::kRemoteError, dst_addr);
        return;
      }
      std::memcpy(memory.data() + remote, data.data(), data.size());
    } else {
      requester.write_posted(dst_gpu, remote, data, monotonic_now_ns(), node.effects());
      if (std::find(job.written_gpus.begin(), job.written_gpus.end(), dst_gpu) ==
          job.written_gpus.end()) {
        job.written_gpus.push_back(dst_gpu);
      }
    }
    impl_->copy_bytes += data.size();
  };

  while (job.issued < job.bytes && job.reads_in_flight < kCopyReadsInFlight &&
         node.backlog_frames() <= kMaxBacklogFrames) {
    const std::uint64_t offset = job.issued;
    std::uint64_t length = std::min<std::uint64_t>(kCopyChunkBytes, job.bytes - offset);
    // Chunks never straddle a window edge on either side.
    const std::uint64_t aperture = topology_.aperture_bytes;
    length = std::min(length, aperture - (job.src + offset) % aperture);
    length = std::min(length, aperture - (job.dst + offset) % aperture);
    GpuId src_gpu = 0;
    std::uint64_t remote = 0;
    DeviceResult error;
    if (!translate_one(job.src + offset, static_cast<unsigned>(length), Access::kRead, src_gpu,
                       remote, error)) {
      fail(error.status, error.fault_addr);
      break;
    }
    if (src_gpu == self_) {
      if (remote + length > memory.size()) {
        fail(DeviceStatus::kRemoteError, job.src + offset);
        break;
      }
      job.issued += length;
      write_out(job.dst + offset, memory.subspan(remote, length));
      continue;
    }
    if (requester.free_tags() < requester.tags_needed(length)) break;
    const OpId id = requester.read(src_gpu, remote, static_cast<std::uint32_t>(length),
                                   monotonic_now_ns(), node.effects());
    impl_->in_flight.emplace(
        id, Impl::Target{Impl::Target::Kind::kCopyRead, nullptr, job.dst + offset});
    ++job.reads_in_flight;
    job.issued += length;
  }
  if (job.issued >= job.bytes && job.reads_in_flight == 0 && !job.flushing) {
    job.flushing = true;
    // Visible everywhere before completion: a flush per GPU written to.
    for (GpuId gpu : job.written_gpus) {
      const OpId id = requester.flush(gpu, monotonic_now_ns(), node.effects());
      impl_->in_flight.emplace(id, Impl::Target{Impl::Target::Kind::kCopyFlush, nullptr, 0});
      ++job.flushes_left;
    }
  }
  if (job.flushing && job.flushes_left == 0) {
    ++impl_->copies;
    CopyJob finished = std::move(job);
    impl_->copy.reset();
    impl_->copy_busy.store(false);
    if (finished.result.status != DeviceStatus::kOk) ++impl_->errors;
    // CNT_TIMEOUTS counts a copy that timed out as it counts a load that did.
    if (finished.result.status == DeviceStatus::kTimeout) ++impl_->timeouts;
    if (finished.done) finished.done(finished.result);
  }
}

void GpuDevice::dispatch_completions() {
  Requester& requester = impl_->node->endpoint().requester();
  while (std::optional<Completion> completion = requester.take_completion()) {
    const auto found = impl_->in_flight.find(completion->id);
    if (found == impl_->in_flight.end()) continue;  // not ours (cannot happen; be safe)
    Impl::Target target = std::move(found->second);
    impl_->in_flight.erase(found);
    const DeviceStatus status = from_wire(completion->status);
    if (target.kind == Impl::Target::Kind::kRequest) {
      Request& r = *target.request;
      if (r.kind == Request::Kind::kFlushAll) {
        finish_flush(r, *completion, status);
        continue;
      }
      std::uint64_t value = r.kind == Request::Kind::kAtomic ? completion->old_value : 0;
      if (r.kind == Request::Kind::kLoad && status == DeviceStatus::kOk) {
        value =
            read_le(completion->data.data(),
                    static_cast<unsigned>(std::min<std::size_t>(r.width, completion->data.size())));
      }
      finish_request(r, status, value, r.window_addr);
    } else if (target.kind == Impl::Target::Kind::kCopyRead) {
      const Impl::Target* read = &target;
      CopyJob& job = *impl_->copy;
      --job.reads_in_flight;
      if (status != DeviceStatus::kOk) {
        if (job.result.status == DeviceStatus::kOk) {
          job.result.status = status;
          job.result.fault_addr = job.src + (read->dst_window_addr - job.dst);
        }
        job.issued = job.bytes;
        continue;
      }
      if (job.result.status != DeviceStatus::kOk) continue;
      GpuId dst_gpu = 0;
      std::uint64_t remote = 0;
      DeviceResult error;
      const auto length = static_cast<unsigned>(completion->data.size());
      if (!translate_one(read->dst_window_addr, length, Access::kWrite, dst_gpu, remote, error)) {
        job.result = error;
        job.issued = job.bytes;
        continue;
      }
      if (dst_gpu == self_) {
        if (remote + length <= hbm().size()) {
          std::memcpy(hbm().data() + remote, completion->data.data(), length);
        } else {
          job.result.status = DeviceStatus::kRemoteError;
          job.result.fault_addr = read->dst_window_addr;
        }
      } else {
        requester.write_posted(dst_gpu, remote, completion->data, monotonic_now_ns(),
                               impl_->node->effects());
        if (std::find(job.written_gpus.begin(), job.written_gpus.end(), dst_gpu) ==
            job.written_gpus.end()) {
          job.written_gpus.push_back(dst_gpu);
        }
      }
      impl_->copy_bytes += length;
    } else {
      CopyJob& job = *impl_->copy;
      --job.flushes_left;
      // A failed flush names the GPU that did not answer, as flush_all's does.
      if (status != DeviceStatus::kOk && job.result.status == DeviceStatus::kOk) {
        job.result.status = status;
        job.result.fault_addr = std::uint64_t{completion->dst_gpu} * topology_.aperture_bytes;
      }
    }
  }
}

// One GPU's answer to a flush_all. A failure names that GPU by the window address of its
// memory (GPU g at g x aperture), the first failing GPU's.
void GpuDevice::finish_flush(Request& request, const Completion& completion, DeviceStatus status) {
  const GpuId gpu = completion.dst_gpu;
  if (gpu < impl_->flushes_in_flight.size()) --impl_->flushes_in_flight[gpu];
  if (status != DeviceStatus::kOk && request.result.status == DeviceStatus::kOk) {
    request.result.status = status;
    request.result.fault_addr = std::uint64_t{gpu} * topology_.aperture_bytes;
  }
  if (--request.flushes_left == 0) {
    finish_request(request, request.result.status, 0, request.result.fault_addr);
  }
}

void GpuDevice::take_incoming() {
  if (!impl_->has_incoming.exchange(false)) return;
  std::lock_guard lock(impl_->mutex);
  for (auto& request : impl_->incoming) impl_->pending.push_back(std::move(request));
  impl_->incoming.clear();
  impl_->space.notify_all();
}

void GpuDevice::run_engine_once() {
  NodeRuntime& node = *impl_->node;
  take_incoming();
  issue_requests();
  advance_copy();
  node.transmit();
  dispatch_completions();
  advance_copy();  // completions may have finished the copy's reads or flushes
  node.transmit();
  const CompleterCounters& served = node.endpoint().completer().counters();
  impl_->served.store(served.reads + served.writes + served.atomics + served.flushes);
  impl_->frames_sent.store(node.counters().frames_sent);
}

void GpuDevice::serve() {
  NodeRuntime& node = *impl_->node;
  NodePort& port = *impl_->port;
  Requester& requester = node.endpoint().requester();
  // Work for the engine owner: evaluated only with the engine; if a vCPU has it, the answer is
  // "look again" (the loop below then naps until the vCPU is done).
  const auto ready = [&] {
    if (impl_->stop.load() || impl_->has_incoming.load()) return true;
    std::unique_lock engine(impl_->engine, std::try_to_lock);
    if (!engine) return true;
    return port.has_input() || requester.has_completion() ||
           (node.backlog_frames() > 0 && port.can_send());
  };
  const auto interrupted = [&] {
    return impl_->stop.load() || impl_->has_incoming.load() || impl_->service_kicked.load();
  };
  // Never blocks on the engine lock either: a vCPU handing the engine back would have to wake
  // this thread (a system call and a cross-core wake-up on the load's path).
  std::unique_lock engine(impl_->engine, std::defer_lock);
  while (!impl_->stop.load()) {
    impl_->service_kicked.store(false);  // whatever a kick asked for, this round looks at
    if (!engine.try_lock()) {
      port.nap(kServiceNapNs, interrupted);
      continue;
    }
    node.pump(0);
    run_engine_once();
    std::int64_t wait_ns = kIdleWaitNs;
    const TimeNs now_ns = monotonic_now_ns();
    if (const std::optional<TimeNs> wake_ns = node.next_wake_ns()) {
      wait_ns =
          std::clamp<std::int64_t>(static_cast<std::int64_t>(*wake_ns - now_ns), 0, kIdleWaitNs);
    }
    // A running copy is the service thread's own work (its responses wake nobody else when the
    // guest waits for the MSI instead of polling): watch the port for it, never nap blind. So is
    // work a vCPU handed back unfinished (last_drive_end_ns 0): it sleeps until it is done.
    const bool vcpus_active =
        static_cast<std::int64_t>(now_ns - impl_->last_drive_end_ns.load()) < kVcpuActiveNs &&
        !impl_->copy.has_value();
    if (vcpus_active) wait_ns = std::min(wait_ns, kServiceNapNs);
    impl_->service_wake_ns.store(now_ns + static_cast<TimeNs>(wait_ns));
    engine.unlock();
    if (wait_ns > 0 && vcpus_active) {
      port.nap(wait_ns, interrupted);
    } else if (wait_ns > 0) {
      port.wait_unowned(wait_ns, ready);
    }
  }
  engine.lock();
  // Nobody may wait forever on a device that is going away.
  std::lock_guard lock(impl_->mutex);
  for (auto& request : impl_->incoming) impl_->pending.push_back(std::move(request));
  impl_->incoming.clear();
  for (auto& request : impl_->pending) {
    if (request->kind != Request::Kind::kStore && request->done.load() == 0) {
      finish_request(*request, DeviceStatus::kUnreachable, 0, request->window_addr);
    }
  }
  for (auto& [id, target] : impl_->in_flight) {
    if (target.request && target.request->done.load() == 0) {
      finish_request(*target.request, DeviceStatus::kUnreachable, 0, target.request->window_addr);
    }
  }
  impl_->space.notify_all();
}

}  // namespace ethx
