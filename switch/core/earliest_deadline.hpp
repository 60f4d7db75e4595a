// The earliest of many deadlines that change one at a time: a switch's ports' link-level retry
// timers, and their flow-control timers. Asking every port for its timers on every frame cost
// a third of a simulation with link-level retry and two thirds with flow control as well
// (docs/simulator.md, "Round 7"); this keeps each port's deadline as last noted and their
// minimum, and looks at them all again only when the one that held the minimum moved later.
// Sans-I/O: the caller notes a slot after anything that may move its deadline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "address-map/fabric_types.hpp"

namespace ethx {

class EarliestDeadline {
 public:
  static constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

  // `slots` deadlines, all kNever.
  void resize(std::size_t slots) { deadline_ns_.assign(slots, kNever); }
  // Slot `slot`'s deadline is now `at_ns` (kNever: none). Precondition: slot < size.
  void set(std::size_t slot, TimeNs at_ns) {
    const TimeNs was_ns = deadline_ns_[slot];
    deadline_ns_[slot] = at_ns;
    if (!earliest_known_) return;
    if (at_ns <= earliest_ns_) {
      earliest_ns_ = at_ns;
    } else if (was_ns == earliest_ns_) {
      earliest_known_ = false;  // it may have been the only one that early
    }
  }
  TimeNs at(std::size_t slot) const { return deadline_ns_[slot]; }
  // The earliest deadline of all slots; kNever if none has one.
  TimeNs earliest_ns() const {
    if (!earliest_known_) {
      earliest_ns_ = kNever;
      for (const TimeNs at_ns : deadline_ns_)
        earliest_ns_ = at_ns < earliest_ns_ ? at_ns : earliest_ns_;
      earliest_known_ = true;
    }
    return earliest_ns_;
  }

 private:
  std::vector<TimeNs> deadline_ns_;
  mutable TimeNs earliest_ns_ = kNever;
  mutable bool earliest_known_ = true;
};

}  // namespace ethx
