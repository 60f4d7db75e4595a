// Link-level retry in the simulator ([link] retry = "llr", docs/link-layer.md): the GPU's NIC
// end of each GPU hop. The switch ends live in the SwitchCores (switch/core/switch_link.cpp),
// so every hop, GPU to leaf and leaf to spine, runs the same sans-I/O LinkRetry.
#include <stdexcept>

#include "fabric/sim/sim_fabric.hpp"

namespace ethx::sim {

void SimFabric::add_link_retry() {
  // The RDMA NIC model sends and receives through its own queues (sim_roce.cpp).
  if (engine_ != SimEngine::kLoadStore) {
    throw std::invalid_argument(
        "[link] retry = \"llr\" is modelled with the load/store engine only (not --engine roce)");
  }
  const wire::Crc crc = config_.sim_crc ? wire::Crc::kOn : wire::Crc::kOff;
  for (Gpu& state : gpus_) state.llr = std::make_unique<LinkRetry>(config_.link_retry_config, crc);
}

void SimFabric::send_on_gpu_link(GpuId gpu) {
  Gpu& state = gpus_[gpu];
  LinkRetry& llr = *state.llr;
  const std::uint32_t uplink = topology_.gpu_tx_link[gpu];
  const MacAddr& mac = config_.gpus[gpu].mac;
  // The NIC sends in order, so each frame's start on the wire is known when it is queued:
  // the replay timer counts from then.
  for (;;) {
    const TimePs start = std::max(now_, links_[uplink].free_at);
    const std::uint32_t slot = take_slot();
    wire::Frame& frame = slots_[slot];
    if (!llr.take_control(frame, mac) && !llr.take_replay(frame, start / kPsPerNs)) {
      if (state.llr_waiting.empty() || !llr.can_send(state.llr_waiting.front().size())) {
        release_slot(slot);
        break;
      }
      frame.swap(state.llr_waiting.front());
      state.llr_waiting.pop_front();
      llr.stamp(frame, start / kPsPerNs);
    }
    launch(uplink, slot, start);
  }
  schedule_link_timer(gpu);
}

void SimFabric::on_gpu_arrival(GpuId gpu, std::uint32_t slot) {
  Gpu& state = gpus_[gpu];
  std::size_t payload_bytes = 0;
  if (state.llr->receive(slots_[slot], now_ns(), payload_bytes) == LinkRetry::Verdict::kDeliver) {
    slots_[slot].resize(payload_bytes);
    queue_delivery(gpu, slot, now_);
  } else {
    release_slot(slot);  // an ACK or NAK (taken), or a damaged or out-of-sequence frame
  }
  send_on_gpu_link(gpu);
}

void SimFabric::schedule_link_timer(GpuId gpu) {
  Gpu& state = gpus_[gpu];
  const TimeNs deadline_ns = state.llr->next_deadline_ns();
  if (deadline_ns == LinkRetry::kNever) return;
  const TimePs at = std::max(deadline_ns * kPsPerNs, now_);
  if (at >= state.llr_timer_pending) return;
  state.llr_timer_pending = at;
  queue_.push(at, kLinkTimer, gpu);
  ++timers_pending_;
}

void SimFabric::on_link_timer(GpuId gpu) {
  Gpu& state = gpus_[gpu];
  if (now_ != state.llr_timer_pending) return;  // superseded by an earlier one
  state.llr_timer_pending = UINT64_MAX;
  state.llr->on_time(now_ns());
  send_on_gpu_link(gpu);
}

void SimFabric::add_link_retry_report() {
  if (!link_retry_) return;
  LinkRetryCounters total;
  for (const Gpu& state : gpus_) total += state.llr->counters();
  for (const auto& core : switches_) {
    for (PortId port = 0; port < core->port_count(); ++port) {
      if (const LinkRetryCounters* c = core->link_retry_counters(port)) total += *c;
    }
  }
  report_.link_retry = total;
}

}  // namespace ethx::sim
