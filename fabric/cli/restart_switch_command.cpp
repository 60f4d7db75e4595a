#include "fabric/cli/restart_switch_command.hpp"

#include <iostream>
#include <stdexcept>

#include "fabric/config/fabric_names.hpp"
#include "fabric/control/run_state.hpp"
#include "fabric/control/switch_launch.hpp"
#include "fabric/platform/child_process.hpp"
#include "fabric/platform/process_identity.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/platform/readiness_pipe.hpp"
#include "fabric/platform/shm_file.hpp"
#include "fabric/transport/net/socket_transport.hpp"
#include "fabric/vm/vm_plan.hpp"

namespace ethx {
namespace {

constexpr std::int64_t kReadyTimeoutNs = 30'000'000'000;

}  // namespace

int run_restart_switch(const RestartSwitchOptions& options) {
  RunDirectory directory(options.name);
  // Not the main lock an attached `ethx bench` holds for its whole run: restarting the switch
  // under traffic is a test the reliability work needs. The switch lock keeps `ethx up` and
  // `ethx down` from reading the record while the switch is being replaced.
  directory.lock_switch();
  std::optional<RunState> state = directory.load();
  if (!state) {
    std::cerr << "ethx restart-switch: no fabric '" << options.name << "' is up\n";
    return 3;
  }
  RecordedProcess* recorded = nullptr;
  for (RecordedProcess& process : state->processes) {
    if (process.role == "switch") recorded = &process;
  }
  if (state->phase != "up" || recorded == nullptr) {
    std::cerr << "ethx restart-switch: '" << options.name
              << "' has not finished starting; see `ethx status --name " << options.name << "`\n";
    return 1;
  }
  // Before anything is stopped: without its port region a new switch could not reach the
  // nodes' rings, and the fabric would be cut off for good.
  const std::string region = switch_region_name(state->fabric);
  if (!is_socket_transport(state->transport) && !shm::SharedMemoryFile::exists(region)) {
    std::cerr << "ethx restart-switch: '" << options.name << "': the port region " << region
              << " is gone (started by an ethx without restartable switches?); use `ethx down` "
                 "and `ethx up`\n";
    return 1;
  }
  const pid_t old_pid = recorded->pid;
  // Only the recorded process (PID and start time), ended gracefully first so that it leaves
  // the rings between two frames; it may also have died already.
  const bool was_running = terminate_recorded_process(recorded->pid, recorded->start_time);

  SwitchLaunch launch;
  launch.fabric = state->fabric;
  launch.config_path = state->config_path;
  launch.gpus = state->gpus;
  launch.transport = state->transport;
  launch.netns_tag = state->netns_tag;
  launch.stats_path = state->stats_file;
  launch.detached = true;
  if (state->guest_nics) launch.extra_ports = guest_nic_switch_ports(state->netns_tag, state->vms);
  install_stop_signals(false);
  ReadinessPipe ready;
  ChildProcess::SpawnOptions spawn_options;
  spawn_options.log_path = directory.path() + "/switch.log";
  spawn_options.new_session = true;
  spawn_options.inherit_fd = ready.child_end();
  ChildProcess child = ChildProcess::spawn(switch_arguments(launch), spawn_options);
  ready.close_child_end();
  // Recorded at once, so `ethx down` finds it even if this command is killed now.
  recorded->pid = child.pid();
  recorded->start_time = process_start_time(child.pid());
  directory.save(*state);
  switch (ready.wait(kReadyTimeoutNs)) {
    case ReadinessPipe::Outcome::kReady:
      break;
    case ReadinessPipe::Outcome::kClosed:
      child.wait_exit(2000);
      std::cerr << "ethx restart-switch: the new ethx-switch exited during start ("
                << child.exit_description() << "); see " << spawn_options.log_path << "\n";
      child.release();
      return 1;
    case ReadinessPipe::Outcome::kTimeout:
      std::cerr << "ethx restart-switch: the new ethx-switch did not get ready within 30 s; see "
                << spawn_options.log_path << "\n";
      child.release();  // recorded: `ethx down` ends it
      return 1;
  }
  const pid_t new_pid = child.release();
  if (!options.quiet) {
    std::cout << "ethx restart-switch: '" << options.name << "': switch pid " << old_pid
              << (was_running ? " stopped" : " was already gone") << ", pid " << new_pid
              << " forwards over " << state->transport << "\n";
  }
  return 0;
}

}  // namespace ethx
