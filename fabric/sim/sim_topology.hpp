// Builds the simulated network: switches (SwitchConfig each, with static routes) and the
// links between them and the GPUs, with every link's delay worked out from the config.
//
// single:     one switch, GPU g on port g (the config's own switch settings).
// leaf-spine: leaves of kGpusPerLeaf GPUs (GPU g on leaf g / 32, port g % 32); when there is
//             more than one leaf, kGpusPerLeaf spines, one uplink from every leaf to every
//             spine (leaf port 32 + s), so each leaf has as much bandwidth up as down (1:1,
//             non-blocking). Learning is off everywhere and every GPU MAC has a static route:
//             a leaf sends a remote GPU d up to spine d % spines, a spine sends it down to
//             leaf d / 32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "fabric/sim/sim_link.hpp"
#include "switch/core/switch_core.hpp"

namespace ethx::sim {

enum class TopologyKind : std::uint8_t { kSingle, kLeafSpine };
const char* to_string(TopologyKind kind);
// "single" or "leaf-spine"; false on anything else.
bool parse_topology_kind(const std::string& text, TopologyKind& out);

inline constexpr std::size_t kGpusPerLeaf = 32;
inline constexpr std::uint32_t kNoLink = UINT32_MAX;

struct SimTopology {
  TopologyKind kind = TopologyKind::kSingle;
  std::size_t leaves = 0;  // leaf-spine only
  std::size_t spines = 0;
  std::vector<std::string> switch_names;  // "switch", or "leaf0".., "spine0"..
  std::vector<SwitchConfig> switches;
  std::vector<Link> links;                              // one per direction of each cable
  std::vector<std::uint32_t> gpu_tx_link;               // GPU -> its switch
  std::vector<std::vector<std::uint32_t>> egress_link;  // [switch][port], kNoLink if unwired
};

SimTopology build_topology(const TopologyConfig& config, TopologyKind kind);

}  // namespace ethx::sim
