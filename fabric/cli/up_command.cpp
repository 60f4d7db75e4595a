#include "fabric/cli/up_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "fabric/config/fabric_names.hpp"
#include "fabric/control/fabric_launcher.hpp"
#include "fabric/control/run_state.hpp"
#include "fabric/platform/process_identity.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/platform/shm_file.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/socket_transport.hpp"
#include "fabric/vm/kvm_probe.hpp"
#include "fabric/vm/vm_plan.hpp"
#include "switch/runtime/fault_change.hpp"

namespace ethx {
namespace {

using nlohmann::json;

std::int64_t unix_now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Removes everything a run record names: processes (only if they are still the recorded
// ones), namespaces with their veths and XDP programs, shared-memory files, the directory.
// Returns what it removed, one item per line; throws if something could not be removed.
std::vector<std::string> remove_recorded(const RunDirectory& directory, const RunState& state) {
  std::vector<std::string> removed;
  // Nodes first, so the switch never sees a node talk into a closed port; `ethx up` itself
  // (if it is still starting) before anything it could restart.
  std::vector<const RecordedProcess*> order;
  for (const RecordedProcess& process : state.processes) {
    if (process.role == "up") order.insert(order.begin(), &process);
  }
  for (const RecordedProcess& process : state.processes) {
    if (process.role != "up" && process.role != "switch") order.push_back(&process);
  }
  for (const RecordedProcess& process : state.processes) {
    if (process.role == "switch") order.push_back(&process);
  }
  for (const RecordedProcess* process : order) {
    if (terminate_recorded_process(process->pid, process->start_time)) {
      removed.push_back("process " + process->role + " (pid " + std::to_string(process->pid) + ")");
    }
  }
  if (!state.netns_tag.empty()) {
    for (std::string& name : netns::cleanup_by_prefix(netns::run_prefix(state.netns_tag))) {
      removed.push_back("network namespace " + name);
    }
  }
  for (const std::string& name : state.shared_memory) {
    if (shm::SharedMemoryFile::exists(name)) {
      shm::SharedMemoryFile::remove(name);
      removed.push_back("shared memory " + name);
    }
  }
  // Anything else of this fabric in /dev/shm (a file created after the record was written).
  const std::string prefix = std::string(kNamePrefix) + state.fabric + "-";
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", error)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind(prefix, 0) == 0) {
      std::filesystem::remove(entry.path(), error);
      removed.push_back("shared memory /" + file);
    }
  }
  directory.remove();
  removed.push_back("run directory " + directory.path());
  // Verify rather than trust: a namespace that survived (busy mount, EBUSY) is an error.
  if (!state.netns_tag.empty()) {
    for (const std::string& ns : netns::list_namespaces()) {
      if (ns.rfind(netns::run_prefix(state.netns_tag), 0) == 0) {
        throw std::runtime_error("network namespace " + ns + " could not be removed");
      }
    }
  }
  return removed;
}

bool any_running(const RunState& state) {
  for (const RecordedProcess& process : state.processes) {
    if (process.role != "up" && process.running()) return true;
  }
  return false;
}

// `--guest-nics` needs VMs and a socket transport; if it lacks them, says so and returns false.
bool guest_nics_usable(const UpOptions& options, const std::string& transport) {
  if (options.guest_nics && (options.vms == 0 || !is_socket_transport(transport))) {
    std::cerr << "ethx up: --guest-nics needs --vms and a socket transport (afxdp or afpacket, as "
                 "root; the guest NICs are taps joined to the switch)\n";
    return false;
  }
  return true;
}

struct UpPlan {
  VmPlan vms;
  std::size_t gpus = 0;  // for the topology; 0: its own count
};

// The VMs (image, accelerator) and how many GPUs the fabric gets: --gpus, at least the VMs'.
UpPlan plan_up(const UpOptions& options) {
  UpPlan plan;
  VmPlan& vms = plan.vms;
  vms.count = options.vms;
  vms.gpus_per_vm = options.gpus_per_vm;
  vms.kernel_args.assign(vms.count, options.vm_append);
  vms.guest_nics = options.guest_nics;
  plan.gpus = options.gpus;
  if (vms.count == 0) return plan;
  locate_vm_image(vms);
  const AcceleratorChoice accel = choose_accelerator(vms);
  vms.accel = accel.accel;
  std::cerr << "ethx up: VMs use " << accel.accel << ": " << accel.reason << "\n";
  if (const std::string absence = shared_root_absence(vms); !absence.empty()) {
    std::cerr << "ethx up: VMs stay in their initramfs, without the host's programs: " << absence
              << "\n";
  }
  if (plan.gpus == 0) plan.gpus = vms.vm_gpus();
  if (plan.gpus < vms.vm_gpus()) {
    throw ConfigError("--gpus " + std::to_string(plan.gpus) +
                      " is fewer than --vms × --gpus-per-vm (" + std::to_string(vms.vm_gpus()) +
                      ")");
  }
  return plan;
}

// An earlier record of this name: refused while any of its processes runs (says so, returns
// exit status 1); its remains removed when they are all gone. 0: the name is free now.
int clear_earlier(const RunDirectory& directory, const std::string& name) {
  const std::optional<RunState> earlier = directory.load();
  if (!earlier) return 0;
  if (any_running(*earlier)) {
    std::cerr << "ethx up: fabric '" << name << "' is already up (" << earlier->gpus
              << " GPUs over " << earlier->transport << ", run directory " << directory.path()
              << "); see `ethx status --name " << name << "`, stop it with `ethx down --name "
              << name << "`, or start another with --name\n";
    return 1;
  }
  remove_recorded(directory, *earlier);
  std::cerr << "ethx up: removed the remains of an earlier '" << name
            << "' whose processes were gone\n";
  return 0;
}

// Socket transports: the namespaces and veth ends the fabric will create, for the record.
void record_network(RunState& state, std::size_t gpu_count, const VmPlan& vms) {
  state.netns_tag = netns::random_tag();
  state.namespaces.push_back(netns::switch_namespace(state.netns_tag));
  for (std::size_t gpu = 0; gpu < gpu_count; ++gpu) {
    state.namespaces.push_back(netns::node_namespace(state.netns_tag, gpu));
    state.links.push_back(netns::switch_interface(state.netns_tag, gpu));
    state.links.push_back(netns::node_interface(state.netns_tag, gpu));
  }
  if (vms.guest_nics) {
    state.namespaces.push_back(netns::host_port_namespace(state.netns_tag));
    for (const std::string& port : guest_nic_switch_ports(state.netns_tag, vms.count)) {
      state.links.push_back(port);
    }
    state.links.push_back(netns::host_port_interface(state.netns_tag));
  }
}

// The record of a fabric about to start, with `ethx up` itself as its first process.
RunState starting_state(const UpOptions& options, const std::string& transport,
                        const TopologyConfig& topology, const VmPlan& vms,
                        const RunDirectory& directory) {
  RunState state;
  state.name = options.name;
  state.fabric = "up-" + options.name;
  state.transport = transport;
  state.gpus = topology.gpu_count;
  state.config_path = options.config_path.empty()
                          ? std::string()
                          : std::filesystem::absolute(options.config_path).string();
  state.created_unix_s = unix_now_s();
  state.vms = vms.count;
  state.gpus_per_vm = vms.gpus_per_vm;
  state.guest_nics = vms.guest_nics;
  state.processes.push_back({"up", ::getpid(), process_start_time(::getpid())});
  state.stats_file = directory.path() + "/switch-stats.json";
  if (is_socket_transport(transport)) record_network(state, topology.gpu_count, vms);
  return state;
}

LaunchOptions detached_launch(const RunState& state, const VmPlan& vms,
                              const RunDirectory& directory) {
  LaunchOptions launch;
  launch.transport = state.transport;
  launch.detached = true;
  launch.log_directory = directory.path();
  launch.stats_path = state.stats_file;
  launch.vms = vms;
  launch.netns_tag = state.netns_tag;
  return launch;
}

void start_or_remove_record(FabricLauncher& fabric, const RunDirectory& directory,
                            const UpOptions& options, const RunState& state) {
  try {
    if (!options.quiet) {
      std::cerr << "ethx up: starting '" << options.name << "': " << state.gpus << " GPUs over "
                << state.transport << "\n";
    }
    fabric.start();
  } catch (...) {
    // The launcher's destructor (not detached) ends what it started and removes its files and
    // namespaces; the record goes with them.
    std::error_code ignored;
    std::filesystem::remove_all(directory.path(), ignored);
    throw;
  }
}

std::string up_message(const RunState& state, const VmPlan& vms, const std::string& run_path) {
  std::string text = "ethx up: fabric '" + state.name + "' is up: " + std::to_string(state.gpus) +
                     " GPUs over " + state.transport;
  if (vms.count > 0) {
    text += " (" + std::to_string(vms.vm_gpus()) + " in " + std::to_string(vms.count) +
            " VMs; consoles " + run_path + "/vm-<k>.console)";
  }
  return text + "; run directory " + run_path + "\n";
}

}  // namespace

int run_up(const UpOptions& options) {
  std::string transport;
  try {
    transport = choose_transport(options.transport, "ethx up");  // privileges first
  } catch (const TransportUnavailable& error) {
    std::cerr << error.what() << "\n";
    return 2;
  }
  RunDirectory directory(options.name);
  if (!guest_nics_usable(options, transport)) return 2;
  const UpPlan plan = plan_up(options);
  const TopologyConfig topology = load_topology(options.config_path, plan.gpus);
  require_emulated(topology);
  directory.lock();
  directory.lock_switch();  // a restart of the switch of an earlier record finishes first
  if (const int refused = clear_earlier(directory, options.name); refused != 0) return refused;
  directory.create();

  RunState state = starting_state(options, transport, topology, plan.vms, directory);
  LaunchOptions launch = detached_launch(state, plan.vms, directory);
  launch.on_spawn = [&](const std::string& role, pid_t pid) {
    state.processes.push_back({role, pid, process_start_time(pid)});
    directory.save(state);
  };
  install_stop_signals(false);
  // `ethx up | head` must not kill us half-way through starting: writes fail with EPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  FabricLauncher fabric(state.fabric, state.config_path, topology, launch);
  state.shared_memory = fabric.shared_memory_names();
  // Recorded before anything exists: a SIGKILL from here on leaves a record `ethx down` reads.
  directory.save(state);
  start_or_remove_record(fabric, directory, options, state);
  fabric.detach();
  state.processes.erase(state.processes.begin());  // `ethx up` itself is done
  state.phase = "up";
  directory.save(state);
  std::cout << up_message(state, plan.vms, directory.path());
  return 0;
}

int run_down(const DownOptions& options) {
  std::vector<std::string> names;
  if (options.all) {
    names = list_run_directories();
  } else {
    names.push_back(options.name);
  }
  if (names.empty() && !options.quiet) std::cout << "ethx down: no fabric is up\n";
  int status = 0;
  for (const std::string& name : names) {
    RunDirectory directory(name);
    directory.lock();
    directory.lock_switch();  // a switch restart under way records its new switch first
    std::optional<RunState> state;
    try {
      state = directory.load();
    } catch (const std::exception& error) {
      std::cerr << "ethx down: '" << name << "': " << error.what() << "\n";
      status = 1;
      continue;
    }
    if (!state) {
      if (!options.quiet) {
        std::cout << "ethx down: no fabric '" << name << "' is up (nothing in " << directory.path()
                  << ")\n";
      }
      continue;
    }
    try {
      const std::vector<std::string> removed = remove_recorded(directory, *state);
      if (!options.quiet) {
        std::cout << "ethx down: '" << name << "' removed:\n";
        for (const std::string& item : removed) std::cout << "  " << item << "\n";
      }
    } catch (const std::exception& error) {
      std::cerr << "ethx down: '" << name << "': " << error.what() << "\n";
      status = 1;
    }
  }
  return status;
}

}  // namespace ethx
