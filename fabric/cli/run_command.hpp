// `ethx run` and `ethx guest`: commands in the VMs of a running fabric, through ethx-agent
// (fabric/vm/agent_client.hpp; docs/programs.md). Neither takes the fabric's run-directory
// lock: each command takes an agent port of its own, so several run at once, next to an
// `ethx bench --vms`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ethx {

struct RunOptions {
  std::string name = "default";
  std::optional<std::size_t> vm;  // --vm K; neither this nor all_vms: VM 0
  bool all_vms = false;
  bool per_gpu = false;           // one copy per GPU of each VM, ETHX_GPU_* set
  std::int64_t timeout_s = 0;     // 0: none
  std::vector<std::string> env;   // NAME=VALUE
  std::vector<std::string> argv;  // PROGRAM ARGS...
  bool help = false;
  // For launchers built on it (`ethx oshrun`), not options of `ethx run`:
  std::size_t max_copies = 0;      // run only the first N copies (0: all)
  bool stop_on_failure = false;    // a copy that fails stops the others, named
  bool name_by_gpu = false;        // copies named "pe G" (G its GPU) instead of "vm K gpu G"
  std::string label = "ethx run";  // what messages start with
};

// `ethx run` arguments (after "run"): options, then PROGRAM [ARGS...], after `--` or from the
// first word that is not an option. Throws boost::program_options::error naming the option
// (a bad --env, --vm with --all-vms, no program).
RunOptions parse_run_options(const std::vector<std::string>& args);
// Where a launcher's options end and the program begins: at `--` (has_separator set), or at
// the first word that is neither an option nor the value of one that takes_value.
std::size_t program_start(const std::vector<std::string>& args,
                          const std::function<bool(const std::string&)>& takes_value,
                          bool& has_separator);
// The usage line and the options, for --help.
std::string run_help();

// Runs the copies, streams their output (prefixed `[vm K]` / `[vm K gpu G]` when several run),
// forwards stdin to the first copy. Exit status: the first non-zero one of a copy (128 + n
// after signal n; 127: program not found), 124 after --timeout-s, 130 after Ctrl-C, 1 when a
// process of the fabric (a VM) exits, 2 bad arguments, 3 no such fabric.
int run_in_vms(const RunOptions& options);

struct GuestOptions {
  std::string name = "default";
  std::size_t vm = 0;
  std::vector<std::string> arguments;  // for ethx-guest in that VM
  std::int64_t timeout_ms = 120'000;
};
// `ethx guest`: runs one `ethx-guest` command in a VM, prints its output, returns its exit
// status.
int run_guest(const GuestOptions& options);

}  // namespace ethx
