#include "qemu-device/host/gpu_device.hpp"

#include <unistd.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <utility>

#include "fabric/config/fabric_names.hpp"
#include "fabric/node/node_port_factory.hpp"
#include "fabric/node/node_runtime.hpp"
#include "fabric/platform/shm_file.hpp"
#include "fabric/transport/shm/control_region.hpp"
#include "qemu-device/host/copy_engine.hpp"
#include "qemu-device/host/engine_owner.hpp"
#include "qemu-device/host/node_requests.hpp"
#include "qemu-device/host/request_table.hpp"

namespace ethx {
namespace {

// Posted writes wait while this many frames are queued in front of a full port.
constexpr std::size_t kMaxBacklogFrames = 64;
// A guest's MMIO stores reach the device one by one (each a trap, ~0.5 µs under TCG): hold a
// frame of posted writes this long so consecutive stores share it (unless the config sets
// fabric.write_combine_ns). A load or flush sends it at once.
constexpr TimeNs kDeviceWriteCombineNs = 2'000;

TopologyConfig device_topology(TopologyConfig topology) {
  if (topology.write_combine_ns == 0) topology.write_combine_ns = kDeviceWriteCombineNs;
  return topology;
}

void check_gpu(const TopologyConfig& topology, GpuId gpu) {
  if (gpu >= topology.gpu_count) {
    throw ConfigError("gpu-id " + std::to_string(gpu) + " is not below the " +
                      std::to_string(topology.gpu_count) + " GPUs of the fabric");
  }
}

}  // namespace

// The GPU's memory: a shared-memory file (QEMU maps it again for the HBM BAR) or anonymous.
struct Hbm {
  std::optional<shm::SharedMemoryFile> file;
  std::unique_ptr<std::byte[]> anonymous;
  std::span<std::byte> bytes;
};

// What a device runs on, made before it starts: everything that can fail is here.
struct GpuDevice::Parts {
  TopologyConfig topology;
  GpuId self = 0;
  Hbm hbm;
  std::unique_ptr<NodePort> port;
  std::optional<ControlRegion> control;  // the launcher's mailboxes: where "ready" is reported
};

GpuDevice::Parts GpuDevice::open_parts(const GpuDeviceOptions& options) {
  GpuDevice::Parts parts;
  parts.topology = device_topology(load_topology(options.config_path, options.gpus));
  parts.self = options.gpu;
  check_gpu(parts.topology, parts.self);
  Hbm& hbm = parts.hbm;
  hbm.file.emplace(shm::SharedMemoryFile::create(hbm_file_name(options.fabric, options.gpu),
                                                 parts.topology.hbm_bytes));
  hbm.bytes = {hbm.file->data(), hbm.file->size_bytes()};
  NodePortOptions port_options;
  port_options.fabric = options.fabric;
  port_options.transport = options.transport;
  port_options.netns_tag = options.netns_tag;
  port_options.interface = options.interface;
  if (!options.netns.empty()) port_options.netns = options.netns;
  port_options.program = "ethx-gpu " + std::to_string(options.gpu);
  parts.port = open_node_port(parts.topology, parts.self, port_options);
  if (shm::SharedMemoryFile::exists(control_region_name(options.fabric))) {
    parts.control.emplace(ControlRegion::attach(control_region_name(options.fabric)));
  }
  return parts;
}

GpuDevice::Parts GpuDevice::in_memory_parts(const TopologyConfig& topology, GpuId gpu,
                                            std::unique_ptr<NodePort> port) {
  GpuDevice::Parts parts;
  parts.topology = device_topology(topology);
  parts.self = gpu;
  check_gpu(parts.topology, parts.self);
  // Zeroed, like a new shared-memory file; new[] aligns it for the 8-byte atomics.
  parts.hbm.anonymous = std::make_unique<std::byte[]>(parts.topology.hbm_bytes);
  parts.hbm.bytes = {parts.hbm.anonymous.get(), parts.topology.hbm_bytes};
  parts.port = std::move(port);
  return parts;
}

// A copy started on any thread, waiting for the engine's owner to take it.
struct StartedCopy {
  std::uint64_t src = 0;
  std::uint64_t dst = 0;
  std::uint64_t bytes = 0;
  GpuDevice::CopyDone done;
};

struct GpuDevice::Impl {
  Impl(Parts&& parts, const TopologyConfig& topology);

  Hbm hbm;
  std::optional<ControlRegion> control;
  std::unique_ptr<NodePort> port;
  NodeRuntime node;
  RuntimeRequests node_requests{node};
  AddressMap callers_map;  // read-only: the submitting threads and the copy translate with it
  FailureCounters failures;
  EngineOwner owner;

  // Engine owner only (EngineOwner's lock held).
  RequestTable requests;
  CopyEngine copy;
  GpuDevice::CopyDone copy_done;  // the running copy's

  std::atomic<bool> copy_busy{false};
  std::mutex copy_mutex;
  std::optional<StartedCopy> copy_incoming;  // guarded by copy_mutex

  std::atomic<std::uint64_t> loads{0}, stores{0}, atomics{0}, served{0}, copies{0}, copy_bytes{0},
      copy_drives{0}, frames_sent{0};
};

GpuDevice::Impl::Impl(Parts&& parts, const TopologyConfig& topology)
    : hbm(std::move(parts.hbm)),
      control(std::move(parts.control)),
      port(std::move(parts.port)),
      node(topology, parts.self, hbm.bytes, *port),
      callers_map(topology.address_map()),
      owner([interrupt = port.get()] { interrupt->interrupt(); }),
      requests({parts.self, topology.gpu_count, topology.aperture_bytes, kMaxBacklogFrames},
               hbm.bytes, failures),
      copy(callers_map, parts.self, hbm.bytes,
           CopyLimits{.aperture_bytes = topology.aperture_bytes,
                      .max_backlog_frames = kMaxBacklogFrames}) {}

GpuDevice::GpuDevice(const GpuDeviceOptions& options)
    : GpuDevice(open_parts(options), options.ready_when_told) {}

GpuDevice::GpuDevice(const TopologyConfig& topology, GpuId gpu, std::unique_ptr<NodePort> port)
    : GpuDevice(in_memory_parts(topology, gpu, std::move(port)), false) {}

GpuDevice::GpuDevice(Parts&& parts, bool ready_when_told)
    : topology_(std::move(parts.topology)),
      self_(parts.self),
      impl_(std::make_unique<Impl>(std::move(parts), topology_)),
      hbm_(impl_->hbm.bytes) {
  ControlRegion* control = impl_->control ? &*impl_->control : nullptr;
  if (control != nullptr && self_ < control->node_count()) {
    impl_->node.publish_peer_health_to(control->node(self_).peer_health);
  }
  // Everything that can throw comes before the service thread starts: an exception with a
  // joinable std::thread alive would end in std::terminate (an abort of QEMU) instead of the
  // clean error the C API reports.
  service_ = std::thread([this] { serve(); });
  // Tell whoever started the fabric (`ethx up --vms`) that this GPU serves now, as ethx-node
  // does. Mailbox commands are not served: a VM's GPUs are driven from inside the guest.
  if (control != nullptr && self_ < control->node_count()) {
    control->node(self_).pid.store(::getpid());
  }
  if (!ready_when_told) report_ready();
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
  impl_->owner.stop();
  if (service_.joinable()) service_.join();
}

const std::string& GpuDevice::hbm_name() const {
  static const std::string kAnonymous;
  return impl_->hbm.file ? impl_->hbm.file->name() : kAnonymous;
}

std::uint64_t GpuDevice::window_bytes() const {
  return impl_->callers_map.bar_bytes();
}

// The waiting vCPU drives the engine itself instead of handing the request to the service
// thread and being woken by it: that saves two thread hand-overs (each a scheduler round trip
// on these 2-core machines) per load. EngineOwner::drive queues everything posted before the
// request first, in order, so a load still never passes the same vCPU's posted stores.
DeviceResult GpuDevice::submit_and_wait(const std::shared_ptr<DeviceRequest>& request) {
  {
    std::unique_lock engine = impl_->owner.drive(request, impl_->requests.queue());
    run_engine_once();
    drive_while([&] { return !request->finished(); }, kDriveBudgetNs);
    // A device going away answers nothing more (its service thread may already have finished
    // what was pending).
    if (impl_->owner.stopping() && !request->finished()) {
      finish_request(*request, DeviceStatus::kUnreachable, 0, request->window_addr,
                     impl_->failures);
    }
    hand_back(engine);
  }
  return request->wait();
}

// The copy engine driven by the thread that polls it (QEMU: a vCPU reading COPY_STATUS, with
// the big lock dropped), as loads are: no hand-over to the service thread, which may be in a
// nap because vCPUs were busy. Returns whether the copy is still running.
bool GpuDevice::drive_copy(std::int64_t budget_ns) {
  if (!impl_->copy_busy.load()) return false;
  std::unique_lock engine = impl_->owner.take();
  ++impl_->copy_drives;
  run_engine_once();
  drive_while([&] { return impl_->copy_busy.load(); }, budget_ns);
  hand_back(engine);
  return impl_->copy_busy.load();
}

// Engine owner only: pumps the port and runs engine rounds while `busy()` holds, at most
// `budget_ns`.
void GpuDevice::drive_while(const std::function<bool()>& busy, std::int64_t budget_ns) {
  impl_->owner.drive_while(
      busy, [this](TimeNs now_ns) { return node_has_work(now_ns); },
      [this] {
        impl_->node.pump(0);
        run_engine_once();
      },
      budget_ns);
}

// Whether a round would find something: a frame, a timer due, frames the port can take now.
bool GpuDevice::node_has_work(TimeNs now_ns) {
  const NodeRuntime& node = impl_->node;
  const std::optional<TimeNs> wake_ns = node.next_wake_ns();
  return impl_->port->has_input() || (wake_ns && now_ns >= *wake_ns) || node.backlog_sendable();
}

// Hands the engine back after a caller drove it: wakes the service thread if work or a timer
// it does not know of is left.
void GpuDevice::hand_back(std::unique_lock<std::mutex>& engine) {
  const bool work_left =
      !impl_->requests.idle() || impl_->copy.running() || impl_->node.backlog_frames() > 0;
  impl_->owner.hand_back(engine, work_left, impl_->node.next_wake_ns());
}

DeviceResult GpuDevice::load(std::uint64_t window_addr, unsigned width) {
  ++impl_->loads;
  PreparedRequest prepared =
      prepare_request(impl_->callers_map, RequestKind::kLoad, window_addr, width);
  if (!prepared.request) {
    ++impl_->failures.errors;
    return prepared.error;
  }
  return submit_and_wait(prepared.request);
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
  PreparedRequest prepared =
      prepare_request(impl_->callers_map, RequestKind::kStore, window_addr, width);
  if (!prepared.request) {
    ++impl_->failures.errors;
    ++impl_->stores;
    return prepared.error;
  }
  prepared.request->value = value;
  if (!impl_->owner.post(std::move(prepared.request), wait_for_room)) return std::nullopt;
  ++impl_->stores;
  return DeviceResult{};
}

DeviceResult GpuDevice::atomic(AtomicOp op, std::uint64_t window_addr, unsigned width,
                               std::uint64_t operand, std::uint64_t compare) {
  ++impl_->atomics;
  PreparedRequest prepared =
      prepare_request(impl_->callers_map, RequestKind::kAtomic, window_addr, width);
  if (!prepared.request) {
    ++impl_->failures.errors;
    return prepared.error;
  }
  prepared.request->op = op;
  prepared.request->value = operand;
  prepared.request->compare = compare;
  return submit_and_wait(prepared.request);
}

DeviceResult GpuDevice::flush_all() {
  auto request = std::make_shared<DeviceRequest>();
  request->kind = RequestKind::kFlushAll;
  return submit_and_wait(request);
}

bool GpuDevice::start_copy(std::uint64_t src, std::uint64_t dst, std::uint64_t bytes, CopyDone done,
                           CopyStart how) {
  bool expected = false;
  if (!impl_->copy_busy.compare_exchange_strong(expected, true)) return false;
  {
    std::lock_guard lock(impl_->copy_mutex);
    impl_->copy_incoming.emplace(StartedCopy{src, dst, bytes, std::move(done)});
  }
  impl_->owner.signal_work(how == CopyStart::kWakeService);
  return true;
}

GpuDeviceCounters GpuDevice::counters() const {
  GpuDeviceCounters c;
  c.loads = impl_->loads.load();
  c.stores = impl_->stores.load();
  c.atomics = impl_->atomics.load();
  c.errors = impl_->failures.errors.load();
  c.timeouts = impl_->failures.timeouts.load();
  c.served_requests = impl_->served.load();
  c.copies = impl_->copies.load();
  c.copy_bytes = impl_->copy_bytes.load();
  c.copy_drives = impl_->copy_drives.load();
  c.frames_sent = impl_->frames_sent.load();
  return c;
}

// Engine owner only: takes a copy started since, drives the running one and, once it has
// ended, reports it.
void GpuDevice::advance_copy() {
  CopyEngine& copy = impl_->copy;
  if (!copy.running()) {
    std::lock_guard lock(impl_->copy_mutex);
    if (!impl_->copy_incoming) return;
    StartedCopy started = std::move(*impl_->copy_incoming);
    impl_->copy_incoming.reset();
    copy.start(started.src, started.dst, started.bytes);
    impl_->copy_done = std::move(started.done);
  }
  copy.advance(impl_->node_requests);
  impl_->copy_bytes.store(copy.moved_bytes());
  const std::optional<DeviceResult> result = copy.take_result();
  if (!result) return;
  ++impl_->copies;
  const CopyDone done = std::move(impl_->copy_done);
  impl_->copy_done = nullptr;
  impl_->copy_busy.store(false);
  impl_->failures.count(result->status);
  if (done) done(*result);
}

// Each completion goes to the part whose operation it answers: a caller's request or the copy.
void GpuDevice::dispatch_completions() {
  Requester& requester = impl_->node.endpoint().requester();
  while (std::optional<Completion> completion = requester.take_completion()) {
    if (!impl_->requests.on_completion(*completion)) {
      impl_->copy.on_completion(*completion, impl_->node_requests);
    }
  }
}

void GpuDevice::run_engine_once() {
  NodeRuntime& node = impl_->node;
  impl_->owner.take_posted(impl_->requests.queue());
  impl_->requests.issue(impl_->node_requests);
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
  EngineOwner& owner = impl_->owner;
  NodePort& port = *impl_->port;
  const Requester& requester = impl_->node.endpoint().requester();
  // Work for the engine owner: evaluated only with the engine; if a vCPU has it, the answer is
  // "look again" (the loop below then naps until the vCPU is done).
  const auto ready = [&] {
    return owner.service_has_work([&] {
      return port.has_input() || requester.has_completion() || impl_->node.backlog_sendable();
    });
  };
  const auto interrupted = [&] { return owner.nap_interrupted(); };
  // Never blocks on the engine lock either: a vCPU handing the engine back would have to wake
  // this thread (a system call and a cross-core wake-up on the load's path).
  std::unique_lock engine = owner.deferred();
  while (!owner.stopping()) {
    owner.begin_service_round();
    if (!engine.try_lock()) {
      port.nap(kServiceNapNs, interrupted);
      continue;
    }
    impl_->node.pump(0);
    run_engine_once();
    const ServiceWait wait =
        owner.plan_service_wait(impl_->node.next_wake_ns(), impl_->copy.running());
    engine.unlock();
    if (wait.wait_ns > 0 && wait.nap) {
      port.nap(wait.wait_ns, interrupted);
    } else if (wait.wait_ns > 0) {
      port.wait_unowned(wait.wait_ns, ready);
    }
  }
  engine.lock();
  shut_down();
}

// Engine owner, the device stopping: nobody may wait forever on a device that is going away.
void GpuDevice::shut_down() {
  impl_->owner.take_posted(impl_->requests.queue());
  impl_->requests.fail_waiting(DeviceStatus::kUnreachable);
}

}  // namespace ethx
