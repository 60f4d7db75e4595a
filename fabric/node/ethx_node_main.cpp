// ethx-node: one headless emulated GPU. Owns its local memory ("HBM") in a shared-memory file,
// joins its switch port (a shared-memory port, or with --transport afxdp|afpacket a socket on its
// veth in its own network namespace), serves remote loads and stores, and runs benchmark
// commands.
#include <unistd.h>

#include <atomic>
#include <boost/program_options.hpp>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "fabric/config/fabric_names.hpp"
#include "fabric/config/topology_config.hpp"
#include "fabric/node/node_port_factory.hpp"
#include "fabric/node/node_protocol.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/transport/net/socket_transport.hpp"
#include "fabric/transport/shm/control_region.hpp"
#include "fabric/workloads/bench_workloads.hpp"
#include "fabric/workloads/node_commands.hpp"

namespace po = boost::program_options;

namespace {

// Socket transports: the node waits in ppoll on its socket, which a futex in the control region
// cannot wake. This thread sleeps on the mailbox's node_bell (rung by the coordinator after each
// post) and interrupts the socket wait when a command arrives or the node should stop.
class CommandBellThread {
 public:
  CommandBellThread(ethx::ControlRegion& control, std::uint32_t gpu, ethx::NodePort& port)
      : thread_([this, &control, gpu, &port] {
          ethx::shm::WaitPolicy policy;
          policy.spin_iterations = 0;
          policy.yield_iterations = 0;
          policy.max_spin_ns = 0;
          policy.min_spin_ns = 0;
          ethx::shm::AdaptiveWaiter waiter(policy);
          ethx::NodeMailbox& box = control.node(gpu);
          std::uint32_t seen = box.command_seq.load();
          auto changed = [&] {
            return done_.load() || ethx::g_stop_requested.load() || box.command_seq.load() != seen;
          };
          while (!done_.load()) {
            if (waiter.wait(box.node_bell, changed, -1)) {
              seen = box.command_seq.load();
              port.interrupt();
              if (ethx::g_stop_requested.load()) break;
            }
          }
        }),
        box_(control.node(gpu)) {}
  ~CommandBellThread() {
    done_.store(true);
    ethx::shm::ring(box_.node_bell);
    thread_.join();
  }
  CommandBellThread(const CommandBellThread&) = delete;
  CommandBellThread& operator=(const CommandBellThread&) = delete;

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
  ethx::NodeMailbox& box_;
};

struct NodeArguments {
  std::string fabric;
  std::string config_path;
  unsigned gpu = 0;
  unsigned gpus = 0;
  std::string transport = "shm";
  std::string netns_tag;
  std::string interface;
  std::optional<std::string> netns;  // given: with --interface, that interface's namespace
  bool detach = false;
};

// The command line; nullopt when it asked for --help (printed).
std::optional<NodeArguments> parse_arguments(int argc, char** argv) {
  NodeArguments args;
  std::string netns;
  po::options_description options("ethx-node options");
  options.add_options()("help", "show this help")("fabric", po::value(&args.fabric)->required(),
                                                  "fabric instance name (from ethx-switch)")(
      "gpu", po::value(&args.gpu)->required(), "this node's GPU id")(
      "config", po::value(&args.config_path), "topology file (default: the embedded default)")(
      "gpus", po::value(&args.gpus), "override fabric.gpus")(
      "transport", po::value(&args.transport), "shm (default) | afxdp | afpacket")(
      "netns-tag", po::value(&args.netns_tag),
      "socket transports: the run's tag; this node's veth is ethx-<tag>-n<gpu> in the namespace "
      "of the same name")("interface", po::value(&args.interface),
                          "socket transports: use this interface instead (e.g. a real NIC; "
                          "default: gpu.interface of the config, else the veth)")(
      "netns", po::value(&netns),
      "with --interface: the network namespace it is in (default: gpu.netns, else the "
      "caller's)")("detach", po::bool_switch(&args.detach),
                   "keep running when the starting process exits (ethx up)");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, options), vm);
  if (vm.count("help")) {
    std::cout << options << "\n";
    return std::nullopt;
  }
  po::notify(vm);
  if (vm.count("netns")) args.netns = netns;
  return args;
}

std::unique_ptr<ethx::NodePort> open_port(const NodeArguments& args,
                                          const ethx::TopologyConfig& topology, ethx::GpuId self) {
  ethx::NodePortOptions port_options;
  port_options.fabric = args.fabric;
  port_options.transport = args.transport;
  port_options.netns_tag = args.netns_tag;
  port_options.interface = args.interface;
  port_options.netns = args.netns;
  port_options.program = "ethx-node";
  return ethx::open_node_port(topology, self, port_options);
}

// Tells the coordinator this node serves: its peer health, its pid, the ready state.
void announce_ready(ethx::ControlRegion& control, std::uint32_t gpu, ethx::NodeRuntime& node) {
  node.publish_peer_health_to(control.node(gpu).peer_health);
  control.node(gpu).pid.store(::getpid());
  control.node(gpu).state.store(static_cast<std::uint32_t>(ethx::NodeState::kReady));
  ethx::shm::ring(control.header().coordinator_bell);
}

// Serves frames and, with a control region, the coordinator's commands until a stop request
// or the exit command.
void serve(ethx::NodeRuntime& node, ethx::BenchWorkloads& workloads, ethx::ControlRegion* control,
           std::uint32_t gpu) {
  std::uint32_t last_command = 0;
  auto command_pending = [&] {
    return ethx::g_stop_requested.load() ||
           (control && control->node(gpu).command_seq.load() != last_command);
  };
  while (!ethx::g_stop_requested.load()) {
    node.pump(50'000'000, command_pending);  // rung for frames and commands
    if (!control) continue;
    if (auto command = control->take_command(gpu, last_command)) {
      if (*command == ethx::protocol::kExitCommand) break;
      control->post_result(gpu, last_command, ethx::run_node_command(*command, node, workloads));
    }
  }
}

int run(int argc, char** argv) {
  const std::optional<NodeArguments> args = parse_arguments(argc, argv);
  if (!args) return 0;
  ethx::install_stop_signals(!args->detach);

  ethx::TopologyConfig topology = ethx::load_topology(args->config_path, args->gpus);
  const unsigned gpu = args->gpu;
  if (gpu >= topology.gpu_count) {
    throw ethx::ConfigError("--gpu: " + std::to_string(gpu) + " is not below fabric.gpus (" +
                            std::to_string(topology.gpu_count) + ")");
  }
  const auto self = static_cast<ethx::GpuId>(gpu);

  // The port first: a bad transport, a missing interface or privilege fails before the HBM file
  // is allocated.
  const std::unique_ptr<ethx::NodePort> port = open_port(*args, topology, self);
  // Fully allocated now: a full /dev/shm fails here with a message, not with SIGBUS later.
  auto hbm = ethx::shm::SharedMemoryFile::create(ethx::hbm_file_name(args->fabric, self),
                                                 topology.hbm_bytes);
  std::optional<ethx::ControlRegion> control;
  if (ethx::shm::SharedMemoryFile::exists(ethx::control_region_name(args->fabric))) {
    control.emplace(ethx::ControlRegion::attach(ethx::control_region_name(args->fabric)));
  }
  std::optional<CommandBellThread> bell_thread;
  if (control && ethx::is_socket_transport(args->transport)) {
    bell_thread.emplace(*control, gpu, *port);
  }

  std::span<std::byte> memory(hbm.data(), hbm.size_bytes());
  ethx::NodeRuntime node(topology, self, memory, *port);
  node.set_stop_flag(&ethx::g_stop_requested);
  ethx::BenchWorkloads workloads(
      node, ethx::BenchLayout::for_memory(topology.hbm_bytes, topology.gpu_count));
  workloads.fill_local_pattern(memory);

  if (control) announce_ready(*control, gpu, node);
  serve(node, workloads, control ? &*control : nullptr, gpu);
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
