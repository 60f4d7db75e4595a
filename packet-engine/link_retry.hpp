// Link-level retry (LLR): one end of one hop (a GPU's NIC and its switch port, or two switch
// ports), sans-I/O.
//
// Every frame the hop carries gets a 12-byte trailer (LlrTrailer): a per-hop sequence number
// and a CRC-32C of the whole frame, which stands for the MAC's FCS (transports strip theirs).
// The sender keeps each frame in a replay buffer until the far end acknowledges it. The
// receiver takes frames only in sequence: a bad FCS or a gap drops the frame and sends one NAK
// naming the sequence it expects, and the sender replays everything from there. So a corrupted
// or lost frame costs one hop's round trip, not an end-to-end timeout. ACK and NAK travel in
// control frames of their own (an Ethernet header and a trailer), as UEC's LLR sends them in
// control ordered sets rather than in data frames. A replay timer covers a lost last frame and
// a lost NAK. Where one end may restart on its own (the emulator's processes), link training
// makes both ends start afresh together (start_training). Docs: docs/link-layer.md; byte
// offsets in docs/wire-format.md.
#pragma once

#include <boost/endian/buffers.hpp>
#include <cstddef>
#include <cstdint>
#include <span>

#include "address-map/fabric_types.hpp"
#include "packet-engine/fifo.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {

// Last 12 bytes of every frame on a hop with LLR on.
struct LlrTrailer {
  // data: this frame's; ACK: next expected; NAK: resend from; TRAIN and TRAIN_ACK: the
  // training's nonce
  boost::endian::big_uint32_buf_t seq;
  boost::endian::big_uint8_buf_t kind;  // LlrKind
  // The sender's link state incarnation: it numbers its frames from 0 again after a reset (its
  // link went down and up), and a receiver that sees a new epoch expects 0.
  boost::endian::big_uint8_buf_t epoch;
  boost::endian::big_uint16_buf_t magic;  // kLlrMagic
  // CRC-32C of every byte before this field. 0 where frames carry no CRC (wire::Crc::kOff, the
  // simulator) unless a corrupt fault damaged the frame: it fills the field first.
  boost::endian::big_uint32_buf_t fcs;
};
static_assert(sizeof(LlrTrailer) == 12);

inline constexpr std::size_t kLlrTrailerBytes = sizeof(LlrTrailer);
inline constexpr std::uint16_t kLlrMagic = 0x4C52;  // "LR"
// kTrain: "I started afresh, do the same" (link training); kTrainAck answers it.
enum class LlrKind : std::uint8_t { kData = 1, kAck = 2, kNak = 3, kTrain = 4, kTrainAck = 5 };
// A control frame: an Ethernet header (EtherType 0x88B5) and the trailer.
inline constexpr std::size_t kLlrControlFrameBytes = kEthernetHeaderBytes + kLlrTrailerBytes;

// Fills the trailer's FCS of a frame that has one (what a corrupt fault does before it flips a
// bit when frames carry no CRC). False if `frame` has no trailer.
bool fill_llr_fcs(std::span<std::byte> frame);

struct LinkRetryConfig {
  // Bytes of frames sent and not yet acknowledged; the sender stops taking new frames when
  // full. It must cover the hop's round trip at the link rate (check_replay_buffer).
  std::size_t replay_buffer_bytes = std::size_t{256} * 1024;
  // Adapt the replay timer to the measured round trip, as TCP's retransmission timer does
  // (RFC 6298: smoothed round trip + 4 x its variation, from frames acknowledged without a
  // replay), between replay_timeout_ns and 32 times that. For the emulator, whose round trips are
  // wall-clock and vary with scheduling; the simulator's are exact and keep the fixed timer.
  bool adaptive_replay_timeout = false;
  // The oldest unacknowledged frame waits this long before everything from it is replayed.
  TimeNs replay_timeout_ns = 10'000;
  // The receiver acknowledges after this many frames in sequence, or this long after the
  // first one it has not acknowledged, whichever comes first.
  std::uint32_t ack_every_frames = 16;
  TimeNs ack_delay_ns = 500;
};

// The smallest replay buffer that keeps a hop busy while an ACK comes back: the bytes the link
// sends in one round trip (2 x propagation + the ACK delay + a largest frame each way), plus
// one largest frame.
std::size_t min_replay_buffer_bytes(const LinkRetryConfig& config, double rate_gbps,
                                    TimeNs propagation_ns, std::size_t frame_bytes_max);

struct LinkRetryCounters {
  std::uint64_t frames_sent = 0;      // new data frames stamped
  std::uint64_t frames_replayed = 0;  // data frames sent again
  std::uint64_t replays_nak = 0;      // replays started by a NAK
  std::uint64_t replays_timeout = 0;  // replays started by the timer
  std::uint64_t acks_sent = 0;
  std::uint64_t naks_sent = 0;
  std::uint64_t frames_received = 0;        // data frames taken in sequence
  std::uint64_t drops_bad_fcs = 0;          // data or control frames whose FCS failed
  std::uint64_t drops_out_of_sequence = 0;  // a gap: an earlier frame was lost
  std::uint64_t drops_duplicate = 0;        // a replay of a frame already taken
  std::uint64_t drops_malformed = 0;        // no trailer (the far end runs without LLR?)
  std::uint64_t frames_lost_on_reset = 0;   // unacknowledged frames a reset threw away
  // The replay timer ran out kMaxTimeoutsWithoutProgress times in a row with nothing
  // acknowledged: the far end is taken for gone and the timer stops (until an ACK or NAK).
  std::uint64_t gave_up = 0;
  std::uint64_t trainings_started = 0;   // start_training calls (this end started afresh)
  std::uint64_t trainings_answered = 0;  // the far end started afresh: this end reset with it

  LinkRetryCounters& operator+=(const LinkRetryCounters& other);  // sums every field
  // Calls visit(name, value) for each counter in order: one list of names for every report.
  template <typename Visit>
  void for_each(Visit&& visit) const {
    visit("frames_sent", frames_sent);
    visit("frames_replayed", frames_replayed);
    visit("replays_nak", replays_nak);
    visit("replays_timeout", replays_timeout);
    visit("acks_sent", acks_sent);
    visit("naks_sent", naks_sent);
    visit("drops_bad_fcs", drops_bad_fcs);
    visit("drops_out_of_sequence", drops_out_of_sequence);
    visit("drops_duplicate", drops_duplicate);
    visit("drops_malformed", drops_malformed);
    visit("frames_lost_on_reset", frames_lost_on_reset);
    visit("gave_up", gave_up);
    visit("trainings_started", trainings_started);
    visit("trainings_answered", trainings_answered);
  }
};

class LinkRetry {
 public:
  // `crc`: whether frames are sealed with the FCS (kOn) or only checked when one is there.
  LinkRetry(LinkRetryConfig config, wire::Crc crc);

  // ---- Sending ----
  // Whether the replay buffer has room for a frame of `frame_bytes` (before its trailer).
  bool can_send(std::size_t frame_bytes) const;
  // Appends the trailer with the next sequence number and keeps a copy for replay. `now` is
  // when the frame starts on the wire: the replay timer counts from there.
  void stamp(wire::Frame& frame, TimeNs now);
  // The next control frame to send (an ACK or a NAK the receiver owes), written into `out`
  // with `src` as source MAC. False if none is due. Goes before any data frame.
  bool take_control(wire::Frame& out, const MacAddr& src);
  // The next frame to replay (a copy into `out`), after a NAK or a timeout. Goes before new
  // frames.
  bool take_replay(wire::Frame& out, TimeNs now);
  bool has_output() const { return control_due() || replay_next_ < unacked_.size(); }

  // ---- Link training ----
  // For hops whose ends start and restart on their own (the emulator's processes: a node that
  // restarts would otherwise meet a switch port still numbering its frames for the old one).
  // Starts this end afresh (as reset()) and asks the far end to do the same: a TRAIN control
  // frame carrying `nonce` is due at `now` (next_deadline_ns; on_time makes it output) and
  // again after replay_timeout_ns, doubling up to 1024x, until the far end's TRAIN_ACK names
  // it. Until then can_send() is false. An end that receives a TRAIN with another nonce than
  // the last one it answered resets, answers and ends its own training (both ends are fresh
  // then); the same nonce again is only answered.
  void start_training(std::uint32_t nonce, TimeNs now);
  bool training() const { return training_; }

  // ---- Receiving ----
  enum class Verdict : std::uint8_t { kDeliver, kConsumed, kDrop };
  // A frame arrived. kDeliver: it is in sequence; its first `payload_bytes` (the trailer cut
  // off) go up. kConsumed: an ACK or NAK, applied. kDrop: counted, and a NAK queued for a gap
  // or a bad FCS. Call has_output() afterwards: a control frame or replays may be due.
  Verdict receive(std::span<const std::byte> frame, TimeNs now, std::size_t& payload_bytes);

  // ---- Time ----
  // When on_time must next run (an ACK's delay or the replay timer); kNever if nothing waits.
  TimeNs next_deadline_ns() const;
  void on_time(TimeNs now);
  static constexpr TimeNs kNever = UINT64_MAX;
  // As a link retrains or goes down after a retry limit: with the timer doubling up to 1024x,
  // 16 timeouts span about 7000 x replay_timeout_ns (70 ms at the default).
  static constexpr unsigned kMaxTimeoutsWithoutProgress = 16;

  // The link went down: unacknowledged frames are lost (counted), the sender starts a new
  // epoch from sequence 0, and the receiver waits for the far end's new epoch.
  void reset();

  const LinkRetryCounters& counters() const { return counters_; }
  std::size_t unacked_bytes() const { return unacked_bytes_; }
  const LinkRetryConfig& config() const { return config_; }

 private:
  struct Sent {
    std::uint32_t seq;
    TimeNs sent_ns;
    wire::Frame bytes;      // with its trailer
    bool replayed = false;  // a round trip measured on it would be ambiguous (Karn)
  };
  bool control_due() const { return nak_due_ || ack_due_ || train_due_ || train_ack_due_; }
  bool take_training_control(wire::Frame& out, const MacAddr& src);
  void on_train(std::uint32_t nonce);
  void end_training();
  void on_ack(std::uint32_t next_expected, bool nak, TimeNs now);
  void sample_round_trip(TimeNs round_trip_ns);
  TimeNs replay_timeout_ns() const;
  TimeNs replay_deadline_ns() const;
  Verdict receive_data(const LlrTrailer& trailer, TimeNs now);
  void owe_nak();
  void owe_ack_after_frame(TimeNs now);

  LinkRetryConfig config_;
  wire::Crc crc_;
  // Sender.
  std::uint32_t next_seq_ = 0;
  std::uint8_t epoch_ = 0;
  Fifo<Sent> unacked_;  // in sequence order
  // Buffers of acknowledged frames, which stamp() copies the next frames into: no allocation
  // per frame sent.
  std::vector<wire::Frame> spare_bytes_;
  std::size_t unacked_bytes_ = 0;
  std::size_t replay_next_ = 0;  // unacked_[replay_next_..] are to be sent again
  unsigned backoff_shift_ = 0;   // the replay timer is replay_timeout_ns() << this
  // The adaptive timer's estimate (adaptive_replay_timeout); 0 before the first sample.
  TimeNs smoothed_round_trip_ns_ = 0;
  TimeNs round_trip_variation_ns_ = 0;
  unsigned timeouts_without_progress_ = 0;
  // Receiver.
  bool synced_ = false;  // an epoch of the far end's has been seen
  std::uint8_t peer_epoch_ = 0;
  std::uint32_t expected_ = 0;
  bool nak_sent_ = false;  // one NAK per gap: cleared when the expected frame arrives
  bool nak_due_ = false;
  bool ack_due_ = false;
  std::uint32_t unacked_received_ = 0;  // frames taken since the last ACK
  TimeNs ack_deadline_ns_ = kNever;
  // Link training.
  bool training_ = false;  // waiting for the far end's TRAIN_ACK of train_nonce_
  bool train_due_ = false;
  std::uint32_t train_nonce_ = 0;
  TimeNs train_resend_ns_ = kNever;
  unsigned train_backoff_shift_ = 0;
  bool peer_trained_ = false;  // a TRAIN of the far end's has been answered: peer_nonce_ is set
  std::uint32_t peer_nonce_ = 0;
  bool train_ack_due_ = false;
  LinkRetryCounters counters_;
};

}  // namespace ethx
