#include "fabric/bench_coordinator.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "fabric/privileges.hpp"
#include "fabric/process_signals.hpp"
#include "fabric/shm_fabric_launcher.hpp"
#include "fabric/socket_transport.hpp"
#include "fabric/stats.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {
namespace {

using nlohmann::json;

constexpr std::uint32_t kStoreSizes[] = {64, 256, 1024, 4096};
constexpr std::uint32_t kWireSizes[] = {8, 64, 256, 1024, 4096};

struct Plan {
  std::uint32_t latency_rounds;
  std::uint32_t latency_samples_per_round;
  std::uint64_t store_total_bytes;
  std::uint64_t read_total_bytes;
  std::uint32_t atomic_count;
  std::uint64_t all_to_all_bytes_per_peer;
};

Plan plan_for(const BenchOptions& options) {
  if (options.quick) return Plan{4, 500, 2ull << 20, 2ull << 20, 2000, 64ull << 10};
  return Plan{10, 2000, 16ull << 20, 16ull << 20, 20000, 512ull << 10};
}

void progress(const BenchOptions& options, const std::string& text) {
  if (!options.quiet) std::cerr << "ethx bench: " << text << "\n";
}

struct Totals {
  std::uint64_t verified_ops = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t errors = 0;
  std::vector<std::string> failed_runs;  // which runs saw mismatches or errors
  void add(const std::string& name, const json& run) {
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

json wire_table(std::size_t frame_bytes_max) {
  json table = json::object();
  for (std::uint32_t size : kWireSizes) {
    const wire::WireCost cost = wire::posted_write_cost(size, frame_bytes_max);
    table[std::to_string(size)] = {{"frames", cost.frames},
                                   {"header_bytes", cost.header_bytes},
                                   {"wire_bytes", cost.wire_bytes},
                                   {"efficiency", cost.efficiency}};
  }
  return table;
}

std::string format_gbps(double gbps) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", gbps);
  return text;
}

void print_table(const json& report) {
  std::printf(
      "ethx bench: %d GPUs over %s (wall clock of this emulator, not modelled hardware)\n\n",
      report["gpus"].get<int>(), report["transport"].get<std::string>().c_str());
  const auto& load = report["load_latency_ns"];
  const auto& base = report["baseline_rtt_ns"];
  std::printf("%-34s %10s %10s\n", "latency (GPU0 -> GPU1)", "p50 ns", "p99 ns");
  std::printf("%-34s %10llu %10llu\n", "bare echo (baseline)",
              static_cast<unsigned long long>(base["p50"].get<std::uint64_t>()),
              static_cast<unsigned long long>(base["p99"].get<std::uint64_t>()));
  std::printf("%-34s %10llu %10llu   (%.2fx baseline p50)\n", "8 B remote load",
              static_cast<unsigned long long>(load["p50"].get<std::uint64_t>()),
              static_cast<unsigned long long>(load["p99"].get<std::uint64_t>()),
              report["load_to_baseline_p50"].get<double>());
  if (report.contains("raw_pingpong_ns")) {
    const auto& raw = report["raw_pingpong_ns"];
    std::printf("%-34s %10llu %10llu   (load p50 = %.2fx raw)\n",
                ("raw " + report["transport"].get<std::string>() + " ping-pong, no switch").c_str(),
                static_cast<unsigned long long>(raw["p50"].get<std::uint64_t>()),
                static_cast<unsigned long long>(raw["p99"].get<std::uint64_t>()),
                report["load_to_raw_pingpong_p50"].get<double>());
  }
  std::printf("\n%-34s %10s %14s %12s\n", "bandwidth (GPU0 -> GPU1)", "Gbit/s", "header B/frame",
              "wire eff.");
  for (std::uint32_t size : kStoreSizes) {
    const std::string key = std::to_string(size);
    const auto& wire_cost = report["wire"][key];
    std::printf("%-34s %10s %14llu %11.1f%%\n", ("posted stores, " + key + " B").c_str(),
                format_gbps(report["store_bandwidth_gbps"][key].get<double>()).c_str(),
                static_cast<unsigned long long>(wire_cost["header_bytes"].get<std::uint64_t>() /
                                                wire_cost["frames"].get<std::uint64_t>()),
                100.0 * wire_cost["efficiency"].get<double>());
  }
  std::printf("%-34s %10s\n", "reads, 4096 B, 32 outstanding",
              format_gbps(report["read_bandwidth_gbps"].get<double>()).c_str());
  std::printf("%-34s %10.3f Mops/s\n", "atomic fetch-add, 16 outstanding",
              report["atomic_rate_mops"].get<double>());
  std::printf("%-34s %10s (aggregate over %d GPUs)\n", "all-to-all posted stores",
              format_gbps(report["all_to_all_gbps"].get<double>()).c_str(),
              report["gpus"].get<int>());
  std::printf(
      "\nverified ops %llu, mismatches %llu, errors %llu, switch drops %llu "
      "(malformed %llu), %.1f s\n",
      static_cast<unsigned long long>(report["verified_ops"].get<std::uint64_t>()),
      static_cast<unsigned long long>(report["mismatches"].get<std::uint64_t>()),
      static_cast<unsigned long long>(report["errors"].get<std::uint64_t>()),
      static_cast<unsigned long long>(report["switch_drops"].get<std::uint64_t>()),
      static_cast<unsigned long long>(report["switch_malformed"].get<std::uint64_t>()),
      report["wall_seconds"].get<double>());
}

json run_suite(ShmFabricLauncher& fabric, const BenchOptions& options,
               const TopologyConfig& topology, Totals& totals) {
  const Plan plan = plan_for(options);
  const GpuId requester = 0;
  const GpuId target = 1;
  json report;

  // Latency: echoes and loads alternate sample by sample so both see the same machine noise;
  // the report takes the median of the per-round percentiles.
  progress(options, "latency: bare echo vs 8 B loads, " + std::to_string(plan.latency_rounds) +
                        " interleaved rounds");
  std::vector<double> echo_p50, echo_p99, load_p50, load_p99;
  for (std::uint32_t round = 0; round < plan.latency_rounds; ++round) {
    const json pair = fabric.run(requester, {{"op", "echo_and_load_latency"},
                                             {"peer", target},
                                             {"count", plan.latency_samples_per_round},
                                             {"bytes", 8},
                                             {"seed", round + 1}});
    const json& echo = pair["echo"];
    const json& load = pair["load"];
    totals.add("echo round " + std::to_string(round), echo);
    totals.add("load round " + std::to_string(round), load);
    echo_p50.push_back(echo["p50_ns"].get<double>());
    echo_p99.push_back(echo["p99_ns"].get<double>());
    load_p50.push_back(load["p50_ns"].get<double>());
    load_p99.push_back(load["p99_ns"].get<double>());
  }
  const auto to_int = [](double value) { return static_cast<std::uint64_t>(value + 0.5); };
  report["baseline_rtt_ns"] = {{"p50", to_int(median(echo_p50))},
                               {"p99", to_int(median(echo_p99))}};
  report["load_latency_ns"] = {{"p50", to_int(median(load_p50))},
                               {"p99", to_int(median(load_p99))}};
  report["load_to_baseline_p50"] = median(echo_p50) > 0 ? median(load_p50) / median(echo_p50) : 0.0;

  progress(options, "posted-store bandwidth, 64 B .. 4 KiB");
  json store = json::object();
  for (std::uint32_t size : kStoreSizes) {
    json run = fabric.run(requester, {{"op", "store_bandwidth"},
                                      {"peer", target},
                                      {"size", size},
                                      {"total_bytes", plan.store_total_bytes},
                                      {"salt", 1000 + size}});
    totals.add("store " + std::to_string(size) + " B", run);
    store[std::to_string(size)] = run["gbps"];
  }
  report["store_bandwidth_gbps"] = store;

  progress(options, "read bandwidth, 4 KiB reads");
  json read = fabric.run(requester, {{"op", "read_bandwidth"},
                                     {"peer", target},
                                     {"size", 4096},
                                     {"total_bytes", plan.read_total_bytes},
                                     {"outstanding", 32}});
  totals.add("read bandwidth", read);
  report["read_bandwidth_gbps"] = read["gbps"];

  progress(options, "atomic fetch-add rate");
  json atomic = fabric.run(
      requester,
      {{"op", "atomic_rate"}, {"peer", target}, {"count", plan.atomic_count}, {"outstanding", 16}});
  totals.add("atomic rate", atomic);
  report["atomic_rate_mops"] = atomic["ops_per_second"].get<double>() / 1e6;

  progress(options,
           "all-to-all posted stores across " + std::to_string(topology.gpu_count) + " GPUs");
  std::vector<std::pair<GpuId, json>> stores, verifies;
  const std::uint64_t salt = 77;
  for (std::size_t gpu = 0; gpu < topology.gpu_count; ++gpu) {
    stores.emplace_back(static_cast<GpuId>(gpu),
                        json{{"op", "all_to_all_store"},
                             {"bytes_per_peer", plan.all_to_all_bytes_per_peer},
                             {"salt", salt}});
    verifies.emplace_back(static_cast<GpuId>(gpu),
                          json{{"op", "all_to_all_verify"},
                               {"bytes_per_peer", plan.all_to_all_bytes_per_peer},
                               {"salt", salt}});
  }
  std::uint64_t first_start = UINT64_MAX, last_end = 0, all_bytes = 0;
  for (const json& run : fabric.run_parallel(stores)) {
    totals.add("all-to-all store", run);
    first_start = std::min(first_start, run["start_ns"].get<std::uint64_t>());
    last_end = std::max(last_end, run["end_ns"].get<std::uint64_t>());
    all_bytes += run["payload_bytes"].get<std::uint64_t>();
  }
  report["all_to_all_gbps"] =
      last_end > first_start
          ? static_cast<double>(all_bytes) * 8.0 / static_cast<double>(last_end - first_start)
          : 0.0;
  progress(options, "all-to-all: reading everything back");
  for (const json& run : fabric.run_parallel(verifies)) totals.add("all-to-all verify", run);

  json node_stats = json::array();
  for (std::size_t gpu = 0; gpu < topology.gpu_count; ++gpu) {
    node_stats.push_back(fabric.run(static_cast<GpuId>(gpu), {{"op", "stats"}}));
  }
  report["nodes"] = node_stats;
  return report;
}

}  // namespace

int run_bench(const BenchOptions& options) {
  // Privileges first: before the topology file, any probe, namespace or process.
  std::string transport = options.transport;
  if (transport == "auto") {
    const std::string missing = check_privileges(privilege_needs("afxdp"), "AF_XDP");
    if (missing.empty() && built_with_xdp()) {
      transport = "afxdp";
      std::cerr << "ethx bench: transport auto: picked afxdp (running with CAP_NET_ADMIN, "
                   "CAP_NET_RAW, CAP_BPF "
                   "and CAP_SYS_ADMIN; this build has AF_XDP)\n";
    } else {
      transport = "shm";
      std::cerr << "ethx bench: transport auto: picked shm ("
                << (built_with_xdp() ? missing : std::string("this build has no AF_XDP")) << ")\n";
    }
  }
  if (!valid_transport(transport)) {
    std::cerr << "ethx bench: --transport " << transport
              << ": unknown; use shm, afxdp, afpacket or auto\n";
    return 2;
  }
  if (is_socket_transport(transport)) {
    const std::string missing =
        check_privileges(privilege_needs(transport), "ethx bench --transport " + transport);
    if (!missing.empty()) {
      std::cerr << "ethx bench: " << missing << "\n";
      return 2;
    }
    if (transport == "afxdp" && !built_with_xdp()) {
      std::cerr << "ethx bench: --transport afxdp: this build has no AF_XDP (configure with "
                   "-DETHX_WITH_XDP=ON); --transport afpacket or --transport shm work without it\n";
      return 2;
    }
  }
  const auto wall_start = std::chrono::steady_clock::now();
  TopologyConfig topology = load_topology(options.config_path, options.gpus);

  // Ctrl-C stops the run cleanly: the launcher's destructor ends the processes it started and
  // removes every shared-memory file of this fabric.
  install_stop_signals(false);
  // A closed stdout/stderr pipe (`ethx bench ... | head`) must not kill the coordinator before
  // it has stopped its processes and removed its namespaces: writes fail with EPIPE instead.
  std::signal(SIGPIPE, SIG_IGN);
  const std::string fabric_name = "b" + std::to_string(::getpid());
  ShmFabricLauncher fabric(fabric_name, options.config_path, topology, transport);
  progress(options, "starting ethx-switch and " + std::to_string(topology.gpu_count) +
                        " ethx-node processes (fabric " + fabric_name + ", transport " + transport +
                        ")");
  // Socket transports: the bare transport's round trip between two namespaces (no switch, no
  // engine), measured first on this run's own namespace names, which are gone again before the
  // fabric's topology is made.
  json raw_pingpong;
  if (is_socket_transport(transport)) {
    const Plan plan = plan_for(options);
    progress(options, "raw " + transport + " ping-pong between two namespaces (no switch)");
    const RawPingPongResult raw =
        fabric.measure_raw_pingpong(plan.latency_rounds, plan.latency_samples_per_round);
    raw_pingpong = {{"p50", raw.p50_ns}, {"p99", raw.p99_ns}};
  }
  fabric.start();
  Totals totals;
  json report = run_suite(fabric, options, topology, totals);
  if (!raw_pingpong.is_null()) {
    report["raw_pingpong_ns"] = raw_pingpong;
    const auto raw_p50 = raw_pingpong["p50"].get<double>();
    report["load_to_raw_pingpong_p50"] =
        raw_p50 > 0 ? report["load_latency_ns"]["p50"].get<double>() / raw_p50 : 0.0;
  }
  progress(options, "stopping the fabric");
  const json switch_stats = fabric.stop();

  report["gpus"] = topology.gpu_count;
  report["transport"] = transport;
  report["frame_bytes_max"] = topology.frame_bytes_max;
  report["wire"] = wire_table(topology.frame_bytes_max);
  report["verified_ops"] = totals.verified_ops;
  report["failed_runs"] = totals.failed_runs;
  for (const std::string& failed : totals.failed_runs) {
    std::cerr << "ethx bench: FAILED " << failed << "\n";
  }
  report["mismatches"] = totals.mismatches;
  report["errors"] = totals.errors;
  std::uint64_t drops = 0, malformed = 0;
  if (switch_stats.is_object()) {
    const json& sums = switch_stats["totals"];
    malformed = sums["drops_malformed"].get<std::uint64_t>();
    drops = malformed + sums["drops_queue_full"].get<std::uint64_t>() +
            sums["drops_unknown_destination"].get<std::uint64_t>() +
            sums["drops_hairpin"].get<std::uint64_t>() +
            sums["drops_link_down"].get<std::uint64_t>();
    report["switch"] = switch_stats;
  }
  report["switch_drops"] = drops;
  report["switch_malformed"] = malformed;
  report["wall_seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  if (options.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    print_table(report);
  }
  return totals.mismatches > 0 || totals.errors > 0 ? 1 : 0;
}

}  // namespace ethx
