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

// The frame n0 sends: to GPU 1's MAC from GPU 0's, EtherType kEchoEtherType; the sequence
// number goes at byte 14.
std::array<std::byte, kFrameBytes> echo_request_frame() {
  std::array<std::byte, kFrameBytes> frame{};
  const MacAddr to = default_mac_for_gpu(1);
  const MacAddr from = default_mac_for_gpu(0);
  for (std::size_t i = 0; i < 6; ++i) {
    frame[i] = std::byte{to.octets[i]};
    frame[6 + i] = std::byte{from.octets[i]};
  }
  frame[12] = std::byte(kEchoEtherType >> 8);
  frame[13] = std::byte(kEchoEtherType & 0xff);
  return frame;
}

// n1's side: a thread echoing every frame on `socket` until destroyed.
class EchoResponder {
 public:
  explicit EchoResponder(FrameSocket& socket) : thread_([this, &socket] { serve(socket); }) {}
  ~EchoResponder() {
    stop_.store(true);
    thread_.join();
  }
  EchoResponder(const EchoResponder&) = delete;
  EchoResponder& operator=(const EchoResponder&) = delete;

 private:
  void serve(FrameSocket& socket) {
    PollWaiter waiter;
    const std::array<int, 1> fds{socket.fd()};
    EchoSink sink;
    sink.socket = &socket;
    while (!stop_.load()) {
      if (socket.receive(64, sink) == 0) {
        waiter.wait(
            fds, [&] { return stop_.load() || socket.has_input(); }, 10'000'000);
        continue;
      }
      socket.flush();
    }
  }

  std::atomic<bool> stop_{false};  // before thread_: the thread reads it from the start
  std::thread thread_;
};

// n0's side: sends numbered frames and waits for each one's echo.
class PingSender {
 public:
  PingSender(FrameSocket& socket, std::string_view transport)
      : socket_(socket), transport_(transport), fds_{socket.fd()} {}

  // One round: `samples` round trips in a row, in ns. Throws Interrupted on a stop request.
  std::vector<std::uint64_t> round(std::uint32_t samples) {
    std::vector<std::uint64_t> round_trips_ns;
    round_trips_ns.reserve(samples);
    for (std::uint32_t i = 0; i < samples; ++i) {
      if (g_stop_requested.load()) throw Interrupted();
      round_trips_ns.push_back(round_trip_ns());
    }
    return round_trips_ns;
  }

 private:
  std::uint64_t round_trip_ns() {
    reply_.expected = ++sequence_;
    reply_.matched = false;
    std::memcpy(frame_.data() + 14, &sequence_, sizeof sequence_);
    const std::int64_t start = monotonic_ns();
    while (socket_.try_send(frame_) == SendResult::kFull) socket_.flush();
    socket_.flush();
    while (!reply_.matched) {
      if (socket_.receive(64, reply_) > 0) continue;
      if (monotonic_ns() - start > kReplyTimeoutNs) {
        throw std::runtime_error("raw ping-pong over " + std::string(transport_) +
                                 ": no reply within 1 s (sequence " + std::to_string(sequence_) +
                                 ")");
      }
      waiter_.wait(
          fds_, [&] { return socket_.has_input(); }, 10'000'000);
    }
    return static_cast<std::uint64_t>(monotonic_ns() - start);
  }

  FrameSocket& socket_;
  std::string_view transport_;
  std::array<std::byte, kFrameBytes> frame_ = echo_request_frame();
  std::array<int, 1> fds_;
  PollWaiter waiter_;
  ReplySink reply_;
  std::uint64_t sequence_ = 0;
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
  const EchoResponder echo(*b);
  PingSender sender(*a, transport);
  std::vector<double> p50s, p99s;
  RawPingPongResult result;
  // One warm-up round (first-touch of the rings, the program's maps), then the measured ones.
  for (std::uint32_t round = 0; round <= rounds; ++round) {
    std::vector<std::uint64_t> samples = sender.round(samples_per_round);
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
