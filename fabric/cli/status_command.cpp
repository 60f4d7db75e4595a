#include "fabric/cli/status_command.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "fabric/config/fabric_names.hpp"
#include "fabric/control/run_state.hpp"
#include "fabric/node/peer_health_publisher.hpp"
#include "fabric/platform/shm_file.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/shm/control_region.hpp"
#include "switch/runtime/fault_change.hpp"

namespace ethx {
namespace {

using json = nlohmann::json;

// The ports that inject faults or have injected some, one line each; nothing if none did.
void print_faults(const json& ports) {
  bool header = false;
  for (const json& port : ports) {
    if (!port.contains("faults")) continue;  // a switch from before fault injection
    auto count = [&port](const char* key) {
      return static_cast<unsigned long long>(port.value(key, std::uint64_t{0}));
    };
    std::string active = describe_port_faults(port["faults"]);
    // A switch from before tx faults has neither the key nor the counters.
    const std::string tx = describe_port_faults(port.value("tx_faults", json::object()));
    if (tx != "none") {
      active = active == "none" ? std::string("sent: ") : active.append("; sent: ");
      active += tx;
    }
    if (active == "none" && count("faults_dropped") + count("faults_corrupted") +
                                    count("faults_reordered") + count("faults_delayed") +
                                    count("drops_link_down") + count("faults_tx_dropped") +
                                    count("faults_tx_corrupted") ==
                                0) {
      continue;
    }
    if (!header) std::printf("\n  injected faults:\n");
    header = true;
    std::printf(
        "  port %-3d %s; dropped %llu, corrupted %llu, reordered %llu, delayed %llu "
        "(%llu spikes), link-down drops %llu; sent: dropped %llu, corrupted %llu\n",
        port["port"].get<int>(), active.c_str(), count("faults_dropped"), count("faults_corrupted"),
        count("faults_reordered"), count("faults_delayed"), count("faults_delay_spikes"),
        count("drops_link_down"), count("faults_tx_dropped"), count("faults_tx_corrupted"));
  }
}

// Link-level retry on the ports that run it: the switch's end of each GPU's hop.
void print_link_retry(const json& ports) {
  bool header = false;
  for (const json& port : ports) {
    if (!port.contains("link_retry")) continue;
    const json& llr = port["link_retry"];
    auto count = [&llr](const char* key) {
      return static_cast<unsigned long long>(llr.value(key, std::uint64_t{0}));
    };
    if (!header) {
      std::printf(
          "\n  link-level retry (the switch's end of each hop):\n  %-5s %12s %10s %8s "
          "%8s %10s %10s %9s\n",
          "port", "sent", "replayed", "NAKs", "timeouts", "bad FCS", "gaps", "trainings");
    }
    header = true;
    std::printf("  %-5d %12llu %10llu %8llu %8llu %10llu %10llu %9llu\n", port["port"].get<int>(),
                count("frames_sent"), count("frames_replayed"), count("naks_sent"),
                count("replays_timeout"), count("drops_bad_fcs"), count("drops_out_of_sequence"),
                count("trainings_started") + count("trainings_answered"));
  }
}

// Flow control on the ports that run it: credit toward each GPU and its frames in the switch,
// per class (requests/responses), and how often either end waited.
void print_flow_control(const json& ports) {
  bool header = false;
  for (const json& port : ports) {
    if (!port.contains("flow_control")) continue;
    const json& flow = port["flow_control"];
    auto count = [&flow](const char* key) {
      return static_cast<unsigned long long>(flow.value(key, std::uint64_t{0}));
    };
    auto per_class = [&flow](const char* key) {
      const json& both = flow.value(key, json::object());
      return std::to_string(both.value("requests", std::uint64_t{0})) + "/" +
             std::to_string(both.value("responses", std::uint64_t{0}));
    };
    if (!header) {
      std::printf(
          "\n  flow control (requests/responses; credit toward the GPU, its bytes here):\n"
          "  %-5s %15s %15s %8s %9s %9s %8s %9s\n",
          "port", "credit B", "buffered B", "held", "updates", "received", "pauses", "overruns");
    }
    header = true;
    std::printf("  %-5d %15s %15s %8llu %9llu %9llu %8llu %9llu\n", port["port"].get<int>(),
                per_class("credit_bytes").c_str(), per_class("ingress_buffer_bytes").c_str(),
                count("frames_held"), count("credit_updates_sent"),
                count("credit_updates_received"), count("pause_frames_sent"),
                count("buffer_overruns"));
  }
}

void print_ports(const json& ports) {
  std::printf("\n  %-5s %12s %12s %10s %10s %10s %10s\n", "port", "rx frames", "tx frames",
              "malformed", "queue full", "unknown", "spoofed");
  for (const json& port : ports) {
    auto count = [&port](const char* key) {
      return static_cast<unsigned long long>(port.value(key, std::uint64_t{0}));
    };
    std::printf("  %-5d %12llu %12llu %10llu %10llu %10llu %10llu\n", port["port"].get<int>(),
                count("rx_frames"), count("tx_frames"), count("drops_malformed"),
                count("drops_queue_full"), count("drops_unknown_destination"),
                count("drops_spoofed"));
  }
  print_link_retry(ports);
  print_flow_control(ports);
  print_faults(ports);
}

// Each GPU's view of its peers, as its process last published it (PeerHealthBoard); an empty
// array when the fabric has no control region (nothing to read).
json peer_health_of(const RunState& state) {
  json gpus = json::array();
  const std::string name = control_region_name(state.fabric);
  if (!shm::SharedMemoryFile::exists(name)) return gpus;
  ControlRegion control = ControlRegion::attach(name);
  const auto count = std::min<std::size_t>(control.node_count(), state.gpus);
  for (std::uint32_t gpu = 0; gpu < count; ++gpu) {
    const PeerHealthBoard& board = control.node(gpu).peer_health;
    gpus.push_back({{"gpu", gpu},
                    {"down_peers", down_peers_of(board)},
                    {"peers_marked_down", board.peers_marked_down.load()},
                    {"peers_marked_up", board.peers_marked_up.load()},
                    {"ops_fast_failed", board.ops_fast_failed.load()}});
  }
  return gpus;
}

std::size_t gpus_with_down_peers(const json& peer_health) {
  return static_cast<std::size_t>(
      std::count_if(peer_health.begin(), peer_health.end(),
                    [](const json& gpu) { return !gpu["down_peers"].empty(); }));
}

std::string joined(const json& gpus) {
  std::string text;
  for (const json& gpu : gpus) text += (text.empty() ? "" : ",") + std::to_string(gpu.get<int>());
  return text;
}

// One line per GPU that has marked a peer down now or before; one line in all if none has.
void print_peer_health(const json& peer_health) {
  if (peer_health.empty()) return;
  bool any = false;
  for (const json& gpu : peer_health) {
    if (gpu["peers_marked_down"].get<std::uint64_t>() == 0) continue;
    if (!any) std::printf("\n  peer liveness (each GPU's requester):\n");
    any = true;
    const std::string down = joined(gpu["down_peers"]);
    std::printf("  gpu %-4d %-24s marked down %llu, back up %llu; %llu ops failed fast\n",
                gpu["gpu"].get<int>(), down.empty() ? "every peer up" : ("DOWN: " + down).c_str(),
                static_cast<unsigned long long>(gpu["peers_marked_down"].get<std::uint64_t>()),
                static_cast<unsigned long long>(gpu["peers_marked_up"].get<std::uint64_t>()),
                static_cast<unsigned long long>(gpu["ops_fast_failed"].get<std::uint64_t>()));
  }
  if (!any) std::printf("\n  peer liveness: no GPU has marked a peer down\n");
}

// The run's processes and namespaces with whether each is still there; `all_present` ends
// false if one is gone.
json presence_of(const RunState& state, bool& all_present) {
  json processes = json::array();
  for (const RecordedProcess& process : state.processes) {
    const bool running = process.running();
    all_present = all_present && running;
    processes.push_back({{"role", process.role}, {"pid", process.pid}, {"running", running}});
  }
  json namespaces = json::array();
  const std::vector<std::string> existing = netns::list_namespaces();
  for (const std::string& ns : state.namespaces) {
    const bool present = std::find(existing.begin(), existing.end(), ns) != existing.end();
    all_present = all_present && present;
    namespaces.push_back({{"name", ns}, {"present", present}});
  }
  return {{"processes", processes}, {"namespaces", namespaces}};
}

std::string headline(const RunState& state, bool all_present, std::size_t cut_off_gpus) {
  if (state.phase != "up") return "starting";
  // A peer marked down is a fact about the wire (a fault, a dead process) that the engine
  // recovers from by itself; only a missing process or namespace makes the fabric DEGRADED.
  std::string base = all_present ? "running" : "DEGRADED";
  if (cut_off_gpus == 0) return base;
  return base + ", " + std::to_string(cut_off_gpus) + " GPU(s) with a peer marked down";
}

void print_report(const RunState& state, const RunDirectory& directory, const json& report) {
  std::printf("fabric '%s': %zu GPUs over %s, %s (run directory %s)\n", state.name.c_str(),
              state.gpus, state.transport.c_str(), report["state"].get<std::string>().c_str(),
              directory.path().c_str());
  for (const json& process : report["processes"]) {
    std::printf("  %-10s pid %-8d %s\n", process["role"].get<std::string>().c_str(),
                process["pid"].get<int>(), process["running"].get<bool>() ? "running" : "GONE");
  }
  if (report.contains("switch")) print_ports(report["switch"]["ports"]);
  print_peer_health(report["peer_health"]);
}

}  // namespace

int run_status(const StatusOptions& options) {
  RunDirectory directory(options.name);
  const std::optional<RunState> state = directory.load();
  if (!state) {
    if (options.json) {
      std::cout << json{{"name", options.name}, {"up", false}}.dump(2) << "\n";
    } else {
      std::cout << "ethx status: no fabric '" << options.name << "' is up\n";
    }
    return 3;
  }
  json report = state->to_json();
  report["up"] = true;
  report["run_directory"] = directory.path();
  bool all_present = state->phase == "up";
  report.update(presence_of(*state, all_present));
  std::ifstream in(state->stats_file);
  json stats = in ? json::parse(in, nullptr, false) : json();
  if (!stats.is_discarded() && !stats.is_null()) report["switch"] = stats;
  report["peer_health"] = peer_health_of(*state);
  const std::size_t cut_off = gpus_with_down_peers(report["peer_health"]);
  report["state"] = headline(*state, all_present, cut_off);
  report["healthy"] = all_present;
  if (options.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    print_report(*state, directory, report);
  }
  return report["healthy"].get<bool>() ? 0 : 1;
}

}  // namespace ethx
