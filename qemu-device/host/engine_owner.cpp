#include "qemu-device/host/engine_owner.hpp"

#include <algorithm>
#include <thread>
#include <utility>

#include "fabric/platform/clock.hpp"
#include "fabric/transport/doorbell.hpp"

namespace ethx {

EngineOwner::EngineOwner(std::function<void()> wake_service, Clock clock, std::size_t max_posted)
    : wake_service_(std::move(wake_service)),
      clock_(clock ? std::move(clock) : Clock(monotonic_now_ns)),
      max_posted_(max_posted) {}

bool EngineOwner::post(Work work, bool wait_for_room) {
  {
    std::unique_lock lock(posted_mutex_);
    const auto room = [this] { return posted_.size() < max_posted_ || stop_.load(); };
    if (!wait_for_room && !room()) return false;
    room_.wait(lock, room);
    posted_.push_back(std::move(work));
    // Already set: the work posted since the engine's owner last took it has already woken it
    // (or a driving vCPU takes it); a wake-up per store would cost a system call per MMIO store.
    if (has_incoming_.exchange(true)) return true;
  }
  wake_service_();
  return true;
}

void EngineOwner::signal_work(bool wake) {
  has_incoming_.store(true);
  if (wake) wake_service_();
}

void EngineOwner::stop() {
  {
    std::lock_guard lock(posted_mutex_);
    stop_.store(true);
  }
  room_.notify_all();
  wake_service_();
}

void EngineOwner::take_posted(RequestTable::Queue& queue) {
  if (!has_incoming_.exchange(false)) return;
  std::lock_guard lock(posted_mutex_);
  for (auto& work : posted_) queue.push_back(std::move(work));
  posted_.clear();
  room_.notify_all();
}

// The waiting vCPU drives the engine itself instead of handing its request to the service
// thread and being woken by it. Everything posted before the request goes first, in order, so
// the request never passes the same vCPU's posted stores.
std::unique_lock<std::mutex> EngineOwner::drive(Work own, RequestTable::Queue& queue) {
  std::unique_lock engine(engine_);
  take_posted(queue);
  queue.push_back(std::move(own));
  return engine;
}

void EngineOwner::drive_while(const std::function<bool()>& busy,
                              const std::function<bool(TimeNs)>& node_has_work,
                              const std::function<void()>& round, std::int64_t budget_ns) {
  const TimeNs start_ns = clock_();
  while (busy()) {
    const TimeNs now_ns = clock_();
    if (stop_.load() || now_ns >= start_ns + static_cast<TimeNs>(budget_ns)) break;
    // Look at the port and the clock cheaply; run a round only when there is something to do
    // (a round that finds nothing still costs a system call on AF_XDP).
    if (node_has_work(now_ns) || has_incoming_.load()) {
      round();
    } else if (now_ns < start_ns + kDriveSpinNs) {
      shm::detail::cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

void EngineOwner::hand_back(std::unique_lock<std::mutex>& engine, bool work_left,
                            std::optional<TimeNs> next_wake_ns) {
  last_drive_end_ns_.store(work_left ? 0 : clock_());
  if (work_left) service_kicked_.store(true);
  engine.unlock();
  if (work_left || (next_wake_ns && *next_wake_ns < service_wake_ns_.load())) wake_service_();
}

ServiceWait EngineOwner::plan_service_wait(std::optional<TimeNs> next_wake_ns, bool copy_running) {
  ServiceWait wait{kIdleWaitNs, false};
  const TimeNs now_ns = clock_();
  if (next_wake_ns) {
    wait.wait_ns =
        std::clamp<std::int64_t>(static_cast<std::int64_t>(*next_wake_ns - now_ns), 0, kIdleWaitNs);
  }
  // A running copy is the service thread's own work (its responses wake nobody else when the
  // guest waits for the MSI instead of polling): watch the port for it, never nap blind. So is
  // work a vCPU handed back unfinished (last_drive_end_ns_ 0): it sleeps until it is done.
  wait.nap = static_cast<std::int64_t>(now_ns - last_drive_end_ns_.load()) < kVcpuActiveNs &&
             !copy_running;
  if (wait.nap) wait.wait_ns = std::min(wait.wait_ns, kServiceNapNs);
  service_wake_ns_.store(now_ns + static_cast<TimeNs>(wait.wait_ns));
  return wait;
}

bool EngineOwner::nap_interrupted() const {
  return stop_.load() || has_incoming_.load() || service_kicked_.load();
}

bool EngineOwner::service_has_work(const std::function<bool()>& engine_work) {
  if (stop_.load() || has_incoming_.load()) return true;
  std::unique_lock engine(engine_, std::try_to_lock);
  if (!engine) return true;
  return engine_work();
}

}  // namespace ethx
