// `ethx sim --calibrate`, part 2: fit the model's per-hop, per-operation, per-packet and
// per-byte costs to a few figures of an `ethx bench --json` report, predict every figure of
// that report by running the same experiments in the simulator, and tabulate predicted
// against measured. Pure (no I/O; the simulator is deterministic): the command that reads
// the file and prints is run_calibrate_command (sim_command.hpp).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "fabric/sim/sim_calibrate_bench.hpp"

namespace ethx::sim {

struct FittedParameter {
  std::string name;  // "link.rate_gbps"
  double value = 0;
  std::string fitted_to;  // the figure that decided it: "store_bandwidth_gbps.4096"
};

struct Calibration {
  TopologyConfig config;  // the base config with every fitted and mapped parameter set
  std::vector<FittedParameter> fitted;
  // Parameters set by the mapping from the emulator onto the model, not fitted, with why.
  std::vector<std::string> mapped;
};

// The model's prediction of one figure under `config`.
double predict(const BenchFigure& figure, const TopologyConfig& config);

// Solves predict(x) = target for x in [lo, hi], predict monotone in x (either way), by
// bisection; on whole numbers if `whole`, else geometrically (lo > 0). A target outside the
// range gives the nearer end.
double solve_monotone(const std::function<double(double)>& predict, double target, double lo,
                      double hi, bool whole);

// Maps the emulator onto the model (base's GPU count must be the report's) and fits the
// parameters to the report's figures marked `fitted`. Throws CalibrationError if the report
// and `base` disagree (frame size).
Calibration calibrate(const BenchData& data, const TopologyConfig& base);

struct CalibrationRow {
  std::string key;
  double measured = 0;
  double predicted = 0;
  double error_pct = 0;  // (predicted - measured) / measured
  bool fitted = false;
};

struct CalibrationTable {
  std::vector<CalibrationRow> rows;  // in the report's order
  std::size_t held_out = 0;
  std::size_t held_out_within_limit = 0;  // |error| <= kCalibrationLimitPct
};

// The aim for held-out figures.
inline constexpr double kCalibrationLimitPct = 20.0;

// Rows of `data.figures` with `predicted[i]` for figure i.
CalibrationTable make_calibration_table(const BenchData& data,
                                        const std::vector<double>& predicted);

nlohmann::ordered_json calibration_json(const BenchData& data, const Calibration& calibration,
                                        const CalibrationTable& table);
std::string format_calibration(const BenchData& data, const Calibration& calibration,
                               const CalibrationTable& table);

}  // namespace ethx::sim
