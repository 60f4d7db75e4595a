#include "fabric/control/attached_fabric.hpp"

#include "fabric/config/fabric_names.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/transport/net/socket_transport.hpp"

namespace ethx {
namespace {

// A recorded switch that is gone may have been replaced by `ethx restart-switch` (which does
// not wait for attached commands): true while the replacement is under way, and once the
// record names a new switch that runs (`process` then becomes it).
bool follow_restarted_switch(const RunDirectory& directory, RecordedProcess& process) {
  if (directory.switch_lock_busy()) return true;
  const std::optional<RunState> now = directory.load();
  if (!now) return false;
  for (const RecordedProcess& recorded : now->processes) {
    if (recorded.role == "switch" && recorded.pid != process.pid && recorded.running()) {
      process = recorded;
      return true;
    }
  }
  return false;
}

}  // namespace

AttachedFabric::AttachedFabric(const std::string& name) : directory_(name) {
  directory_.lock();
  state_ = directory_.load();
  if (!state_ || state_->phase != "up") {
    throw FabricNotUp("no fabric '" + name + "' is up (start one with `ethx up" +
                      (name == "default" ? "" : " --name " + name) + "`)");
  }
  check_alive();
  control_.emplace(ControlRegion::attach(control_region_name(state_->fabric)));
  if (!is_socket_transport(state_->transport)) {
    region_.emplace(shm::ShmFabricRegion::attach(switch_region_name(state_->fabric)));
  }
  client_.emplace(*control_, region_ ? &*region_ : nullptr, [this] { check_alive(); });
}

TopologyConfig AttachedFabric::topology() const {
  return load_topology(state_->config_path, state_->gpus);
}

void AttachedFabric::check_alive() {
  if (g_stop_requested.load()) throw Interrupted();
  for (RecordedProcess& process : state_->processes) {
    if (!process.running() &&
        !(process.role == "switch" && follow_restarted_switch(directory_, process))) {
      throw std::runtime_error("fabric '" + state_->name + "': " + process.role + " (pid " +
                               std::to_string(process.pid) +
                               ") is gone; `ethx down` and `ethx up` restart it");
    }
  }
}

}  // namespace ethx
