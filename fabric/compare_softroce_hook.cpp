// The Soft-RoCE section of `ethx compare`. The suite that boots two VMs with rdma_rxe and
// runs perftest is added in parallel (fabric/softroce_suite.hpp:
// nlohmann::json ethx::run_softroce_suite(const ethx::SoftRoceOptions&)); until it is merged
// this hook reports the system as unavailable, and the report shows it with this reason.
#include "fabric/compare_options.hpp"

namespace ethx {

std::optional<nlohmann::json> softroce_results(const CompareOptions& options) {
  return nlohmann::json{{"system", "soft-roce"},
                        {"transport", options.transport},
                        {"available", false},
                        {"reason", "Soft-RoCE suite not built in"},
                        {"latency_us", nlohmann::json::array()},
                        {"bandwidth_gbps", nlohmann::json::array()},
                        {"message_rate_mops", nlohmann::json::array()},
                        {"verified", false},
                        {"notes", nlohmann::json::array()}};
}

}  // namespace ethx
