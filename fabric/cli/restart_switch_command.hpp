// `ethx restart-switch`: replaces the switch process of a running fabric (`ethx up`) while its
// nodes (and VMs) keep running, as a switch reboot would (docs/operations.md). The new switch
// has the same command line; on shm it attaches to the port rings the nodes still use, on the
// socket transports it opens its veth ends again. Frames in flight meanwhile are lost; run-time
// fault changes are too (the new switch starts from the config).
#pragma once

#include <string>

namespace ethx {

struct RestartSwitchOptions {
  std::string name = "default";
  bool quiet = false;
};
// Exit status: 0 the new switch forwards, 1 it failed, 3 no such fabric is up.
int run_restart_switch(const RestartSwitchOptions& options);

}  // namespace ethx
