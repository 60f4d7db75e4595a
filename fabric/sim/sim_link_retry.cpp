// The link layer in the simulator (docs/link-layer.md): the GPU's NIC end of each GPU hop, for
// link-level retry ([link] retry = "llr") and flow control per traffic class ([link]
// flow_control). The switch ends live in the SwitchCores (switch/core/switch_link.cpp,
// switch_flow.cpp), so every hop, GPU to leaf and leaf to spine, runs the same sans-I/O code.
#include <stdexcept>

#include "fabric/sim/sim_fabric.hpp"

namespace ethx::sim {

void SimFabric::add_link_layer() {
  // The RDMA NIC model sends and receives through its own queues (sim_roce.cpp).
  if (engine_ != SimEngine::kLoadStore) {
    throw std::invalid_argument(link_retry_ ? "[link] retry = \"llr\" is modelled with the "
                                              "load/store engine only (not --engine roce)"
                                            : "[link] flow_control is modelled with the "
                                              "load/store engine only (not --engine roce)");
  }
  const wire::Crc crc = config_.sim_crc ? wire::Crc::kOn : wire::Crc::kOff;
  for (std::size_t gpu = 0; gpu < gpus_.size(); ++gpu) {
    if (link_retry_) gpus_[gpu].llr = std::make_unique<LinkRetry>(config_.link_retry_config, crc);
    if (flow_control_) reset_gpu_flow(static_cast<GpuId>(gpu));
  }
}

// The NIC takes every frame at line rate into the engine (its completer queue is memory), so
// its receiving end never pauses; it returns credit as frames arrive.
void SimFabric::reset_gpu_flow(GpuId gpu) {
  const FlowControlConfig& flow = config_.flow_control;
  std::optional<PfcThresholds> thresholds;
  if (flow.mode == FlowControlMode::kPfc) {
    thresholds = pfc_thresholds(flow.class_buffer_bytes, config_.link_rate_gbps,
                                config_.link_propagation_ns, flow.frame_bytes_max);
  }
  Gpu& state = gpus_[gpu];
  state.flow_sender = std::make_unique<FlowSender>(flow, config_.link_rate_gbps);
  state.flow_receiver = std::make_unique<FlowReceiver>(flow, thresholds, config_.link_rate_gbps);
}

// A credit update or pause frame the NIC owes, sent as data under link-level retry.
// What PFC's headroom must cover on each switch port: the modelled delay of its hop out and
// back, which here includes the NIC crossings and the switch's forwarding latency (charged to
// the link a frame arrives on), not only the cable's propagation.
void SimFabric::set_flow_loop_delays() {
  std::vector<std::vector<TimePs>> loop_ps(topology_.switches.size());
  for (std::size_t sw = 0; sw < loop_ps.size(); ++sw) {
    loop_ps[sw].assign(topology_.switches[sw].ports.size(), 0);
  }
  for (const Link& link : links_) {
    if (link.from.kind == NodeKind::kSwitch)
      loop_ps[link.from.node][link.from.port] += link.delay_ps;
    if (link.to.kind == NodeKind::kSwitch) loop_ps[link.to.node][link.to.port] += link.delay_ps;
  }
  for (std::size_t sw = 0; sw < loop_ps.size(); ++sw) {
    std::vector<SwitchPortConfig>& ports = topology_.switches[sw].ports;
    for (std::size_t port = 0; port < ports.size(); ++port) {
      ports[port].propagation_ns = (loop_ps[sw][port] / 2 + kPsPerNs - 1) / kPsPerNs;
    }
  }
}

bool SimFabric::take_flow_control(Gpu& state, wire::Frame& out, const MacAddr& mac,
                                  TimeNs start_ns) {
  if (!state.flow_receiver || !state.flow_receiver->control_due()) return false;
  if (state.llr && !state.llr->can_send(sizeof(PfcFrame))) return false;
  if (!state.flow_receiver->take_control(out, mac, start_ns)) return false;
  if (state.llr) state.llr->stamp(out, start_ns);
  return true;
}

bool SimFabric::take_waiting(Gpu& state, wire::Frame& out, TimeNs start_ns) {
  std::array<bool, kTrafficClasses> waiting{};
  std::array<std::size_t, kTrafficClasses> head_bytes{};
  for (std::size_t c = 0; c < kTrafficClasses; ++c) {
    waiting[c] = !state.link_waiting[c].empty();
    if (waiting[c]) head_bytes[c] = state.link_waiting[c].front().size();
  }
  std::size_t c = 0;
  if (state.flow_sender) {
    const std::optional<TrafficClass> picked =
        state.flow_sender->pick(waiting, head_bytes, start_ns);
    if (!picked) return false;
    c = static_cast<std::size_t>(*picked);
  } else if (!waiting[0]) {
    return false;
  }
  if (state.llr && !state.llr->can_send(head_bytes[c])) return false;  // waits for an ACK
  out.swap(state.link_waiting[c].front());
  state.link_waiting[c].pop_front();
  if (state.flow_sender) state.flow_sender->on_sent(static_cast<TrafficClass>(c), out.size());
  if (state.llr) state.llr->stamp(out, start_ns);
  return true;
}

void SimFabric::send_on_gpu_link(GpuId gpu) {
  SimPartition& part = gpu_part(gpu);
  Gpu& state = gpus_[gpu];
  const std::uint32_t uplink = topology_.gpu_tx_link[gpu];
  const MacAddr& mac = config_.gpus[gpu].mac;
  // The NIC sends in order, so each frame's start on the wire is known when it is queued:
  // the replay timer counts from then. Under flow control the NIC decides only when the wire
  // is free (a pause that arrives meanwhile must hold the next frame): one frame at a time,
  // and the link timer comes back when it has left.
  for (;;) {
    if (flow_control_ && links_[uplink].free_at > part.now) break;
    const TimePs start = std::max(part.now, links_[uplink].free_at);
    const TimeNs start_ns = start / kPsPerNs;
    const std::uint32_t slot = part.take_slot();
    wire::Frame& frame = part.slots[slot];
    // What the NIC writes itself (an ACK, a credit update, a replay's copy) goes into a
    // recycled buffer: a free slot holds none, and each would allocate one. (Not for a waiting
    // frame: it brings its own, and the lent one would be freed.)
    if (frame.capacity() == 0 && nic_writes_next(state)) frame = part.effects.take_spare();
    // ACK/NAK, then a credit update or pause, then replays, then new frames.
    const bool sent = (state.llr && state.llr->take_control(frame, mac)) ||
                      take_flow_control(state, frame, mac, start_ns) ||
                      (state.llr && state.llr->take_replay(frame, start_ns)) ||
                      take_waiting(state, frame, start_ns);
    if (!sent) {
      part.release_slot(slot);
      break;
    }
    launch(part, uplink, slot, start);
  }
  schedule_link_timer(gpu);
}

void SimFabric::on_gpu_arrival(GpuId gpu, std::uint32_t slot) {
  SimPartition& part = gpu_part(gpu);
  Gpu& state = gpus_[gpu];
  wire::Frame& frame = part.slots[slot];
  bool deliver = true;
  if (state.llr) {
    std::size_t payload_bytes = 0;
    // Not delivered: an ACK or NAK (taken), or a damaged or out-of-sequence frame.
    deliver =
        state.llr->receive(frame, part.now_ns(), payload_bytes) == LinkRetry::Verdict::kDeliver;
    if (deliver) frame.resize(payload_bytes);
  }
  if (deliver && state.flow_receiver) {
    if (is_flow_control_frame(frame)) {
      state.flow_sender->on_control(frame, part.now_ns());
      deliver = false;
    } else {
      const TrafficClass c = traffic_class_of(frame);
      state.flow_receiver->on_arrival(c, frame.size(), part.now_ns());
      state.flow_receiver->on_departure(c, frame.size());
    }
  }
  if (deliver) {
    queue_delivery(gpu, slot, part.now);
  } else {
    part.release_slot(slot);
  }
  send_on_gpu_link(gpu);
}

void SimFabric::schedule_link_timer(GpuId gpu) {
  SimPartition& part = gpu_part(gpu);
  Gpu& state = gpus_[gpu];
  TimeNs deadline_ns = state.llr ? state.llr->next_deadline_ns() : LinkRetry::kNever;
  // A pause that holds waiting frames ends with time, not with a frame.
  TimePs wire_free_ps = UINT64_MAX;
  if (state.flow_sender &&
      (!state.link_waiting[0].empty() || !state.link_waiting[1].empty() ||
       state.flow_receiver->control_due() || (state.llr && state.llr->has_output()))) {
    deadline_ns = std::min(deadline_ns, state.flow_sender->resume_at_ns(part.now_ns()));
    const TimePs free_at = links_[topology_.gpu_tx_link[gpu]].free_at;
    if (free_at > part.now) wire_free_ps = free_at;
  }
  if (deadline_ns == LinkRetry::kNever && wire_free_ps == UINT64_MAX) return;
  const TimePs deadline_ps = deadline_ns == LinkRetry::kNever ? UINT64_MAX : deadline_ns * kPsPerNs;
  const TimePs at = std::max(std::min(deadline_ps, wire_free_ps), part.now);
  if (at >= state.llr_timer_pending) return;
  state.llr_timer_pending = at;
  part.queue.push(at, kLinkTimer, gpu);
  ++part.timers_pending;
}

void SimFabric::on_link_timer(GpuId gpu) {
  SimPartition& part = gpu_part(gpu);
  Gpu& state = gpus_[gpu];
  if (part.now != state.llr_timer_pending) return;  // superseded by an earlier one
  state.llr_timer_pending = UINT64_MAX;
  if (state.llr) state.llr->on_time(part.now_ns());
  send_on_gpu_link(gpu);
}

void SimFabric::add_link_retry_report() {
  if (link_retry_) {
    LinkRetryCounters total;
    for (const Gpu& state : gpus_) total += state.llr->counters();
    for (const auto& core : switches_) {
      for (PortId port = 0; port < core->port_count(); ++port) {
        if (const LinkRetryCounters* c = core->link_retry_counters(port)) total += *c;
      }
    }
    report_.link_retry = total;
  }
  if (!flow_control_) return;
  FlowControlCounters flow;
  for (const Gpu& state : gpus_) {
    flow += state.flow_sender->counters();
    flow += state.flow_receiver->counters();
  }
  for (const auto& core : switches_) {
    for (PortId port = 0; port < core->port_count(); ++port) {
      if (const auto c = core->flow_control_counters(port)) flow += *c;
    }
  }
  report_.flow_control = flow;
  report_.flow_control_mode = to_string(config_.flow_control.mode);
}

}  // namespace ethx::sim
