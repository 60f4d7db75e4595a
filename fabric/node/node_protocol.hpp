// The coordinator <-> node command protocol: what the coordinators (`ethx bench`, `ethx
// compare`, `ethx soak`, the RoCE suite) ask an ethx-node through its control mailbox
// (fabric/transport/shm/control_region.hpp), and what the node answers. One struct per command
// (here) and per result (node_results.hpp), each with its JSON fields listed once
// (protocol_fields.hpp). The coordinators build commands and read results through
// FabricClient::call; the node parses commands with parse_command and dispatches them
// (fabric/workloads/node_commands.cpp). Both sides are built from these files, so they cannot
// disagree about a name, a unit or a default.
//
// On the wire a command is {"op": <Command::kOp>, <its fields>}, a result is its fields, and a
// failed command is answered {"error": "<field>: <what is wrong>"}. kExitCommand (not JSON)
// ends a node. docs/roce.md describes the RoCE commands.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "address-map/fabric_types.hpp"
#include "fabric/node/node_results.hpp"
#include "fabric/node/protocol_fields.hpp"

namespace ethx::protocol {

inline constexpr std::string_view kExitCommand = "exit";

// The RDMA operation of a RoCE latency or bandwidth run: "write" or "read" on the wire.
enum class RoceOp : std::uint8_t { kWrite, kRead };
void read_value(const nlohmann::json& in, const std::string& path, RoceOp& value);
void write_value(nlohmann::json& out, RoceOp value);

// ---- Load/store commands (fabric/workloads/bench_workloads.hpp runs them) ----

// `count` bare echoes to `peer` through the switch: the round trip without the engine.
struct EchoCommand {
  static constexpr std::string_view kOp = "echo";
  using Result = LatencyResult;
  GpuId peer = 0;
  std::uint32_t count = 0;

  bool operator==(const EchoCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("peer", self.peer);
    f.required("count", self.count);
  }
};

// `count` echoes and `count` loads of `bytes`, alternating sample by sample.
struct EchoAndLoadLatencyCommand {
  static constexpr std::string_view kOp = "echo_and_load_latency";
  using Result = EchoAndLoadResult;
  GpuId peer = 0;
  std::uint32_t count = 0;
  std::uint32_t bytes = 8;
  std::uint64_t seed = 1;  // of the random pattern offsets

  bool operator==(const EchoAndLoadLatencyCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("peer", self.peer);
    f.required("count", self.count);
    f.optional("bytes", self.bytes);
    f.optional("seed", self.seed);
  }
};

struct LoadLatencyCommand {
  static constexpr std::string_view kOp = "load_latency";
  using Result = LatencyResult;
  GpuId peer = 0;
  std::uint32_t count = 0;
  std::uint32_t bytes = 8;
  std::uint64_t seed = 1;

  bool operator==(const LoadLatencyCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("peer", self.peer);
    f.required("count", self.count);
    f.optional("bytes", self.bytes);
    f.optional("seed", self.seed);
  }
};

// Posted stores of `size_bytes` until `total_bytes` moved, flushed, then read back.
struct StoreBandwidthCommand {
  static constexpr std::string_view kOp = "store_bandwidth";
  using Result = ThroughputResult;
  GpuId peer = 0;
  std::uint32_t size_bytes = 0;
  std::uint64_t total_bytes = 0;
  std::uint64_t salt = 0;  // of the stored pattern

  bool operator==(const StoreBandwidthCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("peer", self.peer);
    f.required("size_bytes", self.size_bytes);
    f.required("total_bytes", self.total_bytes);
    f.required("salt", self.salt);
  }
};

struct ReadBandwidthCommand {
  static constexpr std::string_view kOp = "read_bandwidth";
  using Result = ThroughputResult;
  GpuId peer = 0;
  std::uint32_t size_bytes = 0;
  std::uint64_t total_bytes = 0;
  std::uint32_t outstanding = 32;  // reads in flight

  bool operator==(const ReadBandwidthCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("peer", self.peer);
    f.required("size_bytes", self.size_bytes);
    f.required("total_bytes", self.total_bytes);
    f.optional("outstanding", self.outstanding);
  }
};

struct AtomicRateCommand {
  static constexpr std::string_view kOp = "atomic_rate";
  using Result = ThroughputResult;
  GpuId peer = 0;
  std::uint32_t count = 0;
  std::uint32_t outstanding = 16;

  bool operator==(const AtomicRateCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("peer", self.peer);
    f.required("count", self.count);
    f.optional("outstanding", self.outstanding);
  }
};

// Posted stores of `bytes_per_peer` to every other GPU; run on every GPU at once.
struct AllToAllStoreCommand {
  static constexpr std::string_view kOp = "all_to_all_store";
  using Result = ThroughputResult;
  std::uint64_t bytes_per_peer = 0;
  std::uint64_t salt = 0;

  bool operator==(const AllToAllStoreCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("bytes_per_peer", self.bytes_per_peer);
    f.required("salt", self.salt);
  }
};

// Reads back and checks what AllToAllStoreCommand with the same figures wrote at every peer.
struct AllToAllVerifyCommand {
  static constexpr std::string_view kOp = "all_to_all_verify";
  using Result = ThroughputResult;
  std::uint64_t bytes_per_peer = 0;
  std::uint64_t salt = 0;

  bool operator==(const AllToAllVerifyCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("bytes_per_peer", self.bytes_per_peer);
    f.required("salt", self.salt);
  }
};

struct SoakCommand {
  static constexpr std::string_view kOp = "soak";
  using Result = SoakResult;
  std::uint64_t ops = 0;
  std::uint64_t seed = 1;
  std::uint32_t outstanding = 32;

  bool operator==(const SoakCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("ops", self.ops);
    f.optional("seed", self.seed);
    f.optional("outstanding", self.outstanding);
  }
};

struct StatsCommand {
  static constexpr std::string_view kOp = "stats";
  using Result = NodeStats;

  bool operator==(const StatsCommand&) const = default;
  static void fields(auto&, auto&) {}
};

// ---- RoCE commands (fabric/workloads/roce_node_commands.cpp) ----

struct RoceInfoCommand {
  static constexpr std::string_view kOp = "roce_info";
  using Result = RoceInfo;

  bool operator==(const RoceInfoCommand&) const = default;
  static void fields(auto&, auto&) {}
};

// The same answer as RoceInfoCommand; named for what the caller wants from it (counters).
struct RoceStatsCommand {
  static constexpr std::string_view kOp = "roce_stats";
  using Result = RoceInfo;

  bool operator==(const RoceStatsCommand&) const = default;
  static void fields(auto&, auto&) {}
};

// Creates `count` RC QPs towards `peer`, not yet connected.
struct RoceCreateCommand {
  static constexpr std::string_view kOp = "roce_create";
  using Result = RoceCreateResult;
  GpuId peer = 0;
  std::uint64_t count = 0;

  bool operator==(const RoceCreateCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("peer", self.peer);
    f.required("count", self.count);
  }
};

// Connects local QP i to the peer's remote_qpns[i] (starting at remote_psns[i]), at the peer's
// MAC and IPv4, writing and reading its HBM with remote_rkey.
struct RoceConnectCommand {
  static constexpr std::string_view kOp = "roce_connect";
  using Result = RoceConnectResult;
  GpuId peer = 0;
  std::vector<std::uint32_t> local_qpns;
  std::vector<std::uint32_t> remote_qpns;
  std::vector<std::uint32_t> remote_psns;
  std::string remote_mac;
  std::uint32_t remote_ip = 0;
  std::uint32_t remote_rkey = 0;

  bool operator==(const RoceConnectCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("peer", self.peer);
    f.required("local_qpns", self.local_qpns);
    f.required("remote_qpns", self.remote_qpns);
    f.required("remote_psns", self.remote_psns);
    f.required("remote_mac", self.remote_mac);
    f.required("remote_ip", self.remote_ip);
    f.required("remote_rkey", self.remote_rkey);
  }
};

struct RoceDestroyCommand {
  static constexpr std::string_view kOp = "roce_destroy";
  using Result = RoceDestroyResult;
  GpuId peer = 0;

  bool operator==(const RoceDestroyCommand&) const = default;
  static void fields(auto& self, auto& f) { f.required("peer", self.peer); }
};

// One WR at a time on the first QP to `peer`: post, doorbell, wait for its completion.
struct RoceLatencyCommand {
  static constexpr std::string_view kOp = "roce_latency";
  using Result = LatencyResult;
  GpuId peer = 0;
  RoceOp rdma_op = RoceOp::kWrite;
  std::uint32_t bytes = 0;
  std::uint32_t count = 0;
  std::uint64_t seed = 1;

  bool operator==(const RoceLatencyCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("peer", self.peer);
    f.required("rdma_op", self.rdma_op);
    f.required("bytes", self.bytes);
    f.required("count", self.count);
    f.optional("seed", self.seed);
  }
};

struct RoceBandwidthCommand {
  static constexpr std::string_view kOp = "roce_bandwidth";
  using Result = ThroughputResult;
  GpuId peer = 0;
  RoceOp rdma_op = RoceOp::kWrite;
  std::uint32_t bytes = 0;  // per WR
  std::uint64_t total_bytes = 0;
  std::uint32_t outstanding = 32;  // WRs in flight
  std::uint64_t salt = 1;

  bool operator==(const RoceBandwidthCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("peer", self.peer);
    f.required("rdma_op", self.rdma_op);
    f.required("bytes", self.bytes);
    f.required("total_bytes", self.total_bytes);
    f.optional("outstanding", self.outstanding);
    f.optional("salt", self.salt);
  }
};

// Small WRITEs spread round-robin over every QP to `peer`, `batch` WRs per doorbell.
struct RoceMessageRateCommand {
  static constexpr std::string_view kOp = "roce_message_rate";
  using Result = RoceMessageRateResult;
  GpuId peer = 0;
  std::uint64_t count = 0;
  std::uint32_t bytes = 8;
  std::uint32_t batch = 1;
  std::uint32_t outstanding = 64;  // WRs in flight over all QPs
  std::uint64_t salt = 1;

  bool operator==(const RoceMessageRateCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("peer", self.peer);
    f.required("count", self.count);
    f.optional("bytes", self.bytes);
    f.optional("batch", self.batch);
    f.optional("outstanding", self.outstanding);
    f.optional("salt", self.salt);
  }
};

// Needs three QPs to `peer` (roce_bench_workloads.hpp, bad_rkey_probe).
struct RoceBadRkeyProbeCommand {
  static constexpr std::string_view kOp = "roce_bad_rkey_probe";
  using Result = BadRkeyProbeResult;
  GpuId peer = 0;
  std::uint32_t bytes = 64;

  bool operator==(const RoceBadRkeyProbeCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("peer", self.peer);
    f.optional("bytes", self.bytes);
  }
};

struct RoceAllToAllWriteCommand {
  static constexpr std::string_view kOp = "roce_all_to_all_write";
  using Result = ThroughputResult;
  std::uint64_t bytes_per_peer = 0;
  std::uint64_t salt = 0;

  bool operator==(const RoceAllToAllWriteCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("bytes_per_peer", self.bytes_per_peer);
    f.required("salt", self.salt);
  }
};

struct RoceAllToAllVerifyCommand {
  static constexpr std::string_view kOp = "roce_all_to_all_verify";
  using Result = ThroughputResult;
  std::uint64_t bytes_per_peer = 0;
  std::uint64_t salt = 0;

  bool operator==(const RoceAllToAllVerifyCommand&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("bytes_per_peer", self.bytes_per_peer);
    f.required("salt", self.salt);
  }
};

// ---- Commands as a whole ----

using NodeCommand =
    std::variant<EchoCommand, EchoAndLoadLatencyCommand, LoadLatencyCommand, StoreBandwidthCommand,
                 ReadBandwidthCommand, AtomicRateCommand, AllToAllStoreCommand,
                 AllToAllVerifyCommand, SoakCommand, StatsCommand, RoceInfoCommand,
                 RoceStatsCommand, RoceCreateCommand, RoceConnectCommand, RoceDestroyCommand,
                 RoceLatencyCommand, RoceBandwidthCommand, RoceMessageRateCommand,
                 RoceBadRkeyProbeCommand, RoceAllToAllWriteCommand, RoceAllToAllVerifyCommand>;

template <class T>
concept Command = Message<T> && requires {
  { T::kOp } -> std::convertible_to<std::string_view>;
  typename T::Result;
};

// {"op": Command::kOp, <fields>}.
template <Command C>
nlohmann::json command_json(const C& command) {
  nlohmann::json out = command;
  out["op"] = std::string(C::kOp);
  return out;
}
nlohmann::json command_json(const NodeCommand& command);

// The command `text` holds; throws ProtocolError naming the field ("op" when it is missing or
// names no command), or saying the text is not JSON.
NodeCommand parse_command(std::string_view text);

// A node's answer read as `Result`; throws ProtocolError naming the field.
template <Message Result>
Result parse_result(const nlohmann::json& answer) {
  Result result;
  read_value(answer, "", result);
  return result;
}

// What a node answers a command that failed, and the message of such an answer (nullopt when
// `answer` is a result).
nlohmann::json error_json(const std::string& message);
std::optional<std::string> error_of(const nlohmann::json& answer);

}  // namespace ethx::protocol
