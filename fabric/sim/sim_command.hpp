// `ethx sim`: build the simulated fabric from the topology config, run one workload in
// modelled time, print the report (stdout) and the wall-clock figures (stderr).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "fabric/sim/sim_fabric.hpp"
#include "fabric/sim/sim_link_faults.hpp"
#include "fabric/sim/sim_report.hpp"
#include "fabric/sim/sim_topology.hpp"
#include "fabric/sim/sim_workloads.hpp"

namespace ethx::sim {

struct SimOptions {
  std::size_t gpus = 0;  // 0: from the config
  std::string engine = "load-store";
  std::string workload = "all-to-all";
  std::optional<std::uint64_t> bytes;  // default: default_bytes(workload)
  std::optional<std::size_t> peers;    // message-rate only
  std::string op = "write";            // message-rate only: write or read
  std::uint64_t seed = 1;
  std::string topology = "single";
  std::uint64_t repeat = 1;
  bool json = false;
  std::string config_path;
  std::vector<std::string> link_down;  // --link-down GPU@TIME_NS[-UNTIL_NS], repeatable
  std::string calibrate_path;          // --calibrate FILE: an `ethx bench --json` report
  std::optional<unsigned> threads;     // 1 or 2; default: 2 on a machine with two cores or more
};

// One run of the simulator, as the options describe it once parsed.
struct SimRequest {
  TopologyKind topology = TopologyKind::kSingle;
  WorkloadKind workload = WorkloadKind::kAllToAll;
  SimEngine engine = SimEngine::kLoadStore;
  std::uint64_t bytes = 4096;
  std::uint64_t seed = 1;
  std::uint64_t repeat = 1;
  std::size_t peers = 0;  // message-rate: 0 is every other GPU
  bool reads = false;     // message-rate: reads instead of writes
  std::vector<LinkFault> link_faults;
  StreamParams stream;  // WorkloadKind::kStream only
  // 2: the switches' events on a second thread when the run has two partitions
  // (SimFabric::partitioned). The report is the same for 1 and 2.
  unsigned threads = 1;
  SimPartitioning partitioning = SimPartitioning::kAuto;  // kOne: the tests' reference run
  bool ignore_core_distance = false;                      // tests: two threads even on far cores
};

// Runs one simulation of an already loaded config; throws std::invalid_argument on bad
// options.
SimReport simulate(const TopologyConfig& config, const SimRequest& request);
// The load/store engine, without peers.
SimReport simulate(const TopologyConfig& config, TopologyKind topology, WorkloadKind workload,
                   std::uint64_t bytes, std::uint64_t seed, std::uint64_t repeat,
                   const std::vector<LinkFault>& link_faults = {});

// The `ethx sim` command line that repeats `request` on `gpus` GPUs (config_path empty: the
// embedded default), so a figure taken from simulate() can say how to reproduce it.
std::string command_line(std::size_t gpus, const SimRequest& request,
                         const std::string& config_path = "");

// The whole command; returns the exit status (1 if the workload did not complete).
int run_sim_command(const SimOptions& options);

}  // namespace ethx::sim
