// The measured systems of `ethx compare`, each as one object of the common schema
// (docs/compare.md): {"system", "transport", "available", "reason", "latency_us",
// "bandwidth_gbps", "message_rate_mops", "verified", "notes"} plus system-specific extras
// ("all_to_all_gbps", "many_qps"). The load/store sweep runs here with the node commands of
// `ethx bench`; the RoCE engine's object is converted from its suite report.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "fabric/bench/bench_plan.hpp"
#include "fabric/bench/bench_totals.hpp"
#include "fabric/bench/roce_suite.hpp"
#include "fabric/config/topology_config.hpp"
#include "fabric/control/fabric_client.hpp"

namespace ethx {

inline constexpr const char* kSystemLoadStore = "ethx-load-store";
inline constexpr const char* kSystemRoceEngine = "ethx-roce-engine";
inline constexpr const char* kSystemSoftRoce = "soft-roce";
// `ethx-guest bench` in the Soft-RoCE suite's two VMs (details.same_vms_load_store).
inline constexpr const char* kSystemLoadStoreVm = "ethx-load-store-vm";

// Loads (latency by size), posted stores and reads (bandwidth by size), the 8 B posted-store
// rate and the all-to-all, GPU 0 -> GPU 1, at the sizes of `plan` (the same as the RoCE
// suite's).
nlohmann::json run_load_store_system(FabricClient& client, const TopologyConfig& topology,
                                     const SweepPlan& plan, const std::string& transport,
                                     Totals& totals,
                                     const std::function<void(const std::string&)>& progress);

// The RoCE suite's report (run_roce_suite) in the common schema.
nlohmann::json roce_system_from_suite(const nlohmann::json& suite, const std::string& transport,
                                      bool verified);

// A measured system's object before its figures: available, nothing measured, not verified.
nlohmann::json empty_system(const std::string& system, const std::string& transport);

// A system that could not be measured, with why.
nlohmann::json unavailable_system(const std::string& system, const std::string& transport,
                                  const std::string& reason);

}  // namespace ethx
