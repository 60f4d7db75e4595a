// `ethx bench`: starts a fabric, runs the load/store microbenchmarks with data verification,
// stops it and reports (a table, or one JSON object on stdout with --json).
#pragma once

#include <cstddef>
#include <string>

namespace ethx {

struct BenchOptions {
  std::size_t gpus = 0;  // 0: from the topology
  std::string transport = "shm";
  std::string config_path;  // empty: the embedded default
  // "load-store" (default) or "roce": the RoCEv2 engine suite (roce_bench_command.hpp).
  std::string engine = "load-store";
  bool json = false;
  bool quick = false;  // smaller runs, for CI smoke tests and first impressions
  bool quiet = false;  // no progress on stderr
  // Non-empty: run on the fabric `ethx up --name <fabric>` started instead of starting one.
  std::string fabric;
  // Non-zero: the GPUs are ethx-gpu devices in this many QEMU VMs, and the benchmarks run in
  // the guests (vm_bench.hpp).
  // --vms [N]: the benchmarks run inside VMs: those of the running fabric (--fabric, default
  // "default") when it has VMs, else N (default 2) temporary ones.
  bool with_vms = false;
  std::size_t vms = 0;
  std::size_t gpus_per_vm = 4;
};

// Returns the process exit status: non-zero on mismatches or unexpected errors.
int run_bench(const BenchOptions& options);

}  // namespace ethx
