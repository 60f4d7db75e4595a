// The report of `ethx bench --vms` without VMs: the JSON and the table built from phase
// results made up here, and the tally of the guests' answers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "fabric/bench/vm_bench_report.hpp"

namespace ethx {
namespace {

using nlohmann::json;

json full_bench(double hbm_p50_ns) {
  return {
      {"latency", {{"local_hbm_load", {{"p50_ns", hbm_p50_ns}, {"p99_ns", 2 * hbm_p50_ns}}}}},
      {"store", {{"gbps", 0.25}}},
      {"atomic", {{"ops_per_s", 2'500'000.0}}},
      {"copy",
       {{{"bytes", 1048576}, {"p50_ns", 90000}, {"p99_ns", 95000}, {"samples", 10}, {"gbps", 3.0}},
        {{"bytes", 4096}, {"p50_ns", 6000}, {"p99_ns", 7000}, {"samples", 100}, {"gbps", 1.0}}}}};
}

json latency_pass(double load_p50_ns, double trap_ns) {
  return {{"latency", {{"window_load", {{"p50_ns", load_p50_ns}, {"p99_ns", load_p50_ns + 500}}}}},
          {"mmio_trap_ns", trap_ns}};
}

// Two VMs of two GPUs; two latency rounds; VM 1's all-to-all failed.
VmBenchResults two_vm_results() {
  VmBenchResults results;
  results.vms = 2;
  results.gpus_per_vm = 2;
  results.transport = "shm";
  results.benches = {full_bench(400), full_bench(600)};
  results.latency.passes = {latency_pass(3000, 1000), latency_pass(5000, 1000),
                            latency_pass(4000, 1000), json::object()};
  results.latency.baseline = {1000, 1500, {1000, 1000}};
  results.latency.host_read_gbps = 2.0;
  results.all_to_all.per_vm = {{{"gbps", 1.5}}, json()};
  results.all_to_all.bytes_per_peer = 4096;
  results.tally.verified_ops = 1000;
  results.tally.failures = {"VM 1: timed out"};
  results.ready_seconds = 10;
  results.wall_seconds = 60;
  return results;
}

TEST(VmBenchReport, LatenciesAreMediansOverThePassesThatHaveThem) {
  const json report = vm_bench_report(two_vm_results());
  EXPECT_EQ(report["gpus"], 4);
  EXPECT_EQ(report["load_latency_ns"]["p50"], 4000);  // the empty pass is left out
  EXPECT_EQ(report["load_latency_ns"]["p99"], 4500);
  EXPECT_EQ(report["mmio_trap_ns"], 1000);
  EXPECT_EQ(report["hbm_load_ns"]["p50"], 500);
  ASSERT_EQ(report["latency_passes"].size(), 4u);
  EXPECT_EQ(report["latency_passes"][1]["vm"], 1);
  EXPECT_EQ(report["latency_passes"][2]["vm"], 0);
  EXPECT_EQ(report["latency_passes"][3]["load_p50_ns"], 0);
  EXPECT_EQ(report["baseline_rtt_ns"]["p99"], 1500);
  EXPECT_EQ(report["baseline_rtt_ns"]["round_p50s"].size(), 2u);
  EXPECT_DOUBLE_EQ(report["load_to_baseline_p50"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(report["load_to_trap_plus_baseline_p50"].get<double>(), 2.0);
}

TEST(VmBenchReport, BandwidthsAreVmZerosAndTheAllToAllSumsTheVmsThatAnswered) {
  const json report = vm_bench_report(two_vm_results());
  EXPECT_DOUBLE_EQ(report["store_bandwidth_gbps"]["8"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(report["atomic_rate_mops"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(report["copy_bandwidth_gbps"]["1048576"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(report["copy_4k_to_load_p50"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(report["copy_1m_to_host_read_bandwidth"].get<double>(), 1.5);
  EXPECT_EQ(report["host_read_bytes"], kVmBenchHostReadBytes);
  EXPECT_DOUBLE_EQ(report["all_to_all_gbps"].get<double>(), 1.5);
  ASSERT_EQ(report["guests"].size(), 2u);
  EXPECT_TRUE(report["guests"][1]["alltoall"].is_null());
  EXPECT_FALSE(report.contains("switch"));  // no counters: no key
}

TEST(VmBenchReport, TheTableListsCopiesBySizeAndEndsWithTheFailures) {
  const std::string text = vm_bench_text(vm_bench_report(two_vm_results()), "/tmp/ethx-v1");
  EXPECT_EQ(text.rfind("ethx bench: 2 VMs x 2 GPUs over shm (in-guest, TCG;", 0), 0u) << text;
  const std::size_t small = text.find("copy engine, 4096 B");
  const std::size_t large = text.find("copy engine, 1048576 B");
  ASSERT_NE(small, std::string::npos) << text;
  ASSERT_NE(large, std::string::npos) << text;
  EXPECT_LT(small, large) << "sizes sort as numbers, not as text";
  EXPECT_NE(text.find("all-to-all 8 B stores"), std::string::npos) << text;
  EXPECT_NE(text.find("(aggregate, 4 GPUs)"), std::string::npos) << text;
  EXPECT_NE(text.find("verified ops 1000, mismatches 0, errors 0, 60.0 s (ready after 10.0 s)"),
            std::string::npos)
      << text;
  const std::string ending = "FAILED: VM 1: timed out\nconsoles and logs kept in /tmp/ethx-v1\n";
  ASSERT_GE(text.size(), ending.size());
  EXPECT_EQ(text.substr(text.size() - ending.size()), ending);
  EXPECT_EQ(vm_bench_text(vm_bench_report(two_vm_results()), "").find("kept in"),
            std::string::npos);
}

TEST(VmBenchReport, TheTableKeepsALongFailureWhole) {
  VmBenchResults results = two_vm_results();
  const std::string output(1000, 'x');
  results.tally.failures = {"VM 0: " + output};
  const std::string text = vm_bench_text(vm_bench_report(results), "");
  EXPECT_NE(text.find("FAILED: VM 0: " + output + "\n"), std::string::npos);
}

TEST(GuestTally, AddsTheCountsAndNamesCommandsThatFailed) {
  GuestTally tally;
  const json first = tally.account(
      0, "bench", {"booting\n{\"verified_ops\": 7, \"mismatches\": 1, \"errors\": 2}\n", 0});
  EXPECT_EQ(first["verified_ops"], 7);
  EXPECT_TRUE(tally.failures.empty());
  EXPECT_TRUE(tally.account(1, "alltoall", {"no json here\n", 3}).is_null());
  EXPECT_EQ(tally.verified_ops, 7u);
  EXPECT_EQ(tally.mismatches, 1u);
  EXPECT_EQ(tally.errors, 2u);
  ASSERT_EQ(tally.failures.size(), 1u);
  EXPECT_EQ(tally.failures[0], "VM 1: `ethx-guest alltoall` exited 3: no json here\n");
  EXPECT_FALSE(tally.passed());
}

TEST(GuestTally, PassesOnlyWhenSomethingVerifiedAndNothingWentWrong) {
  GuestTally tally;
  EXPECT_FALSE(tally.passed());  // nothing verified
  tally.account(0, "bench", {"{\"verified_ops\": 1}\n", 0});
  EXPECT_TRUE(tally.passed());
  tally.account(0, "bench", {"{\"verified_ops\": 1, \"errors\": 1}\n", 0});
  EXPECT_FALSE(tally.passed());
}

}  // namespace
}  // namespace ethx
