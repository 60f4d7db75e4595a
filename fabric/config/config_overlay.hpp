// A topology file with a few fields replaced, written for the processes of one run (the
// nodes, the switch and QEMU all read the same file): `ethx soak` turns faults and the
// reliability mode on this way without asking the user to edit their config.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "switch/core/switch_core.hpp"

namespace ethx {

struct ConfigOverlay {
  std::optional<std::string> reliability_mode;                       // [reliability] mode
  std::optional<std::vector<std::pair<PortId, PortFaults>>> faults;  // replaces every [[fault]]
  std::optional<std::uint64_t> fault_seed;                           // [switch] fault_seed
  std::string fault_direction =
      "rx";  // each of `faults`: "rx", "tx" or "both" ([[fault]] direction)
  std::optional<std::string> link_retry;    // [link] retry
  std::optional<std::string> flow_control;  // [link] flow_control
};

// Reads `base_path` (the embedded default when empty), applies `overlay`, writes the result to
// `out_path` and checks that it loads. Throws ConfigError naming the field on a bad base.
void write_config_overlay(const std::string& base_path, const ConfigOverlay& overlay,
                          const std::string& out_path);

// write_config_overlay into a file of its own under the temporary directory, removed when
// this object goes away (the run's processes have exited by then).
class ScopedConfigOverlay {
 public:
  ScopedConfigOverlay(const std::string& base_path, const ConfigOverlay& overlay,
                      const std::string& purpose);
  ~ScopedConfigOverlay();
  ScopedConfigOverlay(const ScopedConfigOverlay&) = delete;
  ScopedConfigOverlay& operator=(const ScopedConfigOverlay&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ethx
