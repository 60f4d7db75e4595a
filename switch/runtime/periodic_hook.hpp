// Lets a forwarding loop publish a snapshot of its own state (the switch's counters for
// `ethx status`) at most once per interval and once more after activity stops, from the loop's
// own thread: the counters need no locks and no second thread reads them.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

namespace ethx {

class PeriodicHook {
 public:
  PeriodicHook() = default;
  PeriodicHook(std::function<void()> task, std::int64_t interval_ns)
      : task_(std::move(task)), interval_ns_(interval_ns) {}

  bool enabled() const { return static_cast<bool>(task_); }
  void note_activity() { dirty_ = true; }

  // Runs the task when something changed and the interval has passed. Returns how long the
  // caller may sleep before the next call is due: -1 when nothing is pending.
  std::int64_t poll(std::int64_t now_ns) {
    if (!task_ || !dirty_) return -1;
    if (now_ns >= next_due_ns_) {
      dirty_ = false;
      next_due_ns_ = now_ns + interval_ns_;
      task_();
      return -1;
    }
    return next_due_ns_ - now_ns;
  }

  // The shorter of two sleep limits, where -1 means "no limit".
  static std::int64_t shorter(std::int64_t a_ns, std::int64_t b_ns) {
    if (a_ns < 0) return b_ns;
    if (b_ns < 0) return a_ns;
    return a_ns < b_ns ? a_ns : b_ns;
  }

 private:
  std::function<void()> task_;
  std::int64_t interval_ns_ = 0;
  std::int64_t next_due_ns_ = 0;
  bool dirty_ = true;  // publish once at start, so a snapshot exists before any traffic
};

}  // namespace ethx
