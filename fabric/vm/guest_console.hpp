// What a guest command printed (GuestAgent, guest_agent.hpp) and the JSON results the guest
// tools print in it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ethx {

// One command's output (stdout and stderr together) and its exit status.
struct GuestBlock {
  std::string output;
  int exit_status = -1;
};
// The JSON object a guest command printed (its last line that parses as one); null if none.
nlohmann::json guest_json(const std::string& output);

}  // namespace ethx
