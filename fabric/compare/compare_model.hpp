// Modelled hardware figures for `ethx compare`. Load/store: `ethx sim`'s discrete-event model
// (sim_command.hpp) for load latency, and the link rate times the posted-write wire efficiency
// for bandwidth. RoCEv2: an estimate on the same link/switch/NIC timing parameters
// (docs/timing-model.md) plus an MMIO doorbell per WR batch (docs/sources.md); every
// parameter and its source is in the returned object, so the report can cite it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "fabric/config/topology_config.hpp"

namespace ethx {

// An MMIO doorbell is reported at ~200-800 ns (~1000 cycles; docs/sources.md); the midpoint.
inline constexpr std::uint64_t kModelDoorbellNs = 500;

// {"parameters": {...}, "sources": [...], "latency_ns": [{system, op, bytes, ns}],
//  "bandwidth_gbps": [{system, op, bytes, gbps}], "message_rate_mops": [{system, op, bytes,
//  batch, mops}]}. `config` must describe at least 2 GPUs (the simulator needs a peer).
nlohmann::json model_figures(const TopologyConfig& config, const std::vector<std::uint32_t>& sizes,
                             const std::vector<std::uint32_t>& batches,
                             std::uint32_t path_mtu_bytes, bool run_simulator = true);

}  // namespace ethx
