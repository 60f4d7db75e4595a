// `ethx fault`: changes the faults one switch port of a running fabric (`ethx up`) injects,
// through the switch's command mailbox, and waits until the switch confirms
// (docs/operations.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ethx {

struct FaultOptions {
  std::string name = "default";
  std::optional<long long> port;  // required; signed so that a negative value gets a clear error
  bool clear = false;             // reset the port to no faults and link up, then apply the rest
  std::optional<double> drop;
  std::optional<double> corrupt;
  std::optional<double> reorder;
  std::optional<double> delay_spike_rate;
  std::optional<double> delay_spike_us;
  std::optional<std::string> link;  // "up" | "down"
  bool json = false;
  std::int64_t timeout_ms = 5000;
};
// Exit status: 0 applied, 1 the switch did not answer (or is not running), 2 bad input (named
// on stderr; also what the switch refuses), 3 no such fabric is up.
int run_fault(const FaultOptions& options);

}  // namespace ethx
