// The perftest part of the Soft-RoCE suite (softroce_suite.hpp): server in VM 1, client in
// VM 0, over rdma_rxe, at the pinned sizes and iteration counts of bench_plan(). Internal to
// fabric/compare.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fabric/compare/softroce_suite.hpp"

namespace ethx {

class GuestAgent;

// How long one command in a guest may take: perftest runs and benches under TCG are slow.
inline constexpr std::int64_t kSoftRoceCommandTimeoutMs = 180'000;

struct PerftestResults {
  nlohmann::json runs = nlohmann::json::array();  // every run: command, parsed table...
  // The figures of the runs that succeeded, in the Soft-RoCE system's schema.
  nlohmann::json latency_us = nlohmann::json::array();
  nlohmann::json bandwidth_gbps = nlohmann::json::array();
  nlohmann::json message_rate_mops = nlohmann::json::array();
  std::vector<std::string> notes;  // runs skipped for the time budget, runs that failed
  bool all_ok = true;
};

// Runs the plan's perftest runs in order; those still to start once `elapsed_s()` passes
// options.time_budget_s are skipped. `gid_index`: the RoCE v2 IPv4 GID of VM 0 and VM 1.
// Throws Interrupted on a stop request.
PerftestResults run_perftests(GuestAgent& client, GuestAgent& server,
                              const std::array<int, 2>& gid_index, const SoftRoceOptions& options,
                              const std::function<double()>& elapsed_s,
                              const std::function<void(const std::string&)>& say);

}  // namespace ethx
