// The forwarding-rate measurement of `ethx bench` on the socket transports (JSON switch_mpps
// and bare_forwarder_mpps): before the nodes start, the coordinator opens GPU 0's and GPU 1's
// veths itself and, from one thread, sends valid fabric frames (posted writes, CRC and all) of
// an exact size from GPU 0 to GPU 1 through whatever forwards between them, counting what
// arrives. One thread for both ends keeps the measurement to two busy processes (this and the
// forwarder) on a 2-core machine, and a bounded window of frames in flight keeps every ring
// below its size, so the rate is the forwarder's, not a count of overflow drops.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fabric/config/topology_config.hpp"
#include "fabric/transport/net/frame_socket.hpp"

namespace ethx {

struct ForwardingRateResult {
  double mpps = 0;  // frames received per second, in millions
  std::uint64_t sent = 0;
  std::uint64_t received = 0;
  std::uint64_t lost = 0;  // sent but not received within the drain time
};

class ForwardingProbe {
 public:
  // Opens node sockets on GPU 0's and GPU 1's veths of run `tag`; the veths must exist and
  // no node may have them open.
  ForwardingProbe(std::string_view transport, const std::string& tag,
                  const TopologyConfig& topology);
  ~ForwardingProbe();
  ForwardingProbe(const ForwardingProbe&) = delete;
  ForwardingProbe& operator=(const ForwardingProbe&) = delete;

  // Streams frames of exactly `frame_bytes` (Ethernet header to CRC trailer, no FCS) for
  // `duration_ns` with at most `window` in flight. Throws Interrupted on Ctrl-C and
  // std::runtime_error if nothing arrives for a second.
  ForwardingRateResult measure(std::size_t frame_bytes, std::int64_t duration_ns,
                               std::uint32_t window = 256);

 private:
  const TopologyConfig& topology_;
  std::unique_ptr<FrameSocket> sender_;
  std::unique_ptr<FrameSocket> receiver_;
};

// A posted write from GPU 0 to GPU 1 whose encoded frame is exactly `frame_bytes` long.
// Throws std::invalid_argument if the size cannot carry one transaction or exceeds the
// topology's frame_bytes_max.
std::vector<std::byte> probe_frame(const TopologyConfig& topology, std::size_t frame_bytes);

}  // namespace ethx
