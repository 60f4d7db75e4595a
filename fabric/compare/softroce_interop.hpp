// Interop between ethx's RoCEv2 engine (packet-engine/roce/roce_node.hpp) and Soft-RoCE (rdma_rxe)
// in a guest of a fabric with guest NICs (docs/softroce.md): the engine runs on the host port
// of the same switch (an AF_PACKET socket on veth ethx-<tag>-h in namespace ethx-<tag>-h,
// MAC host_port_mac(), IPv4 host_port_ip()), answers ARP for its address, and completes an
// RDMA WRITE and an RDMA READ against a QP of `ethx-rxe-peer` in the guest, with QPN, PSN,
// GID and rkey exchanged out of band through the guest's command agent. Data is verified on
// both sides: the engine reads back what it wrote plus the guest's own pattern, and the guest
// checks its memory byte by byte.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace ethx {

class GuestAgent;

struct InteropOptions {
  std::string netns_tag;               // the fabric's tag (namespace names)
  std::size_t vm = 0;                  // the guest whose rxe0 is the peer
  std::uint32_t region_bytes = 16384;  // the guest's registered buffer; the engine READs all of it
  std::uint32_t write_bytes = 8192;    // the engine WRITEs [0, write_bytes) (several MTU packets)
  std::uint32_t seed = 1;              // engine pattern seed (< 2^24)
  std::int64_t timeout_ms = 60'000;    // per step
  // Last step: a WRITE of other bytes with a wrong rkey, which rxe must NAK (remote access
  // error) without touching its memory (the guest's byte check covers it).
  bool bad_rkey_write = true;
};

// Runs the procedure; returns {"verified", "write", "read", "engine", "guest", "steps"...}.
// Throws std::runtime_error naming the step that failed (with what the guest printed).
nlohmann::json run_roce_interop(GuestAgent& agent, const InteropOptions& options);

// The byte patterns both sides compute (qemu-device/guest/rxe_peer.c has the guest's copy).
inline std::uint8_t interop_guest_byte(std::size_t i) {
  return static_cast<std::uint8_t>((i * 7 + 0x5a) & 0xff);
}
inline std::uint8_t interop_engine_byte(std::size_t i, std::uint32_t seed) {
  return static_cast<std::uint8_t>((i * 13 + std::size_t{seed} * 101 + 0x33) & 0xff);
}

}  // namespace ethx
