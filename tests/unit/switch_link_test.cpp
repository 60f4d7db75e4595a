// The switch core's link layer (switch/core/switch_link.cpp): link-level retry on a port's hop
// against a GPU-side LinkRetry, and faults on what a port sends.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "packet-engine/link_retry.hpp"
#include "packet-engine/wire.hpp"
#include "switch/core/switch_core.hpp"

namespace ethx {
namespace {

const MacAddr kMacA = default_mac_for_gpu(1);
const MacAddr kMacB = default_mac_for_gpu(2);

wire::Frame fabric_frame(std::uint8_t marker) {
  wire::FrameBuilder builder(wire::kDefaultFrameBytesMax);
  builder.start(wire::FrameAddress{kMacB, kMacA, 1, 2, 0});
  wire::TxnFields fields;
  fields.opcode = wire::Opcode::kWritePosted;
  fields.length = 64;
  auto payload = builder.append(fields, 64);
  for (std::byte& value : payload) value = std::byte{marker};
  return builder.finish();
}

// Two GPUs on ports 0 and 1, both hops with link-level retry; GPU A's NIC is `a`, B's is `b`.
struct LlrFabric {
  static SwitchConfig llr_config(std::vector<std::pair<PortId, PortFaults>> tx_faults) {
    SwitchConfig c;
    c.ports.resize(2);
    for (SwitchPortConfig& port : c.ports) port.link_retry = true;
    c.static_routes = {{kMacA, 0}, {kMacB, 1}};
    c.learning = false;
    c.link_retry.ack_every_frames = 4;
    c.tx_faults = std::move(tx_faults);
    return c;
  }
  SwitchConfig config;
  SwitchCore core;
  LinkRetry a;
  LinkRetry b;
  std::vector<wire::Frame> delivered_to_b;
  std::vector<PortId> touched;

  explicit LlrFabric(std::vector<std::pair<PortId, PortFaults>> tx_faults = {})
      : config(llr_config(std::move(tx_faults))),
        core(config),
        a(config.link_retry, wire::Crc::kOn),
        b(config.link_retry, wire::Crc::kOn) {}
  void send_from_a(wire::Frame frame, TimeNs now) {
    a.stamp(frame, now);
    core.on_frame(0, frame, now, touched);
  }
  // Drains both ports to their GPUs, and the GPUs' control frames back, until all is quiet.
  void settle(TimeNs now) {
    for (int round = 0; round < 50; ++round) {
      bool moved = false;
      while (const QueuedFrame* frame = core.front(1)) {
        std::size_t payload_bytes = 0;
        wire::Frame bytes = frame->bytes;
        core.pop(1, now);
        moved = true;
        if (b.receive(bytes, now, payload_bytes) == LinkRetry::Verdict::kDeliver) {
          bytes.resize(payload_bytes);
          delivered_to_b.push_back(bytes);
        }
      }
      while (const QueuedFrame* frame = core.front(0)) {
        std::size_t payload_bytes = 0;
        a.receive(frame->bytes, now, payload_bytes);
        core.pop(0, now);
        moved = true;
      }
      wire::Frame control;
      while (b.take_control(control, kMacB)) {
        core.on_frame(1, control, now, touched);
        moved = true;
      }
      if (!moved) return;
    }
  }
};

TEST(SwitchLinkRetry, FramesCrossTwoLlrHopsIntactAndEachHopIsAcknowledged) {
  LlrFabric fabric;
  for (std::uint8_t i = 0; i < 4; ++i) fabric.send_from_a(fabric_frame(i), 100);
  fabric.settle(100);
  ASSERT_EQ(fabric.delivered_to_b.size(), 4u);
  for (std::uint8_t i = 0; i < 4; ++i) EXPECT_EQ(fabric.delivered_to_b[i], fabric_frame(i));
  EXPECT_EQ(fabric.a.unacked_bytes(), 0u);  // the switch acknowledged A's four
  const LinkRetryCounters& port1 = *fabric.core.link_retry_counters(1);
  EXPECT_EQ(port1.frames_sent, 4u);
  EXPECT_EQ(fabric.core.counters(0).drops_malformed, 0u);
  // B's ACK emptied port 1's replay buffer; nothing is left to time out.
  EXPECT_EQ(fabric.core.next_release_ns(), kNoRelease);
}

TEST(SwitchLinkRetry, CorruptionOnTheSwitchToGpuHopCostsReplaysNotLosses) {
  PortFaults corrupt;
  corrupt.corrupt_rate = 0.5;
  LlrFabric fabric({{1, corrupt}});
  for (std::uint8_t i = 0; i < 20; ++i) {
    fabric.send_from_a(fabric_frame(i), 100);
    fabric.settle(100);
  }
  // Whatever B's last ACK still owes is sent after its delay, replays after the timer.
  for (TimeNs now = 1000; now < 200'000 && fabric.delivered_to_b.size() < 20; now += 1000) {
    fabric.b.on_time(now);
    std::vector<PortId> touched;
    fabric.core.release_held(now, touched);
    fabric.settle(now);
  }
  ASSERT_EQ(fabric.delivered_to_b.size(), 20u);
  for (std::uint8_t i = 0; i < 20; ++i) EXPECT_EQ(fabric.delivered_to_b[i], fabric_frame(i));
  EXPECT_GT(fabric.core.counters(1).faults_tx_corrupted, 0u);
  EXPECT_GT(fabric.b.counters().drops_bad_fcs, 0u);
  EXPECT_GT(fabric.core.link_retry_counters(1)->frames_replayed, 0u);
}

TEST(SwitchLinkRetry, WithoutLlrATxDropIsALossTheCountersName) {
  SwitchConfig config;
  config.ports.resize(2);
  config.static_routes = {{kMacA, 0}, {kMacB, 1}};
  config.learning = false;
  PortFaults drop;
  drop.drop_rate = 1.0;
  config.tx_faults = {{1, drop}};
  SwitchCore core(config);
  std::vector<PortId> touched;
  core.on_frame(0, fabric_frame(1), 0, touched);
  EXPECT_EQ(core.front(1), nullptr);
  EXPECT_EQ(core.counters(1).faults_tx_dropped, 1u);
  EXPECT_EQ(core.counters(1).tx_frames, 0u);
  EXPECT_EQ(core.link_retry_counters(1), nullptr);
}

TEST(SwitchLinkRetry, TxFaultsThatOnlyMakeSenseOnReceiveAreRejectedByName) {
  SwitchConfig config;
  config.ports.resize(2);
  SwitchCore core(config);
  PortFaults reorder;
  reorder.reorder_rate = 0.1;
  try {
    core.set_tx_faults(0, reorder);
    FAIL() << "accepted a tx reorder fault";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("reorder_rate"), std::string::npos);
  }
  PortFaults bad;
  bad.corrupt_rate = 2.0;
  EXPECT_THROW(core.set_tx_faults(0, bad), std::invalid_argument);
}

TEST(SwitchLinkRetry, ALinkGoingDownThrowsAwayWhatWasUnacknowledgedAndRetrains) {
  LlrFabric fabric;
  fabric.send_from_a(fabric_frame(1), 0);
  ASSERT_NE(fabric.core.front(1), nullptr);
  wire::Frame first = fabric.core.front(1)->bytes;
  fabric.core.pop(1, 0);  // on the wire, never acknowledged
  fabric.core.set_port_up(1, false);
  EXPECT_EQ(fabric.core.link_retry_counters(1)->frames_lost_on_reset, 1u);
  fabric.core.set_port_up(1, true);
  std::size_t payload_bytes = 0;
  EXPECT_EQ(fabric.b.receive(first, 0, payload_bytes), LinkRetry::Verdict::kDeliver);
  fabric.send_from_a(fabric_frame(2), 10);
  fabric.settle(10);
  // The new epoch's first frame is taken as the start, whatever its sequence number.
  ASSERT_EQ(fabric.delivered_to_b.size(), 1u);
  EXPECT_EQ(fabric.delivered_to_b[0], fabric_frame(2));
}

}  // namespace
}  // namespace ethx
