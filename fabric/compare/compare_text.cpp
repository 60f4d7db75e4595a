#include "fabric/compare/compare_text.hpp"

#include <cmath>
#include <cstdio>

namespace ethx {

using nlohmann::json;

std::string fixed_decimals(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string sig3(double value) {
  const double magnitude = std::abs(value);
  if (magnitude >= 100) return fixed_decimals(value, 0);
  if (magnitude >= 10) return fixed_decimals(value, 1);
  if (magnitude >= 1) return fixed_decimals(value, 2);
  if (magnitude >= 0.1) return fixed_decimals(value, 3);
  return fixed_decimals(value, 4);
}

std::string size_label(std::uint64_t bytes) {
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes / 1024) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string percent(double fraction) {
  return fixed_decimals(100.0 * fraction, 1) + " %";
}

std::string ratio_words(const std::string& who, double ours, double theirs, const char* less,
                        const char* more) {
  if (ours <= 0 || theirs <= 0) return "not comparable";
  const double ratio = ours < theirs ? theirs / ours : ours / theirs;
  return who + " " + sig3(ratio) + "× " + (ours < theirs ? less : more);
}

bool system_available(const json& system) {
  return system.value("available", false);
}

std::string system_name(const json& system) {
  return system.value("system", std::string("unnamed"));
}

const json* find_available_system(const std::vector<json>& systems, const std::string& name) {
  for (const json& system : systems) {
    if (system_name(system) == name && system_available(system)) return &system;
  }
  return nullptr;
}

}  // namespace ethx
