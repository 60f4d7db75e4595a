// The topology config: a TOML file (read with toml11) or the embedded default.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "address-map/address_map.hpp"
#include "address-map/config_error.hpp"
#include "address-map/fabric_types.hpp"
#include "fabric/config/rnic_config.hpp"
#include "packet-engine/engine_config.hpp"
#include "packet-engine/mac_addr.hpp"
#include "switch/core/switch_core.hpp"

namespace ethx {

inline constexpr std::size_t kMinGpus = 2;
inline constexpr std::size_t kMaxGpus = 1024;

struct GpuConfig {
  GpuId id = 0;
  MacAddr mac;
  std::uint16_t partition = 0;
  Rights export_rights = kRightAll;
  // Socket transports: the interface this GPU's node opens, and the network namespace it is
  // in. Empty: the veth `ethx up`/`ethx bench` create (ethx-<tag>-n<id> in its namespace). A
  // real NIC (e.g. "enp3s0", netns "" = the host's) puts the node on a real Ethernet switch.
  std::string interface;
  std::string netns;
  // [[gpu]] reliability: this GPU's own sending link, overriding [reliability] mode.
  std::optional<bool> reliable;
};

struct TopologyConfig {
  std::size_t gpu_count = 8;
  std::uint64_t hbm_bytes = 64ull << 20;
  std::uint64_t aperture_bytes = 64ull << 20;
  std::size_t frame_bytes_max = wire::kDefaultFrameBytesMax;
  std::uint32_t max_outstanding = 256;
  TimeNs request_timeout_ns = 1'000'000'000;
  TimeNs write_combine_ns = 0;
  Rights default_rights = kRightAll;

  TimeNs switch_forwarding_latency_ns = 250;
  std::size_t switch_egress_queue_bytes = 1 << 20;
  bool switch_learning = true;
  bool switch_port_security = true;  // bind port k to GPU k's MAC and id (switch_core.hpp)

  double link_rate_gbps = 800.0;
  TimeNs link_propagation_ns = 10;
  // [link] retry = "llr": link-level retry on every hop (docs/link-layer.md), with its
  // parameters (replay_buffer_bytes, replay_timeout_ns, ack_every_frames, ack_delay_ns).
  bool link_retry = false;
  LinkRetryConfig link_retry_config;
  // [link] flow_control = "none" | "cbfc" | "pfc", class_buffer_bytes, credit_update_bytes:
  // flow control per traffic class on every hop (docs/link-layer.md).
  FlowControlConfig flow_control;

  // [sim]: endpoint costs of the discrete-event simulator (docs/timing-model.md).
  TimeNs sim_issue_ns = 20;        // a GPU hands one load/store operation to its packet engine
  TimeNs sim_completer_ns = 10;    // a completer serves one request transaction
  TimeNs sim_nic_latency_ns = 50;  // one NIC crossing (tx or rx): MAC + PHY pipeline
  // [sim] crc: whether the simulator's frames carry a CRC that every switch and endpoint checks,
  // as on a wire (wire::Crc). Off, frames the corrupt fault damages still are. Not a model
  // parameter: it changes no result, only the cost (docs/simulator.md, "The CRC").
  bool sim_crc = false;
  // [rnic]: the RDMA NIC of `ethx sim --engine roce` (rnic_config.hpp).
  RnicConfig rnic;

  // [reliability]: go-back-N for load/store frames (docs/reliability.md).
  ReliabilityConfig reliability;
  // [liveness]: when a requester marks a peer down (docs/reliability.md).
  LivenessConfig liveness;

  // [[fault]]: faults the switch injects on a GPU's port (docs/switch.md), and their seed.
  // direction = "rx" (the default) lands in `faults`, "tx" in `tx_faults`, "both" in both.
  std::vector<std::pair<PortId, PortFaults>> faults;
  std::vector<std::pair<PortId, PortFaults>> tx_faults;
  std::uint64_t fault_seed = 1;

  std::vector<GpuConfig> gpus;         // one per GPU, defaults filled in
  std::vector<Window> custom_windows;  // empty: default layout

  // The window table every GPU's remote window uses (validated when the config is read).
  std::vector<Window> windows() const;
  AddressMap address_map() const;
  EngineConfig engine_config(GpuId self) const;
  // `extra_ports` unbound ports after the GPUs' (guest NICs, the host RDMA port): learned, not
  // statically routed, no port security, no faults.
  SwitchConfig switch_config(std::size_t extra_ports = 0) const;
  // switch_config() for the emulator's switch: link-level retry runs on the wall clock
  // (wall_clock_link_retry) and trains its links, because its far ends are processes that start
  // and restart on their own (LinkRetry::start_training). `training_seed` draws the nonces.
  SwitchConfig emulated_switch_config(std::size_t extra_ports, std::uint64_t training_seed) const;
  // Changes the GPU count after parsing (the --gpus flag) and re-validates.
  void resize(std::size_t gpus);
};

// The emulator's processes (switch, nodes, QEMU devices) call this before they start: throws
// ConfigError naming the field of what the emulator cannot run as configured ([link]
// flow_control without [link] retry = "llr"; docs/link-layer.md "In the emulator").
void require_emulated(const TopologyConfig& config);

// Link-level retry's timers where they run on the wall clock (the emulator) rather than in
// modelled time: a hop there is a ring or a veth between processes, whose round trip is tens of
// microseconds and whose ends a busy host deschedules for milliseconds, so the modelled
// defaults (a 10 us replay timer, a 500 ns ACK delay) would replay nearly every frame. Raises
// replay_timeout_ns to at least kWallClockReplayTimeoutNs and ack_delay_ns to at least
// kWallClockAckDelayNs, and adapts the replay timer to the measured round trip
// (LinkRetryConfig::adaptive_replay_timeout; docs/link-layer.md "In the emulator").
inline constexpr TimeNs kWallClockReplayTimeoutNs = 1'000'000;
inline constexpr TimeNs kWallClockAckDelayNs = 20'000;
LinkRetryConfig wall_clock_link_retry(const LinkRetryConfig& modelled);

// "off" -> false, "go-back-n" -> true, anything else -> nullopt.
std::optional<bool> parse_reliability_mode(std::string_view mode);

// The embedded default topology, as TOML text.
std::string_view default_topology_toml();
// Parses TOML text. Throws ConfigError "<source>: <field>: <reason>" on any bad field,
// unknown key or type mismatch.
TopologyConfig parse_topology(std::string_view toml_text, const std::string& source_name);
// Reads a file, or the embedded default when `path` is empty.
TopologyConfig load_topology(const std::string& path);
// The same, then the --gpus flag applied when it is not 0 (every command takes both).
TopologyConfig load_topology(const std::string& path, std::size_t gpus_override);

}  // namespace ethx
