// Fuzz target: the wire decoder (decode_frame, TxnCursor) on arbitrary bytes, and the encoder
// as its inverse: every frame the decoder accepts must re-encode to the same bytes.
// Input: control byte (ModeBits, tests/fuzz/fuzz_input.hpp), then one frame.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "packet-engine/wire.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

using namespace ethx;

bool inside(std::span<const std::byte> part, std::span<const std::byte> whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

// Operands travel big-endian; reading then writing one must give back the same bytes.
void check_operand_round_trip(std::span<const std::byte> operand) {
  std::byte again[8] = {};
  const auto width = std::min<std::size_t>(operand.size(), sizeof again);
  wire::put_operand(std::span<std::byte>(again, width), wire::get_operand(operand.first(width)));
  ETHX_FUZZ_CHECK(std::equal(again, again + width, operand.begin()));
}

// The reliability layer restamps frames it resends; that must keep them valid.
void check_restamp(const wire::Frame& frame, const wire::FrameView& view) {
  wire::Frame copy = frame;
  auto flags = static_cast<std::uint8_t>(~view.flags);
  if (view.txn_count == 0) {
    // An ACK/NAK control frame may not become sequenced: refused, and left as it was.
    ETHX_FUZZ_CHECK(!wire::restamp_link_fields(copy, wire::kFlagSeq | wire::kFlagAck, 1, 1, 1));
    ETHX_FUZZ_CHECK(copy == frame);
    flags = static_cast<std::uint8_t>((flags | wire::kFlagAck) & ~wire::kFlagSeq);
  }
  ETHX_FUZZ_CHECK(wire::restamp_link_fields(copy, flags, view.seq + 1, view.ack + 1,
                                            static_cast<std::uint8_t>(view.credits + 1)));
  wire::FrameView again;
  ETHX_FUZZ_CHECK(wire::decode_frame(copy, again) == wire::DecodeError::kOk);
  ETHX_FUZZ_CHECK(again.flags == flags && again.seq == view.seq + 1 && again.ack == view.ack + 1);
  ETHX_FUZZ_CHECK(
      std::equal(again.body.begin(), again.body.end(), view.body.begin(), view.body.end()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const wire::Frame frame = fuzz::fix_up(fuzz::as_bytes(data + 1, size - 1), data[0]);
  ETHX_FUZZ_CHECK(wire::crc32c(frame) == wire::crc32c_portable(frame));

  wire::FrameView view;
  const wire::DecodeError error = wire::decode_frame(frame, view);
  ETHX_FUZZ_CHECK(static_cast<std::size_t>(error) < wire::kDecodeErrorCount);
  if (error != wire::DecodeError::kOk) {
    wire::Frame copy = frame;
    ETHX_FUZZ_CHECK(!wire::restamp_link_fields(copy, 0, 0, 0, 0));
    ETHX_FUZZ_CHECK(copy == frame);  // a refused frame is left as it was
    return 0;
  }
  ETHX_FUZZ_CHECK(view.body.data() == frame.data() + wire::kBodyOffset);
  const std::size_t used_bytes = wire::kFrameOverheadBytes + view.body.size();
  ETHX_FUZZ_CHECK(used_bytes <= frame.size());

  // Larger frames than the builder may produce are valid on the wire but cannot round-trip.
  const bool rebuildable = used_bytes <= wire::kAbsoluteFrameBytesMax;
  wire::FrameBuilder builder(wire::kAbsoluteFrameBytesMax);
  builder.start(wire::FrameAddress{view.dst_mac, view.src_mac, view.src_gpu, view.dst_gpu,
                                   view.partition, view.incarnation});

  wire::TxnCursor cursor(view);
  wire::TxnView txn;
  std::size_t count = 0;
  while (cursor.next(txn)) {
    ++count;
    ETHX_FUZZ_CHECK(count <= view.txn_count);
    ETHX_FUZZ_CHECK(wire::is_known_opcode(static_cast<std::uint8_t>(txn.opcode)));
    ETHX_FUZZ_CHECK(inside(txn.payload, view.body));
    ETHX_FUZZ_CHECK(wire::to_string(txn.status) != nullptr);
    if (wire::is_atomic_request(txn.opcode) || txn.opcode == wire::Opcode::kAtomicResp) {
      ETHX_FUZZ_CHECK(txn.payload.size() == txn.length || txn.payload.size() == 2u * txn.length);
      check_operand_round_trip(txn.payload.first(txn.length));
    }
    if (rebuildable) {
      ETHX_FUZZ_CHECK(builder.fits(txn.payload.size()));
      auto payload =
          builder.append(wire::TxnFields{txn.opcode, txn.status, txn.tag, txn.length, txn.address},
                         txn.payload.size());
      std::copy(txn.payload.begin(), txn.payload.end(), payload.begin());
    }
  }
  ETHX_FUZZ_CHECK(count == view.txn_count);

  if (rebuildable) {
    const wire::Frame again = builder.finish(view.flags, view.seq, view.ack, view.credits);
    ETHX_FUZZ_CHECK(again.size() == used_bytes);
    ETHX_FUZZ_CHECK(std::equal(again.begin(), again.end(), frame.begin()));
  }
  check_restamp(frame, view);
  return 0;
}
