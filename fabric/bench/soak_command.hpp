// `ethx soak`: the reliability soak. Runs the verified random mix (soak_workload.hpp) on every
// GPU at once, three times on fresh fabrics of the same shape:
//   1. no faults, reliability off        (the bare fabric's throughput and frame count)
//   2. no faults, the chosen mode        (what sequencing and ACKs cost when nothing is lost)
//   3. injected loss and corruption      (what recovery costs; must lose nothing)
// and reports verified operations, mismatches, hung (timed-out) operations, retransmissions,
// header bytes per operation and the throughput ratios. docs/reliability.md.
#pragma once

#include <cstdint>
#include <string>

namespace ethx {

struct SoakOptions {
  std::size_t gpus = 0;  // 0: from the topology
  std::string transport = "shm";
  std::string config_path;
  // Non-empty: one run on the fabric `ethx up --name <fabric>` started (its config, its faults).
  std::string fabric;
  // Total over all GPUs, for the faulted run: about 77 % end up verified (stores overwritten
  // before anyone read them are not counted), so 13 M gives the 10^7 verified the issue asks.
  std::uint64_t ops = 13'000'000;
  std::uint64_t baseline_ops = 0;  // total for runs 1 and 2; 0: min(ops, 2'000'000)
  double loss_rate = 0.01;         // per frame, on every switch port
  double corrupt_rate = 0.001;
  double reorder_rate = 0.0;
  std::string reliability = "go-back-n";
  // [link] retry for every run ("none" | "llr"); empty: as the config has it.
  std::string link_retry;
  // [link] flow_control for every run ("none" | "cbfc" | "pfc"); empty: as the config has it.
  std::string flow_control;
  // Where the faulted run's faults act on each GPU's hop: "rx" (what the switch port receives,
  // GPU -> switch), "tx" (what it sends) or "both".
  std::string fault_direction = "rx";
  std::uint64_t seed = 1;
  bool skip_baselines = false;
  bool json = false;
  bool quiet = false;
};

// Exit status: 0 when the faulted run verified everything with no mismatch, hang or error.
int run_soak(const SoakOptions& options);

}  // namespace ethx
