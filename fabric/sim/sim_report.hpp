// What one `ethx sim` run measured, in modelled time, and how it is printed. Nothing here
// depends on the wall clock, so the same config and seed print the same bytes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fabric/sim/rnic_model.hpp"
#include "fabric/sim/sim_link_faults.hpp"
#include "packet-engine/flow_control.hpp"
#include "packet-engine/link_retry.hpp"

namespace ethx::sim {

struct SwitchReport {
  std::string name;
  std::uint64_t ports = 0;
  std::uint64_t rx_frames = 0;
  std::uint64_t tx_frames = 0;
  std::uint64_t max_queue_bytes = 0;  // deepest any egress queue of this switch has been
  std::uint64_t drops = 0;            // every reason
  std::uint64_t drops_queue_full = 0;
};

// The requesters' peer-liveness counters (packet-engine/requester.hpp), summed over every GPU,
// and when the first transitions happened.
struct LivenessReport {
  std::uint64_t peers_marked_down = 0;
  std::uint64_t peers_marked_up = 0;
  std::uint64_t ops_fast_failed = 0;
  std::uint64_t posted_writes_dropped = 0;
  std::uint64_t probes_sent = 0;
  std::uint64_t probes_answered = 0;
  std::optional<std::uint64_t> first_down_ps;  // a requester first marked a peer down
  std::optional<std::uint64_t> first_up_ps;    // a requester first marked a peer up again
};

// --engine roce: the RDMA NICs' counters summed over every GPU, and the connection state.
struct NicReport {
  RnicCounters counters;
  std::uint64_t qps = 0;              // queue pairs over all GPUs
  std::uint64_t max_qps_per_gpu = 0;  // the most any one GPU holds
  // The RoCE engine's QP state (RoceNode::total_qp_state_bytes) per GPU, averaged.
  std::uint64_t connection_state_bytes_per_gpu = 0;
};

struct SimReport {
  // What ran.
  std::uint64_t gpus = 0;
  std::string engine = "load-store";
  std::string topology;
  std::string workload;
  std::uint64_t peers = 0;  // message-rate: peers each GPU cycles through (0: not used)
  std::string op;           // message-rate: "write" or "read" (empty: not used)
  std::uint64_t bytes = 0;
  std::uint64_t seed = 0;
  std::uint64_t repeat = 0;
  // The model's parameters (echoed so a report stands on its own).
  double link_rate_gbps = 0;
  std::uint64_t propagation_ns = 0;
  std::uint64_t forwarding_latency_ns = 0;
  std::uint64_t egress_queue_bytes = 0;
  std::uint64_t issue_ns = 0;
  std::uint64_t completer_ns = 0;
  std::uint64_t nic_latency_ns = 0;
  std::vector<LinkFault> link_faults;  // --link-down, in the order given
  // Results.
  std::uint64_t ops_ok = 0;
  std::uint64_t ops_failed = 0;
  std::uint64_t timeouts = 0;     // failed ops whose status is timeout
  std::uint64_t unreachable = 0;  // failed ops whose status is unreachable (peer marked down)
  bool complete = false;          // the workload finished (every op issued and completed)
  std::uint64_t latency_p50_ps = 0;
  std::uint64_t latency_p99_ps = 0;
  std::uint64_t latency_max_ps = 0;
  std::uint64_t makespan_ps = 0;       // from time 0 to the last completion
  std::uint64_t payload_bytes = 0;     // of successful operations
  std::uint64_t frames_delivered = 0;  // frames handed to GPU endpoints
  std::uint64_t link_frames = 0;       // frame transmissions summed over every link (hops)
  std::uint64_t link_wire_bytes = 0;   // wire bytes summed over every link
  std::uint64_t events = 0;
  std::uint64_t drops = 0;
  std::uint64_t drops_queue_full = 0;
  std::uint64_t drops_link_down = 0;  // frames lost at a port that was down
  LivenessReport liveness;
  std::vector<SwitchReport> switches;
  std::optional<NicReport> nic;  // --engine roce
  // [link] retry = "llr": every hop end's link-level retry counters, summed.
  std::optional<LinkRetryCounters> link_retry;
  // [link] flow_control = "cbfc" | "pfc": every hop end's flow-control counters, summed.
  std::optional<FlowControlCounters> flow_control;
  std::string flow_control_mode = "none";
  // How the run went, not what it modelled: in neither the JSON nor the table, which are the
  // same for any thread count. The threads the windows ran on, and the round trip between the
  // two threads' cores measured first (0 if not measured; sim_window_meeting.hpp).
  unsigned threads = 1;
  double cores_round_trip_ns = 0;

  double bandwidth_gbps() const;  // payload bits / makespan
  // Operations per GPU per microsecond of makespan (successful ones), averaged over the GPUs.
  double message_rate_mops() const;
};

// Nearest-rank percentile (p in (0, 100]) of sorted values; 0 for none.
std::uint64_t percentile(const std::vector<std::uint64_t>& sorted, double p);
// The same nearest-rank percentile of values in any order, found by selection (std::nth_element,
// linear time) instead of a sort; reorders `values`. A 32-GPU run of millions of operations spent
// a twentieth of its time sorting latencies for two percentiles.
std::uint64_t select_percentile(std::vector<std::uint64_t>& values, double p);

nlohmann::ordered_json to_json(const SimReport& report);
std::string format_table(const SimReport& report);

}  // namespace ethx::sim
