#include "fabric/transport/shm/frame_ring.hpp"

namespace ethx::shm {

FrameRing::FrameRing() {
  std::array<std::uint32_t, kRingSlots> all_slots;
  for (std::uint32_t index = 0; index < kRingSlots; ++index) all_slots[index] = index;
  free_.push(all_slots.data(), all_slots.size());
}

bool FrameRing::try_push(std::span<const std::byte> frame) {
  if (frame.size() > kSlotBytes) return false;
  std::uint32_t slot_index;
  if (!free_.pop(slot_index)) return false;
  // A corrupted index from the consumer would make us write out of bounds; drop the slot.
  if (slot_index >= kRingSlots) return false;
  FrameSlot& slot = slots_[slot_index];
  if (!frame.empty()) std::memcpy(slot.data, frame.data(), frame.size());
  slot.length = static_cast<std::uint16_t>(frame.size());
  // Cannot fail: there are only kRingSlots indices and the queue holds that many.
  filled_.push(slot_index);
  return true;
}

void FrameRing::give_back(const std::uint32_t* slot_indices, std::size_t count) {
  // An out-of-range index (from a corrupted peer) is dropped rather than handed back; so is one
  // the queue has no room for (the peer published an index twice).
  std::array<std::uint32_t, kBatchChunk> valid_indices;
  std::size_t valid_count = 0;
  for (std::size_t i = 0; i < count && valid_count < kBatchChunk; ++i) {
    if (slot_indices[i] < kRingSlots) valid_indices[valid_count++] = slot_indices[i];
  }
  // One push publishes the whole batch with a single store of the queue's write index.
  free_.push(valid_indices.data(), valid_count);
}

}  // namespace ethx::shm
