// UTF-8 well-formedness, for text that must be UTF-8 before anything else reads it.
#pragma once

#include <cstddef>
#include <string_view>

namespace ethx {

// Offset of the first byte that does not belong to a well-formed UTF-8 sequence (Unicode
// Table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF), or npos.
std::size_t find_invalid_utf8(std::string_view text);

}  // namespace ethx
