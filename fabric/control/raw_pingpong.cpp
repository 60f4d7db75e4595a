#include "fabric/control/raw_pingpong.hpp"
#include "fabric/platform/clock.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fabric/platform/process_signals.hpp"
#include "fabric/platform/stats.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/socket_transport.hpp"
#include "packet-engine/mac_addr.hpp"

namespace ethx {
namespace {

constexpr std::size_t kFrameBytes = 64;
constexpr std::uint16_t kEchoEtherType = 0x88B6;
constexpr std::int64_t kReplyTimeoutNs = 1'000'000'000;

// Echoes every frame back with the MAC addresses swapped.
struct EchoSink final : FrameSink {
  FrameSocket* socket = nullptr;
  std::array<std::byte, 2048> buffer{};
  void on_frame(std::span<const std::byte> frame) override {
    const std::size_t bytes = std::min(frame.size(), buffer.size());
    std::memcpy(buffer.data(), frame.data(), bytes);
    std::swap_ranges(buffer.begin(), buffer.begin() + 6, buffer.begin() + 6);
    while (socket->try_send(std::span<const std::byte>(buffer.data(), bytes)) ==
           SendResult::kFull) {
      socket->flush();
    }
  }
};

// Notes whether the reply with the expected sequence number arrived.
struct ReplySink final : FrameSink {
  std::uint64_t expected = 0;
  bool matched = false;
  void on_frame(std::span<const std::byte> frame) override {
    std::uint64_t sequence = 0;
    if (frame.size() >= 22) std::memcpy(&sequence, frame.data() + 14, sizeof sequence);
    if (sequence == expected) matched = true;
  }
};

}  // namespace

RawPingPongResult measure_raw_pingpong(std::string_view transport, const std::string& tag,
                                       unsigned mtu, std::uint32_t rounds,
                                       std::uint32_t samples_per_round) {
  netns::VethTopology topology(netns::pair_topology(tag, mtu));
  auto a = open_frame_socket(transport, netns::node_namespace(tag, 0),
                             netns::node_interface(tag, 0), SocketRole::kNode);
  auto b = open_frame_socket(transport, netns::node_namespace(tag, 1),
                             netns::node_interface(tag, 1), SocketRole::kNode);

  std::atomic<bool> stop{false};
  std::thread echo([&] {
    PollWaiter waiter;
    const std::array<int, 1> fds{b->fd()};
    EchoSink sink;
    sink.socket = b.get();
    while (!stop.load()) {
      if (b->receive(64, sink) == 0) {
        waiter.wait(
            fds, [&] { return stop.load() || b->has_input(); }, 10'000'000);
        continue;
      }
      b->flush();
    }
  });
  struct JoinOnExit {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~JoinOnExit() {
      stop.store(true);
      if (thread.joinable()) thread.join();
    }
  } join_echo{stop, echo};

  std::array<std::byte, kFrameBytes> frame{};
  const MacAddr to = default_mac_for_gpu(1);
  const MacAddr from = default_mac_for_gpu(0);
  for (std::size_t i = 0; i < 6; ++i) {
    frame[i] = std::byte{to.octets[i]};
    frame[6 + i] = std::byte{from.octets[i]};
  }
  frame[12] = std::byte(kEchoEtherType >> 8);
  frame[13] = std::byte(kEchoEtherType & 0xff);

  PollWaiter waiter;
  const std::array<int, 1> fds{a->fd()};
  ReplySink reply;
  std::uint64_t sequence = 0;
  std::vector<double> p50s, p99s;
  std::vector<std::uint64_t> samples;
  RawPingPongResult result;
  // One warm-up round (first-touch of the rings, the program's maps), then the measured ones.
  for (std::uint32_t round = 0; round <= rounds; ++round) {
    samples.clear();
    for (std::uint32_t i = 0; i < samples_per_round; ++i) {
      if (g_stop_requested.load()) throw Interrupted();
      reply.expected = ++sequence;
      reply.matched = false;
      std::memcpy(frame.data() + 14, &sequence, sizeof sequence);
      const std::int64_t start = monotonic_ns();
      while (a->try_send(frame) == SendResult::kFull) a->flush();
      a->flush();
      while (!reply.matched) {
        if (a->receive(64, reply) > 0) continue;
        if (monotonic_ns() - start > kReplyTimeoutNs) {
          throw std::runtime_error("raw ping-pong over " + std::string(transport) +
                                   ": no reply within 1 s (sequence " + std::to_string(sequence) +
                                   ")");
        }
        waiter.wait(
            fds, [&] { return a->has_input(); }, 10'000'000);
      }
      samples.push_back(static_cast<std::uint64_t>(monotonic_ns() - start));
    }
    if (round == 0) continue;
    p50s.push_back(static_cast<double>(percentile(samples, 50)));
    p99s.push_back(static_cast<double>(percentile(samples, 99)));
    result.samples += samples_per_round;
  }
  result.p50_ns = rounded(median(p50s));
  result.p99_ns = rounded(median(p99s));
  return result;
}

}  // namespace ethx
