// Fuzz target: link-level retry (packet-engine/link_retry.hpp) over a hop the input controls.
// End A stamps frames, end B takes them; the input decides which frames the wire carries,
// loses or damages in either direction, when time passes, and feeds A arbitrary bytes as if
// they came from B. Whatever happens, B must hand up exactly the frames A was given, in
// order, each once, with nothing else (a delivered frame is the next one A stamped); a
// delivered frame's payload is its length minus the trailer; A's replay buffer stays within
// its limit (or holds one frame).
//
// Input: records (tests/fuzz/fuzz_input.hpp). Control bits 0-2 choose the action:
//   0 A stamps the record's bytes (as a frame) if it may send    4 A puts a replay on the wire
//   1 the wire hands B its next frame                             5 time passes: on_time on both
//   2 B puts its ACK or NAK on the wire                           6 A receives the record's bytes
//   3 the wire hands A its next frame                             7 A's link resets
// (bytes at 6 that make a valid TRAIN reset A as 7 does: B "started afresh").
// bit 3: the frame handed over (1, 3) is lost; bit 4: one bit of it is flipped (record byte 0).
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "packet-engine/link_retry.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

using namespace ethx;

struct Hop {
  LinkRetryConfig config = [] {
    LinkRetryConfig c;
    c.replay_buffer_bytes = 4096;  // small, so the full-buffer path is reached
    c.ack_every_frames = 4;
    return c;
  }();
  LinkRetry a{config, wire::Crc::kOn};
  LinkRetry b{config, wire::Crc::kOn};
  std::deque<wire::Frame> a_to_b, b_to_a;  // on the wire
  std::vector<wire::Frame> stamped;        // what A was given, in order
  std::size_t delivered = 0;
  TimeNs now = 0;
  std::size_t largest = 0;

  // The next frame on `wire`, lost or damaged as the control byte says; false if none.
  static bool take(std::deque<wire::Frame>& wire, const fuzz::Record& record, wire::Frame& out) {
    if (wire.empty()) return false;
    out = std::move(wire.front());
    wire.pop_front();
    if ((record.control & 0x08) != 0) return false;
    if ((record.control & 0x10) != 0 && !out.empty()) {
      const std::size_t bit =
          record.bytes.empty() ? 0 : std::to_integer<std::size_t>(record.bytes[0]);
      out[(bit / 8) % out.size()] ^= static_cast<std::byte>(1u << (bit % 8));
    }
    return true;
  }

  void to_b(const fuzz::Record& record) {
    wire::Frame frame;
    if (!take(a_to_b, record, frame)) return;
    std::size_t payload_bytes = 0;
    if (b.receive(frame, now, payload_bytes) != LinkRetry::Verdict::kDeliver) return;
    ETHX_FUZZ_CHECK(payload_bytes + kLlrTrailerBytes == frame.size());
    ETHX_FUZZ_CHECK(delivered < stamped.size());
    frame.resize(payload_bytes);
    ETHX_FUZZ_CHECK(frame == stamped[delivered]);
    ++delivered;
  }

  void stamp(const fuzz::Record& record) {
    wire::Frame frame(record.bytes.begin(), record.bytes.end());
    if (!a.can_send(frame.size())) return;
    stamped.push_back(frame);
    largest = std::max(largest, frame.size() + kLlrTrailerBytes);
    a.stamp(frame, now);
    a_to_b.push_back(std::move(frame));
  }

  void step(const fuzz::Record& record) {
    std::size_t payload_bytes = 0;
    wire::Frame frame;
    switch (record.control & 0x07) {
      case 0:
        stamp(record);
        break;
      case 1:
        to_b(record);
        break;
      case 2:
        if (b.take_control(frame, default_mac_for_gpu(2))) b_to_a.push_back(std::move(frame));
        break;
      case 3:
        if (take(b_to_a, record, frame)) a.receive(frame, now, payload_bytes);
        break;
      case 4:
        if (a.take_replay(frame, now)) a_to_b.push_back(std::move(frame));
        break;
      case 5:
        now += 1 + record.bytes.size() * 97;
        a.on_time(now);
        b.on_time(now);
        break;
      case 6: {
        // Anything at all from B's side: it may acknowledge or NAK, never make B take a frame.
        const std::uint64_t trainings = a.counters().trainings_answered;
        ETHX_FUZZ_CHECK(a.receive(record.bytes, now, payload_bytes) !=
                            LinkRetry::Verdict::kDeliver ||
                        payload_bytes + kLlrTrailerBytes == record.bytes.size());
        // A forged TRAIN says B started afresh: A resets, as in case 7, and what it held is gone.
        if (a.counters().trainings_answered != trainings) {
          a_to_b.clear();
          stamped.resize(delivered);
        }
        break;
      }
      default:
        // The frames A still held are gone with the link: B may never see them.
        a.reset();
        a_to_b.clear();
        stamped.resize(delivered);
        break;
    }
    ETHX_FUZZ_CHECK(a.unacked_bytes() <= std::max(config.replay_buffer_bytes, largest));
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::byte> rest = fuzz::as_bytes(data, size);
  Hop hop;
  fuzz::Record record;
  while (fuzz::next_record(rest, record)) hop.step(record);
  return 0;
}
