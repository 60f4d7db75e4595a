// Where the simulator's two threads meet between windows (sim_windows.cpp).
//
// Not std::barrier: libstdc++'s yields to the scheduler a few times, then sleeps in the kernel,
// and a window lasts only tens of microseconds, so a sleeping thread's wake-up (an interrupt
// to the other core, longer still in a virtual machine) would cost a window's work each time.
// This one spins first, for about as long as a window takes, and only then sleeps: a machine
// with a spare core gets the thread back at once, a busy one loses at most that much of it.
#pragma once

#include <atomic>
#include <cstdint>

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

}  // namespace ethx::sim
