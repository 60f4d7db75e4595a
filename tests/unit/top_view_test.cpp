// `ethx top`'s arithmetic (fabric/cli/top_view.hpp): rates from two readings of the switch's
// counters, drops grouped by reason, a restarted switch, the page and the JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "fabric/cli/top_view.hpp"

namespace ethx {
namespace {

using nlohmann::json;

json reading(std::uint64_t rx_frames, std::uint64_t rx_bytes, std::uint64_t drops_queue_full,
             const std::string& link = "up") {
  return {{"ports",
           {{{"port", 0},
             {"rx_frames", rx_frames},
             {"tx_frames", 2 * rx_frames},
             {"rx_bytes", rx_bytes},
             {"tx_bytes", 0},
             {"queued_bytes", 4096},
             {"queue_bytes_high_water", 8192},
             {"drops_queue_full", drops_queue_full},
             {"drops_malformed", 1},
             {"drops_spoofed", 2},
             {"faults_dropped", 3},
             {"faults", {{"link", link}}}},
            {{"port", 1}, {"rx_frames", 5}}}}};
}

TEST(TopView, RatesAreTheCountersGrowthOverTheInterval) {
  const json before = reading(1000, 1'000'000, 10);
  json after = reading(3000, 251'000'000, 14, "down");
  after["ports"].erase(1);  // a port missing from one reading is left out
  const auto rows = port_rates(before, after, 0.5);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].rx_frames_per_s, 4000.0);
  EXPECT_DOUBLE_EQ(rows[0].tx_frames_per_s, 8000.0);
  EXPECT_DOUBLE_EQ(rows[0].rx_gbps, 250e6 * 8 / 0.5 / 1e9);  // 4 Gbit/s
  EXPECT_EQ(rows[0].drops_queue_full, 4u);
  EXPECT_EQ(rows[0].drops_malformed, 0u);  // unchanged counters: no new drops
  EXPECT_EQ(rows[0].drops_other, 0u);
  EXPECT_EQ(rows[0].queued_bytes, 4096u);
  EXPECT_FALSE(rows[0].link_up);
}

TEST(TopView, ARestartedSwitchCountsFromZeroAndThePageShowsEveryPort) {
  const auto rows = port_rates(reading(5000, 0, 9), reading(100, 0, 2), 1.0);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(rows[0].rx_frames_per_s, 100.0);  // not a negative or wrapped rate
  EXPECT_EQ(rows[0].drops_queue_full, 2u);
  const std::string page = format_top("f1", rows, 1.0);
  EXPECT_NE(page.find("ethx top: 'f1', 2 ports"), std::string::npos) << page;
  EXPECT_NE(page.find("\n0       up         100"), std::string::npos) << page;
  EXPECT_NE(page.find("\nall "), std::string::npos) << page;
  const json doc = top_json(rows, 1.0);
  EXPECT_EQ(doc["ports"].size(), 2u);
  EXPECT_EQ(doc["ports"][0]["drops"]["queue_full"], 2);
  EXPECT_EQ(doc["ports"][0]["link"], "up");
}

}  // namespace
}  // namespace ethx

namespace ethx {
namespace {

TEST(TopView, LinkLevelRetryShowsReplaysAndNaksOnlyOnPortsThatRunIt) {
  nlohmann::json before = reading(10, 0, 0);
  nlohmann::json after = reading(20, 0, 0);
  before["ports"][0]["link_retry"] = {{"frames_replayed", 5}, {"naks_sent", 1}};
  after["ports"][0]["link_retry"] = {{"frames_replayed", 12}, {"naks_sent", 3}};
  const auto rows = port_rates(before, after, 1.0);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].link_retry);
  EXPECT_EQ(rows[0].frames_replayed, 7u);
  EXPECT_EQ(rows[0].naks_sent, 2u);
  EXPECT_FALSE(rows[1].link_retry);
  const std::string page = format_top("f1", rows, 1.0);
  EXPECT_NE(page.find("replay"), std::string::npos) << page;
  EXPECT_NE(page.find("        7        2        -        -\n"), std::string::npos) << page;
  EXPECT_NE(page.find("        -        -        -        -\n"), std::string::npos) << page;
  const nlohmann::json doc = top_json(rows, 1.0);
  EXPECT_EQ(doc["ports"][0]["link_retry"]["frames_replayed"], 7);
  EXPECT_FALSE(doc["ports"][1].contains("link_retry"));
}

TEST(TopView, FlowControlShowsTheSmallerCreditAndTheWaitsOnlyOnPortsThatRunIt) {
  nlohmann::json before = reading(10, 0, 0);
  nlohmann::json after = reading(20, 0, 0);
  before["ports"][0]["flow_control"] = {{"frames_held", 4},
                                        {"credit_bytes", {{"requests", 65536}, {"responses", 0}}}};
  after["ports"][0]["flow_control"] = {
      {"frames_held", 10}, {"credit_bytes", {{"requests", 1200}, {"responses", 65536}}}};
  const auto rows = port_rates(before, after, 1.0);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].flow_control);
  EXPECT_EQ(rows[0].credit_bytes, 1200u) << "the class closer to running out";
  EXPECT_EQ(rows[0].frames_held, 6u);
  EXPECT_FALSE(rows[1].flow_control);
  const std::string page = format_top("f1", rows, 1.0);
  EXPECT_NE(page.find("credit B"), std::string::npos) << page;
  EXPECT_NE(page.find("     1200        6\n"), std::string::npos) << page;
  const nlohmann::json doc = top_json(rows, 1.0);
  EXPECT_EQ(doc["ports"][0]["flow_control"]["credit_bytes"], 1200);
  EXPECT_FALSE(doc["ports"][1].contains("flow_control"));
}

TEST(TopView, TheIntervalIsTheSwitchsOwnBetweenItsReadings) {
  const nlohmann::json first = {{"published_ns", 1'000'000'000}};
  const nlohmann::json second = {{"published_ns", 1'750'000'000}};
  EXPECT_DOUBLE_EQ(seconds_between(first, second, 1.0), 0.75);  // not when top looked
  EXPECT_DOUBLE_EQ(seconds_between(second, second, 1.0), 0.0);  // idle: not republished
  EXPECT_DOUBLE_EQ(seconds_between(nlohmann::json::object(), second, 1.0), 1.0);
}

}  // namespace
}  // namespace ethx
