// Starts one fabric over shared memory (an ethx-switch process and one ethx-node per GPU),
// talks to its nodes through the control mailboxes, and takes it all down again.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fabric/child_process.hpp"
#include "fabric/control_region.hpp"
#include "fabric/shm_fabric_region.hpp"
#include "fabric/topology_config.hpp"

namespace ethx {

class ShmFabricLauncher {
 public:
  // `config_path` may be empty (embedded default); the topology already has --gpus applied.
  ShmFabricLauncher(std::string fabric_name, std::string config_path, TopologyConfig topology);
  ~ShmFabricLauncher();  // stops whatever still runs and removes the shared-memory files

  // Starts the switch and the nodes; returns once every node reported ready. Throws with the
  // name of the process that failed and how.
  void start();
  // Sends a command to one node and waits for its result (throws on a node error).
  nlohmann::json run(GpuId node, const nlohmann::json& command);
  // Sends commands to several nodes at once and waits for all results, in order.
  std::vector<nlohmann::json> run_parallel(
      const std::vector<std::pair<GpuId, nlohmann::json>>& commands);
  // Stops nodes, then the switch; returns the switch's counters (null if unavailable).
  nlohmann::json stop();

  const std::string& name() const { return fabric_name_; }

 private:
  std::uint32_t post(GpuId node, const std::string& command);
  nlohmann::json wait_result(GpuId node, std::uint32_t sequence);
  void check_alive();
  void remove_files();

  std::string fabric_name_;
  std::string config_path_;
  TopologyConfig topology_;
  std::string stats_path_;
  std::optional<ControlRegion> control_;
  std::optional<shm::ShmFabricRegion> region_;
  std::unique_ptr<ChildProcess> switch_process_;
  std::vector<ChildProcess> nodes_;
  shm::AdaptiveWaiter waiter_;
  bool stopped_ = false;
};

}  // namespace ethx
