// The RoCEv2 "NIC" of one ethx-node: a roce::RoceNode on the node's switch port, next to the
// load/store endpoint. It registers the node's HBM (remote read/write/atomic, addressed by
// offset: iova 0) and a private scratch buffer (the local side of WRITE sources and READ
// sinks), owns the completion queue the benchmarks poll, and keeps the connected QPs per peer
// GPU. Queue pairs are created and connected from out-of-band parameters the coordinator
// exchanges (QPN, PSN, rkey, MAC, IPv4), as an RDMA application does with RDMA-CM or a socket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "address-map/fabric_types.hpp"
#include "fabric/config/topology_config.hpp"
#include "packet-engine/effects.hpp"
#include "packet-engine/roce/roce_node.hpp"

namespace ethx {

// One connected QP to a peer and the key of the peer's HBM region it may access.
struct RoceConnection {
  roce::QpNum qpn = 0;
  std::uint32_t remote_rkey = 0;
};

class RoceHost {
 public:
  static constexpr std::size_t kScratchBytes = 4u << 20;
  static constexpr std::size_t kCqEntries = 1u << 16;

  RoceHost(const TopologyConfig& topology, GpuId self, std::span<std::byte> hbm);

  roce::RoceNode& node() { return node_; }
  const roce::RoceNode& node() const { return node_; }
  // Frames and the wake-up time the RoCE engine asked for; NodeRuntime sends the frames.
  Effects& effects() { return effects_; }
  void on_frame(std::span<const std::byte> frame, TimeNs now);
  // Runs the engine's timers (ACK timeout, RNR wait) once their earliest deadline has passed.
  void poll_if_due(TimeNs now);

  std::uint32_t hbm_rkey() const { return hbm_.rkey; }
  std::uint64_t hbm_bytes() const { return hbm_.bytes.size(); }
  std::span<std::byte> scratch() { return scratch_; }
  std::uint64_t scratch_addr() const { return scratch_region_.addr; }
  std::uint32_t scratch_lkey() const { return scratch_region_.lkey; }
  roce::CqId cq() const { return cq_; }
  std::uint32_t path_mtu_bytes() const { return path_mtu_bytes_; }

  // Creates `count` QPs meant for `peer`; returns their QPNs and first PSNs. Throws
  // std::runtime_error if the engine refuses.
  std::vector<std::pair<roce::QpNum, std::uint32_t>> create_qps(GpuId peer, std::size_t count);
  // Connects local QPs (from create_qps) to the peer's, pairwise; the peer's HBM rkey is what
  // the WRs will carry. Throws std::invalid_argument on a QPN that is not ours or the wrong
  // number of remotes.
  void connect_qps(GpuId peer, const std::vector<roce::QpNum>& local,
                   const std::vector<roce::QpRemote>& remote, std::uint32_t remote_rkey);
  // Destroys every QP to `peer` (connected or not); returns how many.
  std::size_t destroy_qps(GpuId peer);
  // The connected QPs to `peer`; throws std::invalid_argument naming the peer if none.
  const std::vector<RoceConnection>& connections(GpuId peer) const;

 private:
  static std::uint32_t path_mtu_for(std::size_t frame_bytes_max);

  roce::RoceNode node_;
  Effects effects_;
  roce::MemoryRegion hbm_;
  std::vector<std::byte> scratch_;
  roce::MemoryRegion scratch_region_;
  roce::CqId cq_ = 0;
  std::uint32_t path_mtu_bytes_ = 1024;
  std::uint32_t next_psn_ = 0;
  std::map<GpuId, std::vector<roce::QpNum>> created_;  // not yet connected
  std::map<GpuId, std::vector<RoceConnection>> connected_;
};

}  // namespace ethx
