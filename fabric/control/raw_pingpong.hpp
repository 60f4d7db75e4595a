// The bare-transport baseline of `ethx bench --transport afxdp|afpacket`: a ping-pong of small
// frames between two network namespaces joined by one veth pair, with no switch and no engine
// (JSON `raw_pingpong_ns`). Same sockets, same XDP program and the same adaptive waiting as the
// fabric, so the ratio to it shows what the switch hop and the engine add.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ethx {

struct RawPingPongResult {
  std::uint64_t p50_ns = 0;  // median over rounds of each round's p50
  std::uint64_t p99_ns = 0;  // median over rounds of each round's p99
  std::uint64_t samples = 0;
};

// Creates netns::pair_topology(tag, mtu) (namespaces ethx-<tag>-n0 and -n1), opens a node
// socket of `transport` on each end, bounces 64 B echo frames (EtherType 0x88B6) from n0 to n1
// and back, and removes the namespaces again (also when it throws). Throws Interrupted on
// Ctrl-C and std::runtime_error when a frame does not come back within a second.
RawPingPongResult measure_raw_pingpong(std::string_view transport, const std::string& tag,
                                       unsigned mtu, std::uint32_t rounds,
                                       std::uint32_t samples_per_round);

}  // namespace ethx
