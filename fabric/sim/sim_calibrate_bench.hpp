// `ethx sim --calibrate`, part 1: what an `ethx bench --json` report measured, and the same
// experiment for the simulator for each figure (sizes, counts, windows, GPUs as the bench runs
// them). Pure: JSON in, figures out; the fitting and the table are in sim_calibrate.hpp.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "fabric/sim/sim_command.hpp"

namespace ethx::sim {

// What `ethx bench --quick` runs (fabric/bench/bench_plan.cpp, and two sizes of
// fabric/workloads/), repeated here because fabric/sim may not include fabric/bench; the unit
// test SimCalibrate.ThePlanIsTheBenchsQuickPlan holds these against bench_plan(true).
struct QuickBenchPlan {
  // Load/store (LoadStoreBenchPlan).
  std::uint64_t latency_samples =
      std::uint64_t{4} * 500;  // latency_rounds x latency_samples_per_round
  std::uint64_t store_total_bytes = 2ull << 20;
  std::uint32_t read_size_bytes = 4096;
  std::uint32_t read_outstanding = 32;
  std::uint64_t read_total_bytes = 2ull << 20;
  std::uint32_t atomic_count = 2000;
  std::uint32_t atomic_outstanding = 16;
  std::uint64_t all_to_all_bytes_per_peer = 64ull << 10;
  std::uint32_t all_to_all_store_bytes = 1024;  // bench_workloads.cpp: kStoreBytes
  // bench_workloads.cpp: a store loop calls throttle(), which polls the engine, every 16
  // stores; the stores between share frames and, when contiguous, transactions.
  std::uint32_t stores_per_poll = 16;
  // RoCE (SweepPlan, roce_suite.cpp).
  std::uint64_t roce_latency_samples = 200;
  std::uint64_t roce_bandwidth_ops = 2000;
  std::uint64_t roce_bandwidth_min_bytes = 64ull << 10;
  std::uint64_t roce_bandwidth_max_bytes = 4ull << 20;
  std::uint32_t roce_outstanding = 32;
  std::uint64_t roce_max_inflight_bytes = 128ull << 10;  // bench_plan.hpp kMaxInflightBytes
  std::uint64_t roce_rate_count = 5000;
  std::uint32_t roce_rate_outstanding = 64;  // roce_suite.cpp: max(64, batch) for batch 1
  std::uint64_t roce_all_to_all_bytes_per_peer = 256ull << 10;
  std::uint32_t roce_all_to_all_write_bytes = 4096;  // roce_bench_workloads.cpp
  std::uint32_t roce_all_to_all_outstanding = 32;    // roce_bench_workloads.cpp
};

// A bench report that is not one: names the field that is missing or bad.
class CalibrationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How a figure is read off a simulation.
enum class Metric : std::uint8_t {
  kEchoRttNs,  // the bare echo through the switch: no engine, computed from the model (below)
  kP50Ns,      // the operations' median latency
  kGbps,       // payload bits / makespan
  kMops,       // operations per microsecond of makespan
};

struct BenchFigure {
  std::string key;  // where the report has it: "store_bandwidth_gbps.64"
  double measured = 0;
  Metric metric = Metric::kP50Ns;
  SimRequest experiment;  // what the simulator runs for it (not used for kEchoRttNs)
  bool fitted = false;    // used to fit the model; the others are held out
};

struct BenchData {
  SimEngine engine = SimEngine::kLoadStore;
  std::size_t gpus = 0;
  std::uint32_t frame_bytes_max = 0;  // load/store only (0: the config's)
  std::string transport;
  std::vector<BenchFigure> figures;
  // Figures of the report the simulator does not reproduce, with the reason.
  std::vector<std::string> not_modelled;
};

// Reads a report of `ethx bench --json` (load/store) or `ethx bench --engine roce --json`;
// the engine is told by the "engine" field (present only for roce) and checked against the
// keys. Throws CalibrationError naming the missing or bad field.
BenchData read_bench_report(const nlohmann::json& report);

// The echo RTT the model gives: a bare 60 B frame there and back through one switch, with no
// engine, issue or completer cost (echo_frame_bytes: wire::make_echo_frame's frame).
double model_echo_rtt_ns(const TopologyConfig& config);

// The figure `metric` of a simulation's report.
double figure_of(Metric metric, const SimReport& report);

}  // namespace ethx::sim
