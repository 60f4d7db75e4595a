#include "qemu-device/guest-tools/guest_cli.hpp"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "qemu-device/guest-tools/mmio_bar.hpp"

namespace ethx::guest {

const char* const kUsage =
    "usage: ethx-guest COMMAND [options]   (JSON on stdout)\n"
    "  list                                   every ethx GPU: BDF, gpu id, ident, version, "
    "status\n"
    "  status [--gpu ID | --bdf BDF]          all control registers\n"
    "  peek   [--gpu ID | --bdf BDF] --bar N --offset X [--width 1|2|4|8]\n"
    "  poke   [--gpu ID | --bdf BDF] --bar N --offset X [--width 1|2|4|8] --value V\n"
    "--gpu selects by fabric GPU id (GPU_ID register); peek and poke need it only when there\n"
    "are several ethx GPUs. Numbers: decimal or 0x hex. Width defaults to 4 bytes.\n";

namespace {

std::uint64_t parse_number(const std::string& option, const std::string& text, std::uint64_t max) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 0);
  if (text.empty() || text[0] == '-' || end == text.c_str() || *end != '\0' || errno == ERANGE ||
      value > max) {
    throw UsageError(option + " needs a number up to " + std::to_string(max) + ", not '" + text +
                     "'");
  }
  return value;
}

}  // namespace

GuestCommand parse_command_line(const std::vector<std::string>& args) {
  if (args.empty()) throw UsageError("no command given");
  GuestCommand command;
  command.name = args[0];
  if (command.name == "--help" || command.name == "-h") command.name = "help";
  if (command.name != "list" && command.name != "status" && command.name != "peek" &&
      command.name != "poke" && command.name != "help") {
    throw UsageError("unknown command '" + command.name + "'");
  }
  constexpr auto kU32 = std::numeric_limits<std::uint32_t>::max();
  constexpr auto kU64 = std::numeric_limits<std::uint64_t>::max();
  for (std::size_t i = 1; i < args.size(); i += 2) {
    const std::string& option = args[i];
    if (i + 1 >= args.size()) throw UsageError(option + " needs a value");
    const std::string& text = args[i + 1];
    if (option == "--gpu") {
      command.gpu_id = static_cast<std::uint32_t>(parse_number(option, text, kU32));
    } else if (option == "--bdf") {
      command.bdf = text;
    } else if (option == "--bar") {
      command.bar = static_cast<unsigned>(parse_number(option, text, 5));
    } else if (option == "--offset") {
      command.offset = parse_number(option, text, kU64);
    } else if (option == "--width") {
      command.width = static_cast<unsigned>(parse_number(option, text, 8));
      if (!valid_width(command.width)) throw UsageError("--width must be 1, 2, 4 or 8");
    } else if (option == "--value") {
      command.value = parse_number(option, text, kU64);
    } else {
      throw UsageError("unknown option '" + option + "' for " + command.name);
    }
  }
  const bool access = command.name == "peek" || command.name == "poke";
  if (access && !command.offset) throw UsageError(command.name + " needs --offset");
  if (command.name == "poke" && !command.value) throw UsageError("poke needs --value");
  if (command.name != "poke" && command.value) {
    throw UsageError("--value is only for poke");
  }
  if (command.value && command.width < 8 && *command.value >> (8 * command.width) != 0) {
    throw UsageError("--value does not fit in " + std::to_string(command.width) + " bytes");
  }
  if (command.gpu_id && command.bdf) throw UsageError("give --gpu or --bdf, not both");
  return command;
}

}  // namespace ethx::guest
