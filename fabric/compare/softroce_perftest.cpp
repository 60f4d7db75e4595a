#include "fabric/compare/softroce_perftest.hpp"

#include <chrono>
#include <sstream>
#include <thread>

#include "fabric/bench/bench_plan.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/vm/guest_agent.hpp"
#include "fabric/vm/vm_plan.hpp"

namespace ethx {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kFirstPort = 18515;  // perftest's default; one port per run

std::vector<double> numbers_of(const std::string& line) {
  std::vector<double> values;
  std::istringstream words(line);
  for (std::string word; words >> word;) {
    try {
      std::size_t used = 0;
      const double value = std::stod(word, &used);
      if (used != word.size()) return {};
      values.push_back(value);
    } catch (const std::exception&) {
      return {};
    }
  }
  return values;
}

struct Run {
  std::string tool;  // ib_write_lat ...
  std::string op;    // write | read
  std::uint64_t bytes;
  std::uint64_t iterations;
  bool latency;
};

// WRITE then READ: latency at each latency size, then bandwidth at each bandwidth size (small
// messages with more iterations: they are over quickly).
std::vector<Run> perftest_runs(bool quick) {
  std::vector<Run> runs;
  const PerftestPlan perftest = bench_plan(quick).perftest;
  for (const char* op : {"write", "read"}) {
    const std::string o = op;
    for (std::uint64_t bytes : perftest.latency_sizes_bytes) {
      runs.push_back({"ib_" + o + "_lat", o, bytes, perftest.latency_iterations, true});
    }
    for (std::uint64_t bytes : perftest.bandwidth_sizes_bytes) {
      const std::uint64_t iterations =
          bytes <= 8 ? perftest.bandwidth_iterations * perftest.small_message_iteration_factor
                     : perftest.bandwidth_iterations;
      runs.push_back({"ib_" + o + "_bw", o, bytes, iterations, false});
    }
  }
  return runs;
}

// What both sides of one run print and how long the client took.
struct PerftestExchange {
  GuestBlock client, server;
  std::string client_error, server_error;  // an agent that failed instead of answering
  double wall_s = 0;
};

// The server in VM 1 on its own thread, the client in VM 0; `common` is the command line both
// share (tool, device, size, iterations, port).
PerftestExchange run_perftest_pair(GuestAgent& client, GuestAgent& server,
                                   const std::string& common, const std::array<int, 2>& gid_index) {
  const std::string server_cmd = "!" + common + " -x " + std::to_string(gid_index[1]);
  // The client retries while the server is not listening yet (connection refused); no
  // fixed delay: it goes as soon as the server accepts. At most 30 s of tries.
  const std::string client_cmd =
      "!i=0; while :; do " + common + " -x " + std::to_string(gid_index[0]) + " " +
      guest_nic_ip(1) + " >/tmp/pt.out 2>&1 && { cat /tmp/pt.out; exit 0; }; " +
      "grep -qE 'Couldn.t connect|Unable to open' /tmp/pt.out || " +
      "{ cat /tmp/pt.out; exit 1; }; i=$((i+1)); [ $i -ge 300 ] && { cat /tmp/pt.out; exit 1; }; "
      "usleep 100000; done";
  PerftestExchange exchange;
  std::thread server_thread([&] {
    try {
      exchange.server = server.run(server_cmd, kSoftRoceCommandTimeoutMs);
    } catch (const std::exception& error) {
      exchange.server_error = error.what();
    }
  });
  const auto run_start = Clock::now();
  try {
    exchange.client = client.run(client_cmd, kSoftRoceCommandTimeoutMs);
  } catch (const std::exception& error) {
    exchange.client_error = error.what();
  }
  server_thread.join();
  throw_if_stop_requested();
  exchange.wall_s = std::chrono::duration<double>(Clock::now() - run_start).count();
  return exchange;
}

// One run into the results: its entry in "runs", and its figures when it succeeded.
void record_run(PerftestResults& results, const Run& run, const std::string& label,
                const std::string& common, const PerftestExchange& exchange) {
  const json parsed = parse_perftest_output(exchange.client.output, run.bytes);
  json entry = {{"tool", run.tool},
                {"op", run.op},
                {"bytes", run.bytes},
                {"iterations", run.iterations},
                {"wall_s", exchange.wall_s},
                {"client_exit", exchange.client.exit_status},
                {"server_exit", exchange.server.exit_status},
                {"command", common + " [-x G] [" + guest_nic_ip(1) + "]"},
                {"result", parsed}};
  if (parsed.is_null() || exchange.client.exit_status != 0) {
    results.all_ok = false;
    entry["client_output"] =
        exchange.client_error.empty() ? exchange.client.output : exchange.client_error;
    entry["server_output"] =
        exchange.server_error.empty() ? exchange.server.output : exchange.server_error;
    results.notes.push_back("FAILED: " + label + " (see runs)");
  } else if (run.latency) {
    results.latency_us.push_back({{"op", run.op},
                                  {"bytes", run.bytes},
                                  {"p50", parsed["t_typical"]},
                                  {"p99", parsed["p99"]}});
  } else {
    results.bandwidth_gbps.push_back(
        {{"op", run.op}, {"bytes", run.bytes}, {"gbps", parsed["bw_avg_gbps"]}});
    if (run.bytes <= 8) {
      results.message_rate_mops.push_back(
          {{"op", run.op}, {"bytes", run.bytes}, {"batch", 1}, {"mops", parsed["msg_rate_mpps"]}});
    }
  }
  results.runs.push_back(entry);
}

}  // namespace

json parse_perftest_output(const std::string& output, std::uint64_t bytes) {
  std::istringstream lines(output);
  bool latency = false, bandwidth = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("t_typical") != std::string::npos) latency = true;
    if (line.find("BW average") != std::string::npos) bandwidth = true;
    if (!latency && !bandwidth) continue;
    const std::vector<double> v = numbers_of(line);
    if (v.empty() || static_cast<std::uint64_t>(v[0]) != bytes) continue;
    if (latency && v.size() >= 9) {
      return {{"bytes", bytes},  {"iterations", v[1]}, {"t_min", v[2]},
              {"t_max", v[3]},   {"t_typical", v[4]},  {"t_avg", v[5]},
              {"t_stdev", v[6]}, {"p99", v[7]},        {"p99_9", v[8]}};
    }
    if (bandwidth && v.size() >= 5) {
      return {{"bytes", bytes},
              {"iterations", v[1]},
              {"bw_peak_gbps", v[2]},
              {"bw_avg_gbps", v[3]},
              {"msg_rate_mpps", v[4]}};
    }
  }
  return nullptr;
}

PerftestResults run_perftests(GuestAgent& client, GuestAgent& server,
                              const std::array<int, 2>& gid_index, const SoftRoceOptions& options,
                              const std::function<double()>& elapsed_s,
                              const std::function<void(const std::string&)>& say) {
  PerftestResults results;
  int port = kFirstPort;
  for (const Run& run : perftest_runs(options.quick)) {
    if (g_stop_requested.load()) throw Interrupted();
    const std::string label =
        run.tool + " -s " + std::to_string(run.bytes) + " -n " + std::to_string(run.iterations);
    if (elapsed_s() > options.time_budget_s) {
      results.notes.push_back("skipped (time budget of " +
                              std::to_string(static_cast<int>(options.time_budget_s)) +
                              " s): " + label);
      continue;
    }
    say(label);
    // -F: no CPU-frequency check (TCG); --report_gbits; -x: the RoCE v2 IPv4 GID.
    const std::string common = run.tool + " -d rxe0 -F -s " + std::to_string(run.bytes) + " -n " +
                               std::to_string(run.iterations) + " -p " + std::to_string(port++) +
                               (run.latency ? "" : " --report_gbits");
    record_run(results, run, label, common, run_perftest_pair(client, server, common, gid_index));
  }
  return results;
}

}  // namespace ethx
