#include "fabric/sim/sim_event_queue.hpp"

#include <utility>

namespace ethx::sim {

std::uint64_t EventQueue::push(TimePs at, std::uint32_t kind, std::uint32_t target,
                               std::uint32_t arg, const void* hint) {
  const std::uint64_t seq = next_seq_++;
  Event event;
  event.at = at;
  event.seq = seq;
  event.kind = kind & 0xFF;
  event.target = target & kMaxEventTarget;
  event.arg = arg;
  event.hint = hint;
  heap_.push_back(event);
  // Sift up.
  std::size_t child = heap_.size() - 1;
  const Event moving = heap_[child];
  while (child > 0) {
    const std::size_t parent = (child - 1) / kArity;
    if (!before(moving, heap_[parent])) break;
    heap_[child] = heap_[parent];
    child = parent;
  }
  heap_[child] = moving;
  return seq;
}

Event EventQueue::pop() {
  const Event result = heap_.front();
  const Event last = heap_.back();
  heap_.pop_back();
  const std::size_t size = heap_.size();
  if (size == 0) return result;
  // Sift the last element down from the root.
  std::size_t hole = 0;
  for (;;) {
    const std::size_t first = kArity * hole + 1;
    if (first >= size) break;
    const std::size_t end = first + kArity < size ? first + kArity : size;
    std::size_t child = first;
    for (std::size_t other = first + 1; other < end; ++other) {
      if (before(heap_[other], heap_[child])) child = other;
    }
    if (!before(heap_[child], last)) break;
    heap_[hole] = heap_[child];
    hole = child;
  }
  heap_[hole] = last;
  return result;
}

}  // namespace ethx::sim
