#include "packet-engine/mac_addr.hpp"

#include <cstdio>

namespace ethx {

std::string MacAddr::to_string() const {
  char text[18];
  std::snprintf(text, sizeof text, "%02x:%02x:%02x:%02x:%02x:%02x", octets[0], octets[1], octets[2],
                octets[3], octets[4], octets[5]);
  return text;
}

std::optional<MacAddr> MacAddr::parse(std::string_view text) {
  if (text.size() != 17) return std::nullopt;
  MacAddr mac;
  for (std::size_t i = 0; i < 6; ++i) {
    unsigned value = 0;
    for (std::size_t j = 0; j < 2; ++j) {
      const char c = text[i * 3 + j];
      unsigned digit;
      if (c >= '0' && c <= '9') {
        digit = static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<unsigned>(c - 'A' + 10);
      } else {
        return std::nullopt;
      }
      value = value * 16 + digit;
    }
    if (i < 5 && text[i * 3 + 2] != ':') return std::nullopt;
    mac.octets[i] = static_cast<std::uint8_t>(value);
  }
  return mac;
}

}  // namespace ethx
