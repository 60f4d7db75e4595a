// What a sans-I/O core asks its runtime to do after a call.
#pragma once

#include <optional>
#include <vector>

#include "address-map/fabric_types.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {

struct Effects {
  std::vector<wire::Frame> send;  // frames to put on the wire, in order
  std::optional<TimeNs> wake_at;  // call poll() again no later than this

  void wake_no_later_than(TimeNs when) {
    if (!wake_at || when < *wake_at) wake_at = when;
  }
  void clear() {
    send.clear();
    wake_at.reset();
  }
};

}  // namespace ethx
