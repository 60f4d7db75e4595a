#include "fabric/config/topology_config.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <toml.hpp>

#include "fabric/config/default_topology_text.hpp"
#include "fabric/config/table_reader_internal.hpp"
#include "fabric/config/utf8.hpp"

namespace ethx {
namespace {

const toml::value* find_child(const toml::value& root, const std::string& key) {
  const auto& table = root.as_table();
  auto found = table.find(key);
  return found == table.end() ? nullptr : &found->second;
}

}  // namespace

std::optional<bool> parse_reliability_mode(std::string_view mode) {
  if (mode == "off") return false;
  if (mode == "go-back-n") return true;
  return std::nullopt;
}

namespace {

void read_fabric(const toml::value& node, const std::string& source, TopologyConfig& config) {
  TableReader fabric(node, "fabric", source);
  fabric.allow_only({"gpus", "hbm_bytes", "aperture_bytes", "frame_bytes_max", "max_outstanding",
                     "request_timeout_ns", "write_combine_ns", "default_rights"});
  config.gpu_count = fabric.unsigned_field("gpus", config.gpu_count, kMinGpus, kMaxGpus);
  config.hbm_bytes = fabric.unsigned_field("hbm_bytes", config.hbm_bytes, 4096, 1ull << 40);
  if (config.hbm_bytes % 4096 != 0) fabric.fail("hbm_bytes", "must be a multiple of 4096");
  config.aperture_bytes =
      fabric.unsigned_field("aperture_bytes", config.aperture_bytes, 4096, 1ull << 40);
  config.frame_bytes_max = fabric.unsigned_field("frame_bytes_max", config.frame_bytes_max, 128,
                                                 wire::kAbsoluteFrameBytesMax);
  config.max_outstanding = static_cast<std::uint32_t>(
      fabric.unsigned_field("max_outstanding", config.max_outstanding, 1, kMaxOutstandingLimit));
  config.request_timeout_ns =
      fabric.unsigned_field("request_timeout_ns", config.request_timeout_ns, 1000, 60'000'000'000);
  config.write_combine_ns =
      fabric.unsigned_field("write_combine_ns", config.write_combine_ns, 0, 1'000'000'000);
  config.default_rights = fabric.rights_field("default_rights", config.default_rights);
}

void read_switch(const toml::value& node, const std::string& source, TopologyConfig& config) {
  TableReader table(node, "switch", source);
  table.allow_only(
      {"forwarding_latency_ns", "egress_queue_bytes", "learning", "port_security", "fault_seed"});
  config.fault_seed = table.unsigned_field("fault_seed", config.fault_seed, 0,
                                           std::numeric_limits<std::uint64_t>::max() >> 1);
  config.switch_forwarding_latency_ns = table.unsigned_field(
      "forwarding_latency_ns", config.switch_forwarding_latency_ns, 0, 1'000'000'000);
  config.switch_egress_queue_bytes = table.unsigned_field(
      "egress_queue_bytes", config.switch_egress_queue_bytes, 4096, 1ull << 32);
  config.switch_learning = table.bool_field("learning", config.switch_learning);
  config.switch_port_security = table.bool_field("port_security", config.switch_port_security);
}

void read_reliability(const toml::value& node, const std::string& source, TopologyConfig& config) {
  TableReader table(node, "reliability", source);
  table.allow_only({"mode", "window_frames", "retransmit_timeout_ns", "retransmit_timeout_max_ns",
                    "ack_delay_ns"});
  ReliabilityConfig& reliability = config.reliability;
  const std::string mode = table.string_field("mode", reliability.enabled ? "go-back-n" : "off");
  const std::optional<bool> enabled = parse_reliability_mode(mode);
  if (!enabled) table.fail("mode", "must be \"off\" or \"go-back-n\" (got \"" + mode + "\")");
  reliability.enabled = *enabled;
  reliability.window_frames = static_cast<std::uint32_t>(
      table.unsigned_field("window_frames", reliability.window_frames, 1, kMaxWindowFrames));
  reliability.retransmit_timeout_ns = table.unsigned_field(
      "retransmit_timeout_ns", reliability.retransmit_timeout_ns, 1000, 10'000'000'000);
  reliability.retransmit_timeout_max_ns =
      table.unsigned_field("retransmit_timeout_max_ns", reliability.retransmit_timeout_max_ns,
                           reliability.retransmit_timeout_ns, 60'000'000'000);
  reliability.ack_delay_ns =
      table.unsigned_field("ack_delay_ns", reliability.ack_delay_ns, 0, 1'000'000'000);
}

void read_liveness(const toml::value& node, const std::string& source, TopologyConfig& config) {
  TableReader table(node, "liveness", source);
  table.allow_only({"down_after_timeouts", "timeout_window_ns", "probe_interval_ns"});
  LivenessConfig& liveness = config.liveness;
  liveness.down_after_timeouts = static_cast<std::uint32_t>(
      table.unsigned_field("down_after_timeouts", liveness.down_after_timeouts, 0, 1'000'000));
  liveness.timeout_window_ns = table.unsigned_field("timeout_window_ns", liveness.timeout_window_ns,
                                                    1000, 3'600'000'000'000);
  liveness.probe_interval_ns = table.unsigned_field("probe_interval_ns", liveness.probe_interval_ns,
                                                    1000, 3'600'000'000'000);
}

// [link] retry = "none" | "llr" and the LLR parameters (docs/link-layer.md).
void read_link_retry(TableReader& table, TopologyConfig& config) {
  const std::string retry = table.string_field("retry", config.link_retry ? "llr" : "none");
  if (retry != "none" && retry != "llr") {
    table.fail("retry", "must be \"none\" or \"llr\" (got \"" + retry + "\")");
  }
  config.link_retry = retry == "llr";
  LinkRetryConfig& llr = config.link_retry_config;
  llr.replay_buffer_bytes =
      table.unsigned_field("replay_buffer_bytes", llr.replay_buffer_bytes, 1, 1ull << 32);
  llr.replay_timeout_ns =
      table.unsigned_field("replay_timeout_ns", llr.replay_timeout_ns, 100, 10'000'000'000);
  llr.ack_every_frames = static_cast<std::uint32_t>(
      table.unsigned_field("ack_every_frames", llr.ack_every_frames, 1, 1'000'000));
  llr.ack_delay_ns = table.unsigned_field("ack_delay_ns", llr.ack_delay_ns, 0, 1'000'000'000);
  if (!config.link_retry) return;
  const std::size_t min_bytes = min_replay_buffer_bytes(
      llr, config.link_rate_gbps, config.link_propagation_ns, config.frame_bytes_max);
  if (llr.replay_buffer_bytes < min_bytes) {
    table.fail("replay_buffer_bytes",
               "is too small for the hop's round trip: at least " + std::to_string(min_bytes) +
                   " bytes at rate_gbps, propagation_ns, ack_delay_ns and fabric.frame_bytes_max "
                   "(got " +
                   std::to_string(llr.replay_buffer_bytes) + ")");
  }
}

// [link] flow_control = "none" | "cbfc" | "pfc" and its buffer per class (docs/link-layer.md).
void read_flow_control(TableReader& table, TopologyConfig& config) {
  FlowControlConfig& flow = config.flow_control;
  const std::string mode = table.string_field("flow_control", to_string(flow.mode));
  const std::optional<FlowControlMode> parsed = parse_flow_control_mode(mode);
  if (!parsed) {
    table.fail("flow_control", "must be \"none\", \"cbfc\" or \"pfc\" (got \"" + mode + "\")");
  }
  flow.mode = *parsed;
  flow.frame_bytes_max = config.frame_bytes_max;
  // At most 2^30: credits are counted in running totals modulo 2^32 (flow_control.hpp).
  flow.class_buffer_bytes =
      table.unsigned_field("class_buffer_bytes", flow.class_buffer_bytes, 1, 1ull << 30);
  flow.credit_update_bytes =
      table.unsigned_field("credit_update_bytes", flow.credit_update_bytes, 1, 1ull << 32);
  if (flow.mode == FlowControlMode::kNone) return;
  if (flow.class_buffer_bytes < config.frame_bytes_max) {
    table.fail("class_buffer_bytes",
               "must hold at least one largest frame (fabric.frame_bytes_max " +
                   std::to_string(config.frame_bytes_max) +
                   "), or no credit "
                   "ever lets it go (got " +
                   std::to_string(flow.class_buffer_bytes) + ")");
  }
  if (flow.credit_update_bytes > flow.class_buffer_bytes) {
    table.fail("credit_update_bytes", "must not exceed class_buffer_bytes (got " +
                                          std::to_string(flow.credit_update_bytes) + ")");
  }
  const std::size_t min_pfc = min_pfc_buffer_bytes(
      config.link_rate_gbps, config.link_propagation_ns, config.frame_bytes_max);
  if (flow.mode == FlowControlMode::kPfc && flow.class_buffer_bytes < min_pfc) {
    table.fail("class_buffer_bytes",
               "cannot hold PFC's headroom (the hop's round trip, two largest frames and the "
               "pause frame) and two frames more: at least " +
                   std::to_string(min_pfc) +
                   " bytes at rate_gbps, propagation_ns and "
                   "fabric.frame_bytes_max (got " +
                   std::to_string(flow.class_buffer_bytes) + ")");
  }
}

void read_link(const toml::value& node, const std::string& source, TopologyConfig& config) {
  TableReader table(node, "link", source);
  table.allow_only({"rate_gbps", "propagation_ns", "retry", "replay_buffer_bytes",
                    "replay_timeout_ns", "ack_every_frames", "ack_delay_ns", "flow_control",
                    "class_buffer_bytes", "credit_update_bytes"});
  config.link_rate_gbps = table.double_field("rate_gbps", config.link_rate_gbps, 0.001, 1e6);
  config.link_propagation_ns =
      table.unsigned_field("propagation_ns", config.link_propagation_ns, 0, 1'000'000'000);
  read_link_retry(table, config);
  read_flow_control(table, config);
}

void read_sim(const toml::value& node, const std::string& source, TopologyConfig& config) {
  TableReader table(node, "sim", source);
  table.allow_only({"issue_ns", "completer_ns", "nic_latency_ns", "crc"});
  config.sim_issue_ns = table.unsigned_field("issue_ns", config.sim_issue_ns, 0, 1'000'000'000);
  config.sim_completer_ns =
      table.unsigned_field("completer_ns", config.sim_completer_ns, 0, 1'000'000'000);
  config.sim_nic_latency_ns =
      table.unsigned_field("nic_latency_ns", config.sim_nic_latency_ns, 0, 1'000'000'000);
  config.sim_crc = table.bool_field("crc", config.sim_crc);
}

// Interface and namespace names: empty (the default) or a plain file name.
bool valid_linux_name(const std::string& name, std::size_t max_length) {
  if (name.size() > max_length || name == "." || name == "..") return false;
  for (char c : name) {
    if (c == '/' || c <= ' ' || c == 0x7f) return false;
  }
  return true;
}

void read_gpus(const toml::value& node, const std::string& source, TopologyConfig& config,
               std::vector<std::pair<GpuId, GpuConfig>>& overrides) {
  if (!node.is_array()) throw ConfigError(source + ": gpu: must be an array of tables [[gpu]]");
  std::size_t index = 0;
  for (const toml::value& entry : node.as_array()) {
    TableReader gpu(entry, "gpu[" + std::to_string(index++) + "]", source);
    gpu.allow_only(
        {"id", "mac", "partition", "export_rights", "interface", "netns", "reliability"});
    if (!gpu.has("id")) gpu.fail("id", "is required");
    GpuConfig override;
    override.id = static_cast<GpuId>(gpu.unsigned_field("id", 0, 0, kMaxGpus - 1));
    override.mac = gpu.mac_field("mac", default_mac_for_gpu(override.id));
    override.partition = static_cast<std::uint16_t>(gpu.unsigned_field("partition", 0, 0, 0xFFFF));
    override.export_rights = gpu.rights_field("export_rights", config.default_rights);
    override.interface = gpu.string_field("interface", "");
    if (!valid_linux_name(override.interface, 15)) {
      gpu.fail("interface",
               "must be an interface name of at most 15 characters without '/' "
               "or whitespace (got \"" +
                   override.interface + "\")");
    }
    override.netns = gpu.string_field("netns", "");
    if (!valid_linux_name(override.netns, 255)) {
      gpu.fail("netns", "must be a network namespace name without '/' or whitespace");
    }
    if (gpu.has("reliability")) {
      const std::string mode = gpu.string_field("reliability", "off");
      override.reliable = parse_reliability_mode(mode);
      if (!override.reliable) {
        gpu.fail("reliability", "must be \"off\" or \"go-back-n\" (got \"" + mode + "\")");
      }
    }
    overrides.emplace_back(override.id, override);
  }
}

// One [[fault]] table's rates; `tx` (direction "tx") allows only what a sending port can do.
PortFaults read_port_faults(TableReader& table, bool tx) {
  PortFaults faults;
  faults.drop_rate = table.double_field("drop_rate", 0.0, 0.0, 1.0);
  faults.corrupt_rate = table.double_field("corrupt_rate", 0.0, 0.0, 1.0);
  faults.reorder_rate = table.double_field("reorder_rate", 0.0, 0.0, 1.0);
  faults.delay_spike_rate = table.double_field("delay_spike_rate", 0.0, 0.0, 1.0);
  faults.delay_spike_ns =
      table.unsigned_field("delay_spike_us", 0, 0, kMaxDelaySpikeNs / 1000) * 1000;
  // A rate without a length (or the reverse) would silently inject nothing.
  if ((faults.delay_spike_rate > 0) != (faults.delay_spike_ns > 0)) {
    table.fail(faults.delay_spike_rate > 0 ? "delay_spike_us" : "delay_spike_rate",
               "is needed too: a delay spike has a rate and a length");
  }
  const std::string link = table.string_field("link", "up");
  if (link != "up" && link != "down") table.fail("link", "must be \"up\" or \"down\"");
  faults.link_down = link == "down";
  if (!tx) return faults;
  for (const char* field : {"reorder_rate", "delay_spike_rate", "delay_spike_us", "link"}) {
    if (table.has(field)) {
      table.fail(field, "applies to direction = \"rx\" only (a sending port has no ingress link)");
    }
  }
  return faults;
}

// Faults that flow control cannot live with yet ([link] is read before [[fault]]).
void check_faults_with_flow_control(TableReader& table, const PortFaults& faults,
                                    const TopologyConfig& config) {
  const FlowControlMode mode = config.flow_control.mode;
  if (mode == FlowControlMode::kNone) return;
  // A stalled link's frames would give their buffer back and be tail-dropped behind it.
  if (faults.delay_spike_rate > 0) {
    table.fail("delay_spike_rate", "cannot be combined with link.flow_control yet");
  }
  // A lost frame or credit update costs its credit for good unless the hop repairs it.
  if (mode == FlowControlMode::kCbfc && !config.link_retry &&
      (faults.drop_rate > 0 || faults.corrupt_rate > 0)) {
    table.fail(faults.drop_rate > 0 ? "drop_rate" : "corrupt_rate",
               "with link.flow_control = \"cbfc\" needs link.retry = \"llr\": a lost frame or "
               "credit update would take its credit away for good");
  }
}

void read_faults(const toml::value& node, const std::string& source, TopologyConfig& config) {
  if (!node.is_array()) throw ConfigError(source + ": fault: must be an array of tables [[fault]]");
  std::size_t index = 0;
  for (const toml::value& entry : node.as_array()) {
    TableReader table(entry, "fault[" + std::to_string(index++) + "]", source);
    table.allow_only({"port", "direction", "drop_rate", "corrupt_rate", "reorder_rate",
                      "delay_spike_rate", "delay_spike_us", "link"});
    if (!table.has("port")) table.fail("port", "is required");
    const auto port = static_cast<PortId>(table.unsigned_field("port", 0, 0, kMaxGpus - 1));
    // Which way along the GPU's hop: "rx" what the switch port receives (from the GPU), "tx"
    // what it sends (to the GPU), "both".
    const std::string direction = table.string_field("direction", "rx");
    if (direction != "rx" && direction != "tx" && direction != "both") {
      table.fail("direction", "must be \"rx\", \"tx\" or \"both\" (got \"" + direction + "\")");
    }
    const PortFaults faults = read_port_faults(table, direction != "rx");
    check_faults_with_flow_control(table, faults, config);
    if (direction != "tx") config.faults.emplace_back(port, faults);
    if (direction != "rx") config.tx_faults.emplace_back(port, faults);
  }
}

void read_windows(const toml::value& node, const std::string& source, TopologyConfig& config) {
  if (!node.is_array()) {
    throw ConfigError(source + ": window: must be an array of tables [[window]]");
  }
  std::size_t index = 0;
  for (const toml::value& entry : node.as_array()) {
    TableReader table(entry, "window[" + std::to_string(index) + "]", source);
    table.allow_only({"name", "offset", "size", "gpu", "remote_base", "rights"});
    for (const char* required : {"offset", "size", "gpu"}) {
      if (!table.has(required)) table.fail(required, "is required");
    }
    Window window;
    window.name = table.string_field("name", "window" + std::to_string(index));
    const auto max = std::numeric_limits<std::uint64_t>::max() >> 1;
    window.window_offset = table.unsigned_field("offset", 0, 0, max);
    window.size_bytes = table.unsigned_field("size", 0, 1, max);
    window.dst_gpu = static_cast<GpuId>(table.unsigned_field("gpu", 0, 0, kMaxGpus - 1));
    window.remote_base = table.unsigned_field("remote_base", 0, 0, max);
    window.rights = table.rights_field("rights", config.default_rights);
    config.custom_windows.push_back(window);
    ++index;
  }
}

// Fills per-GPU defaults, applies overrides and checks everything that spans fields.
void finish(TopologyConfig& config, const std::vector<std::pair<GpuId, GpuConfig>>& overrides,
            const std::string& source) {
  config.gpus.clear();
  for (std::size_t id = 0; id < config.gpu_count; ++id) {
    const auto gpu = static_cast<GpuId>(id);
    config.gpus.push_back(
        GpuConfig{gpu, default_mac_for_gpu(gpu), 0, config.default_rights, {}, {}, {}});
  }
  for (const auto& [id, override] : overrides) {
    if (id >= config.gpu_count) {
      throw ConfigError(source + ": gpu.id: " + std::to_string(id) + " is not below fabric.gpus (" +
                        std::to_string(config.gpu_count) + ")");
    }
    config.gpus[id] = override;
  }
  std::set<std::uint64_t> macs;
  for (const GpuConfig& gpu : config.gpus) {
    if (!macs.insert(gpu.mac.as_u64()).second) {
      throw ConfigError(source + ": gpu.mac: " + gpu.mac.to_string() + " is used by two GPUs");
    }
  }
  if (config.frame_bytes_max < wire::kFrameOverheadBytes + wire::kTxnHeaderBytes + 64) {
    throw ConfigError(source + ": fabric.frame_bytes_max: too small to carry a 64-byte payload");
  }
  try {
    (void)config.address_map();
  } catch (const ConfigError& error) {
    throw ConfigError(source + ": " + error.what());
  }
}

}  // namespace

std::string_view default_topology_toml() {
  return kDefaultTopologyToml;
}

std::vector<Window> TopologyConfig::windows() const {
  if (!custom_windows.empty()) return custom_windows;
  return AddressMap::default_layout(gpu_count, aperture_bytes, hbm_bytes, default_rights);
}

AddressMap TopologyConfig::address_map() const {
  return AddressMap::build(windows(), std::vector<std::uint64_t>(gpu_count, hbm_bytes));
}

EngineConfig TopologyConfig::engine_config(GpuId self) const {
  EngineConfig engine;
  engine.self = self;
  engine.self_mac = gpus.at(self).mac;
  engine.partition = gpus.at(self).partition;
  engine.export_rights = gpus.at(self).export_rights;
  for (const GpuConfig& gpu : gpus) engine.gpu_macs.push_back(gpu.mac);
  // frame_bytes_max bounds a frame on the wire, so with LLR the engine leaves room for its trailer.
  engine.frame_bytes_max = frame_bytes_max - (link_retry ? kLlrTrailerBytes : 0);
  engine.max_outstanding = max_outstanding;
  engine.request_timeout_ns = request_timeout_ns;
  engine.write_combine_ns = write_combine_ns;
  engine.reliability = reliability;
  engine.liveness = liveness;
  if (gpus.at(self).reliable) engine.reliability.enabled = *gpus.at(self).reliable;
  return engine;
}

SwitchConfig TopologyConfig::switch_config(std::size_t extra_ports) const {
  SwitchConfig config;
  config.ports.assign(gpu_count + extra_ports,
                      SwitchPortConfig{link_rate_gbps, switch_egress_queue_bytes});
  config.forwarding_latency_ns = switch_forwarding_latency_ns;
  config.learning = switch_learning;
  for (const GpuConfig& gpu : gpus) {
    config.static_routes.emplace_back(gpu.mac, gpu.id);
    if (switch_port_security) config.port_bindings.push_back({gpu.id, gpu.mac, gpu.id});
  }
  for (const auto& [port, port_faults] : faults) {
    if (port < gpu_count) config.faults.emplace_back(port, port_faults);
  }
  for (const auto& [port, port_faults] : tx_faults) {
    if (port < gpu_count) config.tx_faults.emplace_back(port, port_faults);
  }
  // The link layer on the GPUs' hops; the extra ports' far ends (guest NICs) do not run it.
  for (std::size_t port = 0; port < config.ports.size(); ++port) {
    const bool gpu_port = port < gpu_count;
    config.ports[port].link_retry = gpu_port && link_retry;
    config.ports[port].flow_control = gpu_port;
    config.ports[port].propagation_ns = link_propagation_ns;  // PFC's headroom, as the GPU's
  }
  config.link_retry = link_retry_config;
  config.flow_control = flow_control;
  config.fault_seed = fault_seed;
  return config;
}

SwitchConfig TopologyConfig::emulated_switch_config(std::size_t extra_ports,
                                                    std::uint64_t training_seed) const {
  SwitchConfig config = switch_config(extra_ports);
  config.link_retry = wall_clock_link_retry(config.link_retry);
  config.link_training = true;
  config.link_training_seed = training_seed;
  return config;
}

LinkRetryConfig wall_clock_link_retry(const LinkRetryConfig& modelled) {
  LinkRetryConfig config = modelled;
  config.replay_timeout_ns = std::max(config.replay_timeout_ns, kWallClockReplayTimeoutNs);
  config.ack_delay_ns = std::max(config.ack_delay_ns, kWallClockAckDelayNs);
  config.adaptive_replay_timeout = true;
  return config;
}

void TopologyConfig::resize(std::size_t new_gpu_count) {
  if (new_gpu_count < kMinGpus || new_gpu_count > kMaxGpus) {
    throw ConfigError("--gpus: must be between " + std::to_string(kMinGpus) + " and " +
                      std::to_string(kMaxGpus) + " (got " + std::to_string(new_gpu_count) + ")");
  }
  std::vector<std::pair<GpuId, GpuConfig>> kept;
  for (const GpuConfig& gpu : gpus) {
    if (gpu.id < new_gpu_count) kept.emplace_back(gpu.id, gpu);
  }
  gpu_count = new_gpu_count;
  finish(*this, kept, "--gpus");
}

TopologyConfig parse_topology(std::string_view toml_text, const std::string& source_name) {
  // TOML text is UTF-8 by definition. Checking it here also keeps invalid UTF-8 away from
  // toml11 3.7.1, which reads out of bounds while reporting it inside a literal string
  // (found by fuzz_topology_config, docs/fuzzing.md).
  if (const std::size_t bad = find_invalid_utf8(toml_text); bad != std::string_view::npos) {
    const auto line = std::ranges::count(toml_text.substr(0, bad), '\n') + 1;
    throw ConfigError(source_name + ": not valid TOML: invalid UTF-8 at line " +
                      std::to_string(line));
  }
  toml::value root;
  try {
    std::istringstream stream{std::string(toml_text)};
    root = toml::parse(stream, source_name);
  } catch (const std::exception& error) {
    throw ConfigError(source_name + ": not valid TOML: " + error.what());
  }
  TableReader top(root, "", source_name);
  top.allow_only({"fabric", "switch", "link", "sim", "rnic", "gpu", "window", "fault",
                  "reliability", "liveness"});
  TopologyConfig config;
  std::vector<std::pair<GpuId, GpuConfig>> overrides;
  if (const auto* node = find_child(root, "fabric")) read_fabric(*node, source_name, config);
  if (const auto* node = find_child(root, "switch")) read_switch(*node, source_name, config);
  if (const auto* node = find_child(root, "reliability")) {
    read_reliability(*node, source_name, config);
  }
  if (const auto* node = find_child(root, "liveness")) read_liveness(*node, source_name, config);
  if (const auto* node = find_child(root, "link")) read_link(*node, source_name, config);
  if (const auto* node = find_child(root, "sim")) read_sim(*node, source_name, config);
  if (const auto* node = find_child(root, "rnic")) read_rnic(*node, source_name, config.rnic);
  if (const auto* node = find_child(root, "gpu")) read_gpus(*node, source_name, config, overrides);
  if (const auto* node = find_child(root, "fault")) read_faults(*node, source_name, config);
  if (const auto* node = find_child(root, "window")) read_windows(*node, source_name, config);
  finish(config, overrides, source_name);
  return config;
}

void require_emulated(const TopologyConfig& config) {
  // Link training is how the emulator's ends learn that the other restarted (a process behind
  // a ring or a veth); without it a restarted GPU and its switch port would disagree on the
  // credits in flight for good. The simulator's ends never restart, so it runs either alone.
  if (config.flow_control.mode != FlowControlMode::kNone && !config.link_retry) {
    throw ConfigError(std::string("link.flow_control: \"") + to_string(config.flow_control.mode) +
                      "\" in the emulator needs link.retry = \"llr\": link training is what "
                      "tells both ends of a hop that the other restarted, so that both start "
                      "again from full credit (docs/link-layer.md \"In the emulator\")");
  }
}

TopologyConfig load_topology(const std::string& path) {
  if (path.empty()) return parse_topology(default_topology_toml(), "default topology");
  std::ifstream file(path);
  if (!file) throw ConfigError(path + ": cannot open the topology file");
  std::ostringstream text;
  text << file.rdbuf();
  return parse_topology(text.str(), path);
}

TopologyConfig load_topology(const std::string& path, std::size_t gpus_override) {
  TopologyConfig config = load_topology(path);
  if (gpus_override != 0) config.resize(gpus_override);
  return config;
}

}  // namespace ethx
