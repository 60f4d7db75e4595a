// Which sizes, counts and iterations the benchmarks run, --quick or full, in one place:
// `ethx bench` (the load/store engine, --engine roce and --vms) and `ethx compare` (its
// load/store and RoCE engine systems at the same sizes, and the Soft-RoCE perftest runs).
// --quick sizes are pinned so that CI smoke tests finish in well under a minute on 2 cores.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ethx {

// `ethx bench` with the load/store engine (bench_coordinator.cpp), GPU 0 -> GPU 1.
struct LoadStoreBenchPlan {
  // Echoes and loads interleaved sample by sample; the report takes the rounds' medians.
  std::uint32_t latency_rounds = 0;
  std::uint32_t latency_samples_per_round = 0;
  std::uint32_t latency_bytes = 8;
  std::vector<std::uint32_t> store_sizes_bytes;  // one posted-store bandwidth run per size
  std::uint64_t store_total_bytes = 0;
  std::uint32_t read_size_bytes = 4096;
  std::uint32_t read_outstanding = 32;
  std::uint64_t read_total_bytes = 0;
  std::uint32_t atomic_count = 0;
  std::uint32_t atomic_outstanding = 16;
  std::uint64_t all_to_all_bytes_per_peer = 0;
  std::vector<std::uint32_t> wire_sizes_bytes;  // the report's wire-cost table
  // Socket transports: the switch's forwarding rate against the bare forwarder's.
  std::uint32_t forwarding_rounds = 0;
  std::int64_t forwarding_run_ns = 0;
  std::vector<std::size_t> forwarding_frame_sizes_bytes;
};

// The size sweep of the RoCE suite (roce_suite.hpp: `ethx bench --engine roce`) and of both
// engines in `ethx compare`, so the two systems are measured at the same points.
struct SweepPlan {
  std::vector<std::uint32_t> latency_sizes;  // bytes
  std::uint32_t latency_samples = 0;
  std::vector<std::uint32_t> bandwidth_sizes;  // bytes
  std::uint64_t bandwidth_ops = 0;             // per size, bounded by the byte limits below
  std::uint64_t bandwidth_min_bytes = 0;
  std::uint64_t bandwidth_max_bytes = 0;
  std::uint32_t outstanding = 32;
  std::uint64_t rate_count = 0;  // small WRITEs per message-rate run
  std::vector<std::uint32_t> batches;
  std::vector<std::uint32_t> qp_counts;  // many-QP runs
  std::uint64_t all_to_all_bytes_per_peer = 0;
};

// `ethx bench --vms`: the host's bare echo rounds interleaved with the guests' latency passes,
// and the guests' all-to-all (the guests size their own microbenchmarks with --quick).
struct VmBenchPlan {
  std::uint32_t echo_samples_per_round = 0;
  std::uint32_t latency_rounds = 0;
  std::uint64_t all_to_all_bytes_per_peer = 0;
  // The host-process read bandwidth copies are held against: 4 KiB reads, 32 outstanding, from
  // one ethx-node to another over the VMs' transport.
  std::uint64_t host_read_total_bytes = 0;
};

// The Soft-RoCE perftest runs of `ethx compare` (softroce_suite.cpp), WRITE and READ each.
struct PerftestPlan {
  std::vector<std::uint64_t> latency_sizes_bytes;    // ib_{write,read}_lat -s
  std::uint64_t latency_iterations = 0;              // -n
  std::vector<std::uint64_t> bandwidth_sizes_bytes;  // ib_{write,read}_bw -s
  std::uint64_t bandwidth_iterations = 0;
  // Messages of at most 8 B run this many times as many iterations: they are quick.
  std::uint64_t small_message_iteration_factor = 10;
};

struct BenchPlan {
  LoadStoreBenchPlan load_store;
  SweepPlan sweep;
  VmBenchPlan vm;
  PerftestPlan perftest;
};

BenchPlan bench_plan(bool quick);

// Total bytes of one bandwidth run of `size` bytes per transfer under `plan`.
std::uint64_t bandwidth_total_bytes(const SweepPlan& plan, std::uint32_t size);

// Transfers in flight in a bandwidth run of `size`: plan.outstanding, but at most
// kMaxInflightBytes of payload. Both systems get the same depth: neither has flow control for
// responses here, and deeper bursts of 64 KiB reads overflow the switch's egress queues.
inline constexpr std::uint64_t kMaxInflightBytes = std::uint64_t{128} * 1024;
std::uint32_t bandwidth_outstanding(const SweepPlan& plan, std::uint32_t size);

}  // namespace ethx
