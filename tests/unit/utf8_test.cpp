#include "fabric/config/utf8.hpp"

#include <gtest/gtest.h>

#include <string_view>

namespace ethx {
namespace {

constexpr auto npos = std::string_view::npos;

TEST(Utf8Test, AcceptsAsciiAndEveryWellFormedSequenceLength) {
  EXPECT_EQ(find_invalid_utf8(""), npos);
  EXPECT_EQ(find_invalid_utf8("gpus = 8 # plain"), npos);
  EXPECT_EQ(find_invalid_utf8("2\xC3\x97x"), npos);        // U+00D7
  EXPECT_EQ(find_invalid_utf8("\xE2\x86\x92"), npos);      // U+2192
  EXPECT_EQ(find_invalid_utf8("\xF0\x9F\x98\x80"), npos);  // U+1F600
  EXPECT_EQ(find_invalid_utf8("\xF4\x8F\xBF\xBF"), npos);  // U+10FFFF, the last
  EXPECT_EQ(find_invalid_utf8(std::string_view("a\0b", 3)), npos);
}

TEST(Utf8Test, ReportsTheOffsetOfTheFirstIllFormedSequence) {
  EXPECT_EQ(find_invalid_utf8("ab\xFF"), 2u);            // never a UTF-8 byte
  EXPECT_EQ(find_invalid_utf8("a\x80"), 1u);             // lone continuation byte
  EXPECT_EQ(find_invalid_utf8("\xC0\x80"), 0u);          // overlong NUL
  EXPECT_EQ(find_invalid_utf8("x\xE0\x80\x80"), 1u);     // overlong 3-byte
  EXPECT_EQ(find_invalid_utf8("\xED\xA0\x80"), 0u);      // surrogate U+D800
  EXPECT_EQ(find_invalid_utf8("\xF0\x80\x80\x80"), 0u);  // overlong 4-byte
  EXPECT_EQ(find_invalid_utf8("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(find_invalid_utf8("ok\xE2\x86"), 2u);        // cut short by the end
  EXPECT_EQ(find_invalid_utf8("\xC3\x97\xC3("), 2u);     // bad continuation
}

}  // namespace
}  // namespace ethx
