// Inputs the fuzz targets (tests/fuzz/, docs/fuzzing.md) found to crash, kept so the bugs
// stay fixed. Each test names the target that found it.
#include <gtest/gtest.h>

#include <string>

#include "fabric/config/topology_config.hpp"

namespace ethx {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_topology(text, "fuzz.toml");
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

// fuzz_topology_config: toml11 3.7.1 reads past the end of its buffer (ASan
// heap-buffer-overflow in toml::detail::location::reset) when it reports invalid UTF-8 inside
// a literal string, key or value. parse_topology now refuses invalid UTF-8 itself, before
// toml11 sees the text, and says where.
TEST(FuzzRegressionTest, InvalidUtf8InALiteralStringIsAConfigErrorWithItsLine) {
  EXPECT_EQ(error_of("[fabric]\ndefault_rights = 'r\xFF'\n"),
            "fuzz.toml: not valid TOML: invalid UTF-8 at line 2");
  EXPECT_EQ(error_of("'\xFF' = 1\n"), "fuzz.toml: not valid TOML: invalid UTF-8 at line 1");
  EXPECT_EQ(error_of("[fabric]\n\n[[window]]\nname = '''w\xC0\x80'''\n"),
            "fuzz.toml: not valid TOML: invalid UTF-8 at line 4");
}

TEST(FuzzRegressionTest, WellFormedUtf8StillParses) {
  const TopologyConfig config = parse_topology(
      "# 2\xC3\x97x ns\n[fabric]\ngpus = 2\n[[window]]\nname = 'f\xC3\xBCr gpu1'\n"
      "offset = 0\nsize = 4096\ngpu = 1\n",
      "fuzz.toml");
  ASSERT_EQ(config.custom_windows.size(), 1u);
  EXPECT_EQ(config.custom_windows[0].name, "f\xC3\xBCr gpu1");
}

}  // namespace
}  // namespace ethx
