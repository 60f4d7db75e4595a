// The RDMA NIC of `ethx sim --engine roce`, in modelled time: what happens between a GPU posting
// a work request and the first packet leaving, and between a packet arriving and the GPU seeing
// its completion. The RoCEv2 engine (packet-engine/roce) decides *what* is sent; this model
// decides *when*, from the mechanisms the RDMA literature names as the costs of scale-up over
// RDMA (docs/timing-model.md, "The RDMA NIC", gives each parameter's source):
//
//   - posting: the GPU writes the WQE (post_ns each, one after another) and rings an MMIO
//     doorbell that reaches the NIC doorbell_ns later;
//   - processing units: every packet the NIC sends or receives occupies one of
//     processing_units for packet_ns, plus every context fetch it waits for;
//   - context caches: the QP's context (QPC), the memory region's protection entry (MPT) and
//     its address translations (MTT, one per page touched) are looked up in LRU caches; a miss
//     is a DMA read across PCIe while the unit waits;
//   - WQE fetch: without inline (BlueFlame) posting the WQE itself is a DMA read;
//   - PCIe: a DMA read holds one of pcie_read_tags from its request until its data is in,
//     at least pcie_rtt_ns, and its data serialises on the host-to-NIC direction; a write is
//     posted, serialises on the NIC-to-host direction and lands pcie_rtt_ns / 2 later. Bytes
//     carry pcie_tlp_overhead_bytes per pcie_max_payload_bytes.
//
// Sans-I/O: each call is handed the modelled time and returns a modelled time; resources are
// reserved first come, first served (calls arrive in simulated-time order), so the model needs
// no events of its own.
#pragma once

#include <cstdint>
#include <vector>

#include "fabric/config/rnic_config.hpp"
#include "fabric/sim/lru_cache.hpp"
#include "fabric/sim/sim_event_queue.hpp"

namespace ethx::sim {

struct RnicCounters {
  std::uint64_t doorbells = 0;
  std::uint64_t wqe_fetches = 0;
  std::uint64_t dma_reads = 0;   // every DMA read: WQEs, context misses, payloads
  std::uint64_t dma_writes = 0;  // payloads placed and CQEs
  std::uint64_t cqes = 0;
  std::uint64_t packets = 0;  // packets processed (sent and received)
  std::uint64_t qpc_hits = 0, qpc_misses = 0;
  std::uint64_t mpt_hits = 0, mpt_misses = 0;
  std::uint64_t mtt_hits = 0, mtt_misses = 0;
  std::uint64_t pcie_bytes_to_nic = 0;   // read completions (TLP framing included)
  std::uint64_t pcie_bytes_to_host = 0;  // posted writes and read requests
  TimePs unit_busy_ps = 0;               // summed over the processing units

  RnicCounters& operator+=(const RnicCounters& other);
};

// The contexts one packet needs: its QP, and the memory it reads or writes (none for ACKs).
struct NicAccess {
  std::uint32_t qpn = 0;
  bool fetch_wqe = false;     // a new send WQE that did not come inline with the doorbell
  std::uint32_t mr_key = 0;   // lkey or rkey of the region touched; ignored when bytes == 0
  std::uint64_t address = 0;  // first byte touched
  std::uint64_t bytes = 0;    // bytes touched (0: the packet touches no memory)
};

class RnicModel {
 public:
  explicit RnicModel(const RnicConfig& config);

  // The GPU posts one work request at `now`: when its doorbell reaches the NIC.
  TimePs post(TimePs now);
  // A packet to process from `at` (a send WQE's first packet, or a received packet): when the
  // processing unit is done with it, context fetches included.
  TimePs process(TimePs at, const NicAccess& access);
  // DMA reads `bytes` of payload from memory starting at `at`: when the data is on the NIC.
  TimePs dma_read(TimePs at, std::uint64_t bytes);
  // Posted DMA write of `bytes` starting at `at`: when it is visible in memory.
  TimePs dma_write(TimePs at, std::uint64_t bytes);
  // The completion entry written after `at`: when the GPU's poll sees it.
  TimePs write_cqe(TimePs at);

  bool inline_send(std::uint64_t payload_bytes) const {
    return config_.inline_wqe && payload_bytes <= config_.inline_max_bytes;
  }
  const RnicCounters& counters() const { return counters_; }
  const RnicConfig& config() const { return config_; }

 private:
  // A DMA read of `bytes` of context for a unit that waits for it.
  TimePs fetch(TimePs at, std::uint64_t bytes) { return dma_read(at, bytes); }
  TimePs look_up(TimePs at, LruCache& cache, std::uint64_t key, std::uint64_t bytes,
                 std::uint64_t& hits, std::uint64_t& misses);
  std::uint64_t pcie_bytes(std::uint64_t payload) const;
  TimePs pcie_ps(std::uint64_t bytes) const;

  RnicConfig config_;
  TimePs post_free_ps_ = 0;        // the GPU's posting is busy until then
  TimePs to_nic_free_ps_ = 0;      // host-to-NIC direction busy until then
  TimePs to_host_free_ps_ = 0;     // NIC-to-host direction busy until then
  std::vector<TimePs> units_;      // min-heap of the processing units' free times
  std::vector<TimePs> read_tags_;  // min-heap of the read tags' free times
  LruCache qpc_, mpt_, mtt_;
  RnicCounters counters_;
};

}  // namespace ethx::sim
