#include "address-map/fabric_types.hpp"

namespace ethx {

bool parse_rights(const std::string& text, Rights& out) {
  unsigned bits = kRightNone;
  for (const char c : text) {
    switch (c) {
      case 'r':
        bits |= kRightRead;
        break;
      case 'w':
        bits |= kRightWrite;
        break;
      case 'a':
        bits |= kRightAtomic;
        break;
      case '-':  // a placeholder, so the canonical "r-a" form parses back
        break;
      default:
        return false;
    }
  }
  out = static_cast<Rights>(bits);
  return true;
}

std::string rights_to_string(Rights rights) {
  std::string text = "---";
  if ((rights & kRightRead) != 0) text[0] = 'r';
  if ((rights & kRightWrite) != 0) text[1] = 'w';
  if ((rights & kRightAtomic) != 0) text[2] = 'a';
  return text;
}

}  // namespace ethx
