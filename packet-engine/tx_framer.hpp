// Packs outgoing transactions into one open frame per destination GPU.
//
// Requester and completer share it, so requests and responses to the same GPU can travel in
// one frame (as Broadcom's SUE packs several transactions per frame). Transactions to one
// destination leave in the order they were appended, which the ordering rules rely on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "packet-engine/effects.hpp"
#include "packet-engine/engine_config.hpp"
#include "packet-engine/reliable_links.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {

class TxFramer {
 public:
  // Finished frames leave through `links`, which sequences them or holds them for credit.
  TxFramer(const EngineConfig& config, ReliableLinks& links);

  // Appends a transaction for `dst` and returns its payload area. A full frame is emitted
  // first. `urgent` transactions (requests that wait for an answer, responses) make the frame
  // leave at the next flush(); posted writes may wait up to write_combine_ns.
  std::span<std::byte> append(GpuId dst, const wire::TxnFields& fields, std::size_t payload_bytes,
                              bool urgent, TimeNs now, Effects& effects);
  // Grows the open frame's last posted write to `dst` if `address` continues it.
  bool try_extend_posted_write(GpuId dst, std::uint64_t address, std::span<const std::byte> data);
  // Emits urgent frames, and posted-only frames whose combine time has passed; asks to be
  // woken for the rest. Inline when no frame is open: the engine flushes after every frame
  // it receives, most of which (responses) open none.
  void flush(TimeNs now, Effects& effects) {
    if (!open_dsts_.empty()) flush_open(now, effects);
  }
  bool has_open_frames() const { return !open_dsts_.empty(); }
  std::size_t max_payload() const { return max_payload_; }
  std::uint64_t frames_sent() const { return frames_sent_; }
  std::uint64_t txns_sent() const { return txns_sent_; }

 private:
  struct OpenFrame {
    OpenFrame(std::size_t frame_bytes_max, wire::Crc crc) : builder(frame_bytes_max, crc) {}
    wire::FrameBuilder builder;
    TimeNs opened_ns = 0;
    bool urgent = false;
  };
  static constexpr std::uint32_t kClosed = UINT32_MAX;

  // The open frame to `dst`, or nullptr.
  OpenFrame* open_frame(GpuId dst) {
    return frame_of_[dst] == kClosed ? nullptr : &frames_[frame_of_[dst]];
  }
  OpenFrame& open(GpuId dst, TimeNs now, Effects& effects);  // builds in a spare buffer if any
  void finish(GpuId dst, TimeNs now, Effects& effects);      // frame out; caller fixes open_dsts_
  void emit(GpuId dst, TimeNs now, Effects& effects);        // frame out and forgotten
  void flush_open(TimeNs now, Effects& effects);

  const EngineConfig& config_;
  ReliableLinks& links_;
  std::size_t max_payload_;
  // Builders only for the destinations with an open frame, a handful at a time: one per
  // destination GPU cost 96 bytes of cold memory per pair, 96 MB at 1024 GPUs, touched on
  // every transaction (docs/simulator.md, "Speed").
  std::vector<OpenFrame> frames_;
  std::vector<std::uint32_t> free_frames_;  // indices into frames_ not in use
  std::vector<std::uint32_t> frame_of_;     // by destination GPU: index into frames_ or kClosed
  std::vector<GpuId> open_dsts_;            // destinations with a started frame, in opening order
  std::uint64_t frames_sent_ = 0;
  std::uint64_t txns_sent_ = 0;
};

}  // namespace ethx
