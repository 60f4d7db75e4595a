#include "fabric/node/node_runtime.hpp"

#include "fabric/platform/process_signals.hpp"

#include <chrono>
#include <cstring>
#include <random>

namespace ethx {
namespace {

constexpr std::size_t kReceiveBatch = 64;
constexpr std::uint8_t kEchoRequest = 1;
constexpr std::uint8_t kEchoReply = 2;
// Echo payload: kind (1 B), pad, sequence (8 B); padded to a minimum-size frame.
constexpr std::size_t kEchoPayloadBytes = 46;

// The engine of this start of the node: a fresh incarnation, so peers that knew an earlier
// start of this GPU reset their link state instead of taking its frames for duplicates. 32
// random bits: two starts of one GPU collide once in four billion.
EngineConfig engine_config_of_this_start(const TopologyConfig& topology, GpuId self) {
  EngineConfig config = topology.engine_config(self);
  config.incarnation = std::random_device{}();
  return config;
}

}  // namespace

NodeRuntime::NodeRuntime(const TopologyConfig& topology, GpuId self,
                         std::span<std::byte> local_memory, NodePort& port)
    : topology_(topology),
      self_(self),
      address_map_(topology.address_map()),
      endpoint_(engine_config_of_this_start(topology, self), local_memory),
      port_(port),
      roce_(topology, self, local_memory) {
  // With link-level retry both sides are 12 bytes smaller: the engine leaves room for the
  // trailer (engine_config) and the port keeps it for it (LlrNodePort).
  const std::size_t engine_frame_bytes_max = topology.engine_config(self).frame_bytes_max;
  if (engine_frame_bytes_max > port.max_frame_bytes()) {
    throw ConfigError(
        "fabric.frame_bytes_max: " + std::to_string(topology.frame_bytes_max) +
        " does not fit the " + port.transport() + " transport's frame buffer of " +
        std::to_string(port.max_frame_bytes() + topology.frame_bytes_max - engine_frame_bytes_max) +
        " bytes");
  }
}

void NodeRuntime::on_frame(std::span<const std::byte> frame) {
  MacAddr dst, src;
  std::uint16_t ether_type = 0;
  if (wire::peek_ethernet(frame, dst, src, ether_type) && ether_type == wire::kEtherTypeEcho) {
    handle_echo(frame, dst, src);
    return;
  }
  if (ether_type == roce::kEtherTypeIpv4) {
    // RoCEv2 (and any other IPv4): the RoCE engine validates and counts what is not for it.
    roce_.on_frame(frame, monotonic_now_ns());
    return;
  }
  if (ether_type != wire::kEtherTypeFabric && frame.size() >= wire::kEthernetHeaderBytes) {
    ++counters_.foreign_frames;
    return;
  }
  endpoint_.on_frame(frame, monotonic_now_ns(), effects_);
}

void NodeRuntime::handle_echo(std::span<const std::byte> frame, const MacAddr& dst,
                              const MacAddr& src) {
  if (frame.size() < wire::kEthernetHeaderBytes + 16) {
    ++counters_.foreign_frames;
    return;
  }
  const auto payload = frame.subspan(wire::kEthernetHeaderBytes);
  const auto kind = std::to_integer<std::uint8_t>(payload[0]);
  if (kind == kEchoRequest) {
    wire::Frame reply = wire::make_echo_frame(src, dst, payload);
    reply[wire::kEthernetHeaderBytes] = std::byte{kEchoReply};
    effects_.send.push_back(std::move(reply));
    ++counters_.echo_requests_answered;
  } else if (kind == kEchoReply) {
    std::uint64_t sequence = 0;
    std::memcpy(&sequence, payload.data() + 8, sizeof sequence);
    last_echo_reply_ = sequence;
    ++counters_.echo_replies;
  } else {
    ++counters_.foreign_frames;
  }
}

void NodeRuntime::drain_backlog() {
  bool sent = false;
  while (!backlog_.empty() && port_.try_send(backlog_.front())) {
    backlog_.pop_front();
    ++counters_.frames_sent;
    sent = true;
  }
  if (sent) port_.kick();
}

void NodeRuntime::transmit() {
  const TimeNs now = monotonic_now_ns();
  if (endpoint_.requester().deadline_due(now)) receive_arrived();
  endpoint_.poll(now, effects_);
  roce_.poll_if_due(now);
  Effects& roce_effects = roce_.effects();
  for (wire::Frame& frame : roce_effects.send) effects_.send.push_back(std::move(frame));
  roce_effects.send.clear();
  if (roce_effects.wake_at) effects_.wake_no_later_than(*roce_effects.wake_at);
  bool sent = false;
  for (wire::Frame& frame : effects_.send) {
    if (backlog_.empty() && port_.try_send(frame)) {
      ++counters_.frames_sent;
      sent = true;
    } else {
      ++counters_.send_retries;
      backlog_.push_back(std::move(frame));
    }
  }
  effects_.send.clear();
  if (sent) port_.kick();
  drain_backlog();
}

// Everything in the port now, within bounds: a port keeps at most a ring's worth of frames, and
// a peer that keeps sending must not hold this loop forever.
void NodeRuntime::receive_arrived() {
  constexpr std::size_t kMaxBatches = 8;
  for (std::size_t batch = 0; batch < kMaxBatches && port_.has_input(); ++batch) {
    if (port_.receive(kReceiveBatch, *this) == 0) break;
  }
}

void NodeRuntime::pump(std::int64_t idle_wait_ns, const std::function<bool()>& also_ready) {
  const std::size_t received = port_.receive(kReceiveBatch, *this);
  effects_.wake_at.reset();
  transmit();
  if (peer_health_) peer_health_->publish(endpoint_.requester());
  if (received > 0 || idle_wait_ns == 0) return;
  std::int64_t wait_ns = idle_wait_ns;
  if (effects_.wake_at) {
    const auto until_timer = static_cast<std::int64_t>(*effects_.wake_at) -
                             static_cast<std::int64_t>(monotonic_now_ns());
    wait_ns = std::max<std::int64_t>(0, std::min(wait_ns, until_timer));
  }
  if (wait_ns > 0) {
    // A backlog is work too: wake as soon as the port can take a frame again (the switch
    // rings us when it drains a nearly full ring).
    port_.wait(wait_ns, [&] { return (also_ready && also_ready()) || backlog_sendable(); });
  }
}

Completion NodeRuntime::wait_for_completion() {
  wait_for_any_completion();
  return *endpoint_.requester().take_completion();
}

void NodeRuntime::check_stop() const {
  if (stop_flag_ != nullptr && stop_flag_->load()) throw Interrupted();
}

void NodeRuntime::wait_for_any_completion() {
  transmit();
  Requester& requester = endpoint_.requester();
  // The requester's own timeouts end every wait: pump() wakes for its deadlines.
  while (!requester.has_completion()) {
    check_stop();
    pump(static_cast<std::int64_t>(topology_.request_timeout_ns),
         [&requester] { return requester.has_completion(); });
  }
}

bool NodeRuntime::wait_for_backlog_below(std::size_t frames) {
  transmit();
  std::size_t smallest = backlog_frames();
  TimeNs progress_ns = monotonic_now_ns();
  while (backlog_frames() > frames) {
    check_stop();
    // pump() transmits first, which may already be enough: then it must not wait at all.
    // Otherwise it wakes for room in the port, for received frames (ACKs that return credit)
    // and for the engine's timers.
    pump(static_cast<std::int64_t>(topology_.request_timeout_ns),
         [this, frames] { return backlog_frames() <= frames || backlog_sendable(); });
    const TimeNs now = monotonic_now_ns();
    if (backlog_frames() < smallest) {
      smallest = backlog_frames();
      progress_ns = now;
    } else if (now - progress_ns > topology_.request_timeout_ns) {
      return false;
    }
  }
  return true;
}

void NodeRuntime::send_echo(GpuId peer, std::uint64_t sequence) {
  std::array<std::byte, kEchoPayloadBytes> payload{};
  payload[0] = std::byte{kEchoRequest};
  std::memcpy(payload.data() + 8, &sequence, sizeof sequence);
  effects_.send.push_back(
      wire::make_echo_frame(topology_.gpus.at(peer).mac, topology_.gpus.at(self_).mac, payload));
  transmit();
}

bool NodeRuntime::wait_echo(std::uint64_t sequence, std::int64_t timeout_ns) {
  const TimeNs deadline = monotonic_now_ns() + static_cast<TimeNs>(timeout_ns);
  while (last_echo_reply_ != sequence) {
    check_stop();
    const TimeNs now = monotonic_now_ns();
    if (now >= deadline) return false;
    pump(static_cast<std::int64_t>(deadline - now),
         [this, sequence] { return last_echo_reply_ == sequence; });
  }
  return true;
}

}  // namespace ethx
