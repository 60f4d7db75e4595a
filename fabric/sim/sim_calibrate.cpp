#include "fabric/sim/sim_calibrate.hpp"

#include <cmath>
#include <cstdio>

namespace ethx::sim {
namespace {

// One parameter the fit may move, the figure that decides it, and its range.
struct FitStep {
  std::string name;
  std::string figure_key;
  std::function<void(TopologyConfig&, double)> set;
  double lo = 0;
  double hi = 0;
  bool whole = true;
};

constexpr double kMaxNs = 1e5;  // 100 us per hop, operation or packet bounds every fit
constexpr TimeNs kOneHourNs = 3'600'000'000'000;
// Rounds of fitting every parameter in turn: the figures share stages (a 4 KiB store's
// stream also waits for the issue pipeline), so a second round settles what the first moved.
constexpr int kFitRounds = 2;

TimeNs whole_ns(double value) {
  return static_cast<TimeNs>(std::llround(value));
}

// What the emulator is, in the model's terms, before anything is fitted. Hops: a frame goes
// node -> switch -> node, through two shared-memory rings and two process wake-ups, and each
// hop costs the same; the model's NIC latency is that per-hop cost, paid once per hop
// (transmit side and receive side), so propagation and the switch pipeline are zero.
void map_emulator(const BenchData& data, Calibration& out) {
  TopologyConfig& config = out.config;
  // The fit tries slow parameters too; their operations must end in completions, not in
  // timeouts (the emulator's figures had none).
  config.request_timeout_ns = kOneHourNs;
  config.link_propagation_ns = 0;
  config.switch_forwarding_latency_ns = 0;
  out.mapped.push_back(
      "link.propagation_ns = 0, switch.forwarding_latency_ns = 0: a hop of the emulator (a "
      "shared-memory ring and a process wake-up) is one cost, fitted as sim.nic_latency_ns, "
      "which the model charges once per hop");
  if (data.engine != SimEngine::kRoce) return;
  RnicConfig& rnic = config.rnic;
  rnic.processing_units = 1;
  rnic.packet_ns = 0;
  rnic.doorbell_ns = 0;
  rnic.pcie_rtt_ns = 0;
  rnic.pcie_rate_gbps = 1e6;
  out.mapped.push_back(
      "rnic.doorbell_ns = 0, rnic.pcie_rtt_ns = 0, rnic.pcie_rate_gbps = 1e6: the software "
      "RoCE engine's doorbell is a function call in the same process, and it has no PCIe");
  out.mapped.push_back(
      "rnic.packet_ns = 0, rnic.processing_units = 1: a packet's CPU time is not told apart "
      "from a WR's (rnic.post_ns) and a byte's (link.rate_gbps) by the bench's figures; it is "
      "in both");
}

std::vector<FitStep> fit_steps(SimEngine engine) {
  const auto rate = [](TopologyConfig& c, double v) { c.link_rate_gbps = v; };
  const auto nic = [](TopologyConfig& c, double v) { c.sim_nic_latency_ns = whole_ns(v); };
  if (engine == SimEngine::kRoce) {
    return {
        {"rnic.post_ns", "write_bandwidth_gbps.8",
         [](TopologyConfig& c, double v) { c.rnic.post_ns = whole_ns(v); }, 0, kMaxNs, true},
        {"link.rate_gbps", "write_bandwidth_gbps.65536", rate, 0.1, 1e4, false},
        {"sim.nic_latency_ns", "write_latency_ns.64.p50", nic, 0, kMaxNs, true},
    };
  }
  return {
      {"link.rate_gbps", "store_bandwidth_gbps.4096", rate, 0.1, 1e4, false},
      {"sim.issue_ns", "store_bandwidth_gbps.64",
       [](TopologyConfig& c, double v) { c.sim_issue_ns = whole_ns(v); }, 0, kMaxNs, true},
      {"sim.nic_latency_ns", "", nic, 0, kMaxNs, true},  // the echo's key varies: below
      {"sim.completer_ns", "load_latency_ns.p50",
       [](TopologyConfig& c, double v) { c.sim_completer_ns = whole_ns(v); }, 0, kMaxNs, true},
  };
}

const BenchFigure& figure_for(const BenchData& data, const FitStep& step) {
  for (const BenchFigure& figure : data.figures) {
    const bool echo = step.figure_key.empty() && figure.metric == Metric::kEchoRttNs;
    if (echo || figure.key == step.figure_key) return figure;
  }
  throw CalibrationError("the bench report has no field \"" + step.figure_key + "\"");
}

}  // namespace

double predict(const BenchFigure& figure, const TopologyConfig& config) {
  if (figure.metric == Metric::kEchoRttNs) return model_echo_rtt_ns(config);
  return figure_of(figure.metric, simulate(config, figure.experiment));
}

double solve_monotone(const std::function<double(double)>& predict_at, double target, double lo,
                      double hi, bool whole) {
  const bool rising = predict_at(hi) >= predict_at(lo);
  const auto below = [&](double x) { return (predict_at(x) < target) == rising; };
  constexpr int kGeometricSteps = 48;  // 1e6 : 1 in 48 halvings of the ratio: < 1e-7 apart
  for (int step = 0; whole ? hi - lo > 1 : step < kGeometricSteps; ++step) {
    const double mid = whole ? std::floor((lo + hi) / 2) : std::sqrt(lo * hi);
    (below(mid) ? lo : hi) = mid;
  }
  const double error_lo = std::abs(predict_at(lo) - target);
  const double error_hi = std::abs(predict_at(hi) - target);
  return error_lo <= error_hi ? lo : hi;
}

Calibration calibrate(const BenchData& data, const TopologyConfig& base) {
  Calibration out;
  out.config = base;
  if (data.frame_bytes_max != 0 && data.frame_bytes_max != base.frame_bytes_max) {
    throw CalibrationError("field \"frame_bytes_max\" of the bench report is " +
                           std::to_string(data.frame_bytes_max) + " but the config's is " +
                           std::to_string(base.frame_bytes_max) +
                           ": pass the bench's topology file with --config");
  }
  map_emulator(data, out);
  const std::vector<FitStep> steps = fit_steps(data.engine);
  for (int round = 0; round < kFitRounds; ++round) {
    out.fitted.clear();
    for (const FitStep& step : steps) {
      const BenchFigure& figure = figure_for(data, step);
      const auto predict_at = [&](double value) {
        TopologyConfig trial = out.config;
        step.set(trial, value);
        return predict(figure, trial);
      };
      const double value =
          solve_monotone(predict_at, figure.measured, step.lo, step.hi, step.whole);
      step.set(out.config, value);
      out.fitted.push_back(FittedParameter{step.name, value, figure.key});
    }
  }
  return out;
}

CalibrationTable make_calibration_table(const BenchData& data,
                                        const std::vector<double>& predicted) {
  CalibrationTable table;
  for (std::size_t i = 0; i < data.figures.size() && i < predicted.size(); ++i) {
    const BenchFigure& figure = data.figures[i];
    CalibrationRow row{figure.key, figure.measured, predicted[i],
                       100.0 * (predicted[i] - figure.measured) / figure.measured, figure.fitted};
    if (!row.fitted) {
      ++table.held_out;
      if (std::abs(row.error_pct) <= kCalibrationLimitPct) ++table.held_out_within_limit;
    }
    table.rows.push_back(row);
  }
  return table;
}

nlohmann::ordered_json calibration_json(const BenchData& data, const Calibration& calibration,
                                        const CalibrationTable& table) {
  nlohmann::ordered_json out;
  out["engine"] = to_string(data.engine);
  out["gpus"] = data.gpus;
  out["transport"] = data.transport;
  out["fitted"] = nlohmann::ordered_json::array();
  for (const FittedParameter& p : calibration.fitted) {
    out["fitted"].push_back({{"parameter", p.name}, {"value", p.value}, {"from", p.fitted_to}});
  }
  out["mapped"] = calibration.mapped;
  out["figures"] = nlohmann::ordered_json::array();
  for (const CalibrationRow& row : table.rows) {
    out["figures"].push_back({{"figure", row.key},
                              {"measured", row.measured},
                              {"predicted", row.predicted},
                              {"error_pct", row.error_pct},
                              {"role", row.fitted ? "fitted" : "held-out"}});
  }
  out["held_out"] = table.held_out;
  out["held_out_within_limit"] = table.held_out_within_limit;
  out["limit_pct"] = kCalibrationLimitPct;
  out["not_modelled"] = data.not_modelled;
  return out;
}

}  // namespace ethx::sim
