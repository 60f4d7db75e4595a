// A fabric that `ethx up` left running, attached for commands: what `ethx bench --fabric` and
// `ethx soak --fabric` share. Holds the run directory's lock (one attached command at a time;
// `ethx down` waits for it), the control region, the shm port region when there is one, a
// FabricClient, and a ProcessWatcher (process_watcher.hpp) that stops the command as soon as a
// process of the fabric is gone, except a switch that `ethx restart-switch` is replacing, which
// it follows. The fabric is left as it is: `ethx status` shows it DEGRADED, `ethx down` removes
// it.
#pragma once

#include <atomic>
#include <optional>
#include <string>

#include "fabric/config/topology_config.hpp"
#include "fabric/control/fabric_client.hpp"
#include "fabric/control/run_state.hpp"
#include "fabric/platform/process_watcher.hpp"
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
  // Throws Interrupted when a process of the fabric has died (or Ctrl-C was pressed).
  void check_alive();
  // The recorded switch exited: follows its replacement, or stops the command.
  void follow_switch();
  std::string hint() const;

  RunDirectory directory_;
  std::optional<RunState> state_;
  std::optional<ControlRegion> control_;
  std::optional<shm::ShmFabricRegion> region_;
  std::optional<FabricClient> client_;
  RecordedProcess switch_;  // the switch watched now (restarts replace it)
  std::atomic<bool> switch_exited_{false};
  std::optional<ProcessWatcher> watcher_;  // last: its thread ends before the rest goes
};

}  // namespace ethx
