#include "switch/runtime/shm_switch_runtime.hpp"

#include <random>

#include "fabric/platform/clock.hpp"

namespace ethx {
namespace {

constexpr std::size_t kReceiveBatchPerPort = 32;
constexpr std::size_t kMaxFrameBytes = shm::FrameRing::max_frame_bytes();
// How long a full egress queue may pause the whole switch before it is written off.
constexpr TimeNs kPauseWatchdogNs = 20'000'000;

}  // namespace

ShmSwitchRuntime::ShmSwitchRuntime(const TopologyConfig& topology, shm::ShmFabricRegion& region)
    : region_(region),
      core_(topology.emulated_switch_config(0, std::random_device{}())),
      pending_(region.port_count()),
      congested_since_ns_(region.port_count(), 0) {}

std::size_t ShmSwitchRuntime::admission_budget_frames(TimeNs now) {
  std::size_t min_headroom_bytes = SIZE_MAX;
  for (PortId port = 0; port < core_.port_count(); ++port) {
    const std::size_t limit = core_.config().ports[port].egress_queue_bytes;
    const std::size_t queued = core_.queued_bytes(port);
    const std::size_t headroom = queued >= limit ? 0 : limit - queued;
    if (headroom >= kMaxFrameBytes) {
      congested_since_ns_[port] = 0;
    } else if (congested_since_ns_[port] == 0) {
      congested_since_ns_[port] = now;
    } else if (now - congested_since_ns_[port] > kPauseWatchdogNs) {
      // This port's node stopped draining (crashed or stopped): stop pausing the fabric for
      // it, as a PFC watchdog does; frames for it are now dropped and counted as queue-full.
      continue;
    }
    min_headroom_bytes = std::min(min_headroom_bytes, headroom);
  }
  return min_headroom_bytes / kMaxFrameBytes;
}

bool ShmSwitchRuntime::receive_all(TimeNs now) {
  // Lossless like a PFC-paused Ethernet: take no more frames than the fullest egress queue
  // can still hold (a frame adds at most one copy to any queue), so a receiver that is slower
  // than its senders back-pressures them through their rings instead of losing stores.
  std::size_t budget = admission_budget_frames(now);
  // Frames a delay spike held whose time has come go before anything newer.
  core_.release_held(now, touched_);
  bool moved = !touched_.empty();
  const std::uint32_t ports = region_.port_count();
  for (std::uint32_t i = 0; i < ports && budget > 0; ++i) {
    const std::uint32_t port = (first_port_ + i) % ports;  // rotate for fairness
    // A stalled link (delay spike) delivers nothing: its frames wait in the node's ring, which
    // back-pressures the node as a paused link would, instead of piling up in the core.
    if (core_.ingress_stalled(port, now)) continue;
    shm::PortChannel& channel = region_.port(port);
    // A (nearly) full ring means its node may be waiting for room: ring it once there is.
    const bool node_may_wait = channel.to_switch.size() >= shm::kRingSlots * 3 / 4;
    const std::size_t popped = channel.to_switch.pop_batch(
        std::min(kReceiveBatchPerPort, budget), [&](std::span<const std::byte> frame) {
          commands_.tap(port, frame);
          core_.on_frame(port, frame, now, touched_);
        });
    if (node_may_wait && popped > 0) waiter_.ring(channel.node_bell);
    budget -= popped;
    moved = moved || popped > 0;
  }
  first_port_ = (first_port_ + 1) % ports;
  pending_.add(touched_);
  return moved;
}

bool ShmSwitchRuntime::transmit_all() {
  bool moved = false;
  pending_.drain_each([&](PortId egress) {
    shm::PortChannel& channel = region_.port(egress);
    bool pushed = false;
    while (const QueuedFrame* frame = core_.front(egress)) {
      if (!channel.to_node.try_push(frame->bytes)) break;  // node busy: back-pressure
      commands_.tap(egress, frame->bytes);
      core_.pop(egress);
      pushed = true;
    }
    if (pushed) waiter_.ring(channel.node_bell);
    moved = moved || pushed;
    return core_.front(egress) != nullptr;
  });
  return moved;
}

bool ShmSwitchRuntime::has_input() {
  for (PortId egress : pending_.ports()) {
    if (region_.port(egress).to_node.has_free_slot()) return true;
  }
  if (commands_.enabled() && commands_.pending()) return true;
  const TimeNs now = monotonic_now_ns();
  if (core_.next_release_ns() <= now) return true;
  // While paused, new input is not work: only a draining egress ring is.
  if (admission_budget_frames(now) == 0) return false;
  for (std::uint32_t port = 0; port < region_.port_count(); ++port) {
    // A stalled port's frames are not work until its stall ends (next_release_ns).
    if (!region_.port(port).to_switch.empty() && !core_.ingress_stalled(port, now)) return true;
  }
  return false;
}

bool ShmSwitchRuntime::step() {
  ++rounds_;
  const bool received = receive_all(monotonic_now_ns());
  const bool sent = transmit_all();
  return received || sent;
}

void ShmSwitchRuntime::run(const std::atomic<bool>& stop) {
  region_.header().switch_ready.store(1);
  while (!stop.load(std::memory_order_relaxed)) {
    // A changed fault is news for `ethx status` too.
    if (commands_.poll(core_)) periodic_.note_activity();
    if (step()) {
      periodic_.note_activity();
      if (periodic_.enabled()) periodic_.poll(monotonic_ns());
      continue;
    }
    // Idle: spin, yield, then sleep until a node rings or a held frame is due; a signal ends
    // the sleep at once.
    const TimeNs now = monotonic_now_ns();
    const TimeNs release = core_.next_release_ns();
    const std::int64_t until_release_ns =
        release == kNoRelease ? -1 : static_cast<std::int64_t>(release > now ? release - now : 0);
    waiter_.wait(
        region_.header().switch_bell, [this] { return has_input(); },
        PeriodicHook::shorter(periodic_.poll(static_cast<std::int64_t>(now)), until_release_ns));
  }
  region_.header().switch_ready.store(0);
}

}  // namespace ethx
