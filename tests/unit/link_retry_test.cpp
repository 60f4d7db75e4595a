// Link-level retry (packet-engine/link_retry.hpp): two ends of one hop, frames carried by hand
// so each test decides which are lost or damaged.
#include "packet-engine/link_retry.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <vector>

namespace ethx {
namespace {

const MacAddr kMacA = default_mac_for_gpu(1);
const MacAddr kMacB = default_mac_for_gpu(2);

wire::Frame payload(std::uint8_t marker, std::size_t bytes = 64) {
  wire::Frame frame(bytes, std::byte{marker});
  return frame;
}

// One direction of a hop: `from` sends, `to` receives; `lose(i)` decides the i-th frame put on
// the wire (data or control, either way) is lost.
struct Hop {
  LinkRetryConfig config;
  LinkRetry a{config, wire::Crc::kOn};
  LinkRetry b{config, wire::Crc::kOn};
  std::vector<wire::Frame> delivered_to_b;
  std::size_t wire_frames = 0;
  std::function<bool(std::size_t)> lose = [](std::size_t) { return false; };
  std::function<void(wire::Frame&)> damage = [](wire::Frame&) {};

  explicit Hop(LinkRetryConfig c = {}) : config(c), a(c, wire::Crc::kOn), b(c, wire::Crc::kOn) {}

  void carry(wire::Frame frame, LinkRetry& to, std::vector<wire::Frame>* delivered, TimeNs now) {
    if (lose(wire_frames++)) return;
    damage(frame);
    std::size_t payload_bytes = 0;
    if (to.receive(frame, now, payload_bytes) == LinkRetry::Verdict::kDeliver && delivered) {
      frame.resize(payload_bytes);
      delivered->push_back(frame);
    }
  }
  void send(wire::Frame frame, TimeNs now) {
    a.stamp(frame, now);
    carry(std::move(frame), b, &delivered_to_b, now);
  }
  // Moves every control frame and replay until both ends are quiet.
  void settle(TimeNs now) {
    for (int round = 0; round < 100 && (a.has_output() || b.has_output()); ++round) {
      wire::Frame frame;
      while (b.take_control(frame, kMacB)) carry(frame, a, nullptr, now);
      while (a.take_control(frame, kMacA)) carry(frame, b, nullptr, now);
      while (a.take_replay(frame, now)) carry(frame, b, &delivered_to_b, now);
    }
  }
};

std::vector<std::uint8_t> markers(const std::vector<wire::Frame>& frames) {
  std::vector<std::uint8_t> out;
  for (const wire::Frame& frame : frames) out.push_back(std::to_integer<std::uint8_t>(frame[0]));
  return out;
}

TEST(LinkRetry, FramesInSequenceArriveWithoutTheirTrailerAndAnAckEmptiesTheReplayBuffer) {
  LinkRetryConfig config;
  config.ack_every_frames = 4;
  Hop hop(config);
  for (std::uint8_t i = 0; i < 4; ++i) hop.send(payload(i), 100);
  ASSERT_EQ(markers(hop.delivered_to_b), (std::vector<std::uint8_t>{0, 1, 2, 3}));
  EXPECT_EQ(hop.delivered_to_b[0].size(), 64u);
  EXPECT_EQ(hop.a.unacked_bytes(), 4 * (64 + kLlrTrailerBytes));
  wire::Frame ack;
  ASSERT_TRUE(hop.b.take_control(ack, kMacB));
  EXPECT_EQ(ack.size(), kLlrControlFrameBytes);
  EXPECT_FALSE(hop.b.take_control(ack, kMacB));  // one ACK for the four
  std::size_t payload_bytes = 0;
  EXPECT_EQ(hop.a.receive(ack, 200, payload_bytes), LinkRetry::Verdict::kConsumed);
  EXPECT_EQ(hop.a.unacked_bytes(), 0u);
  EXPECT_EQ(hop.b.counters().acks_sent, 1u);
}

TEST(LinkRetry, AFewFramesAreAcknowledgedAfterTheAckDelay) {
  Hop hop;
  hop.send(payload(7), 1000);
  EXPECT_EQ(hop.b.next_deadline_ns(), 1000 + hop.config.ack_delay_ns);
  hop.b.on_time(1000 + hop.config.ack_delay_ns - 1);
  EXPECT_FALSE(hop.b.has_output());
  hop.b.on_time(1000 + hop.config.ack_delay_ns);
  hop.settle(1600);
  EXPECT_EQ(hop.a.unacked_bytes(), 0u);
}

TEST(LinkRetry, ALostFrameIsReplayedAfterOneNakAndEverythingArrivesInOrder) {
  Hop hop;
  hop.lose = [](std::size_t i) { return i == 1; };  // the second frame on the wire
  for (std::uint8_t i = 0; i < 5; ++i) hop.send(payload(i), 100);
  EXPECT_EQ(markers(hop.delivered_to_b), (std::vector<std::uint8_t>{0}));
  EXPECT_EQ(hop.b.counters().drops_out_of_sequence, 3u);
  hop.settle(200);
  EXPECT_EQ(markers(hop.delivered_to_b), (std::vector<std::uint8_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(hop.b.counters().naks_sent, 1u);  // one per gap, not one per frame after it
  EXPECT_EQ(hop.a.counters().replays_nak, 1u);
  EXPECT_EQ(hop.a.counters().frames_replayed, 4u);
  EXPECT_EQ(hop.a.counters().replays_timeout, 0u);
}

TEST(LinkRetry, ACorruptedFrameFailsTheFcsAndIsReplayed) {
  Hop hop;
  std::size_t data_frames = 0;
  hop.damage = [&](wire::Frame& frame) {
    if (frame.size() > kLlrControlFrameBytes && data_frames++ == 2) frame[10] ^= std::byte{0x10};
  };
  for (std::uint8_t i = 0; i < 4; ++i) hop.send(payload(i), 100);
  EXPECT_EQ(hop.b.counters().drops_bad_fcs, 1u);
  hop.settle(200);
  EXPECT_EQ(markers(hop.delivered_to_b), (std::vector<std::uint8_t>{0, 1, 2, 3}));
  EXPECT_EQ(hop.b.counters().naks_sent, 1u);
}

TEST(LinkRetry, ALostLastFrameIsReplayedByTheTimerWhichBacksOff) {
  LinkRetryConfig config;
  config.replay_timeout_ns = 1000;
  Hop hop(config);
  hop.lose = [](std::size_t i) { return i <= 1; };  // the frame, and its first replay
  hop.send(payload(9), 0);
  EXPECT_TRUE(hop.delivered_to_b.empty());
  EXPECT_EQ(hop.a.next_deadline_ns(), 1000u);
  hop.a.on_time(1000);
  hop.settle(1000);                                    // the replay is lost too
  EXPECT_EQ(hop.a.next_deadline_ns(), 1000u + 2000u);  // doubled
  hop.a.on_time(3000);
  hop.settle(3000);
  EXPECT_EQ(markers(hop.delivered_to_b), (std::vector<std::uint8_t>{9}));
  EXPECT_EQ(hop.a.counters().replays_timeout, 2u);
  hop.b.on_time(3000 + config.ack_delay_ns);
  hop.settle(3600);
  EXPECT_EQ(hop.a.unacked_bytes(), 0u);
  EXPECT_EQ(hop.a.next_deadline_ns(), LinkRetry::kNever);
}

TEST(LinkRetry, AFarEndThatNeverAnswersIsGivenUpAfterSixteenTimeoutsUntilItSpeaksAgain) {
  LinkRetryConfig config;
  config.replay_timeout_ns = 1000;
  Hop hop(config);
  hop.lose = [](std::size_t) { return true; };  // nothing gets through, either way
  hop.send(payload(1), 0);
  TimeNs now = 0;
  for (unsigned i = 0; i < LinkRetry::kMaxTimeoutsWithoutProgress; ++i) {
    now = hop.a.next_deadline_ns();
    ASSERT_NE(now, LinkRetry::kNever) << "timeout " << i;
    hop.a.on_time(now);
    hop.settle(now);
  }
  EXPECT_EQ(hop.a.next_deadline_ns(), LinkRetry::kNever);  // no timer left: nothing spins
  EXPECT_EQ(hop.a.counters().gave_up, 1u);
  EXPECT_EQ(hop.a.counters().replays_timeout, LinkRetry::kMaxTimeoutsWithoutProgress);
  // The far end comes back: its NAK restarts the timer's count.
  hop.lose = [](std::size_t) { return false; };
  hop.send(payload(2), now + 1);  // a gap for B: its NAK brings back frame 1 as well
  hop.settle(now + 1);
  EXPECT_EQ(markers(hop.delivered_to_b), (std::vector<std::uint8_t>{1, 2}));
  hop.b.on_time(now + 1 + config.ack_delay_ns);
  hop.settle(now + 1 + config.ack_delay_ns);
  EXPECT_EQ(hop.a.unacked_bytes(), 0u);
}

TEST(LinkRetry, ALostAckLeadsToADuplicateThatIsDroppedAndAcknowledgedAgain) {
  LinkRetryConfig config;
  config.ack_every_frames = 1;
  config.replay_timeout_ns = 1000;
  Hop hop(config);
  hop.lose = [](std::size_t i) { return i == 1; };  // the ACK
  hop.send(payload(3), 0);
  hop.settle(0);
  EXPECT_EQ(hop.a.unacked_bytes(), 64 + kLlrTrailerBytes);
  hop.a.on_time(1000);
  hop.settle(1000);
  EXPECT_EQ(markers(hop.delivered_to_b), (std::vector<std::uint8_t>{3}));  // once
  EXPECT_EQ(hop.b.counters().drops_duplicate, 1u);
  EXPECT_EQ(hop.a.unacked_bytes(), 0u);
}

TEST(LinkRetry, AFullReplayBufferRefusesNewFramesUntilAnAck) {
  LinkRetryConfig config;
  config.replay_buffer_bytes = 3 * (64 + kLlrTrailerBytes);
  config.ack_every_frames = 100;
  Hop hop(config);
  for (std::uint8_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(hop.a.can_send(64));
    hop.send(payload(i), 0);
  }
  EXPECT_FALSE(hop.a.can_send(64));
  hop.b.on_time(config.ack_delay_ns);
  hop.settle(config.ack_delay_ns);
  EXPECT_TRUE(hop.a.can_send(64));
}

TEST(LinkRetry, AfterAResetTheFarEndTakesTheNewEpochsFirstFrameAsTheStart) {
  Hop hop;
  for (std::uint8_t i = 0; i < 3; ++i) hop.send(payload(i), 0);
  hop.a.reset();  // the link went down: the three unacknowledged frames are gone
  EXPECT_EQ(hop.a.counters().frames_lost_on_reset, 3u);
  hop.send(payload(42), 100);
  EXPECT_EQ(markers(hop.delivered_to_b), (std::vector<std::uint8_t>{0, 1, 2, 42}));
  EXPECT_EQ(hop.b.counters().drops_out_of_sequence, 0u);
  // An ACK from before the reset changes nothing on the new epoch.
  hop.b.on_time(hop.config.ack_delay_ns);
  hop.settle(1000);
  EXPECT_EQ(hop.a.unacked_bytes(), 0u);
}

TEST(LinkRetry, WithoutCrcAFrameIsUncheckedUntilACorruptFaultSealsAndDamagesIt) {
  LinkRetry sender({}, wire::Crc::kOff);
  LinkRetry receiver({}, wire::Crc::kOff);
  wire::Frame frame = payload(5);
  sender.stamp(frame, 0);
  LlrTrailer trailer;
  std::memcpy(&trailer, frame.data() + frame.size() - kLlrTrailerBytes, kLlrTrailerBytes);
  EXPECT_EQ(trailer.fcs.value(), 0u);
  wire::Frame damaged = frame;
  ASSERT_TRUE(fill_llr_fcs(damaged));
  damaged[3] ^= std::byte{1};
  std::size_t payload_bytes = 0;
  EXPECT_EQ(receiver.receive(damaged, 0, payload_bytes), LinkRetry::Verdict::kDrop);
  EXPECT_EQ(receiver.counters().drops_bad_fcs, 1u);
  EXPECT_EQ(receiver.receive(frame, 0, payload_bytes), LinkRetry::Verdict::kDeliver);
  EXPECT_EQ(payload_bytes, 64u);
}

TEST(LinkRetry, AFrameWithoutATrailerIsCountedAndDropped) {
  LinkRetry receiver({}, wire::Crc::kOn);
  std::size_t payload_bytes = 0;
  EXPECT_EQ(receiver.receive(payload(1, 60), 0, payload_bytes), LinkRetry::Verdict::kDrop);
  EXPECT_EQ(receiver.receive(payload(1, 3), 0, payload_bytes), LinkRetry::Verdict::kDrop);
  EXPECT_EQ(receiver.counters().drops_malformed, 2u);
  EXPECT_FALSE(receiver.has_output());
}

TEST(LinkRetry, TheAdaptiveReplayTimerFollowsTheMeasuredRoundTripButNotReplayedFrames) {
  LinkRetryConfig config;
  config.replay_timeout_ns = 1000;
  config.ack_every_frames = 1;
  config.adaptive_replay_timeout = true;
  Hop hop(config);
  hop.send(payload(1), 0);
  wire::Frame ack;
  ASSERT_TRUE(hop.b.take_control(ack, kMacB));
  std::size_t payload_bytes = 0;
  hop.a.receive(ack, 5000, payload_bytes);  // a 5 us round trip: RTO = 5000 + 4 x 2500
  wire::Frame frame = payload(2);
  hop.a.stamp(frame, 10'000);
  EXPECT_EQ(hop.a.next_deadline_ns(), 10'000u + 15'000u);
  // The timer fires and replays: the ACK that follows says nothing about the round trip.
  hop.a.on_time(25'000);
  wire::Frame replay;
  ASSERT_TRUE(hop.a.take_replay(replay, 25'000));
  ASSERT_EQ(hop.b.receive(replay, 26'000, payload_bytes), LinkRetry::Verdict::kDeliver);
  ASSERT_TRUE(hop.b.take_control(ack, kMacB));
  hop.a.receive(ack, 900'000, payload_bytes);
  wire::Frame next = payload(3);
  hop.a.stamp(next, 1'000'000);
  EXPECT_EQ(hop.a.next_deadline_ns(), 1'000'000u + 15'000u);  // unchanged, and backoff reset
  // Without adaptation the configured timer stands whatever the round trip.
  LinkRetryConfig fixed = config;
  fixed.adaptive_replay_timeout = false;
  Hop plain(fixed);
  plain.send(payload(1), 0);
  ASSERT_TRUE(plain.b.take_control(ack, kMacB));
  plain.a.receive(ack, 5000, payload_bytes);
  wire::Frame other = payload(2);
  plain.a.stamp(other, 10'000);
  EXPECT_EQ(plain.a.next_deadline_ns(), 11'000u);
}

// Moves every control frame each way between `x` and `y` until neither owes one.
void exchange_control(LinkRetry& x, LinkRetry& y, TimeNs now) {
  wire::Frame frame;
  std::size_t payload_bytes = 0;
  for (int round = 0; round < 10; ++round) {
    bool moved = false;
    while (x.take_control(frame, kMacA)) {
      y.receive(frame, now, payload_bytes);
      moved = true;
    }
    while (y.take_control(frame, kMacB)) {
      x.receive(frame, now, payload_bytes);
      moved = true;
    }
    if (!moved) return;
  }
}

TEST(LinkRetry, ATrainingEndSendsNoDataUntilTheFarEndAnswersAndResendsItsTrainWhileItWaits) {
  LinkRetryConfig config;
  LinkRetry node(config, wire::Crc::kOn);
  node.start_training(0xC0FFEE, 1000);
  EXPECT_TRUE(node.training());
  EXPECT_FALSE(node.can_send(64));
  EXPECT_EQ(node.next_deadline_ns(), 1000u);  // the first TRAIN is due at once
  node.on_time(1000);
  wire::Frame train;
  ASSERT_TRUE(node.take_control(train, kMacA));
  LlrTrailer trailer;
  std::memcpy(&trailer, train.data() + train.size() - kLlrTrailerBytes, kLlrTrailerBytes);
  EXPECT_EQ(trailer.kind.value(), static_cast<std::uint8_t>(LlrKind::kTrain));
  EXPECT_EQ(trailer.seq.value(), 0xC0FFEEu);
  // Lost: it goes again after the replay timeout, then after twice that.
  EXPECT_EQ(node.next_deadline_ns(), 1000 + config.replay_timeout_ns);
  node.on_time(1000 + config.replay_timeout_ns);
  ASSERT_TRUE(node.take_control(train, kMacA));
  EXPECT_EQ(node.next_deadline_ns(), 1000 + 3 * config.replay_timeout_ns);
  LinkRetry port(config, wire::Crc::kOn);
  std::size_t payload_bytes = 0;
  EXPECT_EQ(port.receive(train, 50'000, payload_bytes), LinkRetry::Verdict::kConsumed);
  exchange_control(node, port, 50'000);
  EXPECT_FALSE(node.training());
  EXPECT_TRUE(node.can_send(64));
  EXPECT_EQ(node.next_deadline_ns(), LinkRetry::kNever);
  EXPECT_EQ(node.counters().trainings_started, 1u);
  EXPECT_EQ(port.counters().trainings_answered, 1u);
}

TEST(LinkRetry, ARestartedEndTrainsAndTheFarEndForgetsTheFramesItHeldForTheEarlierStart) {
  LinkRetryConfig config;
  config.ack_every_frames = 1;
  Hop hop(config);  // a: the switch port, b: the node
  for (std::uint8_t i = 0; i < 3; ++i) hop.send(payload(i), 100);
  hop.settle(100);
  // The node sent frames the port took; the port holds two the node never acknowledged.
  wire::Frame frame = payload(7);
  hop.b.stamp(frame, 100);
  std::size_t payload_bytes = 0;
  ASSERT_EQ(hop.a.receive(frame, 100, payload_bytes), LinkRetry::Verdict::kDeliver);
  wire::Frame unacked1 = payload(3), unacked2 = payload(4);
  hop.a.stamp(unacked1, 200);
  hop.a.stamp(unacked2, 200);
  // The node process restarts: a fresh end, numbering from 0 again.
  LinkRetry restarted(config, wire::Crc::kOn);
  restarted.start_training(42, 300);
  restarted.on_time(300);
  exchange_control(restarted, hop.a, 300);
  EXPECT_FALSE(restarted.training());
  EXPECT_EQ(hop.a.unacked_bytes(), 0u);
  EXPECT_EQ(hop.a.counters().frames_lost_on_reset, 2u);
  // Both number from 0: each takes the other's first frame.
  wire::Frame from_node = payload(8), from_port = payload(9);
  restarted.stamp(from_node, 400);
  hop.a.stamp(from_port, 400);
  EXPECT_EQ(hop.a.receive(from_node, 400, payload_bytes), LinkRetry::Verdict::kDeliver);
  EXPECT_EQ(restarted.receive(from_port, 400, payload_bytes), LinkRetry::Verdict::kDeliver);
  EXPECT_EQ(hop.a.counters().drops_duplicate, 0u);
}

TEST(LinkRetry, ARepeatedTrainIsAnsweredAgainWithoutASecondReset) {
  LinkRetryConfig config;
  LinkRetry node(config, wire::Crc::kOn);
  LinkRetry port(config, wire::Crc::kOn);
  node.start_training(7, 0);
  node.on_time(0);
  wire::Frame train;
  ASSERT_TRUE(node.take_control(train, kMacA));
  std::size_t payload_bytes = 0;
  port.receive(train, 10, payload_bytes);
  wire::Frame answer;
  ASSERT_TRUE(port.take_control(answer, kMacB));  // lost
  wire::Frame data = payload(1);
  port.stamp(data, 20);                    // the port sends on: it is trained
  port.receive(train, 30, payload_bytes);  // the node's resent TRAIN
  EXPECT_EQ(port.counters().trainings_answered, 1u);
  EXPECT_EQ(port.unacked_bytes(), data.size());  // not reset: the frame is still held
  ASSERT_TRUE(port.take_control(answer, kMacB));
  EXPECT_EQ(node.receive(answer, 40, payload_bytes), LinkRetry::Verdict::kConsumed);
  EXPECT_FALSE(node.training());
}

TEST(LinkRetry, TwoEndsTrainingAtOnceBothEndUpTrainedAndNumberFromZero) {
  LinkRetryConfig config;
  LinkRetry x(config, wire::Crc::kOn), y(config, wire::Crc::kOn);
  x.start_training(1, 0);
  y.start_training(2, 0);
  x.on_time(0);
  y.on_time(0);
  exchange_control(x, y, 0);
  EXPECT_FALSE(x.training());
  EXPECT_FALSE(y.training());
  wire::Frame frame = payload(5);
  x.stamp(frame, 10);
  std::size_t payload_bytes = 0;
  EXPECT_EQ(y.receive(frame, 10, payload_bytes), LinkRetry::Verdict::kDeliver);
}

TEST(LinkRetry, TheSmallestReplayBufferCoversTheHopsRoundTrip) {
  LinkRetryConfig config;
  config.ack_delay_ns = 500;
  // 800 Gb/s = 100 B/ns; 2 x 10 ns + 500 ns + 2 x 20.48 ns (2048 B frames) = 560.96 ns.
  EXPECT_EQ(min_replay_buffer_bytes(config, 800.0, 10, 2048), 56096u + 2048u);
}

}  // namespace
}  // namespace ethx
