#include "fabric/sim/sim_partition.hpp"

#include <stdexcept>
#include <string>

namespace ethx::sim {
namespace {

// Spare frame buffers kept for the engines (Effects::spare). As many as the frames in flight
// can swing by (at 1024 GPUs, hundreds of thousands): a buffer freed when the pool is full is
// allocated again a moment later. Keeping it costs nothing extra, peak memory is set by the
// most frames ever in flight; the bound only guards against a runaway.
constexpr std::size_t kMaxSpareFrames = std::size_t{1} << 20;

}  // namespace

void SimPartition::release_slot(std::uint32_t slot) {
  // Free slots hold no buffer: what the frame leaves behind goes to the engines' spares.
  wire::Frame& frame = slots[slot];
  if (frame.capacity() > 0 && effects.spare.size() < kMaxSpareFrames) {
    effects.spare.push_back(std::move(frame));
  }
  frame = wire::Frame();
  free_slots.push_back(slot);
}

void SimPartition::throw_inside_window(TimePs arrival_ps) const {
  throw std::logic_error("simulator: a frame sent at " + std::to_string(now) + " ps arrives at " +
                         std::to_string(arrival_ps) + " ps, inside the window ending at " +
                         std::to_string(window_end_ps) + " ps (lookahead too long)");
}

}  // namespace ethx::sim
