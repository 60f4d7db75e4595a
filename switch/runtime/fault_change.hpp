// One change to a switch port's faults, as `ethx fault` asks for it and ethx-switch applies it:
// only the fields given change, `clear` first resets the port to no faults and link up. Carried
// as JSON through the control region (switch_command_box.hpp); checked on both sides, so a bad
// value is refused by the command with the field's name before it reaches the switch.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "switch/core/switch_core.hpp"

namespace ethx {

struct FaultChange {
  PortId port = 0;
  bool clear = false;
  std::optional<double> drop_rate;
  std::optional<double> corrupt_rate;
  std::optional<double> reorder_rate;
  std::optional<double> delay_spike_rate;
  std::optional<TimeNs> delay_spike_ns;
  std::optional<bool> link_down;

  // True if the change would do nothing (no field and no clear).
  bool empty() const;
  // Throws std::invalid_argument naming the field: a port outside the switch, a rate outside
  // [0, 1], a delay spike longer than kMaxDelaySpikeNs.
  void validate(std::size_t port_count) const;
  // `current` with this change applied.
  PortFaults applied_to(const PortFaults& current) const;

  nlohmann::json to_json() const;
  // Throws std::invalid_argument naming the field for a missing port, an unknown key or a value
  // of the wrong type.
  static FaultChange from_json(const nlohmann::json& value);
};

// What a port injects, as shown by `ethx status` and answered by ethx-switch: the rates, the
// spike length in microseconds, and "up"/"down".
nlohmann::json port_faults_json(const PortFaults& faults, bool link_up);
// A rate or length as people write it: "0.5", "1", "1e-05".
std::string format_number(double value);
// One line for people, e.g. "drop 0.5, delay 0.01 x 200 us, link down"; "none" if clean.
std::string describe_port_faults(const nlohmann::json& faults);

}  // namespace ethx
