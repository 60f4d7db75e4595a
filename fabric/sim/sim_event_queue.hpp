// The simulator's event queue: deterministic order by time, then by insertion sequence.
//
// Two events at the same modelled time run in the order they were scheduled, so a run
// depends only on its inputs (config, workload, seed), never on heap layout or addresses.
//
// It is a 4-ary min-heap of 32-byte events. Every event of a run passes through it once, so
// push and pop are defined here, inline in the simulator's loop, and pop picks the earliest of
// four children without branches (docs/simulator.md, "Speed"; tests/bench/sim_bench.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ethx::sim {

// Modelled time in picoseconds: serialization of one 84 B frame at 800 Gbit/s is 840 ps, so
// nanoseconds would round it away. 2^64 ps is about 213 days.
using TimePs = std::uint64_t;
inline constexpr TimePs kPsPerNs = 1000;

// 32 bytes: two to a cache line in the heap.
struct Event {
  TimePs at = 0;
  std::uint64_t seq = 0;  // insertion order, breaks ties
  std::uint32_t kind : 5 = 0;
  std::uint32_t hint_lines : 5 = 0;  // 64-byte lines of `hint` worth fetching
  std::uint32_t target : 22 = 0;     // what the event is for (a link, a GPU), meaning set by kind
  std::uint32_t arg = 0;             // payload (a frame slot), meaning set by kind
  // Memory the event will read (a frame), only to prefetch it while the event before it
  // runs; never dereferenced, never part of the order.
  const void* hint = nullptr;
};
static_assert(sizeof(Event) == 32);
inline constexpr std::uint32_t kMaxEventKind = (1u << 5) - 1;
inline constexpr std::uint32_t kMaxEventTarget = (1u << 22) - 1;
inline constexpr std::uint32_t kMaxHintLines = (1u << 5) - 1;

class EventQueue {
 public:
  // Schedules an event; returns its sequence number. `hint_bytes` of `hint` are worth
  // prefetching (up to kMaxHintLines lines).
  // Precondition: kind <= kMaxEventKind, target <= kMaxEventTarget.
  std::uint64_t push(TimePs at, std::uint32_t kind, std::uint32_t target, std::uint32_t arg = 0,
                     const void* hint = nullptr, std::size_t hint_bytes = 0);
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  // Precondition: !empty(). The earliest event; ties by insertion order.
  const Event& top() const { return heap_.front(); }
  // Precondition: !empty(). Removes and returns top().
  Event pop();
  std::uint64_t pushed() const { return next_seq_; }

 private:
  // (at, seq) as one 128-bit number: comparing two is a compare and a subtract with borrow,
  // no branch.
  __extension__ using OrderKey = unsigned __int128;
  static OrderKey key(const Event& event) {
    return (static_cast<OrderKey>(event.at) << 64) | event.seq;
  }
  static bool before(const Event& a, const Event& b) { return key(a) < key(b); }
  // Index of the earliest of the four children starting at `first` (all four exist).
  std::size_t least_of_four(std::size_t first) const;
  // Index of the earliest child of `hole`, or 0 if it has none.
  std::size_t least_child(std::size_t hole) const;

  static constexpr std::size_t kArity = 4;  // a 4-ary heap: half the depth of a binary one
  std::vector<Event> heap_;                 // min-heap on (at, seq)
  std::uint64_t next_seq_ = 0;
};

inline std::uint64_t EventQueue::push(TimePs at, std::uint32_t kind, std::uint32_t target,
                                      std::uint32_t arg, const void* hint, std::size_t hint_bytes) {
  Event event;
  event.at = at;
  event.seq = next_seq_++;
  event.kind = kind & kMaxEventKind;
  const std::size_t lines = (hint_bytes + 63) / 64;
  event.hint_lines =
      static_cast<std::uint32_t>(lines < kMaxHintLines ? lines : kMaxHintLines) & kMaxHintLines;
  event.target = target & kMaxEventTarget;
  event.arg = arg;
  event.hint = hint;
  // Sift up from a new last slot. New events are mostly later than most, so this is short.
  std::size_t child = heap_.size();
  heap_.push_back(event);
  while (child > 0) {
    const std::size_t parent = (child - 1) / kArity;
    if (!before(event, heap_[parent])) break;
    heap_[child] = heap_[parent];
    child = parent;
  }
  heap_[child] = event;
  return event.seq;
}

inline std::size_t EventQueue::least_of_four(std::size_t first) const {
  const Event* child = heap_.data() + first;
  // Arithmetic on the comparisons, not branches: which child is earliest is a coin toss the
  // branch predictor would lose half the time.
  const std::size_t left = first + static_cast<std::size_t>(before(child[1], child[0]));
  const std::size_t right = first + 2 + static_cast<std::size_t>(before(child[3], child[2]));
  // All ones when the right pair's earliest is earlier than the left pair's.
  const std::size_t take_right = 0 - static_cast<std::size_t>(before(heap_[right], heap_[left]));
  return left ^ ((left ^ right) & take_right);
}

inline std::size_t EventQueue::least_child(std::size_t hole) const {
  const std::size_t first = kArity * hole + 1;
  if (first + kArity <= heap_.size()) return least_of_four(first);
  if (first >= heap_.size()) return 0;
  std::size_t child = first;  // the last parent: fewer than four children
  for (std::size_t other = first + 1; other < heap_.size(); ++other) {
    if (before(heap_[other], heap_[child])) child = other;
  }
  return child;
}

inline Event EventQueue::pop() {
  const Event result = heap_.front();
  const Event last = heap_.back();
  heap_.pop_back();
  if (heap_.empty()) return result;
  // Sift the last element down from the root.
  std::size_t hole = 0;
  for (;;) {
    const std::size_t child = least_child(hole);
    if (child == 0 || !before(heap_[child], last)) break;
    heap_[hole] = heap_[child];
    hole = child;
  }
  heap_[hole] = last;
  return result;
}

}  // namespace ethx::sim
