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
  // A switch exit is only noted here: check_alive() follows a restart (on the caller's
  // thread, where the run directory may be read); any other exit stops the command.
  watcher_.emplace([this](const ProcessExit& exit) {
    if (exit.name == "switch") {
      switch_exited_.store(true);
      return false;
    }
    request_stop(exit.line());
    return true;
  });
  for (const RecordedProcess& process : state_->processes) {
    if (process.role == "switch") switch_ = process;
    watcher_->watch({process.role, process.pid, process.start_time, hint()});
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

std::string AttachedFabric::hint() const {
  return degraded_fabric_hint(*state_);
}

void AttachedFabric::follow_switch() {
  const RecordedProcess old = switch_;
  if (follow_restarted_switch(directory_, switch_)) {
    if (switch_.pid != old.pid) {
      switch_exited_.store(false);
      watcher_->watch({"switch", switch_.pid, switch_.start_time, hint()});
    }
    return;  // or still being replaced: look again on the next check
  }
  request_stop(ProcessExit{"switch", switch_.pid, "", hint()}.line());
}

void AttachedFabric::check_alive() {
  if (switch_exited_.load()) follow_switch();
  if (g_stop_requested.load()) throw Interrupted();
}

}  // namespace ethx
