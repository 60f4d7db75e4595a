// ethx-node: one headless emulated GPU. Owns its local memory ("HBM") in a shared-memory file,
// joins its switch port, serves remote loads and stores, and runs benchmark commands.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <iostream>
#include <optional>

#include "fabric/bench_workloads.hpp"
#include "fabric/control_region.hpp"
#include "fabric/fabric_names.hpp"
#include "fabric/node_commands.hpp"
#include "fabric/process_signals.hpp"
#include "fabric/shm_node_port.hpp"
#include "fabric/topology_config.hpp"

namespace po = boost::program_options;

namespace {

int run(int argc, char** argv) {
  std::string fabric;
  std::string config_path;
  unsigned gpu = 0;
  unsigned gpus = 0;
  po::options_description options("ethx-node options");
  options.add_options()("help", "show this help")("fabric", po::value(&fabric)->required(),
                                                  "fabric instance name (from ethx-switch)")(
      "gpu", po::value(&gpu)->required(), "this node's GPU id")(
      "config", po::value(&config_path), "topology file (default: the embedded default)")(
      "gpus", po::value(&gpus), "override fabric.gpus");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, options), vm);
  if (vm.count("help")) {
    std::cout << options << "\n";
    return 0;
  }
  po::notify(vm);
  ethx::install_stop_signals(true);

  ethx::TopologyConfig topology = ethx::load_topology(config_path);
  if (gpus != 0) topology.resize(gpus);
  if (gpu >= topology.gpu_count) {
    throw ethx::ConfigError("--gpu: " + std::to_string(gpu) + " is not below fabric.gpus (" +
                            std::to_string(topology.gpu_count) + ")");
  }
  const auto self = static_cast<ethx::GpuId>(gpu);

  // Fully allocated now: a full /dev/shm fails here with a message, not with SIGBUS later.
  auto hbm =
      ethx::shm::SharedMemoryFile::create(ethx::hbm_file_name(fabric, self), topology.hbm_bytes);
  auto region = ethx::shm::ShmFabricRegion::attach(ethx::switch_region_name(fabric));
  std::optional<ethx::ControlRegion> control;
  if (ethx::shm::SharedMemoryFile::exists(ethx::control_region_name(fabric))) {
    control.emplace(ethx::ControlRegion::attach(ethx::control_region_name(fabric)));
  }

  ethx::ShmNodePort port(region, gpu);
  std::span<std::byte> memory(hbm.data(), hbm.size_bytes());
  ethx::NodeRuntime node(topology, self, memory, port);
  node.set_stop_flag(&ethx::g_stop_requested);
  ethx::BenchWorkloads workloads(
      node, ethx::BenchLayout::for_memory(topology.hbm_bytes, topology.gpu_count));
  workloads.fill_local_pattern(memory);

  std::uint32_t last_command = 0;
  if (control) {
    control->node(gpu).pid.store(::getpid());
    control->node(gpu).state.store(static_cast<std::uint32_t>(ethx::NodeState::kReady));
    ethx::shm::ring(control->header().coordinator_bell);
  }
  auto command_pending = [&] {
    return ethx::g_stop_requested.load() ||
           (control && control->node(gpu).command_seq.load() != last_command);
  };
  while (!ethx::g_stop_requested.load()) {
    node.pump(50'000'000, command_pending);  // rung for frames and commands
    if (!control) continue;
    if (auto command = control->take_command(gpu, last_command)) {
      if (*command == "exit") break;
      control->post_result(gpu, last_command, ethx::run_node_command(*command, node, workloads));
    }
  }
  // Answer what is already queued so peers waiting on us are not left to time out.
  for (int round = 0; round < 4; ++round) node.pump(0);
  if (control) control->node(gpu).state.store(static_cast<std::uint32_t>(ethx::NodeState::kExited));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "ethx-node: " << error.what() << "\n";
    return 1;
  }
}
