// Starts one fabric (an ethx-switch process and one ethx-node per GPU) and takes it all down
// again. The data path is the shared-memory rings ("shm") or, for "afxdp" and "afpacket",
// sockets on a namespaced veth topology that the launcher creates (one namespace per node and
// one for the switch); the control path (mailboxes in /dev/shm, FabricClient) is the same for
// all transports.
//
// Two lifetimes: `ethx bench` owns its fabric and everything ends with the launcher (processes
// die with it, even on SIGKILL, via PDEATHSIG and early-unlinked files) and a ProcessWatcher
// (process_watcher.hpp) stops the command, naming the process, as soon as one of them exits
// before stop(); `ethx up` calls
// detach(), after which the processes run on in their own sessions, logging to the run
// directory, until `ethx down` (run_state.hpp) ends them.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fabric/config/topology_config.hpp"
#include "fabric/control/fabric_client.hpp"
#include "fabric/control/raw_pingpong.hpp"
#include "fabric/platform/child_process.hpp"
#include "fabric/platform/process_watcher.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/shm/control_region.hpp"
#include "fabric/transport/shm/shm_fabric_region.hpp"
#include "fabric/vm/vm_plan.hpp"

namespace ethx {

// Removes the namespaces and veths of earlier socket-transport `ethx bench` runs whose
// coordinator is gone (killed with SIGKILL): each run records "<pid> <start time>" of its
// coordinator in /run/ethx/bench/<tag>; a record whose process no longer exists (or whose PID
// was reused: different start time) is reaped with netns::cleanup_by_prefix(run_prefix(tag)).
// Returns what it removed. Socket-transport launches call it.
std::vector<std::string> reap_stale_bench_runs();

struct LaunchOptions {
  std::string transport = "shm";  // "shm", "afxdp" or "afpacket" (privileges checked already)
  // Socket transports: the namespace tag; empty: derived from this process's PID.
  std::string netns_tag;
  // `ethx up`: the processes outlive the launcher (no PDEATHSIG, own session), write their
  // output to <log_directory>/<name>.log, and the switch keeps its counters in stats_path.
  bool detached = false;
  std::string log_directory;
  // Where the switch writes its counters; empty: a file in the temporary directory.
  std::string stats_path;
  // GPUs 0 .. vms.vm_gpus() − 1 are ethx-gpu devices in QEMU processes (vm_plan.hpp) instead
  // of ethx-node processes; their serial consoles and logs go to log_directory.
  VmPlan vms;
  // Called right after each process is started ("switch" or "node-<gpu>"), so `ethx up` can
  // record it before the next one starts: a killed `ethx up` leaves nothing unrecorded.
  std::function<void(const std::string& role, pid_t pid)> on_spawn;
};

// The PIDs of a detached fabric's processes.
struct DetachedProcesses {
  pid_t switch_pid = -1;
  std::vector<pid_t> node_pids;
  std::vector<pid_t> vm_pids;
};

class FabricLauncher {
 public:
  // `config_path` may be empty (embedded default); the topology already has --gpus applied.
  FabricLauncher(std::string fabric_name, std::string config_path, TopologyConfig topology,
                 LaunchOptions options);
  ~FabricLauncher();  // unless detached: stops what still runs, removes files and namespaces

  // Socket transports: creates the namespaced veths (once; start() does it too).
  void create_network();
  // Starts the switch and waits until it forwards (readiness pipe). Nodes may come later:
  // on the socket transports the coordinator can use their veths meanwhile.
  void start_switch();
  // Starts the nodes (and VMs) and waits until every GPU reported ready.
  void start_nodes();
  // The QEMU processes of options.vms, in VM order (after start_nodes()).
  std::vector<ChildProcess>& vms() { return vms_; }
  // create_network(), start_switch() and start_nodes().
  void start();

  // Socket transports, before create_network(): the bare ping-pong between two namespaces of
  // this run (its namespaces are gone when it returns).
  RawPingPongResult measure_raw_pingpong(std::uint32_t rounds, std::uint32_t samples_per_round);
  // Socket transports: has the switch process forward with the ethx core or the bare
  // forwarder (same process, same sockets); returns once it does.
  void set_switch_mode(SwitchMode mode);

  FabricClient& client();
  // Stops nodes, then the switch; returns the switch's counters (null if unavailable).
  nlohmann::json stop();
  // `ethx up`: leaves everything running and returns the PIDs; the destructor then does
  // nothing. Only after start().
  DetachedProcesses detach();

  const std::string& name() const { return fabric_name_; }
  const std::string& transport() const { return options_.transport; }
  const std::string& netns_tag() const { return options_.netns_tag; }
  const std::string& stats_path() const { return options_.stats_path; }
  // Everything in /dev/shm this fabric uses (for run records and cleanup).
  std::vector<std::string> shared_memory_names() const;

 private:
  void check_alive();
  // After a stop request (Ctrl-C, a watched process exited): SIGTERM to every process at once,
  // so the command ends within seconds even while nodes are busy with a command.
  void terminate_all();
  void remove_files();
  void write_run_record();
  void remove_socket_topology();
  ChildProcess spawn(const std::vector<std::string>& argv, const std::string& log_name,
                     int ready_fd);

  std::string fabric_name_;
  std::string config_path_;
  TopologyConfig topology_;
  LaunchOptions options_;
  std::string run_record_;  // /run/ethx/bench/<tag>: who owns the namespaces (stale-run reaping)
  std::unique_ptr<netns::VethTopology> veths_;
  std::optional<ControlRegion> control_;
  std::optional<shm::ShmFabricRegion> region_;
  std::optional<FabricClient> client_;
  std::unique_ptr<ChildProcess> switch_process_;
  std::vector<ChildProcess> nodes_;  // ethx-node processes, for GPUs vm_gpus() .. gpus − 1
  std::vector<ChildProcess> vms_;
  // Not detached: stops the command when a process exits before stop().
  std::unique_ptr<ProcessWatcher> watcher_;
  shm::AdaptiveWaiter waiter_;
  bool started_ = false;  // every GPU reported ready
  bool stopped_ = false;
  bool detached_ = false;
};

}  // namespace ethx
