#include "packet-engine/roce/roce_node.hpp"

#include <algorithm>
#include <functional>

namespace ethx::roce {

RoceNode::RoceNode(const RoceNodeConfig& config) {
  context_.mac = config.mac;
  context_.ip = config.ip;
  context_.dscp = config.dscp;
  context_.ecn = config.ecn;
  context_.ttl = config.ttl;
  context_.pkey = config.pkey;
  context_.icrc = config.icrc ? Icrc::kCheck : Icrc::kSkip;
}

MemoryRegion RoceNode::register_memory(std::span<std::byte> bytes, std::uint32_t access,
                                       std::optional<std::uint64_t> iova) {
  return context_.memory.register_region(bytes, access, iova);
}

bool RoceNode::deregister_memory(std::uint32_t lkey) {
  return context_.memory.deregister(lkey);
}

CqId RoceNode::create_cq(std::size_t capacity) {
  cqs_.push_back(std::make_unique<CompletionQueue>(capacity));
  return static_cast<CqId>(cqs_.size() - 1);
}

std::optional<QpNum> RoceNode::create_qp(const QpConfig& config) {
  if (config.send_cq >= cqs_.size() || config.recv_cq >= cqs_.size()) return std::nullopt;
  if (!valid_path_mtu(config.path_mtu_bytes)) return std::nullopt;
  const QpNum qpn = next_qpn_;
  next_qpn_ = psn_add(next_qpn_, 1);
  if (next_qpn_ < 0x11) next_qpn_ = 0x11;
  qps_.emplace(qpn,
               QpEntry{std::make_unique<QueuePair>(qpn, config, context_, *cqs_[config.send_cq],
                                                   *cqs_[config.recv_cq]),
                       std::nullopt});
  return qpn;
}

bool RoceNode::connect_qp(QpNum qpn, const QpRemote& remote) {
  QueuePair* qp = find(qpn);
  return qp != nullptr && qp->connect(remote);
}

bool RoceNode::destroy_qp(QpNum qpn) {
  return qps_.erase(qpn) == 1;
}

RoceNode::QpEntry* RoceNode::find_entry(QpNum qpn) {
  const auto it = qps_.find(qpn);
  return it == qps_.end() ? nullptr : &it->second;
}

QueuePair* RoceNode::find(QpNum qpn) {
  QpEntry* entry = find_entry(qpn);
  return entry == nullptr ? nullptr : entry->qp.get();
}

const QueuePair* RoceNode::qp(QpNum qpn) const {
  const auto it = qps_.find(qpn);
  return it == qps_.end() ? nullptr : it->second.qp.get();
}

PostResult RoceNode::post_send(QpNum qpn, const SendWr& wr) {
  QueuePair* qp = find(qpn);
  return qp == nullptr ? PostResult::kQpNotReady : qp->post_send(wr);
}

PostResult RoceNode::post_recv(QpNum qpn, const RecvWr& wr) {
  QueuePair* qp = find(qpn);
  return qp == nullptr ? PostResult::kQpNotReady : qp->post_recv(wr);
}

bool RoceNode::ring_doorbell(QpNum qpn, TimeNs now, Effects& effects) {
  QpEntry* entry = find_entry(qpn);
  if (entry == nullptr) return false;
  entry->qp->doorbell(now, effects);
  request_wake(*entry, effects);
  return true;
}

std::size_t RoceNode::poll_cq(CqId cq, std::span<WorkCompletion> out) {
  if (cq >= cqs_.size()) return 0;
  return cqs_[cq]->poll(out);
}

void RoceNode::on_frame(std::span<const std::byte> frame, TimeNs now, Effects& effects) {
  ++context_.counters.frames_rx;
  PacketView packet;
  const DecodeError error = decode_packet(frame, packet, context_.icrc);
  if (error != DecodeError::kOk) {
    ++context_.counters.decode_errors[static_cast<std::size_t>(error)];
    return;
  }
  if (packet.dst_mac != context_.mac || packet.dst_ip != context_.ip) {
    ++context_.counters.not_for_us;
    return;
  }
  if (packet.pkey != context_.pkey) {
    ++context_.counters.bad_pkey;
    return;
  }
  QpEntry* entry = find_entry(packet.dest_qp);
  if (entry == nullptr || entry->qp->state() == QpState::kReset) {
    ++context_.counters.unknown_qp;
    return;
  }
  QueuePair* qp = entry->qp.get();
  // RC: only the connected peer may talk to this QP.
  if (packet.src_ip != qp->remote().ip) {
    ++context_.counters.wrong_peer;
    return;
  }
  qp->on_packet(packet, now, effects);
  request_wake(*entry, effects);
}

void RoceNode::poll(TimeNs now, Effects& effects) {
  std::vector<QpEntry*> due;
  while (!timers_.empty() && timers_.front().at <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), std::greater<>());
    const Timer timer = timers_.back();
    timers_.pop_back();
    QpEntry* entry = find_entry(timer.qpn);
    // A destroyed QP, or a deadline superseded by an earlier one filed since.
    if (entry == nullptr || entry->scheduled != timer.at) continue;
    entry->scheduled.reset();
    due.push_back(entry);
  }
  // Filed again only after the loop: a QP whose deadline is still due must not spin in it.
  for (QpEntry* entry : due) {
    if (const auto deadline = entry->qp->deadline(); deadline && *deadline <= now) {
      entry->qp->poll(now, effects);
    }
    request_wake(*entry, effects);
  }
  if (!timers_.empty()) effects.wake_no_later_than(timers_.front().at);
}

void RoceNode::request_wake(QpEntry& entry, Effects& effects) {
  const auto deadline = entry.qp->deadline();
  if (!deadline) return;
  effects.wake_no_later_than(*deadline);
  if (entry.scheduled && *entry.scheduled <= *deadline) return;  // filed already, early enough
  entry.scheduled = *deadline;
  timers_.push_back(Timer{*deadline, entry.qp->qpn()});
  std::push_heap(timers_.begin(), timers_.end(), std::greater<>());
}

std::size_t RoceNode::qp_state_bytes(QpNum qpn) const {
  const QueuePair* entry = qp(qpn);
  if (entry == nullptr) return 0;
  // The QP object plus its hash-table node (key, pointer, next pointer, cached hash).
  return entry->state_bytes() + sizeof(std::pair<const QpNum, QpEntry>) + 2 * sizeof(void*);
}

std::size_t RoceNode::total_qp_state_bytes() const {
  std::size_t total = qps_.bucket_count() * sizeof(void*);
  for (const auto& [qpn, entry] : qps_) total += qp_state_bytes(qpn);
  return total;
}

}  // namespace ethx::roce
