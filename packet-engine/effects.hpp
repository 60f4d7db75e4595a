// What a sans-I/O core asks its runtime to do after a call.
#pragma once

#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "address-map/fabric_types.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {

struct Effects {
  std::vector<wire::Frame> send;  // frames to put on the wire, in order
  std::optional<TimeNs> wake_at;  // call poll() again no later than this
  // Frame buffers the runtime is done with (frames it delivered or sent), lent back so the
  // engine builds its next frames in them instead of allocating each one: the simulator does,
  // saving a malloc and a free per frame. Optional: with none the engine allocates. clear()
  // keeps them.
  std::vector<wire::Frame> spare;

  void wake_no_later_than(TimeNs when) {
    if (!wake_at || when < *wake_at) wake_at = when;
  }
  void clear() {
    send.clear();
    wake_at.reset();
  }
  // A spare buffer, emptied (its capacity kept), or an empty frame when there is none.
  wire::Frame take_spare() {
    if (spare.empty()) return {};
    wire::Frame frame = std::move(spare.back());
    spare.pop_back();
    frame.clear();
    return frame;
  }
  // A copy of `bytes` in a spare buffer.
  wire::Frame copy_frame(std::span<const std::byte> bytes) {
    wire::Frame frame = take_spare();
    frame.assign(bytes.begin(), bytes.end());
    return frame;
  }
};

}  // namespace ethx
