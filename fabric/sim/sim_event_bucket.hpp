// One bucket of the event calendar (sim_event_queue.hpp) and the pool its events live in.
//
// A bucket holds the events of one short span of modelled time, earliest first, ties in
// insertion order. Within a span there are few distinct times and many events at each (a
// thousand GPUs doing the same thing at the same picosecond), pushed in sequence order; so a
// bucket is a short sorted list of times, each with a FIFO of its events. Pushing finds the
// time from the back (usually the last, or a new one), popping takes the first time's first
// event: no comparisons of events at all. The FIFOs are linked lists through one pool shared
// by all buckets, whose free slots are reused last-freed first: memory stays as large as the
// most events ever pending, and the slots in use stay in cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fabric/sim/sim_event_heap.hpp"

namespace ethx::sim {

class EventPool {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  // A free slot, its event to be filled in place by the caller.
  std::uint32_t allocate() {
    const std::uint32_t node = free_;
    if (node == kNone) return grow();
    free_ = next_[node];
    next_[node] = kNone;
    return node;
  }
  void release(std::uint32_t node) {
    next_[node] = free_;
    free_ = node;
  }
  Event& event(std::uint32_t node) { return events_[node]; }
  const Event& event(std::uint32_t node) const { return events_[node]; }
  std::uint32_t next(std::uint32_t node) const { return next_[node]; }
  void link(std::uint32_t node, std::uint32_t after) { next_[after] = node; }

 private:
  // A new slot at the end (no free one): rare once the pool has grown to the most events
  // pending, so out of line.
  [[gnu::noinline]] std::uint32_t grow() {
    const auto node = static_cast<std::uint32_t>(events_.size());
    events_.emplace_back();
    next_.push_back(kNone);
    return node;
  }

  std::vector<Event> events_;
  std::vector<std::uint32_t> next_;  // the next event at the same time, or the next free slot
  std::uint32_t free_ = kNone;
};

class EventBucket {
 public:
  // Adds the event in pool slot `node`, at time `at`, after every event pushed before it.
  void push(std::uint32_t node, TimePs at, EventPool& pool) {
    // The usual cases inline: the latest time so far, or a new latest time.
    if (times_.size() > first_) {
      Time& last = times_.back();
      if (last.at == at) {
        pool.link(node, last.tail);
        last.tail = node;
        return;
      }
      if (last.at > at) {
        push_earlier(node, at, pool);
        return;
      }
    }
    times_.push_back(Time{at, node, node});
  }
  bool empty() const { return first_ == times_.size(); }
  // Precondition: !empty().
  const Event& top(const EventPool& pool) const { return pool.event(times_[first_].head); }
  // Precondition: !empty().
  Event pop(EventPool& pool) {
    Time& time = times_[first_];
    const std::uint32_t node = time.head;
    const Event event = pool.event(node);
    time.head = pool.next(node);
    pool.release(node);
    if (time.head == EventPool::kNone && ++first_ == times_.size()) {
      times_.clear();
      first_ = 0;
    }
    return event;
  }

 private:
  struct Time {
    TimePs at;
    std::uint32_t head;  // pool nodes: the FIFO of events at `at`
    std::uint32_t tail;
  };
  // push() for a time earlier than the latest: its place, from the back.
  [[gnu::noinline]] void push_earlier(std::uint32_t node, TimePs at, EventPool& pool) {
    std::size_t place = times_.size();
    while (place > first_ && times_[place - 1].at > at) --place;
    if (place > first_ && times_[place - 1].at == at) {
      Time& time = times_[place - 1];
      pool.link(node, time.tail);
      time.tail = node;
      return;
    }
    times_.insert(times_.begin() + static_cast<std::ptrdiff_t>(place), Time{at, node, node});
  }

  std::vector<Time> times_;  // sorted by `at` from first_; the ones before are used up
  std::size_t first_ = 0;
};

}  // namespace ethx::sim
