// What a guest prints on its consoles: the blocks of its command agent (qemu-device/guest/init
// writes ETHX-BEGIN, the command's output, then ETHX-END <exit status>) and the JSON results
// the guest tools print.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ethx {

// One ETHX-BEGIN ... ETHX-END <status> block of a guest console.
struct GuestBlock {
  std::string output;
  int exit_status = -1;
};
std::vector<GuestBlock> parse_guest_console(const std::string& console);
// The JSON object a guest command printed (its last line that parses as one); null if none.
nlohmann::json guest_json(const std::string& output);

}  // namespace ethx
