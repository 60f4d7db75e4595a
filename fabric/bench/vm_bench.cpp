#include "fabric/bench/vm_bench.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "fabric/bench/bench_plan.hpp"
#include "fabric/bench/vm_bench_report.hpp"
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
                                                                .size_bytes = kVmBenchHostReadBytes,
                                                                .total_bytes = total_bytes,
                                                                .outstanding = 32});
    return reads.gbps;
  }

  EchoRoundTrips result() const {
    EchoRoundTrips round_trips{rounded(median(p50_ns_)), rounded(median(p99_ns_)), {}};
    for (double p50 : p50_ns_) round_trips.round_p50s_ns.push_back(rounded(p50));
    return round_trips;
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

// The fabric the suite runs on: one `ethx up --vms` left running, or one of its own.
struct SuiteFabric {
  VmTarget target;
  std::unique_ptr<FabricLauncher> owned;    // a fabric of our own when none is up (it watches it)
  std::unique_ptr<ProcessWatcher> watcher;  // the processes of a running fabric
  std::string temporary_logs;               // our own fabric's consoles and logs
};

// Whether the fabric `ethx up` left running under this name can take the suite. If not, says
// why and returns the exit status; 0 if it can.
int refuse_attached(const std::string& name, const RunState& state, const BenchOptions& options) {
  if (state.vms == 0) {
    std::cerr << "ethx bench: fabric '" << name << "' is up without VMs; use `ethx bench --fabric "
              << name << "` for it, or `ethx down` it first\n";
    return 2;
  }
  if (options.vms != 0 && options.vms != state.vms) {
    std::cerr << "ethx bench: fabric '" << name << "' has " << state.vms << " VMs, not "
              << options.vms << "\n";
    return 2;
  }
  for (const RecordedProcess& process : state.processes) {
    if (!process.running()) {
      std::cerr << "ethx bench: fabric '" << name << "': " << process.role << " (pid "
                << process.pid << ") is gone; `ethx down` and `ethx up` again\n";
      return 1;
    }
  }
  return 0;
}

SuiteFabric attach_fabric(const RunDirectory& directory, const RunState& state) {
  SuiteFabric fabric;
  fabric.watcher = watch_recorded_processes(directory, state);
  fabric.target = {directory.path(), state.vms,         state.gpus_per_vm,
                   state.transport,  state.config_path, state.stats_file};
  return fabric;
}

VmPlan plan_own_vms(const BenchOptions& options) {
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
  return plan;
}

// No fabric with VMs is up: boots one of our own, its consoles in a temporary directory.
SuiteFabric boot_fabric(const BenchOptions& options, const std::string& transport) {
  const VmPlan plan = plan_own_vms(options);
  const TopologyConfig topology = load_topology(options.config_path, plan.vm_gpus());
  const std::string fabric_name = "v" + std::to_string(::getpid());
  SuiteFabric fabric;
  fabric.temporary_logs =
      (std::filesystem::temp_directory_path() / ("ethx-" + fabric_name)).string();
  std::filesystem::create_directories(fabric.temporary_logs);
  LaunchOptions launch;
  launch.transport = transport;
  launch.log_directory = fabric.temporary_logs;
  launch.vms = plan;
  if (!options.quiet) {
    std::cerr << "ethx bench: no fabric with VMs is up; booting " << plan.count << " VMs × "
              << plan.gpus_per_vm << " GPUs over " << transport << " (consoles in "
              << fabric.temporary_logs << ")\n";
  }
  fabric.owned =
      std::make_unique<FabricLauncher>(fabric_name, options.config_path, topology, launch);
  fabric.owned->start();
  fabric.target = {fabric.temporary_logs, plan.count, plan.gpus_per_vm, transport,
                   options.config_path,   ""};
  return fabric;
}

// Stops a fabric of our own and returns its switch's counters; an attached fabric's are in
// its stats file. Null when unavailable.
json switch_counters(SuiteFabric& fabric) {
  if (fabric.owned) return fabric.owned->stop();
  std::ifstream in(fabric.target.stats_file);
  json counters = in ? json::parse(in, nullptr, false) : json();
  return counters.is_discarded() ? json() : counters;
}

// Each VM's answers to one command run in all of them at once.
struct ParallelBlocks {
  std::vector<GuestBlock> blocks;
  std::vector<std::string> errors;  // non-empty where the agent threw
};

// The guest commands of the suite, through every VM's agent, and what they add up to.
class GuestSuite {
 public:
  GuestSuite(const VmTarget& target, const BenchOptions& options)
      : target_(target), options_(options) {
    for (std::size_t vm = 0; vm < target.vms; ++vm) {
      agents_.emplace_back(target.log_directory, vm, 10'000);
    }
  }

  // The VM's first GPU against the next VM's first GPU, so every access crosses between two
  // QEMUs.
  std::string bench_command(std::size_t vm, const char* extra) const {
    const std::size_t gpu = vm * target_.gpus_per_vm;
    const std::size_t peer = target_.vms > 1 ? ((vm + 1) % target_.vms) * target_.gpus_per_vm
                                             : (target_.gpus_per_vm > 1 ? gpu + 1 : gpu);
    return "bench --gpu " + std::to_string(gpu) + " --peer " + std::to_string(peer) +
           (options_.quick ? " --quick" : "") + extra;
  }

  // Microbenchmarks, one VM at a time (their latencies must not disturb each other).
  std::vector<json> run_benches() {
    std::vector<json> benches;
    for (std::size_t vm = 0; vm < target_.vms; ++vm) {
      const std::string command = bench_command(vm, "");
      if (!options_.quiet) {
        std::cerr << "ethx bench: VM " << vm << ": ethx-guest " << command << "\n";
      }
      benches.push_back(run(vm, command));
    }
    return benches;
  }

  // Load latency against the host's bare echo: both move with the host's scheduling (on two
  // cores, whether the threads on the path share a core), so they are measured alternately,
  // several times: an echo round, every VM's latency-only pass, an echo round, ...; the
  // figures are the medians of all passes and of all rounds.
  LatencyRounds run_latency_rounds(EchoBaseline& echo, const VmBenchPlan& plan) {
    LatencyRounds latency;
    for (std::uint32_t round = 0; round < plan.latency_rounds; ++round) {
      echo.measure_round();
      for (std::size_t vm = 0; vm < target_.vms; ++vm) {
        json pass = run(vm, bench_command(vm, " --latency-only"));
        latency.passes.push_back(pass.is_object() ? pass : json::object());
      }
    }
    echo.measure_round();
    latency.baseline = echo.result();
    latency.host_read_gbps = echo.read_bandwidth_gbps(plan.host_read_total_bytes);
    return latency;
  }

  // All-to-all: every GPU of every VM writes every other GPU at once (a fabric barrier inside
  // the guests lines them up); a fresh salt per run so stale data cannot verify.
  AllToAllRun run_all_to_all(std::uint64_t bytes_per_peer) {
    const std::uint64_t salt =
        static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) %
        100000;
    const std::string command = "alltoall --bytes-per-peer " + std::to_string(bytes_per_peer) +
                                " --salt " + std::to_string(salt) + " --gpus-total " +
                                std::to_string(target_.vms * target_.gpus_per_vm);
    if (!options_.quiet) std::cerr << "ethx bench: all VMs: ethx-guest " << command << "\n";
    const ParallelBlocks answers = run_everywhere(command);
    throw_if_stop_requested();  // a VM that exited: the stop names it, not the agents' errors
    AllToAllRun all_to_all;
    all_to_all.bytes_per_peer = bytes_per_peer;
    for (std::size_t vm = 0; vm < target_.vms; ++vm) {
      if (!answers.errors[vm].empty()) {
        tally_.failures.push_back("VM " + std::to_string(vm) + ": " + answers.errors[vm]);
        all_to_all.per_vm.emplace_back();
        continue;
      }
      all_to_all.per_vm.push_back(tally_.account(vm, command, answers.blocks[vm]));
    }
    return all_to_all;
  }

  const GuestTally& tally() const { return tally_; }

 private:
  json run(std::size_t vm, const std::string& command) {
    return tally_.account(vm, command, agents_[vm].run(command, kCommandTimeoutMs));
  }

  ParallelBlocks run_everywhere(const std::string& command) {
    ParallelBlocks answers{std::vector<GuestBlock>(target_.vms),
                           std::vector<std::string>(target_.vms)};
    std::vector<std::thread> threads;
    for (std::size_t vm = 0; vm < target_.vms; ++vm) {
      threads.emplace_back([&, vm] {
        try {
          answers.blocks[vm] = agents_[vm].run(command, kCommandTimeoutMs);
        } catch (const std::exception& error) {
          answers.errors[vm] = error.what();
        }
      });
    }
    for (auto& thread : threads) thread.join();
    return answers;
  }

  const VmTarget& target_;
  const BenchOptions& options_;
  std::vector<GuestAgent> agents_;
  GuestTally tally_;
};

// The guests' phases in order: microbenchmarks, latency rounds against the host's echo,
// all-to-all. The echo fabric is up from the latency rounds to the end.
VmBenchResults run_guest_phases(const VmTarget& target, const BenchOptions& options) {
  GuestSuite suite(target, options);
  VmBenchResults results;
  results.vms = target.vms;
  results.gpus_per_vm = target.gpus_per_vm;
  results.transport = target.transport;
  results.benches = suite.run_benches();
  const VmBenchPlan plan = bench_plan(options.quick).vm;
  if (!options.quiet) {
    std::cerr << "ethx bench: " << plan.latency_rounds << " rounds of host bare echo over "
              << target.transport << " alternating with each VM's `ethx-guest "
              << suite.bench_command(0, " --latency-only") << "`\n";
  }
  EchoBaseline echo(target.transport, target.config_path, plan);
  results.latency = suite.run_latency_rounds(echo, plan);
  results.all_to_all = suite.run_all_to_all(plan.all_to_all_bytes_per_peer);
  results.tally = suite.tally();
  return results;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int run_vm_bench(const BenchOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  const std::string name = options.fabric.empty() ? "default" : options.fabric;
  RunDirectory directory(name);
  directory.lock();  // no `ethx up` or `ethx down` of this name while the suite runs
  const std::optional<RunState> state = directory.load();
  if (state) {
    if (const int refused = refuse_attached(name, *state, options); refused != 0) return refused;
  }
  std::string transport;
  try {
    if (!state) transport = choose_transport(options.transport, "ethx bench");
  } catch (const TransportUnavailable& error) {
    std::cerr << error.what() << "\n";
    return 2;
  }
  install_stop_signals(false);
  std::signal(SIGPIPE, SIG_IGN);
  SuiteFabric fabric = state ? attach_fabric(directory, *state) : boot_fabric(options, transport);
  const double ready_seconds = seconds_since(wall_start);

  VmBenchResults results = run_guest_phases(fabric.target, options);
  results.fabric = state ? name : std::string();
  results.switch_stats = switch_counters(fabric);
  results.ready_seconds = ready_seconds;
  results.wall_seconds = seconds_since(wall_start);
  const json report = vm_bench_report(results);
  const bool ok = results.tally.passed();
  if (ok && !fabric.temporary_logs.empty()) std::filesystem::remove_all(fabric.temporary_logs);
  if (options.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::fputs(vm_bench_text(report, ok ? std::string() : fabric.temporary_logs).c_str(), stdout);
  }
  return ok ? 0 : 1;
}

}  // namespace ethx
