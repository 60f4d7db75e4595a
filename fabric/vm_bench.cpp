#include "fabric/vm_bench.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "fabric/fabric_launcher.hpp"
#include "fabric/process_signals.hpp"
#include "fabric/socket_transport.hpp"
#include "fabric/vm_plan.hpp"

namespace ethx {
namespace {

using nlohmann::json;

constexpr std::int64_t kVmDeadlineMs = 900'000;  // 15 min for the slowest guest under TCG

// What each VM runs: the microbenchmarks on its first GPU against the next VM's first GPU
// (so loads cross the switch between two QEMU processes), then the all-to-all of every GPU of
// every VM. Commas stand for spaces (docs/guest-image.md).
std::string guest_commands(std::size_t vm, const VmPlan& plan, bool quick) {
  const std::size_t gpu = vm * plan.gpus_per_vm;
  const std::size_t peer = plan.count > 1 ? ((vm + 1) % plan.count) * plan.gpus_per_vm
                                          : (plan.gpus_per_vm > 1 ? gpu + 1 : gpu);
  const std::size_t bytes_per_peer = quick ? 16 << 10 : 256 << 10;
  std::string commands = "ethx.run=bench,--gpu," + std::to_string(gpu) + ",--peer," +
                         std::to_string(peer) + (quick ? ",--quick" : "");
  commands += " ethx.run=alltoall,--bytes-per-peer," + std::to_string(bytes_per_peer) +
              ",--salt,7,--gpus-total," + std::to_string(plan.vm_gpus());
  return commands;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::uint64_t sum_key(const json& value, const char* key) {
  return value.is_object() && value.contains(key) && value[key].is_number_unsigned()
             ? value[key].get<std::uint64_t>()
             : 0;
}

}  // namespace

std::vector<GuestBlock> parse_guest_console(const std::string& console) {
  std::vector<GuestBlock> blocks;
  std::istringstream lines(console);
  std::string line;
  bool inside = false;
  GuestBlock block;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line == "ETHX-BEGIN") {
      inside = true;
      block = GuestBlock{};
    } else if (inside && line.rfind("ETHX-END ", 0) == 0) {
      block.exit_status = std::atoi(line.c_str() + 9);
      blocks.push_back(block);
      inside = false;
    } else if (inside) {
      block.output += line + "\n";
    }
  }
  return blocks;
}

json guest_json(const std::string& output) {
  std::istringstream lines(output);
  std::string line;
  json found;
  while (std::getline(lines, line)) {
    if (line.empty() || line.front() != '{') continue;
    json value = json::parse(line, nullptr, false);
    if (!value.is_discarded()) found = value;
  }
  return found;
}

int run_vm_bench(const BenchOptions& options) {
  std::string transport;
  try {
    transport = choose_transport(options.transport, "ethx bench");
  } catch (const TransportUnavailable& error) {
    std::cerr << error.what() << "\n";
    return 2;
  }
  const auto wall_start = std::chrono::steady_clock::now();
  VmPlan plan;
  plan.count = options.vms;
  plan.gpus_per_vm = options.gpus_per_vm;
  locate_vm_image(plan);
  for (std::size_t vm = 0; vm < plan.count; ++vm) {
    plan.kernel_args.push_back(guest_commands(vm, plan, options.quick));
  }
  if (options.gpus != 0 && options.gpus != plan.vm_gpus()) {
    throw ConfigError("--gpus " + std::to_string(options.gpus) + ": with --vms the fabric has " +
                      "--vms × --gpus-per-vm = " + std::to_string(plan.vm_gpus()) + " GPUs");
  }
  const TopologyConfig topology = load_topology(options.config_path, plan.vm_gpus());

  install_stop_signals(false);
  std::signal(SIGPIPE, SIG_IGN);
  const std::string fabric_name = "v" + std::to_string(::getpid());
  const std::string log_directory =
      (std::filesystem::temp_directory_path() / ("ethx-" + fabric_name)).string();
  std::filesystem::create_directories(log_directory);
  LaunchOptions launch;
  launch.transport = transport;
  launch.log_directory = log_directory;
  launch.vms = plan;
  FabricLauncher fabric(fabric_name, options.config_path, topology, launch);
  if (!options.quiet) {
    std::cerr << "ethx bench: booting " << plan.count << " VMs with " << plan.gpus_per_vm
              << " GPUs each over " << transport << " (TCG; consoles in " << log_directory << ")\n";
  }
  fabric.start();
  const auto booted = std::chrono::steady_clock::now();
  // Each guest powers off after its commands; wait for every QEMU to exit.
  const auto deadline = booted + std::chrono::milliseconds(kVmDeadlineMs);
  std::vector<std::string> failures;
  for (std::size_t vm = 0; vm < fabric.vms().size(); ++vm) {
    ChildProcess& qemu = fabric.vms()[vm];
    while (!qemu.wait_exit(100)) {
      if (g_stop_requested.load()) throw Interrupted();
      if (std::chrono::steady_clock::now() > deadline) {
        failures.push_back("VM " + std::to_string(vm) + " did not finish within 15 min");
        qemu.terminate();
        break;
      }
    }
  }
  const json switch_stats = fabric.stop();

  json report;
  report["vms"] = plan.count;
  report["gpus_per_vm"] = plan.gpus_per_vm;
  report["gpus"] = topology.gpu_count;
  report["transport"] = transport;
  json guests = json::array();
  std::uint64_t verified = 0, mismatches = 0, errors = 0;
  for (std::size_t vm = 0; vm < plan.count; ++vm) {
    const std::vector<GuestBlock> blocks =
        parse_guest_console(read_file(vm_serial_path(log_directory, vm)));
    json commands = json::array();
    for (const GuestBlock& block : blocks) {
      const json result = guest_json(block.output);
      verified += sum_key(result, "verified_ops");
      mismatches += sum_key(result, "mismatches");
      errors += sum_key(result, "errors");
      if (block.exit_status != 0) {
        failures.push_back("VM " + std::to_string(vm) + ": a guest command exited with " +
                           std::to_string(block.exit_status) + ": " + block.output);
      }
      commands.push_back({{"exit", block.exit_status}, {"result", result}});
    }
    if (blocks.size() != 2) {
      failures.push_back(
          "VM " + std::to_string(vm) + ": " + std::to_string(blocks.size()) +
          " of 2 guest commands reported (console: " + vm_serial_path(log_directory, vm) + ")");
    }
    guests.push_back({{"vm", vm}, {"commands", commands}});
  }
  report["guests"] = guests;
  if (!guests.empty() && !guests[0]["commands"].empty()) {
    report["bench"] = guests[0]["commands"][0]["result"];  // VM 0's microbenchmarks
  }
  report["verified_ops"] = verified;
  report["mismatches"] = mismatches;
  report["errors"] = errors;
  report["failures"] = failures;
  if (switch_stats.is_object()) report["switch"] = switch_stats;
  report["boot_to_ready_seconds"] = std::chrono::duration<double>(booted - wall_start).count();
  report["wall_seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const bool ok = failures.empty() && mismatches == 0 && errors == 0 && verified > 0;
  if (ok) std::filesystem::remove_all(log_directory);
  if (options.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << "ethx bench: " << plan.count << " VMs x " << plan.gpus_per_vm << " GPUs over "
              << transport << ": verified ops " << verified << ", mismatches " << mismatches
              << ", errors " << errors << "\n";
    if (report.contains("bench")) std::cout << "VM 0: " << report["bench"].dump(2) << "\n";
    for (const std::string& failure : failures) std::cout << "FAILED: " << failure << "\n";
    if (!ok) std::cout << "consoles and logs kept in " << log_directory << "\n";
  }
  return ok ? 0 : 1;
}

}  // namespace ethx
