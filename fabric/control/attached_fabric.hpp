// A fabric that `ethx up` left running, attached for commands: what `ethx bench --fabric` and
// `ethx soak --fabric` share. Holds the run directory's lock (one attached command at a time;
// `ethx down` waits for it), the control region, the shm port region when there is one, and a
// FabricClient whose waits end as soon as a process of the fabric is gone, except a switch that
// `ethx restart-switch` is replacing, which it follows.
#pragma once

#include <optional>
#include <string>

#include "fabric/config/topology_config.hpp"
#include "fabric/control/fabric_client.hpp"
#include "fabric/control/run_state.hpp"
#include "fabric/transport/shm/control_region.hpp"
#include "fabric/transport/shm/shm_fabric_region.hpp"

namespace ethx {

class FabricNotUp : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class AttachedFabric {
 public:
  // Throws FabricNotUp, naming the fabric and how to start it, if it is not up.
  explicit AttachedFabric(const std::string& name);
  AttachedFabric(const AttachedFabric&) = delete;
  AttachedFabric& operator=(const AttachedFabric&) = delete;

  const RunState& state() const { return *state_; }
  TopologyConfig topology() const;
  FabricClient& client() { return *client_; }

 private:
  // Throws when a process of the fabric has died (or Ctrl-C was pressed).
  void check_alive();

  RunDirectory directory_;
  std::optional<RunState> state_;
  std::optional<ControlRegion> control_;
  std::optional<shm::ShmFabricRegion> region_;
  std::optional<FabricClient> client_;
};

}  // namespace ethx
