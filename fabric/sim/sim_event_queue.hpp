// The simulator's event queue: deterministic order by time, then by insertion sequence.
//
// Two events at the same modelled time run in the order they were scheduled, so a run
// depends only on its inputs (config, workload, seed), never on heap layout or addresses.
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
  std::uint32_t kind : 8 = 0;
  std::uint32_t target : 24 = 0;  // what the event is for (a link, a GPU), meaning set by kind
  std::uint32_t arg = 0;          // payload (a frame slot), meaning set by kind
  // Memory the event will read (a frame), only to prefetch it while the event before it
  // runs; never dereferenced, never part of the order.
  const void* hint = nullptr;
};
static_assert(sizeof(Event) == 32);
inline constexpr std::uint32_t kMaxEventTarget = (1u << 24) - 1;

class EventQueue {
 public:
  // Schedules an event; returns its sequence number.
  // Precondition: kind < 256, target <= kMaxEventTarget.
  std::uint64_t push(TimePs at, std::uint32_t kind, std::uint32_t target, std::uint32_t arg = 0,
                     const void* hint = nullptr);
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  // Precondition: !empty(). The earliest event; ties by insertion order.
  const Event& top() const { return heap_.front(); }
  Event pop();
  std::uint64_t pushed() const { return next_seq_; }

 private:
  static bool before(const Event& a, const Event& b) {
    return a.at != b.at ? a.at < b.at : a.seq < b.seq;
  }
  static constexpr std::size_t kArity = 4;  // a 4-ary heap: half the depth of a binary one
  std::vector<Event> heap_;                 // min-heap on (at, seq)
  std::uint64_t next_seq_ = 0;
};

}  // namespace ethx::sim
