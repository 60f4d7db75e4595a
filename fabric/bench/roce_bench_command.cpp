#include "fabric/bench/roce_bench_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "fabric/bench/bench_totals.hpp"
#include "fabric/bench/roce_suite.hpp"
#include "fabric/control/fabric_launcher.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/transport/net/socket_transport.hpp"

namespace ethx {
namespace {

using nlohmann::json;

// The keys of a {"<bytes>": ...} object in numeric order (JSON objects sort them as text).
std::vector<std::string> sizes_in_order(const json& by_size) {
  std::vector<std::string> sizes;
  for (const auto& [size, value] : by_size.items()) sizes.push_back(size);
  std::sort(sizes.begin(), sizes.end(), [](const std::string& a, const std::string& b) {
    return std::stoull(a) < std::stoull(b);
  });
  return sizes;
}

void print_table(const json& report) {
  std::printf("ethx bench --engine roce: %d GPUs over %s, path MTU %d B (emulator wall clock)\n\n",
              report["gpus"].get<int>(), report["transport"].get<std::string>().c_str(),
              report["path_mtu_bytes"].get<int>());
  std::printf("%-10s %12s %12s %12s %12s\n", "bytes", "WRITE p50", "WRITE p99", "READ p50",
              "READ p99");
  for (const std::string& size : sizes_in_order(report["write_latency_ns"])) {
    const json& write = report["write_latency_ns"][size];
    const json& read = report["read_latency_ns"][size];
    std::printf("%-10s %10.2fus %10.2fus %10.2fus %10.2fus\n", size.c_str(),
                write["p50"].get<double>() / 1e3, write["p99"].get<double>() / 1e3,
                read["p50"].get<double>() / 1e3, read["p99"].get<double>() / 1e3);
  }
  std::printf("\n%-10s %12s %12s %14s %10s\n", "bytes", "WRITE Gb/s", "READ Gb/s", "hdr B/WRITE",
              "wire eff.");
  for (const std::string& size : sizes_in_order(report["write_bandwidth_gbps"])) {
    const json& write = report["write_bandwidth_gbps"][size];
    const json& wire = report["wire"][size]["write"];
    std::printf("%-10s %12.3f %12.3f %14llu %9.1f%%\n", size.c_str(), write.get<double>(),
                report["read_bandwidth_gbps"][size].get<double>(),
                static_cast<unsigned long long>(wire["header_bytes"].get<std::uint64_t>()),
                100.0 * wire["efficiency"].get<double>());
  }
  std::printf("\n8 B WRITE message rate:");
  std::vector<std::pair<std::uint64_t, double>> rates;  // batch_<N> in numeric order
  for (const auto& [batch, mops] : report["message_rate_mops"].items()) {
    rates.emplace_back(std::stoull(batch.substr(std::string("batch_").size())), mops.get<double>());
  }
  std::sort(rates.begin(), rates.end());
  for (const auto& [batch, mops] : rates) {
    std::printf("  %llu/doorbell %.3f Mops/s", static_cast<unsigned long long>(batch), mops);
  }
  std::printf("\n\n%-8s %16s %16s %14s\n", "QPs", "state B/QP", "state B total", "Mops/s");
  for (const json& row : report["many_qps"]) {
    std::printf("%-8llu %16llu %16llu %14.3f\n",
                static_cast<unsigned long long>(row["qps"].get<std::uint64_t>()),
                static_cast<unsigned long long>(row["state_bytes_per_qp"].get<std::uint64_t>()),
                static_cast<unsigned long long>(row["state_bytes_total"].get<std::uint64_t>()),
                row["message_rate_mops"].get<double>());
  }
  std::printf("\nall-to-all WRITEs: %.3f Gbit/s aggregate over %d GPUs\n",
              report["all_to_all_gbps"].get<double>(), report["gpus"].get<int>());
  const json& rkey = report["bad_rkey"];
  std::printf("wrong rkey: READ %s, WRITE %s, target NAKs %llu, target memory %s\n",
              rkey["read_status"].get<std::string>().c_str(),
              rkey["write_status"].get<std::string>().c_str(),
              static_cast<unsigned long long>(rkey["target_access_naks_sent"].get<std::uint64_t>()),
              rkey["target_memory_unchanged"].get<bool>() ? "unchanged" : "CHANGED");
  std::printf("verified ops %llu, mismatches %llu, errors %llu, %.1f s\n",
              static_cast<unsigned long long>(report["verified_ops"].get<std::uint64_t>()),
              static_cast<unsigned long long>(report["mismatches"].get<std::uint64_t>()),
              static_cast<unsigned long long>(report["errors"].get<std::uint64_t>()),
              report["wall_seconds"].get<double>());
}

}  // namespace

int run_roce_bench(const BenchOptions& options) {
  if (!options.fabric.empty() || options.with_vms) {
    std::cerr << "ethx bench --engine roce: starts its own fabric; drop --fabric and --vms\n";
    return 2;
  }
  std::string transport;
  try {
    transport = choose_transport(options.transport, "ethx bench");
  } catch (const TransportUnavailable& error) {
    std::cerr << error.what() << "\n";
    return 2;
  }
  const auto wall_start = std::chrono::steady_clock::now();
  const TopologyConfig topology = load_topology(options.config_path, options.gpus);
  if (topology.gpu_count < 2) {
    std::cerr << "ethx bench --engine roce: --gpus: needs at least 2 GPUs\n";
    return 2;
  }
  install_stop_signals(false);
  std::signal(SIGPIPE, SIG_IGN);
  LaunchOptions launch;
  launch.transport = transport;
  FabricLauncher fabric("r" + std::to_string(::getpid()), options.config_path, topology, launch);
  auto progress = [&options](const std::string& text) {
    if (!options.quiet) std::cerr << "ethx bench: " << text << "\n";
  };
  progress("starting ethx-switch and " + std::to_string(topology.gpu_count) +
           " ethx-node processes (transport " + transport + ")");
  fabric.start();
  Totals totals;
  json report =
      run_roce_suite(fabric.client(), topology, bench_plan(options.quick).sweep, totals, progress);
  progress("stopping the fabric");
  const json switch_stats = fabric.stop();
  report["engine"] = "roce";
  report["gpus"] = topology.gpu_count;
  report["transport"] = transport;
  report["quick"] = options.quick;  // which plan: ethx sim --calibrate reproduces --quick's
  report["verified_ops"] = totals.verified_ops;
  report["mismatches"] = totals.mismatches;
  report["errors"] = totals.errors;
  report["failed_runs"] = totals.failed_runs;
  for (const std::string& failed : totals.failed_runs) {
    std::cerr << "ethx bench: FAILED " << failed << "\n";
  }
  if (switch_stats.is_object() && switch_stats.contains("totals")) {
    report["switch"] = switch_stats["totals"];
  }
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
