// `ethx bench --vms N`: boots N VMs whose ethx-gpu devices are the fabric's GPUs, runs the
// guest tools' microbenchmarks inside them (ethx.run=... on the kernel command line), collects
// the JSON each guest prints on its serial console, and reports it with the switch's counters.
// docs/vms.md.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fabric/bench_coordinator.hpp"

namespace ethx {

int run_vm_bench(const BenchOptions& options);

// One ETHX-BEGIN ... ETHX-END <status> block of a guest console.
struct GuestBlock {
  std::string output;
  int exit_status = -1;
};
std::vector<GuestBlock> parse_guest_console(const std::string& console);
// The JSON object a guest command printed (its last line that parses as one); null if none.
nlohmann::json guest_json(const std::string& output);

}  // namespace ethx
