#include "fabric/bench/soak_command.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "address-map/config_error.hpp"
#include "fabric/config/config_overlay.hpp"
#include "fabric/config/topology_config.hpp"
#include "fabric/control/attached_fabric.hpp"
#include "fabric/control/fabric_launcher.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/transport/net/socket_transport.hpp"

namespace ethx {
namespace {

using nlohmann::json;

struct RunSpec {
  std::string label;
  std::string reliability;
  bool faults = false;
  std::uint64_t ops = 0;
};

// Samples of the echo and load latency measured before each run without faults.
constexpr std::uint32_t kLatencySamples = 2000;

void progress(const SoakOptions& options, const std::string& text) {
  if (!options.quiet) std::cerr << "ethx soak: " << text << "\n";
}

// The sum of one count over every node's soak result.
template <class Count>
std::uint64_t sum_of(const std::vector<protocol::SoakResult>& results, Count count) {
  std::uint64_t total = 0;
  for (const protocol::SoakResult& result : results) total += count(result);
  return total;
}

// Runs the soak mix on every GPU of a started fabric and sums what the nodes report.
std::vector<protocol::SoakResult> soak_all(FabricClient& client, std::size_t gpu_count,
                                           std::uint64_t ops, std::uint64_t seed) {
  const std::uint64_t per_gpu = (ops + gpu_count - 1) / gpu_count;
  std::vector<std::pair<GpuId, protocol::SoakCommand>> commands;
  for (std::size_t gpu = 0; gpu < gpu_count; ++gpu) {
    protocol::SoakCommand command;
    command.ops = per_gpu;
    command.seed = seed;
    commands.emplace_back(static_cast<GpuId>(gpu), command);
  }
  return client.call_parallel(commands);
}

// Flow control on the GPUs' hops, both ends: credit updates and pauses each way, how often a
// sender waited, and what overran a buffer. Empty without flow control.
json flow_control_totals(const std::vector<protocol::SoakResult>& results, const json& ports) {
  const auto gpus = [&results](std::uint64_t protocol::HopFlowStats::*count) {
    return sum_of(results, [count](const auto& r) { return r.stats.hop_flow.*count; });
  };
  std::uint64_t held = 0, updates = 0, pauses = 0, overruns = 0;
  bool any = false;
  for (const json& port : ports) {
    if (!port.contains("flow_control")) continue;
    any = true;
    const json& flow = port["flow_control"];
    held += flow.value("frames_held", std::uint64_t{0});
    updates += flow.value("credit_updates_sent", std::uint64_t{0});
    pauses += flow.value("pause_frames_sent", std::uint64_t{0});
    overruns += flow.value("buffer_overruns", std::uint64_t{0});
  }
  if (!any) return json::object();
  return {{"flow_frames_held_at_gpus", gpus(&protocol::HopFlowStats::frames_held)},
          {"flow_frames_held_at_switch", held},
          {"flow_credit_updates_sent_by_gpus", gpus(&protocol::HopFlowStats::credit_updates_sent)},
          {"flow_credit_updates_sent_by_switch", updates},
          {"flow_pause_frames_sent_by_switch", pauses},
          {"flow_buffer_overruns_at_switch", overruns},
          {"flow_resets_at_gpus", gpus(&protocol::HopFlowStats::resets)}};
}

json summarize(const RunSpec& spec, const std::vector<protocol::SoakResult>& results,
               const json& switch_stats);

json run_one(const SoakOptions& options, const std::string& transport, const RunSpec& spec,
             const std::string& config_path) {
  TopologyConfig topology = load_topology(config_path, options.gpus);
  const std::string fabric_name = "s" + std::to_string(::getpid()) + spec.label.substr(0, 1);
  LaunchOptions launch;
  launch.transport = transport;
  FabricLauncher fabric(fabric_name, config_path, topology, launch);
  progress(options, spec.label + ": " + std::to_string(topology.gpu_count) + " GPUs over " +
                        transport + ", reliability " + spec.reliability +
                        (spec.faults ? ", with faults" : ", no faults") + ", " +
                        std::to_string(spec.ops) + " operations");
  fabric.start();
  // What the mode costs one load when nothing is lost (not measured under faults: a lost echo
  // frame has no retransmission and would cost its whole timeout).
  std::optional<protocol::EchoAndLoadResult> latency;
  if (!spec.faults) {
    protocol::EchoAndLoadLatencyCommand command;
    command.peer = 1;
    command.count = kLatencySamples;
    command.bytes = 8;
    latency = fabric.client().call(0, command);
  }
  const std::vector<protocol::SoakResult> results =
      soak_all(fabric.client(), topology.gpu_count, spec.ops, options.seed);
  json run = summarize(spec, results, fabric.stop());
  if (latency) {
    run["load_p50_ns"] = latency->load.p50_ns;
    run["echo_p50_ns"] = latency->echo.p50_ns;
  }
  progress(options, spec.label + ": " + std::to_string(run["verified_ops"].get<std::uint64_t>()) +
                        " verified, " + std::to_string(run["mismatches"].get<std::uint64_t>()) +
                        " mismatches, " + std::to_string(run["hung_ops"].get<std::uint64_t>()) +
                        " hung, " + std::to_string(run["mops"].get<double>()) + " Mops/s");
  return run;
}

// Link-level retry on the GPUs' hops, both ends: what the GPUs replayed towards the switch and
// what the switch replayed towards them. Empty without LLR.
json link_retry_totals(const std::vector<protocol::SoakResult>& results, const json& ports) {
  const auto gpus = [&results](std::uint64_t protocol::HopRetryStats::*count) {
    return sum_of(results, [count](const auto& r) { return r.stats.hop_retry.*count; });
  };
  std::uint64_t switch_sent = 0, switch_replayed = 0, switch_naks = 0, switch_timeouts = 0;
  std::uint64_t switch_lost = 0, switch_gave_up = 0;
  for (const json& port : ports) {
    if (!port.contains("link_retry")) continue;
    const json& llr = port["link_retry"];
    switch_sent += llr.value("frames_sent", std::uint64_t{0});
    switch_replayed += llr.value("frames_replayed", std::uint64_t{0});
    switch_naks += llr.value("naks_sent", std::uint64_t{0});
    switch_timeouts += llr.value("replays_timeout", std::uint64_t{0});
    switch_lost += llr.value("frames_lost_on_reset", std::uint64_t{0});
    switch_gave_up += llr.value("gave_up", std::uint64_t{0});
  }
  const std::uint64_t gpus_sent = gpus(&protocol::HopRetryStats::frames_sent);
  if (gpus_sent + switch_sent == 0) return json::object();
  return {
      {"llr_frames_sent_by_gpus", gpus_sent},
      {"llr_frames_replayed_by_gpus", gpus(&protocol::HopRetryStats::frames_replayed)},
      {"llr_frames_sent_by_switch", switch_sent},
      {"llr_frames_replayed_by_switch", switch_replayed},
      {"llr_naks_sent", gpus(&protocol::HopRetryStats::naks_sent) + switch_naks},
      {"llr_replay_timeouts", gpus(&protocol::HopRetryStats::replays_timeout) + switch_timeouts},
      {"llr_trainings", gpus(&protocol::HopRetryStats::trainings)},
      // Either loses frames for good: a reset with frames unacknowledged, a far end given up on.
      {"llr_frames_lost_on_reset",
       gpus(&protocol::HopRetryStats::frames_lost_on_reset) + switch_lost},
      {"llr_gave_up", gpus(&protocol::HopRetryStats::gave_up) + switch_gave_up}};
}

json summarize(const RunSpec& spec, const std::vector<protocol::SoakResult>& results,
               const json& switch_stats) {
  std::uint64_t first_start = 0, last_end = 0;
  for (const protocol::SoakResult& result : results) {
    if (first_start == 0 || result.start_ns < first_start) first_start = result.start_ns;
    last_end = std::max(last_end, result.end_ns);
  }
  const double seconds =
      last_end > first_start ? static_cast<double>(last_end - first_start) * 1e-9 : 0.0;
  const std::uint64_t ops = sum_of(results, [](const auto& r) { return r.ops; });
  std::uint64_t faults_dropped = 0, faults_corrupted = 0, wire_bytes = 0, switch_malformed = 0;
  std::uint64_t switch_queue_full = 0;
  const std::uint64_t frames_tx = sum_of(results, [](const auto& r) { return r.stats.frames_tx; });
  const auto links = [&results](std::uint64_t protocol::LinkStats::*count) {
    return sum_of(results, [count](const auto& r) { return r.stats.links.*count; });
  };
  const json ports =
      switch_stats.is_object() ? switch_stats.value("ports", json::array()) : json::array();
  for (const json& port : ports) {
    // Injected on either side of the port: what it received (rx) and what it sent (tx).
    faults_dropped += port.value("faults_dropped", std::uint64_t{0}) +
                      port.value("faults_tx_dropped", std::uint64_t{0});
    faults_corrupted += port.value("faults_corrupted", std::uint64_t{0}) +
                        port.value("faults_tx_corrupted", std::uint64_t{0});
    switch_malformed += port.value("drops_malformed", std::uint64_t{0});
    switch_queue_full += port.value("drops_queue_full", std::uint64_t{0});
    wire_bytes += port.value("rx_bytes", std::uint64_t{0});
  }
  json run{{"label", spec.label},
           {"reliability", spec.reliability},
           {"faults", spec.faults},
           {"ops", ops},
           {"verified_ops", sum_of(results, [](const auto& r) { return r.verified_ops; })},
           {"mismatches", sum_of(results, [](const auto& r) { return r.mismatches; })},
           {"hung_ops", sum_of(results, [](const auto& r) { return r.timeouts; })},
           {"errors", sum_of(results, [](const auto& r) { return r.errors; })},
           {"seconds", seconds},
           {"mops", seconds > 0 ? static_cast<double>(ops) / seconds / 1e6 : 0.0},
           {"frames_sent", frames_tx},
           {"retransmitted_on_nak", links(&protocol::LinkStats::retransmitted_on_nak)},
           {"retransmitted_on_timer", links(&protocol::LinkStats::retransmitted_on_timer)},
           {"retransmit_timeouts", links(&protocol::LinkStats::retransmit_timeouts)},
           {"acks_sent", links(&protocol::LinkStats::acks_sent)},
           {"naks_sent", links(&protocol::LinkStats::naks_sent)},
           {"duplicates_dropped", links(&protocol::LinkStats::duplicates_dropped)},
           {"gaps_dropped", links(&protocol::LinkStats::gaps_dropped)},
           {"frames_held_for_credit", links(&protocol::LinkStats::frames_held)}};
  // Switch counters only when this run owned its switch (an attached fabric's are cumulative;
  // `ethx status` shows them).
  if (!ports.empty()) {
    run["frame_bytes_received_by_switch"] = wire_bytes;
    run["frame_bytes_per_op"] =
        ops > 0 ? static_cast<double>(wire_bytes) / static_cast<double>(ops) : 0.0;
    run["switch_faults_dropped"] = faults_dropped;
    run["switch_faults_corrupted"] = faults_corrupted;
    run["switch_drops_malformed"] = switch_malformed;
    // Frames the switch dropped itself (a full egress queue): no link layer repairs these.
    run["switch_drops_queue_full"] = switch_queue_full;
  }
  run["malformed_at_nodes"] = sum_of(results, [](const auto& r) { return r.stats.malformed; });
  run["misdelivered_at_nodes"] =
      sum_of(results, [](const auto& r) { return r.stats.misdelivered; });
  run["foreign_frames_at_nodes"] =
      sum_of(results, [](const auto& r) { return r.stats.foreign_frames; });
  run["stale_responses"] = sum_of(results, [](const auto& r) { return r.stats.stale_responses; });
  run.update(link_retry_totals(results, ports));
  run.update(flow_control_totals(results, ports));
  return run;
}

void print_table(const json& report) {
  std::vector<const json*> runs;
  std::printf("%-26s", "");
  for (const json& run : report["runs"]) {
    runs.push_back(&run);
    std::printf(" %12s", run["label"].get<std::string>().c_str());
  }
  std::printf("\n");
  auto row = [&](const char* name, const char* key, bool is_double) {
    std::printf("%-26s", name);
    for (const json* run : runs) {
      if (!run->contains(key)) {
        std::printf(" %12s", "-");
      } else if (is_double) {
        std::printf(" %12.3f", (*run)[key].get<double>());
      } else {
        std::printf(" %12llu", static_cast<unsigned long long>((*run)[key].get<std::uint64_t>()));
      }
    }
    std::printf("\n");
  };
  row("operations", "ops", false);
  row("verified operations", "verified_ops", false);
  row("mismatches", "mismatches", false);
  row("hung (timed out)", "hung_ops", false);
  row("errors", "errors", false);
  row("throughput, Mops/s", "mops", true);
  row("8 B load p50, ns", "load_p50_ns", true);
  row("frame bytes per op", "frame_bytes_per_op", true);
  row("injected drops", "switch_faults_dropped", false);
  row("injected corruptions", "switch_faults_corrupted", false);
  row("resent after NAK", "retransmitted_on_nak", false);
  row("resent after timer", "retransmitted_on_timer", false);
  row("standalone ACKs", "acks_sent", false);
  row("duplicates dropped", "duplicates_dropped", false);
  if (runs.back()->contains("llr_frames_sent_by_gpus")) {
    row("LLR replayed by GPUs", "llr_frames_replayed_by_gpus", false);
    row("LLR replayed by switch", "llr_frames_replayed_by_switch", false);
    row("LLR NAKs", "llr_naks_sent", false);
    row("LLR replay timeouts", "llr_replay_timeouts", false);
  }
  if (runs.back()->contains("flow_frames_held_at_switch")) {
    row("held for credit: GPUs", "flow_frames_held_at_gpus", false);
    row("held for credit: switch", "flow_frames_held_at_switch", false);
    row("credit updates: GPUs", "flow_credit_updates_sent_by_gpus", false);
    row("credit updates: switch", "flow_credit_updates_sent_by_switch", false);
    row("pauses sent by switch", "flow_pause_frames_sent_by_switch", false);
    row("switch buffer overruns", "flow_buffer_overruns_at_switch", false);
  }
  if (report.contains("faulted_to_sequenced_throughput")) {
    std::printf("faulted / sequenced throughput: %.3f\n",
                report["faulted_to_sequenced_throughput"].get<double>());
    std::printf("sequenced / bare throughput:    %.3f\n",
                report["sequenced_to_bare_throughput"].get<double>());
  }
}

// `ethx soak --fabric NAME`: the mix on a fabric `ethx up` left running, with its own config
// and whatever faults `ethx fault` has set; the switch's counters are in `ethx status`.
json run_attached(const SoakOptions& options) {
  AttachedFabric fabric(options.fabric);
  const TopologyConfig topology = fabric.topology();
  const RunSpec spec{"attached", topology.reliability.enabled ? "go-back-n" : "off", false,
                     options.ops};
  progress(options, "attached to fabric '" + options.fabric + "' (" +
                        std::to_string(topology.gpu_count) + " GPUs over " +
                        fabric.state().transport + ", reliability " + spec.reliability + "), " +
                        std::to_string(options.ops) + " operations");
  json report{{"gpus", topology.gpu_count},
              {"transport", fabric.state().transport},
              {"fabric", options.fabric},
              {"reliability", spec.reliability},
              {"runs", json::array()}};
  report["runs"].push_back(summarize(
      spec, soak_all(fabric.client(), topology.gpu_count, options.ops, options.seed), json()));
  return report;
}

// Judges the last run (the faulted one, or the attached one), prints, returns the exit status.
int finish(json& report, const SoakOptions& options) {
  const json& judged = report["runs"].back();
  const bool clean = judged["mismatches"].get<std::uint64_t>() == 0 &&
                     judged["hung_ops"].get<std::uint64_t>() == 0 &&
                     judged["errors"].get<std::uint64_t>() == 0;
  report["passed"] = clean;
  if (options.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    print_table(report);
    std::printf("%s\n", clean ? "PASSED: nothing lost, corrupted or hung"
                              : "FAILED: operations were lost, corrupted or hung");
  }
  return clean ? 0 : 1;
}

// What the options cannot be (a reliability mode or a rate out of range): says which, and
// returns false.
bool valid_soak_options(const SoakOptions& options) {
  if (!parse_reliability_mode(options.reliability)) {
    std::cerr << "ethx soak: --reliability: must be \"off\" or \"go-back-n\" (got \""
              << options.reliability << "\")\n";
    return false;
  }
  if (!options.link_retry.empty() && options.link_retry != "none" && options.link_retry != "llr") {
    std::cerr << "ethx soak: --link-retry: must be \"none\" or \"llr\" (got \""
              << options.link_retry << "\")\n";
    return false;
  }
  if (!options.flow_control.empty() && !parse_flow_control_mode(options.flow_control)) {
    std::cerr << "ethx soak: --flow-control: must be \"none\", \"cbfc\" or \"pfc\" (got \""
              << options.flow_control << "\")\n";
    return false;
  }
  const std::string& direction = options.fault_direction;
  if (direction != "rx" && direction != "tx" && direction != "both") {
    std::cerr << "ethx soak: --fault-direction: must be \"rx\", \"tx\" or \"both\" (got \""
              << direction << "\")\n";
    return false;
  }
  if (direction != "rx" && options.reorder_rate > 0) {
    std::cerr << "ethx soak: --reorder applies to --fault-direction rx only (a sending port has "
                 "no ingress link)\n";
    return false;
  }
  for (const auto& [name, rate] :
       {std::pair{"--loss", options.loss_rate}, std::pair{"--corrupt", options.corrupt_rate},
        std::pair{"--reorder", options.reorder_rate}}) {
    if (!(rate >= 0.0 && rate <= 1.0)) {
      std::cerr << "ethx soak: " << name << ": must be a probability in [0, 1] (got " << rate
                << ")\n";
      return false;
    }
  }
  return true;
}

int soak_attached(const SoakOptions& options) {
  json report;
  try {
    report = run_attached(options);
  } catch (const FabricNotUp& error) {
    std::cerr << "ethx soak: " << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "ethx soak: " << error.what() << "\n";
    return 1;
  }
  return finish(report, options);
}

// The runs of a soak on fabrics of its own: the two baselines (unless skipped), then the
// faulted run.
std::vector<RunSpec> plan_runs(const SoakOptions& options) {
  const std::uint64_t baseline_ops = options.baseline_ops > 0
                                         ? options.baseline_ops
                                         : std::min<std::uint64_t>(options.ops, 2'000'000);
  std::vector<RunSpec> specs;
  if (!options.skip_baselines) {
    specs.push_back({"bare", "off", false, baseline_ops});
    specs.push_back({"sequenced", options.reliability, false, baseline_ops});
  }
  specs.push_back({"faulted", options.reliability, true, options.ops});
  return specs;
}

// The run's topology file in `directory`: the user's config with the run's reliability mode
// and, for the faulted run, the faults on every switch port. Returns its path.
std::string write_run_config(const SoakOptions& options, const RunSpec& spec, std::size_t gpu_count,
                             const std::filesystem::path& directory) {
  ConfigOverlay overlay;
  overlay.reliability_mode = spec.reliability;
  std::vector<std::pair<PortId, PortFaults>> faults;
  if (spec.faults) {
    for (std::size_t port = 0; port < gpu_count; ++port) {
      faults.emplace_back(
          static_cast<PortId>(port),
          PortFaults{options.loss_rate, options.corrupt_rate, options.reorder_rate});
    }
  }
  overlay.faults = faults;
  overlay.fault_seed = options.seed;
  overlay.fault_direction = options.fault_direction;
  if (!options.link_retry.empty()) overlay.link_retry = options.link_retry;
  if (!options.flow_control.empty()) overlay.flow_control = options.flow_control;
  std::string path = (directory / (spec.label + ".toml")).string();
  write_config_overlay(options.config_path, overlay, path);
  return path;
}

// What reliability costs: throughput ratios of the three runs (none when baselines were
// skipped).
json throughput_ratios(const json& runs) {
  if (runs.size() != 3) return json::object();
  const double bare = runs[0]["mops"].get<double>();
  const double sequenced = runs[1]["mops"].get<double>();
  return {{"sequenced_to_bare_throughput", bare > 0 ? sequenced / bare : 0.0},
          {"faulted_to_sequenced_throughput",
           sequenced > 0 ? runs[2]["mops"].get<double>() / sequenced : 0.0}};
}

// The run's topology files live only as long as the command.
class ScratchDirectory {
 public:
  explicit ScratchDirectory(std::filesystem::path path) : path_(std::move(path)) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

int run_soak(const SoakOptions& options) {
  std::string transport;
  try {
    transport = choose_transport(options.transport, "ethx soak");
  } catch (const TransportUnavailable& error) {
    std::cerr << error.what() << "\n";
    return 2;
  }
  if (!valid_soak_options(options)) return 2;
  install_stop_signals(false);
  std::signal(SIGPIPE, SIG_IGN);
  if (!options.fabric.empty()) return soak_attached(options);
  const TopologyConfig base = load_topology(options.config_path, options.gpus);
  const ScratchDirectory directory(std::filesystem::temp_directory_path() /
                                   ("ethx-soak-" + std::to_string(::getpid())));
  const std::vector<RunSpec> specs = plan_runs(options);
  json report{{"gpus", base.gpu_count},
              {"transport", transport},
              {"loss_rate", options.loss_rate},
              {"corrupt_rate", options.corrupt_rate},
              {"reorder_rate", options.reorder_rate},
              {"reliability", options.reliability},
              {"link_retry", !options.link_retry.empty() ? options.link_retry
                                                         : (base.link_retry ? "llr" : "none")},
              {"flow_control", !options.flow_control.empty()
                                   ? options.flow_control
                                   : std::string(to_string(base.flow_control.mode))},
              {"fault_direction", options.fault_direction},
              {"runs", json::array()}};
  try {
    for (const RunSpec& spec : specs) {
      const std::string path = write_run_config(options, spec, base.gpu_count, directory.path());
      report["runs"].push_back(run_one(options, transport, spec, path));
    }
  } catch (const ConfigError& error) {
    std::cerr << "ethx soak: " << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "ethx soak: " << error.what() << "\n";
    return 1;
  }
  report.update(throughput_ratios(report["runs"]));
  return finish(report, options);
}

}  // namespace ethx
