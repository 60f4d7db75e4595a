// One GPU's packet engine: a requester and a completer sharing one transmit framer.
//
// The endpoint decodes each arriving frame once, counts and drops what is malformed or not
// addressed to this GPU, lets the reliability layer drop duplicates and frames after a gap,
// and hands requests to the completer and responses to the requester.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "packet-engine/completer.hpp"
#include "packet-engine/effects.hpp"
#include "packet-engine/engine_config.hpp"
#include "packet-engine/reliable_links.hpp"
#include "packet-engine/requester.hpp"
#include "packet-engine/tx_framer.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {

struct EndpointCounters {
  std::uint64_t frames_rx = 0;
  std::uint64_t bytes_rx = 0;
  std::uint64_t txns_rx = 0;
  std::uint64_t malformed = 0;
  std::array<std::uint64_t, wire::kDecodeErrorCount> malformed_by_reason{};
  std::uint64_t misdelivered = 0;  // valid frame for another GPU or MAC
};

class Endpoint {
 public:
  Endpoint(EngineConfig config, std::span<std::byte> local_memory);
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  Requester& requester() { return requester_; }
  const Completer& completer() const { return completer_; }
  const ReliableLinks& links() const { return links_; }
  const EngineConfig& config() const { return config_; }

  // A frame arrived from the wire. The responses it triggers are packed into frames and leave
  // at the next poll(): call it after each batch of received frames.
  void on_frame(std::span<const std::byte> frame, TimeNs now, Effects& effects);
  // Timeouts, and the transmission of transactions (requests and responses) since the last
  // poll.
  void poll(TimeNs now, Effects& effects);

  const EndpointCounters& counters() const { return counters_; }
  std::uint64_t frames_tx() const { return framer_.frames_sent(); }
  std::uint64_t txns_tx() const { return framer_.txns_sent(); }

 private:
  EngineConfig config_;
  ReliableLinks links_;  // before the framer, which sends through it
  TxFramer framer_;
  Requester requester_;
  Completer completer_;
  EndpointCounters counters_;
};

}  // namespace ethx
