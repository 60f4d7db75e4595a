#include "fabric/sim/sim_command.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "fabric/sim/sim_fabric.hpp"

namespace ethx::sim {

SimReport simulate(const TopologyConfig& config, TopologyKind topology, WorkloadKind workload,
                   std::uint64_t bytes, std::uint64_t seed, std::uint64_t repeat,
                   const std::vector<LinkFault>& link_faults) {
  SimFabric fabric(config, topology);
  fabric.schedule_link_faults(link_faults);
  WorkloadParams params;
  params.gpus = config.gpu_count;
  params.bytes = bytes;
  params.seed = seed;
  params.repeat = repeat;
  params.hbm_bytes = config.hbm_bytes;
  params.max_op_bytes = fabric.max_op_bytes();
  const auto traffic = make_workload(workload, params);
  SimReport report = fabric.run(*traffic);
  report.topology = to_string(topology);
  report.workload = to_string(workload);
  report.bytes = bytes;
  report.seed = seed;
  report.repeat = repeat;
  return report;
}

namespace {

int run(const SimOptions& options) {
  TopologyKind topology = TopologyKind::kSingle;
  if (!parse_topology_kind(options.topology, topology)) {
    throw std::invalid_argument("--topology must be single or leaf-spine (got \"" +
                                options.topology + "\")");
  }
  WorkloadKind workload = WorkloadKind::kAllToAll;
  if (!parse_workload_kind(options.workload, workload)) {
    throw std::invalid_argument(
        "--workload must be all-to-all, allreduce-ring, incast, random or load-latency (got \"" +
        options.workload + "\")");
  }
  TopologyConfig config = load_topology(options.config_path, options.gpus);
  const std::uint64_t bytes =
      options.bytes.value_or(workload == WorkloadKind::kLoadLatency ? 8 : 4096);
  const std::vector<LinkFault> link_faults = parse_link_faults(options.link_down, config.gpu_count);

  // Frames in flight take up to about 1 MiB per GPU (a requester's 256 tags of 1.5 KB frames
  // queued at its NIC, twice over for what the engines and the spare pool keep).
  grow_heap_with_huge_pages(std::clamp<std::size_t>(config.gpu_count << 20, 64 << 20, 2ull << 30));
  const auto start = std::chrono::steady_clock::now();
  const SimReport report =
      simulate(config, topology, workload, bytes, options.seed, options.repeat, link_faults);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (options.json) {
    std::cout << to_json(report).dump() << "\n";
  } else {
    std::cout << format_table(report);
  }
  std::cout.flush();
  const double per_second = wall > 0 ? 1.0 / wall : 0.0;
  std::fprintf(stderr,
               "ethx sim: wall %.3f s, %llu events (%.3g events/s), %llu frames delivered "
               "(%.3g frames/s), %llu link transmissions (%.3g/s)\n",
               wall, static_cast<unsigned long long>(report.events),
               static_cast<double>(report.events) * per_second,
               static_cast<unsigned long long>(report.frames_delivered),
               static_cast<double>(report.frames_delivered) * per_second,
               static_cast<unsigned long long>(report.link_frames),
               static_cast<double>(report.link_frames) * per_second);
  return report.complete ? 0 : 1;
}

}  // namespace

int run_sim_command(const SimOptions& options) {
  try {
    return run(options);
  } catch (const std::invalid_argument& error) {  // a bad option value
    std::cerr << "ethx sim: " << error.what() << "\n";
    return 2;
  }
}

}  // namespace ethx::sim
