// The report of `ethx bench --vms` (vm_bench.hpp), built from what the suite's phases measured:
// its JSON (the headless bench's keys plus what only a VM has) and its text table. Both
// builders are pure: results in, JSON or text out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fabric/vm/guest_console.hpp"

namespace ethx {

// The block size of the host processes' reads the copy engine's 1 MiB copy is compared with.
constexpr std::uint32_t kVmBenchHostReadBytes = 4096;

// What the guests' commands add up to, and the commands that failed (a nonzero exit status or
// no JSON).
struct GuestTally {
  std::uint64_t verified_ops = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t errors = 0;
  std::vector<std::string> failures;

  // Adds one command's counts; returns the JSON it printed (null if none).
  nlohmann::json account(std::size_t vm, const std::string& command, const GuestBlock& block);
  // Nothing failed, mismatched or erred, and something was verified.
  bool passed() const;
};

// The host's bare echo: the medians over its rounds, and each round's p50.
struct EchoRoundTrips {
  std::uint64_t p50_ns = 0;
  std::uint64_t p99_ns = 0;
  std::vector<std::uint64_t> round_p50s_ns;
};

// The latency phase: every VM's latency-only pass, round by round, and the host's baselines.
struct LatencyRounds {
  std::vector<nlohmann::json> passes;  // round-major: pass i is VM i % vms; objects
  EchoRoundTrips baseline;
  double host_read_gbps = 0;  // host processes reading kVmBenchHostReadBytes blocks
};

// The all-to-all phase: every GPU of every VM writing every other GPU at once.
struct AllToAllRun {
  std::vector<nlohmann::json> per_vm;  // each VM's JSON (null where it failed)
  std::uint64_t bytes_per_peer = 0;
};

// clang-tidy 14 reports nlohmann::json's throwing default constructor through the implicit
// special members; nothing here is noexcept.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct VmBenchResults {
  std::size_t vms = 0;
  std::size_t gpus_per_vm = 0;
  std::string transport;
  std::string fabric;                   // the attached fabric's name; empty for the suite's own
  std::vector<nlohmann::json> benches;  // each VM's full `ethx-guest bench` (null if it failed)
  LatencyRounds latency;
  AllToAllRun all_to_all;
  GuestTally tally;
  nlohmann::json switch_stats;  // the switch's counters; null when unavailable
  double ready_seconds = 0;     // from the start until the fabric was up
  double wall_seconds = 0;
};

nlohmann::json vm_bench_report(const VmBenchResults& results);

// The table `ethx bench --vms` prints for a report. `kept_logs`: where a failed run's consoles
// and logs were kept (named last; empty: nothing kept).
std::string vm_bench_text(const nlohmann::json& report, const std::string& kept_logs);

// The number at `path` in a guest's JSON (`ethx-guest bench`); 0 when missing or not a number.
double number_at(const nlohmann::json& value, std::initializer_list<const char*> path);

}  // namespace ethx
