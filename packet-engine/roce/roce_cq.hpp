// A completion queue: work completions in the order the QPs produce them, polled by the user.
#pragma once

#include <cstddef>
#include <deque>
#include <span>

#include "packet-engine/roce/roce_verbs.hpp"

namespace ethx::roce {

class CompletionQueue {
 public:
  explicit CompletionQueue(std::size_t capacity) : capacity_(capacity) {}

  // False (and the completion is lost, as on a real CQ overrun) if the queue is full.
  bool push(const WorkCompletion& completion) {
    if (entries_.size() >= capacity_) return false;
    entries_.push_back(completion);
    return true;
  }
  // Moves up to out.size() completions into `out`; returns how many.
  std::size_t poll(std::span<WorkCompletion> out) {
    std::size_t n = 0;
    while (n < out.size() && !entries_.empty()) {
      out[n++] = entries_.front();
      entries_.pop_front();
    }
    return n;
  }
  std::size_t size() const { return entries_.size(); }
  std::size_t capacity() const { return capacity_; }

 private:
  std::size_t capacity_;
  std::deque<WorkCompletion> entries_;
};

}  // namespace ethx::roce
