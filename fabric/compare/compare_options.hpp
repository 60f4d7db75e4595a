// Options of `ethx compare` and the hook through which the Soft-RoCE suite (perftest between
// two VMs, fabric/compare/softroce_suite.hpp when it is built in) joins the report.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace ethx {

struct CompareOptions {
  std::size_t gpus = 0;  // 0: 4 with --quick, else from the topology
  std::string transport = "shm";
  std::string config_path;  // empty: the embedded default
  std::string out_dir = "ethx-compare-report";
  bool quick = false;
  bool quiet = false;
};

// The Soft-RoCE system object (the schema of docs/compare.md): {"system": "soft-roce",
// "available": false, "reason": ...} when the suite is not built in or cannot run here.
// Defined in compare_softroce_hook.cpp, the one file the Soft-RoCE suite replaces.
std::optional<nlohmann::json> softroce_results(const CompareOptions& options);

}  // namespace ethx
