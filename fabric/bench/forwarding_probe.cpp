#include "fabric/bench/forwarding_probe.hpp"
#include "fabric/platform/clock.hpp"

#include <array>
#include <chrono>
#include <stdexcept>

#include "fabric/platform/process_signals.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/socket_transport.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {
namespace {

constexpr std::size_t kBatch = 64;
// Long enough for a forwarder descheduled on a busy 2-core host (1 s was hit once with two
// TCG VMs running next to the test suite); a forwarder that loses the whole window still fails.
constexpr std::int64_t kStallTimeoutNs = 5'000'000'000;
constexpr std::int64_t kDrainNs = 200'000'000;
// Far below the receive ring (4096) and the switch's egress queue (1 MiB at 1500 B).
constexpr std::uint32_t kReceiveFrames = 4096;

struct CountingSink final : FrameSink {
  std::uint64_t frames = 0;
  void on_frame(std::span<const std::byte>) override { ++frames; }
};

}  // namespace

std::vector<std::byte> probe_frame(const TopologyConfig& topology, std::size_t frame_bytes) {
  const std::size_t overhead = wire::kFrameOverheadBytes + wire::kTxnHeaderBytes;
  if (frame_bytes < overhead + 1 || frame_bytes > topology.frame_bytes_max) {
    throw std::invalid_argument("probe frame of " + std::to_string(frame_bytes) +
                                " B: must be between " + std::to_string(overhead + 1) + " and " +
                                std::to_string(topology.frame_bytes_max) + " B");
  }
  wire::FrameBuilder builder(topology.frame_bytes_max);
  builder.start(wire::FrameAddress{topology.gpus.at(1).mac, topology.gpus.at(0).mac, 0, 1,
                                   topology.gpus.at(0).partition});
  const std::size_t payload = frame_bytes - overhead;
  wire::TxnFields fields;
  fields.opcode = wire::Opcode::kWritePosted;
  fields.length = static_cast<std::uint16_t>(payload);
  fields.address = 0;
  std::span<std::byte> data = builder.append(fields, payload);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i & 0xff);
  std::vector<std::byte> frame = builder.finish();
  if (frame.size() != frame_bytes) {
    throw std::logic_error("probe frame came out " + std::to_string(frame.size()) + " B, not " +
                           std::to_string(frame_bytes));
  }
  return frame;
}

ForwardingProbe::ForwardingProbe(std::string_view transport, const std::string& tag,
                                 const TopologyConfig& topology)
    : topology_(topology),
      sender_(open_frame_socket(transport, netns::node_namespace(tag, 0),
                                netns::node_interface(tag, 0), SocketRole::kNode, kReceiveFrames)),
      receiver_(open_frame_socket(transport, netns::node_namespace(tag, 1),
                                  netns::node_interface(tag, 1), SocketRole::kNode,
                                  kReceiveFrames)) {}

ForwardingProbe::~ForwardingProbe() = default;

ForwardingRateResult ForwardingProbe::measure(std::size_t frame_bytes, std::int64_t duration_ns,
                                              std::uint32_t window) {
  const std::vector<std::byte> frame = probe_frame(topology_, frame_bytes);
  CountingSink sink;
  PollWaiter waiter;
  const std::array<int, 1> fds{receiver_->fd()};
  ForwardingRateResult result;
  const std::int64_t start = monotonic_ns();
  std::int64_t last_progress = start;
  std::int64_t now = start;
  while (now - start < duration_ns) {
    if (g_stop_requested.load()) throw Interrupted();
    std::size_t queued = 0;
    while (queued < kBatch && result.sent - sink.frames < window &&
           sender_->try_send(frame) == SendResult::kQueued) {
      ++result.sent;
      ++queued;
    }
    if (queued > 0) sender_->flush();
    const std::size_t got = receiver_->receive(kBatch, sink);
    now = monotonic_ns();
    if (got > 0) {
      last_progress = now;
    } else if (result.sent - sink.frames >= window) {
      if (now - last_progress > kStallTimeoutNs) {
        throw std::runtime_error("forwarding probe: no frame arrived for 5 s (" +
                                 std::to_string(result.sent - sink.frames) + " in flight)");
      }
      // The window is full and nothing has arrived: wait for the forwarder, adaptively.
      waiter.wait(
          fds, [this] { return receiver_->has_input(); }, 1'000'000);
    }
  }
  const std::int64_t elapsed = now - start;
  const std::uint64_t received_in_time = sink.frames;
  // Drain what is still in flight so the next run starts empty, and count what never came.
  const std::int64_t drain_end = monotonic_ns() + kDrainNs;
  while (sink.frames < result.sent && monotonic_ns() < drain_end) {
    if (receiver_->receive(kBatch, sink) == 0) {
      waiter.wait(
          fds, [this] { return receiver_->has_input(); }, 1'000'000);
    }
  }
  result.received = sink.frames;
  result.lost = result.sent - sink.frames;
  result.mpps = static_cast<double>(received_in_time) * 1e3 / static_cast<double>(elapsed);
  return result;
}

}  // namespace ethx
