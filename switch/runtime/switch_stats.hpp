// The switch's counters as JSON (for `ethx bench` and `ethx status`).
#pragma once

#include <nlohmann/json.hpp>

#include "switch/core/switch_core.hpp"

namespace ethx {

nlohmann::json switch_stats_json(const SwitchCore& core);

}  // namespace ethx
