// ethx-switch: the ETH-X-style switch as a process. Creates the fabric's shared-memory port
// region, forwards frames between the nodes from one thread, and on exit writes its counters.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "fabric/fabric_names.hpp"
#include "fabric/process_signals.hpp"
#include "fabric/shm_switch_runtime.hpp"
#include "fabric/switch_stats.hpp"
#include "fabric/topology_config.hpp"

namespace po = boost::program_options;

namespace {

int run(int argc, char** argv) {
  std::string fabric;
  std::string config_path;
  std::string stats_path;
  unsigned gpus = 0;
  bool stop_with_parent = false;
  po::options_description options("ethx-switch options");
  options.add_options()("help", "show this help")("fabric", po::value(&fabric)->required(),
                                                  "fabric instance name")(
      "config", po::value(&config_path), "topology file (default: the embedded default)")(
      "gpus", po::value(&gpus), "override fabric.gpus")(
      "stats-file", po::value(&stats_path), "write per-port counters as JSON here on exit")(
      "stop-with-parent", po::bool_switch(&stop_with_parent), "exit when the parent exits");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, options), vm);
  if (vm.count("help")) {
    std::cout << options << "\n";
    return 0;
  }
  po::notify(vm);
  ethx::install_stop_signals(stop_with_parent);
  const pid_t parent_pid = ::getppid();

  ethx::TopologyConfig topology = ethx::load_topology(config_path);
  if (gpus != 0) topology.resize(gpus);
  auto region = ethx::shm::ShmFabricRegion::create(ethx::switch_region_name(fabric),
                                                   static_cast<std::uint32_t>(topology.gpu_count));
  region.header().switch_pid.store(::getpid());
  ethx::ShmSwitchRuntime runtime(topology, region);
  runtime.run(ethx::g_stop_requested);

  // Nobody reads the counters once the parent is gone (killed): leave no file behind then.
  const bool parent_alive = ::getppid() == parent_pid;
  if (!stats_path.empty() && parent_alive) {
    std::ofstream out(stats_path);
    out << ethx::switch_stats_json(runtime.core()).dump(2) << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "ethx-switch: " << error.what() << "\n";
    return 1;
  }
}
