// The ethx-switch command line of a fabric, shared by the launcher (`ethx bench`, `ethx up`) and
// `ethx restart-switch`, so a restarted switch runs exactly as the first one did.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ethx {

struct SwitchLaunch {
  std::string fabric;       // instance name ("up-<name>")
  std::string config_path;  // empty: the embedded default
  std::size_t gpus = 0;
  std::string transport = "shm";
  std::string netns_tag;  // socket transports
  std::string stats_path;
  // `ethx up`: live counters, no PDEATHSIG, and the shm port region outlives the process so a
  // restarted switch attaches to the rings of the nodes that keep running.
  bool detached = false;
  int ready_fd = 3;  // the descriptor the readiness pipe has in the child
  // Unbound AF_PACKET ports after the GPUs' (guest NICs: taps, the host RDMA port), by
  // interface name in the switch namespace.
  std::vector<std::string> extra_ports;
};

// argv for ethx-switch, starting with its path next to this executable.
std::vector<std::string> switch_arguments(const SwitchLaunch& launch);

}  // namespace ethx
