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
// Faults: the config's [[fault]] tables act in the SwitchCores; link-down faults
// (schedule_link_faults) take a GPU's switch port down, and up again, at modelled times.
// Everything is deterministic: the event queue orders ties by insertion, and nothing reads a
// clock or iterates an unordered container to decide what happens next.
// Two partitions (sim_partition.hpp): with the load/store engine and no link layer, the GPUs'
// events and the switches' events are kept apart and run in windows of modelled time no longer
// than a frame takes to cross between them (sim_windows.cpp), on one thread or two: the results
// are the same for both, and for any run of the same inputs.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "fabric/sim/sim_event_queue.hpp"
#include "fabric/sim/sim_link_faults.hpp"
#include "fabric/sim/sim_memory.hpp"
#include "fabric/sim/sim_op_records.hpp"
#include "fabric/sim/sim_partition.hpp"
#include "fabric/sim/sim_report.hpp"
#include "fabric/sim/sim_roce.hpp"
#include "fabric/sim/sim_topology.hpp"
#include "fabric/sim/sim_window_plan.hpp"
#include "fabric/sim/sim_workloads.hpp"
#include "packet-engine/endpoint.hpp"
#include "packet-engine/fifo.hpp"
#include "packet-engine/flow_control.hpp"
#include "packet-engine/link_retry.hpp"
#include "switch/core/switch_core.hpp"

namespace ethx::sim {

// What each GPU's engine is: load/store (ethx::Endpoint) or RDMA (the RoCEv2 engine behind the
// RDMA NIC model, sim_roce.hpp).
enum class SimEngine : std::uint8_t { kLoadStore, kRoce };
const char* to_string(SimEngine engine);
bool parse_sim_engine(const std::string& text, SimEngine& out);

// kOne keeps every event in one partition even where two are possible: the plain loop, which
// the tests hold the two-partition run against.
enum class SimPartitioning : std::uint8_t { kAuto, kOne };

class SimFabric {
 public:
  SimFabric(const TopologyConfig& config, TopologyKind kind,
            SimEngine engine = SimEngine::kLoadStore,
            SimPartitioning partitioning = SimPartitioning::kAuto);
  ~SimFabric();
  SimFabric(const SimFabric&) = delete;
  SimFabric& operator=(const SimFabric&) = delete;

  // Takes each fault's GPU link down (and up) at its times during run(). Call before run().
  // Throws std::invalid_argument naming --link-down for a GPU outside the fabric or a time
  // past kMaxLinkFaultNs.
  void schedule_link_faults(const std::vector<LinkFault>& faults);

  // Runs `workload` until no event is left, or until it is done and only timers are left
  // while a link or a peer is down (a requester probes a down peer, and a go-back-N sender
  // resends to it, for ever), and returns the report (its name fields are left for the
  // caller). Call once per SimFabric. With two partitions, `threads` 2 runs the switches'
  // events on a second thread if its core is near this one's (SimReport::threads says); the
  // report is the same for 1 and 2.
  SimReport run(Workload& workload, unsigned threads = 1);
  // For tests, before run(): two threads even when their cores are far apart.
  void ignore_core_distance() { ignore_core_distance_ = true; }

  // The GPUs' and the switches' events are two partitions (the load/store engine without a
  // link layer): run(workload, 2) can use a second thread.
  bool partitioned() const { return partitioned_; }
  static bool partitioned(const TopologyConfig& config, SimEngine engine) {
    return engine == SimEngine::kLoadStore && !has_link_layer(config);
  }
  // Frames to and from GPUs pass the NICs' link layer: link-level retry, flow control or both.
  static bool has_link_layer(const TopologyConfig& config) {
    return config.link_retry || config.flow_control.mode != FlowControlMode::kNone;
  }

  // For tests, before run(): how many operation records each GPU keeps in its ring (the
  // default holds every operation a GPU's tags allow twice over); with fewer, the records go
  // through OpRecords' map, and the results must not change.
  void set_op_record_slots(std::size_t slots);

  // Largest operation the workloads may issue: needs at most half the requester's tags.
  std::uint32_t max_op_bytes() const;

  const SimTopology& topology() const { return topology_; }
  // Precondition: the load/store engine.
  Endpoint& endpoint(GpuId gpu) { return *gpus_[gpu].endpoint; }
  const SwitchCore& switch_core(std::size_t index) const { return *switches_[index]; }

 private:
  enum EventKind : std::uint32_t {
    kIssue,    // target GPU: hand the next decided operation to the engine
    kTxDone,   // target link: the wire is free and a frame is waiting
    kArrival,  // target link, arg its first in-flight frame's slot: the frame reached the switch
    // target GPU, arg the frame's slot: hand the first frame of its FIFO over
    kDeliverResponses,  // FIFO 0: frames with only responses
    kDeliverRequests,   // FIFO 1: frames with requests, handed over when the completer is done
    kWake,              // target GPU: the engine asked to be polled (timeouts)
    kRelease,           // target switch: frames a delay spike held may move on
    kLinkFault,         // target GPU, arg 1 down / 0 up: its switch port's link state changes
    // --engine roce, target GPU, each the head of its FIFO in RoceGpu:
    kRoceSend,        // the NIC has processed a send WQE: ring the engine's doorbell
    kRoceArrival,     // a packet reached the NIC
    kRoceProcessed,   // the NIC has processed a received packet: hand it to the engine
    kRoceCompletion,  // the GPU sees a CQE
    kLinkTimer,       // target GPU: its NIC's link-level retry timer (ACK delay, replay)
  };

  struct PendingIssue {
    OpSpec op;
    std::size_t tags = 0;
    TimePs decided_ps = 0;
    TimePs handed_ps = 0;  // when the issue pipeline hands it to the engine
  };
  // A cache line of its own at each end: neighbouring GPUs may run on two threads.
  struct alignas(64) Gpu {
    std::unique_ptr<Endpoint> endpoint;  // load/store
    std::unique_ptr<RoceGpu> roce;       // RDMA
    Fifo<PendingIssue> issuing;          // decided, not yet handed to the engine
    std::size_t tags_committed = 0;      // tags the `issuing` operations will take
    TimePs issue_busy_until = 0;
    TimePs completer_busy_until = 0;
    // Frames arrived (or arriving), waiting to be handed to the endpoint: [0] only responses
    // (handed over on arrival), [1] with requests (handed over when the completer is done).
    std::array<Fifo<Link::InFlight>, 2> delivering;
    TimePs wake_pending = UINT64_MAX;
    // The requester's liveness_transitions() last seen, beside wake_pending, which after_engine
    // reads anyway.
    std::uint64_t seen_liveness_transitions = 0;
    OpRecords ops;  // operations issued and not yet completed
    // The requester's liveness transitions already seen (to time the first of each).
    std::uint64_t seen_marked_down = 0;
    std::uint64_t seen_marked_up = 0;
    // The NIC's end of the GPU's hop (sim_link_retry.cpp): [link] retry = "llr" and
    // [link] flow_control; the frames waiting for room in its replay buffer or for credit (one
    // queue per traffic class), and its timer's pending event.
    std::unique_ptr<LinkRetry> llr;
    std::unique_ptr<FlowSender> flow_sender;
    std::unique_ptr<FlowReceiver> flow_receiver;
    std::array<std::deque<wire::Frame>, kTrafficClasses> link_waiting;
    TimePs llr_timer_pending = UINT64_MAX;
    bool workload_done = false;  // counted in its partition's tally (independent GPUs)
  };

  // The plain loop: one partition, one event at a time.
  void run_sequential();
  // Two partitions in windows of modelled time (sim_windows.cpp), on `threads` threads.
  void run_windows(unsigned threads);
  // What partition `side` reports at the end of a window (sim_windows.cpp).
  WindowSummary summarize(std::size_t side) const;
  // Runs `part`'s events earlier than `end_ps` (sim_windows.cpp).
  void run_window(SimPartition& part, TimePs end_ps);
  // Takes the frames the other partition sent in the last window (sim_windows.cpp).
  void take_crossing(SimPartition& into, std::vector<CrossingFrame>& inbox);
  // Picoseconds a frame takes from one partition to the other at least: the shortest crossing
  // link's delay plus the smallest frame's serialization (sim_windows.cpp).
  TimePs min_crossing_ps(NodeKind from) const;
  void dispatch(SimPartition& part, const Event& event);
  void prefetch(const SimPartition& part, const Event& event) const;
  void try_issue(GpuId gpu);
  void on_issue(GpuId gpu);
  // Calls `gpu`'s requester for `op` at its partition's time; returns its id (0 for a posted
  // write).
  OpId hand_over(SimPartition& part, GpuId gpu, Requester& requester, const OpSpec& op);
  void on_tx_done(std::uint32_t link_index);
  void on_arrival(std::uint32_t link_index, std::uint32_t slot);
  void on_deliver(GpuId gpu, std::uint32_t fifo, std::uint32_t slot);
  void on_wake(GpuId gpu);
  // If an endpoint call asked to be polled: schedules the wake-up unless one comes earlier
  // (the usual case, inline: a requester asks after every call, for its next deadline).
  void schedule_wake(GpuId gpu) {
    const Effects& effects = gpu_part(gpu).effects;
    if (effects.wake_at && *effects.wake_at * kPsPerNs < gpus_[gpu].wake_pending) {
      schedule_wake_at(gpu, *effects.wake_at * kPsPerNs);
    }
  }
  void schedule_wake_at(GpuId gpu, TimePs wake_ps);  // earlier than the one pending

  // --engine roce (sim_roce.cpp).
  void add_roce_gpus();
  roce::QpNum roce_qp(GpuId gpu, GpuId peer);
  void try_issue_roce(GpuId gpu);
  void on_issue_roce(GpuId gpu);
  void on_roce_send(GpuId gpu);
  void on_roce_arrival(GpuId gpu);
  void on_roce_processed(GpuId gpu);
  void on_roce_completion(GpuId gpu);
  void after_roce(GpuId gpu);
  void add_nic_report();
  // The link layer at the GPUs (sim_link_retry.cpp): link-level retry, flow control.
  void add_link_layer();
  void reset_gpu_flow(GpuId gpu);
  void set_flow_loop_delays();
  // Puts what the GPU's NIC owes its hop on the wire: ACK/NAK, a credit update or pause,
  // replays, then waiting frames as credit and the scheduler allow.
  void send_on_gpu_link(GpuId gpu);
  // The next waiting frame the NIC may send (into `out`); false if none may go now.
  bool take_waiting(Gpu& state, wire::Frame& out, TimeNs start_ns);
  bool take_flow_control(Gpu& state, wire::Frame& out, const MacAddr& mac, TimeNs start_ns);
  // The NIC's next frame is one it writes itself: an ACK or NAK, a replay, a credit update or
  // a pause.
  static bool nic_writes_next(const Gpu& state) {
    return (state.llr && state.llr->has_output()) ||
           (state.flow_receiver && state.flow_receiver->control_due());
  }
  void on_gpu_arrival(GpuId gpu, std::uint32_t slot);
  void schedule_link_timer(GpuId gpu);
  void on_link_timer(GpuId gpu);
  void add_link_retry_report();
  // A frame for GPU `gpu` arrives at `arrival`: queues it for the endpoint behind the
  // completer (frames with requests) or as it arrives (the others).
  void queue_delivery(GpuId gpu, std::uint32_t slot, TimePs arrival);
  // --link-down: GPU `gpu`'s switch port goes down (or comes back up).
  void on_link_fault(GpuId gpu, bool down);
  // Delay spikes (switch_core.hpp): forwards what switch `sw` held until now.
  void on_release(std::uint32_t sw);
  // Schedules on_release for switch `sw`'s earliest held frame, unless one is scheduled then.
  void schedule_release(std::uint32_t sw);
  void kick_touched(std::uint32_t sw);
  // Handles what an endpoint call produced: frames to the NIC, wake-ups, completions.
  void after_engine(GpuId gpu);
  void count_completion(SimPartition& part, const Completion& completion, const OpRecord& record);
  // With independent GPUs: counts `gpu` done when the workload says so, once.
  void note_gpu_done(SimPartition& part, GpuId gpu);
  // Notes the time of the first peer marked down and up again, from the requester's counters.
  void note_liveness(SimPartition& part, Gpu& state);
  bool only_endless_timers_left() const {
    const SimPartition& only = partitions_[0];
    return workload_done_ && only.queue.size() == only.timers_pending &&
           (links_down_ > 0 || only.tally.peers_down > 0);
  }
  void fill_report(const Workload& workload);
  // Adds up what the partitions' GPUs counted.
  void add_gpu_tallies();
  // With two partitions and independent GPUs, the first this many GPUs run in the switches'
  // partition, which has less to do per frame (sim_windows.cpp).
  std::size_t gpus_beside_switches(TopologyKind kind) const;
  void add_switch_reports();
  void add_liveness_report();
  // A switch queued a frame for the link: start it now, or make sure one starts when the wire
  // is free.
  void kick(std::uint32_t link_index);
  // Precondition: the switch port has a frame and the wire is free.
  void start_tx(std::uint32_t link_index);
  // Puts the frame in `from`'s `slot` on the wire at `start`, and schedules its arrival (or
  // sends it to the other partition).
  void launch(SimPartition& from, std::uint32_t link_index, std::uint32_t slot, TimePs start);
  // The link's wire carries a frame of `frame_bytes` from `start`: returns when it reaches the
  // far end.
  TimePs transmit(SimPartition& from, std::uint32_t link_index, std::size_t frame_bytes,
                  TimePs start);
  // The frame in `to`'s `slot` reaches the far end of the link at `arrival`: queued for its
  // GPU, or in the link's in-flight FIFO for the switch (or the NIC's link layer).
  void arrive(SimPartition& to, std::uint32_t link_index, std::uint32_t slot, TimePs arrival);
  bool has_frame(const Link& link) const {
    return switches_[link.from.node]->front(link.from.port) != nullptr;
  }

  const TopologyConfig& config_;
  SimEngine engine_;
  bool link_retry_;    // [link] retry = "llr"
  bool flow_control_;  // [link] flow_control is "cbfc" or "pfc"
  bool link_layer_;    // either: frames to and from GPUs pass the NIC's link layer
  bool partitioned_;   // the GPUs' and the switches' events are two partitions
  SimTopology topology_;
  // Every GPU's local memory: one buffer, shared by all the endpoints of a group. The simulator
  // models time, not contents (nothing reads a value back to decide anything), so it keeps one
  // hbm_bytes image per group of GPUs instead of one per GPU: the completers' copies land in
  // memory that stays in cache (docs/simulator.md, "GPU memory"). Two groups when partitioned:
  // their GPUs may run on two threads.
  std::vector<SparseMemory> memories_;
  // Each GPU's group: 1 for the first gpus_beside_switches() GPUs when partitioned, else 0.
  // With a workload whose GPUs are independent, group 1 runs in the switches' partition.
  std::vector<std::uint8_t> gpu_group_;
  std::vector<std::uint8_t> gpu_partition_;  // which partition runs each GPU's events
  SimPartition& gpu_part(GpuId gpu) { return partitions_[gpu_partition_[gpu]]; }
  std::vector<Gpu> gpus_;
  std::vector<std::unique_ptr<SwitchCore>> switches_;
  std::vector<wire::Crc> switch_crc_;  // each switch's, for reading headers on the GPUs' side
  std::vector<TimeNs> release_scheduled_ns_;  // per switch: kNoRelease when none is pending
  std::vector<Link> links_;
  // The GPUs' side of the events and the switches' side: two partitions, or both the first.
  std::array<SimPartition, 2> partitions_;
  SimPartition& sw_;
  TimePs issue_ps_, completer_ps_;
  Workload* workload_ = nullptr;
  bool workload_done_ = false;
  bool independent_gpus_ = false;  // the workload's GPUs may run in two partitions
  unsigned threads_used_ = 1;
  bool ignore_core_distance_ = false;
  double cores_round_trip_ns_ = 0;  // measured before running on two threads
  std::size_t links_down_ = 0;      // switch ports down now
  SimReport report_;
};

}  // namespace ethx::sim
