// Parameters of one GPU's packet engine (requester + completer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "address-map/fabric_types.hpp"
#include "packet-engine/mac_addr.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {

// Go-back-N reliability (reliable_links.hpp, docs/reliability.md).
struct ReliabilityConfig {
  bool enabled = false;  // sequence this GPU's frames; every GPU acknowledges sequenced frames
  // Credits this GPU grants each sender: frames it may have unacknowledged towards us. The
  // credits field is one byte.
  std::uint32_t window_frames = 64;
  // Floor (and first value) of the retransmission timer, which otherwise follows the measured
  // round trip. 2 ms: on a host with more busy processes than cores a process waits up to a
  // few scheduler ticks, and a timer below that resends frames that were only late.
  TimeNs retransmit_timeout_ns = 2'000'000;
  TimeNs retransmit_timeout_max_ns = 32'000'000;  // exponential back-off stops here
  TimeNs ack_delay_ns = 20'000;                   // an ACK waits this long for a frame to ride on
};

inline constexpr std::uint32_t kMaxWindowFrames = 255;

// Peer liveness in the requester (requester.hpp, docs/reliability.md "When a component dies").
struct LivenessConfig {
  // Consecutive request timeouts to one GPU, with no frame from it in between, that mark it
  // down; 0 never marks a peer down. 3: one timeout may be a single lost frame on an
  // unsequenced link or a peer descheduled for a moment, three in a row with nothing heard
  // back is a peer that is gone.
  std::uint32_t down_after_timeouts = 3;
  // The timeouts must fall within this window, so rare timeouts hours apart never add up.
  // 10 s: a whole burst of requests to a dead peer times out within one request timeout (1 s
  // in the emulator), and a serial caller needs K timeouts = 3 s.
  TimeNs timeout_window_ns = 10'000'000'000;
  // While a peer is down, one probe (a flush request) goes to it this often; its answer, or
  // any other frame from the peer, brings it back up. 100 ms: a restarted GPU is reachable
  // again within a tenth of a second, for one minimum-size frame per interval per down peer.
  TimeNs probe_interval_ns = 100'000'000;
};

struct EngineConfig {
  GpuId self = 0;
  MacAddr self_mac = default_mac_for_gpu(0);
  std::uint16_t partition = 0;
  std::vector<MacAddr> gpu_macs;  // MAC of every GPU, indexed by GpuId; its size is the GPU count
  std::size_t frame_bytes_max = wire::kDefaultFrameBytesMax;
  // Bounded outstanding table; tags carry a 4-bit generation above a 12-bit index.
  std::uint32_t max_outstanding = 256;
  TimeNs request_timeout_ns = 100'000'000;  // a lost response becomes an error after this
  // Posted writes may wait this long for neighbours to share their frame; 0 sends them at the
  // next poll().
  TimeNs write_combine_ns = 0;
  Rights export_rights = kRightAll;  // what this GPU's completer lets remote GPUs do
  ReliabilityConfig reliability;
  LivenessConfig liveness;
  // Which start of this GPU's engine this is, carried in every frame header. The runtime picks
  // a fresh one per start (the engine reads no clock or random source); peers that see it
  // change reset the link state of the pair (reliable_links.hpp).
  std::uint32_t incarnation = 0;
  // Whether this engine's frames carry a CRC and arriving ones have it checked. Only the
  // simulator turns it off (wire::Crc); anything on a wire keeps it.
  wire::Crc crc = wire::Crc::kOn;
};

// Tags carry a 12-bit slot index; index 0xFFF is reserved for liveness probes.
inline constexpr std::uint32_t kMaxOutstandingLimit = 4095;

}  // namespace ethx
