// Talks to the nodes of a running fabric through its control mailboxes (control_region.hpp):
// posts commands of the node protocol (fabric/node/node_protocol.hpp) and waits for their
// results. Used by the launcher that started the
// fabric (`ethx bench`) and by commands that attach to a fabric `ethx up` left running.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "address-map/fabric_types.hpp"
#include "fabric/node/node_protocol.hpp"
#include "fabric/transport/doorbell.hpp"
#include "fabric/transport/shm/control_region.hpp"
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

  // Sends a command (node_protocol.hpp) to one node and waits for its result. Throws when the
  // node answers with an error (naming the GPU) or with a malformed result.
  template <protocol::Command Command>
  typename Command::Result call(GpuId node, const Command& command) {
    return protocol::parse_result<typename Command::Result>(
        run(node, protocol::command_json(command)));
  }
  // Sends commands to several nodes at once and waits for all results, in order.
  template <protocol::Command Command>
  std::vector<typename Command::Result> call_parallel(
      const std::vector<std::pair<GpuId, Command>>& commands) {
    std::vector<std::pair<GpuId, nlohmann::json>> posted;
    posted.reserve(commands.size());
    for (const auto& [node, command] : commands) {
      posted.emplace_back(node, protocol::command_json(command));
    }
    std::vector<typename Command::Result> results;
    for (const nlohmann::json& answer : run_parallel(posted)) {
      results.push_back(protocol::parse_result<typename Command::Result>(answer));
    }
    return results;
  }
  // Posts kExitCommand to a node without waiting.
  void post_exit(GpuId node) { post(node, std::string(protocol::kExitCommand)); }

  ControlRegion& control() { return control_; }

 private:
  nlohmann::json run(GpuId node, const nlohmann::json& command);
  std::vector<nlohmann::json> run_parallel(
      const std::vector<std::pair<GpuId, nlohmann::json>>& commands);
  std::uint32_t post(GpuId node, const std::string& command);
  nlohmann::json wait_result(GpuId node, std::uint32_t sequence);

  ControlRegion& control_;
  shm::ShmFabricRegion* region_;
  std::function<void()> check_alive_;
  shm::AdaptiveWaiter waiter_;
};

}  // namespace ethx
