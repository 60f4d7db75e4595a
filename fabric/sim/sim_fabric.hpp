// The virtual-time runtime: runs the unchanged sans-I/O cores (one ethx::Endpoint per GPU,
// one SwitchCore per switch) on a discrete-event clock.
//
// What takes time (docs/timing-model.md):
//   - issue: a GPU hands one operation to its packet engine every sim.issue_ns (a pipeline:
//     operations queue behind each other); the Requester call happens when it is handed over;
//   - NIC: sim.nic_latency_ns on each NIC crossing (transmit and receive), a pure delay;
//   - links: one frame at a time, wire::wire_bytes() at link.rate_gbps, then
//     link.propagation_ns;
//   - switches: switch.forwarding_latency_ns of pipeline, then the SwitchCore's egress queue
//     (tail drop at switch.egress_queue_bytes, counted by the core), drained at link rate;
//   - completer: sim.completer_ns per request transaction, served one at a time; a frame that
//     carries requests reaches the endpoint when the last of them has been served.
// Everything is deterministic: the event queue orders ties by insertion, and nothing reads a
// clock or iterates an unordered container to decide what happens next.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "fabric/sim/sim_event_queue.hpp"
#include "fabric/sim/sim_memory.hpp"
#include "fabric/sim/sim_report.hpp"
#include "fabric/sim/sim_topology.hpp"
#include "fabric/sim/sim_workloads.hpp"
#include "packet-engine/endpoint.hpp"
#include "switch/core/switch_core.hpp"

namespace ethx::sim {

class SimFabric {
 public:
  SimFabric(const TopologyConfig& config, TopologyKind kind);
  ~SimFabric();
  SimFabric(const SimFabric&) = delete;
  SimFabric& operator=(const SimFabric&) = delete;

  // Runs `workload` until no event is left (every operation completed or timed out) and
  // returns the report (its name fields are left for the caller). Call once per SimFabric.
  SimReport run(Workload& workload);

  // Largest operation the workloads may issue: needs at most half the requester's tags.
  std::uint32_t max_op_bytes() const;

  const SimTopology& topology() const { return topology_; }
  Endpoint& endpoint(GpuId gpu) { return *gpus_[gpu].endpoint; }
  const SwitchCore& switch_core(std::size_t index) const { return *switches_[index]; }
  // Every completed operation's latency, in completion order (ps).
  const std::vector<TimePs>& latencies_ps() const { return latencies_; }

 private:
  struct PendingIssue {
    OpSpec op;
    std::size_t tags = 0;
    TimePs decided_ps = 0;
    TimePs handed_ps = 0;  // when the issue pipeline hands it to the engine
  };
  struct OpRecord {
    TimePs decided_ps = 0;
    std::uint32_t bytes = 0;
  };
  struct Gpu {
    explicit Gpu(std::size_t memory_bytes) : memory(memory_bytes) {}
    SparseMemory memory;
    std::unique_ptr<Endpoint> endpoint;
    std::deque<PendingIssue> issuing;  // decided, not yet handed to the engine
    std::size_t tags_committed = 0;    // tags the `issuing` operations will take
    TimePs issue_busy_until = 0;
    TimePs completer_busy_until = 0;
    // Frames arrived (or arriving), waiting to be handed to the endpoint: [0] only responses
    // (handed over on arrival), [1] with requests (handed over when the completer is done).
    std::array<std::deque<Link::InFlight>, 2> delivering;
    TimePs wake_pending = UINT64_MAX;
    std::vector<OpRecord> ops;  // by OpId - 1
  };

  void dispatch(const Event& event);
  void prefetch(const Event& event) const;
  void try_issue(GpuId gpu);
  void on_issue(GpuId gpu);
  void on_tx_done(std::uint32_t link_index);
  void on_arrival(std::uint32_t link_index);
  void on_deliver(GpuId gpu, std::uint32_t fifo);
  void on_wake(GpuId gpu);
  // Delay spikes (switch_core.hpp): forwards what switch `sw` held until now.
  void on_release(std::uint32_t sw);
  // Schedules on_release for switch `sw`'s earliest held frame, unless one is scheduled then.
  void schedule_release(std::uint32_t sw);
  void kick_touched(std::uint32_t sw);
  // Handles what an endpoint call produced: frames to the NIC, wake-ups, completions.
  void after_engine(GpuId gpu);
  // A switch queued a frame for the link: start it now, or make sure one starts when the wire
  // is free.
  void kick(std::uint32_t link_index);
  // Precondition: the switch port has a frame and the wire is free.
  void start_tx(std::uint32_t link_index);
  // Puts the frame in `slot` on the wire at `start` and schedules its arrival.
  void launch(std::uint32_t link_index, std::uint32_t slot, TimePs start);
  bool has_frame(const Link& link) const;
  std::uint32_t take_slot();
  void release_slot(std::uint32_t slot);
  TimeNs now_ns() const { return now_ / kPsPerNs; }

  const TopologyConfig& config_;
  SimTopology topology_;
  std::vector<Gpu> gpus_;
  std::vector<std::unique_ptr<SwitchCore>> switches_;
  std::vector<TimeNs> release_scheduled_ns_;  // per switch: kNoRelease when none is pending
  std::vector<Link> links_;
  std::vector<wire::Frame> slots_;  // frames in flight on links or in the completer
  std::vector<std::uint32_t> free_slots_;
  EventQueue queue_;
  TimePs now_ = 0;
  TimePs issue_ps_, completer_ps_;
  Workload* workload_ = nullptr;
  Effects effects_;
  std::vector<PortId> touched_;
  std::vector<GpuId> wake_;
  std::vector<TimePs> latencies_;
  SimReport report_;
};

}  // namespace ethx::sim
