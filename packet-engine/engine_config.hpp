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
};

inline constexpr std::uint32_t kMaxOutstandingLimit = 4096;

}  // namespace ethx
