// A single-producer single-consumer ring of Ethernet frames that lives in shared memory: one
// direction of the link between a node process and its ethx-switch port.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include <boost/lockfree/spsc_queue.hpp>

namespace ethx::shm {

inline constexpr std::size_t kRingSlots = 256;
inline constexpr std::size_t kSlotTotalBytes = 2048;
inline constexpr std::size_t kSlotHeaderBytes = sizeof(std::uint16_t);
// 2046: with the 2-byte length in front, the payload after a 14-byte Ethernet header starts
// 16-byte aligned (the NET_IP_ALIGN trick), and a slot is exactly 2 KiB.
inline constexpr std::size_t kSlotBytes = kSlotTotalBytes - kSlotHeaderBytes;

struct alignas(64) FrameSlot {
  std::uint16_t length;  // written by whoever owns the slot; no initializer: never read unowned
  std::byte data[kSlotBytes];
};
static_assert(sizeof(FrameSlot) == kSlotTotalBytes);
static_assert(offsetof(FrameSlot, data) == kSlotHeaderBytes);
static_assert(kSlotBytes <= UINT16_MAX);

// The frames stay in their slots; only 32-bit slot indices travel through two Boost.Lockfree
// SPSC queues: `filled` (producer -> consumer) and `free` (consumer -> producer). So a frame is
// copied once, into the slot, and the consumer reads it in place.
//
// Lives in shared memory: the creator placement-news it into the mapping, the other side reaches
// it with std::launder(reinterpret_cast<FrameRing*>(address)). That works because every member
// is address-free: fixed-capacity queues keep their storage inline (no pointers), and the
// atomics are lock-free (no hidden lock). Both are asserted below.
//
// A producer that crashes between taking a free slot and publishing it loses that one slot; the
// consumer is never blocked by it. The consumer trusts nothing it reads from the peer: slot
// indices and lengths are range-checked, so a buggy node cannot make the switch read out of
// bounds.
class FrameRing {
 public:
  FrameRing();  // every slot free
  FrameRing(const FrameRing&) = delete;
  FrameRing& operator=(const FrameRing&) = delete;

  static constexpr std::size_t max_frame_bytes() { return kSlotBytes; }

  // Producer side. False if the ring is full or the frame is larger than max_frame_bytes().
  bool try_push(std::span<const std::byte> frame);
  // Producer side: whether try_push of a frame that fits would succeed now.
  bool has_free_slot() const { return free_.read_available() > 0; }

  // Consumer side. Hands the oldest frame to consume(std::span<const std::byte>) in place, then
  // frees its slot (also if consume throws). False if the ring was empty. The span is valid only
  // during the call.
  template <class F>
  bool try_pop(F&& consume);
  // Consumer side. Pops up to `max` frames, calling consume for each in order; returns how many.
  // Indices move in chunks of up to 32: one store to each queue's shared index per chunk instead
  // of one per frame. If consume throws, the rest of its chunk is dropped (slots still freed).
  template <class F>
  std::size_t pop_batch(std::size_t max, F&& consume);

  // Exact on the consumer side; from anywhere else a snapshot that may already be stale.
  bool empty() const { return filled_.read_available() == 0; }
  std::size_t size() const { return filled_.read_available(); }

 private:
  using SlotIndexQueue =
      boost::lockfree::spsc_queue<std::uint32_t, boost::lockfree::capacity<kRingSlots>>;
  static constexpr std::size_t kBatchChunk = 32;

  // A span with data() == nullptr for an index or length the producer should never have written.
  std::span<const std::byte> frame_in(std::uint32_t slot_index) const;
  // count <= kBatchChunk.
  void give_back(const std::uint32_t* slot_indices, std::size_t count);

  std::array<FrameSlot, kRingSlots> slots_;
  SlotIndexQueue filled_;
  SlotIndexQueue free_;
};

static_assert(boost::lockfree::detail::atomic<std::size_t>::is_always_lock_free,
              "spsc_queue indices in shared memory must be lock-free atomics");
static_assert(
    sizeof(boost::lockfree::spsc_queue<std::uint32_t, boost::lockfree::capacity<kRingSlots>>) >=
        kRingSlots * sizeof(std::uint32_t),
    "a fixed-capacity spsc_queue must keep its storage inline, not behind a pointer");

inline std::span<const std::byte> FrameRing::frame_in(std::uint32_t slot_index) const {
  if (slot_index >= kRingSlots) return {};
  const FrameSlot& slot = slots_[slot_index];
  const std::size_t length = slot.length;  // read once: the peer could be rewriting it
  if (length > kSlotBytes) return {};
  return {slot.data, length};
}

template <class F>
bool FrameRing::try_pop(F&& consume) {
  std::uint32_t slot_index;
  if (!filled_.pop(slot_index)) return false;
  struct GiveBack {
    FrameRing& ring;
    std::uint32_t slot_index;
    ~GiveBack() { ring.give_back(&slot_index, 1); }
  } give_back_on_exit{*this, slot_index};
  if (const auto frame = frame_in(slot_index); frame.data() != nullptr) consume(frame);
  return true;
}

template <class F>
std::size_t FrameRing::pop_batch(std::size_t max, F&& consume) {
  std::size_t popped_total = 0;
  while (popped_total < max) {
    std::array<std::uint32_t, kBatchChunk> slot_indices;
    const std::size_t popped =
        filled_.pop(slot_indices.data(), std::min(kBatchChunk, max - popped_total));
    if (popped == 0) break;
    struct GiveBack {
      FrameRing& ring;
      const std::uint32_t* slot_indices;
      std::size_t count;
      ~GiveBack() { ring.give_back(slot_indices, count); }
    } give_back_on_exit{*this, slot_indices.data(), popped};
    for (std::size_t i = 0; i < popped; ++i) {
      if (const auto frame = frame_in(slot_indices[i]); frame.data() != nullptr) consume(frame);
    }
    popped_total += popped;
    if (popped < kBatchChunk) break;  // drained
  }
  return popped_total;
}

}  // namespace ethx::shm
