// The simulator's event queue: deterministic order by time, then by insertion sequence.
//
// Two events at the same modelled time run in the order they were scheduled, so a run
// depends only on its inputs (config, workload, seed), never on layout or addresses.
//
// It is a calendar (a timing wheel): kBuckets buckets of kBucketPs each cover the window of
// modelled time that starts at the bucket of the last event popped. An event inside the window
// goes into its time's bucket (sim_event_bucket.hpp: its few distinct times, each with a FIFO);
// a bitmap of the buckets that hold events finds the next one with a few word scans. Events past
// the window (timeouts, probes, a long completer backlog) wait in one far heap and move into their
// buckets as the window reaches them. A 1024-GPU run holds about 8 K events; in one heap that was
// six levels of four children per pop, about a fifth of all instructions (docs/simulator.md,
// "Speed").
//
// Why the order is exact: every bucket orders its events by time, and those of one time by
// sequence (they are pushed in sequence order: see take_far_events); buckets are
// visited in time order; and every event earlier than the window's end is in the calendar,
// not in the far heap, because far events move in as soon as the window passes them, before
// anything else is pushed.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fabric/sim/sim_event_bucket.hpp"
#include "fabric/sim/sim_event_heap.hpp"

namespace ethx::sim {

class EventQueue {
 public:
  EventQueue() : buckets_(kBuckets) {}

  // Schedules an event; returns its sequence number. `hint_bytes` of `hint` are worth
  // prefetching (up to kMaxHintLines lines).
  // Preconditions: kind <= kMaxEventKind, target <= kMaxEventTarget, and `at` no earlier than
  // the last event popped (the simulator never schedules into the past).
  std::uint64_t push(TimePs at, std::uint32_t kind, std::uint32_t target, std::uint32_t arg = 0,
                     const void* hint = nullptr, std::size_t hint_bytes = 0);
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  // Precondition: !empty(). The earliest event; ties by insertion order.
  const Event& top() const;
  // Precondition: !empty(). Removes and returns top().
  Event pop();
  std::uint64_t pushed() const { return next_seq_; }

  // 1024 ps buckets, 1024 of them: a window of 1.05 us, longer than a frame takes through a
  // switch and a link (~300 ns). Measured on 1024 GPUs against 256 ps x 8192 (2.1 us) and
  // 512 ps x 1024: the bucket headers in use then fit the L2 cache, and fewer buckets in the
  // window are empty (docs/simulator.md, "Speed").
  static constexpr unsigned kBucketShift = 10;
  static constexpr TimePs kBucketPs = TimePs{1} << kBucketShift;
  static constexpr std::size_t kBuckets = 1024;

 private:
  static constexpr std::size_t kWords = kBuckets / 64;  // of the occupancy bitmap
  static_assert(kBuckets % 64 == 0 && (kBuckets & (kBuckets - 1)) == 0);

  static std::uint64_t bucket_of(TimePs at) { return at >> kBucketShift; }
  EventBucket& bucket(std::uint64_t index) { return buckets_[index & (kBuckets - 1)]; }
  // Absolute index of the earliest bucket holding an event. Precondition: calendar_size_ > 0.
  std::uint64_t earliest_bucket() const;
  // Files the event in pool slot `node` under bucket `index`.
  void insert(std::uint64_t index, std::uint32_t node);
  // Moves far events that the window (from base_) now reaches into their buckets.
  void take_far_events();
  static void fill(Event& event, TimePs at, std::uint64_t seq, std::uint32_t kind,
                   std::uint32_t target, std::uint32_t arg, const void* hint,
                   std::uint32_t hint_lines);
  [[gnu::noinline]] void push_far(TimePs at, std::uint64_t seq, std::uint32_t kind,
                                  std::uint32_t target, std::uint32_t arg, const void* hint,
                                  std::uint32_t hint_lines) {
    Event event;
    fill(event, at, seq, kind, target, arg, hint, hint_lines);
    far_.push(event);
  }

  EventPool pool_;                                // the calendar's events
  std::vector<EventBucket> buckets_;              // by absolute bucket index modulo kBuckets
  std::array<std::uint64_t, kWords> occupied_{};  // bit i: bucket i holds events
  std::uint64_t base_ = 0;  // absolute index of the window's first bucket: the last pop's
  std::size_t calendar_size_ = 0;
  std::size_t size_ = 0;
  EventHeap far_;  // events at or past the window's end
  // earliest_bucket(), remembered until a push or a pop moves it.
  mutable std::uint64_t earliest_ = 0;
  mutable bool earliest_known_ = false;
  std::uint64_t next_seq_ = 0;
};

inline std::uint64_t EventQueue::push(TimePs at, std::uint32_t kind, std::uint32_t target,
                                      std::uint32_t arg, const void* hint, std::size_t hint_bytes) {
  const std::size_t lines = (hint_bytes + 63) / 64;
  const auto hint_lines = static_cast<std::uint32_t>(lines < kMaxHintLines ? lines : kMaxHintLines);
  const std::uint64_t seq = next_seq_++;
  ++size_;
  std::uint64_t index = bucket_of(at);
  // Never earlier than the window: an event in the past (a broken precondition) still comes
  // out first, as its bucket orders it before the others.
  if (index < base_) index = base_;
  // Past the window (timeouts, probes): rare, and out of line, so that the usual push keeps
  // no Event of its own on the stack and saves no registers for the heap's code.
  if (index >= base_ + kBuckets) [[unlikely]] {
    push_far(at, seq, kind, target, arg, hint, hint_lines);
    return seq;
  }
  // Written in place, field by field: an event built on the stack and copied was read back
  // in wide loads across its narrow stores, a store-forwarding stall on every push.
  const std::uint32_t node = pool_.allocate();
  fill(pool_.event(node), at, seq, kind, target, arg, hint, hint_lines);
  insert(index, node);
  return seq;
}

inline void EventQueue::fill(Event& event, TimePs at, std::uint64_t seq, std::uint32_t kind,
                             std::uint32_t target, std::uint32_t arg, const void* hint,
                             std::uint32_t hint_lines) {
  event.at = at;
  event.seq = seq;
  event.kind = kind & kMaxEventKind;
  event.hint_lines = hint_lines & kMaxHintLines;
  event.target = target & kMaxEventTarget;
  event.arg = arg;
  event.hint = hint;
}

inline void EventQueue::insert(std::uint64_t index, std::uint32_t node) {
  bucket(index).push(node, pool_.event(node).at, pool_);
  const std::size_t slot = index & (kBuckets - 1);
  occupied_[slot / 64] |= std::uint64_t{1} << (slot % 64);
  ++calendar_size_;
  if (earliest_known_ && index < earliest_) earliest_ = index;
}

inline std::uint64_t EventQueue::earliest_bucket() const {
  if (earliest_known_) return earliest_;
  const std::size_t start = base_ & (kBuckets - 1);
  std::size_t word = start / 64;
  std::uint64_t bits = occupied_[word] & (~std::uint64_t{0} << (start % 64));
  // The calendar is not empty, so this ends within one turn of the bitmap (the last word
  // visited is the first again, whole: its buckets before `start` are the window's end).
  while (bits == 0) {
    word = (word + 1) % kWords;
    bits = occupied_[word];
  }
  const std::size_t slot = word * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
  earliest_ = base_ + ((slot - start) & (kBuckets - 1));
  earliest_known_ = true;
  return earliest_;
}

inline const Event& EventQueue::top() const {
  if (calendar_size_ == 0) return far_.top();
  return buckets_[earliest_bucket() & (kBuckets - 1)].top(pool_);
}

inline void EventQueue::take_far_events() {
  while (!far_.empty() && bucket_of(far_.top().at) < base_ + kBuckets) {
    const std::uint32_t node = pool_.allocate();
    pool_.event(node) = far_.pop();
    insert(bucket_of(pool_.event(node).at), node);
  }
}

inline Event EventQueue::pop() {
  if (calendar_size_ == 0) {  // only far events: move the window to the earliest
    base_ = bucket_of(far_.top().at);
    take_far_events();
  }
  const std::uint64_t index = earliest_bucket();
  if (index != base_) {
    // Far events the window now reaches come in behind this bucket: the window's old end
    // is past it.
    base_ = index;
    take_far_events();
  }
  EventBucket& events = bucket(index);
  const Event event = events.pop(pool_);
  --calendar_size_;
  --size_;
  if (events.empty()) {
    const std::size_t slot = index & (kBuckets - 1);
    occupied_[slot / 64] &= ~(std::uint64_t{1} << (slot % 64));
    earliest_known_ = false;
  }
  return event;
}

}  // namespace ethx::sim
