#include "fabric/bench/bench_coordinator.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "fabric/bench/bench_plan.hpp"
#include "fabric/bench/bench_totals.hpp"
#include "fabric/bench/forwarding_probe.hpp"
#include "fabric/bench/roce_bench_command.hpp"
#include "fabric/bench/vm_bench.hpp"
#include "fabric/config/fabric_names.hpp"
#include "fabric/control/attached_fabric.hpp"
#include "fabric/control/fabric_launcher.hpp"
#include "fabric/control/run_state.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/platform/stats.hpp"
#include "fabric/transport/net/privileges.hpp"
#include "fabric/transport/net/socket_transport.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {
namespace {

using nlohmann::json;

void progress(const BenchOptions& options, const std::string& text) {
  if (!options.quiet) std::cerr << "ethx bench: " << text << "\n";
}

json wire_table(const LoadStoreBenchPlan& plan, std::size_t frame_bytes_max) {
  json table = json::object();
  for (std::uint32_t size : plan.wire_sizes_bytes) {
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

void print_table(const json& report, const LoadStoreBenchPlan& plan) {
  std::printf(
      "ethx bench: %d GPUs over %s (wall clock of this emulator, not modelled hardware)\n\n",
      report["gpus"].get<int>(), report["transport"].get<std::string>().c_str());
  const auto& load = report["load_latency_ns"];
  const auto& base = report["baseline_rtt_ns"];
  std::printf("%-34s %10s %10s\n", "latency (GPU0 -> GPU1)", "p50 ns", "p99 ns");
  std::printf("%-34s %10llu %10llu\n", report["baseline"].get<std::string>().c_str(),
              static_cast<unsigned long long>(base["p50"].get<std::uint64_t>()),
              static_cast<unsigned long long>(base["p99"].get<std::uint64_t>()));
  if (report.contains("switch_echo_rtt_ns")) {
    const auto& echo = report["switch_echo_rtt_ns"];
    std::printf("%-34s %10llu %10llu\n", "echo through ethx-switch",
                static_cast<unsigned long long>(echo["p50"].get<std::uint64_t>()),
                static_cast<unsigned long long>(echo["p99"].get<std::uint64_t>()));
  }
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
  if (report.contains("switch_mpps")) {
    std::printf("\n%-34s %10s %10s %10s\n", "forwarding rate (GPU0 -> GPU1)", "ethx Mpps",
                "bare Mpps", "ratio");
    for (std::size_t size : plan.forwarding_frame_sizes_bytes) {
      const std::string key = std::to_string(size);
      std::printf("%-34s %10.3f %10.3f %10.2f\n", (key + " B frames").c_str(),
                  report["switch_mpps"][key].get<double>(),
                  report["bare_forwarder_mpps"][key].get<double>(),
                  report["switch_to_bare_forwarder"][key].get<double>());
    }
  }
  std::printf("\n%-34s %10s %14s %12s\n", "bandwidth (GPU0 -> GPU1)", "Gbit/s", "header B/frame",
              "wire eff.");
  for (std::uint32_t size : plan.store_sizes_bytes) {
    const std::string key = std::to_string(size);
    const auto& wire_cost = report["wire"][key];
    std::printf("%-34s %10s %14llu %11.1f%%\n", ("posted stores, " + key + " B").c_str(),
                format_gbps(report["store_bandwidth_gbps"][key].get<double>()).c_str(),
                static_cast<unsigned long long>(wire_cost["header_bytes"].get<std::uint64_t>() /
                                                wire_cost["frames"].get<std::uint64_t>()),
                100.0 * wire_cost["efficiency"].get<double>());
  }
  const std::string reads = "reads, " + std::to_string(plan.read_size_bytes) + " B, " +
                            std::to_string(plan.read_outstanding) + " outstanding";
  std::printf("%-34s %10s\n", reads.c_str(),
              format_gbps(report["read_bandwidth_gbps"].get<double>()).c_str());
  const std::string atomics =
      "atomic fetch-add, " + std::to_string(plan.atomic_outstanding) + " outstanding";
  std::printf("%-34s %10.3f Mops/s\n", atomics.c_str(), report["atomic_rate_mops"].get<double>());
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

// GPU 0 measures against GPU 1 in every pairwise run of the suite.
constexpr GpuId kRequester = 0;
constexpr GpuId kTarget = 1;

// "64 B", "4 KiB".
std::string size_text(std::uint64_t bytes) {
  return bytes % 1024 == 0 ? std::to_string(bytes / 1024) + " KiB" : std::to_string(bytes) + " B";
}

// Echoes and loads alternate sample by sample so both see the same machine noise; the report
// takes the median of the per-round percentiles. `modes`: see run_suite.
void measure_latency(FabricClient& fabric, FabricLauncher* modes, const BenchOptions& options,
                     const LoadStoreBenchPlan& plan, Totals& totals, json& report) {
  progress(options, "latency: bare echo vs " + std::to_string(plan.latency_bytes) + " B loads, " +
                        std::to_string(plan.latency_rounds) + " interleaved rounds");
  std::vector<double> echo_p50, echo_p99, load_p50, load_p99, bare_p50, bare_p99;
  const auto record = [&totals](const std::string& name, const protocol::LatencyResult& run,
                                std::vector<double>& p50, std::vector<double>& p99) {
    totals.add(name, run);
    p50.push_back(static_cast<double>(run.p50_ns));
    p99.push_back(static_cast<double>(run.p99_ns));
  };
  for (std::uint32_t round = 0; round < plan.latency_rounds; ++round) {
    const std::string suffix = " round " + std::to_string(round);
    if (modes != nullptr) {
      // The baseline: the same nodes' echo, with the switch process as a bare forwarder.
      modes->set_switch_mode(SwitchMode::kBareForwarder);
      record(
          "bare-forwarder echo" + suffix,
          fabric.call(kRequester, protocol::EchoCommand{.peer = kTarget,
                                                        .count = plan.latency_samples_per_round}),
          bare_p50, bare_p99);
      modes->set_switch_mode(SwitchMode::kSwitchCore);
    }
    const protocol::EchoAndLoadResult pair = fabric.call(
        kRequester, protocol::EchoAndLoadLatencyCommand{.peer = kTarget,
                                                        .count = plan.latency_samples_per_round,
                                                        .bytes = plan.latency_bytes,
                                                        .seed = round + 1});
    record("echo" + suffix, pair.echo, echo_p50, echo_p99);
    record("load" + suffix, pair.load, load_p50, load_p99);
  }
  report["load_latency_ns"] = {{"p50", rounded(median(load_p50))},
                               {"p99", rounded(median(load_p99))}};
  if (modes != nullptr) {
    report["baseline"] = "bare forwarder echo (baseline)";
    report["baseline_rtt_ns"] = {{"p50", rounded(median(bare_p50))},
                                 {"p99", rounded(median(bare_p99))}};
    report["switch_echo_rtt_ns"] = {{"p50", rounded(median(echo_p50))},
                                    {"p99", rounded(median(echo_p99))}};
  } else {
    report["baseline"] = "echo through ethx-switch (baseline)";
    report["baseline_rtt_ns"] = {{"p50", rounded(median(echo_p50))},
                                 {"p99", rounded(median(echo_p99))}};
  }
  const double baseline_p50 = report["baseline_rtt_ns"]["p50"].get<double>();
  report["load_to_baseline_p50"] = baseline_p50 > 0 ? median(load_p50) / baseline_p50 : 0.0;
}

// Posted-store bandwidth by size, read bandwidth and the atomic rate, GPU 0 -> GPU 1.
void measure_bandwidth(FabricClient& fabric, const BenchOptions& options,
                       const LoadStoreBenchPlan& plan, Totals& totals, json& report) {
  progress(options, "posted-store bandwidth, " + size_text(plan.store_sizes_bytes.front()) +
                        " .. " + size_text(plan.store_sizes_bytes.back()));
  json store = json::object();
  for (std::uint32_t size : plan.store_sizes_bytes) {
    const protocol::ThroughputResult run = fabric.call(
        kRequester, protocol::StoreBandwidthCommand{.peer = kTarget,
                                                    .size_bytes = size,
                                                    .total_bytes = plan.store_total_bytes,
                                                    .salt = 1000 + size});
    totals.add("store " + std::to_string(size) + " B", run);
    store[std::to_string(size)] = run.gbps;
  }
  report["store_bandwidth_gbps"] = store;

  progress(options, "read bandwidth, " + size_text(plan.read_size_bytes) + " reads");
  const protocol::ThroughputResult read =
      fabric.call(kRequester, protocol::ReadBandwidthCommand{.peer = kTarget,
                                                             .size_bytes = plan.read_size_bytes,
                                                             .total_bytes = plan.read_total_bytes,
                                                             .outstanding = plan.read_outstanding});
  totals.add("read bandwidth", read);
  report["read_bandwidth_gbps"] = read.gbps;

  progress(options, "atomic fetch-add rate");
  const protocol::ThroughputResult atomic =
      fabric.call(kRequester, protocol::AtomicRateCommand{.peer = kTarget,
                                                          .count = plan.atomic_count,
                                                          .outstanding = plan.atomic_outstanding});
  totals.add("atomic rate", atomic);
  report["atomic_rate_mops"] = atomic.ops_per_second / 1e6;
}

// Every GPU stores to every other at once, then reads everything back.
void measure_all_to_all(FabricClient& fabric, const BenchOptions& options,
                        const LoadStoreBenchPlan& plan, std::size_t gpu_count, Totals& totals,
                        json& report) {
  progress(options, "all-to-all posted stores across " + std::to_string(gpu_count) + " GPUs");
  std::vector<std::pair<GpuId, protocol::AllToAllStoreCommand>> stores;
  std::vector<std::pair<GpuId, protocol::AllToAllVerifyCommand>> verifies;
  const std::uint64_t salt = 77;
  for (std::size_t gpu = 0; gpu < gpu_count; ++gpu) {
    stores.emplace_back(static_cast<GpuId>(gpu),
                        protocol::AllToAllStoreCommand{plan.all_to_all_bytes_per_peer, salt});
    verifies.emplace_back(static_cast<GpuId>(gpu),
                          protocol::AllToAllVerifyCommand{plan.all_to_all_bytes_per_peer, salt});
  }
  const std::vector<protocol::ThroughputResult> runs = fabric.call_parallel(stores);
  for (const protocol::ThroughputResult& run : runs) totals.add("all-to-all store", run);
  report["all_to_all_gbps"] = aggregate_gbps(runs);
  progress(options, "all-to-all: reading everything back");
  for (const protocol::ThroughputResult& run : fabric.call_parallel(verifies)) {
    totals.add("all-to-all verify", run);
  }
}

// `modes`: on the socket transports of a fabric this run started, the launcher that switches
// ethx-switch between its core and the bare forwarder; nullptr otherwise.
json run_suite(FabricClient& fabric, FabricLauncher* modes, const BenchOptions& options,
               const TopologyConfig& topology, Totals& totals) {
  const LoadStoreBenchPlan plan = bench_plan(options.quick).load_store;
  json report;
  measure_latency(fabric, modes, options, plan, totals, report);
  measure_bandwidth(fabric, options, plan, totals, report);
  measure_all_to_all(fabric, options, plan, topology.gpu_count, totals, report);
  json node_stats = json::array();
  for (std::size_t gpu = 0; gpu < topology.gpu_count; ++gpu) {
    node_stats.push_back(json(fabric.call(static_cast<GpuId>(gpu), protocol::StatsCommand{})));
  }
  report["nodes"] = node_stats;
  return report;
}

// Socket transports, switch started, nodes not yet: the switch's forwarding rate against the
// bare forwarder's, on the same process and veths, runs interleaved (the order alternates per
// round so drift favours neither) and medians reported.
json measure_forwarding(FabricLauncher& fabric, const TopologyConfig& topology,
                        const BenchOptions& options) {
  const LoadStoreBenchPlan plan = bench_plan(options.quick).load_store;
  std::string sizes;
  for (std::size_t size : plan.forwarding_frame_sizes_bytes) {
    sizes += (sizes.empty() ? "" : " and ") + std::to_string(size) + " B";
  }
  progress(options, "forwarding rate: ethx switch vs bare forwarder, " + sizes + " frames, " +
                        std::to_string(plan.forwarding_rounds) + " interleaved rounds");
  ForwardingProbe probe(fabric.transport(), fabric.netns_tag(), topology);
  std::map<std::size_t, std::vector<double>> core_mpps, bare_mpps;
  std::uint64_t lost = 0;
  for (std::uint32_t round = 0; round < plan.forwarding_rounds; ++round) {
    for (std::size_t size : plan.forwarding_frame_sizes_bytes) {
      for (int turn = 0; turn < 2; ++turn) {
        const bool bare = (turn + round) % 2 == 0;
        fabric.set_switch_mode(bare ? SwitchMode::kBareForwarder : SwitchMode::kSwitchCore);
        const ForwardingRateResult result = probe.measure(size, plan.forwarding_run_ns);
        (bare ? bare_mpps : core_mpps)[size].push_back(result.mpps);
        lost += result.lost;
      }
    }
  }
  fabric.set_switch_mode(SwitchMode::kSwitchCore);
  json report;
  for (std::size_t size : plan.forwarding_frame_sizes_bytes) {
    const std::string key = std::to_string(size);
    const double core = median(core_mpps[size]);
    const double bare = median(bare_mpps[size]);
    report["switch_mpps"][key] = core;
    report["bare_forwarder_mpps"][key] = bare;
    report["switch_to_bare_forwarder"][key] = bare > 0 ? core / bare : 0.0;
  }
  report["forwarding_frames_lost"] = lost;
  return report;
}

std::uint64_t total_drops(const json& switch_stats, std::uint64_t& malformed) {
  const json& sums = switch_stats["totals"];
  malformed = sums["drops_malformed"].get<std::uint64_t>();
  return malformed + sums["drops_queue_full"].get<std::uint64_t>() +
         sums["drops_unknown_destination"].get<std::uint64_t>() +
         sums["drops_hairpin"].get<std::uint64_t>() + sums["drops_link_down"].get<std::uint64_t>() +
         sums.value("drops_spoofed", std::uint64_t{0});
}

int finish_report(json& report, const BenchOptions& options, const TopologyConfig& topology,
                  const std::string& transport, const Totals& totals, const json& switch_stats,
                  std::chrono::steady_clock::time_point wall_start) {
  report["gpus"] = topology.gpu_count;
  report["transport"] = transport;
  report["quick"] = options.quick;  // which plan: ethx sim --calibrate reproduces --quick's
  report["frame_bytes_max"] = topology.frame_bytes_max;
  report["reliability"] = topology.reliability.enabled ? "go-back-n" : "off";
  const LoadStoreBenchPlan plan = bench_plan(options.quick).load_store;
  report["wire"] = wire_table(plan, topology.frame_bytes_max);
  report["verified_ops"] = totals.verified_ops;
  report["failed_runs"] = totals.failed_runs;
  for (const std::string& failed : totals.failed_runs) {
    std::cerr << "ethx bench: FAILED " << failed << "\n";
  }
  report["mismatches"] = totals.mismatches;
  report["errors"] = totals.errors;
  std::uint64_t drops = 0, malformed = 0;
  if (switch_stats.is_object() && switch_stats.contains("totals")) {
    drops = total_drops(switch_stats, malformed);
    report["switch"] = switch_stats;
  }
  if (!report.contains("switch_drops")) {
    report["switch_drops"] = drops;
    report["switch_malformed"] = malformed;
  }
  report["wall_seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (options.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    print_table(report, plan);
  }
  return totals.mismatches > 0 || totals.errors > 0 ? 1 : 0;
}

json read_json_file(const std::string& path) {
  std::ifstream in(path);
  json value = in ? json::parse(in, nullptr, false) : json();
  return value.is_discarded() ? json() : value;
}

// `ethx bench --fabric NAME`: the same suite on a fabric `ethx up` left running. No raw
// ping-pong, forwarding rate or bare-forwarder baseline: those need the veths to themselves.
int run_bench_attached(const BenchOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  std::optional<AttachedFabric> fabric;
  try {
    fabric.emplace(options.fabric);
  } catch (const FabricNotUp& error) {
    std::cerr << "ethx bench: " << error.what() << "\n";
    return 2;
  }
  const RunState* state = &fabric->state();
  const TopologyConfig topology = fabric->topology();
  install_stop_signals(false);
  std::signal(SIGPIPE, SIG_IGN);
  FabricClient& client = fabric->client();
  progress(options, "attached to fabric '" + state->name + "' (" + std::to_string(state->gpus) +
                        " GPUs over " + state->transport + ")");
  const json before = read_json_file(state->stats_file);
  Totals totals;
  json report = run_suite(client, nullptr, options, topology, totals);
  report["fabric"] = state->name;
  // The switch rewrites its counters at most every 250 ms: wait for a snapshot that is
  // newer than the suite's last frame before taking the difference.
  const json after = [&] {
    const auto suite_end = std::filesystem::file_time_type::clock::now();
    for (int attempt = 0; attempt < 20; ++attempt) {
      std::error_code error;
      if (std::filesystem::last_write_time(state->stats_file, error) > suite_end && !error) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return read_json_file(state->stats_file);
  }();
  if (before.is_object() && after.is_object() && before.contains("totals") &&
      after.contains("totals")) {
    std::uint64_t malformed_before = 0, malformed_after = 0;
    std::uint64_t drops_before = total_drops(before, malformed_before);
    const std::uint64_t drops_after = total_drops(after, malformed_after);
    // A switch restarted during the run counts from zero: only its own drops are known (what
    // the old one dropped since `before` went with it).
    const bool restarted = before.value("pid", 0) != after.value("pid", 0);
    if (restarted) drops_before = malformed_before = 0;
    report["switch_restarted"] = restarted;
    report["switch_drops"] = drops_after - drops_before;
    report["switch_malformed"] = malformed_after - malformed_before;
  }
  return finish_report(report, options, topology, state->transport, totals, after, wall_start);
}

}  // namespace

int run_bench(const BenchOptions& options) {
  if (options.engine == "roce") return run_roce_bench(options);
  if (!options.fabric.empty() && !options.with_vms) return run_bench_attached(options);
  if (options.with_vms) return run_vm_bench(options);
  // Privileges first: before the topology file, any probe, namespace or process.
  std::string transport;
  try {
    transport = choose_transport(options.transport, "ethx bench");
  } catch (const TransportUnavailable& error) {
    std::cerr << error.what() << "\n";
    return 2;
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
  LaunchOptions launch;
  launch.transport = transport;
  FabricLauncher fabric(fabric_name, options.config_path, topology, launch);
  progress(options, "starting ethx-switch and " + std::to_string(topology.gpu_count) +
                        " ethx-node processes (fabric " + fabric_name + ", transport " + transport +
                        ")");
  // Socket transports: the bare transport's round trip between two namespaces (no switch, no
  // engine), measured first on this run's own namespace names, which are gone again before the
  // fabric's topology is made.
  json raw_pingpong;
  if (is_socket_transport(transport)) {
    const LoadStoreBenchPlan plan = bench_plan(options.quick).load_store;
    progress(options, "raw " + transport + " ping-pong between two namespaces (no switch)");
    const RawPingPongResult raw =
        fabric.measure_raw_pingpong(plan.latency_rounds, plan.latency_samples_per_round);
    raw_pingpong = {{"p50", raw.p50_ns}, {"p99", raw.p99_ns}};
  }
  json forwarding;
  if (is_socket_transport(transport)) {
    fabric.create_network();
    fabric.start_switch();
    forwarding = measure_forwarding(fabric, topology, options);
  }
  fabric.start();
  Totals totals;
  json report = run_suite(fabric.client(), is_socket_transport(transport) ? &fabric : nullptr,
                          options, topology, totals);
  if (!forwarding.is_null()) report.update(forwarding);
  if (!raw_pingpong.is_null()) {
    report["raw_pingpong_ns"] = raw_pingpong;
    const auto raw_p50 = raw_pingpong["p50"].get<double>();
    report["load_to_raw_pingpong_p50"] =
        raw_p50 > 0 ? report["load_latency_ns"]["p50"].get<double>() / raw_p50 : 0.0;
  }
  progress(options, "stopping the fabric");
  const json switch_stats = fabric.stop();
  return finish_report(report, options, topology, transport, totals, switch_stats, wall_start);
}

}  // namespace ethx
