// The baseline that `ethx bench` measures the switch against: a minimal Ethernet forwarder on
// the same sockets, veths and adaptive waiting as ethx-switch, doing only what any forwarder
// must (destination MAC -> port, copy the frame out). No decode, no CRC check, no per-port
// queues, no counters by reason: what it costs is the transport's share, so
// switch_mpps / bare_forwarder_mpps is the price of the ethx switch core.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "fabric/transport/net/frame_socket.hpp"

namespace ethx {

struct BareForwarderCounters {
  std::uint64_t forwarded = 0;
  std::uint64_t unknown_destination = 0;  // counted, dropped
  std::uint64_t egress_full = 0;          // the egress ring had no room: counted, dropped
};

class BareForwarder {
 public:
  // Port i is ports[i]; frames for GPU i's MAC leave on port i. The sockets must outlive it.
  BareForwarder(const TopologyConfig& topology, std::vector<FrameSocket*> ports);

  // Forwards until should_stop() (checked before every pass and within every wait).
  void run(const std::function<bool()>& should_stop);
  // One pass over every port; true if a frame moved.
  bool step();

  const BareForwarderCounters& counters() const { return counters_; }

 private:
  std::vector<FrameSocket*> ports_;
  std::unordered_map<std::uint64_t, std::size_t> port_by_mac_;
  std::vector<bool> needs_flush_;
  PollWaiter waiter_;
  BareForwarderCounters counters_;
};

}  // namespace ethx
