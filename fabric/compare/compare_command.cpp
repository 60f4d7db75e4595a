#include "fabric/compare/compare_command.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "fabric/bench/bench_plan.hpp"
#include "fabric/bench/bench_totals.hpp"
#include "fabric/bench/roce_suite.hpp"
#include "fabric/compare/compare_model.hpp"
#include "fabric/compare/compare_plots.hpp"
#include "fabric/compare/compare_report.hpp"
#include "fabric/compare/compare_systems.hpp"
#include "fabric/control/fabric_launcher.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/transport/net/socket_transport.hpp"

namespace ethx {
namespace {

using nlohmann::json;

constexpr std::size_t kQuickGpus = 4;

std::string command_line(const CompareOptions& options, std::size_t gpus,
                         const std::string& transport) {
  std::string text = "ethx compare --gpus " + std::to_string(gpus) + " --transport " + transport;
  if (options.quick) text += " --quick";
  if (!options.config_path.empty()) text += " --config " + options.config_path;
  return text;
}

}  // namespace

int run_compare(const CompareOptions& options) {
  std::string transport;
  try {
    transport = choose_transport(options.transport, "ethx compare");
  } catch (const TransportUnavailable& error) {
    std::cerr << error.what() << "\n";
    return 2;
  }
  const auto wall_start = std::chrono::steady_clock::now();
  const std::size_t gpus = options.gpus != 0 ? options.gpus : (options.quick ? kQuickGpus : 0);
  const TopologyConfig topology = load_topology(options.config_path, gpus);
  if (topology.gpu_count < 2) {
    std::cerr << "ethx compare: --gpus: needs at least 2 GPUs\n";
    return 2;
  }
  const std::filesystem::path out_dir = std::filesystem::absolute(options.out_dir);
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) {
    std::cerr << "ethx compare: --out " << options.out_dir << ": " << error.message() << "\n";
    return 2;
  }
  auto progress = [&options](const std::string& text) {
    if (!options.quiet) std::cerr << "ethx compare: " << text << "\n";
  };
  install_stop_signals(false);
  std::signal(SIGPIPE, SIG_IGN);

  const SweepPlan plan = bench_plan(options.quick).sweep;
  std::vector<json> systems;
  Totals load_store_totals, roce_totals;
  json roce_suite;
  {
    // One fabric for both engines: the same switch process, transport, ports and nodes.
    LaunchOptions launch;
    launch.transport = transport;
    FabricLauncher fabric("c" + std::to_string(::getpid()), options.config_path, topology, launch);
    progress("starting ethx-switch and " + std::to_string(topology.gpu_count) +
             " ethx-node processes (transport " + transport + ")");
    fabric.start();
    systems.push_back(run_load_store_system(fabric.client(), topology, plan, transport,
                                            load_store_totals, progress));
    roce_suite = run_roce_suite(fabric.client(), topology, plan, roce_totals, progress);
    systems.push_back(roce_system_from_suite(roce_suite, transport,
                                             roce_totals.mismatches + roce_totals.errors == 0));
    progress("stopping the fabric");
    fabric.stop();
  }
  progress("Soft-RoCE section");
  if (std::optional<json> softroce = softroce_results(options)) {
    systems.push_back(*softroce);
    // The load/store benches run in the same two VMs: the column to hold Soft-RoCE against.
    const json& details = softroce->value("details", json::object());
    if (details.is_object() && details.contains("same_vms_load_store")) {
      systems.push_back(details["same_vms_load_store"]);
    }
    // One OpenSHMEM binary over load/store and over RDMA, in the same VMs.
    if (details.is_object() && details.contains("same_vms_shmem")) {
      for (const json& system : details["same_vms_shmem"]) systems.push_back(system);
    }
  } else {
    systems.push_back(unavailable_system(kSystemSoftRoce, transport, "no result from the hook"));
  }

  CompareInputs inputs;
  inputs.systems = systems;
  inputs.wire_sizes = plan.bandwidth_sizes;
  inputs.frame_bytes_max = topology.frame_bytes_max;
  inputs.path_mtu_bytes = roce_suite["path_mtu_bytes"].get<std::uint32_t>();
  inputs.gpus = topology.gpu_count;
  inputs.transport = transport;
  inputs.command = command_line(options, topology.gpu_count, transport);
  progress("modelled hardware figures (ethx sim and the RoCE estimate)");
  inputs.model = model_figures(topology, plan.latency_sizes, plan.batches, inputs.path_mtu_bytes);
  progress("plots (gnuplot)");
  inputs.plots = draw_compare_plots(inputs, out_dir, inputs.plot_error);
  if (inputs.plots.empty()) std::cerr << "ethx compare: no plots: " << inputs.plot_error << "\n";
  inputs.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  std::ofstream(out_dir / "report.md") << render_compare_report(inputs);
  json raw = {{"systems", systems}, {"model", inputs.model}, {"roce_suite", roce_suite}};
  std::ofstream(out_dir / "systems.json") << raw.dump(2) << "\n";
  for (const auto* totals : {&load_store_totals, &roce_totals}) {
    for (const std::string& failed : totals->failed_runs) {
      std::cerr << "ethx compare: FAILED " << failed << "\n";
    }
  }
  std::cout << (out_dir / "report.md").string() << "\n";
  const bool failed = load_store_totals.mismatches + load_store_totals.errors +
                          roce_totals.mismatches + roce_totals.errors >
                      0;
  return failed ? 1 : 0;
}

}  // namespace ethx
