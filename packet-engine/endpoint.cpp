#include "packet-engine/endpoint.hpp"

namespace ethx {

Endpoint::Endpoint(EngineConfig config, std::span<std::byte> local_memory)
    : config_(std::move(config)),
      links_(config_),
      framer_(config_, links_),
      requester_(config_, framer_),
      completer_(config_, framer_, local_memory) {}

void Endpoint::on_frame(std::span<const std::byte> frame, TimeNs now, Effects& effects) {
  ++counters_.frames_rx;
  counters_.bytes_rx += frame.size();
  wire::FrameView view;
  const wire::DecodeError error = wire::decode_frame(frame, view, config_.crc);
  if (error != wire::DecodeError::kOk) {
    ++counters_.malformed;
    ++counters_.malformed_by_reason[static_cast<std::size_t>(error)];
    return;
  }
  if (view.dst_gpu != config_.self || view.dst_mac != config_.self_mac) {
    ++counters_.misdelivered;
    return;
  }
  // Any valid frame from a GPU proves it alive, duplicates and ACKs included.
  requester_.on_peer_frame(view.src_gpu);
  if (!links_.on_receive(view, now, effects)) return;
  wire::TxnCursor cursor(view);
  wire::TxnView txn;
  while (cursor.next(txn)) {
    ++counters_.txns_rx;
    if (wire::is_request(txn.opcode)) {
      completer_.on_request(view, txn, now, effects);
    } else {
      requester_.on_response(view.src_gpu, txn, now);
    }
  }
  // No flush here: responses wait for poll(), which the runtime calls once per batch of
  // received frames, so the answers to a whole batch share frames.
}

void Endpoint::poll(TimeNs now, Effects& effects) {
  requester_.poll(now, effects);
  framer_.flush(now, effects);
  links_.poll(now, effects);
}

}  // namespace ethx
