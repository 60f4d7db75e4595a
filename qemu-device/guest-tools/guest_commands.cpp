#include "qemu-device/guest-tools/guest_commands.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace ethx::guest {

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

namespace {

using nlohmann::json;

json identity(GpuFunction& gpu) {
  const auto ident = gpu.read(kIdent);
  return {{"bdf", gpu.bdf()},
          {"gpu_id", gpu.read(kGpuId)},
          {"ident", ident},
          {"ident_ok", ident == kIdentValue},
          {"version", gpu.read(kVersion)},
          {"status", gpu.read(kStatus)}};
}

json registers(GpuFunction& gpu) {
  json regs = json::object();
  for (const Register& reg : kControlRegisters) regs[reg.name] = gpu.read(reg);
  if (regs["version"].get<std::uint64_t>() >= 2) {
    for (const Register& reg : kControlRegistersV2) regs[reg.name] = gpu.read(reg);
  }
  const auto status = regs["status"].get<std::uint64_t>();
  const auto error = regs["error"].get<std::uint64_t>();
  json bits = json::object();
  for (unsigned bit = 0; bit < std::size(kErrorBitNames); ++bit) {
    bits[kErrorBitNames[bit]] = (error >> bit & 1u) != 0;
  }
  return {{"bdf", gpu.bdf()},
          {"gpu_id", regs["gpu_id"]},
          {"registers", regs},
          {"status_bits",
           {{"fabric_up", (status & kStatusFabricUp) != 0},
            {"error_latched", (status & kStatusErrorLatched) != 0},
            {"copy_busy", (status & kStatusCopyBusy) != 0}}},
          {"error_bits", bits}};
}

std::string gpu_ids(GpuList& gpus) {
  std::string ids;
  for (auto& gpu : gpus) ids += (ids.empty() ? "" : ", ") + std::to_string(gpu->read(kGpuId));
  return ids;
}

// The GPUs the command names; every one when none is named.
GpuList select(const GuestCommand& command, GpuList all) {
  if (all.empty()) {
    throw CommandError("no ethx GPU found (no PCI function " + hex(kPciVendorId) + ":" +
                       hex(kPciDeviceId) + "; was QEMU started with -device ethx-gpu?)");
  }
  if (!command.gpu_id && !command.bdf) return all;
  const std::string present = gpu_ids(all);
  GpuList chosen;
  for (auto& gpu : all) {
    if ((command.bdf && gpu->bdf() == *command.bdf) ||
        (command.gpu_id && gpu->read(kGpuId) == *command.gpu_id)) {
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

std::unique_ptr<GpuFunction> select_one(const GuestCommand& command, GpuList all) {
  auto gpus = select(command, std::move(all));
  if (gpus.size() > 1 && command.name != "bench") {
    throw CommandError(command.name + " needs one GPU, there are several (gpu ids " +
                       gpu_ids(gpus) + "); choose with --gpu ID or --bdf BDF");
  }
  return std::move(gpus.front());
}

json bar_access(const GuestCommand& command, GpuFunction& gpu) {
  const auto gpu_id = gpu.read(kGpuId);  // before the access, which may latch an error
  try {
    BarAccess& bar = gpu.bar(command.bar);
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

// --addr, or --target K --offset O within GPU K's aperture.
std::uint64_t window_address(const GuestCommand& command, const Geometry& geometry) {
  if (command.addr) return *command.addr;
  if (*command.offset >= geometry.aperture_bytes()) {
    throw CommandError("--offset " + hex(*command.offset) + " is outside GPU " +
                       std::to_string(*command.target) + "'s " +
                       std::to_string(geometry.aperture_mib) + " MiB aperture");
  }
  return geometry.window_addr(*command.target, *command.offset);
}

json with_error(json result, const ErrorState& error, const std::string& what) {
  result.update(error_json(error));
  if (error.bits != 0) {
    std::string names;
    for (const auto& name : result["error_names"]) {
      names += (names.empty() ? "" : ",") + name.get<std::string>();
    }
    throw CommandFailed(what + " latched ERROR " + hex(error.bits) + " (" + names +
                            ") at window address " + hex(error.fault_addr),
                        result);
  }
  return result;
}

json window_access(const GuestCommand& command, GpuFunction& gpu) {
  const Geometry geometry = read_geometry(gpu, true);
  const std::uint64_t addr = window_address(command, geometry);
  BarAccess& window = gpu.bar(kWindowBar);
  take_error(gpu);  // errors latched from now on belong to this command
  std::uint64_t value = 0;
  try {
    if (command.name == "store") {
      value = *command.value;
      window.write(addr, command.width, value);
    } else {
      value = window.read(addr, command.width);
    }
  } catch (const std::invalid_argument& error) {
    throw CommandError(command.name + " on " + gpu.bdf() + " window (BAR 4): " + error.what());
  }
  const std::uint64_t aperture = geometry.aperture_bytes();
  json result = {{"bdf", gpu.bdf()},
                 {"gpu_id", geometry.gpu_id},
                 {"op", command.name},
                 {"addr", addr},
                 {"addr_hex", hex(addr)},
                 {"target", addr / aperture},
                 {"offset", addr % aperture},
                 {"width", command.width},
                 {"value", value},
                 {"value_hex", hex(value)}};
  return with_error(std::move(result), take_error(gpu), command.name + " at " + hex(addr));
}

std::filesystem::path lock_dir(const RunOptions& options) {
  return options.lock_dir.empty() ? default_lock_dir() : options.lock_dir;
}

json atomic(const GuestCommand& command, GpuFunction& gpu, const RunOptions& options) {
  const Geometry geometry = read_geometry(gpu, true);
  const std::uint64_t addr = window_address(command, geometry);
  const AtomicOp op = command.op == "fetch-add" ? AtomicOp::kFetchAdd
                      : command.op == "swap"    ? AtomicOp::kSwap
                                                : AtomicOp::kCompareSwap;
  AtomicResult atomic_result;
  ErrorState error;
  {
    const DeviceLock lock(gpu, lock_dir(options));
    take_error(gpu);
    atomic_result =
        run_atomic(lock, op, addr, command.width, *command.operand, command.compare.value_or(0));
    error = take_error(gpu);
  }
  json result = {{"bdf", gpu.bdf()},
                 {"gpu_id", geometry.gpu_id},
                 {"op", command.op},
                 {"addr", addr},
                 {"addr_hex", hex(addr)},
                 {"width", command.width},
                 {"operand", *command.operand},
                 {"old", atomic_result.old_value},
                 {"old_hex", hex(atomic_result.old_value)},
                 {"status", atomic_result.status},
                 {"status_name", status_code_name(atomic_result.status)}};
  if (command.compare) {
    result["compare"] = *command.compare;
    result["swapped"] = atomic_result.status == 0 && atomic_result.old_value == *command.compare;
  }
  result = with_error(std::move(result), error, "atomic " + command.op + " at " + hex(addr));
  if (atomic_result.status != 0) {
    throw CommandFailed("atomic " + command.op + " at " + hex(addr) + " failed: ATOMIC_STATUS " +
                            std::to_string(atomic_result.status) + " (" +
                            status_code_name(atomic_result.status) + ")",
                        result);
  }
  return result;
}

json copy(const GuestCommand& command, GpuFunction& gpu, const RunOptions& options) {
  const Geometry geometry = read_geometry(gpu, true);
  const auto timeout = command.timeout_s ? std::chrono::seconds(*command.timeout_s)
                                         : std::chrono::nanoseconds(options.copy_timeout);
  CopyResult copy_result;
  ErrorState error;
  {
    const DeviceLock lock(gpu, lock_dir(options));
    take_error(gpu);
    copy_result = run_copy(lock, *command.src, *command.dst, *command.bytes, timeout);
    error = take_error(gpu);
  }
  const bool done = copy_result.state == kCopyDone;
  json result = {{"bdf", gpu.bdf()},
                 {"gpu_id", geometry.gpu_id},
                 {"op", "copy"},
                 {"src", *command.src},
                 {"dst", *command.dst},
                 {"bytes", *command.bytes},
                 {"done", done},
                 {"code", copy_result.code},
                 {"code_name", status_code_name(copy_result.code)},
                 {"ns", copy_result.ns},
                 {"gbps", copy_result.ns == 0 ? 0.0
                                              : static_cast<double>(*command.bytes) * 8.0 /
                                                    static_cast<double>(copy_result.ns)}};
  const std::string what = "copy of " + std::to_string(*command.bytes) + " bytes from " +
                           hex(*command.src) + " to " + hex(*command.dst);
  if (!done) {
    result.update(error_json(error));
    throw CommandFailed(what + " failed: code " + std::to_string(copy_result.code) + " (" +
                            status_code_name(copy_result.code) + "), fault address " +
                            hex(error.fault_addr),
                        result);
  }
  return with_error(std::move(result), error, what);
}

// FLUSH (register map 3): the read returns once every store this GPU posted is performed at its
// target, with a status code (the flush's, else the first failed store's since the last FLUSH).
json flush(GpuFunction& gpu) {
  const Geometry geometry = read_geometry(gpu, true);
  const auto version = gpu.read(kVersion);
  if (version < 3) {
    throw CommandError("ethx GPU " + gpu.bdf() + " speaks register map version " +
                       std::to_string(version) +
                       "; flush needs version 3 (FLUSH): rebuild QEMU (qemu-device/build-qemu.sh)");
  }
  const std::uint64_t start_ns = now_ns();
  const auto status = static_cast<std::uint32_t>(gpu.read(kFlush));
  const std::uint64_t flush_ns = now_ns() - start_ns;
  json result = {{"bdf", gpu.bdf()},
                 {"gpu_id", geometry.gpu_id},
                 {"op", "flush"},
                 {"status", status},
                 {"status_name", status_code_name(status)},
                 {"ns", flush_ns}};
  if (status != 0) {
    result.update(error_json(take_error(gpu)));
    throw CommandFailed(
        "flush failed: status " + std::to_string(status) + " (" + status_code_name(status) + ")",
        result);
  }
  return result;
}

}  // namespace

json run_command(const GuestCommand& command, GpuList gpus, const RunOptions& options) {
  if (command.name == "list" || command.name == "status") {
    json list = json::array();
    for (auto& gpu : select(command, std::move(gpus))) {
      list.push_back(command.name == "list" ? identity(*gpu) : registers(*gpu));
    }
    return {{"gpus", list}};
  }
  if (command.name == "alltoall") {
    if (gpus.empty()) (void)select(command, std::move(gpus));  // throws: no GPU
    return run_alltoall(command, gpus, options);
  }
  auto gpu = select_one(command, std::move(gpus));
  if (command.name == "peek" || command.name == "poke") return bar_access(command, *gpu);
  if (command.name == "load" || command.name == "store") return window_access(command, *gpu);
  if (command.name == "atomic") return atomic(command, *gpu, options);
  if (command.name == "copy") return copy(command, *gpu, options);
  if (command.name == "flush") return flush(*gpu);
  if (command.name == "bench") return run_bench(command, *gpu, options);
  throw UsageError("unknown command '" + command.name + "'");
}

json run_command(const GuestCommand& command, const std::filesystem::path& devices_dir) {
  GpuList gpus = open_ethx_gpus(devices_dir);
  if (gpus.empty() && command.name != "help") {
    throw CommandError("no ethx GPU found (no PCI function " + hex(kPciVendorId) + ":" +
                       hex(kPciDeviceId) + " under " + devices_dir.string() +
                       "; was QEMU started with -device ethx-gpu?)");
  }
  return run_command(command, std::move(gpus));
}

}  // namespace ethx::guest
