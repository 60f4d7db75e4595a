// The ethx-guest commands, each producing the JSON document it prints.
#pragma once

#include <chrono>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "qemu-device/guest-tools/ethx_gpu.hpp"
#include "qemu-device/guest-tools/gpu_ops.hpp"
#include "qemu-device/guest-tools/guest_cli.hpp"
#include "qemu-device/guest-tools/pci_scan.hpp"

namespace ethx::guest {

struct RunOptions {
  std::filesystem::path lock_dir;  // empty: default_lock_dir()
  // Defaults for --timeout: a copy, and each alltoall barrier.
  std::chrono::nanoseconds copy_timeout = std::chrono::seconds(30);
  std::chrono::nanoseconds barrier_timeout = std::chrono::seconds(120);
};

// Throws UsageError, CommandError (cannot run) or CommandFailed (ran, failed: print result).
nlohmann::json run_command(const GuestCommand& command, GpuList gpus,
                           const RunOptions& options = {});
nlohmann::json run_command(const GuestCommand& command,
                           const std::filesystem::path& devices_dir = kSysfsPciDevices);

// bench and alltoall (guest_bench.cpp).
nlohmann::json run_bench(const GuestCommand& command, GpuFunction& gpu, const RunOptions& options);
nlohmann::json run_alltoall(const GuestCommand& command, GpuList& gpus, const RunOptions& options);

// alltoall: word i that GPU `src` writes into GPU `dst` is pattern_word(alltoall_seed(...), i).
std::uint64_t alltoall_seed(std::uint64_t salt, std::uint64_t src, std::uint64_t dst);

std::string hex(std::uint64_t value);

}  // namespace ethx::guest
