// The next window of a two-partition run (sim_windows.cpp): how far in modelled time both
// partitions may go without waiting for each other, and when the run is over. Sans-I/O.
//
// Conservative synchronisation: a frame one partition sends reaches the other no sooner than
// the lookahead after the event that sent it (a crossing link's delay plus the shortest frame's
// serialization), and that event is no earlier than the sender's next event. So every event
// earlier than the sooner of (each side's next event + its lookahead to the other) can run
// before anything the other side does in the window could reach it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "fabric/sim/sim_event_queue.hpp"

namespace ethx::sim {

inline constexpr TimePs kNoEventPs = UINT64_MAX;

// What one partition knows at the end of a window.
struct WindowSummary {
  TimePs next_ps = kNoEventPs;       // its earliest event still queued
  TimePs sent_next_ps = kNoEventPs;  // the earliest arrival among the frames it sent
  std::size_t queued = 0;            // events still queued
  std::size_t sent = 0;              // frames sent to the other side in the window
  std::size_t timers = 0;            // queued events that are timers
  // Only timers left would run for ever when the workload is done and a link or a peer is
  // down.
  std::size_t gpus_left = 0;  // its GPUs whose workload is not done
  std::size_t down = 0;       // links down, peers marked down
  bool failed = false;        // a handler threw: stop
};

struct WindowPlan {
  bool stop = false;
  TimePs end_ps = 0;  // run the events earlier than this
};

// The lookahead each way, in picoseconds.
struct Lookahead {
  TimePs gpu_to_switch_ps = 0;
  TimePs switch_to_gpu_ps = 0;
};

constexpr TimePs add_saturated(TimePs at, TimePs delta) {
  return at > kNoEventPs - delta ? kNoEventPs : at + delta;
}

// The window after the one `gpus` and `switches` summarise (the frames each sent are taken by
// the other before the window starts).
constexpr WindowPlan plan_window(const WindowSummary& gpus, const WindowSummary& switches,
                                 const Lookahead& lookahead) {
  const std::size_t events = gpus.queued + gpus.sent + switches.queued + switches.sent;
  const bool endless = gpus.gpus_left + switches.gpus_left == 0 &&
                       events == gpus.timers + switches.timers && gpus.down + switches.down > 0;
  if (gpus.failed || switches.failed || events == 0 || endless) return WindowPlan{true, 0};
  const TimePs gpus_next = std::min(gpus.next_ps, switches.sent_next_ps);
  const TimePs switches_next = std::min(switches.next_ps, gpus.sent_next_ps);
  return WindowPlan{false, std::min(add_saturated(gpus_next, lookahead.gpu_to_switch_ps),
                                    add_saturated(switches_next, lookahead.switch_to_gpu_ps))};
}

}  // namespace ethx::sim
