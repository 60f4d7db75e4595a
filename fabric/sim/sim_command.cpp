#include "fabric/sim/sim_command.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "fabric/platform/huge_page_heap.hpp"
#include "fabric/sim/sim_calibrate.hpp"
#include "fabric/sim/sim_fabric.hpp"
#include "fabric/sim/sim_window_meeting.hpp"

namespace ethx::sim {

SimReport simulate(const TopologyConfig& config, const SimRequest& request) {
  SimFabric fabric(config, request.topology, request.engine, request.partitioning);
  if (request.ignore_core_distance) fabric.ignore_core_distance();
  fabric.schedule_link_faults(request.link_faults);
  WorkloadParams params;
  params.gpus = config.gpu_count;
  params.bytes = request.bytes;
  params.seed = request.seed;
  params.repeat = request.repeat;
  params.peers = request.peers;
  params.reads = request.reads;
  params.stream = request.stream;
  params.hbm_bytes = config.hbm_bytes;
  params.max_op_bytes = fabric.max_op_bytes();
  const auto traffic = make_workload(request.workload, params);
  SimReport report = fabric.run(*traffic, request.threads);
  report.engine = to_string(request.engine);
  report.topology = to_string(request.topology);
  report.workload = to_string(request.workload);
  if (request.workload == WorkloadKind::kMessageRate) {
    report.peers = request.peers == 0 ? config.gpu_count - 1 : request.peers;
  }
  if (request.workload == WorkloadKind::kMessageRate || request.reads) {
    report.op = request.reads ? "read" : "write";
  }
  report.bytes = request.bytes;
  report.seed = request.seed;
  report.repeat = request.repeat;
  return report;
}

SimReport simulate(const TopologyConfig& config, TopologyKind topology, WorkloadKind workload,
                   std::uint64_t bytes, std::uint64_t seed, std::uint64_t repeat,
                   const std::vector<LinkFault>& link_faults) {
  SimRequest request;
  request.topology = topology;
  request.workload = workload;
  request.bytes = bytes;
  request.seed = seed;
  request.repeat = repeat;
  request.link_faults = link_faults;
  return simulate(config, request);
}

std::string command_line(std::size_t gpus, const SimRequest& request,
                         const std::string& config_path) {
  std::string text = "ethx sim --gpus " + std::to_string(gpus);
  if (!config_path.empty()) text += " --config " + config_path;
  if (request.engine != SimEngine::kLoadStore)
    text += std::string(" --engine ") + to_string(request.engine);
  if (request.topology != TopologyKind::kSingle) {
    text += std::string(" --topology ") + to_string(request.topology);
  }
  text += std::string(" --workload ") + to_string(request.workload);
  text += " --bytes " + std::to_string(request.bytes);
  if (request.repeat != 1) text += " --repeat " + std::to_string(request.repeat);
  if (request.seed != 1) text += " --seed " + std::to_string(request.seed);
  if (request.peers != 0) text += " --peers " + std::to_string(request.peers);
  if (request.reads) text += " --op read";
  return text;
}

namespace {

// The workloads whose operations --op read turns into reads: those that send lists of
// messages (the latency workloads have their own read and write forms).
bool takes_op(WorkloadKind kind) {
  return kind == WorkloadKind::kMessageRate || kind == WorkloadKind::kIncast ||
         kind == WorkloadKind::kAllToAll || kind == WorkloadKind::kRandom;
}

std::string op_workload_names() {
  return "message-rate, incast, all-to-all and random";
}

SimRequest parse_request(const SimOptions& options, const TopologyConfig& config) {
  SimRequest request;
  if (!parse_topology_kind(options.topology, request.topology)) {
    throw std::invalid_argument("--topology must be single or leaf-spine (got \"" +
                                options.topology + "\")");
  }
  if (!parse_workload_kind(options.workload, request.workload)) {
    throw std::invalid_argument("--workload must be one of " + workload_names() + " (got \"" +
                                options.workload + "\")");
  }
  if (!parse_sim_engine(options.engine, request.engine)) {
    throw std::invalid_argument("--engine must be load-store or roce (got \"" + options.engine +
                                "\")");
  }
  if (options.peers && request.workload != WorkloadKind::kMessageRate) {
    throw std::invalid_argument("--peers applies to --workload message-rate only");
  }
  if (options.peers && *options.peers == 0)
    throw std::invalid_argument("--peers must be at least 1");
  request.peers = options.peers.value_or(0);
  if (options.op != "write" && options.op != "read") {
    throw std::invalid_argument("--op must be write or read (got \"" + options.op + "\")");
  }
  if (options.op == "read" && !takes_op(request.workload)) {
    throw std::invalid_argument("--op applies to --workload " + op_workload_names() + " only");
  }
  request.reads = options.op == "read";
  request.bytes = options.bytes.value_or(default_bytes(request.workload));
  request.seed = options.seed;
  request.repeat = options.repeat;
  request.link_faults = parse_link_faults(options.link_down, config.gpu_count);
  request.threads = options.threads.value_or(std::thread::hardware_concurrency() >= 2 ? 2 : 1);
  if (request.threads < 1 || request.threads > 2) {
    throw std::invalid_argument(
        "--threads must be 1 or 2 (the GPUs' events and the switches'), got " +
        std::to_string(request.threads));
  }
  return request;
}

int run(const SimOptions& options) {
  TopologyConfig config = load_topology(options.config_path, options.gpus);
  const SimRequest request = parse_request(options, config);

  // Frames in flight take up to about 1 MiB per GPU (a requester's 256 tags of 1.5 KB frames
  // queued at its NIC, twice over for what the engines and the spare pool keep).
  grow_heap_with_huge_pages(std::clamp<std::size_t>(config.gpu_count << 20, 64 << 20, 2ull << 30));
  const auto start = std::chrono::steady_clock::now();
  const SimReport report = simulate(config, request);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (options.json) {
    std::cout << to_json(report).dump() << "\n";
  } else {
    std::cout << format_table(report);
  }
  std::cout.flush();
  const double per_second = wall > 0 ? 1.0 / wall : 0.0;
  const ResidentMemory memory = resident_memory();
  constexpr double kMiB = 1024.0 * 1024.0;
  // How far apart two threads' cores were, when measured: a run's speed on two threads follows it.
  char cores_apart[64] = "";
  if (report.threads == 2 && report.cores_round_trip_ns > 0) {
    std::snprintf(cores_apart, sizeof cores_apart, ", cores %.0f ns apart",
                  report.cores_round_trip_ns);
  }
  std::fprintf(
      stderr,
      "ethx sim: wall %.3f s on %u thread%s%s, %llu events (%.3g events/s), %llu frames delivered "
      "(%.3g frames/s), %llu link transmissions (%.3g/s), %.0f MiB resident "
      "(%.0f MiB in huge pages)\n",
      wall, report.threads, report.threads == 1 ? "" : "s", cores_apart,
      static_cast<unsigned long long>(report.events),
      static_cast<double>(report.events) * per_second,
      static_cast<unsigned long long>(report.frames_delivered),
      static_cast<double>(report.frames_delivered) * per_second,
      static_cast<unsigned long long>(report.link_frames),
      static_cast<double>(report.link_frames) * per_second,
      static_cast<double>(memory.resident_bytes) / kMiB,
      static_cast<double>(memory.huge_page_bytes) / kMiB);
  if (report.cores_round_trip_ns > 0 && report.threads == 1) {
    if (report.cores_round_trip_ns >= CoreDistance::kNoAnswerNs) {
      std::fprintf(stderr,
                   "ethx sim: one thread, not two: the second thread did not get a core of its "
                   "own in time (a busy machine)\n");
    } else {
      std::fprintf(stderr,
                   "ethx sim: one thread, not two: the second core is %.0f ns away (a cache "
                   "line's round trip), and far cores make two threads slower\n",
                   report.cores_round_trip_ns);
    }
  }
  return report.complete ? 0 : 1;
}

// --calibrate FILE: fit the model to a bench report and predict the report's figures.
int run_calibrate(const SimOptions& options) {
  std::ifstream in(options.calibrate_path);
  if (!in) throw CalibrationError("cannot read " + options.calibrate_path);
  const nlohmann::json report = nlohmann::json::parse(in, nullptr, false);
  if (report.is_discarded()) {
    throw CalibrationError(options.calibrate_path + " is not JSON (ethx bench --json writes it)");
  }
  const BenchData data = read_bench_report(report);
  const TopologyConfig base = load_topology(options.config_path, data.gpus);
  const Calibration calibration = calibrate(data, base);
  std::vector<double> predicted;
  for (const BenchFigure& figure : data.figures) {
    predicted.push_back(predict(figure, calibration.config));
  }
  const CalibrationTable table = make_calibration_table(data, predicted);
  if (options.json) {
    std::cout << calibration_json(data, calibration, table).dump() << "\n";
  } else {
    std::cout << format_calibration(data, calibration, table);
  }
  return 0;
}

// The options that --calibrate replaces: the experiments are the bench's.
void check_calibrate_options(const SimOptions& options) {
  const SimOptions defaults;
  const bool other = options.gpus != 0 || options.engine != defaults.engine ||
                     options.workload != defaults.workload || options.bytes || options.peers ||
                     options.op != defaults.op || options.seed != defaults.seed ||
                     options.topology != defaults.topology || options.repeat != defaults.repeat ||
                     !options.link_down.empty() || options.threads;
  if (other) {
    throw std::invalid_argument(
        "--calibrate takes only --config and --json: the experiments, engine and GPU count "
        "are the bench report's");
  }
}

}  // namespace

int run_sim_command(const SimOptions& options) {
  try {
    if (!options.calibrate_path.empty()) {
      check_calibrate_options(options);
      return run_calibrate(options);
    }
    return run(options);
  } catch (const std::invalid_argument& error) {  // a bad option value
    std::cerr << "ethx sim: " << error.what() << "\n";
    return 2;
  } catch (const CalibrationError& error) {  // a bad bench report
    std::cerr << "ethx sim --calibrate: " << error.what() << "\n";
    return 2;
  }
}

}  // namespace ethx::sim
