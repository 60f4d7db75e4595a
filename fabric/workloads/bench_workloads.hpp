// The load/store microbenchmarks one node runs against its peers. Each drives the node's
// engine through the address map exactly as a guest's accesses would, checks every byte it
// reads, and returns raw figures; the coordinator turns them into the report.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "fabric/node/node_runtime.hpp"

namespace ethx {

// Where the benchmarks keep their data in every GPU's local memory.
struct BenchLayout {
  std::uint64_t pattern_offset = 0;  // read-only pattern, filled by each node at start
  std::uint64_t pattern_bytes = 0;
  std::uint64_t counters_offset = 0;  // one 8-byte atomic counter per requester GPU
  std::uint64_t store_offset = 0;     // target of the store bandwidth runs
  std::uint64_t store_bytes = 0;
  std::uint64_t all_to_all_offset = 0;  // one slice per writer GPU
  std::uint64_t all_to_all_slice_bytes = 0;

  // Throws ConfigError if the memory is too small for the benchmarks.
  static BenchLayout for_memory(std::uint64_t hbm_bytes, std::size_t gpu_count);
};

inline constexpr std::uint64_t kPatternSalt = 0x5eed;

struct LatencyRun {
  std::vector<std::uint64_t> samples_ns;
  std::uint64_t verified_ops = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t errors = 0;
};

struct ThroughputRun {
  std::uint64_t payload_bytes = 0;
  std::uint64_t ops = 0;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  std::uint64_t verified_ops = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t errors = 0;
  double gbps() const;
  double ops_per_second() const;
};

class BenchWorkloads {
 public:
  BenchWorkloads(NodeRuntime& node, const BenchLayout& layout);

  // Fills this GPU's pattern area; run before peers read it.
  void fill_local_pattern(std::span<std::byte> local_memory);

  LatencyRun echo_latency(GpuId peer, std::uint32_t count);
  LatencyRun load_latency(GpuId peer, std::uint32_t count, std::uint32_t bytes, std::uint64_t seed);
  // Bare echoes and loads alternating sample by sample: {echo, load}.
  std::pair<LatencyRun, LatencyRun> echo_and_load_latency(GpuId peer, std::uint32_t count,
                                                          std::uint32_t bytes, std::uint64_t seed);
  // Streams posted stores of `size_bytes` to `peer`, ends with a flush, then reads everything
  // back to verify it.
  ThroughputRun store_bandwidth(GpuId peer, std::uint32_t size_bytes, std::uint64_t total_bytes,
                                std::uint64_t salt);
  ThroughputRun read_bandwidth(GpuId peer, std::uint32_t size_bytes, std::uint64_t total_bytes,
                               std::uint32_t outstanding);
  ThroughputRun atomic_rate(GpuId peer, std::uint32_t count, std::uint32_t outstanding);
  // Posted stores of `bytes_per_peer` to every other GPU, then a flush to each.
  ThroughputRun all_to_all_store(std::uint64_t bytes_per_peer, std::uint64_t salt);
  // Reads back what all_to_all_store wrote at every peer and checks it.
  ThroughputRun all_to_all_verify(std::uint64_t bytes_per_peer, std::uint64_t salt);

  // Window address of byte `remote_offset` of `peer`'s memory (throws if no window maps it).
  std::uint64_t window_address(GpuId peer, std::uint64_t remote_offset) const;
  const BenchLayout& layout() const { return layout_; }

 private:
  void sample_echo(GpuId peer, LatencyRun& run);
  void sample_load(GpuId peer, std::uint64_t offset, std::uint32_t bytes, LatencyRun& run);
  std::uint64_t random_pattern_offset(std::mt19937_64& random, std::uint32_t bytes) const;
  // Issues one load/store through the address map; returns the op ids it started.
  void issue_read(std::uint64_t window_addr, std::uint32_t bytes, std::vector<OpId>& ops);
  bool issue_posted_write(std::uint64_t window_addr, std::span<const std::byte> data);
  // Keeps the transmit backlog short so a fast writer feels back-pressure.
  void throttle();
  // Reads [offset, offset+bytes) of `peer` in chunks and counts pattern mismatches.
  // Expected content: pattern_word(peer, offset, salt) at every word.
  void verify_remote(GpuId peer, std::uint64_t offset, std::uint64_t bytes, std::uint64_t salt,
                     ThroughputRun& run);

  NodeRuntime& node_;
  BenchLayout layout_;
  std::vector<Segment> segments_;
  std::uint64_t echo_sequence_ = 0;
};

}  // namespace ethx
