// Flow control per traffic class (packet-engine/flow_control.hpp): one sender and one receiver
// of a hop, control frames carried by hand so each test decides which are lost.
#include "packet-engine/flow_control.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "packet-engine/ethernet.hpp"

namespace ethx {
namespace {

const MacAddr kMac = default_mac_for_gpu(3);
constexpr double kRateGbps = 800.0;
constexpr auto kReq = TrafficClass::kRequests;
constexpr auto kResp = TrafficClass::kResponses;

// A load/store frame whose first transaction has `opcode`, `bytes` long.
wire::Frame fabric_frame(wire::Opcode opcode, std::size_t bytes = 128) {
  wire::Frame frame(bytes, std::byte{0});
  frame[12] = std::byte{0x88};
  frame[13] = std::byte{0xB5};
  frame[wire::kBodyOffset] = static_cast<std::byte>(opcode);
  return frame;
}

FlowControlConfig cbfc(std::size_t buffer_bytes, std::size_t update_bytes) {
  FlowControlConfig config;
  config.mode = FlowControlMode::kCbfc;
  config.class_buffer_bytes = buffer_bytes;
  config.credit_update_bytes = update_bytes;
  return config;
}

FlowControlConfig pfc(std::size_t buffer_bytes) {
  FlowControlConfig config;
  config.mode = FlowControlMode::kPfc;
  config.class_buffer_bytes = buffer_bytes;
  return config;
}

TEST(FlowControl, RequestsAndResponsesAreTwoClassesAndOtherFramesAreRequests) {
  EXPECT_EQ(traffic_class_of(fabric_frame(wire::Opcode::kReadReq)), kReq);
  EXPECT_EQ(traffic_class_of(fabric_frame(wire::Opcode::kWritePosted)), kReq);
  EXPECT_EQ(traffic_class_of(fabric_frame(wire::Opcode::kAtomicCas)), kReq);
  EXPECT_EQ(traffic_class_of(fabric_frame(wire::Opcode::kReadResp)), kResp);
  EXPECT_EQ(traffic_class_of(fabric_frame(wire::Opcode::kWriteAck)), kResp);
  EXPECT_EQ(traffic_class_of(fabric_frame(wire::Opcode::kErrorResp)), kResp);
  wire::Frame ipv4 = fabric_frame(wire::Opcode::kReadResp);
  ipv4[12] = std::byte{0x08};
  ipv4[13] = std::byte{0x00};
  EXPECT_EQ(traffic_class_of(ipv4), kReq);
  EXPECT_EQ(traffic_class_of(wire::Frame(10)), kReq);  // too short to have an opcode
}

TEST(FlowControl, ModesParseByNameAndNothingElse) {
  EXPECT_EQ(parse_flow_control_mode("none"), FlowControlMode::kNone);
  EXPECT_EQ(parse_flow_control_mode("cbfc"), FlowControlMode::kCbfc);
  EXPECT_EQ(parse_flow_control_mode("pfc"), FlowControlMode::kPfc);
  EXPECT_EQ(parse_flow_control_mode("CBFC"), std::nullopt);
  EXPECT_EQ(parse_flow_control_mode(""), std::nullopt);
}

TEST(FlowControl, CbfcSenderStopsWhenTheReceiversBufferIsSpokenForAndResumesOnCredit) {
  const FlowControlConfig config = cbfc(4096, 2048);
  FlowSender sender(config, kRateGbps);
  FlowReceiver receiver(config, std::nullopt, kRateGbps);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(sender.may_send(kReq, 1024, 0));
    sender.on_sent(kReq, 1024);
    receiver.on_arrival(kReq, 1024, 0);
  }
  EXPECT_FALSE(sender.may_send(kReq, 64, 0)) << "4096 B outstanding: no credit left";
  EXPECT_TRUE(sender.may_send(kResp, 4096, 0)) << "responses have credits of their own";
  receiver.on_departure(kReq, 1024);
  EXPECT_FALSE(receiver.control_due()) << "1024 B freed, the update waits for 2048";
  receiver.on_departure(kReq, 1024);
  ASSERT_TRUE(receiver.control_due());
  wire::Frame update;
  ASSERT_TRUE(receiver.take_control(update, kMac, 0));
  EXPECT_EQ(update.size(), 60u);
  EXPECT_GE(update.capacity(), 60u + kControlFrameTailroomBytes)
      << "written with room for a link-layer trailer, so appending it allocates nothing";
  EXPECT_TRUE(is_flow_control_frame(update));
  EXPECT_FALSE(receiver.control_due());
  sender.on_control(update, 0);
  EXPECT_EQ(sender.credit_bytes(kReq), 2048u);
  EXPECT_TRUE(sender.may_send(kReq, 2048, 0));
  EXPECT_EQ(sender.counters().credit_updates_received, 1u);
  EXPECT_EQ(receiver.counters().credit_updates_sent, 1u);
}

TEST(FlowControl, CbfcReturnsEveryCreditOnceTheBufferIsEmpty) {
  // A sender that ran out with fewer than credit_update_bytes freed must not wait forever.
  const FlowControlConfig config = cbfc(4096, 4096);
  FlowReceiver receiver(config, std::nullopt, kRateGbps);
  receiver.on_arrival(kReq, 1500, 0);
  receiver.on_arrival(kReq, 1500, 0);
  receiver.on_departure(kReq, 1500);
  EXPECT_FALSE(receiver.control_due());
  receiver.on_departure(kReq, 1500);
  EXPECT_TRUE(receiver.control_due()) << "buffer empty: 3000 B go back although < 4096";
}

TEST(FlowControl, ALostCreditUpdateIsRepairedByTheNextAndStaleOrForgedOnesChangeNothing) {
  const FlowControlConfig config = cbfc(8192, 1024);
  FlowSender sender(config, kRateGbps);
  FlowReceiver receiver(config, std::nullopt, kRateGbps);
  sender.on_sent(kReq, 8192);
  receiver.on_arrival(kReq, 8192, 0);
  wire::Frame first;
  wire::Frame second;
  receiver.on_departure(kReq, 1024);
  ASSERT_TRUE(receiver.take_control(first, kMac, 0));  // lost on the wire
  receiver.on_departure(kReq, 1024);
  ASSERT_TRUE(receiver.take_control(second, kMac, 0));
  sender.on_control(second, 0);
  EXPECT_EQ(sender.credit_bytes(kReq), 2048u) << "running totals: the lost 1024 B came back too";
  sender.on_control(first, 0);  // arrives late
  EXPECT_EQ(sender.credit_bytes(kReq), 2048u);
  // A forged update claiming more freed than was ever sent.
  CreditUpdateFrame forged{};
  std::memcpy(&forged, second.data(), sizeof forged);
  forged.freed_bytes[0] = 100'000;
  wire::Frame forged_bytes(sizeof forged);
  std::memcpy(forged_bytes.data(), &forged, sizeof forged);
  sender.on_control(forged_bytes, 0);
  EXPECT_EQ(sender.credit_bytes(kReq), 2048u);
  sender.on_control(wire::Frame(second.begin(), second.begin() + 20), 0);  // truncated
  EXPECT_EQ(sender.counters().malformed, 1u);
}

TEST(FlowControl, PfcThresholdsLeaveTheRoundTripAsHeadroomAndRefuseATooSmallBuffer) {
  constexpr TimeNs kPropagationNs = 100;
  constexpr std::size_t kFrameMax = 1792;
  const std::size_t headroom = pfc_headroom_bytes(kRateGbps, kPropagationNs, kFrameMax);
  // 2 x 100 ns at 800 Gb/s = 20 000 B, two largest frames, the PFC frame.
  EXPECT_EQ(headroom, 20'000u + 2 * kFrameMax + 60);
  const auto thresholds = pfc_thresholds(65536, kRateGbps, kPropagationNs, kFrameMax);
  ASSERT_TRUE(thresholds.has_value());
  EXPECT_EQ(thresholds->xoff_bytes, 65536 - headroom);
  EXPECT_EQ(thresholds->xon_bytes, thresholds->xoff_bytes - 2 * kFrameMax);
  const std::size_t minimum = min_pfc_buffer_bytes(kRateGbps, kPropagationNs, kFrameMax);
  EXPECT_TRUE(pfc_thresholds(minimum, kRateGbps, kPropagationNs, kFrameMax).has_value());
  EXPECT_FALSE(pfc_thresholds(minimum - 1, kRateGbps, kPropagationNs, kFrameMax).has_value());
}

TEST(FlowControl, PfcPausesAClassAtXoffAndReleasesItAtXon) {
  const FlowControlConfig config = pfc(65536);
  const PfcThresholds thresholds{.xoff_bytes = 8192, .xon_bytes = 4096};
  FlowSender sender(config, kRateGbps);
  FlowReceiver receiver(config, thresholds, kRateGbps);
  receiver.on_arrival(kReq, 4096, 0);
  EXPECT_FALSE(receiver.control_due());
  receiver.on_arrival(kReq, 4096, 10);
  ASSERT_TRUE(receiver.control_due()) << "8192 B: XOFF";
  wire::Frame xoff;
  ASSERT_TRUE(receiver.take_control(xoff, kMac, 10));
  EXPECT_GE(xoff.capacity(), sizeof(PfcFrame) + kControlFrameTailroomBytes);
  PfcFrame frame;
  std::memcpy(&frame, xoff.data(), sizeof frame);
  EXPECT_EQ(frame.ether_type.value(), 0x8808);
  EXPECT_EQ(frame.opcode.value(), 0x0101);
  EXPECT_EQ(frame.class_enable.value(), 1u) << "only the requests class";
  EXPECT_EQ(frame.pause_quanta[0].value(), kPfcMaxQuanta);
  sender.on_control(xoff, 10);
  EXPECT_FALSE(sender.may_send(kReq, 64, 20));
  EXPECT_TRUE(sender.may_send(kResp, 64, 20)) << "responses are not paused";
  // 65535 quanta x 512 bit times at 800 Gb/s: 41 942.4 ns, rounded up.
  EXPECT_EQ(sender.resume_at_ns(20), 10 + 41'943u);
  receiver.on_departure(kReq, 2048);
  EXPECT_FALSE(receiver.control_due()) << "6144 B is above xon";
  receiver.on_departure(kReq, 2048);
  ASSERT_TRUE(receiver.control_due()) << "4096 B: XON";
  wire::Frame xon;
  ASSERT_TRUE(receiver.take_control(xon, kMac, 30));
  sender.on_control(xon, 30);
  EXPECT_TRUE(sender.may_send(kReq, 64, 30));
  EXPECT_EQ(sender.resume_at_ns(30), FlowSender::kNever);
  EXPECT_EQ(receiver.counters().pause_frames_sent, 2u);
}

TEST(FlowControl, PfcAsksAgainWhileStillFullAfterHalfThePause) {
  // The paused far end sends nothing, so time alone must renew the XOFF.
  const FlowControlConfig config = pfc(65536);
  FlowReceiver receiver(config, PfcThresholds{.xoff_bytes = 8192, .xon_bytes = 4096}, kRateGbps);
  wire::Frame out;
  EXPECT_EQ(receiver.next_deadline_ns(), FlowReceiver::kNever);
  receiver.on_arrival(kReq, 8192, 0);
  ASSERT_TRUE(receiver.take_control(out, kMac, 0));
  EXPECT_EQ(receiver.next_deadline_ns(), 20'971u) << "half of 41 943 ns";
  receiver.on_time(10'000);
  EXPECT_FALSE(receiver.control_due()) << "the XOFF still holds";
  receiver.on_time(20'971);
  ASSERT_TRUE(receiver.control_due()) << "half the pause gone, still full: XOFF again";
  ASSERT_TRUE(receiver.take_control(out, kMac, 20'971));
  PfcFrame frame;
  std::memcpy(&frame, out.data(), sizeof frame);
  EXPECT_EQ(frame.pause_quanta[0].value(), kPfcMaxQuanta);
  receiver.on_departure(kReq, 8192);
  ASSERT_TRUE(receiver.take_control(out, kMac, 21'000));  // XON
  EXPECT_EQ(receiver.next_deadline_ns(), FlowReceiver::kNever);
}

TEST(FlowControl, DeficitRoundRobinSharesBytesByWeightAndSkipsAPausedClass) {
  FlowControlConfig config;
  config.weight_bytes = {2048, 1024};
  FlowSender sender(config, kRateGbps);
  std::array<std::size_t, kTrafficClasses> sent{};
  for (int i = 0; i < 300; ++i) {
    const auto c = sender.pick({true, true}, {512, 512}, 0);
    ASSERT_TRUE(c.has_value());
    sender.on_sent(*c, 512);
    sent[static_cast<std::size_t>(*c)] += 512;
  }
  EXPECT_NEAR(static_cast<double>(sent[0]) / static_cast<double>(sent[1]), 2.0, 0.1);
  EXPECT_EQ(sender.pick({false, false}, {0, 0}, 0), std::nullopt);
  EXPECT_EQ(sender.pick({false, true}, {0, 1500}, 0), kResp) << "only one class waits";

  FlowControlConfig credits = cbfc(1024, 512);
  FlowSender limited(credits, kRateGbps);
  limited.on_sent(kReq, 1024);
  EXPECT_EQ(limited.pick({true, true}, {512, 512}, 0), kResp) << "requests have no credit";
  EXPECT_EQ(limited.pick({true, false}, {512, 0}, 0), std::nullopt);
}

TEST(FlowControl, AFrameTheLayerBelowRefusesCostsItsClassNoTurn) {
  FlowControlConfig config;
  config.weight_bytes = {1024, 1024};
  FlowSender sender(config, kRateGbps);
  std::array<std::size_t, kTrafficClasses> sent{};
  for (int i = 0; i < 400; ++i) {
    const auto c = sender.pick({true, true}, {512, 512}, 0);
    ASSERT_TRUE(c.has_value());
    if (*c == kReq && i % 2 == 0) {
      // The link layer below refused it (a full replay buffer): offered again, it goes first.
      EXPECT_EQ(sender.pick({true, true}, {512, 512}, 0), kReq) << "offer " << i;
    }
    sender.on_sent(*c, 512);
    sent[static_cast<std::size_t>(*c)] += 512;
  }
  EXPECT_EQ(sent[0], sent[1]) << "equal weights, equal bytes, refusals or not";
}

}  // namespace
}  // namespace ethx
