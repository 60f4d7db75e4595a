// End-to-end reliability for load/store frames: go-back-N with per-peer sequence numbers,
// cumulative ACKs, a NAK on a sequence gap, retransmission on timeout, and credits.
//
// One instance per GPU, between its transmit framer and the wire, keeping a sender and a
// receiver state for every peer GPU. Sans-I/O like the rest of the engine: it is handed `now`
// and leaves frames in Effects.
//
// Sender (only when EngineConfig::reliability.enabled): every frame to a peer gets the next
// sequence number and a copy is kept until the peer acknowledges it. At most `credits` frames
// are unacknowledged per peer; the rest wait here, so a receiver that falls behind slows its
// senders down (back-pressure) instead of overflowing and dropping. A NAK resends everything
// from the first missing frame at once; a silent loss (the last frame of a burst) is found
// when the retransmission timer expires: the oldest frame is resent as a probe, and the rest
// follows only if the ACK it draws shows that more is missing. The timer follows the measured round
// trip (RFC 6298: smoothed RTT + 4 x its variation, never below retransmit_timeout_ns) and backs
// off exponentially while it keeps expiring, so a peer that is merely slow (a descheduled process
// on a busy host) is not flooded with copies.
//
// Receiver (always, whatever this GPU's own mode): a sequenced frame is delivered only if it
// is the next one expected. Anything older is a duplicate (dropped before the completer, so a
// retried write or atomic is never performed twice; the ACK is repeated); anything newer
// means a frame was lost (dropped, and a single NAK asks for the gap). ACKs ride on any frame
// going back to the peer, or leave alone after ack_delay_ns or when half the credits are used.
// So each GPU chooses for its own sending link whether it is sequenced, and every receiver
// serves both kinds: docs/reliability.md.
//
// Restarts: every frame carries its sender's incarnation (EngineConfig::incarnation). A frame
// from a peer whose incarnation differs from the one last seen means the peer's engine was
// started again and numbers its frames from 1: the pair's state is reset in both directions
// (frames still unacknowledged by the old incarnation are dropped, their requests time out;
// both sequences start at 1) instead of taking the new frames for duplicates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "packet-engine/effects.hpp"
#include "packet-engine/engine_config.hpp"
#include "packet-engine/fifo.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {

struct LinkCounters {
  std::uint64_t frames_sequenced = 0;        // sent with a sequence number, first time
  std::uint64_t frames_held = 0;             // waited for credits before leaving
  std::uint64_t retransmitted_on_nak = 0;    // frames resent because of a NAK
  std::uint64_t retransmitted_on_timer = 0;  // frames resent because the timer expired
  std::uint64_t retransmit_timeouts = 0;     // timer expiries
  std::uint64_t acks_received = 0;           // frames carrying an ACK that advanced the window
  std::uint64_t naks_received = 0;
  std::uint64_t bad_acks = 0;            // ACK for a frame never sent (corrupt or forged peer)
  std::uint64_t acks_sent = 0;           // standalone ACK frames (piggybacked ones are free)
  std::uint64_t naks_sent = 0;           // standalone NAK frames
  std::uint64_t frames_in_order = 0;     // sequenced frames delivered
  std::uint64_t duplicates_dropped = 0;  // sequence older than expected
  std::uint64_t gaps_dropped = 0;        // sequence newer than expected (a frame was lost)
  std::uint64_t unknown_peer = 0;        // sequenced frame from a GPU id outside the fabric
  std::uint64_t peer_restarts = 0;       // a peer's incarnation changed: the pair was reset
};

class ReliableLinks {
 public:
  explicit ReliableLinks(const EngineConfig& config);

  bool sequencing() const { return config_.reliability.enabled; }

  // Finishes the frame in `builder` (a started frame to `dst`) and sends it, stamped with the
  // link fields, or keeps it until `dst` grants credit.
  void send(GpuId dst, wire::FrameBuilder& builder, TimeNs now, Effects& effects);

  // Link fields of an arriving, decoded frame addressed to this GPU. Returns whether its
  // transactions are to be delivered (false for duplicates, gaps and ACK-only frames).
  bool on_receive(const wire::FrameView& frame, TimeNs now, Effects& effects);

  // Retransmission timers and delayed ACKs; asks to be woken for the next one. Inline when
  // no peer has any (the usual case without sequencing): the engine polls after every frame.
  // The peers' deadlines are kept in a heap, so a poll costs O(log peers), not O(peers): a GPU
  // of a 1024-GPU all-to-all has a timer toward every other one.
  void poll(TimeNs now, Effects& effects) {
    if (!deadlines_.empty()) poll_deadlines(now, effects);
  }

  // Frames waiting for credit or for their ACK (what the runtime's back-pressure looks at).
  std::size_t frames_waiting() const { return frames_waiting_; }
  std::size_t frames_unacked() const { return frames_unacked_; }
  const LinkCounters& counters() const { return counters_; }

 private:
  struct SentFrame {
    std::uint32_t seq = 0;
    wire::Frame bytes;
    TimeNs sent_ns = 0;
    bool resent = false;  // Karn: a resent frame's ACK says nothing about the round trip
  };
  // A peer's state is split by how often it is touched: `PeerRx` on every frame sent to or
  // received from the peer (its ACK fields, its incarnation), `PeerTx` only when frames are
  // sequenced. A GPU of a 1024-GPU fabric keeps 1023 of each; the small hot half stays in
  // cache (docs/simulator.md, "Speed").
  struct PeerRx {
    std::uint32_t expected_seq = 1;
    std::uint32_t delivered_since_ack = 0;
    TimeNs ack_due_ns = 0;
    // The peer's incarnation, once a frame from it has been seen.
    std::uint32_t incarnation = 0;
    bool incarnation_known = false;
    bool ack_owed = false;
    bool nak_sent = false;  // one NAK per gap: cleared when the expected frame arrives
    // The time of this peer's one live entry in deadlines_ (kNotArmed: none). It is never
    // later than the peer's next deadline; a deadline that moved later is found when the
    // entry reaches the top of the heap, and the entry is then moved.
    TimeNs armed_ns = kNotArmed;
  };
  static constexpr TimeNs kNotArmed = ~TimeNs{0};
  // A peer's entry in deadlines_, a min-heap on (at_ns, peer).
  struct Deadline {
    TimeNs at_ns = 0;
    GpuId peer = 0;
    bool operator>(const Deadline& other) const {
      return at_ns != other.at_ns ? at_ns > other.at_ns : peer > other.peer;
    }
  };
  struct PeerTx {
    std::uint32_t next_seq = 1;
    std::uint32_t credits = 0;         // frames the peer lets us have unacknowledged
    TimeNs retransmit_timeout_ns = 0;  // current timer, backed off after each expiry
    TimeNs retransmit_at_ns = 0;       // valid while `unacked` is not empty
    // Round-trip estimate (RFC 6298) from ACKs of frames sent once; 0 until the first.
    TimeNs smoothed_rtt_ns = 0;
    TimeNs rtt_variation_ns = 0;
    // The timer expired and only the oldest frame was resent, as a probe: the ACK it draws
    // tells whether the rest was lost too (then it follows, go-back-N) or only delayed.
    bool probing = false;
    Fifo<SentFrame> unacked;
    Fifo<wire::Frame> waiting;  // finished but not yet stamped: no credit
  };

  // Flags, ack and credits a frame to `dst` carries now; clears the owed ACK they settle.
  std::uint8_t take_ack_fields(GpuId dst, std::uint32_t& ack, std::uint8_t& credits);
  struct LinkStamp {
    std::uint8_t flags = 0;
    std::uint32_t seq = 0;
    std::uint32_t ack = 0;
    std::uint8_t credits = 0;
  };
  // Link fields for the next new frame to `dst` (takes its sequence number).
  LinkStamp next_stamp(GpuId dst);
  // Keeps a copy of a stamped frame until it is acknowledged, and sends it.
  void record_sent(GpuId dst, std::uint32_t seq, wire::Frame frame, TimeNs now, Effects& effects);
  // Resends the oldest `count` unacknowledged frames (all of them by default).
  void resend_unacked(GpuId dst, TimeNs now, Effects& effects,
                      std::size_t count = static_cast<std::size_t>(-1));
  void release_waiting(GpuId dst, TimeNs now, Effects& effects);
  void on_ack(GpuId src, const wire::FrameView& frame, TimeNs now, Effects& effects);
  void send_control(GpuId dst, bool nak, Effects& effects);
  void owe_ack(GpuId peer, TimeNs due_ns);
  void sample_rtt(PeerTx& peer, TimeNs rtt_ns);
  // The peer has a deadline at `at_ns`: makes sure the heap holds an entry no later.
  void arm(GpuId peer, TimeNs at_ns);
  // The earliest of the peer's retransmission timer and owed ACK, if it has either.
  TimeNs next_deadline(GpuId peer) const;
  // Runs what is due for the peer: its retransmission timer, its delayed ACK.
  void run_timers(GpuId peer, TimeNs now, Effects& effects);
  void poll_deadlines(TimeNs now, Effects& effects);
  void pop_deadline();
  // A frame from `src` carries `incarnation`: a new one resets the pair.
  void check_incarnation(GpuId src, std::uint32_t incarnation, TimeNs now, Effects& effects);
  void reset_peer(GpuId src);

  const EngineConfig& config_;
  std::vector<PeerRx> rx_;           // indexed by GpuId
  std::vector<PeerTx> tx_;           // indexed by GpuId
  std::vector<Deadline> deadlines_;  // min-heap (std::greater): peers with a timer or an owed ACK
  wire::FrameBuilder control_builder_;
  std::size_t frames_waiting_ = 0;
  std::size_t frames_unacked_ = 0;
  LinkCounters counters_;
};

}  // namespace ethx
