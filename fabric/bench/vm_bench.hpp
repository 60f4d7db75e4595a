// `ethx bench --vms N`: boots N VMs whose ethx-gpu devices are the fabric's GPUs, runs the
// guest tools' microbenchmarks inside them (ethx.run=... on the kernel command line), collects
// the JSON each guest prints on its serial console, and reports it with the switch's counters.
// docs/vms.md.
#pragma once

#include "fabric/bench/bench_coordinator.hpp"
#include "fabric/vm/guest_console.hpp"

namespace ethx {

int run_vm_bench(const BenchOptions& options);

}  // namespace ethx
