#include "fabric/bench/compare_wire.hpp"

#include <algorithm>

#include "packet-engine/roce/roce_wire.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {
namespace {

// The payload of each packet of a message of `payload_bytes` at `mtu` (at least one packet:
// a zero-length WRITE still sends WRITE Only).
std::vector<std::size_t> split(std::size_t payload_bytes, std::size_t mtu) {
  std::vector<std::size_t> pieces;
  std::size_t left = payload_bytes;
  do {
    const std::size_t piece = std::min(left, mtu);
    pieces.push_back(piece);
    left -= piece;
  } while (left > 0);
  return pieces;
}

using roce::Opcode;

Opcode write_opcode(std::size_t index, std::size_t count) {
  if (count == 1) return Opcode::kWriteOnly;
  if (index == 0) return Opcode::kWriteFirst;
  return index + 1 == count ? Opcode::kWriteLast : Opcode::kWriteMiddle;
}

Opcode read_response_opcode(std::size_t index, std::size_t count) {
  if (count == 1) return Opcode::kReadResponseOnly;
  if (index == 0) return Opcode::kReadResponseFirst;
  return index + 1 == count ? Opcode::kReadResponseLast : Opcode::kReadResponseMiddle;
}

template <class OpcodeOf>
TransferWireCost roce_cost(std::size_t payload_bytes, std::size_t mtu, OpcodeOf opcode_of,
                           Opcode reverse) {
  TransferWireCost cost;
  cost.payload_bytes = payload_bytes;
  const std::vector<std::size_t> pieces = split(payload_bytes, mtu);
  cost.packets = pieces.size();
  std::size_t frame_total = 0;
  for (std::size_t n = 0; n < pieces.size(); ++n) {
    const std::size_t frame = roce::frame_bytes(opcode_of(n, pieces.size()), pieces[n]);
    frame_total += frame;
    cost.wire_bytes += roce::wire_bytes(frame);
  }
  cost.header_bytes = frame_total - payload_bytes;
  cost.reverse_wire_bytes = roce::wire_bytes(roce::frame_bytes(reverse, 0));
  cost.efficiency = cost.wire_bytes > 0
                        ? static_cast<double>(payload_bytes) / static_cast<double>(cost.wire_bytes)
                        : 0.0;
  return cost;
}

}  // namespace

TransferWireCost roce_write_cost(std::size_t payload_bytes, std::size_t path_mtu_bytes) {
  return roce_cost(payload_bytes, path_mtu_bytes, write_opcode, Opcode::kAcknowledge);
}

TransferWireCost roce_read_cost(std::size_t payload_bytes, std::size_t path_mtu_bytes) {
  return roce_cost(payload_bytes, path_mtu_bytes, read_response_opcode, Opcode::kReadRequest);
}

TransferWireCost load_store_write_cost(std::size_t payload_bytes, std::size_t frame_bytes_max) {
  const wire::WireCost posted = wire::posted_write_cost(payload_bytes, frame_bytes_max);
  TransferWireCost cost;
  cost.payload_bytes = posted.payload_bytes;
  cost.packets = posted.frames;
  cost.header_bytes = posted.header_bytes;
  cost.wire_bytes = posted.wire_bytes;
  cost.reverse_wire_bytes = 0;  // posted: no per-write response
  cost.efficiency = posted.efficiency;
  return cost;
}

nlohmann::json wire_cost_json(const TransferWireCost& cost) {
  return nlohmann::json{{"packets", cost.packets},
                        {"header_bytes", cost.header_bytes},
                        {"wire_bytes", cost.wire_bytes},
                        {"reverse_wire_bytes", cost.reverse_wire_bytes},
                        {"efficiency", cost.efficiency}};
}

}  // namespace ethx
