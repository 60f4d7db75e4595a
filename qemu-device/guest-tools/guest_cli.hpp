// The ethx-guest command line: `ethx-guest COMMAND [--option value]... [--flag]`.
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
  // list, status, peek, poke, load, store, atomic, copy, flush, bench, alltoall, help
  std::string name;
  // Which GPU: by its fabric id (GPU_ID register) or its PCI address; neither means all
  // (list, status), the only one (peek, poke, load, store, atomic, copy, flush) or the first
  // (bench).
  std::optional<std::uint32_t> gpu_id;
  std::optional<std::string> bdf;
  // peek/poke: BAR index and byte offset in it. load/store/atomic: with --target, the offset
  // in GPU `target`'s memory.
  unsigned bar = 0;
  std::optional<std::uint64_t> offset;
  unsigned width = 0;  // 0: the command's default (4 for peek/poke, 8 otherwise)
  std::optional<std::uint64_t> value;
  // Window address (load, store, atomic), or target GPU + offset.
  std::optional<std::uint64_t> addr;
  std::optional<std::uint32_t> target;
  // atomic
  std::string op;  // fetch-add, swap, cas
  std::optional<std::uint64_t> operand;
  std::optional<std::uint64_t> compare;
  // copy
  std::optional<std::uint64_t> src;
  std::optional<std::uint64_t> dst;
  std::optional<std::uint64_t> bytes;
  // bench
  std::optional<std::uint32_t> peer;
  bool quick = false;
  bool latency_only = false;  // bench: only the latency phase (interleaved host baselines)
  // alltoall
  std::optional<std::uint64_t> bytes_per_peer;
  std::optional<std::uint64_t> salt;
  std::optional<std::uint32_t> gpus_total;
  std::optional<std::uint32_t> timeout_s;  // copy, alltoall
};

extern const char* const kUsage;

// Numbers take C syntax (42, 0x2a); throws UsageError naming the offending argument.
GuestCommand parse_command_line(const std::vector<std::string>& args);

}  // namespace ethx::guest
