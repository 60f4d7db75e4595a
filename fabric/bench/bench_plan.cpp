#include "fabric/bench/bench_plan.hpp"

#include <algorithm>

namespace ethx {
namespace {

LoadStoreBenchPlan load_store_plan(bool quick) {
  LoadStoreBenchPlan plan;
  plan.store_sizes_bytes = {64, 256, 1024, 4096};
  plan.wire_sizes_bytes = {8, 64, 256, 1024, 4096};
  plan.forwarding_frame_sizes_bytes = {64, 1500};
  if (quick) {
    plan.latency_rounds = 4;
    plan.latency_samples_per_round = 500;
    plan.store_total_bytes = 2ull << 20;
    plan.read_total_bytes = 2ull << 20;
    plan.atomic_count = 2000;
    plan.all_to_all_bytes_per_peer = 64ull << 10;
    plan.forwarding_rounds = 3;
    plan.forwarding_run_ns = 200'000'000;
  } else {
    plan.latency_rounds = 10;
    plan.latency_samples_per_round = 2000;
    plan.store_total_bytes = 16ull << 20;
    plan.read_total_bytes = 16ull << 20;
    plan.atomic_count = 20000;
    plan.all_to_all_bytes_per_peer = 512ull << 10;
    plan.forwarding_rounds = 5;
    plan.forwarding_run_ns = 500'000'000;
  }
  return plan;
}

SweepPlan sweep_plan(bool quick) {
  SweepPlan plan;
  if (quick) {
    plan.latency_sizes = {8, 64, 512, 4096, 65536};
    plan.latency_samples = 200;
    plan.bandwidth_sizes = {8, 64, 512, 4096, 65536};
    plan.bandwidth_ops = 2000;
    plan.bandwidth_min_bytes = 64ull << 10;
    plan.bandwidth_max_bytes = 4ull << 20;
    plan.rate_count = 5000;
    plan.batches = {1, 16};
    plan.qp_counts = {1, 16, 256};
    plan.all_to_all_bytes_per_peer = 256ull << 10;
  } else {
    plan.latency_sizes = {8, 64, 256, 1024, 4096, 16384, 65536};
    plan.latency_samples = 1000;
    plan.bandwidth_sizes = {8, 64, 256, 1024, 4096, 16384, 65536};
    plan.bandwidth_ops = 10000;
    plan.bandwidth_min_bytes = 256ull << 10;
    plan.bandwidth_max_bytes = 16ull << 20;
    plan.rate_count = 50000;
    plan.batches = {1, 4, 16, 64};
    plan.qp_counts = {1, 16, 256, 1024};
    plan.all_to_all_bytes_per_peer = 1ull << 20;
  }
  return plan;
}

VmBenchPlan vm_plan(bool quick) {
  if (quick) return VmBenchPlan{500, 2, 16ull << 10, 16ull << 20};
  return VmBenchPlan{2000, 4, 256ull << 10, 64ull << 20};
}

PerftestPlan perftest_plan(bool quick) {
  PerftestPlan plan;
  if (quick) {
    plan.latency_sizes_bytes = {8, 4096};
    plan.latency_iterations = 200;
    plan.bandwidth_sizes_bytes = {8, 65536};
    plan.bandwidth_iterations = 100;
  } else {
    plan.latency_sizes_bytes = {8, 256, 4096, 65536};
    plan.latency_iterations = 1000;
    plan.bandwidth_sizes_bytes = {8, 4096, 65536};
    plan.bandwidth_iterations = 500;
  }
  return plan;
}

}  // namespace

BenchPlan bench_plan(bool quick) {
  return BenchPlan{load_store_plan(quick), sweep_plan(quick), vm_plan(quick), perftest_plan(quick)};
}

std::uint64_t bandwidth_total_bytes(const SweepPlan& plan, std::uint32_t size) {
  return std::clamp<std::uint64_t>(plan.bandwidth_ops * size, plan.bandwidth_min_bytes,
                                   plan.bandwidth_max_bytes) /
         size * size;
}

std::uint32_t bandwidth_outstanding(const SweepPlan& plan, std::uint32_t size) {
  return static_cast<std::uint32_t>(
      std::clamp<std::uint64_t>(kMaxInflightBytes / size, 1, plan.outstanding));
}

}  // namespace ethx
