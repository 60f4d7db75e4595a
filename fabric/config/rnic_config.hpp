// [rnic]: the RDMA NIC that `ethx sim --engine roce` puts between a GPU and the wire: the
// doorbell, DMA across PCIe, the NIC's context caches and its processing units. Every default
// has its public source (or is marked an assumption) in docs/timing-model.md, "The RDMA NIC".
#pragma once

#include <cstdint>

#include "address-map/fabric_types.hpp"

namespace ethx {

struct RnicConfig {
  // The GPU side: writing one work request (WQE) into the send queue, and the MMIO doorbell
  // write reaching the NIC. Posting is serialised per GPU; the doorbell is a latency.
  TimeNs post_ns = 20;
  TimeNs doorbell_ns = 500;
  // BlueFlame / inline: the WQE (and a payload of at most inline_max_bytes) travels with the
  // doorbell, so the NIC fetches neither by DMA.
  bool inline_wqe = true;
  std::uint32_t inline_max_bytes = 220;
  // PCIe between the NIC and the GPU's memory: the round trip of a DMA read, the rate of each
  // direction, how many reads may be outstanding, and the framing of each TLP.
  TimeNs pcie_rtt_ns = 550;
  double pcie_rate_gbps = 968.0;
  std::uint32_t pcie_read_tags = 256;
  std::uint32_t pcie_max_payload_bytes = 256;
  std::uint32_t pcie_tlp_overhead_bytes = 24;
  // Descriptor sizes (mlx5: 64 B send WQE basic block, 64 B CQE).
  std::uint32_t wqe_bytes = 64;
  std::uint32_t cqe_bytes = 64;
  // On-NIC caches, in entries, and what a miss fetches over PCIe.
  std::uint32_t qpc_cache_entries = 256;
  std::uint32_t mpt_cache_entries = 256;
  std::uint32_t mtt_cache_entries = 1024;
  std::uint32_t qpc_bytes = 232;
  std::uint32_t mpt_bytes = 64;
  std::uint32_t mtt_entry_bytes = 8;
  std::uint64_t page_bytes = std::uint64_t{64} * 1024;  // GPU memory pinned for RDMA: 64 KiB pages
  // Packet processing: each packet (sent or received) occupies one of processing_units for
  // packet_ns plus every cache-miss fetch it waits for.
  std::uint32_t processing_units = 16;
  TimeNs packet_ns = 90;
};

}  // namespace ethx
