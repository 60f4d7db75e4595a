// The RoCEv2 microbenchmarks one node runs against its peers: the same measurements as the
// load/store ones (bench_workloads.hpp) — latency, bandwidth, message rate, all-to-all —
// through the node's RoCE engine (RoceHost) over the same switch port. Every WRITE is read
// back with RDMA READ and every READ is checked against the pattern its target holds, so a
// figure is only reported with its verification counts next to it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/node/node_protocol.hpp"
#include "fabric/node/node_runtime.hpp"
#include "fabric/workloads/bench_workloads.hpp"
#include "packet-engine/roce/roce_verbs.hpp"

namespace ethx {

using RoceOp = protocol::RoceOp;  // the rdma_op of a command

struct RoceRateParams {
  std::uint32_t bytes = 8;
  std::uint64_t count = 10000;
  std::uint32_t batch = 1;         // WRs posted per doorbell
  std::uint32_t outstanding = 64;  // WRs in flight over all QPs
  std::uint64_t salt = 1;
};

// What a WRITE and a READ with a wrong rkey did (bad_rkey_probe).
struct BadRkeyProbe {
  roce::WcStatus read_status = roce::WcStatus::kSuccess;
  roce::WcStatus write_status = roce::WcStatus::kSuccess;
  std::uint64_t target_mismatches = 0;  // 8 B words of the target area that changed
  std::uint64_t errors = 0;             // the verification READ failed
};

class RoceBenchWorkloads {
 public:
  RoceBenchWorkloads(NodeRuntime& node, const BenchLayout& layout);

  // One WR at a time: post, doorbell, wait for its completion. WRITEs go to the peer's store
  // area and are all read back at the end; READs come from the peer's pattern area.
  LatencyRun latency(GpuId peer, RoceOp op, std::uint32_t bytes, std::uint32_t count,
                     std::uint64_t seed);
  // `outstanding` WRs of `bytes` in flight on the first QP to `peer` until `total_bytes`
  // moved; WRITE data is read back afterwards.
  ThroughputRun bandwidth(GpuId peer, RoceOp op, std::uint32_t bytes, std::uint64_t total_bytes,
                          std::uint32_t outstanding, std::uint64_t salt);
  // Small WRITEs spread round-robin over every QP to `peer`, `batch` WRs per doorbell.
  ThroughputRun message_rate(GpuId peer, const RoceRateParams& params);
  // WRITEs of `bytes_per_peer` to every other GPU (its slot in their all-to-all area).
  ThroughputRun all_to_all_write(std::uint64_t bytes_per_peer, std::uint64_t salt);
  // Reads back what all_to_all_write put at every peer and checks it.
  ThroughputRun all_to_all_verify(std::uint64_t bytes_per_peer, std::uint64_t salt);
  // Needs three QPs to `peer`: a READ with a wrong rkey on the first, a WRITE with a wrong
  // rkey over the peer's pattern area on the second (each NAK moves its QP to the error
  // state), then a READ on the third shows whether the pattern area is intact.
  BadRkeyProbe bad_rkey_probe(GpuId peer, std::uint32_t bytes);
  // The status of the first failed completion of this object's runs ("" if none), so a
  // failed run says why.
  const std::string& first_error() const { return first_error_; }

 private:
  struct Outstanding {
    std::uint64_t remote_offset = 0;
    std::size_t scratch_slot = 0;
    std::uint32_t bytes = 0;
  };
  roce::SendWr make_wr(RoceOp op, std::uint64_t wr_id, std::uint64_t local_offset,
                       std::uint32_t bytes, std::uint64_t remote_offset, std::uint32_t rkey) const;
  // Pumps the port until at least one completion is in the CQ; returns what was polled.
  void wait_completions(std::vector<roce::WorkCompletion>& out);
  void post_or_count(roce::QpNum qpn, const roce::SendWr& wr, ThroughputRun& run);
  void ring(roce::QpNum qpn);
  // RDMA READs [offset, offset + bytes) of `peer` in chunks and counts chunks whose words
  // differ from pattern_word(peer, ., salt).
  void verify_remote(GpuId peer, std::uint64_t offset, std::uint64_t bytes, std::uint64_t salt,
                     ThroughputRun& run);
  std::uint64_t write_region(std::uint64_t total_bytes, std::uint32_t bytes) const;

  // Counts a failed completion in `errors` and remembers the first status.
  void count_error(const roce::WorkCompletion& completion, std::uint64_t& errors);

  NodeRuntime& node_;
  BenchLayout layout_;
  std::vector<roce::WorkCompletion> polled_;
  std::string first_error_;
};

}  // namespace ethx
