// The one monotonic clock the runtimes read. The sans-I/O cores never read a clock: their
// callers pass `now` in, so the simulator can hand them modelled time instead.
#pragma once

#include <chrono>
#include <cstdint>

#include "address-map/fabric_types.hpp"

namespace ethx {

// Nanoseconds since an arbitrary fixed point. Signed, so that deadlines subtract.
// steady_clock is CLOCK_MONOTONIC through the vDSO: about 22 ns here, no system call.
inline std::int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The same clock as the engines' time type, for calls into the cores.
inline TimeNs monotonic_now_ns() {
  return static_cast<TimeNs>(monotonic_ns());
}

inline std::int64_t monotonic_ms() {
  return monotonic_ns() / 1'000'000;
}

}  // namespace ethx
