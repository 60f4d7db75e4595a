// ethx-switch: the ETH-X-style switch as a process. Creates the fabric's shared-memory port
// region (or, with --transport afxdp|afpacket, opens one socket per port on its veths in the
// switch's network namespace), forwards frames between the nodes from one thread, and writes
// its counters: on exit, and with --stats-interval-ms also while it runs (for `ethx status`).
// It serves run-time fault changes (`ethx fault`) from the control region's switch mailbox.
// With --persistent-region (`ethx up`) the shm port region outlives the process, so a
// restarted switch (`ethx restart-switch`) attaches to the rings the running nodes still use.
// On the socket transports `ethx bench` can switch it to the minimal forwarder it measures it
// against (bare_forwarder.hpp), through the control region.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "fabric/config/fabric_names.hpp"
#include "fabric/config/topology_config.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/platform/readiness_pipe.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/socket_transport.hpp"
#include "fabric/transport/shm/control_region.hpp"
#include "switch/runtime/bare_forwarder.hpp"
#include "switch/runtime/periodic_hook.hpp"
#include "switch/runtime/shm_switch_runtime.hpp"
#include "switch/runtime/socket_switch_runtime.hpp"
#include "switch/runtime/switch_command_box.hpp"
#include "switch/runtime/switch_stats.hpp"

namespace po = boost::program_options;

namespace {

struct SwitchOptions {
  std::string fabric;
  std::string config_path;
  std::string stats_path;
  std::int64_t stats_interval_ms = 0;
  std::string transport = "shm";
  std::string netns_tag;
  unsigned gpus = 0;
  int ready_fd = -1;
  bool stop_with_parent = false;
  bool persistent_region = false;
  std::vector<std::string> extra_ports;  // unbound AF_PACKET ports (guest NICs' taps)
};

// The fabric's control region, if its creator (ethx bench, ethx up) made one.
std::optional<ethx::ControlRegion> attach_control(const std::string& fabric) {
  std::optional<ethx::ControlRegion> control;
  if (ethx::shm::SharedMemoryFile::exists(ethx::control_region_name(fabric))) {
    control.emplace(ethx::ControlRegion::attach(ethx::control_region_name(fabric)));
  }
  return control;
}

// The shm port region: created, or with --persistent-region the one a previous switch of this
// fabric left for the nodes that still run (a restart), kept in /dev/shm on exit either way.
ethx::shm::ShmFabricRegion open_port_region(const SwitchOptions& options, std::size_t gpus) {
  const std::string name = ethx::switch_region_name(options.fabric);
  if (!options.persistent_region || !ethx::shm::SharedMemoryFile::exists(name)) {
    auto region = ethx::shm::ShmFabricRegion::create(name, static_cast<std::uint32_t>(gpus));
    if (options.persistent_region) region.file().keep_name();
    return region;
  }
  auto region = ethx::shm::ShmFabricRegion::attach(name);
  if (region.port_count() != gpus) {
    throw std::runtime_error("shared memory " + name + " has " +
                             std::to_string(region.port_count()) + " ports, the fabric " +
                             std::to_string(gpus) + " GPUs");
  }
  region.header().switch_pid.store(static_cast<std::int32_t>(::getpid()));
  return region;
}

// Readers (`ethx status`) never see a half-written file: write a sibling, then rename.
void write_atomically(const std::string& path, const nlohmann::json& value) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary);
    out << value.dump(2) << "\n";
  }
  std::error_code ignored;
  std::filesystem::rename(temporary, path, ignored);
}

nlohmann::json socket_counters_json(std::vector<std::unique_ptr<ethx::FrameSocket>>& sockets,
                                    bool refresh_kernel) {
  nlohmann::json list = nlohmann::json::array();
  for (auto& socket : sockets) {
    if (refresh_kernel) socket->refresh_kernel_counters();
    const ethx::FrameSocketCounters& c = socket->counters();
    list.push_back({{"interface", socket->interface_name()},
                    {"rx_frames", c.rx_frames},
                    {"tx_frames", c.tx_frames},
                    {"tx_ring_full", c.tx_ring_full},
                    {"tx_too_large", c.tx_too_large},
                    {"rx_too_large", c.rx_too_large},
                    {"rx_kernel_drops", c.rx_kernel_drops}});
  }
  return list;
}

// The socket switch's ports: one socket per GPU (port i on GPU i's veth), then the extra ports.
struct SwitchSockets {
  std::vector<std::unique_ptr<ethx::FrameSocket>> sockets;
  std::vector<ethx::FrameSocket*> ports;      // every port, the GPUs' first
  std::vector<ethx::FrameSocket*> gpu_ports;  // the bare forwarder knows only GPU ports
};

SwitchSockets open_switch_sockets(const SwitchOptions& options,
                                  const ethx::TopologyConfig& topology) {
  if (options.netns_tag.empty()) {
    throw std::invalid_argument("--transport " + options.transport + " needs --netns-tag");
  }
  if (std::string error =
          ethx::check_privileges(ethx::privilege_needs(options.transport), "ethx-switch");
      !error.empty()) {
    throw std::runtime_error(error);
  }
  const std::string ns = ethx::netns::switch_namespace(options.netns_tag);
  SwitchSockets opened;
  // Veths cannot back-pressure a sender: bursts must fit the receive rings.
  const std::uint32_t receive_frames = ethx::receive_frames_for_fabric(topology.gpu_count);
  for (std::size_t gpu = 0; gpu < topology.gpu_count; ++gpu) {
    opened.sockets.push_back(ethx::open_frame_socket(
        options.transport, ns, ethx::netns::switch_interface(options.netns_tag, gpu),
        ethx::SocketRole::kSwitchPort, receive_frames));
    opened.ports.push_back(opened.sockets.back().get());
  }
  // The guest NICs' ports follow the GPU ports.
  opened.gpu_ports = opened.ports;
  if (!options.extra_ports.empty() && !topology.switch_learning) {
    throw std::invalid_argument(
        "--extra-port needs switch.learning = true: the guest NICs' MACs are learned");
  }
  for (const std::string& interface : options.extra_ports) {
    // AF_PACKET whatever the GPUs use: a tap (or a veth to the host's RDMA port) carries the
    // guests' own traffic (ARP, IPv4, RoCEv2), which is not the XDP program's business.
    opened.sockets.push_back(ethx::open_frame_socket(
        "afpacket", ns, interface, ethx::SocketRole::kSwitchPort, receive_frames));
    opened.ports.push_back(opened.sockets.back().get());
  }
  return opened;
}

// The stats file of the socket switch: the switch core's counters, each socket's, the bare
// forwarder's.
nlohmann::json socket_switch_stats(const ethx::SocketSwitchRuntime& runtime,
                                   const ethx::BareForwarder& forwarder,
                                   std::vector<std::unique_ptr<ethx::FrameSocket>>& sockets,
                                   bool refresh_kernel) {
  nlohmann::json stats = ethx::switch_stats_json(runtime.core());
  stats["sockets"] = socket_counters_json(sockets, refresh_kernel);
  const ethx::BareForwarderCounters& bare = forwarder.counters();
  stats["bare_forwarder"] = {{"forwarded", bare.forwarded},
                             {"unknown_destination", bare.unknown_destination},
                             {"egress_full", bare.egress_full}};
  stats["pid"] = ::getpid();
  return stats;
}

// Forwards until a stop is requested, with the ethx switch core or the bare forwarder: `ethx
// bench` switches between them through the control region, on these same sockets, to measure
// the switch against its baseline.
void forward_in_requested_mode(ethx::SocketSwitchRuntime& runtime, ethx::BareForwarder& forwarder,
                               ethx::ControlRegion* control) {
  auto requested_mode = [&] { return control ? control->header().switch_mode.load() : 0u; };
  while (!ethx::g_stop_requested.load()) {
    const std::uint32_t mode = requested_mode();
    if (control) {
      control->header().switch_mode_active.store(mode);
      ethx::shm::ring(control->header().coordinator_bell);
    }
    auto leave = [&] { return ethx::g_stop_requested.load() || requested_mode() != mode; };
    if (mode == static_cast<std::uint32_t>(ethx::SwitchMode::kBareForwarder)) {
      forwarder.run(leave);
    } else {
      runtime.run(leave);
    }
  }
}

// Nobody reads the counters once the parent is gone (killed): leave no file behind then,
// unless the file is the live snapshot of a detached fabric (`ethx up`).
bool wants_final_stats(const SwitchOptions& options, pid_t parent_pid) {
  const bool parent_alive = ::getppid() == parent_pid;
  return !options.stats_path.empty() && (parent_alive || options.stats_interval_ms > 0);
}

int run_on_sockets(const SwitchOptions& options, const ethx::TopologyConfig& topology,
                   pid_t parent_pid) {
  SwitchSockets opened = open_switch_sockets(options, topology);
  ethx::SocketSwitchRuntime runtime(topology, opened.ports);
  ethx::BareForwarder forwarder(topology, opened.gpu_ports);
  auto snapshot = [&](bool refresh_kernel) {
    write_atomically(options.stats_path,
                     socket_switch_stats(runtime, forwarder, opened.sockets, refresh_kernel));
  };
  if (options.stats_interval_ms > 0 && !options.stats_path.empty()) {
    runtime.set_periodic(
        ethx::PeriodicHook([&] { snapshot(false); }, options.stats_interval_ms * 1'000'000));
  }
  std::optional<ethx::ControlRegion> control = attach_control(options.fabric);
  std::optional<ethx::SwitchCommandServer> commands;
  if (control) {
    commands.emplace(*control);
    runtime.set_commands(commands->hook());
  }
  ethx::notify_ready(options.ready_fd);
  forward_in_requested_mode(runtime, forwarder, control ? &*control : nullptr);
  if (wants_final_stats(options, parent_pid)) snapshot(true);
  return 0;
}

int run_on_shared_memory(const SwitchOptions& options, const ethx::TopologyConfig& topology,
                         pid_t parent_pid) {
  auto region = open_port_region(options, topology.gpu_count);
  ethx::ShmSwitchRuntime runtime(topology, region);
  std::optional<ethx::ControlRegion> control = attach_control(options.fabric);
  std::optional<ethx::SwitchCommandServer> commands;
  if (control) {
    commands.emplace(*control);
    runtime.set_commands(commands->hook());
  }
  auto snapshot = [&] {
    nlohmann::json stats = ethx::switch_stats_json(runtime.core());
    stats["pid"] = ::getpid();
    write_atomically(options.stats_path, stats);
  };
  if (options.stats_interval_ms > 0 && !options.stats_path.empty()) {
    runtime.set_periodic(ethx::PeriodicHook(snapshot, options.stats_interval_ms * 1'000'000));
  }
  ethx::notify_ready(options.ready_fd);
  runtime.run(ethx::g_stop_requested);
  if (wants_final_stats(options, parent_pid)) snapshot();
  return 0;
}

int run(int argc, char** argv) {
  SwitchOptions options;
  po::options_description description("ethx-switch options");
  description.add_options()("help", "show this help")(
      "fabric", po::value(&options.fabric)->required(), "fabric instance name")(
      "config", po::value(&options.config_path), "topology file (default: the embedded default)")(
      "gpus", po::value(&options.gpus), "override fabric.gpus")(
      "stats-file", po::value(&options.stats_path), "write per-port counters as JSON here")(
      "stats-interval-ms", po::value(&options.stats_interval_ms),
      "also rewrite the stats file while running, at most this often (after changes)")(
      "stop-with-parent", po::bool_switch(&options.stop_with_parent), "exit when the parent exits")(
      "persistent-region", po::bool_switch(&options.persistent_region),
      "shm: attach to the fabric's port region if it exists (a restart) and leave it in "
      "/dev/shm on exit")("transport", po::value(&options.transport),
                          "shm (default) | afxdp | afpacket")(
      "netns-tag", po::value(&options.netns_tag),
      "socket transports: the run's tag; port i is veth ethx-<tag>-s<i> in namespace "
      "ethx-<tag>-sw")("extra-port", po::value(&options.extra_ports)->composing(),
                       "socket transports: one more, unbound, AF_PACKET port on this interface "
                       "of the switch namespace (a guest NIC's tap); repeatable")(
      "ready-fd", po::value(&options.ready_fd),
      "write \"ready\" to this inherited descriptor once forwarding");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, description), vm);
  if (vm.count("help")) {
    std::cout << description << "\n";
    return 0;
  }
  po::notify(vm);
  ethx::install_stop_signals(options.stop_with_parent);
  const pid_t parent_pid = ::getppid();

  const ethx::TopologyConfig topology = ethx::load_topology(options.config_path, options.gpus);
  ethx::require_emulated(topology);
  if (!ethx::valid_transport(options.transport)) {
    throw std::invalid_argument("--transport " + options.transport +
                                ": use shm, afxdp or afpacket");
  }
  if (!options.extra_ports.empty() && !ethx::is_socket_transport(options.transport)) {
    throw std::invalid_argument(
        "--extra-port needs --transport afxdp or afpacket (the extra "
        "ports are AF_PACKET sockets in the switch namespace)");
  }
  return ethx::is_socket_transport(options.transport)
             ? run_on_sockets(options, topology, parent_pid)
             : run_on_shared_memory(options, topology, parent_pid);
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
