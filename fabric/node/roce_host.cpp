#include "fabric/node/roce_host.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "packet-engine/roce/roce_addressing.hpp"
#include "packet-engine/roce/roce_wire.hpp"

namespace ethx {
namespace {

// The ACK timeout on the fabric: the verbs default, IB timeout code 14 (4.096 us x 2^14 =
// 67 ms), with 7 retries. Shorter timeouts (code 10, 4.2 ms) ended QPs in kRetryExceeded on
// this shared 2-core machine whenever a peer process was descheduled for ~30 ms; a frame lost
// mid-message is still recovered at once by the sequence NAK.
constexpr TimeNs kFabricAckTimeoutNs = 67'108'864;

roce::RoceNodeConfig node_config(const TopologyConfig& topology, GpuId self) {
  roce::RoceNodeConfig config;
  config.mac = topology.gpus.at(self).mac;
  config.ip = roce_ipv4_for_gpu(self);
  return config;
}

}  // namespace

std::uint32_t RoceHost::path_mtu_for(std::size_t frame_bytes_max) {
  // The largest IB path MTU whose biggest request packet (WRITE First: RETH) fits a frame.
  for (std::uint32_t mtu = roce::kMaxPathMtuBytes; mtu >= roce::kMinPathMtuBytes; mtu /= 2) {
    if (roce::frame_bytes(roce::Opcode::kWriteFirst, mtu) <= frame_bytes_max) return mtu;
  }
  throw ConfigError("fabric.frame_bytes_max: " + std::to_string(frame_bytes_max) +
                    " bytes is too small for RoCEv2 with a 256 B path MTU");
}

RoceHost::RoceHost(const TopologyConfig& topology, GpuId self, std::span<std::byte> hbm)
    : node_(node_config(topology, self)),
      scratch_(kScratchBytes),
      // The engine's frame limit: with link-level retry its trailer takes 12 bytes of the wire's.
      path_mtu_bytes_(path_mtu_for(topology.engine_config(self).frame_bytes_max)),
      next_psn_((static_cast<std::uint32_t>(self) * 0x10001u + 0x100u) & roce::kPsnMask) {
  // HBM is addressed by offset (iova 0) so a peer's RETH address is the same number the
  // load/store benchmarks use as a remote offset.
  hbm_ = node_.register_memory(hbm,
                               roce::kAccessLocalWrite | roce::kAccessRemoteWrite |
                                   roce::kAccessRemoteRead | roce::kAccessRemoteAtomic,
                               std::uint64_t{0});
  scratch_region_ = node_.register_memory(scratch_, roce::kAccessLocalWrite);
  cq_ = node_.create_cq(kCqEntries);
}

void RoceHost::on_frame(std::span<const std::byte> frame, TimeNs now) {
  node_.on_frame(frame, now, effects_);
}

void RoceHost::poll_if_due(TimeNs now) {
  if (!effects_.wake_at || *effects_.wake_at > now) return;
  effects_.wake_at.reset();
  node_.poll(now, effects_);  // asks again for the earliest remaining deadline
}

std::vector<std::pair<roce::QpNum, std::uint32_t>> RoceHost::create_qps(GpuId peer,
                                                                        std::size_t count) {
  std::vector<std::pair<roce::QpNum, std::uint32_t>> made;
  for (std::size_t n = 0; n < count; ++n) {
    roce::QpConfig config;
    config.send_cq = cq_;
    config.recv_cq = cq_;
    config.path_mtu_bytes = path_mtu_bytes_;
    config.ack_timeout_ns = kFabricAckTimeoutNs;
    config.initial_psn = next_psn_;
    next_psn_ = roce::psn_add(next_psn_, 0x1000);
    const std::optional<roce::QpNum> qpn = node_.create_qp(config);
    if (!qpn) throw std::runtime_error("the RoCE engine refused to create a queue pair");
    created_[peer].push_back(*qpn);
    made.emplace_back(*qpn, config.initial_psn);
  }
  return made;
}

void RoceHost::connect_qps(GpuId peer, const std::vector<roce::QpNum>& local,
                           const std::vector<roce::QpRemote>& remote, std::uint32_t remote_rkey) {
  if (local.size() != remote.size()) {
    throw std::invalid_argument("roce_connect: " + std::to_string(local.size()) +
                                " local QPs but " + std::to_string(remote.size()) + " remote ones");
  }
  std::vector<roce::QpNum>& pending = created_[peer];
  for (std::size_t n = 0; n < local.size(); ++n) {
    const auto found = std::find(pending.begin(), pending.end(), local[n]);
    if (found == pending.end() || !node_.connect_qp(local[n], remote[n])) {
      throw std::invalid_argument("roce_connect: local_qpns: QP " + std::to_string(local[n]) +
                                  " was not created for GPU " + std::to_string(peer) +
                                  " or is already connected");
    }
    pending.erase(found);
    connected_[peer].push_back(RoceConnection{local[n], remote_rkey});
  }
}

std::size_t RoceHost::destroy_qps(GpuId peer) {
  std::size_t destroyed = 0;
  for (roce::QpNum qpn : created_[peer]) destroyed += node_.destroy_qp(qpn) ? 1 : 0;
  for (const RoceConnection& connection : connected_[peer]) {
    destroyed += node_.destroy_qp(connection.qpn) ? 1 : 0;
  }
  created_.erase(peer);
  connected_.erase(peer);
  return destroyed;
}

const std::vector<RoceConnection>& RoceHost::connections(GpuId peer) const {
  const auto found = connected_.find(peer);
  if (found == connected_.end() || found->second.empty()) {
    throw std::invalid_argument("peer: no connected RoCE queue pair to GPU " +
                                std::to_string(peer) + " (run roce_connect first)");
  }
  return found->second;
}

}  // namespace ethx
