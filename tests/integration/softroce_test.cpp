// Soft-RoCE on the ethx switch (docs/softroce.md): two VMs whose virtio-net NICs are taps joined
// to the switch as unbound AF_PACKET ports (`ethx up --vms 2 --guest-nics`), rdma_rxe in each.
// One fabric for the whole suite (TCG, as root; ctest label `vm`):
//   - the guests reach each other through the switch (ping) and the switch counted the frames
//     on the tap ports;
//   - ib_write_lat with a small -n between the VMs completes and reports a latency;
//   - ethx's RoCEv2 engine on the switch's host port completes an RDMA WRITE and an RDMA READ
//     against rdma_rxe in VM 0, data verified by the engine and by the guest;
//   - run_softroce_suite(--quick) on that fabric returns the schema `ethx compare` reads, with
//     the load/store benches of the same two VMs as a second, verified system object;
//   - `ethx down` removes the taps and namespaces it made.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "fabric/bench/vm_bench.hpp"
#include "fabric/compare/softroce_interop.hpp"
#include "fabric/compare/softroce_suite.hpp"
#include "fabric/control/run_state.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/vm/guest_agent.hpp"
#include "fabric/vm/vm_plan.hpp"
#include "tests/integration/guest_nic_support.hpp"
#include "tests/integration/vm_test_support.hpp"

namespace ethx {
namespace {

using nlohmann::json;

constexpr std::int64_t kCommandTimeoutMs = 120'000;

std::string ethx_binary() {
  return std::string(ETHX_BIN_DIR) + "/ethx";
}

class SoftRoce : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::geteuid() != 0) return;
    // A run-directory root of the suite's own (ETHX_RUN_DIR), removed at the end with the
    // lock files `ethx down` leaves.
    std::string missing;
    run_root_ = test::make_suite_run_root("ethx-srxe", missing);
    if (run_root_.empty()) {
      up_output_ = missing;
      return;
    }
    name_ = "srxe-t" + std::to_string(::getpid() % 100000);
    const test::ProcessResult up =
        test::run_with_deadline({ethx_binary(), "up", "--name", name_, "--vms", "2",
                                 "--gpus-per-vm", "1", "--guest-nics", "--transport", "afpacket"},
                                std::chrono::seconds(240));
    up_output_ = up.output;
    if (up.exit_status != 0) return;
    RunDirectory directory(name_);
    const std::optional<RunState> state = directory.load();
    if (!state) return;
    tag_ = state->netns_tag;
    logs_ = directory.path();
    up_ = true;
  }

  static void TearDownTestSuite() {
    if (name_.empty()) return;
    const test::ProcessResult down = test::run_with_deadline(
        {ethx_binary(), "down", "--name", name_}, std::chrono::seconds(120));
    EXPECT_EQ(down.exit_status, 0) << down.output;
    if (!tag_.empty()) {
      // The taps lived in the switch namespace; nothing of this run may be left anywhere.
      for (const std::string& ns : netns::list_namespaces()) {
        EXPECT_NE(ns.rfind(netns::run_prefix(tag_), 0), 0u) << "left behind: " << ns;
      }
      for (const std::string& link : netns::list_interfaces()) {
        EXPECT_NE(link.rfind(netns::run_prefix(tag_), 0), 0u) << "left behind: " << link;
      }
    }
    test::remove_suite_run_root(run_root_);
  }

  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (taps, namespaces, AF_PACKET)";
    const std::string missing = test::missing_guest_nic_image();
    ASSERT_TRUE(missing.empty()) << missing;
    ASSERT_TRUE(up_) << "ethx up --vms 2 --guest-nics failed:\n" << up_output_;
  }

  static std::unique_ptr<GuestAgent> agent(std::size_t vm) {
    return std::make_unique<GuestAgent>(logs_, vm, 10'000);
  }

  static inline std::string name_, tag_, logs_, up_output_;
  static inline std::filesystem::path run_root_;
  static inline bool up_ = false;
};

TEST_F(SoftRoce, GuestsPingEachOtherThroughTheSwitch) {
  auto vm0 = agent(0);
  const GuestBlock ping = vm0->run("!ping -c 3 -W 10 " + guest_nic_ip(1), kCommandTimeoutMs);
  EXPECT_EQ(ping.exit_status, 0) << ping.output;
  EXPECT_NE(ping.output.find("3 packets received"), std::string::npos) << ping.output;
  // The frames went through the switch: its tap ports (after the 2 GPU ports) counted them.
  // The switch rewrites its counters file every 250 ms at most: poll it, with a deadline.
  json ports;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    const test::ProcessResult status = test::run_with_deadline(
        {ethx_binary(), "status", "--name", name_, "--json"}, std::chrono::seconds(30));
    const json report = json::parse(status.output, nullptr, false);
    ASSERT_FALSE(report.is_discarded()) << status.output;
    ports = report.contains("switch") ? report["switch"]["ports"] : json::array();
    if (ports.size() == 5 && ports[2]["rx_frames"].get<std::uint64_t>() >= 3 &&
        ports[3]["rx_frames"].get<std::uint64_t>() >= 3) {
      break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << status.output;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the poll's period
  }
  EXPECT_EQ(ports.size(), 5u) << "2 GPU ports, 2 taps, the host port";
}

TEST_F(SoftRoce, PerftestWriteLatencyBetweenTheVms) {
  auto vm0 = agent(0);
  auto vm1 = agent(1);
  int gid[2] = {-1, -1};
  for (int vm = 0; vm < 2; ++vm) {
    const GuestBlock info = (vm == 0 ? *vm0 : *vm1).run("!ethx-rdma info", kCommandTimeoutMs);
    gid[vm] = guest_json(info.output).value("gid_index", -1);
    ASSERT_GE(gid[vm], 0) << info.output;
  }
  const std::string common = "ib_write_lat -d rxe0 -F -s 8 -n 200 -p 18700";
  GuestBlock server;
  std::thread server_thread([&] {
    server = vm1->run("!" + common + " -x " + std::to_string(gid[1]), kCommandTimeoutMs);
  });
  // The client retries while the server does not listen yet (refused connection), bounded.
  const GuestBlock client = vm0->run(
      "!i=0; until " + common + " -x " + std::to_string(gid[0]) + " " + guest_nic_ip(1) +
          " >/tmp/t.out 2>&1; do i=$((i+1)); [ $i -ge 300 ] && break; usleep 100000; done; "
          "cat /tmp/t.out",
      kCommandTimeoutMs);
  server_thread.join();
  const json result = parse_perftest_output(client.output, 8);
  ASSERT_FALSE(result.is_null()) << client.output << "\nserver:\n" << server.output;
  EXPECT_EQ(result["iterations"].get<double>(), 200);
  EXPECT_GT(result["t_typical"].get<double>(), 0.0);
  EXPECT_GE(result["p99"].get<double>(), result["t_min"].get<double>());
  EXPECT_EQ(server.exit_status, 0) << server.output;
}

TEST_F(SoftRoce, EngineWritesAndReadsRxeMemoryWithVerifiedData) {
  auto vm0 = agent(0);
  InteropOptions options;
  options.netns_tag = tag_;
  options.vm = 0;
  options.region_bytes = 16384;
  options.write_bytes = 5000;  // not a multiple of the MTU: FIRST, MIDDLE... and a short LAST
  options.seed = 4242;
  const json report = run_roce_interop(*vm0, options);
  EXPECT_TRUE(report["verified"].get<bool>()) << report.dump(2);
  EXPECT_EQ(report["read"]["mismatches"].get<std::size_t>(), 0u) << report.dump(2);
  EXPECT_TRUE(report["guest"]["verified"].get<bool>()) << report.dump(2);
  EXPECT_EQ(report["guest"]["engine_bytes_ok"].get<std::size_t>(), 5000u);
  EXPECT_EQ(report["guest"]["guest_bytes_ok"].get<std::size_t>(), 16384u - 5000u);
  // The wrong-rkey WRITE (0xEE bytes) was NAKed by rxe and changed nothing (the guest's
  // byte check above passed after it).
  EXPECT_EQ(report["bad_rkey_write"]["status"], "remote-access-error") << report.dump(2);
  EXPECT_EQ(report["engine"]["error_naks_received"].get<std::uint64_t>(), 1u);
  EXPECT_EQ(report["engine"]["error_completions"].get<std::uint64_t>(), 1u);
  EXPECT_GE(report["engine"]["arp_replies"].get<std::uint64_t>(), 0u);
  // QPN, PSN, GID and rkey went out of band: the guest's QP saw our address as its peer.
  EXPECT_EQ(report["guest_qp"]["gid"].get<std::string>(), "::ffff:" + guest_nic_ip(0));
}

TEST_F(SoftRoce, QuickSuiteOnTheRunningFabricHasTheCompareSchema) {
  SoftRoceOptions options;
  options.quick = true;
  options.fabric = name_;
  options.quiet = true;
  const json report = run_softroce_suite(options);
  EXPECT_EQ(report["system"], "soft-roce");
  ASSERT_TRUE(report["available"].get<bool>()) << report["reason"];
  EXPECT_EQ(report["reason"], "");
  for (const char* key : {"latency_us", "bandwidth_gbps", "message_rate_mops", "notes"}) {
    ASSERT_TRUE(report[key].is_array()) << key;
  }
  ASSERT_FALSE(report["latency_us"].empty()) << report.dump(2);
  for (const json& row : report["latency_us"]) {
    EXPECT_TRUE(row["op"] == "write" || row["op"] == "read");
    EXPECT_GT(row["p50"].get<double>(), 0.0);
    EXPECT_GE(row["p99"].get<double>(), row["p50"].get<double>() * 0.999);
  }
  ASSERT_FALSE(report["bandwidth_gbps"].empty()) << report.dump(2);
  for (const json& row : report["bandwidth_gbps"]) EXPECT_GT(row["gbps"].get<double>(), 0.0);
  ASSERT_FALSE(report["message_rate_mops"].empty());
  EXPECT_EQ(report["message_rate_mops"][0]["batch"], 1);
  EXPECT_TRUE(report["verified"].get<bool>()) << report.dump(2);
  EXPECT_TRUE(report["details"]["interop"]["verified"].get<bool>())
      << report["details"]["interop"].dump(2);
  // Load/store in the same two VMs: a second system object of the same schema, verified.
  ASSERT_TRUE(report["details"].contains("same_vms_load_store")) << report["details"].dump(2);
  const json& same = report["details"]["same_vms_load_store"];
  EXPECT_EQ(same["system"], "ethx-load-store-vm");
  ASSERT_TRUE(same["available"].get<bool>()) << same.dump(2);
  EXPECT_TRUE(same["verified"].get<bool>()) << same.dump(2);
  ASSERT_FALSE(same["latency_us"].empty()) << same.dump(2);
  EXPECT_EQ(same["latency_us"][0]["op"], "load");
  EXPECT_EQ(same["latency_us"][0]["bytes"], 8);
  EXPECT_GT(same["latency_us"][0]["p50"].get<double>(), 0.0);
  EXPECT_GE(same["latency_us"][0]["p99"].get<double>(), same["latency_us"][0]["p50"].get<double>());
  ASSERT_FALSE(same["bandwidth_gbps"].empty()) << same.dump(2);
  EXPECT_EQ(same["bandwidth_gbps"][0]["op"], "store");
  for (const json& row : same["bandwidth_gbps"]) EXPECT_GT(row["gbps"].get<double>(), 0.0);
  // Both directions ran and checked their data.
  EXPECT_EQ(same["details"]["forward"]["mismatches"], 0) << same.dump(2);
  EXPECT_EQ(same["details"]["reverse"]["mismatches"], 0) << same.dump(2);
  EXPECT_EQ(same["details"]["reverse"]["errors"], 0) << same.dump(2);
  // Exactly the schema's keys, and "details" for everything else.
  for (const auto& [key, value] : report.items()) {
    EXPECT_TRUE(key == "system" || key == "transport" || key == "available" || key == "reason" ||
                key == "latency_us" || key == "bandwidth_gbps" || key == "message_rate_mops" ||
                key == "verified" || key == "notes" || key == "details")
        << key;
  }
}

TEST(SoftRocePerftestParser, ReadsLatencyAndBandwidthTables) {
  const std::string latency =
      " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
      "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n"
      " 8       200          2561.87        35530.41      13281.48  \t       14217.89     "
      "\t6621.53\t\t34929.97 \t\t35530.41\n";
  const json lat = parse_perftest_output(latency, 8);
  ASSERT_FALSE(lat.is_null());
  EXPECT_DOUBLE_EQ(lat["t_typical"].get<double>(), 13281.48);
  EXPECT_DOUBLE_EQ(lat["p99"].get<double>(), 34929.97);
  EXPECT_TRUE(parse_perftest_output(latency, 4096).is_null());
  const std::string bandwidth =
      " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
      " 65536      100              0.08               0.063173            0.000120\n";
  const json bw = parse_perftest_output(bandwidth, 65536);
  ASSERT_FALSE(bw.is_null());
  EXPECT_DOUBLE_EQ(bw["bw_avg_gbps"].get<double>(), 0.063173);
  EXPECT_DOUBLE_EQ(bw["msg_rate_mpps"].get<double>(), 0.000120);
  EXPECT_TRUE(parse_perftest_output("Couldn't connect to 198.18.0.2:18515\n", 8).is_null());
}

}  // namespace
}  // namespace ethx
