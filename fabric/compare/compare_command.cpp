#include "fabric/compare/compare_command.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>

#include "fabric/bench/bench_plan.hpp"
#include "fabric/bench/bench_totals.hpp"
#include "fabric/bench/roce_suite.hpp"
#include "fabric/compare/compare_model.hpp"
#include "fabric/compare/compare_plots.hpp"
#include "fabric/compare/compare_report.hpp"
#include "fabric/compare/compare_systems.hpp"
#include "fabric/config/config_overlay.hpp"
#include "fabric/control/fabric_launcher.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/sim/sim_memory.hpp"
#include "fabric/transport/net/socket_transport.hpp"

namespace ethx {
namespace {

using nlohmann::json;

constexpr std::size_t kQuickGpus = 4;

// The scale section's GPU counts: ETH-X's 8-32 GPUs, and the simulator's reach. --quick stops
// at 256: RoCEv2 at 1024 GPUs (a million queue pairs) takes about a minute on its own.
std::vector<std::size_t> scale_gpu_counts(bool quick) {
  if (quick) return {8, 32, 256};
  return {8, 32, 256, 1024};
}

std::string command_line(const CompareOptions& options, std::size_t gpus,
                         const std::string& transport) {
  std::string text = "ethx compare --gpus " + std::to_string(gpus) + " --transport " + transport;
  if (options.quick) text += " --quick";
  if (!options.config_path.empty()) text += " --config " + options.config_path;
  return text;
}

using Progress = std::function<void(const std::string&)>;

// What every phase shares: the checked options.
struct CompareSetup {
  std::string transport;
  TopologyConfig topology;
  std::filesystem::path out_dir;
};

// Checks the options; nullopt (after saying why on stderr) for exit status 2.
std::optional<CompareSetup> prepare(const CompareOptions& options) {
  CompareSetup setup;
  try {
    setup.transport = choose_transport(options.transport, "ethx compare");
  } catch (const TransportUnavailable& error) {
    std::cerr << error.what() << "\n";
    return std::nullopt;
  }
  const std::size_t gpus = options.gpus != 0 ? options.gpus : (options.quick ? kQuickGpus : 0);
  setup.topology = load_topology(options.config_path, gpus);
  if (setup.topology.gpu_count < 2) {
    std::cerr << "ethx compare: --gpus: needs at least 2 GPUs\n";
    return std::nullopt;
  }
  setup.out_dir = std::filesystem::absolute(options.out_dir);
  std::error_code error;
  std::filesystem::create_directories(setup.out_dir, error);
  if (error) {
    std::cerr << "ethx compare: --out " << options.out_dir << ": " << error.message() << "\n";
    return std::nullopt;
  }
  return setup;
}

// The load/store sweep and the RoCE engine suite, with their totals.
// clang-tidy 14 reports nlohmann::json's throwing default constructor through the implicit
// special members; nothing here is noexcept.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct FabricSystems {
  std::vector<json> systems;  // load/store, then the RoCE engine
  Totals load_store_totals, roce_totals;
  json roce_suite;
};

FabricSystems run_fabric_systems(const CompareOptions& options, const CompareSetup& setup,
                                 const SweepPlan& plan, const Progress& progress) {
  FabricSystems result;
  // One fabric for both engines: the same switch process, transport, ports and nodes.
  LaunchOptions launch;
  launch.transport = setup.transport;
  FabricLauncher fabric("c" + std::to_string(::getpid()), options.config_path, setup.topology,
                        launch);
  progress("starting ethx-switch and " + std::to_string(setup.topology.gpu_count) +
           " ethx-node processes (transport " + setup.transport + ")");
  fabric.start();
  result.systems.push_back(run_load_store_system(
      fabric.client(), setup.topology, plan, setup.transport, result.load_store_totals, progress));
  result.roce_suite =
      run_roce_suite(fabric.client(), setup.topology, plan, result.roce_totals, progress);
  result.systems.push_back(
      roce_system_from_suite(result.roce_suite, setup.transport,
                             result.roce_totals.mismatches + result.roce_totals.errors == 0));
  progress("stopping the fabric");
  fabric.stop();
  return result;
}

// Soft-RoCE, and the systems measured in its two VMs.
std::vector<json> softroce_systems(const CompareOptions& options, const std::string& transport) {
  std::optional<json> softroce = softroce_results(options);
  if (!softroce) return {unavailable_system(kSystemSoftRoce, transport, "no result from the hook")};
  std::vector<json> systems{*softroce};
  // The load/store benches run in the same two VMs: the column to hold Soft-RoCE against.
  const json& details = softroce->value("details", json::object());
  if (details.is_object() && details.contains("same_vms_load_store")) {
    systems.push_back(details["same_vms_load_store"]);
  }
  // One OpenSHMEM binary over load/store and over RDMA, in the same VMs.
  if (details.is_object() && details.contains("same_vms_shmem")) {
    for (const json& system : details["same_vms_shmem"]) systems.push_back(system);
  }
  return systems;
}

// The report's inputs: the systems, the wire sizes, the model and the plots (drawn into the
// report directory). wall_seconds is left to the caller.
CompareInputs report_inputs(const CompareOptions& options, const CompareSetup& setup,
                            const SweepPlan& plan, const std::vector<json>& systems,
                            const json& roce_suite, const Progress& progress) {
  CompareInputs inputs;
  inputs.systems = systems;
  inputs.wire_sizes = plan.bandwidth_sizes;
  inputs.frame_bytes_max = setup.topology.frame_bytes_max;
  inputs.path_mtu_bytes = roce_suite["path_mtu_bytes"].get<std::uint32_t>();
  inputs.gpus = setup.topology.gpu_count;
  inputs.transport = setup.transport;
  inputs.command = command_line(options, setup.topology.gpu_count, setup.transport);
  progress("modelled hardware figures (ethx sim, both engines)");
  ModelRequest model;
  model.config = load_topology(options.config_path, 2);
  model.config_path = options.config_path;
  model.sizes = plan.latency_sizes;
  inputs.model = model_figures(model);
  // Frames in flight take up to about 1 MiB per simulated GPU (as in `ethx sim`).
  sim::grow_heap_with_huge_pages(std::size_t{1024} << 20);
  // RoCEv2's RC transport always retransmits; load/store does when [reliability] says so.
  // Incast at 256 GPUs and more overflows an egress queue, so the scale runs turn it on in a
  // config of their own, kept in the report directory for the rows' command lines.
  const std::string scale_config = (setup.out_dir / "scale.toml").string();
  ConfigOverlay overlay;
  overlay.reliability_mode = "go-back-n";
  write_config_overlay(options.config_path, overlay, scale_config);
  inputs.model["scale"] =
      scale_figures(scale_config, scale_gpu_counts(options.quick),
                    [&progress](const std::string& command) { progress("scale: " + command); });
  progress("plots (gnuplot)");
  inputs.plots = draw_compare_plots(inputs, setup.out_dir, inputs.plot_error);
  if (inputs.plots.empty()) std::cerr << "ethx compare: no plots: " << inputs.plot_error << "\n";
  return inputs;
}

}  // namespace

int run_compare(const CompareOptions& options) {
  const std::optional<CompareSetup> setup = prepare(options);
  if (!setup) return 2;
  const auto wall_start = std::chrono::steady_clock::now();
  const Progress progress = [&options](const std::string& text) {
    if (!options.quiet) std::cerr << "ethx compare: " << text << "\n";
  };
  install_stop_signals(false);
  std::signal(SIGPIPE, SIG_IGN);

  const SweepPlan plan = bench_plan(options.quick).sweep;
  FabricSystems fabric = run_fabric_systems(options, *setup, plan, progress);
  std::vector<json>& systems = fabric.systems;
  progress("Soft-RoCE section");
  for (json& system : softroce_systems(options, setup->transport)) {
    systems.push_back(std::move(system));
  }
  CompareInputs inputs = report_inputs(options, *setup, plan, systems, fabric.roce_suite, progress);
  inputs.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  std::ofstream(setup->out_dir / "report.md") << render_compare_report(inputs);
  json raw = {{"systems", systems}, {"model", inputs.model}, {"roce_suite", fabric.roce_suite}};
  std::ofstream(setup->out_dir / "systems.json") << raw.dump(2) << "\n";
  for (const auto* totals : {&fabric.load_store_totals, &fabric.roce_totals}) {
    for (const std::string& failed : totals->failed_runs) {
      std::cerr << "ethx compare: FAILED " << failed << "\n";
    }
  }
  std::cout << (setup->out_dir / "report.md").string() << "\n";
  const bool failed = fabric.load_store_totals.mismatches + fabric.load_store_totals.errors +
                          fabric.roce_totals.mismatches + fabric.roce_totals.errors >
                      0;
  return failed ? 1 : 0;
}

}  // namespace ethx
