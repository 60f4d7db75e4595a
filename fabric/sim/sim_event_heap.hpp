// The simulator's events, and a 4-ary min-heap of them ordered by time, then by sequence.
//
// Two events at the same modelled time run in the order they were scheduled (their sequence
// numbers), so a run depends only on its inputs (config, workload, seed), never on heap layout
// or addresses. The heap keeps the event queue's far-future events (sim_event_queue.hpp; it was
// the whole queue before the calendar, and `ethx_sim_bench` measures it as the baseline). Push
// and pop are defined here, inline, and pop picks the earliest of four children without
// branches (docs/simulator.md, "Speed"; tests/bench/sim_bench.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ethx::sim {

// Modelled time in picoseconds: serialization of one 84 B frame at 800 Gbit/s is 840 ps, so
// nanoseconds would round it away. 2^64 ps is about 213 days.
using TimePs = std::uint64_t;
inline constexpr TimePs kPsPerNs = 1000;

// 32 bytes: two to a cache line in a heap.
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

// A min-heap of events on (at, seq); the caller numbers them.
class EventHeap {
 public:
  void push(const Event& event);
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  // Precondition: !empty(). The earliest event; ties by sequence.
  const Event& top() const { return heap_.front(); }
  // Precondition: !empty(). Removes and returns top().
  Event pop();

  // (at, seq) as one 128-bit number: comparing two is a compare and a subtract with borrow,
  // no branch.
  __extension__ using OrderKey = unsigned __int128;
  static OrderKey key(const Event& event) {
    return (static_cast<OrderKey>(event.at) << 64) | event.seq;
  }
  static bool before(const Event& a, const Event& b) { return key(a) < key(b); }

 private:
  // Index of the earliest of the four children starting at `first` (all four exist).
  std::size_t least_of_four(std::size_t first) const;
  // Index of the earliest child of `hole`, or 0 if it has none.
  std::size_t least_child(std::size_t hole) const;

  static constexpr std::size_t kArity = 4;  // a 4-ary heap: half the depth of a binary one
  std::vector<Event> heap_;                 // min-heap on (at, seq)
};

inline void EventHeap::push(const Event& event) {
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
}

inline std::size_t EventHeap::least_of_four(std::size_t first) const {
  const Event* child = heap_.data() + first;
  // Arithmetic on the comparisons, not branches: which child is earliest is a coin toss the
  // branch predictor would lose half the time.
  const std::size_t left = first + static_cast<std::size_t>(before(child[1], child[0]));
  const std::size_t right = first + 2 + static_cast<std::size_t>(before(child[3], child[2]));
  // All ones when the right pair's earliest is earlier than the left pair's.
  const std::size_t take_right = 0 - static_cast<std::size_t>(before(heap_[right], heap_[left]));
  return left ^ ((left ^ right) & take_right);
}

inline std::size_t EventHeap::least_child(std::size_t hole) const {
  const std::size_t first = kArity * hole + 1;
  if (first + kArity <= heap_.size()) return least_of_four(first);
  if (first >= heap_.size()) return 0;
  std::size_t child = first;  // the last parent: fewer than four children
  for (std::size_t other = first + 1; other < heap_.size(); ++other) {
    if (before(heap_[other], heap_[child])) child = other;
  }
  return child;
}

inline Event EventHeap::pop() {
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
