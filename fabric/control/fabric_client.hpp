// Talks to the nodes of a running fabric through its control mailboxes (control_region.hpp):
// posts JSON commands and waits for their results. Used by the launcher that started the
// fabric (`ethx bench`) and by commands that attach to a fabric `ethx up` left running.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "address-map/fabric_types.hpp"
#include "fabric/transport/shm/control_region.hpp"
#include "fabric/transport/doorbell.hpp"
#include "fabric/transport/shm/shm_fabric_region.hpp"

namespace ethx {

class FabricClient {
 public:
  // `check_alive` is called while waiting and throws (naming the process) when a process of
  // the fabric has died or the user pressed Ctrl-C; a wait never outlives its fabric.
  // `region`: the shared-memory transport's port region, whose doorbells wake its nodes
  // (nullptr on the socket transports).
  FabricClient(ControlRegion& control, shm::ShmFabricRegion* region,
               std::function<void()> check_alive);

  // Sends a command to one node and waits for its result (throws on a node error).
  nlohmann::json run(GpuId node, const nlohmann::json& command);
  // Sends commands to several nodes at once and waits for all results, in order.
  std::vector<nlohmann::json> run_parallel(
      const std::vector<std::pair<GpuId, nlohmann::json>>& commands);
  // Posts "exit" to a node without waiting.
  void post_exit(GpuId node) { post(node, "exit"); }

  ControlRegion& control() { return control_; }

 private:
  std::uint32_t post(GpuId node, const std::string& command);
  nlohmann::json wait_result(GpuId node, std::uint32_t sequence);

  ControlRegion& control_;
  shm::ShmFabricRegion* region_;
  std::function<void()> check_alive_;
  shm::AdaptiveWaiter waiter_;
};

}  // namespace ethx
