// LlrNodePort (fabric/node/llr_node_port.hpp): a node's end of an LLR hop over a transport port
// played by hand; the test is the switch port's end (a LinkRetry of its own).
#include "fabric/node/llr_node_port.hpp"

#include <gtest/gtest.h>

#include "tests/unit/queue_port.hpp"

namespace ethx {
namespace {

const MacAddr kGpuMac = default_mac_for_gpu(0);
const MacAddr kPortMac{{0x02, 0xe7, 0x68, 0xff, 0x00, 0x00}};

struct NodeAndSwitchPort : ::testing::Test {
  LinkRetryConfig config = link_retry_without_timers();
  QueuePort* wire = nullptr;
  std::unique_ptr<LlrNodePort> node;
  LinkRetry port{config, wire::Crc::kOn};
  Collect at_switch, at_node;

  void start() {
    auto inner = std::make_unique<QueuePort>();
    wire = inner.get();
    node = std::make_unique<LlrNodePort>(std::move(inner), config, kGpuMac, 99);
    port = LinkRetry(config, wire::Crc::kOn);
  }
  // start(), then the node's TRAIN and the port's answer.
  void start_trained() {
    start();
    ASSERT_EQ(wire->sent.size(), 1u);  // its TRAIN went out as it opened
    switch_round();
    node->receive(8, at_node);
    ASSERT_FALSE(node->training());
  }
  // The switch port takes everything the node put on the wire and answers what it owes.
  void switch_round(TimeNs now = 1) {
    while (!wire->sent.empty()) {
      const wire::Frame frame = std::move(wire->sent.front());
      wire->sent.pop_front();
      std::size_t payload_bytes = 0;
      if (port.receive(frame, now, payload_bytes) == LinkRetry::Verdict::kDeliver) {
        at_switch.on_frame(std::span(frame).first(payload_bytes));
      }
    }
    wire::Frame out;
    while (port.take_control(out, kPortMac)) wire->inbox.push_back(out);
    while (port.take_replay(out, now)) wire->inbox.push_back(out);
  }
  void switch_sends(std::uint8_t marker, TimeNs now = 1) {
    wire::Frame frame(64, std::byte{marker});
    port.stamp(frame, now);
    wire->inbox.push_back(frame);
  }
};

TEST_F(NodeAndSwitchPort, TheNodeTrainsFirstThenItsFramesCarryATrailerTheSwitchStrips) {
  start();
  EXPECT_EQ(node->max_frame_bytes(), 2048 - kLlrTrailerBytes);
  const wire::Frame frame(100, std::byte{0x5A});
  ASSERT_EQ(wire->sent.size(), 1u);  // its TRAIN went out as it opened, before any reading
  EXPECT_FALSE(node->try_send(frame)) << "sent data before the switch port answered";
  ASSERT_EQ(wire->sent.size(), 1u);
  switch_round();
  EXPECT_EQ(node->receive(8, at_node), 1u);  // the TRAIN_ACK: taken and consumed
  EXPECT_TRUE(at_node.frames.empty());
  EXPECT_FALSE(node->training());
  ASSERT_TRUE(node->try_send(frame));
  ASSERT_EQ(wire->sent.size(), 1u);
  EXPECT_EQ(wire->sent.front().size(), 100 + kLlrTrailerBytes);
  switch_round();
  ASSERT_EQ(at_switch.frames.size(), 1u);
  EXPECT_EQ(at_switch.frames[0], frame);
}

TEST_F(NodeAndSwitchPort, AFrameTheSwitchLostIsReplayedAfterItsNak) {
  start_trained();
  ASSERT_TRUE(node->try_send(wire::Frame(64, std::byte{0})));
  switch_round();
  for (std::uint8_t i = 1; i <= 3; ++i) ASSERT_TRUE(node->try_send(wire::Frame(64, std::byte{i})));
  wire->sent.erase(wire->sent.begin());  // frame 1 lost on the way
  switch_round();                        // 2 and 3 arrive out of sequence: one NAK
  EXPECT_EQ(port.counters().naks_sent, 1u);
  node->receive(8, at_node);  // the NAK: frames 1..3 are replayed at once
  switch_round();
  ASSERT_EQ(at_switch.frames.size(), 4u);
  for (std::uint8_t i = 0; i <= 3; ++i) EXPECT_EQ(at_switch.frames[i][0], std::byte{i});
  EXPECT_EQ(node->counters().frames_replayed, 3u);
  EXPECT_EQ(node->counters().replays_nak, 1u);
}

TEST_F(NodeAndSwitchPort, FramesFromTheSwitchArriveWithoutTrailerAndADamagedOneIsAskedForAgain) {
  start_trained();
  switch_sends(1);
  switch_sends(2);
  wire->inbox.back()[10] ^= std::byte{0x01};  // a bit flipped on the wire: the FCS fails
  EXPECT_EQ(node->receive(8, at_node), 2u);   // both taken, one handed up
  ASSERT_EQ(at_node.frames.size(), 1u);
  EXPECT_EQ(at_node.frames[0].size(), 64u);
  EXPECT_EQ(node->counters().drops_bad_fcs, 1u);
  ASSERT_FALSE(wire->sent.empty());  // the NAK went out with the receive
  switch_round();                    // the port replays frame 2
  EXPECT_EQ(node->receive(8, at_node), 1u);
  ASSERT_EQ(at_node.frames.size(), 2u);
  EXPECT_EQ(at_node.frames[1][0], std::byte{2});
}

TEST_F(NodeAndSwitchPort, ALostLastFrameIsReplayedWhenItsTimerComesDue) {
  config.replay_timeout_ns = 1;  // due at the next look
  start_trained();
  ASSERT_TRUE(node->try_send(wire::Frame(64, std::byte{7})));
  wire->sent.clear();  // lost, and nothing follows it
  ASSERT_TRUE(node->next_timer_ns().has_value());
  EXPECT_TRUE(node->has_input());  // the timer is due: a round must run
  node->receive(8, at_node);
  switch_round();
  ASSERT_EQ(at_switch.frames.size(), 1u);
  EXPECT_EQ(node->counters().replays_timeout, 1u);
}

TEST_F(NodeAndSwitchPort, AFullTransportHoldsTheLinkLayersFrameAndSendsItFirst) {
  start_trained();
  switch_sends(1);
  wire->inbox.clear();  // frame 1 lost
  switch_sends(2);      // a gap: the node owes a NAK
  wire->room = 0;
  EXPECT_EQ(node->receive(8, at_node), 1u);  // taken, dropped: the NAK is owed
  EXPECT_TRUE(wire->sent.empty());
  EXPECT_FALSE(node->can_send());
  EXPECT_FALSE(node->try_send(wire::Frame(64, std::byte{3})));
  wire->room = 10;
  ASSERT_TRUE(node->try_send(wire::Frame(64, std::byte{3})));
  ASSERT_EQ(wire->sent.size(), 2u);
  EXPECT_EQ(wire->sent.front().size(), kLlrControlFrameBytes);  // the NAK it held, first
  switch_round();
  ASSERT_EQ(at_switch.frames.size(), 1u);
  EXPECT_EQ(at_switch.frames[0][0], std::byte{3});
  EXPECT_EQ(node->receive(8, at_node), 2u);  // the port's replay of 1 and 2
  EXPECT_EQ(at_node.frames.back()[0], std::byte{2});
}

// A restarted node may find a TRAIN in its ring that the switch sent the node's earlier start
// (which answered it long ago). Answering it ends the new node's training, so the new node's
// own TRAIN must already be out: the switch then resets before the new node's first frame.
TEST_F(NodeAndSwitchPort, ALeftoverTrainInTheRingDoesNotHideTheRestartFromTheSwitch) {
  LinkRetry earlier_start(config, wire::Crc::kOn);
  earlier_start.start_training(5, 0);  // as every LlrNodePort does: epochs go as they will now
  port.start_training(77, 0);
  port.on_time(0);
  wire::Frame train;
  ASSERT_TRUE(port.take_control(train, kPortMac));
  std::size_t payload_bytes = 0;
  earlier_start.receive(train, 1, payload_bytes);
  wire::Frame answer;
  ASSERT_TRUE(earlier_start.take_control(answer, kGpuMac));
  port.receive(answer, 2, payload_bytes);
  ASSERT_FALSE(port.training());
  wire::Frame data(64, std::byte{1});
  earlier_start.stamp(data, 3);  // the earlier start's frames numbered 0..
  ASSERT_EQ(port.receive(data, 3, payload_bytes), LinkRetry::Verdict::kDeliver);
  // The new start of the GPU opens its port; the switch's TRAIN is still in the ring.
  auto inner = std::make_unique<QueuePort>();
  wire = inner.get();
  wire->inbox.push_back(train);
  node = std::make_unique<LlrNodePort>(std::move(inner), config, kGpuMac, 99);
  node->receive(8, at_node);  // answers the leftover TRAIN: its own training ends here
  ASSERT_FALSE(node->training());
  ASSERT_TRUE(node->try_send(wire::Frame(64, std::byte{2})));
  switch_round();  // its TRAIN first: the switch port resets, then takes frame 0 as new
  ASSERT_EQ(at_switch.frames.size(), 1u);
  EXPECT_EQ(at_switch.frames[0][0], std::byte{2});
  EXPECT_EQ(port.counters().drops_duplicate, 0u);
  EXPECT_EQ(port.counters().trainings_answered, 1u);
}

}  // namespace
}  // namespace ethx
