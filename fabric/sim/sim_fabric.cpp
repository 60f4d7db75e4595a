#include "fabric/sim/sim_fabric.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ethx::sim {
namespace {

// What a switch or a response's receiver reads of a frame: its headers and the first
// transaction headers.
constexpr std::size_t kHeaderHintBytes = 256;

// Request transactions in a frame, read from the headers without checking the CRC (the
// endpoint validates the frame when it is delivered). 0 for anything that does not parse.
std::size_t count_requests(std::span<const std::byte> frame) {
  if (frame.size() < wire::kBodyOffset) return 0;
  const auto byte_at = [&](std::size_t offset) {
    return std::to_integer<std::uint32_t>(frame[offset]);
  };
  const std::size_t body = byte_at(22) << 8 | byte_at(23);
  const std::size_t end = wire::kBodyOffset + body;
  if (end > frame.size()) return 0;
  std::size_t requests = 0;
  for (std::size_t at = wire::kBodyOffset; at + wire::kTxnHeaderBytes <= end;) {
    const std::uint32_t opcode = byte_at(at);
    if (wire::is_known_opcode(static_cast<std::uint8_t>(opcode)) &&
        wire::is_request(static_cast<wire::Opcode>(opcode))) {
      ++requests;
    }
    at += wire::kTxnHeaderBytes + (byte_at(at + 6) << 8 | byte_at(at + 7));
  }
  return requests;
}

// The frame carries a link sequence number (reliable_links.hpp).
bool is_sequenced(std::span<const std::byte> frame) {
  constexpr std::size_t kFlagsOffset = wire::kEthernetHeaderBytes + 1;  // FrameHeader::flags
  return frame.size() > kFlagsOffset &&
         (std::to_integer<std::uint8_t>(frame[kFlagsOffset]) & wire::kFlagSeq) != 0;
}

}  // namespace

const char* to_string(SimEngine engine) {
  return engine == SimEngine::kRoce ? "roce" : "load-store";
}

bool parse_sim_engine(const std::string& text, SimEngine& out) {
  for (SimEngine engine : {SimEngine::kLoadStore, SimEngine::kRoce}) {
    if (text == to_string(engine)) {
      out = engine;
      return true;
    }
  }
  return false;
}

SimFabric::SimFabric(const TopologyConfig& config, TopologyKind kind, SimEngine engine,
                     SimPartitioning partitioning)
    : config_(config),
      engine_(engine),
      link_retry_(config.link_retry),
      flow_control_(config.flow_control.mode != FlowControlMode::kNone),
      link_layer_(has_link_layer(config)),
      partitioned_(partitioning == SimPartitioning::kAuto && partitioned(config, engine)),
      topology_(build_topology(config, kind)),
      gpu_group_(config.gpu_count, 0),
      gpu_partition_(config.gpu_count, 0),
      links_(topology_.links),
      partitions_{SimPartition(config.link_rate_gbps), SimPartition(config.link_rate_gbps)},
      sw_(partitioned_ ? partitions_[1] : partitions_[0]),
      issue_ps_(config.sim_issue_ns * kPsPerNs),
      completer_ps_(config.sim_completer_ns * kPsPerNs) {
  memories_.emplace_back(config.hbm_bytes);
  if (partitioned_) {
    memories_.emplace_back(config.hbm_bytes);
    std::fill_n(gpu_group_.begin(), gpus_beside_switches(kind), 1);
  }
  gpus_.reserve(config.gpu_count);
  for (std::size_t gpu = 0; gpu < config.gpu_count; ++gpu) {
    Gpu& state = gpus_.emplace_back();
    state.ops.resize(2 * std::size_t{config.max_outstanding});
    if (engine_ != SimEngine::kLoadStore) continue;
    EngineConfig engine_config = config.engine_config(static_cast<GpuId>(gpu));
    engine_config.crc = config.sim_crc ? wire::Crc::kOn : wire::Crc::kOff;
    state.endpoint =
        std::make_unique<Endpoint>(std::move(engine_config), memories_[gpu_group_[gpu]].bytes());
  }
  if (engine_ == SimEngine::kRoce) add_roce_gpus();
  if (link_layer_) add_link_layer();
  if (flow_control_) set_flow_loop_delays();
  for (const SwitchConfig& switch_config : topology_.switches) {
    switches_.push_back(std::make_unique<SwitchCore>(switch_config));
    switch_crc_.push_back(switches_.back()->crc());
  }
  release_scheduled_ns_.assign(switches_.size(), kNoRelease);
  for (const auto& core : switches_) {  // [[fault]] link = "down" starts a port down
    for (PortId port = 0; port < core->port_count(); ++port) links_down_ += !core->port_up(port);
  }
}

SimFabric::~SimFabric() = default;

void SimFabric::set_op_record_slots(std::size_t slots) {
  for (Gpu& state : gpus_) state.ops.resize(slots);
}

std::uint32_t SimFabric::max_op_bytes() const {
  // The engines' frame limit (12 B under fabric.frame_bytes_max with link-level retry).
  const std::size_t chunk = wire::max_txn_payload(config_.engine_config(0).frame_bytes_max);
  const std::size_t tags = std::max<std::size_t>(1, config_.max_outstanding / 2);
  return static_cast<std::uint32_t>(std::min<std::size_t>(chunk * tags, 1u << 30));
}

void SimFabric::schedule_link_faults(const std::vector<LinkFault>& faults) {
  for (const LinkFault& fault : faults) {
    const TimeNs last_ns = fault.up_ns.value_or(fault.down_ns);
    if (fault.gpu >= gpus_.size() || last_ns > kMaxLinkFaultNs) {
      throw std::invalid_argument("--link-down " + to_string(fault) +
                                  ": GPU out of range or time "
                                  "past " +
                                  std::to_string(kMaxLinkFaultNs) + " ns");
    }
    // A switch-side event: the switch port's link changes (and, with a link layer, the
    // NIC's: then both sides are one partition).
    sw_.queue.push(fault.down_ns * kPsPerNs, kLinkFault, fault.gpu, 1);
    ++sw_.timers_pending;
    if (fault.up_ns) {
      sw_.queue.push(*fault.up_ns * kPsPerNs, kLinkFault, fault.gpu, 0);
      ++sw_.timers_pending;
    }
    report_.link_faults.push_back(fault);
  }
}

SimReport SimFabric::run(Workload& workload, unsigned threads) {
  workload_ = &workload;
  workload_done_ = workload.done();
  independent_gpus_ = workload.independent_gpus();
  for (std::size_t gpu = 0; gpu < gpus_.size(); ++gpu) {
    gpu_partition_[gpu] = independent_gpus_ ? gpu_group_[gpu] : 0;
    ++partitions_[gpu_partition_[gpu]].tally.gpus;
    note_gpu_done(partitions_[gpu_partition_[gpu]], static_cast<GpuId>(gpu));  // nothing to do
  }
  for (Link& link : links_) {
    const auto partition_of = [&](const LinkEnd& end) {
      return end.kind == NodeKind::kSwitch ? 1 : gpu_partition_[end.node];
    };
    link.crosses = partitioned_ && partition_of(link.from) != partition_of(link.to);
  }
  for (std::size_t gpu = 0; gpu < gpus_.size(); ++gpu) try_issue(static_cast<GpuId>(gpu));
  if (partitioned_) {
    run_windows(threads);
  } else {
    run_sequential();
  }
  fill_report(workload);
  return report_;
}

void SimFabric::run_sequential() {
  SimPartition& part = partitions_[0];
  while (!part.queue.empty() && !only_endless_timers_left()) {
    const Event event = part.queue.pop();
    // The next event's frame was written long ago (in modelled time, hundreds of thousands of
    // events) and is cold: start fetching it while this event runs.
    if (!part.queue.empty()) prefetch(part, part.queue.top());
    part.now = event.at;
    ++part.events;
    dispatch(part, event);
  }
}

void SimFabric::prefetch(const SimPartition& part, const Event& event) const {
  // What a frame's event reads first: the frame's first lines (its headers), its slot, and
  // the FIFO entry after it, which the event schedules next. All were written long ago (in
  // modelled time, a hundred thousand events at 1024 GPUs) and are cold.
  const Fifo<Link::InFlight>* fifo = nullptr;
  switch (event.kind) {
    case kArrival:
      fifo = &links_[event.target].in_flight;
      break;
    case kDeliverResponses:
    case kDeliverRequests:
      fifo = &gpus_[event.target].delivering[event.kind - kDeliverResponses];
      break;
    default:
      return;
  }
  __builtin_prefetch(&part.slots[event.arg]);
  if (fifo->size() > 1) __builtin_prefetch(&(*fifo)[1]);
  const auto* data = static_cast<const char*>(event.hint);
  for (std::uint32_t line = 0; line < event.hint_lines; ++line) {
    __builtin_prefetch(data + std::size_t{64} * line);
  }
}

void SimFabric::dispatch(SimPartition& part, const Event& event) {
  switch (event.kind) {
    case kIssue:
      if (engine_ == SimEngine::kRoce) {
        on_issue_roce(static_cast<GpuId>(event.target));
      } else {
        on_issue(static_cast<GpuId>(event.target));
      }
      break;
    case kTxDone:
      on_tx_done(event.target);
      break;
    case kArrival:
      on_arrival(event.target, event.arg);
      break;
    case kDeliverResponses:
    case kDeliverRequests:
      on_deliver(static_cast<GpuId>(event.target), event.kind - kDeliverResponses, event.arg);
      break;
    case kWake:
      --part.timers_pending;  // a timer, not work in progress
      on_wake(static_cast<GpuId>(event.target));
      break;
    case kRelease:
      on_release(event.target);
      break;
    case kLinkFault:
      --part.timers_pending;  // a timer, not work in progress
      on_link_fault(static_cast<GpuId>(event.target), event.arg != 0);
      break;
    case kRoceSend:
      on_roce_send(static_cast<GpuId>(event.target));
      break;
    case kRoceArrival:
      on_roce_arrival(static_cast<GpuId>(event.target));
      break;
    case kRoceProcessed:
      on_roce_processed(static_cast<GpuId>(event.target));
      break;
    case kRoceCompletion:
      on_roce_completion(static_cast<GpuId>(event.target));
      break;
    case kLinkTimer:
      --part.timers_pending;  // a timer, not work in progress
      on_link_timer(static_cast<GpuId>(event.target));
      break;
    default:
      break;
  }
}

// Decides every operation the GPU may start now (tags permitting) and queues each behind the
// issue pipeline.
void SimFabric::try_issue(GpuId gpu) {
  SimPartition& part = gpu_part(gpu);
  if (engine_ == SimEngine::kRoce) {
    try_issue_roce(gpu);
    return;
  }
  Gpu& state = gpus_[gpu];
  Requester& requester = state.endpoint->requester();
  OpSpec op;
  while (workload_->peek(gpu, op)) {
    // A posted write takes no tag; a flush and an atomic take one (a flush's bytes are the
    // posted bytes it stands for).
    const std::size_t tags = op.posted               ? 0
                             : op.flush || op.atomic ? requester.tags_needed(8)
                                                     : requester.tags_needed(op.bytes);
    if (requester.free_tags() < state.tags_committed + tags) break;
    workload_->issued(gpu);
    state.tags_committed += tags;
    state.issue_busy_until = std::max(state.issue_busy_until, part.now) + issue_ps_;
    state.issuing.push_back(PendingIssue{op, tags, part.now, state.issue_busy_until});
    // One issue event per GPU at a time: the next is scheduled when this one runs.
    if (state.issuing.size() == 1) part.queue.push(state.issue_busy_until, kIssue, gpu);
  }
}

void SimFabric::on_issue(GpuId gpu) {
  SimPartition& part = gpu_part(gpu);
  Gpu& state = gpus_[gpu];
  const PendingIssue pending = state.issuing.front();
  state.issuing.pop_front();
  if (!state.issuing.empty()) part.queue.push(state.issuing.front().handed_ps, kIssue, gpu);
  state.tags_committed -= pending.tags;
  Requester& requester = state.endpoint->requester();
  part.effects.clear();
  const OpId id = hand_over(part, gpu, requester, pending.op);
  if (!pending.op.posted) state.ops.add(id, OpRecord{pending.decided_ps, pending.op.bytes});
  if (!pending.op.hold) state.endpoint->poll(part.now_ns(), part.effects);
  after_engine(gpu);
}

OpId SimFabric::hand_over(SimPartition& part, GpuId gpu, Requester& requester, const OpSpec& op) {
  if (op.flush) return requester.flush(op.dst, part.now_ns(), part.effects);
  if (op.atomic) {
    return requester.atomic(op.dst, op.address, AtomicOp::kFetchAdd, 8, 1, 0, part.now_ns(),
                            part.effects);
  }
  if (op.read) return requester.read(op.dst, op.address, op.bytes, part.now_ns(), part.effects);
  // The data comes from the start of the (shared) memory.
  const auto data = memories_[gpu_group_[gpu]].bytes().first(op.bytes);
  if (!op.posted) return requester.write(op.dst, op.address, data, part.now_ns(), part.effects);
  requester.write_posted(op.dst, op.address, data, part.now_ns(), part.effects);
  return 0;
}

void SimFabric::after_engine(GpuId gpu) {
  SimPartition& part = gpu_part(gpu);
  Gpu& state = gpus_[gpu];
  const std::uint32_t uplink = topology_.gpu_tx_link[gpu];
  // A NIC sends its frames in order and nothing can overtake them, so each frame's
  // transmission is fixed the moment it is queued: it starts when the wire is free. (Its
  // arrival waits in the link's in-flight FIFO, not in the event heap.)
  for (wire::Frame& frame : part.effects.send) {
    if (link_layer_) {
      const TrafficClass c = flow_control_ ? traffic_class_of(frame) : TrafficClass::kRequests;
      state.link_waiting[static_cast<std::size_t>(c)].push_back(std::move(frame));
      continue;
    }
    const TimePs start = std::max(part.now, links_[uplink].free_at);
    if (links_[uplink].crosses) {  // straight to the switches' partition: no slot here
      const SwitchCore::IngressRead read =
          SwitchCore::read_ingress(frame, switch_crc_[links_[uplink].to.node]);
      part.send_across(uplink, transmit(part, uplink, frame.size(), start), std::move(frame), read);
      continue;
    }
    const std::uint32_t slot = part.take_slot();
    part.slots[slot].swap(frame);
    launch(part, uplink, slot, start);
  }
  if (link_layer_) send_on_gpu_link(gpu);
  schedule_wake(gpu);
  part.effects.clear();

  Requester& requester = state.endpoint->requester();
  note_liveness(part, state);
  bool any = false;
  part.wake.clear();
  while (auto completion = requester.take_completion()) {
    any = true;
    count_completion(part, *completion, state.ops.take(completion->id));
    workload_->completed(gpu, part.wake);
  }
  if (!any) return;
  if (partitioned_) {
    note_gpu_done(part, gpu);  // workload_done_ is the sequential loop's: one thread's
  } else {
    workload_done_ = workload_->done();
  }
  const std::vector<GpuId> others = part.wake;  // try_issue may not reenter after_engine
  try_issue(gpu);
  for (GpuId other : others) {
    if (other != gpu) try_issue(other);
  }
}

void SimFabric::schedule_wake_at(GpuId gpu, TimePs wake_ps) {
  SimPartition& part = gpu_part(gpu);
  Gpu& state = gpus_[gpu];
  state.wake_pending = std::max(wake_ps, part.now);
  part.queue.push(state.wake_pending, kWake, gpu);
  ++part.timers_pending;
}

void SimFabric::count_completion(SimPartition& part, const Completion& completion,
                                 const OpRecord& record) {
  GpuTally& tally = part.tally;
  tally.latencies_ps.push_back(part.now - record.decided_ps);
  tally.makespan_ps = std::max(tally.makespan_ps, part.now);
  if (completion.ok()) {
    ++tally.ops_ok;
    tally.payload_bytes += record.bytes;
    return;
  }
  ++tally.ops_failed;
  if (completion.status == wire::Status::kTimeout) ++tally.timeouts;
  if (completion.status == wire::Status::kUnreachable) ++tally.unreachable;
}

void SimFabric::note_gpu_done(SimPartition& part, GpuId gpu) {
  Gpu& state = gpus_[gpu];
  if (!independent_gpus_ || state.workload_done || !workload_->gpu_done(gpu)) return;
  state.workload_done = true;
  ++part.tally.gpus_done;
}

void SimFabric::note_liveness(SimPartition& part, Gpu& state) {
  const Requester& requester = state.endpoint->requester();
  // Almost always nothing changed: one compare on lines after_engine reads anyway.
  if (requester.liveness_transitions() == state.seen_liveness_transitions) return;
  state.seen_liveness_transitions = requester.liveness_transitions();
  const RequesterCounters& counters = requester.counters();
  GpuTally& tally = part.tally;
  if (counters.peers_marked_down != state.seen_marked_down) {
    tally.peers_down += counters.peers_marked_down - state.seen_marked_down;
    state.seen_marked_down = counters.peers_marked_down;
    if (!tally.first_down_ps) tally.first_down_ps = part.now;
  }
  if (counters.peers_marked_up != state.seen_marked_up) {
    tally.peers_down -= counters.peers_marked_up - state.seen_marked_up;
    state.seen_marked_up = counters.peers_marked_up;
    if (!tally.first_up_ps) tally.first_up_ps = part.now;
  }
}

void SimFabric::kick(std::uint32_t link_index) {
  Link& link = links_[link_index];
  if (link.kick_pending) return;
  if (sw_.now >= link.free_at) {
    start_tx(link_index);
  } else {
    link.kick_pending = true;
    sw_.queue.push(link.free_at, kTxDone, link_index);
  }
}

void SimFabric::start_tx(std::uint32_t link_index) {
  Link& link = links_[link_index];
  if (link.crosses) {  // straight to the GPU's partition: no slot here
    wire::Frame frame;
    switches_[link.from.node]->pop_into(link.from.port, frame, sw_.now_ns());
    sw_.send_across(link_index, transmit(sw_, link_index, frame.size(), sw_.now), std::move(frame));
  } else {
    const std::uint32_t slot = sw_.take_slot();
    switches_[link.from.node]->pop_into(link.from.port, sw_.slots[slot], sw_.now_ns());
    launch(sw_, link_index, slot, sw_.now);
  }
  // A frame sent under link-level retry starts the port's replay timer; one sent under flow
  // control frees buffer, which may make a credit update or an XON due on another port.
  if (link_layer_) schedule_release(link.from.node);
  if (has_frame(link)) {
    link.kick_pending = true;
    sw_.queue.push(link.free_at, kTxDone, link_index);
  }
}

void SimFabric::launch(SimPartition& from, std::uint32_t link_index, std::uint32_t slot,
                       TimePs start) {
  wire::Frame& frame = from.slots[slot];
  const TimePs arrival = transmit(from, link_index, frame.size(), start);
  const Link& link = links_[link_index];
  if (link.crosses) {
    from.send_across(link_index, arrival, std::move(frame));
    from.release_slot(slot);
    return;
  }
  arrive(from, link_index, slot, arrival);
}

TimePs SimFabric::transmit(SimPartition& from, std::uint32_t link_index, std::size_t frame_bytes,
                           TimePs start) {
  Link& link = links_[link_index];
  const TimePs done = start + from.serialization(frame_bytes, link.rate_gbps);
  link.free_at = done;
  ++link.frames_sent;
  link.wire_bytes_sent += wire::wire_bytes(frame_bytes);
  return done + link.delay_ps;
}

void SimFabric::arrive(SimPartition& to, std::uint32_t link_index, std::uint32_t slot,
                       TimePs arrival) {
  Link& link = links_[link_index];
  const wire::Frame& frame = to.slots[slot];
  if (link.to.kind == NodeKind::kGpu && engine_ == SimEngine::kRoce) {
    auto& arriving = gpus_[link.to.node].roce->arriving;
    arriving.push_back(RoceGpu::Received{arrival, slot, 0});
    if (arriving.size() == 1) to.queue.push(arrival, kRoceArrival, link.to.node, slot);
  } else if (link.to.kind == NodeKind::kGpu && !link_layer_) {
    queue_delivery(static_cast<GpuId>(link.to.node), slot, arrival);
  } else {
    // Toward a switch the pipeline holds hundreds of frames per link; keeping them in the
    // link's own FIFO with one event for the first keeps the event heap small. (So do frames
    // toward a GPU with link-level retry: its NIC checks each as it arrives.) A frame that
    // crossed from the GPUs' partition brought its headers: nothing of it is worth fetching.
    const auto hint_bytes =
        static_cast<std::uint32_t>(link.crosses ? 0 : std::min(frame.size(), kHeaderHintBytes));
    link.in_flight.push_back(Link::InFlight{arrival, slot, hint_bytes, frame.data()});
    if (link.in_flight.size() == 1) {
      to.queue.push(arrival, kArrival, link_index, slot, frame.data(), hint_bytes);
    }
  }
}

void SimFabric::queue_delivery(GpuId gpu, std::uint32_t slot, TimePs arrival) {
  SimPartition& part = gpu_part(gpu);
  // Everything for a GPU arrives over this one link, in transmission order, so its
  // completer's queue can be worked out now: one event per frame instead of two.
  // Frames with requests are handed over in completer order, frames with only responses
  // on arrival: each kind in its own FIFO, both monotonic, one event for each head.
  // A sequenced frame (go-back-N) must reach the endpoint in sequence order, which checks
  // the sequence as it takes the whole frame: one carrying only responses then waits behind
  // the requests queued before it instead of overtaking them (a gap, a NAK, and every frame
  // after it resent).
  const wire::Frame& frame = part.slots[slot];
  const std::size_t requests = count_requests(frame);
  Gpu& state = gpus_[gpu];
  TimePs deliver = arrival;
  const std::uint32_t fifo = requests > 0 || is_sequenced(frame) ? 1 : 0;
  if (requests > 0) {
    state.completer_busy_until =
        std::max(state.completer_busy_until, arrival) + completer_ps_ * requests;
    deliver = state.completer_busy_until;
  } else if (fifo == 1) {
    deliver = std::max(state.completer_busy_until, arrival);
  }
  // A frame with requests is read whole (a write's payload is copied into memory), the
  // others only up to their transaction headers.
  const auto hint_bytes = static_cast<std::uint32_t>(
      requests > 0 ? frame.size() : std::min(frame.size(), kHeaderHintBytes));
  auto& waiting = state.delivering[fifo];
  waiting.push_back(Link::InFlight{deliver, slot, hint_bytes, frame.data()});
  if (waiting.size() == 1) {
    part.queue.push(deliver, kDeliverResponses + fifo, gpu, slot, frame.data(), hint_bytes);
  }
}

void SimFabric::on_tx_done(std::uint32_t link_index) {
  Link& link = links_[link_index];
  link.kick_pending = false;
  if (has_frame(link)) start_tx(link_index);
}

void SimFabric::on_arrival(std::uint32_t link_index, std::uint32_t slot) {
  Link& link = links_[link_index];
  link.in_flight.pop_front();  // the frame in `slot`
  if (!link.in_flight.empty()) {
    const Link::InFlight& next = link.in_flight.front();
    sw_.queue.push(next.at, kArrival, link_index, next.slot, next.data, next.hint_bytes);
  }
  const LinkEnd to = link.to;
  if (to.kind == NodeKind::kGpu) {  // only with link-level retry: GPUs get kDeliver otherwise
    on_gpu_arrival(static_cast<GpuId>(to.node), slot);
    return;
  }
  sw_.touched.clear();
  SwitchCore& core = *switches_[to.node];
  if (link.crosses) {  // its headers came with it (sim_partition.hpp: CrossingFrame)
    core.on_owned_frame(to.port, sw_.slots[slot], sw_.ingress_reads[slot], sw_.now_ns(),
                        sw_.touched);
  } else {
    core.on_owned_frame(to.port, sw_.slots[slot], sw_.now_ns(), sw_.touched);
  }
  sw_.release_slot(slot);
  kick_touched(to.node);
  schedule_release(to.node);
}

void SimFabric::kick_touched(std::uint32_t sw) {
  for (PortId port : sw_.touched) {
    const std::uint32_t egress = topology_.egress_link[sw][port];
    if (egress != kNoLink) kick(egress);
  }
}

void SimFabric::schedule_release(std::uint32_t sw) {
  const TimeNs next = switches_[sw]->next_release_ns();
  if (next == kNoRelease || next == release_scheduled_ns_[sw]) return;
  release_scheduled_ns_[sw] = next;
  sw_.queue.push(std::max<TimePs>(sw_.now, next * kPsPerNs), kRelease, sw);
}

void SimFabric::on_release(std::uint32_t sw) {
  release_scheduled_ns_[sw] = kNoRelease;
  sw_.touched.clear();
  switches_[sw]->release_held(sw_.now_ns(), sw_.touched);
  kick_touched(sw);
  schedule_release(sw);
}

void SimFabric::on_deliver(GpuId gpu, std::uint32_t fifo, std::uint32_t slot) {
  SimPartition& part = gpu_part(gpu);
  Gpu& state = gpus_[gpu];
  auto& waiting = state.delivering[fifo];
  waiting.pop_front();  // the frame in `slot`
  if (!waiting.empty()) {
    const Link::InFlight& next = waiting.front();
    part.queue.push(next.at, kDeliverResponses + fifo, gpu, next.slot, next.data, next.hint_bytes);
  }
  ++part.tally.frames_delivered;
  part.effects.clear();
  state.endpoint->on_frame(part.slots[slot], part.now_ns(), part.effects);
  part.release_slot(slot);
  state.endpoint->poll(part.now_ns(), part.effects);
  after_engine(gpu);
}

void SimFabric::on_wake(GpuId gpu) {
  SimPartition& part = gpu_part(gpu);
  Gpu& state = gpus_[gpu];
  if (part.now != state.wake_pending) return;  // superseded by an earlier wake-up
  state.wake_pending = UINT64_MAX;
  part.effects.clear();
  if (engine_ == SimEngine::kRoce) {
    state.roce->node.poll(part.now_ns(), part.effects);
    after_roce(gpu);
    return;
  }
  state.endpoint->poll(part.now_ns(), part.effects);
  after_engine(gpu);
}

void SimFabric::on_link_fault(GpuId gpu, bool down) {
  // The GPU's cable ends on the switch port its transmit link leads to.
  const LinkEnd port = links_[topology_.gpu_tx_link[gpu]].to;
  SwitchCore& core = *switches_[port.node];
  PortFaults faults = core.faults(port.port);  // keeps the config's [[fault]] rates
  faults.link_down = down;
  const bool was_up = core.port_up(port.port);
  core.set_faults(port.port, faults);
  if (was_up && down) ++links_down_;
  if (!was_up && !down) --links_down_;
  // Both ends of a cable see its link go down: the NIC's link-level retry starts over too, as
  // the switch port's did (its frames in flight are lost with the link).
  if (link_retry_ && was_up && down) gpus_[gpu].llr->reset();
  // Flow control starts again when the link is back: the NIC may have spent credit on frames
  // the down port threw away, as the port's own ends reset then too.
  if (flow_control_ && !was_up && !down) {
    reset_gpu_flow(gpu);
    send_on_gpu_link(gpu);  // frames held for credit that never came go now
  }
  // Taking the port down dropped what it held, so the earliest release may have moved.
  schedule_release(port.node);
}

}  // namespace ethx::sim
