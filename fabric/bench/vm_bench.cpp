#include "fabric/bench/vm_bench.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "fabric/bench/bench_plan.hpp"
#include "fabric/control/fabric_launcher.hpp"
#include "fabric/control/run_state.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/platform/stats.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/socket_transport.hpp"
#include "fabric/vm/guest_agent.hpp"
#include "fabric/vm/guest_console.hpp"
#include "fabric/vm/kvm_probe.hpp"
#include "fabric/vm/vm_plan.hpp"

namespace ethx {
namespace {

using nlohmann::json;

constexpr std::int64_t kCommandTimeoutMs = 600'000;  // the slowest guest command under TCG

std::uint64_t sum_key(const json& value, const char* key) {
  return value.is_object() && value.contains(key) && value[key].is_number_unsigned()
             ? value[key].get<std::uint64_t>()
             : 0;
}

double number_at(const json& value, std::initializer_list<const char*> path) {
  const json* node = &value;
  for (const char* key : path) {
    if (!node->is_object() || !node->contains(key)) return 0.0;
    node = &(*node)[key];
  }
  return node->is_number() ? node->get<double>() : 0.0;
}

// The host's bare echo over the same transport, through an ethx-switch, measured in the same
// run: a fabric of two ethx-node processes of its own (its own names), up for the whole suite.
// Rounds are interleaved with the guests' benchmarks (one before, one after each VM's), and the
// baseline is the median of them, so it sees the same host conditions as the loads it is
// compared with rather than those of one moment before them.
class EchoBaseline {
 public:
  EchoBaseline(const std::string& transport, const std::string& config_path,
               const VmBenchPlan& plan)
      : count_(plan.echo_samples_per_round),
        fabric_("e" + std::to_string(::getpid()), config_path, load_topology(config_path, 2),
                launch_options(transport)) {
    fabric_.start();
  }

  void measure_round() {
    const protocol::LatencyResult echo =
        fabric_.client().call(0, protocol::EchoCommand{.peer = 1, .count = count_});
    p50_ns_.push_back(static_cast<double>(echo.p50_ns));
    p99_ns_.push_back(static_cast<double>(echo.p99_ns));
  }

  // The host-process 4 KiB read bandwidth over the same transport (node 0 reading node 1).
  double read_bandwidth_gbps(std::uint64_t total_bytes) {
    const protocol::ThroughputResult reads =
        fabric_.client().call(0, protocol::ReadBandwidthCommand{.peer = 1,
                                                                .size_bytes = kHostReadBytes,
                                                                .total_bytes = total_bytes,
                                                                .outstanding = 32});
    return reads.gbps;
  }
  static constexpr std::uint32_t kHostReadBytes = 4096;

  json result() const {
    json rounds = json::array();
    for (double p50 : p50_ns_) rounds.push_back(rounded(p50));
    return {{"p50", rounded(median(p50_ns_))},
            {"p99", rounded(median(p99_ns_))},
            {"round_p50s", rounds}};
  }

 private:
  static LaunchOptions launch_options(const std::string& transport) {
    LaunchOptions launch;
    launch.transport = transport;
    if (is_socket_transport(transport)) launch.netns_tag = netns::random_tag();
    return launch;
  }

  std::uint32_t count_;
  FabricLauncher fabric_;  // stopped (and its namespaces removed) by its destructor
  std::vector<double> p50_ns_, p99_ns_;
};

struct VmTarget {
  std::string log_directory;  // where the agent sockets are
  std::size_t vms = 0;
  std::size_t gpus_per_vm = 0;
  std::string transport;
  std::string config_path;
  std::string stats_file;  // attached fabrics: the switch's live counters
};

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
      {"host_read_bytes", EchoBaseline::kHostReadBytes},
      {"copy_4k_to_load_p50", load_p50_ns > 0 ? copy_4k_p50 / load_p50_ns : 0.0},
      {"copy_1m_to_host_read_bandwidth", host_read_gbps > 0 ? copy_1m_gbps / host_read_gbps : 0.0}};
}

void print_copy_ratios(const json& report) {
  for (const auto& [bytes, figures] : report["copy_latency_ns"].items()) {
    std::printf("%-44s %10llu %10llu ns (p50, p99)\n",
                ("copy engine latency, " + bytes + " B").c_str(),
                static_cast<unsigned long long>(figures["p50"].get<std::uint64_t>()),
                static_cast<unsigned long long>(figures["p99"].get<std::uint64_t>()));
  }
  std::printf("%-44s %10.2fx the window load p50\n", "copy engine, 4 KiB p50",
              report["copy_4k_to_load_p50"].get<double>());
  std::printf("%-44s %10.3f Gbit/s (1 MiB copy: %.2fx)\n",
              "host processes, 4 KiB reads, 32 outstanding",
              report["host_read_bandwidth_gbps"].get<double>(),
              report["copy_1m_to_host_read_bandwidth"].get<double>());
}

}  // namespace

int run_vm_bench(const BenchOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  const std::string name = options.fabric.empty() ? "default" : options.fabric;
  RunDirectory directory(name);
  directory.lock();  // no `ethx up` or `ethx down` of this name while the suite runs
  std::optional<RunState> state = directory.load();
  const bool attached = state && state->vms > 0;
  if (state && !attached) {
    std::cerr << "ethx bench: fabric '" << name << "' is up without VMs; use `ethx bench --fabric "
              << name << "` for it, or `ethx down` it first\n";
    return 2;
  }
  install_stop_signals(false);
  std::signal(SIGPIPE, SIG_IGN);

  VmTarget target;
  std::optional<FabricLauncher> owned;      // a fabric of our own when none is up (it watches it)
  std::unique_ptr<ProcessWatcher> watcher;  // the processes of a running fabric
  std::string temporary_logs;
  if (attached) {
    if (options.vms != 0 && options.vms != state->vms) {
      std::cerr << "ethx bench: fabric '" << name << "' has " << state->vms << " VMs, not "
                << options.vms << "\n";
      return 2;
    }
    for (const RecordedProcess& process : state->processes) {
      if (!process.running()) {
        std::cerr << "ethx bench: fabric '" << name << "': " << process.role << " (pid "
                  << process.pid << ") is gone; `ethx down` and `ethx up` again\n";
        return 1;
      }
    }
    watcher = watch_recorded_processes(directory, *state);
    target = {directory.path(), state->vms,         state->gpus_per_vm,
              state->transport, state->config_path, state->stats_file};
  } else {
    std::string transport;
    try {
      transport = choose_transport(options.transport, "ethx bench");
    } catch (const TransportUnavailable& error) {
      std::cerr << error.what() << "\n";
      return 2;
    }
    VmPlan plan;
    plan.count = options.vms == 0 ? 2 : options.vms;
    plan.gpus_per_vm = options.gpus_per_vm;
    locate_vm_image(plan);
    const AcceleratorChoice accel = choose_accelerator(plan);
    plan.accel = accel.accel;
    std::cerr << "ethx bench: VMs use " << accel.accel << ": " << accel.reason << "\n";
    if (options.gpus != 0 && options.gpus != plan.vm_gpus()) {
      throw ConfigError("--gpus " + std::to_string(options.gpus) + ": with --vms the fabric has " +
                        "--vms × --gpus-per-vm = " + std::to_string(plan.vm_gpus()) + " GPUs");
    }
    const TopologyConfig topology = load_topology(options.config_path, plan.vm_gpus());
    const std::string fabric_name = "v" + std::to_string(::getpid());
    temporary_logs = (std::filesystem::temp_directory_path() / ("ethx-" + fabric_name)).string();
    std::filesystem::create_directories(temporary_logs);
    LaunchOptions launch;
    launch.transport = transport;
    launch.log_directory = temporary_logs;
    launch.vms = plan;
    if (!options.quiet) {
      std::cerr << "ethx bench: no fabric with VMs is up; booting " << plan.count << " VMs × "
                << plan.gpus_per_vm << " GPUs over " << transport << " (consoles in "
                << temporary_logs << ")\n";
    }
    owned.emplace(fabric_name, options.config_path, topology, launch);
    owned->start();
    target = {temporary_logs, plan.count, plan.gpus_per_vm, transport, options.config_path, ""};
  }
  const std::size_t gpus = target.vms * target.gpus_per_vm;
  const auto ready = std::chrono::steady_clock::now();

  std::vector<std::unique_ptr<GuestAgent>> agents;
  for (std::size_t vm = 0; vm < target.vms; ++vm) {
    agents.push_back(std::make_unique<GuestAgent>(target.log_directory, vm, 10'000));
  }
  json guests = json::array();
  std::vector<std::string> failures;
  std::uint64_t verified = 0, mismatches = 0, errors = 0;
  auto account = [&](std::size_t vm, const std::string& command, const GuestBlock& block) {
    json result = guest_json(block.output);
    verified += sum_key(result, "verified_ops");
    mismatches += sum_key(result, "mismatches");
    errors += sum_key(result, "errors");
    if (block.exit_status != 0 || result.is_null()) {
      failures.push_back("VM " + std::to_string(vm) + ": `ethx-guest " + command + "` exited " +
                         std::to_string(block.exit_status) + ": " + block.output.substr(0, 400));
    }
    return result;
  };

  // Microbenchmarks, one VM at a time (their latencies must not disturb each other): the VM's
  // first GPU against the next VM's first GPU, so every access crosses between two QEMUs.
  const auto bench_command = [&](std::size_t vm, const char* extra) {
    const std::size_t gpu = vm * target.gpus_per_vm;
    const std::size_t peer = target.vms > 1 ? ((vm + 1) % target.vms) * target.gpus_per_vm
                                            : (target.gpus_per_vm > 1 ? gpu + 1 : gpu);
    return "bench --gpu " + std::to_string(gpu) + " --peer " + std::to_string(peer) +
           (options.quick ? " --quick" : "") + extra;
  };
  std::vector<json> benches;
  for (std::size_t vm = 0; vm < target.vms; ++vm) {
    const std::string command = bench_command(vm, "");
    if (!options.quiet) std::cerr << "ethx bench: VM " << vm << ": ethx-guest " << command << "\n";
    benches.push_back(account(vm, command, agents[vm]->run(command, kCommandTimeoutMs)));
  }

  // Load latency against the host's bare echo: both move with the host's scheduling (on two
  // cores, whether the threads on the path share a core), so they are measured alternately,
  // several times: an echo round, every VM's latency-only pass, an echo round, ...; the
  // figures are the medians of all passes and of all rounds.
  const VmBenchPlan plan = bench_plan(options.quick).vm;
  const int latency_rounds = static_cast<int>(plan.latency_rounds);
  if (!options.quiet) {
    std::cerr << "ethx bench: " << latency_rounds << " rounds of host bare echo over "
              << target.transport << " alternating with each VM's `ethx-guest "
              << bench_command(0, " --latency-only") << "`\n";
  }
  EchoBaseline echo(target.transport, target.config_path, plan);
  std::vector<json> latency_passes;
  for (int round = 0; round < latency_rounds; ++round) {
    echo.measure_round();
    for (std::size_t vm = 0; vm < target.vms; ++vm) {
      const std::string command = bench_command(vm, " --latency-only");
      json pass = account(vm, command, agents[vm]->run(command, kCommandTimeoutMs));
      latency_passes.push_back(pass.is_object() ? pass : json::object());
    }
  }
  echo.measure_round();
  const json baseline = echo.result();
  const double host_read_gbps = echo.read_bandwidth_gbps(plan.host_read_total_bytes);

  // All-to-all: every GPU of every VM writes every other GPU at once (a fabric barrier inside
  // the guests lines them up); a fresh salt per run so stale data cannot verify.
  const std::uint64_t bytes_per_peer = plan.all_to_all_bytes_per_peer;
  const std::uint64_t salt =
      static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) %
      100000;
  const std::string alltoall = "alltoall --bytes-per-peer " + std::to_string(bytes_per_peer) +
                               " --salt " + std::to_string(salt) + " --gpus-total " +
                               std::to_string(gpus);
  if (!options.quiet) std::cerr << "ethx bench: all VMs: ethx-guest " << alltoall << "\n";
  std::vector<GuestBlock> alltoall_blocks(target.vms);
  std::vector<std::string> alltoall_errors(target.vms);
  {
    std::vector<std::thread> threads;
    for (std::size_t vm = 0; vm < target.vms; ++vm) {
      threads.emplace_back([&, vm] {
        try {
          alltoall_blocks[vm] = agents[vm]->run(alltoall, kCommandTimeoutMs);
        } catch (const std::exception& error) {
          alltoall_errors[vm] = error.what();
        }
      });
    }
    for (auto& thread : threads) thread.join();
  }
  throw_if_stop_requested();  // a VM that exited: the stop names it, not the agents' errors
  double alltoall_gbps = 0;
  std::vector<json> alltoalls;
  for (std::size_t vm = 0; vm < target.vms; ++vm) {
    if (!alltoall_errors[vm].empty()) {
      failures.push_back("VM " + std::to_string(vm) + ": " + alltoall_errors[vm]);
      alltoalls.emplace_back();
      continue;
    }
    alltoalls.push_back(account(vm, alltoall, alltoall_blocks[vm]));
    alltoall_gbps += number_at(alltoalls.back(), {"gbps"});
  }
  for (std::size_t vm = 0; vm < target.vms; ++vm) {
    guests.push_back({{"vm", vm}, {"bench", benches[vm]}, {"alltoall", alltoalls[vm]}});
  }

  json switch_stats;
  if (owned) {
    switch_stats = owned->stop();
  } else {
    std::ifstream in(target.stats_file);
    switch_stats = in ? json::parse(in, nullptr, false) : json();
    if (switch_stats.is_discarded()) switch_stats = json();
  }

  // The headless bench's keys plus what only a VM has. Window load and trap latencies are the
  // medians over the latency-only passes of every VM (each VM's first GPU loading from the next
  // VM's: the same path in each direction), the HBM load's over the VMs' full benchmarks;
  // bandwidths and rates are VM 0's.
  const json& first = benches.front();
  const auto median_of = [&](const std::vector<json>& runs,
                             std::initializer_list<const char*> path) {
    std::vector<double> values;
    for (const json& run : runs) {
      if (const double value = number_at(run, path); value > 0) values.push_back(value);
    }
    return values.empty() ? 0.0 : median(values);
  };
  json report;
  report["gpus"] = gpus;
  report["vms"] = target.vms;
  report["gpus_per_vm"] = target.gpus_per_vm;
  report["transport"] = target.transport;
  report["fabric"] = attached ? name : std::string();
  report["load_latency_ns"] = {
      {"p50", rounded(median_of(latency_passes, {"latency", "window_load", "p50_ns"}))},
      {"p99", rounded(median_of(latency_passes, {"latency", "window_load", "p99_ns"}))}};
  report["mmio_trap_ns"] = rounded(median_of(latency_passes, {"mmio_trap_ns"}));
  report["hbm_load_ns"] = {
      {"p50", rounded(median_of(benches, {"latency", "local_hbm_load", "p50_ns"}))},
      {"p99", rounded(median_of(benches, {"latency", "local_hbm_load", "p99_ns"}))}};
  json passes = json::array();
  for (std::size_t i = 0; i < latency_passes.size(); ++i) {
    passes.push_back({{"vm", i % target.vms},
                      {"load_p50_ns",
                       rounded(number_at(latency_passes[i], {"latency", "window_load", "p50_ns"}))},
                      {"trap_ns", rounded(number_at(latency_passes[i], {"mmio_trap_ns"}))}});
  }
  report["latency_passes"] = passes;
  report["baseline"] =
      "host bare echo, 2 ethx-node processes through ethx-switch over the same transport";
  report["baseline_rtt_ns"] = baseline;
  const double load_p50 = report["load_latency_ns"]["p50"].get<double>();
  const double echo_p50 = baseline["p50"].get<double>();
  const double trap = report["mmio_trap_ns"].get<double>();
  report["load_to_baseline_p50"] = echo_p50 > 0 ? load_p50 / echo_p50 : 0.0;
  report["load_to_trap_plus_baseline_p50"] =
      echo_p50 + trap > 0 ? load_p50 / (echo_p50 + trap) : 0.0;
  report["store_bandwidth_gbps"] = {{"8", number_at(first, {"store", "gbps"})}};
  report.update(copy_report(first, load_p50, host_read_gbps));
  const json& copies = report["copy_bandwidth_gbps"];
  report["atomic_rate_mops"] = number_at(first, {"atomic", "ops_per_s"}) / 1e6;
  report["all_to_all_gbps"] = alltoall_gbps;
  report["all_to_all_bytes_per_peer"] = bytes_per_peer;
  report["verified_ops"] = verified;
  report["mismatches"] = mismatches;
  report["errors"] = errors;
  report["failures"] = failures;
  report["guests"] = guests;
  if (switch_stats.is_object()) report["switch"] = switch_stats;
  report["ready_seconds"] = std::chrono::duration<double>(ready - wall_start).count();
  report["wall_seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const bool ok = failures.empty() && mismatches == 0 && errors == 0 && verified > 0;
  if (ok && !temporary_logs.empty()) std::filesystem::remove_all(temporary_logs);

  if (options.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::printf(
        "ethx bench: %zu VMs x %zu GPUs over %s (in-guest, TCG; wall clock of this "
        "emulator)\n\n",
        target.vms, target.gpus_per_vm, target.transport.c_str());
    std::printf("%-44s %10s %10s\n", "latency (VM k -> VM k+1, median of passes)", "p50 ns",
                "p99 ns");
    std::printf("%-44s %10llu %10llu\n", "host bare echo (baseline)",
                static_cast<unsigned long long>(baseline["p50"].get<std::uint64_t>()),
                static_cast<unsigned long long>(baseline["p99"].get<std::uint64_t>()));
    std::printf("%-44s %10llu\n", "MMIO read of a control register (trap)",
                static_cast<unsigned long long>(report["mmio_trap_ns"].get<std::uint64_t>()));
    std::printf("%-44s %10llu %10llu\n", "8 B load of the GPU's own HBM BAR",
                static_cast<unsigned long long>(report["hbm_load_ns"]["p50"].get<std::uint64_t>()),
                static_cast<unsigned long long>(report["hbm_load_ns"]["p99"].get<std::uint64_t>()));
    std::printf(
        "%-44s %10llu %10llu   (%.2fx trap + baseline p50)\n", "8 B remote load through the window",
        static_cast<unsigned long long>(report["load_latency_ns"]["p50"].get<std::uint64_t>()),
        static_cast<unsigned long long>(report["load_latency_ns"]["p99"].get<std::uint64_t>()),
        report["load_to_trap_plus_baseline_p50"].get<double>());
    std::printf("\n%-44s %10.3f Gbit/s\n", "8 B posted stores through the window",
                report["store_bandwidth_gbps"]["8"].get<double>());
    std::vector<std::pair<std::uint64_t, double>> by_size;  // JSON keys sort as text
    for (const auto& [bytes, gbps] : copies.items()) {
      by_size.emplace_back(std::stoull(bytes), gbps.get<double>());
    }
    std::sort(by_size.begin(), by_size.end());
    for (const auto& [bytes, gbps] : by_size) {
      std::printf("%-44s %10.3f Gbit/s\n", ("copy engine, " + std::to_string(bytes) + " B").c_str(),
                  gbps);
    }
    print_copy_ratios(report);
    std::printf("%-44s %10.3f Mops/s\n", "atomic fetch-add (command interface)",
                report["atomic_rate_mops"].get<double>());
    std::printf("%-44s %10.3f Gbit/s (aggregate, %zu GPUs)\n", "all-to-all 8 B stores",
                alltoall_gbps, gpus);
    std::printf("\nverified ops %llu, mismatches %llu, errors %llu, %.1f s (ready after %.1f s)\n",
                static_cast<unsigned long long>(verified),
                static_cast<unsigned long long>(mismatches),
                static_cast<unsigned long long>(errors), report["wall_seconds"].get<double>(),
                report["ready_seconds"].get<double>());
    for (const std::string& failure : failures) std::printf("FAILED: %s\n", failure.c_str());
    if (!ok && !temporary_logs.empty())
      std::printf("consoles and logs kept in %s\n", temporary_logs.c_str());
  }
  return ok ? 0 : 1;
}

}  // namespace ethx
