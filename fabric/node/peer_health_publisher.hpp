// Publishes a GPU's view of its peers (the requester's liveness state) into its control
// mailbox's PeerHealthBoard, where `ethx status` reads it. Called from the loop that drives the
// engine; costs a few compares when nothing changed.
#pragma once

#include <cstdint>
#include <vector>

#include "fabric/transport/shm/control_region.hpp"
#include "packet-engine/requester.hpp"

namespace ethx {

class PeerHealthPublisher {
 public:
  explicit PeerHealthPublisher(PeerHealthBoard& board) : board_(&board) {}

  void publish(const Requester& requester);

 private:
  PeerHealthBoard* board_;
  std::uint64_t published_transitions_ = ~std::uint64_t{0};  // forces the first bitmap write
  std::uint64_t published_fast_failed_ = 0;
};

// The GPUs a board says are down, lowest first.
std::vector<GpuId> down_peers_of(const PeerHealthBoard& board);

}  // namespace ethx
