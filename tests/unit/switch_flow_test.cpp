// The switch core's flow control per traffic class (switch/core/switch_flow.cpp): its ports
// against GPU-side FlowSenders, with the frames carried by hand.
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "packet-engine/flow_control.hpp"
#include "packet-engine/link_retry.hpp"
#include "packet-engine/wire.hpp"
#include "switch/core/switch_core.hpp"

namespace ethx {
namespace {

constexpr std::size_t kFrameBytes = 1024;

// A frame from GPU `src` to GPU `dst` whose only transaction is `opcode`, padded to about
// kFrameBytes.
wire::Frame frame_to(GpuId src, GpuId dst, wire::Opcode opcode) {
  wire::FrameBuilder builder(wire::kDefaultFrameBytesMax);
  builder.start(
      wire::FrameAddress{default_mac_for_gpu(dst), default_mac_for_gpu(src), src, dst, 0});
  wire::TxnFields fields;
  fields.opcode = opcode;
  const bool payload = opcode == wire::Opcode::kWritePosted || opcode == wire::Opcode::kReadResp;
  fields.length = payload ? 960 : 64;
  builder.append(fields, payload ? 960 : 0);
  return builder.finish();
}

// GPU g on port g; every port runs `mode`.
SwitchConfig config_for(FlowControlMode mode, std::size_t ports, std::size_t egress_bytes,
                        std::size_t class_buffer_bytes = 8 * kFrameBytes) {
  SwitchConfig c;
  c.ports.resize(ports);
  for (PortId p = 0; p < ports; ++p) {
    c.ports[p].egress_queue_bytes = egress_bytes;
    c.ports[p].propagation_ns = 10;
    c.static_routes.emplace_back(default_mac_for_gpu(static_cast<GpuId>(p)), p);
  }
  c.learning = false;
  c.flow_control.mode = mode;
  c.flow_control.class_buffer_bytes = class_buffer_bytes;
  c.flow_control.credit_update_bytes = 2 * kFrameBytes;
  return c;
}

// Sends every frame a GPU may send now (its sender's credit), returns how many went.
std::size_t send_while_allowed(SwitchCore& core, FlowSender& gpu, PortId port,
                               std::vector<wire::Frame>& backlog, TimeNs now,
                               std::vector<PortId>& touched) {
  std::size_t sent = 0;
  while (!backlog.empty() &&
         gpu.may_send(traffic_class_of(backlog.back()), backlog.back().size(), now)) {
    gpu.on_sent(traffic_class_of(backlog.back()), backlog.back().size());
    core.on_frame(port, backlog.back(), now, touched);
    backlog.pop_back();
    ++sent;
  }
  return sent;
}

// Hands a GPU the flow-control frames its switch port sends; returns the data frames.
std::vector<wire::Frame> drain_port(SwitchCore& core, PortId port, FlowSender& gpu, TimeNs now,
                                    std::size_t max_data_frames) {
  std::vector<wire::Frame> data;
  std::vector<PortId> touched;
  core.release_held(now, touched);
  while (const QueuedFrame* frame = core.front(port)) {
    if (is_flow_control_frame(frame->bytes)) {
      gpu.on_control(frame->bytes, now);
    } else {
      if (data.size() == max_data_frames) break;
      data.push_back(frame->bytes);
    }
    core.pop(port, now);
  }
  return data;
}

// Three GPUs send 24 frames each to GPU 0 through egress queues of 4 KiB: with `mode` none the
// queue tail-drops; with credits every frame arrives and no ingress buffer overruns.
struct Incast {
  SwitchCore core;
  FlowReceiver gpu0_receiver;  // GPU 0's NIC takes every frame at once and returns credit
  std::vector<FlowSender> gpus;
  std::vector<std::vector<wire::Frame>> backlogs;
  std::size_t delivered = 0;

  explicit Incast(FlowControlMode mode)
      : core(config_for(mode, 4, 4 * kFrameBytes)),
        gpu0_receiver(core.config().flow_control, std::nullopt, 800.0) {
    for (GpuId g = 0; g < 4; ++g) {
      gpus.emplace_back(core.config().flow_control, 800.0);
      backlogs.emplace_back(24, frame_to(g, 0, wire::Opcode::kWritePosted));
    }
    backlogs[0].clear();
  }
  void run() {
    std::vector<PortId> touched;
    for (TimeNs now = 0; now < 1000; ++now) {
      for (PortId p = 1; p < 4; ++p) {
        send_while_allowed(core, gpus[p], p, backlogs[p], now, touched);
        drain_port(core, p, gpus[p], now, 0);  // credit updates back to the senders
        if (core.config().flow_control.mode != FlowControlMode::kNone) {
          EXPECT_LE(core.ingress_buffer_bytes(p, TrafficClass::kRequests), 8 * kFrameBytes);
        }
      }
      for (const wire::Frame& frame : drain_port(core, 0, gpus[0], now, 1)) {  // one per tick
        ++delivered;
        gpu0_receiver.on_arrival(traffic_class_of(frame), frame.size(), now);
        gpu0_receiver.on_departure(traffic_class_of(frame), frame.size());
      }
      wire::Frame update;
      while (gpu0_receiver.take_control(update, default_mac_for_gpu(0), now)) {
        core.on_frame(0, update, now, touched);
      }
    }
  }
};

TEST(SwitchFlow, WithoutFlowControlAnIncastTailDropsAtTheEgressQueue) {
  Incast incast(FlowControlMode::kNone);
  incast.run();
  EXPECT_GT(incast.core.counters(0).drops_queue_full, 0u);
  EXPECT_LT(incast.delivered, 72u);
}

TEST(SwitchFlow, CbfcHoldsAnIncastInTheSendersAndLosesNothing) {
  Incast incast(FlowControlMode::kCbfc);
  incast.run();
  EXPECT_EQ(incast.core.counters(0).drops_queue_full, 0u);
  EXPECT_EQ(incast.delivered, 72u) << "every frame of the three senders";
  for (PortId p = 1; p < 4; ++p) {
    EXPECT_TRUE(incast.backlogs[p].empty());
    const auto counters = incast.core.flow_control_counters(p);
    ASSERT_TRUE(counters.has_value());
    EXPECT_GT(counters->credit_updates_sent, 0u) << "port " << p;
    EXPECT_EQ(counters->buffer_overruns, 0u);
    EXPECT_EQ(incast.core.ingress_buffer_bytes(p, TrafficClass::kRequests), 0u);
  }
  EXPECT_GT(incast.core.counters(0).queue_bytes_high_water, 4 * kFrameBytes)
      << "the egress queue holds more than its tail-drop limit: the ingress buffers bound it";
}

TEST(SwitchFlow, ACreditUpdateTheSwitchWritesReusesTheBufferOfOneItConsumed) {
  SwitchCore core(config_for(FlowControlMode::kCbfc, 2, 64 * kFrameBytes));
  std::vector<PortId> touched;
  // GPU 1 frees 2 KB and sends its port a credit update in a buffer of the runtime's.
  FlowReceiver gpu1(config_for(FlowControlMode::kCbfc, 2, 0).flow_control, std::nullopt, 800.0);
  gpu1.on_arrival(TrafficClass::kRequests, 2 * kFrameBytes, 0);
  gpu1.on_departure(TrafficClass::kRequests, 2 * kFrameBytes);
  wire::Frame update;
  ASSERT_TRUE(gpu1.take_control(update, default_mac_for_gpu(1), 0));
  const std::byte* buffer = update.data();
  core.on_owned_frame(1, update, 0, touched);
  EXPECT_EQ(update.capacity(), 0u) << "the switch kept the consumed frame's buffer";
  // Two frames from GPU 0 leave through port 1: port 0 then owes GPU 0 a credit update.
  for (int i = 0; i < 2; ++i) {
    core.on_frame(0, frame_to(0, 1, wire::Opcode::kWritePosted), 0, touched);
    wire::Frame out;
    core.pop_into(1, out, 0);
    ASSERT_FALSE(out.empty());
  }
  core.release_held(0, touched);  // the runtime's call when the switch asks for the clock
  ASSERT_NE(core.front(0), nullptr);
  ASSERT_TRUE(is_flow_control_frame(core.front(0)->bytes));
  wire::Frame sent;
  core.pop_into(0, sent, 0);
  EXPECT_EQ(sent.data(), buffer) << "written into the kept buffer, not a new allocation";
}

TEST(SwitchFlow, PfcPausesAPortsSenderAtXoffAndReleasesItWhenTheBufferDrains) {
  // 12 KiB per class: xoff at 12288 - 5644 B of headroom (2 x 10 ns at 800 Gb/s, two frames
  // of 1792 B, the PFC frame) = 6644 B, the 7th frame of 1018 B; xon at 3060 B.
  SwitchCore core(config_for(FlowControlMode::kPfc, 2, 4 * kFrameBytes, 12 * kFrameBytes));
  FlowSender gpu1(core.config().flow_control, 800.0);
  std::vector<PortId> touched;
  // Fill port 1's buffer for requests toward GPU 0, which drains nothing yet.
  std::vector<wire::Frame> backlog(8, frame_to(1, 0, wire::Opcode::kWritePosted));
  send_while_allowed(core, gpu1, 1, backlog, 0, touched);
  EXPECT_TRUE(backlog.empty()) << "the GPU does not know of the pause before it arrives";
  drain_port(core, 1, gpu1, 1, 0);
  EXPECT_FALSE(gpu1.may_send(TrafficClass::kRequests, kFrameBytes, 1)) << "XOFF arrived";
  EXPECT_TRUE(gpu1.may_send(TrafficClass::kResponses, kFrameBytes, 1)) << "requests only";
  // Still full after half the 41 943 ns pause: the port pauses GPU 1 again, on time alone.
  EXPECT_EQ(core.next_release_ns(), 20'971u);
  drain_port(core, 1, gpu1, 20'971, 0);
  EXPECT_EQ(gpu1.resume_at_ns(20'971), 20'971u + 41'943u) << "a second XOFF";
  FlowSender gpu0(core.config().flow_control, 800.0);
  EXPECT_EQ(drain_port(core, 0, gpu0, 21'000, 100).size(), 8u);
  drain_port(core, 1, gpu1, 21'001, 0);  // release_held reports port 1's XON
  EXPECT_TRUE(gpu1.may_send(TrafficClass::kRequests, kFrameBytes, 21'001)) << "XON arrived";
  const auto counters = core.flow_control_counters(1);
  ASSERT_TRUE(counters.has_value());
  EXPECT_EQ(counters->pause_frames_sent, 3u);
}

TEST(SwitchFlow, AResponseOvertakesRequestsThatTheFarEndPaused) {
  SwitchCore core(config_for(FlowControlMode::kPfc, 3, 64 * kFrameBytes, 12 * kFrameBytes));
  std::vector<PortId> touched;
  // GPU 0 pauses requests toward itself: a PFC XOFF for class 0 arrives on port 0.
  FlowControlConfig pfc = core.config().flow_control;
  FlowReceiver gpu0_receiver(pfc, PfcThresholds{.xoff_bytes = 1, .xon_bytes = 0}, 800.0);
  gpu0_receiver.on_arrival(TrafficClass::kRequests, 1, 0);
  wire::Frame xoff;
  ASSERT_TRUE(gpu0_receiver.take_control(xoff, default_mac_for_gpu(0), 0));
  core.on_frame(0, xoff, 0, touched);
  core.on_frame(1, frame_to(1, 0, wire::Opcode::kWritePosted), 1, touched);
  core.on_frame(2, frame_to(2, 0, wire::Opcode::kReadResp), 2, touched);
  const QueuedFrame* next = core.front(0);
  ASSERT_NE(next, nullptr) << "the response may go although requests are paused";
  EXPECT_EQ(traffic_class_of(next->bytes), TrafficClass::kResponses);
  core.pop(0, 3);
  EXPECT_EQ(core.front(0), nullptr) << "the request waits for the pause to end";
  EXPECT_EQ(core.queued_frames(0), 1u);
  // 65535 quanta at 800 Gb/s later the pause has run out.
  EXPECT_EQ(core.next_release_ns(), 41'943u);
  core.release_held(41'943, touched);
  ASSERT_NE(core.front(0), nullptr);
  EXPECT_EQ(traffic_class_of(core.front(0)->bytes), TrafficClass::kRequests);
}

TEST(SwitchFlow, APfcBufferTooSmallForTheHeadroomIsRefusedNamingTheField) {
  SwitchConfig config = config_for(FlowControlMode::kPfc, 2, 4096);
  config.flow_control.class_buffer_bytes = 4096;
  try {
    SwitchCore core(config);
    FAIL() << "accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("class_buffer_bytes"), std::string::npos)
        << error.what();
  }
}

TEST(SwitchFlow, ALinkThatGoesDownGivesItsQueuedFramesBuffersBackAndStartsWithFullCredit) {
  SwitchCore core(config_for(FlowControlMode::kCbfc, 3, 4096));
  FlowSender gpu1(core.config().flow_control, 800.0);
  std::vector<PortId> touched;
  std::vector<wire::Frame> backlog(4, frame_to(1, 0, wire::Opcode::kWritePosted));
  send_while_allowed(core, gpu1, 1, backlog, 0, touched);
  EXPECT_GT(core.ingress_buffer_bytes(1, TrafficClass::kRequests), 0u);
  core.set_port_up(0, false);  // GPU 0's link: the four frames queued to it are lost
  EXPECT_EQ(core.counters(0).drops_link_down, 4u);
  EXPECT_EQ(core.ingress_buffer_bytes(1, TrafficClass::kRequests), 0u)
      << "their buffer on port 1 is free again";
  drain_port(core, 1, gpu1, 1, 0);
  EXPECT_EQ(gpu1.credit_bytes(TrafficClass::kRequests), 8 * kFrameBytes)
      << "GPU 1's sender got its credit back";
}

TEST(SwitchFlow, APortWithoutFlowControlHoldsNoCreditAndItsFramesMeetTheQueueLimit) {
  // Port 2's far end runs no flow control (a guest NIC in the emulator).
  SwitchConfig config = config_for(FlowControlMode::kCbfc, 3, 4 * kFrameBytes);
  config.ports[2].flow_control = false;
  SwitchCore core(config);
  EXPECT_FALSE(core.flow_control_counters(2).has_value());
  FlowSender gpu1(core.config().flow_control, 800.0);
  std::vector<PortId> touched;
  // GPU 1 -> port 2: its buffer goes back as the frames are queued there, not when they leave.
  std::vector<wire::Frame> to_nic(3, frame_to(1, 2, wire::Opcode::kWritePosted));
  EXPECT_EQ(send_while_allowed(core, gpu1, 1, to_nic, 0, touched), 3u);
  EXPECT_EQ(core.ingress_buffer_bytes(1, TrafficClass::kRequests), 0u);
  drain_port(core, 1, gpu1, 1, 0);
  EXPECT_EQ(gpu1.credit_bytes(TrafficClass::kRequests), 8 * kFrameBytes) << "credit came back";
  // Port 2 -> GPU 0, which returns no credit yet: nothing holds port 2's sender back, so its
  // frames meet GPU 0's queue limit (4 KiB) instead of queueing without end.
  for (TimeNs now = 2; now < 12; ++now) {
    core.on_frame(2, frame_to(2, 0, wire::Opcode::kWritePosted), now, touched);
  }
  EXPECT_GT(core.counters(0).drops_queue_full, 0u);
  EXPECT_LE(core.queued_bytes(0), 4 * kFrameBytes);
}

TEST(SwitchFlow, AGpuThatTrainsAgainStartsItsHopOverWithFullCreditAndQueuedFramesStay) {
  // Link-level retry on both hops, as the emulator runs flow control (require_emulated).
  SwitchConfig config = config_for(FlowControlMode::kCbfc, 2, 64 * kFrameBytes);
  for (SwitchPortConfig& port : config.ports) port.link_retry = true;
  config.link_retry.replay_buffer_bytes = 64 * kFrameBytes;
  SwitchCore core(config);
  LinkRetry gpu0(config.link_retry, config.crc);
  std::vector<PortId> touched;
  // Nine responses from GPU 0 to GPU 1: eight fill GPU 1's credit, the ninth waits for it.
  for (TimeNs now = 0; now < 9; ++now) {
    wire::Frame frame = frame_to(0, 1, wire::Opcode::kReadResp);
    gpu0.stamp(frame, now);
    core.on_frame(0, frame, now, touched);
  }
  std::size_t sent = 0;
  core.release_held(10, touched);
  for (; core.front(1) != nullptr; ++sent) core.pop(1, 10);
  EXPECT_EQ(sent, 8u);
  ASSERT_EQ(core.queued_frames(1), 1u);
  EXPECT_LT(core.credit_bytes(1, TrafficClass::kResponses), kFrameBytes);
  // GPU 1's process restarts and trains its hop: it never saw those eight frames, so it will
  // never return their credit; the port starts over from full credit, as GPU 1 does.
  LinkRetry restarted(config.link_retry, config.crc);
  restarted.start_training(777, 11);
  restarted.on_time(11);
  wire::Frame train;
  ASSERT_TRUE(restarted.take_control(train, default_mac_for_gpu(1)));
  core.on_frame(1, train, 11, touched);
  std::size_t data_frames = 0;
  core.release_held(12, touched);
  for (; const QueuedFrame* frame = core.front(1); core.pop(1, 12)) {
    std::size_t payload_bytes = 0;
    wire::Frame copy = frame->bytes;
    if (restarted.receive(copy, 12, payload_bytes) == LinkRetry::Verdict::kDeliver) ++data_frames;
  }
  EXPECT_EQ(data_frames, 1u) << "the response that waited for credit went out";
  EXPECT_EQ(core.queued_frames(1), 0u);
  EXPECT_EQ(core.credit_bytes(1, TrafficClass::kResponses),
            8 * kFrameBytes - frame_to(0, 1, wire::Opcode::kReadResp).size());
}

}  // namespace
}  // namespace ethx
