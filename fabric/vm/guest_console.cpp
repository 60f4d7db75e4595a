#include "fabric/vm/guest_console.hpp"

#include <sstream>

namespace ethx {

using nlohmann::json;

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
