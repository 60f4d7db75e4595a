// The simulator's link model: serialization of every byte on the wire, then propagation.
//
// A link is one direction of a cable. It sends one frame at a time: a frame of `frame_bytes`
// occupies the wire for wire::wire_bytes(frame_bytes) (padding to 60 B, preamble + SFD, FCS,
// inter-frame gap) at the link rate, and its last bit reaches the far end `propagation` later.
// Receivers are store-and-forward: they see a frame when its last bit has arrived. A frame
// leaves its sender's queue (a switch's egress queue, a NIC's transmit queue) when its
// transmission starts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fabric/sim/sim_event_queue.hpp"
#include "packet-engine/fifo.hpp"

namespace ethx::sim {

// Picoseconds the wire is busy with a frame of `frame_bytes` (Ethernet framing included) at
// `rate_gbps`, rounded to the nearest picosecond.
TimePs serialization_ps(std::size_t frame_bytes, double rate_gbps);

// serialization_ps at one rate, remembered by frame size: every transmission asks, and the
// division and rounding cost a third of sending a frame. Same results, by construction.
class SerializationTable {
 public:
  explicit SerializationTable(double rate_gbps) : rate_gbps_(rate_gbps) {}
  TimePs operator()(std::size_t frame_bytes, double rate_gbps) {
    if (rate_gbps != rate_gbps_) return serialization_ps(frame_bytes, rate_gbps);
    if (frame_bytes >= ps_.size()) ps_.resize(frame_bytes + 1, 0);
    TimePs& ps = ps_[frame_bytes];
    if (ps == 0) ps = serialization_ps(frame_bytes, rate_gbps);  // never 0: 84 B at least
    return ps;
  }

 private:
  double rate_gbps_;
  std::vector<TimePs> ps_;  // by frame bytes; 0 until computed
};

// Where a link ends.
enum class NodeKind : std::uint8_t { kGpu, kSwitch };

struct LinkEnd {
  NodeKind kind = NodeKind::kGpu;
  std::uint32_t node = 0;  // GPU id or switch index
  std::uint32_t port = 0;  // switch port (unused for a GPU)
};

struct Link {
  LinkEnd from;
  LinkEnd to;
  double rate_gbps = 800.0;
  // Fixed delay from the last bit leaving `from` to the frame being handed to `to`:
  // propagation plus the receiver's pipeline (switch forwarding latency or NIC rx latency).
  TimePs delay_ps = 0;
  // Its ends are in different partitions of the simulator (sim_partition.hpp): a frame on it
  // goes to the other partition's outbox.
  bool crosses = false;
  // The sender's, and below it the receiver's, each on cache lines of its own: the simulator
  // may run a link's two ends on two threads (sim_partition.hpp), and each end writes its part
  // for every frame.
  alignas(64) TimePs free_at = 0;  // the wire is busy with a frame until then
  bool kick_pending = false;       // a kTxDone event will start the next waiting frame
  std::uint64_t frames_sent = 0;
  std::uint64_t wire_bytes_sent = 0;
  // Frames on the wire or in the receiver's pipeline, in arrival order (arrivals on one link
  // are monotonic, so only the first needs an event in the queue).
  struct InFlight {
    TimePs at;
    std::uint32_t slot;
    std::uint32_t hint_bytes;  // how much of the frame its event will read
    const std::byte* data;     // the frame's bytes: the next event's prefetch hint
  };
  alignas(64) Fifo<InFlight> in_flight;
};

}  // namespace ethx::sim
