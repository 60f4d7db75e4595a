// A futex doorbell in shared memory and the adaptive waiter that sleeps on it: how a ring's
// consumer waits for work without burning a core, and how its producer wakes it cheaply.
//
// Why a raw futex and not Boost.Interprocess condition variables: those need an interprocess
// mutex, and a process that crashes while holding it leaves every peer blocked forever. The
// futex needs no lock: the worst a crashed peer can do is never ring, which the waiter's bounded
// sleeps absorb. Why not std::atomic<T>::wait either: libstdc++ waits with FUTEX_PRIVATE_FLAG
// (invisible to other processes) and has no timeout.
#pragma once

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>

#include "fabric/platform/clock.hpp"

namespace ethx::shm {

// One per consumer: exactly one process waits on a doorbell; any number may ring it.
struct alignas(64) Doorbell {
  std::atomic<std::uint32_t> sequence{0};  // the futex word; bumped by every wake
  std::atomic<std::uint32_t> sleeping{0};  // 1 while the consumer is (about to be) in FUTEX_WAIT
};

static_assert(std::atomic<std::uint32_t>::is_always_lock_free,
              "a doorbell in shared memory needs address-free (lock-free) atomics");
static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t),
              "the futex word must be a plain 32-bit integer");

// Defaults measured with `ethx bench --gpus 4|8 --quick` on the 2-core machines (nested VM,
// futex wake-up ~30 us; docs/benchmarks.md): a short spin plus a yield phase gave the lowest
// round trips, because with three processes on the echo path and two cores, yielding hands the
// core to whichever process holds the frame, while pure spinning starves it and sleeping pays
// the wake-up.
struct WaitPolicy {
  // Upper bounds of the spin phase: polls of ready(), and time. The time bound is what normally
  // ends it; see AdaptiveWaiter for why the spin phase is bounded by time.
  std::uint32_t spin_iterations = 2000;
  // Few: on kernels with the EEVDF scheduler (Linux 6.6 and later; these machines run 6.18),
  // every sched_yield while other tasks are runnable pushes the yielder's virtual deadline out
  // by a whole slice (a few ms), and it is reset only when the task sleeps. With the old 5000,
  // a loaded host (2 QEMU VMs under TCG plus 2 busy loops) left GPU service threads runnable
  // but unscheduled for 2-10 s, and shmem programs timed out (docs/shm-runtime.md, "Why few
  // yields"). 16 yields keep the latency of 5000 on an idle host (ethx bench --gpus 4 --quick:
  // echo p50 25-32 us against 25-40 us; without yields 45-68 us).
  std::uint32_t yield_iterations = 16;
  // The longest single futex sleep, also when the caller's timeout is longer: if a producer dies
  // between publishing and ringing, its work is still noticed within this long.
  std::int64_t max_sleep_ns = 50'000'000;
  // The adaptive spin budget moves between these two.
  std::int64_t max_spin_ns = 2'000;
  std::int64_t min_spin_ns = 500;
  // A wait that found nothing for this long makes the waiter idle (see AdaptiveWaiter).
  std::int64_t idle_after_ns = 1'000'000;

  // Defaults, overridden by ETHX_WAIT_SPIN_NS (max_spin_ns), ETHX_WAIT_YIELDS
  // (yield_iterations) and ETHX_WAIT_SLEEP_NS (max_sleep_ns) for tuning on other machines.
  static WaitPolicy from_environment();
};

struct WaitStats {
  std::uint64_t spins = 0;         // polls of ready() in spin phases
  std::uint64_t yields = 0;        // sched_yield calls
  std::uint64_t sleeps = 0;        // FUTEX_WAIT calls
  std::uint64_t wakeups_sent = 0;  // FUTEX_WAKE calls made through AdaptiveWaiter::ring
};

namespace detail {

// Blocks while bell.sequence == expected, for at most timeout_ns. Returns on a wake, the
// timeout, a signal or a changed sequence alike: the caller re-checks its condition.
void futex_wait(Doorbell& bell, std::uint32_t expected, std::int64_t timeout_ns);
// The slow path of ring(): the consumer announced it sleeps.
bool wake_sleeper(Doorbell& bell);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#endif
}

}  // namespace detail

// Call after publishing work for the doorbell's consumer. Costs a fence and a load unless the
// consumer announced it is going to sleep; only then the FUTEX_WAKE syscall (~0.2 µs to make,
// ~30 µs until the sleeper runs). Returns whether it woke the consumer.
inline bool ring(Doorbell& bell) {
  // Pairs with the fence in AdaptiveWaiter::wait: either this load sees sleeping == 1, or the
  // consumer's re-check of ready() sees the work published before this call. Never neither.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (bell.sleeping.load(std::memory_order_relaxed) == 0) return false;
  return detail::wake_sleeper(bell);
}

// Spin briefly, then yield, then block on the doorbell. The spin phase is bounded by time rather
// than by iterations: the cost of a pause instruction differs ~10x between CPU generations and the
// cost of ready() varies with the caller, but what spinning competes with is a fixed ~30 µs
// futex wake-up, so the budget is expressed in the same unit. It adapts per waiter: a wait
// that found work while spinning doubles the budget (up to max_spin_ns); one that had to yield
// or sleep halves it (down to min_spin_ns), so idle consumers stop stealing the 2 cores from busy
// ones while a ping-pong pair keeps the ~0.3 µs spin round trip. The yield count does not adapt:
// a sched_yield with nothing else runnable is just a ~0.2 µs syscall, and with others runnable
// giving them the core is exactly what the phase is for.
class AdaptiveWaiter {
 public:
  explicit AdaptiveWaiter(WaitPolicy policy = {});

  // Waits until ready() is true or `timeout_ns` passes. timeout_ns < 0: sleep at most once, for up
  // to policy.max_sleep_ns (for loops that have other things to look at). Returns ready().
  template <class Ready>
  bool wait(Doorbell& bell, Ready ready, std::int64_t timeout_ns);

  // ring(peer_bell), counted in this waiter's stats.wakeups_sent.
  bool ring(Doorbell& peer_bell);

  const WaitStats& stats() const { return stats_; }
  std::int64_t spin_budget_ns() const { return spin_budget_ns_; }

 private:
  void found_while_spinning();
  void spin_exhausted();

  WaitPolicy policy_;
  WaitStats stats_;
  std::int64_t spin_budget_ns_;
  bool idle_ = false;  // the last wait timed out with nothing to do
};

template <class Ready>
bool AdaptiveWaiter::wait(Doorbell& bell, Ready ready, std::int64_t timeout_ns) {
  if (ready()) {
    idle_ = false;
    return true;
  }
  if (timeout_ns == 0) return false;
  const bool sleep_once = timeout_ns < 0;
  const std::int64_t start_ns = monotonic_ns();
  const std::int64_t deadline_ns =
      sleep_once || timeout_ns > std::numeric_limits<std::int64_t>::max() - start_ns
          ? std::numeric_limits<std::int64_t>::max()
          : start_ns + timeout_ns;

  // A waiter whose last wait found nothing for idle_after_ns is idle: it goes straight to
  // sleep, so dozens of idle nodes cost no CPU; the first wait that finds work makes it eager
  // again. Short timed waits (a timer due soon) never make it idle.
  const bool eager = !idle_;
  auto found = [this] {
    idle_ = false;
    return true;
  };
  auto timed_out = [&] {
    if (ready()) return found();
    idle_ = monotonic_ns() - start_ns >= policy_.idle_after_ns;
    return false;
  };

  // Spin: the answer is often a fraction of a microsecond away (a peer on the other core).
  const std::int64_t spin_end_ns = std::min(deadline_ns, start_ns + spin_budget_ns_);
  for (std::uint32_t poll = 1; eager && poll <= policy_.spin_iterations; ++poll) {
    detail::cpu_relax();
    ++stats_.spins;
    if (ready()) {
      found_while_spinning();
      return found();
    }
    // Reading the clock every poll would cost as much as the poll itself.
    if (poll % 8 == 0 && monotonic_ns() >= spin_end_ns) break;
  }
  if (eager) spin_exhausted();

  // Yield: with more runnable processes than cores the peer may need this very core.
  for (std::uint32_t yield = 0; eager && yield < policy_.yield_iterations; ++yield) {
    if (monotonic_ns() >= deadline_ns) return timed_out();
    ::sched_yield();
    ++stats_.yields;
    if (ready()) return found();
  }

  // Sleep until rung, in slices of at most max_sleep_ns.
  for (;;) {
    const std::int64_t now_ns = monotonic_ns();
    if (now_ns >= deadline_ns) return timed_out();
    const std::int64_t sleep_ns =
        sleep_once ? policy_.max_sleep_ns : std::min(deadline_ns - now_ns, policy_.max_sleep_ns);
    // Read the sequence before announcing: a ring() after this point changes it, so FUTEX_WAIT
    // returns at once instead of sleeping through the wake-up.
    const std::uint32_t expected = bell.sequence.load(std::memory_order_acquire);
    bell.sleeping.store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with the fence in ring()
    if (ready()) {
      bell.sleeping.store(0, std::memory_order_relaxed);
      return found();
    }
    ++stats_.sleeps;
    detail::futex_wait(bell, expected, sleep_ns);
    bell.sleeping.store(0, std::memory_order_relaxed);
    if (ready()) return found();
    if (sleep_once) return timed_out();
  }
}

}  // namespace ethx::shm
