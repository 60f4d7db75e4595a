// Modelled hardware figures for `ethx compare`, every one from `ethx sim`: the load/store
// engine and the RoCEv2 engine behind the RDMA NIC model ([rnic]), run in modelled time on the
// same links and switch (docs/simulator.md, docs/timing-model.md). Each row carries the
// `ethx sim` command line that reproduces it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fabric/config/topology_config.hpp"

namespace ethx {

// What to model: the config of the per-size figures and where it came from.
struct ModelRequest {
  TopologyConfig config;    // 2 GPUs: load_topology(config_path, 2)
  std::string config_path;  // for the reproducing command lines; empty: the embedded default
  std::vector<std::uint32_t> sizes;
};

// {"parameters": {...}, "sources": [...],
//  "latency_ns": [{system, op, bytes, ns, command}],       load/store load and write, RoCEv2
//                                                          READ and WRITE, one at a time, p50
//  "bandwidth_gbps": [{system, op, bytes, gbps, command}], one GPU streaming to another
//  "message_rate_mops": [{system, op, bytes, peers, mops, command}]}, 8 B, one peer
nlohmann::json model_figures(const ModelRequest& request);

// Sizes a stream of `bytes`-sized operations runs for in the bandwidth rows: enough data that
// the first operation's latency is a small part of the time, bounded in operations so 8 B
// streams stay quick.
std::uint64_t stream_operations(std::uint64_t bytes);

// The scale section: all-to-all, incast and 8 B message rate over every peer, on both engines,
// at each GPU count, from the config at `config_path` (compare writes one with load/store's
// go-back-N on, so both engines recover lost frames). {"gpu_counts": [...], "rows": [{workload,
// gpus, system, complete, completion_us, p99_ns, gbps, mops, qps_per_gpu, qpc_miss_rate,
// connection_state_bytes_per_gpu, ops_ok, ops_failed, drops, events, command}]}. `progress`
// hears each run before it starts.
nlohmann::json scale_figures(const std::string& config_path,
                             const std::vector<std::size_t>& gpu_counts,
                             const std::function<void(const std::string&)>& progress);

}  // namespace ethx
