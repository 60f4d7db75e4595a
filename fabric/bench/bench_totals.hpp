// What a benchmark suite adds up over its runs: verified operations, mismatches and errors,
// and which runs failed (so a non-zero exit names them).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ethx {

struct Totals {
  std::uint64_t verified_ops = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t errors = 0;
  std::vector<std::string> failed_runs;  // which runs saw mismatches or errors
  void add(const std::string& name, const nlohmann::json& run) {
    const auto run_mismatches = run.value("mismatches", std::uint64_t{0});
    const auto run_errors = run.value("errors", std::uint64_t{0});
    verified_ops += run.value("verified_ops", std::uint64_t{0});
    mismatches += run_mismatches;
    errors += run_errors;
    if (run_mismatches + run_errors > 0) {
      failed_runs.push_back(name + ": " + std::to_string(run_mismatches) + " mismatches, " +
                            std::to_string(run_errors) + " errors");
    }
  }
};

}  // namespace ethx
