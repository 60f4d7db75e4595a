// Starts one fabric (an ethx-switch process and one ethx-node per GPU), talks to its nodes
// through the control mailboxes, and takes it all down again. The data path is the
// shared-memory rings ("shm") or, for "afxdp" and "afpacket", sockets on a namespaced veth
// topology that the launcher creates (one namespace per node and one for the switch) and
// always removes; the control path (mailboxes in /dev/shm) is the same for all transports.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fabric/child_process.hpp"
#include "fabric/control_region.hpp"
#include "fabric/netns_topology.hpp"
#include "fabric/raw_pingpong.hpp"
#include "fabric/shm_fabric_region.hpp"
#include "fabric/topology_config.hpp"

namespace ethx {

// Removes the namespaces and veths of earlier socket-transport `ethx bench` runs whose
// coordinator is gone (killed with SIGKILL): each run records "<pid> <start time>" of its
// coordinator in /run/ethx/bench/<tag>; a record whose process no longer exists (or whose PID
// was reused: different start time) is reaped with netns::cleanup_by_prefix(run_prefix(tag)).
// Returns what it removed. start() calls it for socket transports.
std::vector<std::string> reap_stale_bench_runs();

class ShmFabricLauncher {
 public:
  // `config_path` may be empty (embedded default); the topology already has --gpus applied.
  // `transport`: "shm", "afxdp" or "afpacket" (the caller checked the privileges).
  ShmFabricLauncher(std::string fabric_name, std::string config_path, TopologyConfig topology,
                    std::string transport = "shm");
  ~ShmFabricLauncher();  // stops whatever still runs and removes the shared-memory files

  // Starts the switch and the nodes; returns once every node reported ready. Throws with the
  // name of the process that failed and how.
  void start();
  // Socket transports only, before start(): the bare ping-pong between two namespaces of this
  // run (measure_raw_pingpong with the run's tag; its namespaces are gone when it returns).
  RawPingPongResult measure_raw_pingpong(std::uint32_t rounds, std::uint32_t samples_per_round);
  // Sends a command to one node and waits for its result (throws on a node error).
  nlohmann::json run(GpuId node, const nlohmann::json& command);
  // Sends commands to several nodes at once and waits for all results, in order.
  std::vector<nlohmann::json> run_parallel(
      const std::vector<std::pair<GpuId, nlohmann::json>>& commands);
  // Stops nodes, then the switch; returns the switch's counters (null if unavailable).
  nlohmann::json stop();

  const std::string& name() const { return fabric_name_; }
  const std::string& transport() const { return transport_; }
  // Socket transports: the run's namespace tag (names start with netns::run_prefix(tag)).
  const std::string& netns_tag() const { return netns_tag_; }

 private:
  std::uint32_t post(GpuId node, const std::string& command);
  nlohmann::json wait_result(GpuId node, std::uint32_t sequence);
  void check_alive();
  void remove_files();
  void write_run_record();
  void start_socket_topology();
  void remove_socket_topology();

  std::string fabric_name_;
  std::string config_path_;
  TopologyConfig topology_;
  std::string transport_;
  std::string netns_tag_;
  std::string run_record_;  // /run/ethx/bench/<tag>: who owns the namespaces (stale-run reaping)
  std::unique_ptr<netns::VethTopology> veths_;
  std::string stats_path_;
  std::optional<ControlRegion> control_;
  std::optional<shm::ShmFabricRegion> region_;
  std::unique_ptr<ChildProcess> switch_process_;
  std::vector<ChildProcess> nodes_;
  shm::AdaptiveWaiter waiter_;
  bool stopped_ = false;
};

}  // namespace ethx
