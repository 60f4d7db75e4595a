// Who drives a GpuDevice's node: the engine lock and the hand-off around it.
//
// The node (packet engine, port, completer, copy engine, request table) has one owner at a
// time, whoever holds the engine lock, so the port has one transmit owner. Normally that is the
// GPU's service thread. Other threads post work (stores) for it; a thread that loads or runs an
// atomic takes the engine itself (drive()) and drives it until its answer arrives, at most
// kDriveBudgetNs, which saves two thread hand-overs per load. drive() moves every posted request
// into the engine before the driver's own, so a load never passes the same thread's posted
// stores. While vCPUs drive, the service thread naps instead of watching the port (see
// plan_service_wait). The lock is never held across a sleep, so taking it waits at most one
// round of work.
//
// No port, no node: waking the service thread is a callback (NodePort::interrupt), the node's
// state comes in as arguments, and the clock is injectable, so the tests are deterministic.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "address-map/fabric_types.hpp"
#include "qemu-device/host/request_table.hpp"

namespace ethx {

// How long a vCPU drives the engine itself for its load or atomic (spinning, then yielding)
// before it hands the engine back to the service thread and sleeps. Remote loads take tens of
// microseconds here; a timeout or a copy in the way takes longer and is not worth a core.
inline constexpr std::int64_t kDriveBudgetNs = 1'000'000;
// Spin this long before yielding, like the shared-memory waiters (fabric/transport/doorbell.hpp):
// the switch and the peer that answer may need this very core.
inline constexpr std::int64_t kDriveSpinNs = 2'000;
inline constexpr std::int64_t kIdleWaitNs = 50'000'000;
// While vCPUs drive the engine (one did within kVcpuActiveNs, or one holds it now), the service
// thread naps in slices of kServiceNapNs instead of watching the port: otherwise every response
// a vCPU waits for would also wake the service thread, and on these machines (a nested VM) a
// cross-core wake-up costs the waker microseconds, on the load's path. Posted work and copies
// end a nap at once (the wake callback); remote requests that arrive meanwhile are served by the
// next driving vCPU or at the end of the slice. A slice of 50 µs instead of 500 µs cost
// ~25 % in load latency: its timer interrupts land on the cores the load's path runs on.
inline constexpr std::int64_t kVcpuActiveNs = 200'000;
inline constexpr std::int64_t kServiceNapNs = 500'000;
// Bounded so a vCPU storing faster than the fabric drains is slowed down, not the heap grown.
inline constexpr std::size_t kMaxPostedRequests = 4096;

// How the service thread waits after a round: not at all (0), a nap (only the wake callback
// ends it early) or watching the port (NodePort::wait_unowned).
struct ServiceWait {
  std::int64_t wait_ns = 0;
  bool nap = false;
};

class EngineOwner {
 public:
  using Work = std::shared_ptr<DeviceRequest>;
  using Clock = std::function<TimeNs()>;
  // `wake_service` ends the service thread's wait or nap (NodePort::interrupt), from any thread.
  explicit EngineOwner(std::function<void()> wake_service, Clock clock = {},
                       std::size_t max_posted = kMaxPostedRequests);

  // --- any thread ---
  // Queues `work` for the engine's owner; waits for room while max_posted are queued, or
  // returns false (nothing queued) if `wait_for_room` is false. Only the first post since the
  // owner last took them wakes the service thread: one wake-up per batch, not a system call
  // per MMIO store.
  bool post(Work work, bool wait_for_room);
  // Work that is not a request (a copy started): the next round takes it; wakes the service
  // thread if `wake`.
  void signal_work(bool wake);
  // The device is going away: ends every wait (posts waiting for room, the service thread).
  void stop();
  bool stopping() const { return stop_.load(); }

  // --- drivers (vCPUs): own the engine while the returned lock is held ---
  // Takes the engine and queues, in order, everything posted so far and then `own`.
  std::unique_lock<std::mutex> drive(Work own, RequestTable::Queue& queue);
  // Takes the engine for work of the caller's that is already in the engine (a copy).
  std::unique_lock<std::mutex> take() { return std::unique_lock(engine_); }
  // Runs `round` whenever `node_has_work(now)` or work was posted, while `busy()` holds, for at
  // most `budget_ns`: between rounds it spins kDriveSpinNs, then yields (the threads that answer
  // may need this very core). Ends early when the device stops.
  void drive_while(const std::function<bool()>& busy,
                   const std::function<bool(TimeNs)>& node_has_work,
                   const std::function<void()>& round, std::int64_t budget_ns = kDriveBudgetNs);
  // Releases the engine after driving. With `work_left` (requests in flight, a copy, frames in
  // the backlog) the service thread is woken and must watch the port for it, not nap; otherwise
  // it is woken only for a timer (`next_wake_ns`) earlier than the one it sleeps until.
  void hand_back(std::unique_lock<std::mutex>& engine, bool work_left,
                 std::optional<TimeNs> next_wake_ns);

  // --- the engine's owner ---
  // Moves everything posted so far, in order, to the back of `queue`, and makes room for more.
  void take_posted(RequestTable::Queue& queue);

  // --- the service thread ---
  std::unique_lock<std::mutex> deferred() { return std::unique_lock(engine_, std::defer_lock); }
  // At the start of a round: whatever a hand-back asked for, this round looks at.
  void begin_service_round() { service_kicked_.store(false); }
  // At the end of a round, engine held: how long to wait before the next one. Until the node's
  // next timer (at most kIdleWaitNs); a nap of at most kServiceNapNs while vCPUs drive, unless
  // a copy runs (its responses wake nobody else when the guest waits for the MSI) or a vCPU
  // handed back unfinished work.
  ServiceWait plan_service_wait(std::optional<TimeNs> next_wake_ns, bool copy_running);
  // Whether a nap ends: work was posted or handed back, or the device stops.
  bool nap_interrupted() const;
  // Whether the service thread has a round to run, for NodePort::wait_unowned: posted work, a
  // driver holding the engine (look again once it is done), or `engine_work()` (evaluated with
  // the engine held: the port's user-space state is the owner's).
  bool service_has_work(const std::function<bool()>& engine_work);

 private:
  std::function<void()> wake_service_;
  Clock clock_;
  std::size_t max_posted_;
  std::mutex engine_;
  std::atomic<bool> stop_{false};
  // Until when the service thread sleeps (ns, monotonic): a driver that leaves an earlier
  // timer behind wakes it.
  std::atomic<TimeNs> service_wake_ns_{0};
  // When a driver last handed the engine back with nothing left to do; 0 when it left work
  // behind (it gave up driving: the service thread must watch the port for it, not nap).
  std::atomic<TimeNs> last_drive_end_ns_{0};
  // Set by a driver that hands back work: ends the service thread's nap (the wake callback
  // alone only rings the doorbell; a nap goes back to sleep unless its condition holds).
  std::atomic<bool> service_kicked_{false};

  std::mutex posted_mutex_;
  std::condition_variable room_;
  RequestTable::Queue posted_;  // guarded by posted_mutex_
  // Posted work or a started copy waits for the next round.
  std::atomic<bool> has_incoming_{false};
};

}  // namespace ethx
