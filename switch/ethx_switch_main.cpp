// ethx-switch: the ETH-X-style switch as a process. Creates the fabric's shared-memory port
// region (or, with --transport afxdp|afpacket, opens one socket per port on its veths in the
// switch's network namespace), forwards frames between the nodes from one thread, and on exit
// writes its counters.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "fabric/control_region.hpp"
#include "fabric/fabric_names.hpp"
#include "fabric/netns_topology.hpp"
#include "fabric/process_signals.hpp"
#include "fabric/shm_switch_runtime.hpp"
#include "fabric/socket_switch_runtime.hpp"
#include "fabric/socket_transport.hpp"
#include "fabric/switch_stats.hpp"
#include "fabric/topology_config.hpp"

namespace po = boost::program_options;

namespace {

int run(int argc, char** argv) {
  std::string fabric;
  std::string config_path;
  std::string stats_path;
  std::string transport = "shm";
  std::string netns_tag;
  unsigned gpus = 0;
  bool stop_with_parent = false;
  po::options_description options("ethx-switch options");
  options.add_options()("help", "show this help")("fabric", po::value(&fabric)->required(),
                                                  "fabric instance name")(
      "config", po::value(&config_path), "topology file (default: the embedded default)")(
      "gpus", po::value(&gpus), "override fabric.gpus")(
      "stats-file", po::value(&stats_path), "write per-port counters as JSON here on exit")(
      "stop-with-parent", po::bool_switch(&stop_with_parent), "exit when the parent exits")(
      "transport", po::value(&transport), "shm (default) | afxdp | afpacket")(
      "netns-tag", po::value(&netns_tag),
      "socket transports: the run's tag; port i is veth ethx-<tag>-s<i> in namespace "
      "ethx-<tag>-sw");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, options), vm);
  if (vm.count("help")) {
    std::cout << options << "\n";
    return 0;
  }
  po::notify(vm);
  ethx::install_stop_signals(stop_with_parent);
  const pid_t parent_pid = ::getppid();

  ethx::TopologyConfig topology = ethx::load_topology(config_path, gpus);
  if (!ethx::valid_transport(transport)) {
    throw std::invalid_argument("--transport " + transport + ": use shm, afxdp or afpacket");
  }
  if (ethx::is_socket_transport(transport)) {
    if (netns_tag.empty())
      throw std::invalid_argument("--transport " + transport + " needs --netns-tag");
    if (std::string error = ethx::check_privileges(ethx::privilege_needs(transport), "ethx-switch");
        !error.empty()) {
      throw std::runtime_error(error);
    }
    const std::string ns = ethx::netns::switch_namespace(netns_tag);
    std::vector<std::unique_ptr<ethx::FrameSocket>> sockets;
    std::vector<ethx::FrameSocket*> ports;
    // Veths cannot back-pressure a sender: a burst the switch thread cannot drain at once must
    // fit its receive rings. Deep rings for small fabrics (8192 frames per port, 32 MiB UMEM),
    // the default 2048 from 32 ports on, so the pinned memory stays bounded.
    const std::uint32_t receive_frames = topology.gpu_count <= 8    ? 8192
                                         : topology.gpu_count <= 16 ? 4096
                                                                    : 2048;
    for (std::size_t gpu = 0; gpu < topology.gpu_count; ++gpu) {
      sockets.push_back(ethx::open_frame_socket(transport, ns,
                                                ethx::netns::switch_interface(netns_tag, gpu),
                                                ethx::SocketRole::kSwitchPort, receive_frames));
      ports.push_back(sockets.back().get());
    }
    ethx::SocketSwitchRuntime runtime(topology, ports);
    // Tell the coordinator the ports are open (it waits for this before starting nodes).
    if (ethx::shm::SharedMemoryFile::exists(ethx::control_region_name(fabric))) {
      auto control = ethx::ControlRegion::attach(ethx::control_region_name(fabric));
      control.header().switch_pid.store(::getpid());
      ethx::shm::ring(control.header().coordinator_bell);
    }
    runtime.run(ethx::g_stop_requested);
    const bool parent_alive = ::getppid() == parent_pid;
    if (!stats_path.empty() && parent_alive) {
      nlohmann::json stats = ethx::switch_stats_json(runtime.core());
      nlohmann::json sockets_json = nlohmann::json::array();
      for (auto& socket : sockets) {
        socket->refresh_kernel_counters();
        const ethx::FrameSocketCounters& c = socket->counters();
        sockets_json.push_back({{"interface", socket->interface_name()},
                                {"rx_frames", c.rx_frames},
                                {"tx_frames", c.tx_frames},
                                {"tx_ring_full", c.tx_ring_full},
                                {"tx_too_large", c.tx_too_large},
                                {"rx_too_large", c.rx_too_large},
                                {"rx_kernel_drops", c.rx_kernel_drops}});
      }
      stats["sockets"] = sockets_json;
      std::ofstream out(stats_path);
      out << stats.dump(2) << "\n";
    }
    return 0;
  }
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
