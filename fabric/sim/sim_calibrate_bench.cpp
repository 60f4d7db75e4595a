#include "fabric/sim/sim_calibrate_bench.hpp"

#include <algorithm>
#include <array>

#include "fabric/sim/sim_link.hpp"
#include "packet-engine/wire.hpp"

namespace ethx::sim {
namespace {

using nlohmann::json;

constexpr QuickBenchPlan kPlan;
// fabric/node/node_runtime.cpp: an echo frame's payload.
constexpr std::size_t kEchoPayloadBytes = 46;

// The value at a dotted path ("store_bandwidth_gbps.64"), which must be a number.
double number_at(const json& report, const std::string& path) {
  const json* node = &report;
  std::size_t from = 0;
  while (from <= path.size()) {
    const std::size_t dot = std::min(path.find('.', from), path.size());
    const std::string part = path.substr(from, dot - from);
    if (!node->is_object() || !node->contains(part)) {
      throw CalibrationError("the bench report has no field \"" + path + "\"");
    }
    node = &(*node)[part];
    from = dot + 1;
  }
  if (!node->is_number()) {
    throw CalibrationError("field \"" + path + "\" of the bench report is not a number");
  }
  const double value = node->get<double>();
  if (!(value > 0)) {
    throw CalibrationError("field \"" + path + "\" of the bench report must be positive (got " +
                           node->dump() + ")");
  }
  return value;
}

SimRequest stream(StreamOp op, std::uint64_t bytes, std::uint64_t ops, std::uint32_t window,
                  bool every_gpu = false) {
  SimRequest request;
  request.workload = WorkloadKind::kStream;
  request.bytes = bytes;
  const std::uint32_t per_poll = op == StreamOp::kPostedWrite ? kPlan.stores_per_poll : 1;
  request.stream = StreamParams{op, ops, window, every_gpu, per_poll};
  return request;
}

SimRequest latency(WorkloadKind kind, std::uint64_t bytes, std::uint64_t samples) {
  SimRequest request;
  request.workload = kind;
  request.bytes = bytes;
  request.repeat = std::max<std::uint64_t>(1, samples / kLoadsPerRepeat);
  return request;
}

void add(BenchData& data, const json& report, const std::string& key, Metric metric,
         const SimRequest& experiment, bool fitted) {
  data.figures.push_back(BenchFigure{key, number_at(report, key), metric, experiment, fitted});
}

void read_load_store(const json& report, BenchData& data) {
  data.frame_bytes_max = static_cast<std::uint32_t>(number_at(report, "frame_bytes_max"));
  // Over a socket transport the baseline is the bare forwarder; the echo through ethx-switch
  // is then its own field.
  const std::string echo =
      report.contains("switch_echo_rtt_ns") ? "switch_echo_rtt_ns.p50" : "baseline_rtt_ns.p50";
  add(data, report, echo, Metric::kEchoRttNs, SimRequest{}, true);
  add(data, report, "load_latency_ns.p50", Metric::kP50Ns,
      latency(WorkloadKind::kReadLatency, 8, kPlan.latency_samples), true);
  for (std::uint32_t size : {64u, 256u, 1024u, 4096u}) {
    add(data, report, "store_bandwidth_gbps." + std::to_string(size), Metric::kGbps,
        stream(StreamOp::kPostedWrite, size, kPlan.store_total_bytes / size, 1),
        size == 64 || size == 4096);
  }
  add(data, report, "read_bandwidth_gbps", Metric::kGbps,
      stream(StreamOp::kRead, kPlan.read_size_bytes, kPlan.read_total_bytes / kPlan.read_size_bytes,
             kPlan.read_outstanding),
      false);
  add(data, report, "atomic_rate_mops", Metric::kMops,
      stream(StreamOp::kAtomic, 8, kPlan.atomic_count, kPlan.atomic_outstanding), false);
  const auto window = static_cast<std::uint32_t>(data.gpus);  // only the flushes wait
  add(data, report, "all_to_all_gbps", Metric::kGbps,
      stream(StreamOp::kPostedWrite, kPlan.all_to_all_store_bytes,
             kPlan.all_to_all_bytes_per_peer / kPlan.all_to_all_store_bytes, window, true),
      false);
  data.not_modelled.push_back(
      "p99 latencies: the model has no noise (OS scheduling, other processes)");
}

void read_roce(const json& report, BenchData& data) {
  constexpr std::array<std::uint32_t, 5> kSizes = {8, 64, 512, 4096, 65536};
  for (const char* op : {"write", "read"}) {
    const bool write = op == std::string("write");
    for (std::uint32_t size : kSizes) {
      add(data, report, std::string(op) + "_latency_ns." + std::to_string(size) + ".p50",
          Metric::kP50Ns,
          latency(write ? WorkloadKind::kWriteLatency : WorkloadKind::kReadLatency, size,
                  kPlan.roce_latency_samples),
          write && size == 64);
    }
  }
  for (const char* op : {"write", "read"}) {
    const bool write = op == std::string("write");
    for (std::uint32_t size : kSizes) {
      const std::uint64_t total =
          std::clamp<std::uint64_t>(kPlan.roce_bandwidth_ops * size, kPlan.roce_bandwidth_min_bytes,
                                    kPlan.roce_bandwidth_max_bytes) /
          size;
      const auto window = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(
          kPlan.roce_max_inflight_bytes / size, 1, kPlan.roce_outstanding));
      add(data, report, std::string(op) + "_bandwidth_gbps." + std::to_string(size), Metric::kGbps,
          stream(write ? StreamOp::kWrite : StreamOp::kRead, size, total, window),
          write && (size == 8 || size == 65536));
    }
  }
  add(data, report, "message_rate_mops.batch_1", Metric::kMops,
      stream(StreamOp::kWrite, 8, kPlan.roce_rate_count, kPlan.roce_rate_outstanding), false);
  add(data, report, "all_to_all_gbps", Metric::kGbps,
      stream(StreamOp::kWrite, kPlan.roce_all_to_all_write_bytes,
             kPlan.roce_all_to_all_bytes_per_peer / kPlan.roce_all_to_all_write_bytes,
             kPlan.roce_all_to_all_outstanding, true),
      false);
  data.not_modelled.push_back(
      "message_rate_mops.batch_16 and many_qps: doorbell batching (one doorbell for several "
      "WRs) is not modelled; every simulated WR rings its own");
  data.not_modelled.push_back(
      "p99 latencies: the model has no noise (OS scheduling, other processes)");
}

}  // namespace

BenchData read_bench_report(const json& report) {
  if (!report.is_object()) throw CalibrationError("the bench report is not a JSON object");
  BenchData data;
  if (report.contains("engine")) {
    if (!report["engine"].is_string() || report["engine"].get<std::string>() != "roce") {
      throw CalibrationError("field \"engine\" of the bench report must be \"roce\" (got " +
                             report["engine"].dump() + ")");
    }
    data.engine = SimEngine::kRoce;
  }
  // Reports from before the field existed say nothing: their experiments are taken as --quick's.
  if (report.contains("quick") && report["quick"] != true) {
    throw CalibrationError(
        "field \"quick\" of the bench report is " + report["quick"].dump() +
        ": --calibrate reproduces the experiments of `ethx bench --quick --json`");
  }
  data.gpus = static_cast<std::size_t>(number_at(report, "gpus"));
  if (data.gpus < 2) throw CalibrationError("field \"gpus\" of the bench report must be >= 2");
  if (report.contains("transport") && report["transport"].is_string()) {
    data.transport = report["transport"].get<std::string>();
  }
  if (data.engine == SimEngine::kRoce) {
    read_roce(report, data);
  } else {
    read_load_store(report, data);
  }
  for (BenchFigure& figure : data.figures) figure.experiment.engine = data.engine;
  return data;
}

double model_echo_rtt_ns(const TopologyConfig& config) {
  const std::array<std::byte, kEchoPayloadBytes> payload{};
  const std::size_t frame_bytes = wire::make_echo_frame(MacAddr{}, MacAddr{}, payload).size();
  const double serialization_ns =
      static_cast<double>(serialization_ps(frame_bytes, config.link_rate_gbps)) / 1000.0;
  const double one_way_ns = 2.0 * static_cast<double>(config.sim_nic_latency_ns) +
                            2.0 * serialization_ns +
                            2.0 * static_cast<double>(config.link_propagation_ns) +
                            static_cast<double>(config.switch_forwarding_latency_ns);
  return 2.0 * one_way_ns;
}

double figure_of(Metric metric, const SimReport& report) {
  const double makespan_us = static_cast<double>(report.makespan_ps) / 1e6;
  switch (metric) {
    case Metric::kP50Ns:
      return static_cast<double>(report.latency_p50_ps) / 1000.0;
    case Metric::kGbps:
      return report.bandwidth_gbps();
    case Metric::kMops:
      return makespan_us > 0 ? static_cast<double>(report.ops_ok) / makespan_us : 0.0;
    case Metric::kEchoRttNs:
      break;
  }
  return 0.0;
}

}  // namespace ethx::sim
