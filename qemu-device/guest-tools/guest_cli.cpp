#include "qemu-device/guest-tools/guest_cli.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <map>

#include "qemu-device/guest-tools/mmio_bar.hpp"

namespace ethx::guest {

const char* const kUsage =
    "usage: ethx-guest COMMAND [options]   (JSON on stdout)\n"
    "  list                                   every ethx GPU: BDF, gpu id, ident, version, "
    "status\n"
    "  status [--gpu ID | --bdf BDF]          all control registers\n"
    "  peek   [--gpu ID | --bdf BDF] --bar N --offset X [--width 1|2|4|8]\n"
    "  poke   [--gpu ID | --bdf BDF] --bar N --offset X [--width 1|2|4|8] --value V\n"
    "  load   [--gpu ID] (--addr A | --target K --offset O) [--width 1|2|4|8]\n"
    "  store  [--gpu ID] (--addr A | --target K --offset O) [--width 1|2|4|8] --value V\n"
    "  atomic [--gpu ID] --op fetch-add|swap|cas (--addr A | --target K --offset O)\n"
    "         [--width 4|8] --operand X [--compare C]\n"
    "  copy   [--gpu ID] --src A --dst B --bytes N [--timeout S]\n"
    "  flush  [--gpu ID]                      wait until the GPU's posted stores are performed\n"
    "  bench  [--gpu ID] [--peer K] [--quick] [--latency-only]\n"
    "  alltoall --bytes-per-peer N --salt S [--gpus-total G] [--timeout S]\n"
    "--gpu selects by fabric GPU id (GPU_ID register); the single-GPU commands need it only\n"
    "when there are several ethx GPUs. Window addresses (BAR 4): GPU K's memory starts at\n"
    "K x APERTURE_MIB MiB. Numbers: decimal or 0x hex. Width defaults to 4 bytes for peek/poke,\n"
    "8 otherwise.\n";

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

// The options each command accepts.
const std::map<std::string, std::vector<std::string>>& command_options() {
  static const std::map<std::string, std::vector<std::string>> options = {
      {"help", {}},
      {"list", {"--gpu", "--bdf"}},
      {"status", {"--gpu", "--bdf"}},
      {"peek", {"--gpu", "--bdf", "--bar", "--offset", "--width"}},
      {"poke", {"--gpu", "--bdf", "--bar", "--offset", "--width", "--value"}},
      {"load", {"--gpu", "--bdf", "--addr", "--target", "--offset", "--width"}},
      {"store", {"--gpu", "--bdf", "--addr", "--target", "--offset", "--width", "--value"}},
      {"atomic",
       {"--gpu", "--bdf", "--op", "--addr", "--target", "--offset", "--width", "--operand",
        "--compare"}},
      {"copy", {"--gpu", "--bdf", "--src", "--dst", "--bytes", "--timeout"}},
      {"flush", {"--gpu", "--bdf"}},
      {"bench", {"--gpu", "--bdf", "--peer", "--quick", "--latency-only"}},
      {"alltoall", {"--bytes-per-peer", "--salt", "--gpus-total", "--timeout"}},
  };
  return options;
}

void check_fits(const char* option, std::uint64_t value, unsigned width) {
  if (width < 8 && value >> (8 * width) != 0) {
    throw UsageError(std::string(option) + " does not fit in " + std::to_string(width) + " bytes");
  }
}

constexpr auto kU32 = std::numeric_limits<std::uint32_t>::max();
constexpr auto kU64 = std::numeric_limits<std::uint64_t>::max();

// The options that take a 64-bit number, and the GuestCommand field each sets.
const std::map<std::string, std::optional<std::uint64_t> GuestCommand::*>& u64_options() {
  static const std::map<std::string, std::optional<std::uint64_t> GuestCommand::*> options = {
      {"--offset", &GuestCommand::offset},
      {"--value", &GuestCommand::value},
      {"--addr", &GuestCommand::addr},
      {"--operand", &GuestCommand::operand},
      {"--compare", &GuestCommand::compare},
      {"--src", &GuestCommand::src},
      {"--dst", &GuestCommand::dst},
      {"--bytes", &GuestCommand::bytes},
      {"--bytes-per-peer", &GuestCommand::bytes_per_peer},
      {"--salt", &GuestCommand::salt},
  };
  return options;
}

// The options that take a 32-bit number (GPU ids, counts, seconds), with their largest value.
struct U32Option {
  std::optional<std::uint32_t> GuestCommand::*field;
  std::uint64_t max;
};
const std::map<std::string, U32Option>& u32_options() {
  static const std::map<std::string, U32Option> options = {
      {"--gpu", {&GuestCommand::gpu_id, kU32}},
      {"--target", {&GuestCommand::target, kU32}},
      {"--peer", {&GuestCommand::peer, kU32}},
      {"--gpus-total", {&GuestCommand::gpus_total, kU32}},
      {"--timeout", {&GuestCommand::timeout_s, 86400}},
  };
  return options;
}

// Sets the field of one option that takes a value (the command allows it).
void apply_option(GuestCommand& command, const std::string& option, const std::string& text) {
  if (const auto u64 = u64_options().find(option); u64 != u64_options().end()) {
    command.*(u64->second) = parse_number(option, text, kU64);
  } else if (const auto u32 = u32_options().find(option); u32 != u32_options().end()) {
    command.*(u32->second.field) =
        static_cast<std::uint32_t>(parse_number(option, text, u32->second.max));
  } else if (option == "--bdf") {
    command.bdf = text;
  } else if (option == "--bar") {
    command.bar = static_cast<unsigned>(parse_number(option, text, 5));
  } else if (option == "--width") {
    command.width = static_cast<unsigned>(parse_number(option, text, 8));
    if (!valid_width(command.width)) throw UsageError("--width must be 1, 2, 4 or 8");
  } else if (option == "--op") {
    if (text != "fetch-add" && text != "swap" && text != "cas") {
      throw UsageError("--op must be fetch-add, swap or cas, not '" + text + "'");
    }
    command.op = text;
  }
}

// The options as given, each checked against the command's list; no cross-option checks yet.
void apply_options(GuestCommand& command, const std::vector<std::string>& args,
                   const std::vector<std::string>& allowed) {
  for (std::size_t i = 1; i < args.size(); i += 2) {
    const std::string& option = args[i];
    if (std::find(allowed.begin(), allowed.end(), option) == allowed.end()) {
      throw UsageError("unknown option '" + option + "' for " + command.name);
    }
    if (option == "--quick" || option == "--latency-only") {  // the flags: no value
      (option == "--quick" ? command.quick : command.latency_only) = true;
      --i;
      continue;
    }
    if (i + 1 >= args.size()) throw UsageError(option + " needs a value");
    apply_option(command, option, args[i + 1]);
  }
}

// peek/poke (a BAR offset) and load/store/atomic (a window address): where, and the width.
void check_access(GuestCommand& command) {
  const std::string& name = command.name;
  const bool bar_access = name == "peek" || name == "poke";
  const bool window_access = name == "load" || name == "store" || name == "atomic";
  if (command.width == 0) command.width = bar_access ? 4 : 8;
  if (bar_access && !command.offset) throw UsageError(name + " needs --offset");
  if (window_access) {
    if (command.addr && (command.target || command.offset)) {
      throw UsageError("give --addr or --target with --offset, not both");
    }
    if (!command.addr && !(command.target && command.offset)) {
      throw UsageError(name + " needs --addr A or --target K --offset O");
    }
  }
  if ((name == "poke" || name == "store") && !command.value) {
    throw UsageError(name + " needs --value");
  }
  if (command.value) check_fits("--value", *command.value, command.width);
}

void check_atomic(const GuestCommand& command) {
  if (command.op.empty()) throw UsageError("atomic needs --op fetch-add|swap|cas");
  if (command.width != 4 && command.width != 8) {
    throw UsageError("atomic --width must be 4 or 8");
  }
  if (!command.operand) throw UsageError("atomic needs --operand");
  check_fits("--operand", *command.operand, command.width);
  if (command.op == "cas" && !command.compare) throw UsageError("atomic cas needs --compare");
  if (command.op != "cas" && command.compare) {
    throw UsageError("--compare is only for --op cas");
  }
  if (command.compare) check_fits("--compare", *command.compare, command.width);
}

void check_copy(const GuestCommand& command) {
  if (!command.src || !command.dst || !command.bytes) {
    throw UsageError("copy needs --src, --dst and --bytes");
  }
  if (*command.bytes == 0) throw UsageError("--bytes must not be 0");
}

void check_alltoall(const GuestCommand& command) {
  if (!command.bytes_per_peer || !command.salt) {
    throw UsageError("alltoall needs --bytes-per-peer and --salt");
  }
  if (*command.bytes_per_peer == 0 || *command.bytes_per_peer % 8 != 0) {
    throw UsageError("--bytes-per-peer must be a non-zero multiple of 8");
  }
  if (command.gpus_total && *command.gpus_total == 0) {
    throw UsageError("--gpus-total must not be 0");
  }
}

}  // namespace

GuestCommand parse_command_line(const std::vector<std::string>& args) {
  if (args.empty()) throw UsageError("no command given");
  GuestCommand command;
  command.name = args[0];
  if (command.name == "--help" || command.name == "-h") command.name = "help";
  const auto known = command_options().find(command.name);
  if (known == command_options().end()) {
    throw UsageError("unknown command '" + command.name + "'");
  }
  apply_options(command, args, known->second);
  check_access(command);
  if (command.name == "atomic") check_atomic(command);
  if (command.name == "copy") check_copy(command);
  if (command.name == "alltoall") check_alltoall(command);
  if (command.gpu_id && command.bdf) throw UsageError("give --gpu or --bdf, not both");
  return command;
}

}  // namespace ethx::guest
