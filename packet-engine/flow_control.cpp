#include "packet-engine/flow_control.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "packet-engine/ethernet.hpp"

namespace ethx {
namespace {

// One PFC pause quantum is 512 bit times at the link's rate (IEEE 802.1Qbb, 802.3 Annex 31B).
TimeNs quanta_to_ns(std::uint32_t quanta, double rate_gbps) {
  return static_cast<TimeNs>(std::ceil(quanta * 512.0 / rate_gbps));
}

std::size_t class_index(TrafficClass c) {
  return static_cast<std::size_t>(c);
}

template <class Frame>
bool read_frame(std::span<const std::byte> bytes, Frame& frame) {
  if (bytes.size() < sizeof(Frame)) return false;
  std::memcpy(&frame, bytes.data(), sizeof(Frame));
  return true;
}

std::uint16_t ether_type_of(std::span<const std::byte> frame) {
  if (frame.size() < kEthernetHeaderBytes) return 0;
  return static_cast<std::uint16_t>(std::to_integer<unsigned>(frame[12]) << 8 |
                                    std::to_integer<unsigned>(frame[13]));
}

}  // namespace

const char* to_string(FlowControlMode mode) {
  switch (mode) {
    case FlowControlMode::kNone:
      return "none";
    case FlowControlMode::kCbfc:
      return "cbfc";
    case FlowControlMode::kPfc:
      return "pfc";
  }
  return "?";
}

std::optional<FlowControlMode> parse_flow_control_mode(std::string_view name) {
  for (FlowControlMode mode :
       {FlowControlMode::kNone, FlowControlMode::kCbfc, FlowControlMode::kPfc}) {
    if (name == to_string(mode)) return mode;
  }
  return std::nullopt;
}

TrafficClass traffic_class_of(std::span<const std::byte> frame) {
  constexpr std::size_t kOpcodeOffset = wire::kBodyOffset;
  if (frame.size() <= kOpcodeOffset || ether_type_of(frame) != wire::kEtherTypeFabric) {
    return TrafficClass::kRequests;
  }
  const auto opcode =
      static_cast<wire::Opcode>(std::to_integer<std::uint8_t>(frame[kOpcodeOffset]));
  return wire::is_known_opcode(static_cast<std::uint8_t>(opcode)) && !wire::is_request(opcode)
             ? TrafficClass::kResponses
             : TrafficClass::kRequests;
}

std::size_t pfc_headroom_bytes(double rate_gbps, TimeNs propagation_ns,
                               std::size_t frame_bytes_max) {
  // After the receiver decides to pause: the frame it is sending when it decides (the XOFF
  // waits behind it), the XOFF's way over, the frame the sender is in the middle of, and what
  // the wire holds on the way back.
  const double round_trip_bytes = 2.0 * static_cast<double>(propagation_ns) * rate_gbps / 8.0;
  return static_cast<std::size_t>(std::ceil(round_trip_bytes)) + 2 * frame_bytes_max +
         sizeof(PfcFrame);
}

std::size_t min_pfc_buffer_bytes(double rate_gbps, TimeNs propagation_ns,
                                 std::size_t frame_bytes_max) {
  return pfc_headroom_bytes(rate_gbps, propagation_ns, frame_bytes_max) + 2 * frame_bytes_max;
}

std::optional<PfcThresholds> pfc_thresholds(std::size_t class_buffer_bytes, double rate_gbps,
                                            TimeNs propagation_ns, std::size_t frame_bytes_max) {
  if (class_buffer_bytes < min_pfc_buffer_bytes(rate_gbps, propagation_ns, frame_bytes_max)) {
    return std::nullopt;
  }
  PfcThresholds thresholds;
  thresholds.xoff_bytes =
      class_buffer_bytes - pfc_headroom_bytes(rate_gbps, propagation_ns, frame_bytes_max);
  thresholds.xon_bytes = thresholds.xoff_bytes - 2 * frame_bytes_max;
  return thresholds;
}

bool is_flow_control_frame(std::span<const std::byte> frame) {
  const std::uint16_t ether_type = ether_type_of(frame);
  if (ether_type == kEtherTypeMacControl) return true;
  if (ether_type != wire::kEtherTypeFabric || frame.size() < kEthernetHeaderBytes + 2) {
    return false;
  }
  const auto magic =
      static_cast<std::uint16_t>(std::to_integer<unsigned>(frame[kEthernetHeaderBytes]) << 8 |
                                 std::to_integer<unsigned>(frame[kEthernetHeaderBytes + 1]));
  return magic == kCreditMagic;
}

FlowControlCounters& FlowControlCounters::operator+=(const FlowControlCounters& other) {
  frames_held += other.frames_held;
  credit_updates_sent += other.credit_updates_sent;
  credit_updates_received += other.credit_updates_received;
  pause_frames_sent += other.pause_frames_sent;
  pause_frames_received += other.pause_frames_received;
  buffer_overruns += other.buffer_overruns;
  malformed += other.malformed;
  return *this;
}

// ---- FlowSender ----

FlowSender::FlowSender(const FlowControlConfig& config, double rate_gbps)
    : config_(config), rate_gbps_(rate_gbps) {}

std::size_t FlowSender::credit_bytes(TrafficClass c) const {
  const std::size_t i = class_index(c);
  const std::uint32_t outstanding = sent_bytes_[i] - freed_bytes_[i];  // mod 2^32
  return outstanding >= config_.class_buffer_bytes ? 0 : config_.class_buffer_bytes - outstanding;
}

bool FlowSender::may_send(TrafficClass c, std::size_t frame_bytes, TimeNs now) const {
  switch (config_.mode) {
    case FlowControlMode::kNone:
      return true;
    case FlowControlMode::kCbfc:
      return frame_bytes <= credit_bytes(c);
    case FlowControlMode::kPfc:
      return now >= paused_until_ns_[class_index(c)];
  }
  return true;
}

void FlowSender::on_sent(TrafficClass c, std::size_t frame_bytes) {
  deficit_bytes_[class_index(c)] -= static_cast<std::int64_t>(frame_bytes);
  if (config_.mode != FlowControlMode::kCbfc) return;
  sent_bytes_[class_index(c)] += static_cast<std::uint32_t>(frame_bytes);
}

void FlowSender::on_control(std::span<const std::byte> frame, TimeNs now) {
  if (ether_type_of(frame) == kEtherTypeMacControl) {
    PfcFrame pfc;
    if (!read_frame(frame, pfc) || pfc.opcode.value() != kPfcOpcode) {
      ++counters_.malformed;
      return;
    }
    ++counters_.pause_frames_received;
    for (std::size_t c = 0; c < kTrafficClasses; ++c) {
      if ((pfc.class_enable.value() & (1u << c)) == 0) continue;
      paused_until_ns_[c] = now + quanta_to_ns(pfc.pause_quanta[c].value(), rate_gbps_);
    }
    return;
  }
  CreditUpdateFrame update;
  if (!read_frame(frame, update) || update.magic.value() != kCreditMagic) {
    ++counters_.malformed;
    return;
  }
  ++counters_.credit_updates_received;
  for (std::size_t c = 0; c < kTrafficClasses; ++c) {
    const std::uint32_t freed = update.freed_bytes[c].value();
    // Totals only grow: an older update (reordered) or one claiming more than was sent is
    // ignored for that class.
    const auto advance = static_cast<std::int32_t>(freed - freed_bytes_[c]);
    const auto beyond_sent = static_cast<std::int32_t>(freed - sent_bytes_[c]);
    if (advance > 0 && beyond_sent <= 0) freed_bytes_[c] = freed;
  }
}

TimeNs FlowSender::resume_at_ns(TimeNs now) const {
  TimeNs earliest = kNever;
  for (TimeNs until : paused_until_ns_) {
    if (until > now) earliest = std::min(earliest, until);
  }
  return earliest;
}

std::optional<TrafficClass> FlowSender::pick(
    const std::array<bool, kTrafficClasses>& waiting,
    const std::array<std::size_t, kTrafficClasses>& head_bytes, TimeNs now) {
  std::array<bool, kTrafficClasses> eligible{};
  bool any = false;
  for (std::size_t c = 0; c < kTrafficClasses; ++c) {
    if (!waiting[c]) deficit_bytes_[c] = 0;  // an idle class keeps no credit (DRR)
    eligible[c] = waiting[c] && may_send(static_cast<TrafficClass>(c), head_bytes[c], now);
    any = any || eligible[c];
  }
  if (!any) {
    if ((waiting[0] || waiting[1]) && !blocked_) ++counters_.frames_held;
    blocked_ = waiting[0] || waiting[1];
    return std::nullopt;
  }
  blocked_ = false;
  // Deficit round robin: the class whose turn it is sends while its deficit covers its next
  // frame (on_sent() takes the frame's bytes off); then the turn passes and the next eligible
  // class gets its weight. Ends because weights are positive (the config check). Asked again
  // before on_sent(), it stops at the same class without adding weight again.
  for (;;) {
    const std::size_t c = turn_;
    if (eligible[c] && deficit_bytes_[c] >= static_cast<std::int64_t>(head_bytes[c])) {
      return static_cast<TrafficClass>(c);
    }
    turn_ = (turn_ + 1) % kTrafficClasses;
    if (eligible[turn_]) deficit_bytes_[turn_] += config_.weight_bytes[turn_];
  }
}

// ---- FlowReceiver ----

FlowReceiver::FlowReceiver(const FlowControlConfig& config, std::optional<PfcThresholds> thresholds,
                           double rate_gbps)
    : config_(config), thresholds_(thresholds), rate_gbps_(rate_gbps) {}

void FlowReceiver::on_arrival(TrafficClass c, std::size_t frame_bytes, TimeNs now) {
  const std::size_t i = class_index(c);
  occupancy_[i] += frame_bytes;
  if (config_.mode == FlowControlMode::kNone) return;
  if (occupancy_[i] > config_.class_buffer_bytes) ++counters_.buffer_overruns;
  if (config_.mode != FlowControlMode::kPfc || !thresholds_) return;
  if (occupancy_[i] < thresholds_->xoff_bytes) return;
  // Still full after half the pause the last XOFF asked for: ask again before it runs out.
  const TimeNs half_pause_ns = quanta_to_ns(kPfcMaxQuanta, rate_gbps_) / 2;
  if (!paused_[i] || now >= pause_sent_ns_[i] + half_pause_ns) {
    paused_[i] = true;
    pause_due_[i] = true;
  }
}

void FlowReceiver::on_departure(TrafficClass c, std::size_t frame_bytes) {
  const std::size_t i = class_index(c);
  occupancy_[i] -= std::min(occupancy_[i], frame_bytes);
  if (config_.mode == FlowControlMode::kCbfc) {
    freed_bytes_[i] += static_cast<std::uint32_t>(frame_bytes);
  } else if (config_.mode == FlowControlMode::kPfc && thresholds_ && paused_[i] &&
             occupancy_[i] <= thresholds_->xon_bytes) {
    paused_[i] = false;
    pause_due_[i] = true;  // XON
  }
}

TimeNs FlowReceiver::next_deadline_ns() const {
  if (config_.mode != FlowControlMode::kPfc) return kNever;
  const TimeNs half_pause_ns = quanta_to_ns(kPfcMaxQuanta, rate_gbps_) / 2;
  TimeNs next = kNever;
  for (std::size_t c = 0; c < kTrafficClasses; ++c) {
    if (paused_[c] && !pause_due_[c]) next = std::min(next, pause_sent_ns_[c] + half_pause_ns);
  }
  return next;
}

void FlowReceiver::on_time(TimeNs now) {
  if (config_.mode != FlowControlMode::kPfc) return;
  const TimeNs half_pause_ns = quanta_to_ns(kPfcMaxQuanta, rate_gbps_) / 2;
  for (std::size_t c = 0; c < kTrafficClasses; ++c) {
    if (paused_[c] && !pause_due_[c] && now >= pause_sent_ns_[c] + half_pause_ns) {
      pause_due_[c] = true;
    }
  }
}

bool FlowReceiver::control_due() const {
  if (config_.mode == FlowControlMode::kPfc) {
    return std::any_of(pause_due_.begin(), pause_due_.end(), [](bool due) { return due; });
  }
  if (config_.mode != FlowControlMode::kCbfc) return false;
  for (std::size_t c = 0; c < kTrafficClasses; ++c) {
    const std::uint32_t unreported = freed_bytes_[c] - reported_bytes_[c];
    // Every credit goes back once the buffer is empty, so a sender that ran out while fewer
    // than credit_update_bytes were freed is never left waiting.
    if (unreported >= config_.credit_update_bytes || (unreported > 0 && occupancy_[c] == 0)) {
      return true;
    }
  }
  return false;
}

bool FlowReceiver::take_control(wire::Frame& out, const MacAddr& src, TimeNs now) {
  if (!control_due()) return false;
  if (config_.mode == FlowControlMode::kPfc) {
    write_pause(out, src, now);
  } else {
    write_credit_update(out, src);
  }
  return true;
}

void FlowReceiver::write_credit_update(wire::Frame& out, const MacAddr& src) {
  CreditUpdateFrame update{};
  std::memcpy(update.dst, kLinkControlMac, 6);
  std::memcpy(update.src, src.octets.data(), 6);
  update.ether_type = wire::kEtherTypeFabric;
  update.magic = kCreditMagic;
  for (std::size_t c = 0; c < kTrafficClasses; ++c) {
    update.freed_bytes[c] = freed_bytes_[c];
    reported_bytes_[c] = freed_bytes_[c];
  }
  out.reserve(sizeof update + kControlFrameTailroomBytes);
  out.resize(sizeof update);
  std::memcpy(out.data(), &update, sizeof update);
  ++counters_.credit_updates_sent;
}

void FlowReceiver::write_pause(wire::Frame& out, const MacAddr& src, TimeNs now) {
  PfcFrame pfc{};
  std::memcpy(pfc.dst, kLinkControlMac, 6);
  std::memcpy(pfc.src, src.octets.data(), 6);
  pfc.ether_type = kEtherTypeMacControl;
  pfc.opcode = kPfcOpcode;
  std::uint16_t enable = 0;
  for (std::size_t c = 0; c < kTrafficClasses; ++c) {
    if (!pause_due_[c]) continue;
    enable = static_cast<std::uint16_t>(enable | (1u << c));
    pfc.pause_quanta[c] = paused_[c] ? kPfcMaxQuanta : 0;  // XOFF or XON
    if (paused_[c]) pause_sent_ns_[c] = now;
    pause_due_[c] = false;
  }
  pfc.class_enable = enable;
  out.reserve(sizeof pfc + kControlFrameTailroomBytes);
  out.resize(sizeof pfc);
  std::memcpy(out.data(), &pfc, sizeof pfc);
  ++counters_.pause_frames_sent;
}

std::size_t FlowReceiver::occupancy_bytes(TrafficClass c) const {
  return occupancy_[class_index(c)];
}

}  // namespace ethx
