#include "fabric/node/peer_health_publisher.hpp"

#include <array>

#include "fabric/config/topology_config.hpp"

namespace ethx {

static_assert(kPeerBitmapWords * 64 >= kMaxGpus, "the board must have a bit for every GPU");

void PeerHealthPublisher::publish(const Requester& requester) {
  const RequesterCounters& counters = requester.counters();
  if (counters.ops_fast_failed != published_fast_failed_) {
    board_->ops_fast_failed.store(counters.ops_fast_failed, std::memory_order_relaxed);
    published_fast_failed_ = counters.ops_fast_failed;
  }
  // The bitmap changes only with a transition: rebuild it then, not on every call.
  const std::uint64_t transitions = counters.peers_marked_down + counters.peers_marked_up;
  if (transitions == published_transitions_) return;
  std::array<std::uint64_t, kPeerBitmapWords> bitmap{};
  for (const GpuId gpu : requester.down_peers()) {
    if (gpu < kPeerBitmapWords * 64) bitmap[gpu / 64] |= std::uint64_t{1} << (gpu % 64);
  }
  for (std::size_t word = 0; word < kPeerBitmapWords; ++word) {
    board_->down_bitmap[word].store(bitmap[word], std::memory_order_relaxed);
  }
  board_->peers_marked_down.store(counters.peers_marked_down, std::memory_order_relaxed);
  board_->peers_marked_up.store(counters.peers_marked_up, std::memory_order_release);
  published_transitions_ = transitions;
}

std::vector<GpuId> down_peers_of(const PeerHealthBoard& board) {
  std::vector<GpuId> down;
  for (std::size_t word = 0; word < kPeerBitmapWords; ++word) {
    const std::uint64_t bits = board.down_bitmap[word].load(std::memory_order_relaxed);
    for (std::size_t bit = 0; bit < 64; ++bit) {
      if ((bits >> bit) & 1U) down.push_back(static_cast<GpuId>(word * 64 + bit));
    }
  }
  return down;
}

}  // namespace ethx
