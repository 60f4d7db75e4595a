// `ethx status`: what runs of a fabric `ethx up` started, the switch's per-port counters and
// faults, and each GPU's view of its peers (which it has marked down).
#pragma once

#include <string>

namespace ethx {

struct StatusOptions {
  std::string name = "default";
  bool json = false;
};
// Exit status: 0 when everything recorded runs, 1 when something has died, 3 when no such
// fabric is up.
int run_status(const StatusOptions& options);

}  // namespace ethx
