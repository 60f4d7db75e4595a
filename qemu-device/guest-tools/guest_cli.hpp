// The ethx-guest command line: `ethx-guest COMMAND [--option value]...`.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ethx::guest {

// A command line that cannot run; main prints it with the usage and exits with 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct GuestCommand {
  std::string name;  // list, status, peek, poke, help
  // Which GPU: by its fabric id (GPU_ID register) or its PCI address; neither means all
  // (list, status) or the only one (peek, poke).
  std::optional<std::uint32_t> gpu_id;
  std::optional<std::string> bdf;
  // An access: BAR index and byte offset in it, so later BARs need no new command.
  unsigned bar = 0;
  std::optional<std::uint64_t> offset;
  unsigned width = 4;
  std::optional<std::uint64_t> value;
};

extern const char* const kUsage;

// Numbers take C syntax (42, 0x2a); throws UsageError naming the offending argument.
GuestCommand parse_command_line(const std::vector<std::string>& args);

}  // namespace ethx::guest
