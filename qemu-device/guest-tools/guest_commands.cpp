#include "qemu-device/guest-tools/guest_commands.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "qemu-device/guest-tools/ethx_gpu.hpp"

namespace ethx::guest {
namespace {

using nlohmann::json;

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

json identity(EthxGpu& gpu) {
  const auto ident = gpu.read(kIdent);
  return {{"bdf", gpu.bdf()},
          {"gpu_id", gpu.read(kGpuId)},
          {"ident", ident},
          {"ident_ok", ident == kIdentValue},
          {"version", gpu.read(kVersion)},
          {"status", gpu.read(kStatus)}};
}

json registers(EthxGpu& gpu) {
  json regs = json::object();
  for (const Register& reg : kControlRegisters) regs[reg.name] = gpu.read(reg);
  const auto status = regs["status"].get<std::uint64_t>();
  const auto error = regs["error"].get<std::uint64_t>();
  return {{"bdf", gpu.bdf()},
          {"gpu_id", regs["gpu_id"]},
          {"registers", regs},
          {"status_bits",
           {{"fabric_up", (status & kStatusFabricUp) != 0},
            {"error_latched", (status & kStatusErrorLatched) != 0}}},
          {"error_bits", {{"bad_register", (error & kErrorBadRegister) != 0}}}};
}

std::string gpu_ids(std::vector<EthxGpu>& gpus) {
  std::string ids;
  for (auto& gpu : gpus) ids += (ids.empty() ? "" : ", ") + std::to_string(gpu.read(kGpuId));
  return ids;
}

// The GPUs the command names; every one when none is named.
std::vector<EthxGpu> select(const GuestCommand& command, const std::filesystem::path& dir) {
  auto all = find_ethx_gpus(dir);
  if (all.empty()) {
    throw CommandError("no ethx GPU found (no PCI function " + hex(kPciVendorId) + ":" +
                       hex(kPciDeviceId) + " under " + dir.string() +
                       "; was QEMU started with -device ethx-gpu?)");
  }
  if (!command.gpu_id && !command.bdf) return all;
  const std::string present = gpu_ids(all);
  std::vector<EthxGpu> chosen;
  for (auto& gpu : all) {
    if ((command.bdf && gpu.bdf() == *command.bdf) ||
        (command.gpu_id && gpu.read(kGpuId) == *command.gpu_id)) {
      chosen.push_back(std::move(gpu));
    }
  }
  if (chosen.empty()) {
    throw CommandError(
        "no ethx GPU " +
        (command.bdf ? "at " + *command.bdf : "with gpu id " + std::to_string(*command.gpu_id)) +
        " (gpu ids present: " + present + ")");
  }
  return chosen;
}

json access(const GuestCommand& command, const std::filesystem::path& dir) {
  auto gpus = select(command, dir);
  if (gpus.size() > 1) {
    throw CommandError(command.name + " needs one GPU, there are several (gpu ids " +
                       gpu_ids(gpus) + "); choose with --gpu ID or --bdf BDF");
  }
  EthxGpu& gpu = gpus.front();
  const auto gpu_id = gpu.read(kGpuId);  // before the access, which may latch an error
  try {
    const MmioBar& bar = gpu.bar(command.bar);
    std::uint64_t value = 0;
    if (command.name == "poke") {
      value = *command.value;
      bar.write(*command.offset, command.width, value);
    } else {
      value = bar.read(*command.offset, command.width);
    }
    return {{"bdf", gpu.bdf()},       {"gpu_id", gpu_id},
            {"bar", command.bar},     {"offset", *command.offset},
            {"width", command.width}, {"op", command.name},
            {"value", value},         {"value_hex", hex(value)}};
  } catch (const std::exception& error) {
    throw CommandError(command.name + " on " + gpu.bdf() + " BAR " + std::to_string(command.bar) +
                       ": " + error.what());
  }
}

}  // namespace

json run_command(const GuestCommand& command, const std::filesystem::path& devices_dir) {
  if (command.name == "list" || command.name == "status") {
    json gpus = json::array();
    for (auto& gpu : select(command, devices_dir)) {
      gpus.push_back(command.name == "list" ? identity(gpu) : registers(gpu));
    }
    return {{"gpus", gpus}};
  }
  return access(command, devices_dir);
}

}  // namespace ethx::guest
