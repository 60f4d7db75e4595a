#include "fabric/compare/softroce_suite.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "fabric/bench/bench_plan.hpp"
#include "fabric/bench/vm_bench.hpp"
#include "fabric/compare/compare_systems.hpp"
#include "fabric/compare/shmem_systems.hpp"
#include "fabric/compare/softroce_interop.hpp"
#include "fabric/config/topology_config.hpp"
#include "fabric/control/fabric_launcher.hpp"
#include "fabric/control/run_state.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/socket_transport.hpp"
#include "fabric/vm/guest_agent.hpp"
#include "fabric/vm/kvm_probe.hpp"
#include "fabric/vm/vm_plan.hpp"

namespace ethx {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::int64_t kAgentTimeoutMs = 180'000;
constexpr int kFirstPort = 18515;  // perftest's default; one port per run

std::vector<double> numbers_of(const std::string& line) {
  std::vector<double> values;
  std::istringstream words(line);
  for (std::string word; words >> word;) {
    try {
      std::size_t used = 0;
      const double value = std::stod(word, &used);
      if (used != word.size()) return {};
      values.push_back(value);
    } catch (const std::exception&) {
      return {};
    }
  }
  return values;
}

json unavailable(const std::string& transport, const std::string& reason) {
  return unavailable_system(kSystemSoftRoce, transport, reason);
}

struct Run {
  std::string tool;  // ib_write_lat ...
  std::string op;    // write | read
  std::uint64_t bytes;
  std::uint64_t iterations;
  bool latency;
};

}  // namespace

json parse_perftest_output(const std::string& output, std::uint64_t bytes) {
  std::istringstream lines(output);
  bool latency = false, bandwidth = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("t_typical") != std::string::npos) latency = true;
    if (line.find("BW average") != std::string::npos) bandwidth = true;
    if (!latency && !bandwidth) continue;
    const std::vector<double> v = numbers_of(line);
    if (v.empty() || static_cast<std::uint64_t>(v[0]) != bytes) continue;
    if (latency && v.size() >= 9) {
      return {{"bytes", bytes},  {"iterations", v[1]}, {"t_min", v[2]},
              {"t_max", v[3]},   {"t_typical", v[4]},  {"t_avg", v[5]},
              {"t_stdev", v[6]}, {"p99", v[7]},        {"p99_9", v[8]}};
    }
    if (bandwidth && v.size() >= 5) {
      return {{"bytes", bytes},
              {"iterations", v[1]},
              {"bw_peak_gbps", v[2]},
              {"bw_avg_gbps", v[3]},
              {"msg_rate_mpps", v[4]}};
    }
  }
  return nullptr;
}

json load_store_vm_system(const json& forward, const json& reverse, const std::string& transport,
                          const std::string& accel, const std::string& error) {
  json system = empty_system(
      kSystemLoadStoreVm,
      "ethx-gpu window (MMIO) in VM 0 -> VM 1's GPU over the ethx switch (" + transport + ")");
  system["details"] = {{"forward", forward}, {"reverse", reverse}};
  const auto at = [](const json& value, std::initializer_list<const char*> path) -> double {
    const json* node = &value;
    for (const char* key : path) {
      if (!node->is_object() || !node->contains(key)) return 0.0;
      node = &(*node)[key];
    }
    return node->is_number() ? node->get<double>() : 0.0;
  };
  if (!forward.is_object() || !forward.contains("latency")) {
    system["available"] = false;
    system["reason"] = "ethx-guest bench in VM 0 gave no result" +
                       (error.empty() ? std::string() : ": " + error.substr(0, 400));
    return system;
  }
  const auto clean = [](const json& run) {
    return run.is_object() && run.value("mismatches", std::uint64_t{1}) == 0 &&
           run.value("errors", std::uint64_t{1}) == 0 && run.value("verified_ops", 0) > 0;
  };
  const double p50 = at(forward, {"latency", "window_load", "p50_ns"}) / 1000.0;
  const double p99 = at(forward, {"latency", "window_load", "p99_ns"}) / 1000.0;
  if (p50 > 0) {
    system["latency_us"].push_back({{"op", "load"}, {"bytes", 8}, {"p50", p50}, {"p99", p99}});
  }
  const double store_gbps = at(forward, {"store", "gbps"});
  const auto store_bytes = static_cast<std::uint64_t>(at(forward, {"store", "bytes"}));
  if (store_gbps > 0) {
    system["bandwidth_gbps"].push_back(
        {{"op", "store"}, {"bytes", store_bytes}, {"gbps", store_gbps}});
    // 8-byte posted stores, one per access: their rate is the store message rate.
    system["message_rate_mops"].push_back(
        {{"op", "store"}, {"bytes", 8}, {"batch", 1}, {"mops", store_gbps / 64.0 * 1000.0}});
  }
  for (const json& copy : forward.value("copy", json::array())) {
    if (copy.value("done", false) && copy.value("gbps", 0.0) > 0) {
      system["bandwidth_gbps"].push_back({{"op", "copy"},
                                          {"bytes", copy.value("bytes", std::uint64_t{0})},
                                          {"gbps", copy.value("gbps", 0.0)}});
    }
  }
  const bool reverse_ok = reverse.is_null() || clean(reverse);
  system["verified"] = clean(forward) && reverse_ok && p50 > 0 && error.empty();
  json& notes = system["notes"];
  notes.push_back("in the same 2 VMs as Soft-RoCE, " +
                  (accel == "tcg"   ? std::string("TCG")
                   : accel == "kvm" ? std::string("KVM")
                                    : accel) +
                  ", MMIO trap per access: `ethx-guest bench --quick`-sized runs, VM 0's GPU "
                  "against VM 1's (the direction of perftest's client -> server)");
  notes.push_back("load: 8 B window loads (the guest bench has no other load size); store: " +
                  std::to_string(store_bytes / 1024) +
                  " KiB of 8 B posted stores, completed by a load of the last word; copy: the "
                  "copy engine pulling VM 1's GPU memory into VM 0's");
  notes.push_back("MMIO trap (BAR 0 read) p50 in VM 0: " +
                  std::to_string(at(forward, {"mmio_trap_ns"}) / 1000.0).substr(0, 6) + " µs");
  if (reverse.is_object() && reverse.contains("latency")) {
    notes.push_back(
        "reverse (VM 1 -> VM 0): 8 B load p50 " +
        std::to_string(at(reverse, {"latency", "window_load", "p50_ns"}) / 1000.0).substr(0, 6) +
        " µs, store " + std::to_string(at(reverse, {"store", "gbps"})).substr(0, 6) + " Gbit/s" +
        (clean(reverse) ? "" : " (NOT verified)"));
  }
  if (!error.empty()) notes.push_back("FAILED: " + error.substr(0, 400));
  return system;
}

namespace {

json run_suite(const SoftRoceOptions& options) {
  const auto started = Clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
  auto say = [&](const std::string& text) {
    if (!options.quiet) std::cerr << "ethx softroce: " << text << "\n";
  };
  std::string transport = options.transport;

  // ---- prerequisites: each missing one is a reason, not an exception ----
  if (::geteuid() != 0) {
    return unavailable(transport,
                       "needs root: the guest NICs are taps in a network namespace "
                       "joined to the switch by AF_PACKET sockets");
  }
  // A running fabric is not taken down (`ethx down`) or restarted (`ethx up`) under us: its lock
  // is held while we use it, and released at once when we boot VMs of our own instead.
  std::optional<RunDirectory> directory(std::in_place, options.fabric);
  directory->lock();
  std::optional<RunState> state = directory->load();
  const bool attached = state && state->vms >= 2 && state->guest_nics;
  if (!attached) directory.reset();
  json notes = json::array();
  VmPlan plan;
  plan.count = 2;
  plan.gpus_per_vm = 1;
  plan.guest_nics = true;
  if (!attached) {
    try {
      transport = choose_transport(options.transport == "shm" ? "auto" : options.transport,
                                   "ethx softroce");
    } catch (const std::exception& error) {
      return unavailable(options.transport, error.what());
    }
    if (!is_socket_transport(transport)) {
      return unavailable(transport,
                         "needs a socket transport (afxdp or afpacket) for the "
                         "switch the guest NICs join");
    }
    try {
      locate_vm_image(plan);
    } catch (const std::exception& error) {
      return unavailable(transport, error.what());
    }
  } else {
    transport = state->transport;
    notes.push_back("used the running fabric '" + options.fabric + "' (" +
                    std::to_string(state->vms) + " VMs with guest NICs)");
  }
  install_stop_signals(false);
  std::signal(SIGPIPE, SIG_IGN);

  // ---- the VMs: the running fabric's, or two of our own ----
  std::optional<FabricLauncher> owned;      // watches what it starts
  std::unique_ptr<ProcessWatcher> watcher;  // the processes of a running fabric
  std::string logs, netns_tag;
  if (attached) {
    for (const RecordedProcess& process : state->processes) {
      if (!process.running()) {
        return unavailable(transport, "fabric '" + options.fabric + "': " + process.role +
                                          " is gone; `ethx down` and `ethx up` it again");
      }
    }
    logs = directory->path();
    netns_tag = state->netns_tag;
    watcher = watch_recorded_processes(*directory, *state);
  } else {
    const AcceleratorChoice accel = choose_accelerator(plan);
    plan.accel = accel.accel;
    const TopologyConfig topology = load_topology("", plan.vm_gpus());
    const std::string name = "r" + std::to_string(::getpid());
    logs = (std::filesystem::temp_directory_path() / ("ethx-" + name)).string();
    std::filesystem::create_directories(logs);
    LaunchOptions launch;
    launch.transport = transport;
    launch.netns_tag = netns::random_tag();
    launch.log_directory = logs;
    launch.vms = plan;
    say("booting 2 VMs with guest NICs under " + accel.accel + " over " + transport +
        " (consoles in " + logs + ")");
    owned.emplace(name, "", topology, launch);
    owned->start();
    netns_tag = owned->netns_tag();
    notes.push_back("booted 2 temporary VMs (" + accel.accel + ", " + accel.reason + ") in " +
                    std::to_string(static_cast<int>(elapsed_s())) + " s");
  }
  GuestAgent client(logs, 0, 10'000);
  GuestAgent server(logs, 1, 10'000);

  json report = empty_system(
      kSystemSoftRoce,
      "rdma_rxe over virtio-net taps on the ethx switch (GPU ports: " + transport + ")");
  json runs = json::array();
  bool all_ok = true;

  // ---- guest state: rxe0 and its RoCE v2 GID on both sides, and the path between them ----
  json guests = json::array();
  int gid_index[2] = {-1, -1};
  GuestAgent* agents[2] = {&client, &server};
  for (int vm = 0; vm < 2; ++vm) {
    const GuestBlock info = agents[vm]->run("!ethx-rdma info", kAgentTimeoutMs);
    const json value = guest_json(info.output);
    guests.push_back(value.is_null() ? json(info.output) : value);
    if (!value.is_null()) gid_index[vm] = value.value("gid_index", -1);
    if (gid_index[vm] < 0) {
      report["available"] = false;
      report["reason"] = "VM " + std::to_string(vm) + " has no rxe0 with a RoCE v2 IPv4 GID (" +
                         info.output + "); see its console in " + logs;
      report["details"]["guests"] = guests;
      report["notes"] = notes;
      return report;
    }
  }
  report["details"]["guests"] = guests;
  const GuestBlock ping =
      client.run("!ping -c 3 -W 5 " + guest_nic_ip(1) + " | tail -n 1", kAgentTimeoutMs);
  notes.push_back("ping VM 0 -> VM 1 through the switch: " +
                  (ping.exit_status == 0 ? ping.output.substr(0, ping.output.find('\n'))
                                         : "FAILED: " + ping.output));
  if (ping.exit_status != 0) all_ok = false;

  // ---- load/store in the same VMs: ethx-guest bench, one VM at a time, VM 0's GPU against
  // VM 1's first (the figures), then the reverse; quick-sized (pinned) so TCG keeps it short.
  {
    const std::size_t per_vm = attached ? std::max<std::size_t>(state->gpus_per_vm, 1) : 1;
    json bench_runs[2];
    std::string bench_error;
    for (int vm = 0; vm < 2; ++vm) {
      if (g_stop_requested.load()) throw Interrupted();
      const std::size_t gpu = static_cast<std::size_t>(vm) * per_vm;
      const std::size_t peer = static_cast<std::size_t>(1 - vm) * per_vm;
      const std::string command =
          "bench --gpu " + std::to_string(gpu) + " --peer " + std::to_string(peer) + " --quick";
      say("same-VM load/store: VM " + std::to_string(vm) + ": ethx-guest " + command);
      try {
        const GuestBlock block = agents[vm]->run(command, kAgentTimeoutMs);
        bench_runs[vm] = guest_json(block.output);
        if (block.exit_status != 0 || bench_runs[vm].is_null()) {
          bench_error += (bench_error.empty() ? "" : "; ") + std::string("VM ") +
                         std::to_string(vm) + ": `ethx-guest " + command + "` exited " +
                         std::to_string(block.exit_status) + ": " + block.output.substr(0, 300);
        }
      } catch (const std::exception& error) {
        bench_error += (bench_error.empty() ? "" : "; ") + std::string("VM ") + std::to_string(vm) +
                       ": " + error.what();
      }
    }
    throw_if_stop_requested();
    report["details"]["same_vms_load_store"] = load_store_vm_system(
        bench_runs[0], bench_runs[1], transport,
        attached ? std::string("the running VMs' accelerator") : plan.accel, bench_error);
  }

  // ---- one OpenSHMEM benchmark binary over both backends in the same VMs (shmem_systems) ----
  if (options.shmem) {
    ShmemRunPlan shmem;
    shmem.log_directory = logs;
    shmem.vms = 2;
    shmem.gpus_per_vm = attached ? std::max<std::size_t>(state->gpus_per_vm, 1) : 1;
    shmem.transport = transport;
    shmem.quick = options.quick;
    report["details"]["same_vms_shmem"] = run_shmem_systems(shmem, say);
    throw_if_stop_requested();
  }

  // ---- perftest: server in VM 1, client in VM 0, pinned sizes and iteration counts ----
  std::vector<Run> plan_runs;
  const PerftestPlan perftest = bench_plan(options.quick).perftest;
  for (const char* op : {"write", "read"}) {
    const std::string o = op;
    for (std::uint64_t bytes : perftest.latency_sizes_bytes) {
      plan_runs.push_back({"ib_" + o + "_lat", o, bytes, perftest.latency_iterations, true});
    }
    for (std::uint64_t bytes : perftest.bandwidth_sizes_bytes) {
      const std::uint64_t iterations =
          bytes <= 8 ? perftest.bandwidth_iterations * perftest.small_message_iteration_factor
                     : perftest.bandwidth_iterations;
      plan_runs.push_back({"ib_" + o + "_bw", o, bytes, iterations, false});
    }
  }
  int port = kFirstPort;
  for (const Run& run : plan_runs) {
    if (g_stop_requested.load()) throw Interrupted();
    const std::string label =
        run.tool + " -s " + std::to_string(run.bytes) + " -n " + std::to_string(run.iterations);
    if (elapsed_s() > options.time_budget_s) {
      notes.push_back("skipped (time budget of " +
                      std::to_string(static_cast<int>(options.time_budget_s)) + " s): " + label);
      continue;
    }
    say(label);
    // -F: no CPU-frequency check (TCG); --report_gbits; -x: the RoCE v2 IPv4 GID.
    const std::string common = run.tool + " -d rxe0 -F -s " + std::to_string(run.bytes) + " -n " +
                               std::to_string(run.iterations) + " -p " + std::to_string(port++) +
                               (run.latency ? "" : " --report_gbits");
    const std::string server_cmd = "!" + common + " -x " + std::to_string(gid_index[1]);
    // The client retries while the server is not listening yet (connection refused); no
    // fixed delay: it goes as soon as the server accepts. At most 30 s of tries.
    const std::string client_cmd =
        "!i=0; while :; do " + common + " -x " + std::to_string(gid_index[0]) + " " +
        guest_nic_ip(1) + " >/tmp/pt.out 2>&1 && { cat /tmp/pt.out; exit 0; }; " +
        "grep -qE 'Couldn.t connect|Unable to open' /tmp/pt.out || " +
        "{ cat /tmp/pt.out; exit 1; }; i=$((i+1)); [ $i -ge 300 ] && { cat /tmp/pt.out; exit 1; }; "
        "usleep 100000; done";
    GuestBlock server_block;
    std::string server_error;
    std::thread server_thread([&] {
      try {
        server_block = server.run(server_cmd, kAgentTimeoutMs);
      } catch (const std::exception& error) {
        server_error = error.what();
      }
    });
    const auto run_start = Clock::now();
    GuestBlock client_block;
    std::string client_error;
    try {
      client_block = client.run(client_cmd, kAgentTimeoutMs);
    } catch (const std::exception& error) {
      client_error = error.what();
    }
    server_thread.join();
    throw_if_stop_requested();
    const double wall_s = std::chrono::duration<double>(Clock::now() - run_start).count();
    const json parsed = parse_perftest_output(client_block.output, run.bytes);
    json entry = {{"tool", run.tool},
                  {"op", run.op},
                  {"bytes", run.bytes},
                  {"iterations", run.iterations},
                  {"wall_s", wall_s},
                  {"client_exit", client_block.exit_status},
                  {"server_exit", server_block.exit_status},
                  {"command", common + " [-x G] [" + guest_nic_ip(1) + "]"},
                  {"result", parsed}};
    if (parsed.is_null() || client_block.exit_status != 0) {
      all_ok = false;
      entry["client_output"] = client_error.empty() ? client_block.output : client_error;
      entry["server_output"] = server_error.empty() ? server_block.output : server_error;
      notes.push_back("FAILED: " + label + " (see runs)");
    } else if (run.latency) {
      report["latency_us"].push_back({{"op", run.op},
                                      {"bytes", run.bytes},
                                      {"p50", parsed["t_typical"]},
                                      {"p99", parsed["p99"]}});
    } else {
      report["bandwidth_gbps"].push_back(
          {{"op", run.op}, {"bytes", run.bytes}, {"gbps", parsed["bw_avg_gbps"]}});
      if (run.bytes <= 8) {
        report["message_rate_mops"].push_back({{"op", run.op},
                                               {"bytes", run.bytes},
                                               {"batch", 1},
                                               {"mops", parsed["msg_rate_mpps"]}});
      }
    }
    runs.push_back(entry);
  }
  report["details"]["runs"] = runs;
  // rxe's own counters after the runs: retries and duplicates show how hard TCG made it.
  json after = json::array();
  for (GuestAgent* agent : agents) {
    const GuestBlock info = agent->run("!ethx-rdma info", kAgentTimeoutMs);
    const json value = guest_json(info.output);
    after.push_back(value.is_null() ? json(info.output) : value);
  }
  report["details"]["guests_after_perftest"] = after;

  // ---- interop: ethx's RoCEv2 engine against rdma_rxe in VM 0 ----
  bool interop_ok = true;
  if (options.interop) {
    say("interop: ethx RoCEv2 engine <-> rdma_rxe in VM 0 (RDMA WRITE, then READ)");
    InteropOptions interop;
    interop.netns_tag = netns_tag;
    interop.vm = 0;
    interop.seed = static_cast<std::uint32_t>(::getpid() % 100000);
    try {
      report["details"]["interop"] = run_roce_interop(client, interop);
      interop_ok = report["details"]["interop"].value("verified", false);
    } catch (const std::exception& error) {
      interop_ok = false;
      report["details"]["interop"] = {{"verified", false}, {"error", error.what()}};
    }
    throw_if_stop_requested();
    notes.push_back(std::string("interop (engine WRITE ") + std::to_string(interop.write_bytes) +
                    " B + READ " + std::to_string(interop.region_bytes) +
                    " B against rdma_rxe): " + (interop_ok ? "verified" : "FAILED"));
  }
  notes.push_back("perftest measures with the guest's TSC under " +
                  std::string(attached ? "the running VMs' accelerator" : plan.accel) +
                  ": emulator wall-clock figures, not hardware figures");
  report["verified"] = all_ok && interop_ok && !report["latency_us"].empty();
  report["details"]["elapsed_s"] = elapsed_s();
  report["notes"] = notes;
  if (owned) {
    owned->stop();
    // Like `ethx bench --vms`: the consoles stay only when something went wrong.
    if (report["verified"].get<bool>()) {
      std::error_code ignored;
      std::filesystem::remove_all(logs, ignored);
    } else {
      report["notes"].push_back("consoles and logs kept in " + logs);
    }
  }
  return report;
}

}  // namespace

json run_softroce_suite(const SoftRoceOptions& options) {
  try {
    return run_suite(options);
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& error) {
    // A VM that did not boot, an agent that stopped answering: no figures, and why.
    return unavailable(options.transport,
                       std::string("the Soft-RoCE suite failed: ") + error.what());
  }
}

}  // namespace ethx
