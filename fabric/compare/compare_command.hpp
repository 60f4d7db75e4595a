// `ethx compare`: on one fabric (same switch, transport and GPUs) runs the load/store sweep
// and the RoCEv2 engine suite, adds the Soft-RoCE section through its hook, and writes one
// report directory: report.md, systems.json, the gnuplot plots and their data. docs/compare.md.
#pragma once

#include "fabric/compare/compare_options.hpp"

namespace ethx {

// Returns the exit status: 0, 1 on mismatches or errors in any measured system, 2 on bad
// options. Prints the report's path at the end.
int run_compare(const CompareOptions& options);

}  // namespace ethx
