#include "packet-engine/tx_framer.hpp"

#include <algorithm>

namespace ethx {

TxFramer::TxFramer(const EngineConfig& config, ReliableLinks& links)
    : config_(config),
      links_(links),
      max_payload_(wire::max_txn_payload(config.frame_bytes_max)),
      frame_of_(config.gpu_macs.size(), kClosed) {}

TxFramer::OpenFrame& TxFramer::open(GpuId dst, TimeNs now, Effects& effects) {
  std::uint32_t index = 0;
  if (free_frames_.empty()) {
    index = static_cast<std::uint32_t>(frames_.size());
    frames_.emplace_back(config_.frame_bytes_max, config_.crc);
  } else {
    index = free_frames_.back();
    free_frames_.pop_back();
  }
  frame_of_[dst] = index;
  OpenFrame& frame = frames_[index];
  frame.builder.start(wire::FrameAddress{config_.gpu_macs[dst], config_.self_mac, config_.self, dst,
                                         config_.partition, config_.incarnation},
                      effects.take_spare());
  frame.opened_ns = now;
  frame.urgent = false;
  open_dsts_.push_back(dst);
  return frame;
}

void TxFramer::finish(GpuId dst, TimeNs now, Effects& effects) {
  OpenFrame& frame = frames_[frame_of_[dst]];
  txns_sent_ += frame.builder.txn_count();
  ++frames_sent_;
  links_.send(dst, frame.builder, now, effects);
  free_frames_.push_back(frame_of_[dst]);
  frame_of_[dst] = kClosed;
}

void TxFramer::emit(GpuId dst, TimeNs now, Effects& effects) {
  finish(dst, now, effects);
  open_dsts_.erase(std::find(open_dsts_.begin(), open_dsts_.end(), dst));
}

std::span<std::byte> TxFramer::append(GpuId dst, const wire::TxnFields& fields,
                                      std::size_t payload_bytes, bool urgent, TimeNs now,
                                      Effects& effects) {
  OpenFrame* frame = open_frame(dst);
  if (frame != nullptr && !frame->builder.fits(payload_bytes)) {
    emit(dst, now, effects);
    frame = nullptr;
  }
  if (frame == nullptr) frame = &open(dst, now, effects);
  frame->urgent = frame->urgent || urgent;
  return frame->builder.append(fields, payload_bytes);
}

bool TxFramer::try_extend_posted_write(GpuId dst, std::uint64_t address,
                                       std::span<const std::byte> data) {
  OpenFrame* frame = open_frame(dst);
  return frame != nullptr && frame->builder.try_extend_posted_write(address, data, max_payload_);
}

void TxFramer::flush_open(TimeNs now, Effects& effects) {
  std::size_t kept = 0;
  for (GpuId dst : open_dsts_) {
    const OpenFrame& frame = frames_[frame_of_[dst]];
    const TimeNs send_at = frame.opened_ns + config_.write_combine_ns;
    if (frame.urgent || now >= send_at) {
      finish(dst, now, effects);
    } else {
      effects.wake_no_later_than(send_at);
      open_dsts_[kept++] = dst;
    }
  }
  open_dsts_.resize(kept);
}

}  // namespace ethx
