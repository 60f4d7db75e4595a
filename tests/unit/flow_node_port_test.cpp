// FlowNodePort (fabric/node/flow_node_port.hpp): a GPU's end of a hop with flow control per
// traffic class above link-level retry, over a transport played by hand. The test is the switch
// port's end: a LinkRetry, a FlowReceiver for its buffer and a FlowSender for its credits.
#include "fabric/node/flow_node_port.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fabric/platform/clock.hpp"
#include "packet-engine/wire.hpp"
#include "tests/unit/queue_port.hpp"

namespace ethx {
namespace {

const MacAddr kGpuMac = default_mac_for_gpu(0);
const MacAddr kPortMac{{0x02, 0xe7, 0x68, 0xff, 0x00, 0x00}};
constexpr double kRateGbps = 800.0;
constexpr std::size_t kFrameBytes = 200;
constexpr std::size_t kClassBufferBytes = 512;  // two frames of credit per class
constexpr auto kReq = TrafficClass::kRequests;
constexpr auto kResp = TrafficClass::kResponses;

// A load/store frame whose first transaction has `opcode` (traffic_class_of reads only that).
wire::Frame fabric_frame(wire::Opcode opcode, std::uint8_t marker = 0) {
  wire::Frame frame(kFrameBytes, std::byte{marker});
  frame[12] = std::byte{0x88};
  frame[13] = std::byte{0xB5};
  frame[wire::kBodyOffset] = static_cast<std::byte>(opcode);
  return frame;
}

FlowControlConfig flow_config(FlowControlMode mode) {
  FlowControlConfig config;
  config.mode = mode;
  config.class_buffer_bytes = kClassBufferBytes;
  config.credit_update_bytes = 256;
  return config;
}

struct FlowNodeAndSwitchPort : ::testing::Test {
  LinkRetryConfig llr_config = link_retry_without_timers();
  FlowControlConfig flow = flow_config(FlowControlMode::kCbfc);
  double rate_gbps = kRateGbps;  // the node's link: PFC's pause quanta are bit times at it
  QueuePort* wire = nullptr;
  std::unique_ptr<FlowNodePort> node;
  LinkRetry port{llr_config, wire::Crc::kOn};
  FlowSender port_sender{flow, kRateGbps};
  FlowReceiver port_receiver{flow, std::nullopt, kRateGbps};
  Collect at_switch, at_node;

  // The node opens (its TRAIN goes out) and the switch port answers it.
  void start_trained(std::optional<PfcThresholds> thresholds = std::nullopt) {
    auto transport = std::make_unique<QueuePort>();
    wire = transport.get();
    auto llr = std::make_unique<LlrNodePort>(std::move(transport), llr_config, kGpuMac, 99);
    node = std::make_unique<FlowNodePort>(std::move(llr), flow, thresholds, rate_gbps, kGpuMac);
    switch_round();
    node->receive(8, at_node);
    ASSERT_FALSE(node->link_retry_port().training());
  }
  // The switch port takes what the node put on the wire: flow-control frames go to its
  // sender, data into its buffer (and to at_switch); then it sends the ACKs it owes.
  void switch_round() {
    while (!wire->sent.empty()) {
      wire::Frame frame = std::move(wire->sent.front());
      wire->sent.pop_front();
      std::size_t payload_bytes = 0;
      if (port.receive(frame, 1, payload_bytes) != LinkRetry::Verdict::kDeliver) continue;
      frame.resize(payload_bytes);
      if (is_flow_control_frame(frame)) {
        port_sender.on_control(frame, 1);
      } else {
        port_receiver.on_arrival(traffic_class_of(frame), frame.size(), 1);
        at_switch.on_frame(frame);
      }
    }
    wire::Frame out;
    while (port.take_control(out, kPortMac)) wire->inbox.push_back(out);
  }
  // The switch forwards everything in its buffer for the node's hop and returns the credit.
  void switch_frees_its_buffer() {
    for (const wire::Frame& frame : at_switch.frames) {
      port_receiver.on_departure(traffic_class_of(frame), frame.size());
    }
    at_switch.frames.clear();
    switch_sends_control();
  }
  void switch_sends_control() {
    wire::Frame control;
    while (port_receiver.take_control(control, kPortMac, 1)) switch_sends(control);
  }
  void switch_sends(wire::Frame frame) {
    port.stamp(frame, 1);
    wire->inbox.push_back(std::move(frame));
  }
  std::size_t data_frames_on_wire() {
    switch_round();
    return at_switch.frames.size();
  }
};

TEST_F(FlowNodeAndSwitchPort, CreditsLetAClassBufferGoAndHoldTheRestUntilTheSwitchFreesIt) {
  start_trained();
  for (std::uint8_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(node->try_send(fabric_frame(wire::Opcode::kWritePosted, i)));
  }
  EXPECT_EQ(data_frames_on_wire(), 2u) << "512 B of credit: two 200 B frames";
  EXPECT_EQ(node->frames_queued(), 1u);
  EXPECT_EQ(node->credit_bytes(kReq), kClassBufferBytes - 2 * kFrameBytes);
  EXPECT_EQ(port_receiver.counters().buffer_overruns, 0u);
  switch_frees_its_buffer();  // a credit update, carried as LLR data
  node->receive(8, at_node);
  EXPECT_TRUE(at_node.frames.empty()) << "the credit update is the link layer's, not the node's";
  EXPECT_EQ(data_frames_on_wire(), 1u) << "the third frame went with the credit";
  EXPECT_EQ(node->frames_queued(), 0u);
  EXPECT_EQ(at_switch.frames.back().back(), std::byte{2}) << "the third one";
  const FlowControlCounters counters = node->counters();
  EXPECT_GE(counters.frames_held, 1u);
  EXPECT_EQ(counters.credit_updates_received, 1u);
}

TEST_F(FlowNodeAndSwitchPort, AResponseOvertakesRequestsWaitingForCredit) {
  start_trained();
  for (std::uint8_t i = 0; i < 3; ++i) node->try_send(fabric_frame(wire::Opcode::kReadReq, i));
  ASSERT_EQ(data_frames_on_wire(), 2u);
  ASSERT_TRUE(node->try_send(fabric_frame(wire::Opcode::kReadResp, 9)));
  ASSERT_EQ(data_frames_on_wire(), 3u) << "the response has credit of its own";
  EXPECT_EQ(traffic_class_of(at_switch.frames.back()), kResp);
  EXPECT_EQ(node->frames_queued(), 1u) << "the third request still waits";
}

TEST_F(FlowNodeAndSwitchPort, EveryFrameIsTakenAndWhatWaitsShowsInFramesQueued) {
  start_trained();
  // Far more than the credit: the port takes them all (a response behind them in the caller's
  // one backlog would otherwise wait for the requests' credit), and says how many it holds.
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(node->try_send(fabric_frame(wire::Opcode::kWritePosted)));
  EXPECT_TRUE(node->can_send());
  EXPECT_EQ(data_frames_on_wire(), 2u);
  EXPECT_EQ(node->frames_queued(), 8u);
  ASSERT_TRUE(node->try_send(fabric_frame(wire::Opcode::kReadResp)));
  EXPECT_EQ(data_frames_on_wire(), 3u) << "the response went at once";
  switch_frees_its_buffer();
  node->receive(8, at_node);
  EXPECT_EQ(node->frames_queued(), 6u) << "two more requests went with the credit";
}

TEST_F(FlowNodeAndSwitchPort, ACreditUpdateTheTransportHadNoRoomForGoesFirstOnceItHas) {
  start_trained();
  for (std::uint8_t i = 0; i < 2; ++i) {
    port_sender.on_sent(kResp, kFrameBytes);
    switch_sends(fabric_frame(wire::Opcode::kReadResp, i));
  }
  wire->room = 0;  // the transmit ring is full
  node->receive(8, at_node);
  ASSERT_EQ(at_node.frames.size(), 2u);
  // Owed output asks to be looked at within 50 us (the LLR timers are a second away).
  ASSERT_TRUE(node->next_timer_ns().has_value());
  EXPECT_LE(*node->next_timer_ns(), monotonic_now_ns() + 1'000'000);
  EXPECT_TRUE(wire->sent.empty());
  wire->room = 100;
  node->receive(8, at_node);  // the caller's next round
  switch_round();
  EXPECT_EQ(port_sender.credit_bytes(kResp), kClassBufferBytes) << "the update was kept, not lost";
  EXPECT_EQ(node->counters().credit_updates_sent, 1u);
}

TEST_F(FlowNodeAndSwitchPort, TheNodeReturnsCreditForEveryFrameItTakes) {
  start_trained();
  for (std::uint8_t i = 0; i < 2; ++i) {
    port_sender.on_sent(kResp, kFrameBytes);
    switch_sends(fabric_frame(wire::Opcode::kReadResp, i));
  }
  ASSERT_EQ(port_sender.credit_bytes(kResp), kClassBufferBytes - 2 * kFrameBytes);
  node->receive(8, at_node);
  EXPECT_EQ(at_node.frames.size(), 2u);
  switch_round();
  EXPECT_EQ(port_sender.credit_bytes(kResp), kClassBufferBytes) << "400 B freed: an update";
  EXPECT_EQ(node->counters().credit_updates_sent, 1u);
}

TEST_F(FlowNodeAndSwitchPort, ASwitchThatTrainsAgainStartsTheNodesCreditsOver) {
  start_trained();
  for (std::uint8_t i = 0; i < 3; ++i) node->try_send(fabric_frame(wire::Opcode::kWritePosted, i));
  ASSERT_EQ(data_frames_on_wire(), 2u);
  // The switch restarts (`ethx restart-switch`): its port trains; what it held is gone, and it
  // will never return credit for it.
  port = LinkRetry(llr_config, wire::Crc::kOn);
  port_receiver = FlowReceiver(flow, std::nullopt, kRateGbps);
  port.start_training(1234, 1);
  port.on_time(1);
  wire::Frame train;
  ASSERT_TRUE(port.take_control(train, kPortMac));
  wire->inbox.push_back(train);
  node->receive(8, at_node);
  EXPECT_EQ(node->flow_resets(), 1u);
  EXPECT_EQ(node->frames_queued(), 0u) << "the waiting frame went under the new credit";
  EXPECT_EQ(node->credit_bytes(kReq), kClassBufferBytes - kFrameBytes);
  EXPECT_EQ(data_frames_on_wire(), 3u);
}

TEST_F(FlowNodeAndSwitchPort, APauseHoldsRequestsUntilItEndsAndResponsesGoMeanwhile) {
  flow = flow_config(FlowControlMode::kPfc);
  // A slow link, so the pause outlasts the test's own steps on the wall clock (ASan, a busy
  // machine): 65535 quanta of 512 bit times at 0.2 Gb/s are 168 ms (42 us at 800 Gb/s).
  rate_gbps = 0.2;
  constexpr TimeNs kPauseNs = 65535ull * 512 * 5;  // ns: 512 bits at 0.2 Gb/s take 2560 ns
  start_trained(PfcThresholds{.xoff_bytes = 400, .xon_bytes = 0});
  // The switch's buffer for the node's requests is past xoff: an XOFF for requests.
  FlowReceiver full(flow, PfcThresholds{.xoff_bytes = 100, .xon_bytes = 0}, rate_gbps);
  full.on_arrival(kReq, kFrameBytes, 1);
  wire::Frame xoff;
  ASSERT_TRUE(full.take_control(xoff, kPortMac, 1));
  switch_sends(xoff);
  node->receive(8, at_node);
  const TimeNs paused_at = monotonic_now_ns();
  ASSERT_TRUE(node->try_send(fabric_frame(wire::Opcode::kWritePosted, 1)));
  ASSERT_TRUE(node->try_send(fabric_frame(wire::Opcode::kReadResp, 2)));
  ASSERT_EQ(data_frames_on_wire(), 1u);
  EXPECT_EQ(traffic_class_of(at_switch.frames.back()), kResp);
  const std::optional<std::uint64_t> resume = node->next_timer_ns();
  ASSERT_TRUE(resume.has_value()) << "a pause ends with time: the port says when";
  EXPECT_LE(*resume, paused_at + kPauseNs);
  EXPECT_GT(*resume, paused_at) << "not over yet";
  // The caller's loop: with nothing to do it sleeps until the port's next timer (as the node
  // runtime does) and asks again; has_input() turns true once the pause is over.
  EXPECT_FALSE(node->has_input()) << "the request is held while paused";
  while (!node->has_input()) {
    ASSERT_LT(monotonic_now_ns(), paused_at + 10 * kPauseNs);
    const std::optional<std::uint64_t> next = node->next_timer_ns();
    ASSERT_TRUE(next.has_value()) << "a paused request needs a timer to wake its caller";
    std::this_thread::sleep_until(std::chrono::steady_clock::time_point(
        std::chrono::nanoseconds(static_cast<std::int64_t>(*next))));
  }
  EXPECT_GE(monotonic_now_ns(), *resume);
  node->receive(8, at_node);
  EXPECT_EQ(data_frames_on_wire(), 2u) << "the request went when the pause ended";
  EXPECT_EQ(node->counters().pause_frames_received, 1u);
}

}  // namespace
}  // namespace ethx
