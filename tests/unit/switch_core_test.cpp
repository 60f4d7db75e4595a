#include "switch/core/switch_core.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>

#include "packet-engine/wire.hpp"

namespace ethx {
namespace {

const MacAddr kMacA = default_mac_for_gpu(1);
const MacAddr kMacB = default_mac_for_gpu(2);
const MacAddr kMacC = default_mac_for_gpu(3);
const MacAddr kMulticastMac{{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}};

constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
constexpr std::size_t kPayloadBytes = 64;

// A valid fabric frame carrying one posted write, built by the real encoder.
wire::Frame fabric_frame(const MacAddr& dst, const MacAddr& src,
                         std::size_t payload_bytes = kPayloadBytes) {
  wire::FrameBuilder builder(wire::kDefaultFrameBytesMax);
  builder.start(wire::FrameAddress{dst, src, 1, 2, 0});
  wire::TxnFields fields;
  fields.opcode = wire::Opcode::kWritePosted;
  fields.length = static_cast<std::uint16_t>(payload_bytes);
  fields.address = 0x1000;
  auto payload = builder.append(fields, payload_bytes);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>(i);
  return builder.finish();
}

// An Ethernet header with `ether_type`, followed by `body` verbatim.
wire::Frame raw_frame(const MacAddr& dst, const MacAddr& src, std::uint16_t ether_type,
                      std::span<const std::byte> body) {
  // Built byte by byte: memcpy or vector::insert here trip GCC 12 -Warray-bounds and
  // -Wnull-dereference false positives at -O2/-O3.
  wire::Frame frame;
  frame.reserve(wire::kEthernetHeaderBytes + body.size());
  for (const std::uint8_t octet : dst.octets) frame.push_back(std::byte{octet});
  for (const std::uint8_t octet : src.octets) frame.push_back(std::byte{octet});
  frame.push_back(static_cast<std::byte>(ether_type >> 8));
  frame.push_back(static_cast<std::byte>(ether_type & 0xff));
  for (const std::byte value : body) frame.push_back(value);
  return frame;
}

wire::Frame garbage(std::size_t bytes) {
  return wire::Frame(bytes, std::byte{0xAB});
}

SwitchConfig config_with_ports(std::size_t port_total, bool learning) {
  SwitchConfig config;
  config.ports.resize(port_total);
  config.learning = learning;
  return config;
}

std::size_t malformed_bucket(const PortCounters& counters, wire::DecodeError error) {
  return counters.malformed_by_reason[static_cast<std::size_t>(error)];
}

std::size_t total_queued_frames(const SwitchCore& core) {
  std::size_t total = 0;
  for (PortId port = 0; port < core.port_count(); ++port) total += core.queued_frames(port);
  return total;
}

TEST(SwitchCoreConfig, RejectsZeroPorts) {
  EXPECT_THROW(SwitchCore(SwitchConfig{}), std::invalid_argument);
}

TEST(SwitchCoreConfig, RejectsStaticRouteToMissingPort) {
  SwitchConfig config = config_with_ports(4, false);
  config.static_routes = {{kMacA, 4}};
  EXPECT_THROW(SwitchCore{config}, std::invalid_argument);
  config.static_routes = {{kMacA, 3}};
  EXPECT_NO_THROW(SwitchCore{config});
}

TEST(SwitchCoreConfig, RejectsOneMacRoutedToTwoPorts) {
  SwitchConfig config = config_with_ports(4, false);
  config.static_routes = {{kMacA, 1}, {kMacA, 2}};
  EXPECT_THROW(SwitchCore{config}, std::invalid_argument);
}

TEST(SwitchCoreConfig, RejectsNonPositiveRate) {
  SwitchConfig config = config_with_ports(2, false);
  config.ports[1].rate_gbps = 0.0;
  EXPECT_THROW(SwitchCore{config}, std::invalid_argument);
}

TEST(SwitchCoreConfig, KeepsConfigForTheSimulator) {
  SwitchConfig config = config_with_ports(3, false);
  config.ports[2].rate_gbps = 400.0;
  config.forwarding_latency_ns = 123;
  const SwitchCore core(config);
  EXPECT_EQ(core.port_count(), 3u);
  EXPECT_EQ(core.config().ports[2].rate_gbps, 400.0);
  EXPECT_EQ(core.config().forwarding_latency_ns, 123u);
}

TEST(SwitchCore, StaticRouteForwardsToItsPortOnly) {
  SwitchConfig config = config_with_ports(4, false);
  config.static_routes = {{kMacB, 2}};
  SwitchCore core(config);
  const wire::Frame frame = fabric_frame(kMacB, kMacA);
  std::vector<PortId> touched;

  core.on_frame(0, frame, 1000, touched);

  EXPECT_EQ(touched, std::vector<PortId>{2});
  ASSERT_EQ(core.queued_frames(2), 1u);
  EXPECT_EQ(total_queued_frames(core), 1u);
  const QueuedFrame* queued = core.front(2);
  ASSERT_NE(queued, nullptr);
  EXPECT_EQ(queued->bytes, frame);
  EXPECT_EQ(queued->enqueued_ns, 1000u);
  EXPECT_EQ(queued->ingress, 0u);
  EXPECT_EQ(core.queued_bytes(2), frame.size());
}

TEST(SwitchCore, AppendsToEgressTouchedWithoutClearing) {
  SwitchConfig config = config_with_ports(3, false);
  config.static_routes = {{kMacB, 1}, {kMacC, 2}};
  SwitchCore core(config);
  std::vector<PortId> touched;
  core.on_frame(0, fabric_frame(kMacB, kMacA), 0, touched);
  core.on_frame(0, fabric_frame(kMacC, kMacA), 0, touched);
  EXPECT_EQ(touched, (std::vector<PortId>{1, 2}));
}

TEST(SwitchCore, LearnsSourceThenForwardsUnicastWithoutFlooding) {
  SwitchCore core(config_with_ports(4, true));
  std::vector<PortId> touched;

  // B is unknown yet: flooded to every other port, and A is learned on port 0.
  core.on_frame(0, fabric_frame(kMacB, kMacA), 0, touched);
  EXPECT_EQ(touched, (std::vector<PortId>{1, 2, 3}));
  EXPECT_EQ(core.counters(0).flooded_frames, 1u);
  for (PortId port = 0; port < 4; ++port) {
    while (core.front(port) != nullptr) core.pop(port);
  }

  // B answers from port 2: goes to port 0 only, and B is learned.
  touched.clear();
  core.on_frame(2, fabric_frame(kMacA, kMacB), 0, touched);
  EXPECT_EQ(touched, std::vector<PortId>{0});
  EXPECT_EQ(core.counters(2).flooded_frames, 0u);

  // Now A -> B is unicast to port 2.
  touched.clear();
  core.on_frame(0, fabric_frame(kMacB, kMacA), 0, touched);
  EXPECT_EQ(touched, std::vector<PortId>{2});
  EXPECT_EQ(core.counters(0).flooded_frames, 1u);
  EXPECT_EQ(total_queued_frames(core), 2u);
}

TEST(SwitchCore, LearnedStationThatMovesIsFollowed) {
  SwitchCore core(config_with_ports(4, true));
  std::vector<PortId> touched;
  core.on_frame(1, fabric_frame(kBroadcastMac, kMacB), 0, touched);
  core.on_frame(3, fabric_frame(kBroadcastMac, kMacB), 0, touched);
  touched.clear();
  core.on_frame(0, fabric_frame(kMacB, kMacA), 0, touched);
  EXPECT_EQ(touched, std::vector<PortId>{3});
}

TEST(SwitchCore, AStationThatMovesBackAndForthIsFollowedEveryTime) {
  // Learning skips its table lookup while a port keeps seeing the same source and the table
  // has not changed; a move elsewhere, and back, must still be followed.
  SwitchCore core(config_with_ports(4, true));
  std::vector<PortId> touched;
  const auto where_is_b = [&] {
    touched.clear();
    core.on_frame(0, fabric_frame(kMacB, kMacA), 0, touched);
    return touched;
  };
  for (int repeat = 0; repeat < 3; ++repeat) {
    core.on_frame(1, fabric_frame(kBroadcastMac, kMacB), 0, touched);
    core.on_frame(1, fabric_frame(kBroadcastMac, kMacB), 0, touched);
    EXPECT_EQ(where_is_b(), std::vector<PortId>{1});
    core.on_frame(3, fabric_frame(kBroadcastMac, kMacB), 0, touched);
    EXPECT_EQ(where_is_b(), std::vector<PortId>{3});
  }
  // Forgotten when its link goes down, learned again on the same port when it is back.
  core.on_frame(3, fabric_frame(kBroadcastMac, kMacB), 0, touched);
  core.set_port_up(3, false);
  EXPECT_EQ(where_is_b(), (std::vector<PortId>{1, 2}));
  core.set_port_up(3, true);
  core.on_frame(3, fabric_frame(kBroadcastMac, kMacB), 0, touched);
  EXPECT_EQ(where_is_b(), std::vector<PortId>{3});
}

TEST(SwitchCore, AnOwnedFrameGoingToOneQueueIsMovedThereNotCopied) {
  SwitchConfig config = config_with_ports(3, true);
  config.static_routes = {{kMacA, 0}, {kMacB, 1}};
  SwitchCore core(config);
  std::vector<PortId> touched;
  wire::Frame frame = fabric_frame(kMacB, kMacA);
  const wire::Frame expected = frame;
  const std::byte* buffer = frame.data();
  core.on_owned_frame(0, frame, 0, touched);
  EXPECT_TRUE(frame.empty());
  EXPECT_EQ(touched, std::vector<PortId>{1});
  ASSERT_NE(core.front(1), nullptr);
  EXPECT_EQ(core.front(1)->bytes, expected);
  EXPECT_EQ(core.front(1)->bytes.data(), buffer);
  EXPECT_EQ(core.queued_bytes(1), expected.size());
  EXPECT_EQ(core.counters(0).rx_bytes, expected.size());
  // pop_into hands the same buffer on.
  wire::Frame out;
  core.pop_into(1, out);
  EXPECT_EQ(out.data(), buffer);

  // Flooded (copies to several ports) or dropped: the runtime keeps its frame as it was.
  wire::Frame flooded = fabric_frame(kBroadcastMac, kMacA);
  const wire::Frame flooded_copy = flooded;
  core.on_owned_frame(0, flooded, 0, touched);
  EXPECT_EQ(flooded, flooded_copy);
  EXPECT_EQ(core.queued_frames(1), 1u);
  EXPECT_EQ(core.queued_frames(2), 1u);
  wire::Frame hairpin = fabric_frame(kMacA, kMacB);
  const wire::Frame hairpin_copy = hairpin;
  core.on_owned_frame(0, hairpin, 0, touched);
  EXPECT_EQ(hairpin, hairpin_copy);
  EXPECT_EQ(core.counters(0).drops_hairpin, 1u);
}

TEST(SwitchCore, LearningNeverOverridesStaticRoute) {
  SwitchConfig config = config_with_ports(4, true);
  config.static_routes = {{kMacB, 1}};
  SwitchCore core(config);
  std::vector<PortId> touched;
  // B shows up as a source on port 3, but its static route still points at port 1.
  core.on_frame(3, fabric_frame(kMacA, kMacB), 0, touched);
  touched.clear();
  core.on_frame(0, fabric_frame(kMacB, kMacA), 0, touched);
  EXPECT_EQ(touched, std::vector<PortId>{1});
}

TEST(SwitchCore, BroadcastAndMulticastFloodToAllOtherPortsWhenLearning) {
  SwitchCore core(config_with_ports(4, true));
  std::vector<PortId> touched;
  core.on_frame(1, fabric_frame(kBroadcastMac, kMacA), 0, touched);
  EXPECT_EQ(touched, (std::vector<PortId>{0, 2, 3}));
  EXPECT_EQ(core.queued_frames(1), 0u);

  touched.clear();
  core.on_frame(2, fabric_frame(kMulticastMac, kMacB), 0, touched);
  EXPECT_EQ(touched, (std::vector<PortId>{0, 1, 3}));
  EXPECT_EQ(core.counters(1).flooded_frames, 1u);
  EXPECT_EQ(core.counters(2).flooded_frames, 1u);
  EXPECT_EQ(core.queued_frames(2), 1u);  // only the copy of port 1's broadcast
}

TEST(SwitchCore, BroadcastIsUnknownDestinationWhenLearningOff) {
  SwitchConfig config = config_with_ports(4, false);
  config.static_routes = {{kMacB, 2}};
  SwitchCore core(config);
  std::vector<PortId> touched;
  core.on_frame(0, fabric_frame(kBroadcastMac, kMacA), 0, touched);
  EXPECT_TRUE(touched.empty());
  EXPECT_EQ(total_queued_frames(core), 0u);
  EXPECT_EQ(core.counters(0).drops_unknown_destination, 1u);
  EXPECT_EQ(core.counters(0).flooded_frames, 0u);
}

TEST(SwitchCore, UnknownUnicastIsDroppedWhenLearningOff) {
  SwitchConfig config = config_with_ports(4, false);
  config.static_routes = {{kMacB, 2}};
  SwitchCore core(config);
  std::vector<PortId> touched;
  // A source seen with learning off must not become a route either.
  core.on_frame(1, fabric_frame(kMacB, kMacC), 0, touched);
  touched.clear();
  core.on_frame(0, fabric_frame(kMacC, kMacA), 0, touched);
  EXPECT_TRUE(touched.empty());
  EXPECT_EQ(core.counters(0).drops_unknown_destination, 1u);
  EXPECT_EQ(total_queued_frames(core), 1u);  // just the first frame, on port 2
}

TEST(SwitchCore, FrameRoutedBackToItsIngressIsHairpinDrop) {
  SwitchConfig config = config_with_ports(4, false);
  config.static_routes = {{kMacB, 1}};
  SwitchCore core(config);
  std::vector<PortId> touched;
  core.on_frame(1, fabric_frame(kMacB, kMacA), 0, touched);
  EXPECT_TRUE(touched.empty());
  EXPECT_EQ(total_queued_frames(core), 0u);
  EXPECT_EQ(core.counters(1).drops_hairpin, 1u);
  EXPECT_EQ(core.counters(1).drops_unknown_destination, 0u);
}

TEST(SwitchCore, LearnedHairpinIsDroppedToo) {
  SwitchCore core(config_with_ports(4, true));
  std::vector<PortId> touched;
  core.on_frame(2, fabric_frame(kBroadcastMac, kMacB), 0, touched);  // learns B on port 2
  touched.clear();
  core.on_frame(2, fabric_frame(kMacB, kMacA), 0, touched);
  EXPECT_TRUE(touched.empty());
  EXPECT_EQ(core.counters(2).drops_hairpin, 1u);
}

TEST(SwitchCore, QueueFullIsCountedOnTheEgressPort) {
  const wire::Frame frame = fabric_frame(kMacB, kMacA);
  SwitchConfig config = config_with_ports(3, false);
  config.ports[1].egress_queue_bytes = frame.size() * 2 + frame.size() / 2;  // room for two
  config.static_routes = {{kMacB, 1}};
  SwitchCore core(config);
  std::vector<PortId> touched;

  for (int i = 0; i < 3; ++i) core.on_frame(0, frame, 0, touched);

  EXPECT_EQ(touched, (std::vector<PortId>{1, 1}));
  EXPECT_EQ(core.queued_frames(1), 2u);
  EXPECT_EQ(core.queued_bytes(1), frame.size() * 2);
  EXPECT_EQ(core.counters(1).drops_queue_full, 1u);
  EXPECT_EQ(core.counters(0).drops_queue_full, 0u);
  EXPECT_EQ(core.counters(1).queue_bytes_high_water, frame.size() * 2);

  // Draining one frame makes room for exactly one more.
  core.pop(1);
  touched.clear();
  core.on_frame(0, frame, 0, touched);
  core.on_frame(0, frame, 0, touched);
  EXPECT_EQ(touched, std::vector<PortId>{1});
  EXPECT_EQ(core.counters(1).drops_queue_full, 2u);
}

TEST(SwitchCore, FloodCopyDroppedOnlyOnTheFullPort) {
  const wire::Frame frame = fabric_frame(kBroadcastMac, kMacA);
  SwitchConfig config = config_with_ports(3, true);
  config.ports[2].egress_queue_bytes = frame.size() - 1;
  SwitchCore core(config);
  std::vector<PortId> touched;
  core.on_frame(0, frame, 0, touched);
  EXPECT_EQ(touched, std::vector<PortId>{1});
  EXPECT_EQ(core.counters(2).drops_queue_full, 1u);
  EXPECT_EQ(core.counters(1).drops_queue_full, 0u);
}

TEST(SwitchCore, ShortGarbageAfterFabricEthernetHeaderIsTruncatedHeader) {
  SwitchConfig config = config_with_ports(3, false);
  config.static_routes = {{kMacB, 1}};
  SwitchCore core(config);
  std::vector<PortId> touched;

  core.on_frame(0, raw_frame(kMacB, kMacA, wire::kEtherTypeFabric, garbage(10)), 0, touched);
  EXPECT_TRUE(touched.empty());
  EXPECT_EQ(core.counters(0).drops_malformed, 1u);
  EXPECT_EQ(malformed_bucket(core.counters(0), wire::DecodeError::kTruncatedHeader), 1u);

  // The port keeps working: the next valid frame is forwarded.
  core.on_frame(0, fabric_frame(kMacB, kMacA), 0, touched);
  EXPECT_EQ(touched, std::vector<PortId>{1});
  EXPECT_EQ(core.counters(0).drops_malformed, 1u);
}

TEST(SwitchCore, LongGarbageAfterFabricEthernetHeaderIsBadVersion) {
  SwitchConfig config = config_with_ports(3, false);
  config.static_routes = {{kMacB, 1}};
  SwitchCore core(config);
  std::vector<PortId> touched;
  core.on_frame(0, raw_frame(kMacB, kMacA, wire::kEtherTypeFabric, garbage(64)), 0, touched);
  EXPECT_TRUE(touched.empty());
  EXPECT_EQ(malformed_bucket(core.counters(0), wire::DecodeError::kBadVersion), 1u);
  EXPECT_EQ(malformed_bucket(core.counters(0), wire::DecodeError::kTruncatedHeader), 0u);
}

TEST(SwitchCore, CorruptedFabricPayloadIsBadCrcAndNotLearned) {
  SwitchCore core(config_with_ports(3, true));
  wire::Frame frame = fabric_frame(kMacB, kMacA);
  frame[wire::kBodyOffset + wire::kTxnHeaderBytes + 5] ^= std::byte{0x01};
  std::vector<PortId> touched;
  core.on_frame(0, frame, 0, touched);
  EXPECT_TRUE(touched.empty());
  EXPECT_EQ(core.counters(0).drops_malformed, 1u);
  EXPECT_EQ(malformed_bucket(core.counters(0), wire::DecodeError::kBadCrc), 1u);

  // A was not learned from the corrupt frame, so a frame to A still floods.
  core.on_frame(1, fabric_frame(kMacA, kMacC), 0, touched);
  EXPECT_EQ(touched, (std::vector<PortId>{0, 2}));
}

TEST(SwitchCore, RuntFrameIsMalformed) {
  SwitchCore core(config_with_ports(2, true));
  std::vector<PortId> touched;
  const wire::Frame runt = garbage(wire::kEthernetHeaderBytes - 1);
  core.on_frame(0, runt, 0, touched);
  core.on_frame(0, std::span<const std::byte>{}, 0, touched);
  EXPECT_TRUE(touched.empty());
  EXPECT_EQ(core.counters(0).drops_malformed, 2u);
  EXPECT_EQ(malformed_bucket(core.counters(0), wire::DecodeError::kTruncatedEthernet), 2u);
  EXPECT_EQ(core.counters(0).rx_bytes, runt.size());
}

TEST(SwitchCore, NonFabricEtherTypeIsForwardedUndecoded) {
  SwitchConfig config = config_with_ports(3, false);
  config.static_routes = {{kMacB, 2}};
  SwitchCore core(config);
  // Garbage that would never decode as a fabric frame.
  const wire::Frame frame = raw_frame(kMacB, kMacA, kEtherTypeIpv4, garbage(3));
  std::vector<PortId> touched;
  core.on_frame(0, frame, 0, touched);
  EXPECT_EQ(touched, std::vector<PortId>{2});
  ASSERT_NE(core.front(2), nullptr);
  EXPECT_EQ(core.front(2)->bytes, frame);
  EXPECT_EQ(core.counters(0).drops_malformed, 0u);
}

TEST(SwitchCore, BareEthernetHeaderOfOtherProtocolIsForwarded) {
  SwitchCore core(config_with_ports(2, true));
  const wire::Frame frame = raw_frame(kBroadcastMac, kMacA, kEtherTypeIpv4, {});
  std::vector<PortId> touched;
  core.on_frame(1, frame, 0, touched);
  EXPECT_EQ(touched, std::vector<PortId>{0});
}

TEST(SwitchCore, BadIngressPortIsCountedNotFatal) {
  SwitchConfig config = config_with_ports(2, true);
  SwitchCore core(config);
  std::vector<PortId> touched;
  const wire::Frame frame = fabric_frame(kBroadcastMac, kMacA);
  core.on_frame(2, frame, 0, touched);
  core.on_frame(std::numeric_limits<PortId>::max(), frame, 0, touched);
  EXPECT_TRUE(touched.empty());
  EXPECT_EQ(core.drops_bad_port(), 2u);
  EXPECT_EQ(total_queued_frames(core), 0u);
  EXPECT_EQ(core.counters(0).rx_frames + core.counters(1).rx_frames, 0u);
}

TEST(SwitchCore, OutOfRangeEgressReadsAsEmpty) {
  SwitchCore core(config_with_ports(2, true));
  EXPECT_EQ(core.front(7), nullptr);
  EXPECT_EQ(core.queued_bytes(7), 0u);
  EXPECT_EQ(core.queued_frames(7), 0u);
  EXPECT_FALSE(core.port_up(7));
  core.pop(7);  // must not crash
  core.pop(0);  // empty queue: no tx counted
  EXPECT_EQ(core.counters(0).tx_frames, 0u);
  EXPECT_THROW(core.counters(7), std::out_of_range);
  EXPECT_THROW(core.set_port_up(7, false), std::out_of_range);
}

TEST(SwitchCore, PortDownDropsQueuedAndNewFramesUntilUp) {
  SwitchConfig config = config_with_ports(3, false);
  config.static_routes = {{kMacB, 1}, {kMacA, 0}};
  SwitchCore core(config);
  const wire::Frame frame = fabric_frame(kMacB, kMacA);
  std::vector<PortId> touched;
  core.on_frame(0, frame, 0, touched);
  core.on_frame(0, frame, 0, touched);
  ASSERT_EQ(core.queued_frames(1), 2u);
  EXPECT_TRUE(core.port_up(1));

  core.set_port_up(1, false);
  EXPECT_FALSE(core.port_up(1));
  EXPECT_EQ(core.queued_frames(1), 0u);
  EXPECT_EQ(core.queued_bytes(1), 0u);
  EXPECT_EQ(core.front(1), nullptr);
  EXPECT_EQ(core.counters(1).drops_link_down, 2u);

  // Sent to it while down.
  touched.clear();
  core.on_frame(0, frame, 0, touched);
  EXPECT_TRUE(touched.empty());
  EXPECT_EQ(core.counters(1).drops_link_down, 3u);
  // Arriving on it while down.
  core.on_frame(1, fabric_frame(kMacA, kMacB), 0, touched);
  EXPECT_TRUE(touched.empty());
  EXPECT_EQ(core.counters(1).drops_link_down, 4u);
  EXPECT_EQ(core.queued_frames(0), 0u);

  core.set_port_up(1, true);
  core.on_frame(0, frame, 0, touched);
  EXPECT_EQ(touched, std::vector<PortId>{1});
  EXPECT_EQ(core.counters(1).drops_link_down, 4u);
  EXPECT_EQ(core.counters(1).tx_frames, 0u);  // dropped frames were never sent
}

TEST(SwitchCore, FloodSkipsDownPortsAndStationsBehindThemAreForgotten) {
  SwitchCore core(config_with_ports(4, true));
  std::vector<PortId> touched;
  core.on_frame(2, fabric_frame(kBroadcastMac, kMacB), 0, touched);  // learns B on port 2
  core.set_port_up(2, false);

  touched.clear();
  core.on_frame(0, fabric_frame(kBroadcastMac, kMacA), 0, touched);
  EXPECT_EQ(touched, (std::vector<PortId>{1, 3}));
  // B's entry went with the link, so a frame to B floods rather than being black-holed.
  touched.clear();
  core.on_frame(0, fabric_frame(kMacB, kMacA), 0, touched);
  EXPECT_EQ(touched, (std::vector<PortId>{1, 3}));
  // Left out of the flood domain, not dropped: nothing was ever sent to port 2.
  EXPECT_EQ(core.counters(2).drops_link_down, 0u);
  EXPECT_EQ(core.queued_frames(2), 0u);
}

TEST(SwitchCore, CountsRxAndTxFramesAndBytes) {
  SwitchConfig config = config_with_ports(2, false);
  config.static_routes = {{kMacB, 1}};
  SwitchCore core(config);
  const wire::Frame small = fabric_frame(kMacB, kMacA, 8);
  const wire::Frame large = fabric_frame(kMacB, kMacA, 512);
  ASSERT_NE(small.size(), large.size());
  std::vector<PortId> touched;
  core.on_frame(0, small, 10, touched);
  core.on_frame(0, large, 20, touched);

  EXPECT_EQ(core.counters(0).rx_frames, 2u);
  EXPECT_EQ(core.counters(0).rx_bytes, small.size() + large.size());
  EXPECT_EQ(core.counters(1).rx_frames, 0u);
  // Queued is not sent: tx moves only when the runtime pops.
  EXPECT_EQ(core.counters(1).tx_frames, 0u);
  EXPECT_EQ(core.queued_bytes(1), small.size() + large.size());

  ASSERT_NE(core.front(1), nullptr);
  EXPECT_EQ(core.front(1)->enqueued_ns, 10u);  // FIFO
  core.pop(1);
  EXPECT_EQ(core.counters(1).tx_frames, 1u);
  EXPECT_EQ(core.counters(1).tx_bytes, small.size());
  EXPECT_EQ(core.queued_bytes(1), large.size());
  core.pop(1);
  EXPECT_EQ(core.counters(1).tx_frames, 2u);
  EXPECT_EQ(core.counters(1).tx_bytes, small.size() + large.size());
  EXPECT_EQ(core.counters(1).queue_bytes_high_water, small.size() + large.size());
  EXPECT_EQ(core.counters(0).tx_frames, 0u);
}

TEST(SwitchCore, DropReasonNamesAreDistinct) {
  const std::set<std::string> names = {
      to_string(DropReason::kMalformed), to_string(DropReason::kQueueFull),
      to_string(DropReason::kUnknownDestination), to_string(DropReason::kHairpin),
      to_string(DropReason::kBadPort)};
  EXPECT_EQ(names.size(), 5u);
  EXPECT_EQ(std::string(to_string(DropReason::kQueueFull)), "queue_full");
}

}  // namespace
}  // namespace ethx

namespace ethx {
namespace {

// A fabric frame whose header claims `src_gpu` (a forger can write any value there).
wire::Frame fabric_frame_claiming(const MacAddr& dst, const MacAddr& src, GpuId src_gpu,
                                  GpuId dst_gpu) {
  wire::FrameBuilder builder(wire::kDefaultFrameBytesMax);
  builder.start(wire::FrameAddress{dst, src, src_gpu, dst_gpu, 0});
  wire::TxnFields fields;
  fields.opcode = wire::Opcode::kWritePosted;
  fields.length = 8;
  fields.address = 0x2000;
  auto payload = builder.append(fields, 8);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = std::byte{0x66};
  return builder.finish();
}

// Ports 0 and 1 bound to GPUs 1 (kMacA) and 2 (kMacB); port 2 (kMacC) unbound.
SwitchCore secured_switch() {
  SwitchConfig config = config_with_ports(3, true);
  config.static_routes = {{kMacA, 0}, {kMacB, 1}, {kMacC, 2}};
  config.port_bindings = {{0, kMacA, 1}, {1, kMacB, 2}};
  return SwitchCore(config);
}

TEST(SwitchPortSecurity, ForwardsFramesFromTheBoundGpu) {
  SwitchCore core = secured_switch();
  std::vector<PortId> touched;
  core.on_frame(0, fabric_frame_claiming(kMacB, kMacA, 1, 2), 0, touched);
  const std::uint16_t ipv4 = kEtherTypeIpv4;
  const std::array<std::byte, 46> body{};
  core.on_frame(0, raw_frame(kMacB, kMacA, ipv4, body), 0, touched);  // other protocols too
  EXPECT_EQ(core.queued_frames(1), 2u);
  EXPECT_EQ(core.counters(0).drops_spoofed, 0u);
}

TEST(SwitchPortSecurity, DropsAForgedSourceMacOrGpuAndCountsIt) {
  SwitchCore core = secured_switch();
  std::vector<PortId> touched;
  // GPU 1's port claims to be GPU 3's MAC; then its own MAC with GPU 2's id.
  core.on_frame(0, fabric_frame_claiming(kMacB, kMacC, 3, 2), 0, touched);
  core.on_frame(0, fabric_frame_claiming(kMacB, kMacA, 2, 2), 0, touched);
  EXPECT_TRUE(touched.empty());
  EXPECT_EQ(core.queued_frames(1), 0u);
  EXPECT_EQ(core.counters(0).drops_spoofed, 2u);
  // The forged source was not learned: frames for kMacC still go to port 2.
  core.on_frame(1, fabric_frame_claiming(kMacC, kMacB, 2, 3), 0, touched);
  EXPECT_EQ(core.queued_frames(2), 1u);
  EXPECT_EQ(core.queued_frames(0), 0u);
}

TEST(SwitchPortSecurity, UnboundPortsAcceptAnySourceAndBadBindingsAreRejected) {
  SwitchCore core = secured_switch();
  std::vector<PortId> touched;
  core.on_frame(2, fabric_frame_claiming(kMacA, default_mac_for_gpu(9), 9, 1), 0, touched);
  EXPECT_EQ(core.queued_frames(0), 1u);
  EXPECT_EQ(core.counters(2).drops_spoofed, 0u);
  SwitchConfig bad = config_with_ports(2, true);
  bad.port_bindings = {{5, kMacA, 1}};
  EXPECT_THROW(SwitchCore{bad}, std::invalid_argument);
}

}  // namespace
}  // namespace ethx

namespace ethx {
namespace {

SwitchCore faulty_switch(const PortFaults& faults, std::uint64_t seed = 7) {
  SwitchConfig config = config_with_ports(2, false);
  config.static_routes = {{kMacA, 0}, {kMacB, 1}};
  config.faults = {{0, faults}};
  config.fault_seed = seed;
  return SwitchCore(config);
}

TEST(SwitchFaults, DropRateOneDropsEverythingAndCountsIt) {
  SwitchCore core = faulty_switch({1.0, 0.0, 0.0});
  std::vector<PortId> touched;
  for (int i = 0; i < 10; ++i) core.on_frame(0, fabric_frame(kMacB, kMacA), 0, touched);
  EXPECT_EQ(core.queued_frames(1), 0u);
  EXPECT_EQ(core.counters(0).faults_dropped, 10u);
  core.on_frame(1, fabric_frame(kMacA, kMacB), 0, touched);  // the other direction is clean
  EXPECT_EQ(core.queued_frames(0), 1u);
}

TEST(SwitchFaults, CorruptedFabricFramesFailTheCrcAndAreCountedAsMalformed) {
  SwitchCore core = faulty_switch({0.0, 1.0, 0.0});
  std::vector<PortId> touched;
  for (int i = 0; i < 50; ++i) core.on_frame(0, fabric_frame(kMacB, kMacA), 0, touched);
  EXPECT_EQ(core.counters(0).faults_corrupted, 50u);
  // A flipped bit in the Ethernet header may redirect or mislabel the frame; every flip
  // anywhere else fails the CRC. None of the 50 may reach GPU B intact.
  std::size_t intact = 0;
  while (const QueuedFrame* frame = core.front(1)) {
    intact += frame->bytes == fabric_frame(kMacB, kMacA);
    core.pop(1);
  }
  EXPECT_EQ(intact, 0u);
  EXPECT_GT(core.counters(0).drops_malformed, 30u);
}

// A fabric frame like fabric_frame(), built with or without its CRC.
wire::Frame fabric_frame_crc(wire::Crc crc, std::size_t payload_bytes) {
  wire::FrameBuilder builder(wire::kDefaultFrameBytesMax, crc);
  builder.start(wire::FrameAddress{kMacB, kMacA, 1, 2, 0});
  wire::TxnFields fields;
  fields.opcode = wire::Opcode::kWritePosted;
  fields.length = static_cast<std::uint16_t>(payload_bytes);
  auto payload = builder.append(fields, payload_bytes);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>(i);
  return builder.finish();
}

TEST(SwitchFaults, WithoutCrcsTheCorruptFaultDropsTheSameFramesForTheSameReasons) {
  // The simulator's frames carry no CRC (SwitchConfig::crc = kOff): the corrupt fault computes
  // it before flipping a bit, so the same seed drops the same frames, counted the same way,
  // as a switch whose frames carry their CRC; intact frames pass unchecked.
  const auto run = [](wire::Crc crc) {
    SwitchConfig config = config_with_ports(2, false);
    config.static_routes = {{kMacA, 0}, {kMacB, 1}};
    PortFaults faults;
    faults.corrupt_rate = 0.5;
    config.faults = {{0, faults}};
    config.fault_seed = 3;
    config.crc = crc;
    SwitchCore core(config);
    std::vector<PortId> touched;
    std::vector<std::size_t> delivered_sizes;
    for (std::size_t i = 0; i < 300; ++i) {
      core.on_frame(0, fabric_frame_crc(crc, 64 + i % 7), 0, touched);
      while (const QueuedFrame* frame = core.front(1)) {
        delivered_sizes.push_back(frame->bytes.size());
        core.pop(1);
      }
    }
    return std::make_pair(core.counters(0), delivered_sizes);
  };
  const auto [with, with_delivered] = run(wire::Crc::kOn);
  const auto [without, without_delivered] = run(wire::Crc::kOff);
  EXPECT_GT(with.faults_corrupted, 100u);
  EXPECT_EQ(without.faults_corrupted, with.faults_corrupted);
  EXPECT_EQ(without.drops_malformed, with.drops_malformed);
  EXPECT_EQ(without.malformed_by_reason, with.malformed_by_reason);
  EXPECT_GT(malformed_bucket(without, wire::DecodeError::kBadCrc), 100u);
  EXPECT_EQ(without_delivered, with_delivered);
  EXPECT_EQ(without_delivered.size() + without.drops_malformed + without.drops_unknown_destination +
                without.drops_hairpin,
            300u);
}

TEST(SwitchFaults, ReorderingSwapsAFrameWithTheOneBeforeIt) {
  SwitchCore core = faulty_switch({0.0, 0.0, 1.0});
  std::vector<PortId> touched;
  const wire::Frame first = fabric_frame(kMacB, kMacA, 64);
  const wire::Frame second = fabric_frame(kMacB, kMacA, 128);
  core.on_frame(0, first, 0, touched);
  core.on_frame(0, second, 0, touched);
  ASSERT_EQ(core.queued_frames(1), 2u);
  EXPECT_EQ(core.front(1)->bytes, second);
  EXPECT_EQ(core.counters(0).faults_reordered, 1u);  // the first had nothing to overtake
}

TEST(SwitchFaults, TheSameSeedInjectsTheSameFaultsAndRatesAreChecked) {
  auto dropped = [](std::uint64_t seed) {
    SwitchCore core = faulty_switch({0.3, 0.0, 0.0}, seed);
    std::vector<PortId> touched;
    std::vector<bool> pattern;
    for (int i = 0; i < 200; ++i) {
      const std::uint64_t before = core.counters(0).faults_dropped;
      core.on_frame(0, fabric_frame(kMacB, kMacA), 0, touched);
      pattern.push_back(core.counters(0).faults_dropped != before);
    }
    return pattern;
  };
  EXPECT_EQ(dropped(11), dropped(11));
  EXPECT_NE(dropped(11), dropped(12));
  const std::vector<bool> pattern = dropped(11);
  const auto count = std::count(pattern.begin(), pattern.end(), true);
  EXPECT_GT(count, 30);  // ~60 expected
  EXPECT_LT(count, 100);
  SwitchCore core = faulty_switch({});
  EXPECT_THROW(core.set_faults(0, {1.5, 0.0, 0.0}), std::invalid_argument);
}

PortFaults spikes(double rate, TimeNs length_ns) {
  PortFaults faults;
  faults.delay_spike_rate = rate;
  faults.delay_spike_ns = length_ns;
  return faults;
}

TEST(SwitchFaults, ADelaySpikeHoldsTheFrameUntilItsReleaseTimeAndNotLonger) {
  SwitchCore core = faulty_switch(spikes(1.0, 1000));
  std::vector<PortId> touched;
  EXPECT_EQ(core.next_release_ns(), kNoRelease);
  core.on_frame(0, fabric_frame(kMacB, kMacA), 100, touched);
  EXPECT_TRUE(touched.empty());
  EXPECT_EQ(core.queued_frames(1), 0u);
  EXPECT_EQ(core.held_frames(0), 1u);
  EXPECT_EQ(core.next_release_ns(), 1100u);
  EXPECT_TRUE(core.ingress_stalled(0, 1099));
  EXPECT_FALSE(core.ingress_stalled(0, 1100));
  EXPECT_FALSE(core.ingress_stalled(1, 500));  // only the port the spike hit

  core.release_held(1099, touched);
  EXPECT_EQ(core.queued_frames(1), 0u) << "released before its time";
  core.release_held(1100, touched);
  ASSERT_EQ(core.queued_frames(1), 1u);
  EXPECT_EQ(touched, std::vector<PortId>{1});
  EXPECT_EQ(core.front(1)->enqueued_ns, 1100u);  // it reached the switch when released
  EXPECT_EQ(core.front(1)->bytes, fabric_frame(kMacB, kMacA));
  EXPECT_EQ(core.held_frames(0), 0u);
  EXPECT_EQ(core.next_release_ns(), kNoRelease);
  EXPECT_EQ(core.counters(0).faults_delay_spikes, 1u);
  EXPECT_EQ(core.counters(0).faults_delayed, 1u);
}

TEST(SwitchFaults, ASpikeStallsTheIngressLinkFramesBehindItWaitAndKeepTheirOrder) {
  SwitchCore core = faulty_switch(spikes(1.0, 1000));
  std::vector<PortId> touched;
  const wire::Frame a = fabric_frame(kMacB, kMacA, 64);
  const wire::Frame b = fabric_frame(kMacB, kMacA, 128);
  const wire::Frame c = fabric_frame(kMacB, kMacA, 256);
  const wire::Frame d = fabric_frame(kMacB, kMacA, 512);
  core.on_frame(0, a, 0, touched);    // starts the stall, until 1000
  core.on_frame(0, b, 10, touched);   // behind it: held, no second spike
  core.on_frame(0, c, 999, touched);  // still behind it
  EXPECT_EQ(core.held_frames(0), 3u);
  EXPECT_EQ(core.counters(0).faults_delay_spikes, 1u);
  EXPECT_EQ(core.counters(0).faults_delayed, 3u);
  // The other direction is not stalled.
  core.on_frame(1, fabric_frame(kMacA, kMacB), 20, touched);
  EXPECT_EQ(core.queued_frames(0), 1u);

  // Faults cleared while the stall runs: it still runs out, and the next frame on the port
  // first lets the held ones go, in arrival order, then follows them.
  core.set_faults(0, PortFaults{});
  core.on_frame(0, d, 1500, touched);
  ASSERT_EQ(core.queued_frames(1), 4u);
  for (const wire::Frame* expected : {&a, &b, &c, &d}) {
    EXPECT_EQ(core.front(1)->bytes, *expected);
    core.pop(1);
  }
  EXPECT_EQ(core.counters(0).faults_delay_spikes, 1u);
}

TEST(SwitchFaults, AStalledLinkBuffersNoMoreThanItsQueueLimit) {
  SwitchConfig config = config_with_ports(2, false);
  config.static_routes = {{kMacA, 0}, {kMacB, 1}};
  const wire::Frame frame = fabric_frame(kMacB, kMacA);
  config.ports[0].egress_queue_bytes = frame.size() * 2;
  config.faults = {{0, spikes(1.0, 1000)}};
  SwitchCore core(config);
  std::vector<PortId> touched;
  for (TimeNs t = 0; t < 5; ++t) core.on_frame(0, frame, t, touched);
  EXPECT_EQ(core.held_frames(0), 2u);
  EXPECT_EQ(core.counters(0).drops_queue_full, 3u);
  core.release_held(1000, touched);
  EXPECT_EQ(core.queued_frames(1), 2u);
}

TEST(SwitchFaults, LinkDownAsAFaultDropsWhatTheLinkCarriedAndUpRestoresIt) {
  SwitchCore core = faulty_switch(spikes(1.0, 1000));
  std::vector<PortId> touched;
  core.on_frame(0, fabric_frame(kMacB, kMacA), 0, touched);
  core.on_frame(0, fabric_frame(kMacB, kMacA), 1, touched);
  core.on_frame(1, fabric_frame(kMacA, kMacB), 2, touched);
  ASSERT_EQ(core.held_frames(0), 2u);
  ASSERT_EQ(core.queued_frames(0), 1u);

  PortFaults down;
  down.link_down = true;
  core.set_faults(0, down);
  EXPECT_FALSE(core.port_up(0));
  EXPECT_TRUE(core.faults(0).link_down);
  // Held (still on the link) and queued frames are gone, and counted.
  EXPECT_EQ(core.held_frames(0), 0u);
  EXPECT_EQ(core.queued_frames(0), 0u);
  EXPECT_EQ(core.counters(0).drops_link_down, 3u);
  EXPECT_EQ(core.next_release_ns(), kNoRelease);
  EXPECT_FALSE(core.ingress_stalled(0, 10));
  core.on_frame(0, fabric_frame(kMacB, kMacA), 20, touched);
  core.on_frame(1, fabric_frame(kMacA, kMacB), 20, touched);
  EXPECT_EQ(core.counters(0).drops_link_down, 5u);
  core.release_held(5000, touched);
  EXPECT_EQ(core.queued_frames(1), 0u);

  core.set_faults(0, PortFaults{});
  EXPECT_TRUE(core.port_up(0));
  core.on_frame(0, fabric_frame(kMacB, kMacA), 30, touched);
  core.on_frame(1, fabric_frame(kMacA, kMacB), 30, touched);
  EXPECT_EQ(core.queued_frames(1), 1u);
  EXPECT_EQ(core.queued_frames(0), 1u);
}

TEST(SwitchFaults, SetFaultsAtRunTimeChangesWhatThePortInjectsAndBadValuesNameTheField) {
  SwitchCore core = faulty_switch({});
  std::vector<PortId> touched;
  core.on_frame(0, fabric_frame(kMacB, kMacA), 0, touched);
  EXPECT_EQ(core.queued_frames(1), 1u);
  core.set_faults(0, {1.0, 0.0, 0.0});
  EXPECT_EQ(core.faults(0).drop_rate, 1.0);
  core.on_frame(0, fabric_frame(kMacB, kMacA), 1, touched);
  EXPECT_EQ(core.queued_frames(1), 1u);
  EXPECT_EQ(core.counters(0).faults_dropped, 1u);
  core.set_faults(0, {});
  core.on_frame(0, fabric_frame(kMacB, kMacA), 2, touched);
  EXPECT_EQ(core.queued_frames(1), 2u);

  auto message = [&core](const PortFaults& faults) -> std::string {
    try {
      core.set_faults(0, faults);
    } catch (const std::invalid_argument& error) {
      return error.what();
    }
    return "";
  };
  EXPECT_NE(message(spikes(2.0, 10)).find("delay_spike_rate"), std::string::npos);
  EXPECT_NE(message(spikes(0.5, kMaxDelaySpikeNs + 1)).find("delay_spike_ns"), std::string::npos);
  EXPECT_NE(message({0.0, std::numeric_limits<double>::quiet_NaN(), 0.0}).find("corrupt_rate"),
            std::string::npos);
  EXPECT_EQ(core.faults(0), PortFaults{});  // a refused change changes nothing
}

}  // namespace
}  // namespace ethx

namespace ethx {
namespace {

// Frames of every verdict, fed once as bytes and once with headers read beforehand.
std::vector<wire::Frame> frames_of_every_verdict() {
  std::vector<wire::Frame> frames;
  frames.push_back(fabric_frame(kMacB, kMacA));                 // forwarded
  frames.push_back(fabric_frame_claiming(kMacB, kMacC, 3, 2));  // spoofed source MAC
  frames.push_back(fabric_frame_claiming(kMacB, kMacA, 2, 2));  // spoofed source GPU
  frames.push_back(fabric_frame(kMacA, kMacA));                 // hairpin
  frames.push_back(garbage(10));                                // truncated Ethernet
  wire::Frame bad_body = fabric_frame(kMacB, kMacA);
  bad_body[wire::kBodyOffset] = std::byte{0xEE};  // unknown opcode
  frames.push_back(bad_body);
  const std::array<std::byte, 46> body{};
  frames.push_back(raw_frame(kMacB, kMacA, kEtherTypeIpv4, body));  // not ours: switched
  return frames;
}

TEST(SwitchCore, HeadersReadBeforehandGiveTheSameVerdictsCountersAndQueues) {
  SwitchCore by_bytes = secured_switch();
  SwitchCore by_read = secured_switch();
  std::vector<PortId> touched_bytes;
  std::vector<PortId> touched_read;
  for (wire::Frame frame : frames_of_every_verdict()) {
    wire::Frame copy = frame;
    by_bytes.on_owned_frame(0, frame, 0, touched_bytes);
    const SwitchCore::IngressRead read = SwitchCore::read_ingress(copy, by_read.crc());
    by_read.on_owned_frame(0, copy, read, 0, touched_read);
  }
  EXPECT_EQ(touched_read, touched_bytes);
  const PortCounters& a = by_bytes.counters(0);
  const PortCounters& b = by_read.counters(0);
  EXPECT_EQ(b.drops_spoofed, a.drops_spoofed);
  EXPECT_EQ(a.drops_spoofed, 2u);
  EXPECT_EQ(b.drops_malformed, a.drops_malformed);
  EXPECT_EQ(a.drops_malformed, 2u);
  EXPECT_EQ(b.drops_hairpin, a.drops_hairpin);
  EXPECT_EQ(a.drops_hairpin, 1u);
  for (std::size_t reason = 0; reason < a.malformed_by_reason.size(); ++reason) {
    EXPECT_EQ(b.malformed_by_reason[reason], a.malformed_by_reason[reason]) << reason;
  }
  EXPECT_EQ(by_read.queued_frames(1), by_bytes.queued_frames(1));
  EXPECT_EQ(by_bytes.queued_frames(1), 2u);
}

TEST(SwitchCore, HeadersReadUnderAnotherCrcAreReadAgain) {
  // Read as if CRCs were off: the switch checks them, and a frame with a bad CRC is still
  // malformed.
  SwitchCore core(config_with_ports(2, true));
  ASSERT_EQ(core.crc(), wire::Crc::kOn);
  std::vector<PortId> touched;
  wire::Frame frame = fabric_frame(kMacB, kMacA);
  frame.back() ^= std::byte{0x01};  // the CRC's last byte
  const SwitchCore::IngressRead read = SwitchCore::read_ingress(frame, wire::Crc::kOff);
  ASSERT_EQ(read.fabric_error, wire::DecodeError::kOk);
  core.on_owned_frame(0, frame, read, 0, touched);
  EXPECT_EQ(core.counters(0).drops_malformed, 1u);
  EXPECT_TRUE(touched.empty());
}

}  // namespace
}  // namespace ethx
