// Link flow control per traffic class: one end of one hop, sans-I/O ([link] flow_control;
// docs/link-layer.md, "Flow control").
//
// Two classes, so that credits cannot deadlock: requests and responses. A response never waits
// for buffer that requests hold, and a GPU can always drain the responses that free its
// requests' tags. Three modes:
//
// - "none": today's Ethernet. Nothing is sent back; a full egress queue drops (tail drop).
// - "cbfc" (credit-based flow control, as UALink's data link layer and Broadcom SUE do it): the
//   sender may have at most `class_buffer_bytes` of a class in the receiver's buffer. The
//   receiver returns credits as frames leave its buffer, in credit updates that carry the
//   running total of bytes freed per class, so a lost update is repaired by the next one.
// - "pfc" (priority flow control, IEEE 802.1Qbb): the receiver sends XOFF for a class when its
//   buffer for that class fills past `xoff` and XON once it drains below `xon`; the headroom
//   above `xoff` takes what is already on the wire. Pause frames are real 802.1Qbb frames
//   (MAC control, EtherType 0x8808, opcode 0x0101), which tshark decodes.
//
// FlowSender is the sending end (it owns the credits or the pause state); FlowReceiver is the
// receiving end (it owns the buffer accounting and says which control frame is due).
#pragma once

#include <array>
#include <boost/endian/buffers.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "address-map/fabric_types.hpp"
#include "packet-engine/mac_addr.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {

enum class FlowControlMode : std::uint8_t { kNone, kCbfc, kPfc };
const char* to_string(FlowControlMode mode);
std::optional<FlowControlMode> parse_flow_control_mode(std::string_view name);

// Requests (every request opcode, and frames that are not load/store) and responses.
enum class TrafficClass : std::uint8_t { kRequests = 0, kResponses = 1 };
inline constexpr std::size_t kTrafficClasses = 2;
// A frame's class is its first transaction's: the engine packs a frame for one destination,
// and a response rides first when it has one (it frees the far end's tag).
TrafficClass traffic_class_of(std::span<const std::byte> frame);

struct FlowControlConfig {
  FlowControlMode mode = FlowControlMode::kNone;
  // The receiver's buffer for one class on one hop: CBFC's credits, PFC's buffer (xoff and xon
  // below it). Must hold at least a largest frame (CBFC) or the PFC headroom plus two frames.
  std::size_t class_buffer_bytes = std::size_t{64} * 1024;
  // CBFC: the receiver sends a credit update once this many bytes of a class were freed since
  // the last one (or at once when the sender may be out of credits: see FlowReceiver).
  std::size_t credit_update_bytes = 4096;
  // Deficit round robin between the classes at each sender, in bytes per turn; equal weights
  // share the link evenly when both classes have frames waiting.
  std::array<std::uint32_t, kTrafficClasses> weight_bytes{4096, 4096};
  // The fabric's largest frame (fabric.frame_bytes_max): sizes PFC's headroom.
  std::size_t frame_bytes_max = 1792;
};

// PFC thresholds for one hop: what may still arrive after XOFF is sent (the hop's round trip at
// the link rate, a largest frame being sent each way) is the headroom above xoff; xon is two
// largest frames below xoff, so XON and XOFF do not alternate with every frame.
struct PfcThresholds {
  std::size_t xoff_bytes = 0;
  std::size_t xon_bytes = 0;
};
// std::nullopt if the buffer cannot hold the headroom plus two frames (see min_pfc_buffer_bytes).
std::optional<PfcThresholds> pfc_thresholds(std::size_t class_buffer_bytes, double rate_gbps,
                                            TimeNs propagation_ns, std::size_t frame_bytes_max);
std::size_t pfc_headroom_bytes(double rate_gbps, TimeNs propagation_ns,
                               std::size_t frame_bytes_max);
std::size_t min_pfc_buffer_bytes(double rate_gbps, TimeNs propagation_ns,
                                 std::size_t frame_bytes_max);

// ---- Control frames (byte offsets in docs/wire-format.md) ----
// IEEE 802.1Qbb PFC frame: MAC control (EtherType 0x8808) to 01:80:C2:00:00:01, opcode 0x0101,
// a class-enable vector and a pause time per priority in quanta of 512 bit times; padded to the
// 60-byte minimum frame.
struct PfcFrame {
  std::uint8_t dst[6];
  std::uint8_t src[6];
  boost::endian::big_uint16_buf_t ether_type;    // 0x8808
  boost::endian::big_uint16_buf_t opcode;        // 0x0101
  boost::endian::big_uint16_buf_t class_enable;  // bit c: pause_quanta[c] applies
  boost::endian::big_uint16_buf_t pause_quanta[8];
  std::uint8_t pad[26];
};
static_assert(sizeof(PfcFrame) == 60);
inline constexpr std::uint16_t kEtherTypeMacControl = 0x8808;
inline constexpr std::uint16_t kPfcOpcode = 0x0101;
inline constexpr std::uint16_t kPfcMaxQuanta = 0xFFFF;

// CBFC credit update: an ethx link-control frame (EtherType 0x88B5 to 01:80:C2:00:00:01, as LLR
// control frames) whose body is this record. Totals are cumulative (mod 2^32), so an update
// that is lost or damaged costs nothing once the next one arrives.
struct CreditUpdateFrame {
  std::uint8_t dst[6];
  std::uint8_t src[6];
  boost::endian::big_uint16_buf_t ether_type;                    // kEtherTypeFabric
  boost::endian::big_uint16_buf_t magic;                         // kCreditMagic
  boost::endian::big_uint32_buf_t freed_bytes[kTrafficClasses];  // running totals per class
  std::uint8_t pad[36];
};
static_assert(sizeof(CreditUpdateFrame) == 60);
inline constexpr std::uint16_t kCreditMagic = 0x4346;  // "CF"

// Room a credit update or pause frame is written with beyond its 60 bytes, for what the hop's
// link layer appends before it leaves (LLR's 12-byte trailer, link_retry.hpp): the trailer then
// fits the buffer instead of growing it, one allocation per control frame fewer.
inline constexpr std::size_t kControlFrameTailroomBytes = 16;

// Whether `frame` is a flow-control frame (PFC or credit update) rather than data.
bool is_flow_control_frame(std::span<const std::byte> frame);

struct FlowControlCounters {
  std::uint64_t frames_held = 0;  // times a sender with frames waiting had to stop (credit, pause)
  std::uint64_t credit_updates_sent = 0;  // CBFC
  std::uint64_t credit_updates_received = 0;
  std::uint64_t pause_frames_sent = 0;  // PFC: XOFF and XON
  std::uint64_t pause_frames_received = 0;
  std::uint64_t buffer_overruns = 0;  // arrived past the class's buffer: the far end overran it
  std::uint64_t malformed = 0;        // a flow-control frame that does not parse
  FlowControlCounters& operator+=(const FlowControlCounters& other);  // sums every field
};

// The sending end of a hop: may a frame of a class go now?
class FlowSender {
 public:
  FlowSender(const FlowControlConfig& config, double rate_gbps);

  // Whether `frame_bytes` of class `c` may be sent at `now`.
  bool may_send(TrafficClass c, std::size_t frame_bytes, TimeNs now) const;
  // The frame was sent: CBFC takes its credit and the class's round-robin deficit pays for it.
  void on_sent(TrafficClass c, std::size_t frame_bytes);
  // A flow-control frame from the far end (is_flow_control_frame): applies it. Malformed ones
  // are counted and ignored.
  void on_control(std::span<const std::byte> frame, TimeNs now);
  // When a paused class may send again (PFC); kNever when no class is paused by time.
  TimeNs resume_at_ns(TimeNs now) const;
  // The class to send next among those with a frame waiting (`waiting[c]`) that may go, by
  // deficit round robin; std::nullopt if none may. `head_bytes[c]` is each class's next frame.
  // Charges nothing: on_sent() does, so a frame the layer below then refuses (a full replay
  // buffer) costs its class no turn, and asking again picks the same class.
  std::optional<TrafficClass> pick(const std::array<bool, kTrafficClasses>& waiting,
                                   const std::array<std::size_t, kTrafficClasses>& head_bytes,
                                   TimeNs now);

  std::size_t credit_bytes(TrafficClass c) const;  // CBFC: what may still be sent
  const FlowControlCounters& counters() const { return counters_; }
  static constexpr TimeNs kNever = UINT64_MAX;

 private:
  FlowControlConfig config_;
  double rate_gbps_;
  std::array<std::uint32_t, kTrafficClasses> sent_bytes_{};   // CBFC totals, mod 2^32
  std::array<std::uint32_t, kTrafficClasses> freed_bytes_{};  // as the far end last reported
  std::array<TimeNs, kTrafficClasses> paused_until_ns_{};     // PFC
  std::array<std::int64_t, kTrafficClasses> deficit_bytes_{};
  std::size_t turn_ = 0;
  bool blocked_ = false;  // the last pick found frames waiting and none allowed
  FlowControlCounters counters_;
};

// The receiving end of a hop: accounts a class's bytes from arrival until they leave the buffer
// and says when a credit update or a pause frame is due.
class FlowReceiver {
 public:
  // `thresholds` is required for PFC (pfc_thresholds()).
  FlowReceiver(const FlowControlConfig& config, std::optional<PfcThresholds> thresholds,
               double rate_gbps);

  void on_arrival(TrafficClass c, std::size_t frame_bytes, TimeNs now);
  void on_departure(TrafficClass c, std::size_t frame_bytes);
  // The control frame due now, if any, written into `out` with `src` as source MAC.
  bool take_control(wire::Frame& out, const MacAddr& src, TimeNs now);
  bool control_due() const;
  // PFC: a class still paused after half the pause its XOFF asked for is paused again before
  // the far end resumes (no frame arrives to notice it: the far end is paused). When on_time
  // must next run; kNever if no XOFF is running.
  TimeNs next_deadline_ns() const;
  void on_time(TimeNs now);
  static constexpr TimeNs kNever = UINT64_MAX;

  std::size_t occupancy_bytes(TrafficClass c) const;
  const FlowControlCounters& counters() const { return counters_; }

 private:
  void write_credit_update(wire::Frame& out, const MacAddr& src);
  void write_pause(wire::Frame& out, const MacAddr& src, TimeNs now);

  FlowControlConfig config_;
  std::optional<PfcThresholds> thresholds_;
  double rate_gbps_;
  std::array<std::size_t, kTrafficClasses> occupancy_{};
  std::array<std::uint32_t, kTrafficClasses> freed_bytes_{};     // CBFC running totals
  std::array<std::uint32_t, kTrafficClasses> reported_bytes_{};  // as last sent
  // PFC: whether the far end is paused (as far as this end said) and until when that XOFF
  // lasts; a class still above xon after half of it is paused again.
  std::array<bool, kTrafficClasses> paused_{};
  std::array<TimeNs, kTrafficClasses> pause_sent_ns_{};
  std::array<bool, kTrafficClasses> pause_due_{};
  FlowControlCounters counters_;
};

}  // namespace ethx
