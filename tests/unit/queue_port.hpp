// A NodePort whose wire is two queues a test reads and fills (it plays the switch's end of the
// hop by hand), and a FrameSink that keeps what it is handed: for the link-layer ports'
// tests (LlrNodePort, FlowNodePort).
#pragma once

#include <deque>
#include <vector>

#include "fabric/transport/node_port.hpp"
#include "packet-engine/link_retry.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {

// Link-level retry whose timers stay far in the future unless a test says otherwise: the ports
// read the real clock.
inline LinkRetryConfig link_retry_without_timers() {
  LinkRetryConfig config;
  config.replay_timeout_ns = 1'000'000'000;
  config.ack_delay_ns = 1'000'000'000;
  return config;
}

// A transport port whose wire is two queues the test reads and fills.
class QueuePort final : public NodePort {
 public:
  std::deque<wire::Frame> sent;   // node -> switch
  std::deque<wire::Frame> inbox;  // switch -> node
  std::size_t room = 1000;        // frames try_send still takes
  std::size_t kicks = 0;

  const char* transport() const override { return "queue"; }
  std::size_t max_frame_bytes() const override { return 2048; }
  bool try_send(std::span<const std::byte> frame) override {
    if (room == 0) return false;
    --room;
    sent.emplace_back(frame.begin(), frame.end());
    return true;
  }
  bool can_send() const override { return room > 0; }
  void kick() override { ++kicks; }
  std::size_t receive(std::size_t max, FrameSink& sink) override {
    std::size_t n = 0;
    for (; n < max && !inbox.empty(); ++n) {
      const wire::Frame frame = std::move(inbox.front());
      inbox.pop_front();
      sink.on_frame(frame);
    }
    return n;
  }
  void wait(std::int64_t, const std::function<bool()>&) override {}
  void interrupt() override {}
  bool has_input() override { return !inbox.empty(); }
  void wait_unowned(std::int64_t, const std::function<bool()>&) override {}
  void nap(std::int64_t, const std::function<bool()>&) override {}
};

class Collect final : public FrameSink {
 public:
  std::vector<wire::Frame> frames;
  void on_frame(std::span<const std::byte> frame) override {
    frames.emplace_back(frame.begin(), frame.end());
  }
};

}  // namespace ethx
