#include "fabric/compare/softroce_suite.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>

#include "fabric/bench/vm_bench_report.hpp"
#include "fabric/compare/compare_systems.hpp"
#include "fabric/compare/shmem_systems.hpp"
#include "fabric/compare/softroce_interop.hpp"
#include "fabric/compare/softroce_perftest.hpp"
#include "fabric/config/topology_config.hpp"
#include "fabric/control/fabric_launcher.hpp"
#include "fabric/control/run_state.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/socket_transport.hpp"
#include "fabric/vm/guest_agent.hpp"
#include "fabric/vm/guest_console.hpp"
#include "fabric/vm/kvm_probe.hpp"
#include "fabric/vm/vm_plan.hpp"

namespace ethx {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using Say = std::function<void(const std::string&)>;

json unavailable(const std::string& transport, const std::string& reason) {
  return unavailable_system(kSystemSoftRoce, transport, reason);
}

}  // namespace

namespace {

// An `ethx-guest bench` run that verified something and found no mismatch or error.
bool bench_clean(const json& run) {
  return run.is_object() && run.value("mismatches", std::uint64_t{1}) == 0 &&
         run.value("errors", std::uint64_t{1}) == 0 && run.value("verified_ops", 0) > 0;
}

// What the same-VM figures are and how they were measured; the reverse direction in brief.
json load_store_vm_notes(const json& forward, const json& reverse, const std::string& accel,
                         std::uint64_t store_bytes, const std::string& error) {
  json notes = json::array();
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
                  std::to_string(number_at(forward, {"mmio_trap_ns"}) / 1000.0).substr(0, 6) +
                  " µs");
  if (reverse.is_object() && reverse.contains("latency")) {
    notes.push_back(
        "reverse (VM 1 -> VM 0): 8 B load p50 " +
        std::to_string(number_at(reverse, {"latency", "window_load", "p50_ns"}) / 1000.0)
            .substr(0, 6) +
        " µs, store " + std::to_string(number_at(reverse, {"store", "gbps"})).substr(0, 6) +
        " Gbit/s" + (bench_clean(reverse) ? "" : " (NOT verified)"));
  }
  if (!error.empty()) notes.push_back("FAILED: " + error.substr(0, 400));
  return notes;
}

}  // namespace

json load_store_vm_system(const json& forward, const json& reverse, const std::string& transport,
                          const std::string& accel, const std::string& error) {
  json system = empty_system(
      kSystemLoadStoreVm,
      "ethx-gpu window (MMIO) in VM 0 -> VM 1's GPU over the ethx switch (" + transport + ")");
  system["details"] = {{"forward", forward}, {"reverse", reverse}};
  if (!forward.is_object() || !forward.contains("latency")) {
    system["available"] = false;
    system["reason"] = "ethx-guest bench in VM 0 gave no result" +
                       (error.empty() ? std::string() : ": " + error.substr(0, 400));
    return system;
  }
  const double p50 = number_at(forward, {"latency", "window_load", "p50_ns"}) / 1000.0;
  const double p99 = number_at(forward, {"latency", "window_load", "p99_ns"}) / 1000.0;
  if (p50 > 0) {
    system["latency_us"].push_back({{"op", "load"}, {"bytes", 8}, {"p50", p50}, {"p99", p99}});
  }
  const double store_gbps = number_at(forward, {"store", "gbps"});
  const auto store_bytes = static_cast<std::uint64_t>(number_at(forward, {"store", "bytes"}));
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
  const bool reverse_ok = reverse.is_null() || bench_clean(reverse);
  system["verified"] = bench_clean(forward) && reverse_ok && p50 > 0 && error.empty();
  system["notes"] = load_store_vm_notes(forward, reverse, accel, store_bytes, error);
  return system;
}

namespace {

// The two VMs the suite runs in: those of a running fabric (`ethx up --vms 2 --guest-nics` or
// more VMs), or two of our own, booted for the suite and removed after it.
class SuiteVms {
 public:
  // A running fabric is not taken down (`ethx down`) or restarted (`ethx up`) under us: its
  // lock is held while we use it, and released at once when we boot VMs of our own instead.
  explicit SuiteVms(const SoftRoceOptions& options)
      : fabric_(options.fabric), transport_(options.transport) {
    directory_.emplace(options.fabric);
    directory_->lock();
    state_ = directory_->load();
    if (!state_ || state_->vms < 2 || !state_->guest_nics) {
      state_.reset();
      directory_.reset();
    } else {
      transport_ = state_->transport;
    }
    plan_.count = 2;
    plan_.gpus_per_vm = 1;
    plan_.guest_nics = true;
  }

  bool attached() const { return state_.has_value(); }
  const std::string& transport() const { return transport_; }  // the GPU ports'
  const std::string& logs() const { return logs_; }            // consoles and agent sockets
  const std::string& netns_tag() const { return netns_tag_; }
  std::size_t gpus_per_vm() const {
    return attached() ? std::max<std::size_t>(state_->gpus_per_vm, 1) : 1;
  }
  // For the notes: the accelerator of our VMs, or a running fabric's (which it does not record).
  std::string accelerator() const {
    return attached() ? std::string("the running VMs' accelerator") : plan_.accel;
  }

  // Empty when the suite can run here; else why not (transport() names the transport then).
  // Each missing prerequisite is a reason, not an exception.
  std::string missing_prerequisite() {
    if (attached()) return attached_fabric_gone();
    try {
      transport_ = choose_transport(transport_ == "shm" ? "auto" : transport_, "ethx softroce");
    } catch (const std::exception& error) {
      return error.what();
    }
    if (!is_socket_transport(transport_)) {
      return "needs a socket transport (afxdp or afpacket) for the switch the guest NICs join";
    }
    try {
      locate_vm_image(plan_);
    } catch (const std::exception& error) {
      return error.what();
    }
    return "";
  }

  // Watches the running fabric's processes, or boots our two VMs; returns the note that says
  // which (and how long the suite has taken so far, booting included).
  std::string start(const Say& say, const std::function<double()>& elapsed_s) {
    if (attached()) {
      logs_ = directory_->path();
      netns_tag_ = state_->netns_tag;
      watcher_ = watch_recorded_processes(*directory_, *state_);
      return "used the running fabric '" + fabric_ + "' (" + std::to_string(state_->vms) +
             " VMs with guest NICs)";
    }
    const AcceleratorChoice accel = choose_accelerator(plan_);
    plan_.accel = accel.accel;
    const TopologyConfig topology = load_topology("", plan_.vm_gpus());
    const std::string name = "r" + std::to_string(::getpid());
    logs_ = (std::filesystem::temp_directory_path() / ("ethx-" + name)).string();
    std::filesystem::create_directories(logs_);
    LaunchOptions launch;
    launch.transport = transport_;
    launch.netns_tag = netns::random_tag();
    launch.log_directory = logs_;
    launch.vms = plan_;
    say("booting 2 VMs with guest NICs under " + accel.accel + " over " + transport_ +
        " (consoles in " + logs_ + ")");
    owned_.emplace(name, "", topology, launch);
    owned_->start();
    netns_tag_ = owned_->netns_tag();
    return "booted 2 temporary VMs (" + accel.accel + ", " + accel.reason + ") in " +
           std::to_string(static_cast<int>(elapsed_s())) + " s";
  }

  // Stops our VMs. Like `ethx bench --vms`: the consoles stay only when something went wrong;
  // then the note that says where (else empty).
  std::string finish(bool verified) {
    if (!owned_) return "";
    owned_->stop();
    if (!verified) return "consoles and logs kept in " + logs_;
    std::error_code ignored;
    std::filesystem::remove_all(logs_, ignored);
    return "";
  }

 private:
  std::string attached_fabric_gone() const {
    for (const RecordedProcess& process : state_->processes) {
      if (!process.running()) {
        return "fabric '" + fabric_ + "': " + process.role +
               " is gone; `ethx down` and `ethx up` it again";
      }
    }
    return "";
  }

  std::string fabric_;
  std::string transport_;
  std::optional<RunDirectory> directory_;    // the running fabric's, locked
  std::optional<RunState> state_;            // set when attached to it
  VmPlan plan_;                              // our own VMs'
  std::optional<FabricLauncher> owned_;      // watches what it starts
  std::unique_ptr<ProcessWatcher> watcher_;  // the processes of a running fabric
  std::string logs_, netns_tag_;
};

using Agents = std::array<GuestAgent*, 2>;  // VM 0 (the client), VM 1 (the server)

// `ethx-rdma info` in each VM: rxe0 and its RoCE v2 GID on both sides.
struct GuestRdma {
  json guests = json::array();  // each VM's info, or what it printed instead
  std::array<int, 2> gid_index = {-1, -1};
  std::string missing;  // why the suite cannot run in these VMs; empty when it can
};

// A guest's `ethx-rdma info`: its JSON, or what it printed when that is not JSON.
std::pair<json, GuestBlock> rdma_info(GuestAgent& agent) {
  const GuestBlock info = agent.run("!ethx-rdma info", kSoftRoceCommandTimeoutMs);
  const json value = guest_json(info.output);
  return {value.is_null() ? json(info.output) : value, info};
}

GuestRdma check_guest_rdma(const Agents& agents, const std::string& logs) {
  GuestRdma rdma;
  for (int vm = 0; vm < 2; ++vm) {
    const auto [entry, info] = rdma_info(*agents[vm]);
    rdma.guests.push_back(entry);
    if (entry.is_object()) rdma.gid_index[vm] = entry.value("gid_index", -1);
    if (rdma.gid_index[vm] < 0) {
      rdma.missing = "VM " + std::to_string(vm) + " has no rxe0 with a RoCE v2 IPv4 GID (" +
                     info.output + "); see its console in " + logs;
      return rdma;
    }
  }
  return rdma;
}

// The path between the guests, through the switch: its note, and whether it worked.
std::pair<std::string, bool> ping_peer(GuestAgent& client) {
  const GuestBlock ping =
      client.run("!ping -c 3 -W 5 " + guest_nic_ip(1) + " | tail -n 1", kSoftRoceCommandTimeoutMs);
  return {"ping VM 0 -> VM 1 through the switch: " +
              (ping.exit_status == 0 ? ping.output.substr(0, ping.output.find('\n'))
                                     : "FAILED: " + ping.output),
          ping.exit_status == 0};
}

// Load/store in the same VMs: ethx-guest bench, one VM at a time, VM 0's GPU against VM 1's
// first (the figures), then the reverse; quick-sized (pinned) so TCG keeps it short.
json same_vm_load_store(const Agents& agents, const SuiteVms& vms, const Say& say) {
  const std::size_t per_vm = vms.gpus_per_vm();
  std::array<json, 2> bench_runs;
  std::string bench_error;
  for (int vm = 0; vm < 2; ++vm) {
    if (g_stop_requested.load()) throw Interrupted();
    const std::size_t gpu = static_cast<std::size_t>(vm) * per_vm;
    const std::size_t peer = static_cast<std::size_t>(1 - vm) * per_vm;
    const std::string command =
        "bench --gpu " + std::to_string(gpu) + " --peer " + std::to_string(peer) + " --quick";
    say("same-VM load/store: VM " + std::to_string(vm) + ": ethx-guest " + command);
    try {
      const GuestBlock block = agents[vm]->run(command, kSoftRoceCommandTimeoutMs);
      bench_runs[vm] = guest_json(block.output);
      if (block.exit_status != 0 || bench_runs[vm].is_null()) {
        bench_error += (bench_error.empty() ? "" : "; ") + std::string("VM ") + std::to_string(vm) +
                       ": `ethx-guest " + command + "` exited " +
                       std::to_string(block.exit_status) + ": " + block.output.substr(0, 300);
      }
    } catch (const std::exception& error) {
      bench_error += (bench_error.empty() ? "" : "; ") + std::string("VM ") + std::to_string(vm) +
                     ": " + error.what();
    }
  }
  throw_if_stop_requested();
  return load_store_vm_system(bench_runs[0], bench_runs[1], vms.transport(), vms.accelerator(),
                              bench_error);
}

// One OpenSHMEM benchmark binary over both backends in the same VMs (shmem_systems).
json same_vm_shmem(const SuiteVms& vms, bool quick, const Say& say) {
  ShmemRunPlan shmem;
  shmem.log_directory = vms.logs();
  shmem.vms = 2;
  shmem.gpus_per_vm = vms.gpus_per_vm();
  shmem.transport = vms.transport();
  shmem.quick = quick;
  json systems = run_shmem_systems(shmem, say);
  throw_if_stop_requested();
  return systems;
}

// clang-tidy 14 reports nlohmann::json's throwing default constructor through the implicit
// special members; nothing here is noexcept.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct InteropResult {
  json details;
  bool verified = false;
  std::string note;
};

// ethx's RoCEv2 engine against rdma_rxe in VM 0.
InteropResult engine_interop(GuestAgent& client, const std::string& netns_tag, const Say& say) {
  say("interop: ethx RoCEv2 engine <-> rdma_rxe in VM 0 (RDMA WRITE, then READ)");
  InteropOptions interop;
  interop.netns_tag = netns_tag;
  interop.vm = 0;
  interop.seed = static_cast<std::uint32_t>(::getpid() % 100000);
  InteropResult result;
  try {
    result.details = run_roce_interop(client, interop);
    result.verified = result.details.value("verified", false);
  } catch (const std::exception& error) {
    result.verified = false;
    result.details = {{"verified", false}, {"error", error.what()}};
  }
  throw_if_stop_requested();
  result.note = std::string("interop (engine WRITE ") + std::to_string(interop.write_bytes) +
                " B + READ " + std::to_string(interop.region_bytes) +
                " B against rdma_rxe): " + (result.verified ? "verified" : "FAILED");
  return result;
}

// Everything measured in the two VMs, in the Soft-RoCE system's schema: the guests' rxe0, the
// path between them, the same-VM load/store and OpenSHMEM systems, perftest and the interop.
// Unavailable (with why) when a guest has no rxe0 to measure. `notes` so far come first.
json measure_in_vms(const SoftRoceOptions& options, const SuiteVms& vms, json notes,
                    const std::function<double()>& elapsed_s, const Say& say) {
  GuestAgent client(vms.logs(), 0, 10'000);
  GuestAgent server(vms.logs(), 1, 10'000);
  const Agents agents = {&client, &server};
  json report = empty_system(
      kSystemSoftRoce,
      "rdma_rxe over virtio-net taps on the ethx switch (GPU ports: " + vms.transport() + ")");
  const GuestRdma rdma = check_guest_rdma(agents, vms.logs());
  report["details"]["guests"] = rdma.guests;
  if (!rdma.missing.empty()) {
    report["available"] = false;
    report["reason"] = rdma.missing;
    report["notes"] = notes;
    return report;
  }
  const auto [ping_note, ping_ok] = ping_peer(client);
  notes.push_back(ping_note);
  report["details"]["same_vms_load_store"] = same_vm_load_store(agents, vms, say);
  if (options.shmem) report["details"]["same_vms_shmem"] = same_vm_shmem(vms, options.quick, say);

  // perftest: server in VM 1, client in VM 0, pinned sizes and iteration counts.
  PerftestResults perftest = run_perftests(client, server, rdma.gid_index, options, elapsed_s, say);
  report["latency_us"] = perftest.latency_us;
  report["bandwidth_gbps"] = perftest.bandwidth_gbps;
  report["message_rate_mops"] = perftest.message_rate_mops;
  for (const std::string& note : perftest.notes) notes.push_back(note);
  report["details"]["runs"] = perftest.runs;
  // rxe's own counters after the runs: retries and duplicates show how hard TCG made it.
  report["details"]["guests_after_perftest"] =
      json::array({rdma_info(client).first, rdma_info(server).first});

  bool interop_ok = true;
  if (options.interop) {
    InteropResult interop = engine_interop(client, vms.netns_tag(), say);
    report["details"]["interop"] = interop.details;
    interop_ok = interop.verified;
    notes.push_back(interop.note);
  }
  notes.push_back("perftest measures with the guest's TSC under " + vms.accelerator() +
                  ": emulator wall-clock figures, not hardware figures");
  report["verified"] = perftest.all_ok && ping_ok && interop_ok && !report["latency_us"].empty();
  report["details"]["elapsed_s"] = elapsed_s();
  report["notes"] = notes;
  return report;
}

json run_suite(const SoftRoceOptions& options) {
  const auto started = Clock::now();
  const std::function<double()> elapsed_s = [&] {
    return std::chrono::duration<double>(Clock::now() - started).count();
  };
  const Say say = [&](const std::string& text) {
    if (!options.quiet) std::cerr << "ethx softroce: " << text << "\n";
  };
  if (::geteuid() != 0) {
    return unavailable(options.transport,
                       "needs root: the guest NICs are taps in a network namespace "
                       "joined to the switch by AF_PACKET sockets");
  }
  SuiteVms vms(options);
  if (const std::string missing = vms.missing_prerequisite(); !missing.empty()) {
    return unavailable(vms.transport(), missing);
  }
  install_stop_signals(false);
  std::signal(SIGPIPE, SIG_IGN);
  const std::string vms_note = vms.start(say, elapsed_s);
  json report = measure_in_vms(options, vms, json::array({vms_note}), elapsed_s, say);
  if (!report["available"].get<bool>()) return report;
  if (const std::string kept = vms.finish(report["verified"].get<bool>()); !kept.empty()) {
    report["notes"].push_back(kept);
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
