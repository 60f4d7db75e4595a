// Header bytes and wire efficiency of one transfer, for both systems of the comparison, taken
// from the encoders themselves: wire::posted_write_cost for load/store and the RoCE engine's
// frame_bytes()/wire_bytes() for RoCEv2, so the tables change if a header changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

namespace ethx {

struct TransferWireCost {
  std::size_t payload_bytes = 0;
  std::size_t packets = 0;             // frames carrying the payload (one direction)
  std::size_t header_bytes = 0;        // frame bytes that are not payload (padding included)
  std::size_t wire_bytes = 0;          // everything the link serializes: + preamble, FCS, gap
  std::size_t reverse_wire_bytes = 0;  // the other direction: ACK or READ request
  double efficiency = 0.0;             // payload_bytes / wire_bytes
};

// A RoCEv2 RDMA WRITE of `payload_bytes` split at `path_mtu_bytes` (WRITE Only, or First /
// Middle / Last) and its one ACK.
TransferWireCost roce_write_cost(std::size_t payload_bytes, std::size_t path_mtu_bytes);
// A RoCEv2 RDMA READ: the request one way, the READ Response packets (with AETH) back; the
// efficiency is that of the responses, which carry the payload.
TransferWireCost roce_read_cost(std::size_t payload_bytes, std::size_t path_mtu_bytes);
// A load/store posted write (wire::posted_write_cost), in the same shape.
TransferWireCost load_store_write_cost(std::size_t payload_bytes, std::size_t frame_bytes_max);

// {"<bytes>": {"packets", "header_bytes", "wire_bytes", "reverse_wire_bytes", "efficiency"}}.
nlohmann::json wire_cost_json(const TransferWireCost& cost);

}  // namespace ethx
