#include "packet-engine/link_retry.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "packet-engine/ethernet.hpp"
#include "packet-engine/flow_control.hpp"

namespace ethx {
namespace {

// The replay timer doubles after each timeout with no progress, up to this many times the
// configured value, so a dead far end costs a few replays rather than one per timeout.
constexpr unsigned kMaxBackoffShift = 10;
// The adaptive replay timer stays within this many times the configured one.
constexpr TimeNs kMaxAdaptiveTimeoutFactor = 32;
// Buffers of acknowledged frames kept for the next ones: as many as a replay buffer of a few
// hundred KB holds frames. A frame acknowledged when there are more is freed.
constexpr std::size_t kMaxSpareBuffers = 1024;
// Flow control writes its credit updates and pauses with room for the trailer stamp() appends.
static_assert(kLlrTrailerBytes <= kControlFrameTailroomBytes);

// Sequence comparison across wrap-around: > 0 if `a` is after `b`.
std::int32_t seq_diff(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::int32_t>(a - b);
}

std::uint32_t fcs_of(std::span<const std::byte> frame) {
  return wire::crc32c(frame.first(frame.size() - 4));
}

LlrTrailer read_trailer(std::span<const std::byte> frame) {
  LlrTrailer trailer;
  std::memcpy(&trailer, frame.data() + frame.size() - kLlrTrailerBytes, kLlrTrailerBytes);
  return trailer;
}

void append_trailer(wire::Frame& frame, std::uint32_t seq, LlrKind kind, std::uint8_t epoch,
                    wire::Crc crc) {
  LlrTrailer trailer;
  trailer.seq = seq;
  trailer.kind = static_cast<std::uint8_t>(kind);
  trailer.epoch = epoch;
  trailer.magic = kLlrMagic;
  trailer.fcs = 0;
  const std::size_t at = frame.size();
  frame.resize(at + kLlrTrailerBytes);
  std::memcpy(frame.data() + at, &trailer, kLlrTrailerBytes);
  if (crc == wire::Crc::kOn) fill_llr_fcs(frame);
}

void write_control_header(wire::Frame& out, const MacAddr& src) {
  out.reserve(kLlrControlFrameBytes);  // the trailer then fits without moving the frame
  out.assign(kEthernetHeaderBytes, std::byte{0});
  EthernetHeader header{};
  std::memcpy(header.dst, kLinkControlMac, 6);
  std::memcpy(header.src, src.octets.data(), 6);
  header.ether_type = wire::kEtherTypeFabric;
  std::memcpy(out.data(), &header, sizeof(header));
}

}  // namespace

bool fill_llr_fcs(std::span<std::byte> frame) {
  if (frame.size() < kLlrTrailerBytes || read_trailer(frame).magic.value() != kLlrMagic) {
    return false;
  }
  const boost::endian::big_uint32_buf_t fcs(fcs_of(frame));
  std::memcpy(frame.data() + frame.size() - 4, &fcs, 4);
  return true;
}

std::size_t min_replay_buffer_bytes(const LinkRetryConfig& config, double rate_gbps,
                                    TimeNs propagation_ns, std::size_t frame_bytes_max) {
  const double frame_ns = static_cast<double>(frame_bytes_max) * 8.0 / rate_gbps;
  const double round_trip_ns = 2.0 * static_cast<double>(propagation_ns) +
                               static_cast<double>(config.ack_delay_ns) + 2.0 * frame_ns;
  return static_cast<std::size_t>(std::ceil(round_trip_ns * rate_gbps / 8.0)) + frame_bytes_max;
}

LinkRetryCounters& LinkRetryCounters::operator+=(const LinkRetryCounters& other) {
  frames_sent += other.frames_sent;
  frames_replayed += other.frames_replayed;
  replays_nak += other.replays_nak;
  replays_timeout += other.replays_timeout;
  acks_sent += other.acks_sent;
  naks_sent += other.naks_sent;
  frames_received += other.frames_received;
  drops_bad_fcs += other.drops_bad_fcs;
  drops_out_of_sequence += other.drops_out_of_sequence;
  drops_duplicate += other.drops_duplicate;
  drops_malformed += other.drops_malformed;
  frames_lost_on_reset += other.frames_lost_on_reset;
  gave_up += other.gave_up;
  trainings_started += other.trainings_started;
  trainings_answered += other.trainings_answered;
  return *this;
}

LinkRetry::LinkRetry(LinkRetryConfig config, wire::Crc crc) : config_(config), crc_(crc) {}

bool LinkRetry::can_send(std::size_t frame_bytes) const {
  if (training_) return false;  // the far end may still number for an earlier start of ours
  // One frame always fits, however small the buffer: a hop never stalls for good.
  return unacked_.empty() ||
         unacked_bytes_ + frame_bytes + kLlrTrailerBytes <= config_.replay_buffer_bytes;
}

void LinkRetry::stamp(wire::Frame& frame, TimeNs now) {
  append_trailer(frame, next_seq_, LlrKind::kData, epoch_, crc_);
  const bool replay_pending = replay_next_ < unacked_.size();
  Sent& sent = unacked_.append();
  sent.seq = next_seq_++;
  sent.sent_ns = now;
  if (!spare_bytes_.empty()) {
    sent.bytes.swap(spare_bytes_.back());
    spare_bytes_.pop_back();
  }
  sent.bytes.assign(frame.begin(), frame.end());
  unacked_bytes_ += frame.size();
  // A frame sent now is not to be sent again, unless a replay before it will resend it anyway.
  if (!replay_pending) replay_next_ = unacked_.size();
  ++counters_.frames_sent;
}

void LinkRetry::start_training(std::uint32_t nonce, TimeNs now) {
  reset();
  training_ = true;
  train_nonce_ = nonce;
  train_resend_ns_ = now;  // the first TRAIN goes when on_time runs, like any timer's frame
  train_backoff_shift_ = 0;
  ++counters_.trainings_started;
}

void LinkRetry::on_train(std::uint32_t nonce) {
  if (!peer_trained_ || peer_nonce_ != nonce) {
    // The far end started afresh: what either end still held belongs to its earlier start.
    // With this reset both ends are fresh, which is all our own training would achieve, so it
    // ends too (our TRAIN, if still on its way, then finds nothing to undo). An end that may
    // find a leftover TRAIN waiting for it sends its own first (LlrNodePort's constructor).
    peer_trained_ = true;
    peer_nonce_ = nonce;
    reset();
    end_training();
    ++counters_.trainings_answered;
  }
  train_ack_due_ = true;
}

void LinkRetry::end_training() {
  training_ = train_due_ = false;
  train_resend_ns_ = kNever;
}

bool LinkRetry::take_training_control(wire::Frame& out, const MacAddr& src) {
  if (!train_ack_due_ && !train_due_) return false;
  const bool ack = train_ack_due_;
  write_control_header(out, src);
  append_trailer(out, ack ? peer_nonce_ : train_nonce_, ack ? LlrKind::kTrainAck : LlrKind::kTrain,
                 epoch_, crc_);
  (ack ? train_ack_due_ : train_due_) = false;
  return true;
}

bool LinkRetry::take_control(wire::Frame& out, const MacAddr& src) {
  if (!control_due()) return false;
  if (take_training_control(out, src)) return true;
  const LlrKind kind = nak_due_ ? LlrKind::kNak : LlrKind::kAck;
  write_control_header(out, src);
  // An ACK or NAK speaks of the far end's frames, so it carries the far end's epoch.
  append_trailer(out, expected_, kind, peer_epoch_, crc_);
  ++(kind == LlrKind::kNak ? counters_.naks_sent : counters_.acks_sent);
  nak_due_ = ack_due_ = false;  // a NAK acknowledges everything before it too
  unacked_received_ = 0;
  ack_deadline_ns_ = kNever;
  return true;
}

bool LinkRetry::take_replay(wire::Frame& out, TimeNs now) {
  if (replay_next_ >= unacked_.size()) return false;
  Sent& sent = unacked_[replay_next_++];
  out.assign(sent.bytes.begin(), sent.bytes.end());
  sent.sent_ns = now;
  sent.replayed = true;
  ++counters_.frames_replayed;
  return true;
}

LinkRetry::Verdict LinkRetry::receive(std::span<const std::byte> frame, TimeNs now,
                                      std::size_t& payload_bytes) {
  payload_bytes = 0;
  if (frame.size() < kEthernetHeaderBytes + kLlrTrailerBytes ||
      read_trailer(frame).magic.value() != kLlrMagic) {
    ++counters_.drops_malformed;
    return Verdict::kDrop;
  }
  const LlrTrailer trailer = read_trailer(frame);
  const std::uint32_t fcs = trailer.fcs.value();
  if ((crc_ == wire::Crc::kOn || fcs != 0) && fcs != fcs_of(frame)) {
    // Whatever it was, something was lost: ask for it again, even while an earlier NAK is
    // out (it may be its replay that was damaged). A gap, by contrast, NAKs once.
    ++counters_.drops_bad_fcs;
    if (synced_) nak_due_ = nak_sent_ = true;
    return Verdict::kDrop;
  }
  switch (static_cast<LlrKind>(trailer.kind.value())) {
    case LlrKind::kData: {
      const Verdict verdict = receive_data(trailer, now);
      if (verdict == Verdict::kDeliver) payload_bytes = frame.size() - kLlrTrailerBytes;
      return verdict;
    }
    case LlrKind::kAck:
    case LlrKind::kNak:
      // A control frame from before our last reset speaks of frames that are gone.
      if (trailer.epoch.value() == epoch_) {
        on_ack(trailer.seq.value(),
               trailer.kind.value() == static_cast<std::uint8_t>(LlrKind::kNak), now);
      }
      return Verdict::kConsumed;
    case LlrKind::kTrain:
      on_train(trailer.seq.value());
      return Verdict::kConsumed;
    case LlrKind::kTrainAck:
      if (training_ && trailer.seq.value() == train_nonce_) end_training();
      return Verdict::kConsumed;
  }
  ++counters_.drops_malformed;
  return Verdict::kDrop;
}

LinkRetry::Verdict LinkRetry::receive_data(const LlrTrailer& trailer, TimeNs now) {
  const std::uint32_t seq = trailer.seq.value();
  if (!synced_ || trailer.epoch.value() != peer_epoch_) {
    // Every epoch numbers its frames from 0, so a lost first frame is a gap like any other.
    synced_ = true;
    peer_epoch_ = trailer.epoch.value();
    expected_ = 0;
    nak_sent_ = false;
  }
  const std::int32_t ahead = seq_diff(seq, expected_);
  if (ahead > 0) {
    ++counters_.drops_out_of_sequence;
    owe_nak();
    return Verdict::kDrop;
  }
  if (ahead < 0) {
    // The far end replays what we took already: our ACK was lost or late. Say it again.
    ++counters_.drops_duplicate;
    ack_due_ = true;
    return Verdict::kDrop;
  }
  ++expected_;
  nak_sent_ = false;
  ++counters_.frames_received;
  owe_ack_after_frame(now);
  return Verdict::kDeliver;
}

void LinkRetry::owe_nak() {
  if (nak_sent_) return;  // one per gap: the replay it asked for is on its way
  nak_sent_ = true;
  nak_due_ = true;
}

void LinkRetry::owe_ack_after_frame(TimeNs now) {
  if (++unacked_received_ >= config_.ack_every_frames) {
    ack_due_ = true;
  } else if (ack_deadline_ns_ == kNever) {
    ack_deadline_ns_ = now + config_.ack_delay_ns;
  }
}

void LinkRetry::on_ack(std::uint32_t next_expected, bool nak, TimeNs now) {
  std::size_t acked = 0;
  std::optional<TimeNs> round_trip_ns;
  while (!unacked_.empty() && seq_diff(next_expected, unacked_.front().seq) > 0) {
    Sent& sent = unacked_.front();
    round_trip_ns =
        sent.replayed || now < sent.sent_ns ? std::nullopt : std::optional(now - sent.sent_ns);
    unacked_bytes_ -= sent.bytes.size();
    if (spare_bytes_.size() < kMaxSpareBuffers) spare_bytes_.push_back(std::move(sent.bytes));
    unacked_.pop_front();
    ++acked;
  }
  if (round_trip_ns && config_.adaptive_replay_timeout) sample_round_trip(*round_trip_ns);
  replay_next_ = replay_next_ > acked ? replay_next_ - acked : 0;
  if (acked > 0 || nak) backoff_shift_ = timeouts_without_progress_ = 0;  // the far end is there
  if (nak && !unacked_.empty()) {
    replay_next_ = 0;
    ++counters_.replays_nak;
  }
}

void LinkRetry::sample_round_trip(TimeNs round_trip_ns) {
  if (smoothed_round_trip_ns_ == 0) {
    smoothed_round_trip_ns_ = round_trip_ns;
    round_trip_variation_ns_ = round_trip_ns / 2;
    return;
  }
  const TimeNs error_ns = round_trip_ns > smoothed_round_trip_ns_
                              ? round_trip_ns - smoothed_round_trip_ns_
                              : smoothed_round_trip_ns_ - round_trip_ns;
  // RFC 6298 section 2.3, with its gains of 1/4 and 1/8.
  round_trip_variation_ns_ = (3 * round_trip_variation_ns_ + error_ns) / 4;
  smoothed_round_trip_ns_ = (7 * smoothed_round_trip_ns_ + round_trip_ns) / 8;
}

TimeNs LinkRetry::replay_timeout_ns() const {
  if (!config_.adaptive_replay_timeout || smoothed_round_trip_ns_ == 0) {
    return config_.replay_timeout_ns;
  }
  // Bounded above too: one sample taken while a process was descheduled for seconds must not
  // leave a lost last frame waiting that long.
  return std::clamp(smoothed_round_trip_ns_ + 4 * round_trip_variation_ns_,
                    config_.replay_timeout_ns,
                    config_.replay_timeout_ns * kMaxAdaptiveTimeoutFactor);
}

TimeNs LinkRetry::replay_deadline_ns() const {
  // Only while the oldest frame is out on the wire (a replay not yet started needs no timer),
  // and not after giving up on the far end.
  if (unacked_.empty() || replay_next_ == 0 ||
      timeouts_without_progress_ >= kMaxTimeoutsWithoutProgress) {
    return kNever;
  }
  return unacked_.front().sent_ns + (replay_timeout_ns() << backoff_shift_);
}

TimeNs LinkRetry::next_deadline_ns() const {
  return std::min({ack_deadline_ns_, replay_deadline_ns(), train_resend_ns_});
}

void LinkRetry::on_time(TimeNs now) {
  if (training_ && train_resend_ns_ <= now) {
    // Backing off like the replay timer: a port whose far end never comes costs a wake-up a
    // second, not a thousand. A far end that starts sends its own TRAIN at once anyway.
    train_due_ = true;
    train_resend_ns_ = now + (config_.replay_timeout_ns << train_backoff_shift_);
    train_backoff_shift_ = std::min(train_backoff_shift_ + 1, kMaxBackoffShift);
  }
  if (ack_deadline_ns_ <= now) {
    ack_due_ = true;
    ack_deadline_ns_ = kNever;
  }
  if (replay_deadline_ns() <= now) {
    replay_next_ = 0;
    ++counters_.replays_timeout;
    backoff_shift_ = std::min(backoff_shift_ + 1, kMaxBackoffShift);
    if (++timeouts_without_progress_ == kMaxTimeoutsWithoutProgress) ++counters_.gave_up;
  }
}

void LinkRetry::reset() {
  counters_.frames_lost_on_reset += unacked_.size();
  unacked_.clear();
  unacked_bytes_ = 0;
  replay_next_ = 0;
  backoff_shift_ = timeouts_without_progress_ = 0;
  next_seq_ = 0;
  ++epoch_;
  synced_ = false;
  nak_sent_ = nak_due_ = ack_due_ = false;
  unacked_received_ = 0;
  ack_deadline_ns_ = kNever;
}

}  // namespace ethx
