#include "fabric/sim/rnic_model.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace ethx::sim {
namespace {

// Takes the resource of a min-heap of free times that frees first, from `at`: returns when
// it starts; the caller puts it back with release().
TimePs acquire(std::vector<TimePs>& heap, TimePs at) {
  std::pop_heap(heap.begin(), heap.end(), std::greater<>());
  return std::max(at, heap.back());
}
void release(std::vector<TimePs>& heap, TimePs free_at) {
  heap.back() = free_at;
  std::push_heap(heap.begin(), heap.end(), std::greater<>());
}

}  // namespace

RnicCounters& RnicCounters::operator+=(const RnicCounters& other) {
  doorbells += other.doorbells;
  wqe_fetches += other.wqe_fetches;
  dma_reads += other.dma_reads;
  dma_writes += other.dma_writes;
  cqes += other.cqes;
  packets += other.packets;
  qpc_hits += other.qpc_hits;
  qpc_misses += other.qpc_misses;
  mpt_hits += other.mpt_hits;
  mpt_misses += other.mpt_misses;
  mtt_hits += other.mtt_hits;
  mtt_misses += other.mtt_misses;
  pcie_bytes_to_nic += other.pcie_bytes_to_nic;
  pcie_bytes_to_host += other.pcie_bytes_to_host;
  unit_busy_ps += other.unit_busy_ps;
  return *this;
}

RnicModel::RnicModel(const RnicConfig& config)
    : config_(config),
      units_(std::max<std::uint32_t>(1, config.processing_units), 0),
      read_tags_(std::max<std::uint32_t>(1, config.pcie_read_tags), 0),
      qpc_(config.qpc_cache_entries),
      mpt_(config.mpt_cache_entries),
      mtt_(config.mtt_cache_entries) {}

std::uint64_t RnicModel::pcie_bytes(std::uint64_t payload) const {
  const std::uint64_t mps = std::max<std::uint64_t>(1, config_.pcie_max_payload_bytes);
  const std::uint64_t tlps = std::max<std::uint64_t>(1, (payload + mps - 1) / mps);
  return payload + tlps * config_.pcie_tlp_overhead_bytes;
}

TimePs RnicModel::pcie_ps(std::uint64_t bytes) const {
  return static_cast<TimePs>(
      std::llround(static_cast<double>(bytes) * 8.0 * 1000.0 / config_.pcie_rate_gbps));
}

TimePs RnicModel::post(TimePs now) {
  ++counters_.doorbells;
  post_free_ps_ = std::max(post_free_ps_, now) + config_.post_ns * kPsPerNs;
  return post_free_ps_ + config_.doorbell_ns * kPsPerNs;
}

TimePs RnicModel::look_up(TimePs at, LruCache& cache, std::uint64_t key, std::uint64_t bytes,
                          std::uint64_t& hits, std::uint64_t& misses) {
  if (cache.access(key)) {
    ++hits;
    return at;
  }
  ++misses;
  return fetch(at, bytes);
}

TimePs RnicModel::process(TimePs at, const NicAccess& access) {
  ++counters_.packets;
  const TimePs start = acquire(units_, at);
  TimePs t =
      look_up(start, qpc_, access.qpn, config_.qpc_bytes, counters_.qpc_hits, counters_.qpc_misses);
  if (access.fetch_wqe) {
    ++counters_.wqe_fetches;
    t = fetch(t, config_.wqe_bytes);
  }
  if (access.bytes > 0) {
    t = look_up(t, mpt_, access.mr_key, config_.mpt_bytes, counters_.mpt_hits,
                counters_.mpt_misses);
    const std::uint64_t page = std::max<std::uint64_t>(1, config_.page_bytes);
    const std::uint64_t last = (access.address + access.bytes - 1) / page;
    for (std::uint64_t index = access.address / page; index <= last; ++index) {
      // One translation per page; the key keeps regions apart (page indexes stay below 2^40).
      const std::uint64_t key = std::uint64_t{access.mr_key} << 40 | (index & ((1ull << 40) - 1));
      t = look_up(t, mtt_, key, config_.mtt_entry_bytes, counters_.mtt_hits, counters_.mtt_misses);
    }
  }
  t += config_.packet_ns * kPsPerNs;
  counters_.unit_busy_ps += t - start;
  release(units_, t);
  return t;
}

TimePs RnicModel::dma_read(TimePs at, std::uint64_t bytes) {
  ++counters_.dma_reads;
  const TimePs start = acquire(read_tags_, at);
  // The request is a header-only TLP toward the host; the data comes back after the round
  // trip, behind whatever else the host is sending the NIC.
  counters_.pcie_bytes_to_host += config_.pcie_tlp_overhead_bytes;
  const std::uint64_t wire = pcie_bytes(bytes);
  counters_.pcie_bytes_to_nic += wire;
  const TimePs done =
      std::max(start + config_.pcie_rtt_ns * kPsPerNs, to_nic_free_ps_) + pcie_ps(wire);
  to_nic_free_ps_ = done;
  release(read_tags_, done);
  return done;
}

TimePs RnicModel::dma_write(TimePs at, std::uint64_t bytes) {
  ++counters_.dma_writes;
  const std::uint64_t wire = pcie_bytes(bytes);
  counters_.pcie_bytes_to_host += wire;
  to_host_free_ps_ = std::max(to_host_free_ps_, at) + pcie_ps(wire);
  return to_host_free_ps_ + config_.pcie_rtt_ns * kPsPerNs / 2;
}

TimePs RnicModel::write_cqe(TimePs at) {
  ++counters_.cqes;
  return dma_write(at, config_.cqe_bytes);
}

}  // namespace ethx::sim
