#include "fabric/vm/guest_console.hpp"

#include <cstdlib>
#include <sstream>

namespace ethx {

using nlohmann::json;

std::vector<GuestBlock> parse_guest_console(const std::string& console) {
  std::vector<GuestBlock> blocks;
  std::istringstream lines(console);
  std::string line;
  bool inside = false;
  GuestBlock block;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line == "ETHX-BEGIN") {
      inside = true;
      block = GuestBlock{};
    } else if (inside && line.rfind("ETHX-END ", 0) == 0) {
      block.exit_status = std::atoi(line.c_str() + 9);
      blocks.push_back(block);
      inside = false;
    } else if (inside) {
      block.output += line + "\n";
    }
  }
  return blocks;
}

json guest_json(const std::string& output) {
  std::istringstream lines(output);
  std::string line;
  json found;
  while (std::getline(lines, line)) {
    if (line.empty() || line.front() != '{') continue;
    json value = json::parse(line, nullptr, false);
    if (!value.is_discarded()) found = value;
  }
  return found;
}

}  // namespace ethx
