// `ethx sim --calibrate`: a bench report made by the simulator itself from known parameters
// calibrates back to those parameters and is predicted with ~0 % error (both engines); bad
// reports name the field; the command line takes --calibrate; the stream workload's
// mechanics; the repeated --quick plan is the bench's.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fabric/bench/bench_plan.hpp"
#include "fabric/cli/sim_options.hpp"
#include "fabric/config/topology_config.hpp"
#include "fabric/sim/sim_calibrate.hpp"

namespace ethx::sim {
namespace {

using nlohmann::json;

constexpr std::size_t kGpus = 4;

// Sets `value` at a dotted path of `report`, making the objects on the way.
void set_at(json& report, const std::string& path, double value) {
  json* node = &report;
  std::size_t from = 0;
  for (std::size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', from)) {
    node = &(*node)[path.substr(from, dot - from)];
    from = dot + 1;
  }
  (*node)[path.substr(from)] = value;
}

// A report with every field the reader needs, each figure 1.
json skeleton(bool roce, const TopologyConfig& config) {
  json report = {{"gpus", kGpus}, {"transport", "shm"}};
  if (roce) {
    report["engine"] = "roce";
    for (const std::string op : {"write", "read"}) {
      for (const std::string size : {"8", "64", "512", "4096", "65536"}) {
        set_at(report, op + "_latency_ns." + size + ".p50", 1);
        set_at(report, op + "_bandwidth_gbps." + size, 1);
      }
    }
    set_at(report, "message_rate_mops.batch_1", 1);
  } else {
    report["frame_bytes_max"] = config.frame_bytes_max;
    set_at(report, "baseline_rtt_ns.p50", 1);
    set_at(report, "load_latency_ns.p50", 1);
    for (const std::string size : {"64", "256", "1024", "4096"}) {
      set_at(report, "store_bandwidth_gbps." + size, 1);
    }
    report["read_bandwidth_gbps"] = 1;
    report["atomic_rate_mops"] = 1;
  }
  report["all_to_all_gbps"] = 1;
  return report;
}

// The report the simulator itself gives under `truth`: what a host with those costs measures.
json synthesised_report(bool roce, const TopologyConfig& truth) {
  json report = skeleton(roce, truth);
  for (const BenchFigure& figure : read_bench_report(report).figures) {
    set_at(report, figure.key, predict(figure, truth));
  }
  return report;
}

void expect_predicted_exactly(const BenchData& data, const Calibration& calibration) {
  std::vector<double> predicted;
  for (const BenchFigure& figure : data.figures) {
    predicted.push_back(predict(figure, calibration.config));
  }
  const CalibrationTable table = make_calibration_table(data, predicted);
  ASSERT_EQ(table.rows.size(), data.figures.size());
  for (const CalibrationRow& row : table.rows) {
    EXPECT_LT(std::abs(row.error_pct), 0.01) << row.key;
  }
  EXPECT_EQ(table.held_out_within_limit, table.held_out);
  EXPECT_GT(table.held_out, 0u);
}

TEST(SimCalibrate, ALoadStoreReportOfTheModelCalibratesBackToItsParameters) {
  TopologyConfig truth = load_topology("", kGpus);
  truth.link_propagation_ns = 0;  // the calibration's mapping (sim_calibrate.cpp)
  truth.switch_forwarding_latency_ns = 0;
  truth.request_timeout_ns = 3'600'000'000'000;
  // The link, not the completer (3 transactions of 650 ns), must bind a 4 KiB store, or the
  // rate is not told by that figure: 4 KiB take 2.8 us at 12 Gbit/s.
  truth.link_rate_gbps = 12.0;
  truth.sim_issue_ns = 310;
  truth.sim_nic_latency_ns = 1900;
  truth.sim_completer_ns = 650;
  const BenchData data = read_bench_report(synthesised_report(false, truth));
  const Calibration calibration = calibrate(data, load_topology("", kGpus));
  EXPECT_NEAR(calibration.config.link_rate_gbps, 12.0, 12e-4);
  EXPECT_EQ(calibration.config.sim_issue_ns, 310);
  EXPECT_EQ(calibration.config.sim_nic_latency_ns, 1900);
  EXPECT_EQ(calibration.config.sim_completer_ns, 650);
  ASSERT_EQ(calibration.fitted.size(), 4u);
  EXPECT_EQ(calibration.fitted[0].fitted_to, "store_bandwidth_gbps.4096");
  EXPECT_EQ(calibration.fitted[1].fitted_to, "store_bandwidth_gbps.64");
  EXPECT_EQ(calibration.fitted[2].fitted_to, "baseline_rtt_ns.p50");
  EXPECT_EQ(calibration.fitted[3].fitted_to, "load_latency_ns.p50");
  expect_predicted_exactly(data, calibration);
}

TEST(SimCalibrate, ARoceReportOfTheModelCalibratesBackToItsParameters) {
  TopologyConfig truth = load_topology("", kGpus);
  truth.link_propagation_ns = 0;
  truth.switch_forwarding_latency_ns = 0;
  truth.request_timeout_ns = 3'600'000'000'000;
  truth.rnic.processing_units = 1;
  truth.rnic.packet_ns = 0;
  truth.rnic.doorbell_ns = 0;
  truth.rnic.pcie_rtt_ns = 0;
  truth.rnic.pcie_rate_gbps = 1e6;
  truth.link_rate_gbps = 12.0;
  truth.rnic.post_ns = 700;
  truth.sim_nic_latency_ns = 2500;
  const BenchData data = read_bench_report(synthesised_report(true, truth));
  ASSERT_EQ(data.engine, SimEngine::kRoce);
  const Calibration calibration = calibrate(data, load_topology("", kGpus));
  EXPECT_NEAR(calibration.config.link_rate_gbps, 12.0, 12e-4);
  EXPECT_EQ(calibration.config.rnic.post_ns, 700);
  EXPECT_EQ(calibration.config.sim_nic_latency_ns, 2500);
  expect_predicted_exactly(data, calibration);
}

std::string error_of(const json& report) {
  try {
    read_bench_report(report);
  } catch (const CalibrationError& error) {
    return error.what();
  }
  return "no error";
}

TEST(SimCalibrate, ABadReportNamesTheField) {
  const TopologyConfig config = load_topology("", kGpus);
  json report = skeleton(false, config);
  report["store_bandwidth_gbps"].erase("4096");
  EXPECT_NE(error_of(report).find("\"store_bandwidth_gbps.4096\""), std::string::npos);
  report = skeleton(false, config);
  report["load_latency_ns"]["p50"] = "fast";
  EXPECT_NE(error_of(report).find("\"load_latency_ns.p50\" of the bench report is not a number"),
            std::string::npos);
  report = skeleton(false, config);
  report.erase("gpus");
  EXPECT_NE(error_of(report).find("\"gpus\""), std::string::npos);
  report = skeleton(false, config);
  report["atomic_rate_mops"] = 0;
  EXPECT_NE(error_of(report).find("\"atomic_rate_mops\" of the bench report must be positive"),
            std::string::npos);
  report = skeleton(true, config);
  report["engine"] = "ib";
  EXPECT_NE(error_of(report).find("\"engine\""), std::string::npos);
  report = skeleton(true, config);
  report["read_latency_ns"]["512"].erase("p50");
  EXPECT_NE(error_of(report).find("\"read_latency_ns.512.p50\""), std::string::npos);
  EXPECT_NE(error_of(json::array()).find("not a JSON object"), std::string::npos);
  report = skeleton(false, config);
  report["quick"] = false;  // a full run's sizes and counts are not the experiments here
  EXPECT_NE(error_of(report).find("field \"quick\" of the bench report is false"),
            std::string::npos);
  report["quick"] = true;
  EXPECT_EQ(error_of(report), "no error");
  report = skeleton(false, config);
  report["frame_bytes_max"] = 9000;
  EXPECT_THROW(calibrate(read_bench_report(report), config), CalibrationError);
}

TEST(SimCalibrate, TheCommandLineTakesCalibrate) {
  const std::vector<const char*> argv = {"sim", "--calibrate", "bench.json", "--json"};
  const SimCommandLine line = parse_sim_command_line(static_cast<int>(argv.size()), argv.data());
  EXPECT_EQ(line.options.calibrate_path, "bench.json");
  EXPECT_TRUE(line.options.json);
  EXPECT_FALSE(line.help);
  const std::vector<const char*> help = {"sim", "--help"};
  const SimCommandLine asked = parse_sim_command_line(2, help.data());
  EXPECT_TRUE(asked.help);
  EXPECT_NE(asked.help_text.find("--calibrate"), std::string::npos);
}

TEST(SimCalibrate, TheCommandRefusesBadFilesAndOtherOptionsWithStatus2) {
  SimOptions options;
  options.calibrate_path = testing::TempDir() + "/no-such-bench.json";
  EXPECT_EQ(run_sim_command(options), 2);
  const std::string garbage = testing::TempDir() + "/garbage-bench.json";
  std::ofstream(garbage) << "{ not json";
  options.calibrate_path = garbage;
  EXPECT_EQ(run_sim_command(options), 2);
  const std::string wrong = testing::TempDir() + "/wrong-bench.json";
  std::ofstream(wrong) << R"({"gpus": 8, "engine": "roce"})";
  options.calibrate_path = wrong;
  EXPECT_EQ(run_sim_command(options), 2);
  options.workload = "incast";  // the experiments are the report's
  EXPECT_EQ(run_sim_command(options), 2);
  std::filesystem::remove(garbage);
  std::filesystem::remove(wrong);
}

TEST(SimCalibrate, APostedStreamIsBoundByItsSlowestStage) {
  TopologyConfig config = load_topology("", 2);
  config.sim_issue_ns = 100;  // 64 B per 100 ns: 5.12 Gbit/s, far below the link
  SimRequest request;
  request.workload = WorkloadKind::kStream;
  request.bytes = 64;
  request.stream = StreamParams{StreamOp::kPostedWrite, 10000, 1, false};
  const SimReport report = simulate(config, request);
  ASSERT_TRUE(report.complete);
  EXPECT_EQ(report.ops_ok, 1u);  // the flush; the posted writes have no completion
  EXPECT_EQ(report.payload_bytes, 640000u);
  // 10000 hand-overs of 100 ns, then the last write's and the flush's way there and back.
  EXPECT_GT(report.makespan_ps, 10000 * 100 * 1000ull);
  EXPECT_LT(report.makespan_ps, 10000 * 100 * 1000ull + 2'000'000);
  request.stream = StreamParams{StreamOp::kRead, 100, 4, false};
  request.bytes = 4096;
  const SimReport reads = simulate(config, request);
  EXPECT_EQ(reads.ops_ok, 100u);
  EXPECT_EQ(reads.payload_bytes, 409600u);
}

TEST(SimCalibrate, ThePlanIsTheBenchsQuickPlan) {
  const BenchPlan bench = bench_plan(true);
  const QuickBenchPlan copy;
  const LoadStoreBenchPlan& ls = bench.load_store;
  EXPECT_EQ(copy.latency_samples, std::uint64_t{ls.latency_rounds} * ls.latency_samples_per_round);
  EXPECT_EQ(copy.store_total_bytes, ls.store_total_bytes);
  EXPECT_EQ(copy.read_size_bytes, ls.read_size_bytes);
  EXPECT_EQ(copy.read_outstanding, ls.read_outstanding);
  EXPECT_EQ(copy.read_total_bytes, ls.read_total_bytes);
  EXPECT_EQ(copy.atomic_count, ls.atomic_count);
  EXPECT_EQ(copy.atomic_outstanding, ls.atomic_outstanding);
  EXPECT_EQ(copy.all_to_all_bytes_per_peer, ls.all_to_all_bytes_per_peer);
  EXPECT_EQ((std::vector<std::uint32_t>{64, 256, 1024, 4096}), ls.store_sizes_bytes);
  const SweepPlan& sweep = bench.sweep;
  EXPECT_EQ(copy.roce_latency_samples, sweep.latency_samples);
  EXPECT_EQ(copy.roce_bandwidth_ops, sweep.bandwidth_ops);
  EXPECT_EQ(copy.roce_bandwidth_min_bytes, sweep.bandwidth_min_bytes);
  EXPECT_EQ(copy.roce_bandwidth_max_bytes, sweep.bandwidth_max_bytes);
  EXPECT_EQ(copy.roce_outstanding, sweep.outstanding);
  EXPECT_EQ(copy.roce_max_inflight_bytes, kMaxInflightBytes);
  EXPECT_EQ(copy.roce_rate_count, sweep.rate_count);
  EXPECT_EQ(copy.roce_all_to_all_bytes_per_peer, sweep.all_to_all_bytes_per_peer);
  EXPECT_EQ((std::vector<std::uint32_t>{8, 64, 512, 4096, 65536}), sweep.latency_sizes);
  EXPECT_EQ(sweep.latency_sizes, sweep.bandwidth_sizes);
}

}  // namespace
}  // namespace ethx::sim
