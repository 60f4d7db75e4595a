// `ethx bench --engine roce`: starts a fabric, runs the RoCEv2 suite (roce_suite.hpp) on its
// nodes over the same switch and transport the load/store suite uses, stops it and reports
// (a table, or one JSON object with --json). Non-zero exit on any mismatch or error.
#pragma once

#include "fabric/bench/bench_coordinator.hpp"

namespace ethx {

int run_roce_bench(const BenchOptions& options);

}  // namespace ethx
