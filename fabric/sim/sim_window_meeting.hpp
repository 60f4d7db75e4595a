// Where the simulator's two threads meet between windows (sim_windows.cpp).
//
// Not std::barrier: libstdc++'s yields to the scheduler a few times, then sleeps in the kernel,
// and a window lasts only tens of microseconds, so a sleeping thread's wake-up (an interrupt
// to the other core, longer still in a virtual machine) would cost a window's work each time.
// This one spins first, for about as long as a window takes, and only then sleeps: a machine
// with a spare core gets the thread back at once, a busy one loses at most that much of it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace ethx::sim {

class WindowMeeting {
 public:
  // Pause instructions spun before sleeping: ~4 K, about 100 us on this machine's cores.
  static constexpr int kSpins = 4096;

  // Returns when both threads have arrived. The last to arrive runs `complete` (which reads
  // what both wrote before arriving) before either returns.
  template <typename Complete>
  void arrive_and_wait(Complete&& complete) {
    const std::uint32_t phase = phase_.load(std::memory_order_relaxed);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) == 1) {
      arrived_.store(0, std::memory_order_relaxed);  // the other waits for the phase
      complete();
      phase_.store(phase + 1, std::memory_order_release);
      phase_.notify_one();
      return;
    }
    for (int spin = 0; spin < kSpins; ++spin) {
      if (phase_.load(std::memory_order_acquire) != phase) return;
      __builtin_ia32_pause();
    }
    while (phase_.load(std::memory_order_acquire) == phase) {
      phase_.wait(phase, std::memory_order_acquire);
    }
  }

 private:
  alignas(64) std::atomic<std::uint32_t> arrived_{0};
  alignas(64) std::atomic<std::uint32_t> phase_{0};
};

// How far apart two threads' cores are: the round trip of one cache line between them,
// measured by measure_ns() on one thread while the other calls answer(). A hypervisor may put
// a VM's two vCPUs next to each other (50-63 ns on the machine of docs/simulator.md, "Round 9")
// or far apart (315-356 ns), and a two-thread run pays that on every frame that crosses.
//
// A new thread often starts on its creator's core, and the scheduler moves it a few
// milliseconds later; so the measure is the best of several blocks of round trips, and a side
// that waits long yields its core (a shared core then shows as microseconds, not a hang).
class CoreDistance {
 public:
  static constexpr std::uint32_t kTripsPerBlock = 64;
  static constexpr std::uint32_t kBlocks = 32;
  static constexpr std::chrono::nanoseconds kBudget{20'000'000};  // for all the blocks
  static constexpr double kNoAnswerNs = 1e9;  // no block finished within the budget

  // The least mean round trip of a block, in ns, or kNoAnswerNs.
  double measure_ns() {
    const Clock::time_point start = Clock::now();
    double best_ns = kNoAnswerNs;
    std::uint32_t value = 0;  // the ball's value, the other side's last
    for (std::uint32_t block = 0; block < kBlocks; ++block) {
      const Clock::time_point from = Clock::now();
      std::uint32_t trip = 0;
      for (; trip < kTripsPerBlock; ++trip, value += 2) {
        ball_.store(value + 1, std::memory_order_release);
        if (!wait_for(value + 2, &start)) break;
      }
      if (trip < kTripsPerBlock) break;  // out of time
      const std::chrono::duration<double, std::nano> took = Clock::now() - from;
      best_ns = std::min(best_ns, took.count() / kTripsPerBlock);
    }
    ball_.store(kStop, std::memory_order_release);
    return best_ns;
  }

  // The other side: returns when measure_ns() has finished.
  void answer() {
    for (std::uint32_t value = 0;; value += 2) {
      if (!wait_for(value + 1, nullptr)) return;
      std::uint32_t seen = value + 1;
      // Not a store: measure_ns() may have given up meanwhile, and its kStop must stand.
      if (!ball_.compare_exchange_strong(seen, value + 2, std::memory_order_acq_rel)) return;
    }
  }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::uint32_t kStop = UINT32_MAX;
  static constexpr std::chrono::nanoseconds kYieldAfter{20'000};

  // Until the ball holds `value` (true), kStop, or the budget counted from `*start` is spent.
  bool wait_for(std::uint32_t value, const Clock::time_point* start) const {
    Clock::time_point waiting_since{};
    for (std::uint32_t spin = 1;; ++spin) {
      const std::uint32_t seen = ball_.load(std::memory_order_acquire);
      if (seen == value) return true;
      if (seen == kStop) return false;
      __builtin_ia32_pause();
      if (spin % 256 != 0) continue;
      const Clock::time_point now = Clock::now();
      if (start != nullptr && now - *start > kBudget) return false;
      if (spin == 256) waiting_since = now;
      if (now - waiting_since > kYieldAfter) std::this_thread::yield();
    }
  }

  alignas(64) std::atomic<std::uint32_t> ball_{0};
};

}  // namespace ethx::sim
