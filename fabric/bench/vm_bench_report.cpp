#include "fabric/bench/vm_bench_report.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <initializer_list>
#include <utility>

#include "fabric/platform/stats.hpp"

namespace ethx {
namespace {

using nlohmann::json;

std::uint64_t sum_key(const json& value, const char* key) {
  return value.is_object() && value.contains(key) && value[key].is_number_unsigned()
             ? value[key].get<std::uint64_t>()
             : 0;
}

// The median of one figure over several guest runs, leaving out those without it.
double median_of(const std::vector<json>& runs, std::initializer_list<const char*> path) {
  std::vector<double> values;
  for (const json& run : runs) {
    if (const double value = number_at(run, path); value > 0) values.push_back(value);
  }
  return values.empty() ? 0.0 : median(values);
}

// Window load and trap latencies are the medians over the latency-only passes of every VM
// (each VM's first GPU loading from the next VM's: the same path in each direction), the HBM
// load's over the VMs' full benchmarks; the ratios compare the load with the host's bare echo.
json latency_report(const VmBenchResults& results) {
  const std::vector<json>& runs = results.latency.passes;
  json report;
  report["load_latency_ns"] = {
      {"p50", rounded(median_of(runs, {"latency", "window_load", "p50_ns"}))},
      {"p99", rounded(median_of(runs, {"latency", "window_load", "p99_ns"}))}};
  report["mmio_trap_ns"] = rounded(median_of(runs, {"mmio_trap_ns"}));
  report["hbm_load_ns"] = {
      {"p50", rounded(median_of(results.benches, {"latency", "local_hbm_load", "p50_ns"}))},
      {"p99", rounded(median_of(results.benches, {"latency", "local_hbm_load", "p99_ns"}))}};
  json passes = json::array();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    passes.push_back(
        {{"vm", i % results.vms},
         {"load_p50_ns", rounded(number_at(runs[i], {"latency", "window_load", "p50_ns"}))},
         {"trap_ns", rounded(number_at(runs[i], {"mmio_trap_ns"}))}});
  }
  report["latency_passes"] = passes;
  report["baseline"] =
      "host bare echo, 2 ethx-node processes through ethx-switch over the same transport";
  const EchoRoundTrips& baseline = results.latency.baseline;
  report["baseline_rtt_ns"] = {
      {"p50", baseline.p50_ns}, {"p99", baseline.p99_ns}, {"round_p50s", baseline.round_p50s_ns}};
  const double load_p50 = report["load_latency_ns"]["p50"].get<double>();
  const auto echo_p50 = static_cast<double>(baseline.p50_ns);
  const double trap = report["mmio_trap_ns"].get<double>();
  report["load_to_baseline_p50"] = echo_p50 > 0 ? load_p50 / echo_p50 : 0.0;
  report["load_to_trap_plus_baseline_p50"] =
      echo_p50 + trap > 0 ? load_p50 / (echo_p50 + trap) : 0.0;
  return report;
}

// The copy engine's figures (VM 0's bench, peer -> local): latency and bandwidth per size, and
// the two ratios the copy engine is held to: a 4 KiB copy against a window load, a 1 MiB copy
// against host processes reading 4 KiB blocks over the same transport.
json copy_report(const json& bench, double load_p50_ns, double host_read_gbps) {
  json latency = json::object();
  json bandwidth = json::object();
  for (const json& copy : bench.value("copy", json::array())) {
    const std::string bytes = std::to_string(copy.value("bytes", std::uint64_t{0}));
    latency[bytes] = {{"p50", copy.value("p50_ns", std::uint64_t{0})},
                      {"p99", copy.value("p99_ns", std::uint64_t{0})},
                      {"samples", copy.value("samples", std::uint64_t{0})}};
    bandwidth[bytes] = copy.value("gbps", 0.0);
  }
  const double copy_4k_p50 = latency.contains("4096") ? latency["4096"]["p50"].get<double>() : 0;
  const double copy_1m_gbps = bandwidth.value("1048576", 0.0);
  return {
      {"copy_latency_ns", latency},
      {"copy_bandwidth_gbps", bandwidth},
      {"host_read_bandwidth_gbps", host_read_gbps},
      {"host_read_bytes", kVmBenchHostReadBytes},
      {"copy_4k_to_load_p50", load_p50_ns > 0 ? copy_4k_p50 / load_p50_ns : 0.0},
      {"copy_1m_to_host_read_bandwidth", host_read_gbps > 0 ? copy_1m_gbps / host_read_gbps : 0.0}};
}

// Bandwidths and rates are VM 0's.
json bandwidth_report(const VmBenchResults& results, double load_p50_ns) {
  const json first = results.benches.empty() ? json() : results.benches.front();
  json report = copy_report(first, load_p50_ns, results.latency.host_read_gbps);
  report["store_bandwidth_gbps"] = {{"8", number_at(first, {"store", "gbps"})}};
  report["atomic_rate_mops"] = number_at(first, {"atomic", "ops_per_s"}) / 1e6;
  double all_to_all_gbps = 0;  // the aggregate: every VM's own
  for (const json& run : results.all_to_all.per_vm) all_to_all_gbps += number_at(run, {"gbps"});
  report["all_to_all_gbps"] = all_to_all_gbps;
  report["all_to_all_bytes_per_peer"] = results.all_to_all.bytes_per_peer;
  return report;
}

json guests_report(const VmBenchResults& results) {
  json guests = json::array();
  for (std::size_t vm = 0; vm < results.vms; ++vm) {
    guests.push_back(
        {{"vm", vm}, {"bench", results.benches[vm]}, {"alltoall", results.all_to_all.per_vm[vm]}});
  }
  return guests;
}

// printf onto the end of `text`, any length (a failure line carries 400 bytes of guest output).
__attribute__((format(printf, 2, 3))) void append(std::string& text, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list measure;
  va_copy(measure, args);
  const auto length =
      static_cast<std::size_t>(std::max(std::vsnprintf(nullptr, 0, format, measure), 0));
  va_end(measure);
  const std::size_t at = text.size();
  text.resize(at + length + 1);  // vsnprintf's terminating NUL, dropped below
  std::vsnprintf(text.data() + at, length + 1, format, args);
  va_end(args);
  text.resize(at + length);
}

unsigned long long count(const json& value) {
  return static_cast<unsigned long long>(value.get<std::uint64_t>());
}

std::string latency_text(const json& report) {
  std::string text;
  append(text, "%-44s %10s %10s\n", "latency (VM k -> VM k+1, median of passes)", "p50 ns",
         "p99 ns");
  append(text, "%-44s %10llu %10llu\n", "host bare echo (baseline)",
         count(report["baseline_rtt_ns"]["p50"]), count(report["baseline_rtt_ns"]["p99"]));
  append(text, "%-44s %10llu\n", "MMIO read of a control register (trap)",
         count(report["mmio_trap_ns"]));
  append(text, "%-44s %10llu %10llu\n", "8 B load of the GPU's own HBM BAR",
         count(report["hbm_load_ns"]["p50"]), count(report["hbm_load_ns"]["p99"]));
  append(text, "%-44s %10llu %10llu   (%.2fx trap + baseline p50)\n",
         "8 B remote load through the window", count(report["load_latency_ns"]["p50"]),
         count(report["load_latency_ns"]["p99"]),
         report["load_to_trap_plus_baseline_p50"].get<double>());
  return text;
}

std::string copy_text(const json& report) {
  std::string text;
  std::vector<std::pair<std::uint64_t, double>> by_size;  // JSON keys sort as text
  for (const auto& [bytes, gbps] : report["copy_bandwidth_gbps"].items()) {
    by_size.emplace_back(std::stoull(bytes), gbps.get<double>());
  }
  std::sort(by_size.begin(), by_size.end());
  for (const auto& [bytes, gbps] : by_size) {
    append(text, "%-44s %10.3f Gbit/s\n", ("copy engine, " + std::to_string(bytes) + " B").c_str(),
           gbps);
  }
  for (const auto& [bytes, figures] : report["copy_latency_ns"].items()) {
    append(text, "%-44s %10llu %10llu ns (p50, p99)\n",
           ("copy engine latency, " + bytes + " B").c_str(), count(figures["p50"]),
           count(figures["p99"]));
  }
  append(text, "%-44s %10.2fx the window load p50\n", "copy engine, 4 KiB p50",
         report["copy_4k_to_load_p50"].get<double>());
  append(text, "%-44s %10.3f Gbit/s (1 MiB copy: %.2fx)\n",
         "host processes, 4 KiB reads, 32 outstanding",
         report["host_read_bandwidth_gbps"].get<double>(),
         report["copy_1m_to_host_read_bandwidth"].get<double>());
  return text;
}

std::string outcome_text(const json& report, const std::string& kept_logs) {
  std::string text;
  append(text, "\nverified ops %llu, mismatches %llu, errors %llu, %.1f s (ready after %.1f s)\n",
         count(report["verified_ops"]), count(report["mismatches"]), count(report["errors"]),
         report["wall_seconds"].get<double>(), report["ready_seconds"].get<double>());
  for (const json& failure : report["failures"]) {
    append(text, "FAILED: %s\n", failure.get<std::string>().c_str());
  }
  if (!kept_logs.empty()) append(text, "consoles and logs kept in %s\n", kept_logs.c_str());
  return text;
}

}  // namespace

json GuestTally::account(std::size_t vm, const std::string& command, const GuestBlock& block) {
  json result = guest_json(block.output);
  verified_ops += sum_key(result, "verified_ops");
  mismatches += sum_key(result, "mismatches");
  errors += sum_key(result, "errors");
  if (block.exit_status != 0 || result.is_null()) {
    failures.push_back("VM " + std::to_string(vm) + ": `ethx-guest " + command + "` exited " +
                       std::to_string(block.exit_status) + ": " + block.output.substr(0, 400));
  }
  return result;
}

bool GuestTally::passed() const {
  return failures.empty() && mismatches == 0 && errors == 0 && verified_ops > 0;
}

// The headless bench's keys plus what only a VM has.
json vm_bench_report(const VmBenchResults& results) {
  json report = latency_report(results);
  report.update(bandwidth_report(results, report["load_latency_ns"]["p50"].get<double>()));
  report["gpus"] = results.vms * results.gpus_per_vm;
  report["vms"] = results.vms;
  report["gpus_per_vm"] = results.gpus_per_vm;
  report["transport"] = results.transport;
  report["fabric"] = results.fabric;
  report["verified_ops"] = results.tally.verified_ops;
  report["mismatches"] = results.tally.mismatches;
  report["errors"] = results.tally.errors;
  report["failures"] = results.tally.failures;
  report["guests"] = guests_report(results);
  if (results.switch_stats.is_object()) report["switch"] = results.switch_stats;
  report["ready_seconds"] = results.ready_seconds;
  report["wall_seconds"] = results.wall_seconds;
  return report;
}

std::string vm_bench_text(const json& report, const std::string& kept_logs) {
  std::string text;
  append(text,
         "ethx bench: %zu VMs x %zu GPUs over %s (in-guest, TCG; wall clock of this emulator)\n\n",
         report["vms"].get<std::size_t>(), report["gpus_per_vm"].get<std::size_t>(),
         report["transport"].get<std::string>().c_str());
  text += latency_text(report);
  append(text, "\n%-44s %10.3f Gbit/s\n", "8 B posted stores through the window",
         report["store_bandwidth_gbps"]["8"].get<double>());
  text += copy_text(report);
  append(text, "%-44s %10.3f Mops/s\n", "atomic fetch-add (command interface)",
         report["atomic_rate_mops"].get<double>());
  append(text, "%-44s %10.3f Gbit/s (aggregate, %zu GPUs)\n", "all-to-all 8 B stores",
         report["all_to_all_gbps"].get<double>(), report["gpus"].get<std::size_t>());
  return text + outcome_text(report, kept_logs);
}

double number_at(const json& value, std::initializer_list<const char*> path) {
  const json* node = &value;
  for (const char* key : path) {
    if (!node->is_object() || !node->contains(key)) return 0.0;
    node = &(*node)[key];
  }
  return node->is_number() ? node->get<double>() : 0.0;
}

}  // namespace ethx
