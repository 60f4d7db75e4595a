// format_calibration (sim_calibrate.hpp): the human table of `ethx sim --calibrate`.
#include <cmath>
#include <cstdio>
#include <string>

#include "fabric/sim/sim_calibrate.hpp"

namespace ethx::sim {

std::string format_calibration(const BenchData& data, const Calibration& calibration,
                               const CalibrationTable& table) {
  char text[256];
  std::snprintf(text, sizeof text, "ethx sim --calibrate: %s bench, %zu GPUs over %s\n\n",
                to_string(data.engine), data.gpus,
                data.transport.empty() ? "?" : data.transport.c_str());
  std::string out = text;
  out += "fitted (each to the one figure named):\n";
  for (const FittedParameter& p : calibration.fitted) {
    std::snprintf(text, sizeof text, "  %-20s = %-12.6g from %s\n", p.name.c_str(), p.value,
                  p.fitted_to.c_str());
    out += text;
  }
  out += "mapped (not fitted):\n";
  for (const std::string& note : calibration.mapped) out += "  " + note + "\n";
  std::snprintf(text, sizeof text, "\n%-34s %14s %14s %9s  %s\n", "figure", "measured", "predicted",
                "error", "role");
  out += text;
  for (const CalibrationRow& row : table.rows) {
    const bool miss = !row.fitted && std::abs(row.error_pct) > kCalibrationLimitPct;
    std::snprintf(text, sizeof text, "%-34s %14.3f %14.3f %+8.1f%%  %s%s\n", row.key.c_str(),
                  row.measured, row.predicted, row.error_pct, row.fitted ? "fitted" : "held out",
                  miss ? " (misses)" : "");
    out += text;
  }
  std::snprintf(text, sizeof text, "\nheld-out figures within %.0f %%: %zu of %zu\n",
                kCalibrationLimitPct, table.held_out_within_limit, table.held_out);
  out += text;
  for (const std::string& note : data.not_modelled) out += "not predicted: " + note + "\n";
  return out;
}

}  // namespace ethx::sim
