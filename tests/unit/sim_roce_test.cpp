// `ethx sim --engine roce`: the RDMA NIC model on its own (caches, PCIe, processing units), and
// the RoCEv2 engine in modelled time end to end: latency against the hand-computed sum of the
// model's stages, determinism, QPC misses as connections grow, bad options and config.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "fabric/config/topology_config.hpp"
#include "fabric/sim/lru_cache.hpp"
#include "fabric/sim/rnic_model.hpp"
#include "fabric/sim/sim_command.hpp"

namespace ethx::sim {
namespace {

constexpr TimePs kNs = 1000;

TEST(LruCache, EvictsTheLeastRecentlyUsedKey) {
  LruCache cache(2);
  EXPECT_FALSE(cache.access(1));
  EXPECT_FALSE(cache.access(2));
  EXPECT_TRUE(cache.access(1));   // 1 is now the most recent
  EXPECT_FALSE(cache.access(3));  // evicts 2
  EXPECT_TRUE(cache.access(1));
  EXPECT_FALSE(cache.access(2));  // was evicted; evicts 3
  EXPECT_FALSE(cache.access(3));
  EXPECT_EQ(cache.size(), 2u);
}

TEST(LruCache, ACyclicWorkingSetOneLargerThanTheCacheAlwaysMisses) {
  LruCache cache(4);
  int hits = 0;
  for (int round = 0; round < 10; ++round) {
    for (std::uint64_t key = 0; key < 5; ++key) hits += cache.access(key) ? 1 : 0;
  }
  EXPECT_EQ(hits, 0);
  LruCache none(0);
  EXPECT_FALSE(none.access(7));
  EXPECT_FALSE(none.access(7));
}

RnicConfig simple_nic() {
  RnicConfig config;
  config.post_ns = 10;
  config.doorbell_ns = 100;
  config.pcie_rtt_ns = 500;
  config.pcie_rate_gbps = 8.0;  // 1 B per ns: serialization easy to count
  config.pcie_tlp_overhead_bytes = 0;
  config.processing_units = 1;
  config.packet_ns = 20;
  return config;
}

TEST(RnicModel, PostingIsSerialisedAndTheDoorbellIsALatency) {
  RnicModel nic(simple_nic());
  EXPECT_EQ(nic.post(0), 110 * kNs);
  EXPECT_EQ(nic.post(0), 120 * kNs);  // waits for the first WQE write
  EXPECT_EQ(nic.post(1000 * kNs), 1110 * kNs);
  EXPECT_EQ(nic.counters().doorbells, 3u);
}

TEST(RnicModel, AContextMissCostsAPcieRoundTripAndAHitNothing) {
  RnicModel nic(simple_nic());
  const NicAccess qp_only{7, false, 0, 0, 0};
  // Miss: 500 ns round trip + 232 B of QPC at 1 B/ns, then the unit's 20 ns.
  EXPECT_EQ(nic.process(0, qp_only), (500 + 232 + 20) * kNs);
  EXPECT_EQ(nic.process(10'000 * kNs, qp_only), (10'000 + 20) * kNs);
  EXPECT_EQ(nic.counters().qpc_misses, 1u);
  EXPECT_EQ(nic.counters().qpc_hits, 1u);
}

TEST(RnicModel, EveryPageTouchedIsOneTranslation) {
  RnicConfig config = simple_nic();
  config.page_bytes = 4096;
  RnicModel nic(config);
  // 8 KiB from 100: pages 0, 1 and 2, one MPT entry.
  nic.process(0, NicAccess{1, false, 5, 100, 8192});
  EXPECT_EQ(nic.counters().mtt_misses, 3u);
  EXPECT_EQ(nic.counters().mpt_misses, 1u);
  nic.process(1'000'000 * kNs, NicAccess{1, false, 5, 4096, 10});
  EXPECT_EQ(nic.counters().mtt_hits, 1u);
  EXPECT_EQ(nic.counters().mpt_hits, 1u);
}

TEST(RnicModel, OneProcessingUnitServesOnePacketAtATime) {
  RnicModel nic(simple_nic());
  nic.process(0, NicAccess{1, false, 0, 0, 0});  // warm the QPC
  const TimePs at = 100'000 * kNs;
  EXPECT_EQ(nic.process(at, NicAccess{1, false, 0, 0, 0}), at + 20 * kNs);
  EXPECT_EQ(nic.process(at, NicAccess{1, false, 0, 0, 0}), at + 40 * kNs);
}

TEST(RnicModel, ReadTagsBoundTheDmaReadsInFlight) {
  RnicConfig config = simple_nic();
  config.pcie_read_tags = 1;
  RnicModel nic(config);
  EXPECT_EQ(nic.dma_read(0, 8), 508 * kNs);
  EXPECT_EQ(nic.dma_read(0, 8), 1016 * kNs);  // waits for the only tag
  config.pcie_read_tags = 2;
  RnicModel two(config);
  two.dma_read(0, 8);
  EXPECT_EQ(two.dma_read(0, 8), 516 * kNs);  // in parallel, behind the first's data
}

TEST(RnicModel, WritesArePostedAndLandHalfARoundTripLater) {
  RnicModel nic(simple_nic());
  EXPECT_EQ(nic.dma_write(0, 64), (64 + 250) * kNs);
  EXPECT_EQ(nic.write_cqe(0), (64 + 64 + 250) * kNs);  // behind the first write
  EXPECT_EQ(nic.counters().cqes, 1u);
  EXPECT_EQ(nic.counters().dma_writes, 2u);
}

// ---- the engine in modelled time ----

double wire_ns(std::size_t frame_bytes, double rate_gbps) {
  const std::size_t padded = frame_bytes < 60 ? 60 : frame_bytes;
  return static_cast<double>((padded + 8 + 4 + 12) * 8) / rate_gbps;
}

double one_way_ns(const TopologyConfig& c, std::size_t frame_bytes) {
  return 2.0 * static_cast<double>(c.sim_nic_latency_ns) +
         2.0 * static_cast<double>(c.link_propagation_ns) +
         static_cast<double>(c.switch_forwarding_latency_ns) +
         2.0 * wire_ns(frame_bytes, c.link_rate_gbps);
}

double pcie_ns(const RnicConfig& n, std::size_t bytes) {
  return static_cast<double>(bytes + n.pcie_tlp_overhead_bytes) * 8.0 / n.pcie_rate_gbps;
}

// Headers of a RoCEv2 packet: Ethernet 14, IPv4 20, UDP 8, BTH 12; ICRC 4 at the end.
constexpr std::size_t kRoceHeaders = 14 + 20 + 8 + 12 + 4;

// Warm caches, an 8 B inline WRITE: post + doorbell, the NIC's unit, the WRITE one way, the
// responder's unit, the ACK one way, the requester's unit, the CQE written and seen.
double expected_write_ns(const TopologyConfig& c) {
  const RnicConfig& n = c.rnic;
  const double unit = static_cast<double>(n.packet_ns);
  return static_cast<double>(n.post_ns + n.doorbell_ns) + unit +
         one_way_ns(c, kRoceHeaders + 16 + 8) + unit + one_way_ns(c, kRoceHeaders + 4) + unit +
         pcie_ns(n, n.cqe_bytes) + static_cast<double>(n.pcie_rtt_ns) / 2;
}

// An 8 B READ: the request one way, the responder's unit and its DMA read of the data, the
// response one way, the requester's unit, the data written and the CQE behind it.
double expected_read_ns(const TopologyConfig& c) {
  const RnicConfig& n = c.rnic;
  const double unit = static_cast<double>(n.packet_ns);
  return static_cast<double>(n.post_ns + n.doorbell_ns) + unit + one_way_ns(c, kRoceHeaders + 16) +
         unit + static_cast<double>(n.pcie_rtt_ns) + pcie_ns(n, 8) +
         one_way_ns(c, kRoceHeaders + 4 + 8) + unit + pcie_ns(n, 8) + pcie_ns(n, n.cqe_bytes) +
         static_cast<double>(n.pcie_rtt_ns) / 2;
}

SimRequest roce(WorkloadKind workload, std::uint64_t bytes) {
  SimRequest request;
  request.engine = SimEngine::kRoce;
  request.workload = workload;
  request.bytes = bytes;
  return request;
}

void expect_p50_ns(const SimReport& report, double expected_ns) {
  ASSERT_TRUE(report.complete);
  EXPECT_EQ(report.ops_failed, 0u);
  EXPECT_EQ(report.ops_ok, kLoadsPerRepeat);
  EXPECT_NEAR(static_cast<double>(report.latency_p50_ps) / 1000.0, expected_ns, 0.002);
}

TEST(SimRoce, SmallWriteAndReadLatenciesAreTheSumsOfTheirStages) {
  TopologyConfig config = load_topology("");
  config.resize(2);
  expect_p50_ns(simulate(config, roce(WorkloadKind::kWriteLatency, 8)), expected_write_ns(config));
  expect_p50_ns(simulate(config, roce(WorkloadKind::kReadLatency, 8)), expected_read_ns(config));
}

TEST(SimRoce, TheLatencyFollowsTheNicParameters) {
  const TopologyConfig config = parse_topology(
      "[fabric]\ngpus = 2\n[rnic]\npost_ns = 7\ndoorbell_ns = 333\npcie_rtt_ns = 901\n"
      "pcie_rate_gbps = 100\npacket_ns = 13\ncqe_bytes = 128\npcie_tlp_overhead_bytes = 30\n",
      "t.toml");
  expect_p50_ns(simulate(config, roce(WorkloadKind::kWriteLatency, 8)), expected_write_ns(config));
  expect_p50_ns(simulate(config, roce(WorkloadKind::kReadLatency, 8)), expected_read_ns(config));
}

TEST(SimRoce, WithoutInlineTheNicFetchesTheWqeAndThePayload) {
  TopologyConfig config = load_topology("");
  config.resize(2);
  const SimReport inline_report = simulate(config, roce(WorkloadKind::kWriteLatency, 8));
  config.rnic.inline_wqe = false;
  const SimReport fetched = simulate(config, roce(WorkloadKind::kWriteLatency, 8));
  ASSERT_TRUE(fetched.nic && inline_report.nic);
  EXPECT_EQ(inline_report.nic->counters.wqe_fetches, 0u);
  EXPECT_EQ(fetched.nic->counters.wqe_fetches, kLoadsPerRepeat);
  // Two more round trips: the WQE, then the payload.
  const double extra_ns =
      static_cast<double>(fetched.latency_p50_ps - inline_report.latency_p50_ps) / 1000.0;
  EXPECT_GE(extra_ns, 2.0 * static_cast<double>(config.rnic.pcie_rtt_ns));
  EXPECT_LT(extra_ns, 2.0 * static_cast<double>(config.rnic.pcie_rtt_ns) + 10);
}

TEST(SimRoce, TheSameSeedGivesTheSameReport) {
  TopologyConfig config = load_topology("");
  config.resize(16);
  SimRequest request = roce(WorkloadKind::kRandom, 2048);
  request.seed = 5;
  request.repeat = 2;
  const std::string first = to_json(simulate(config, request)).dump();
  EXPECT_EQ(first, to_json(simulate(config, request)).dump());
  EXPECT_NE(first.find("\"engine\":\"roce\""), std::string::npos);
}

TEST(SimRoce, AllToAllAndIncastCompleteWithOneQpPerPeer) {
  TopologyConfig config = load_topology("");
  config.resize(8);
  const SimReport all = simulate(config, roce(WorkloadKind::kAllToAll, 4096));
  ASSERT_TRUE(all.complete);
  EXPECT_EQ(all.ops_ok, 8u * 7u);
  EXPECT_EQ(all.payload_bytes, 8u * 7u * 4096u);
  ASSERT_TRUE(all.nic);
  EXPECT_EQ(all.nic->qps, 8u * 7u);
  EXPECT_EQ(all.nic->max_qps_per_gpu, 7u);
  EXPECT_GT(all.nic->connection_state_bytes_per_gpu, 7u * 100u);
  const SimReport incast = simulate(config, roce(WorkloadKind::kIncast, 65536));
  ASSERT_TRUE(incast.complete);
  EXPECT_EQ(incast.ops_ok, 7u);
  EXPECT_EQ(incast.ops_failed, 0u);
}

// More peers than QPC entries: every packet misses, the processing units wait for PCIe and the
// message rate falls; load/store has no connection state and keeps its rate.
TEST(SimRoce, MessageRateFallsWhenTheQpsOutgrowTheQpcCache) {
  TopologyConfig config = load_topology("");
  config.resize(32);
  config.rnic.qpc_cache_entries = 16;
  const auto run = [&](SimEngine engine, std::size_t peers) {
    SimRequest request;
    request.engine = engine;
    request.workload = WorkloadKind::kMessageRate;
    request.bytes = 8;
    request.peers = peers;
    return simulate(config, request);
  };
  const SimReport few = run(SimEngine::kRoce, 4);
  const SimReport many = run(SimEngine::kRoce, 31);
  ASSERT_TRUE(few.complete && many.complete && few.nic && many.nic);
  EXPECT_EQ(few.peers, 4u);
  EXPECT_LT(many.message_rate_mops(), 0.7 * few.message_rate_mops());
  EXPECT_GT(many.nic->counters.qpc_misses, 10 * few.nic->counters.qpc_misses);
  const SimReport stores_few = run(SimEngine::kLoadStore, 4);
  const SimReport stores_many = run(SimEngine::kLoadStore, 31);
  EXPECT_NEAR(stores_many.message_rate_mops(), stores_few.message_rate_mops(),
              0.05 * stores_few.message_rate_mops());
  EXPECT_FALSE(stores_few.nic.has_value());
}

TEST(SimRoce, MessageRateReadsAreReadsOnBothEngines) {
  TopologyConfig config = load_topology("");
  config.resize(8);
  SimRequest request = roce(WorkloadKind::kMessageRate, 8);
  request.peers = 3;
  const SimReport writes = simulate(config, request);
  request.reads = true;
  const SimReport reads = simulate(config, request);
  ASSERT_TRUE(writes.complete && reads.complete && writes.nic && reads.nic);
  EXPECT_EQ(reads.op, "read");
  EXPECT_EQ(reads.ops_ok, 8 * kMessagesPerRepeat);
  // Every READ's data is read from the responder's memory; inline WRITEs read nothing.
  EXPECT_GE(reads.nic->counters.dma_reads, reads.ops_ok);
  EXPECT_LT(writes.nic->counters.dma_reads, writes.ops_ok / 10);
  request.engine = SimEngine::kLoadStore;
  const SimReport loads = simulate(config, request);
  ASSERT_TRUE(loads.complete);
  EXPECT_EQ(loads.op, "read");
  EXPECT_EQ(loads.ops_ok, 8 * kMessagesPerRepeat);
}

TEST(SimRoce, BadOptionsAndConfigAreNamed) {
  SimOptions options;
  options.gpus = 4;
  options.engine = "ib";
  EXPECT_EQ(run_sim_command(options), 2);
  options.engine = "roce";
  options.peers = 2;  // all-to-all takes no --peers
  EXPECT_EQ(run_sim_command(options), 2);
  options.workload = "message-rate";
  options.op = "atomic";
  EXPECT_EQ(run_sim_command(options), 2);
  try {
    parse_topology("[rnic]\npage_bytes = 5000\n", "t.toml");
    FAIL() << "accepted a page size that is not a power of two";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("rnic.page_bytes"), std::string::npos);
  }
  try {
    parse_topology("[rnic]\nqpc_entries = 5\n", "t.toml");
    FAIL() << "accepted an unknown key";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("rnic.qpc_entries: unknown key"), std::string::npos);
  }
  TopologyConfig config = load_topology("");
  config.resize(4);
  SimRequest request = roce(WorkloadKind::kMessageRate, 8);
  request.peers = 4;  // only 3 others
  EXPECT_THROW(simulate(config, request), std::invalid_argument);
}

}  // namespace
}  // namespace ethx::sim
