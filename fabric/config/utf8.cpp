#include "fabric/config/utf8.hpp"

#include <cstdint>

namespace ethx {

std::size_t find_invalid_utf8(std::string_view text) {
  std::size_t at = 0;
  while (at < text.size()) {
    const auto lead = static_cast<std::uint8_t>(text[at]);
    std::size_t length = 0;
    // Unicode Table 3-7 narrows the second byte's range after some leads.
    std::uint8_t second_min = 0x80;
    std::uint8_t second_max = 0xBF;
    if (lead <= 0x7F) {
      ++at;
      continue;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) second_min = 0xA0;  // overlong
      if (lead == 0xED) second_max = 0x9F;  // surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) second_min = 0x90;  // overlong
      if (lead == 0xF4) second_max = 0x8F;  // above U+10FFFF
    } else {
      return at;
    }
    if (text.size() - at < length) return at;
    for (std::size_t i = 1; i < length; ++i) {
      const auto byte = static_cast<std::uint8_t>(text[at + i]);
      const std::uint8_t min = i == 1 ? second_min : 0x80;
      const std::uint8_t max = i == 1 ? second_max : 0xBF;
      if (byte < min || byte > max) return at;
    }
    at += length;
  }
  return std::string_view::npos;
}

}  // namespace ethx
