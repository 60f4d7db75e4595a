#include "fabric/compare/shmem_systems.hpp"

#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "fabric/compare/compare_systems.hpp"
#include "fabric/platform/child_process.hpp"
#include "fabric/vm/guest_agent.hpp"
#include "fabric/vm/vm_plan.hpp"

namespace ethx {
namespace {

using nlohmann::json;

constexpr std::int64_t kPeTimeoutMs = 600'000;  // a guard against a hang, not a speed target
constexpr std::int64_t kConnectTimeoutMs = 10'000;
constexpr std::uint32_t kOobPort = 19500;  // oshrun uses 20000 and up

double number_at(const json& object, const char* key) {
  return object.is_object() && object.contains(key) && object[key].is_number()
             ? object[key].get<double>()
             : 0.0;
}

// {"8": {"p50": ns, "p99": ns, ...}, ...} -> latency_us rows of `op`.
void add_latencies(json& rows, const json& by_size, const std::string& op) {
  if (!by_size.is_object()) return;
  for (const auto& [size, stats] : by_size.items()) {
    const double p50 = number_at(stats, "p50");
    if (p50 <= 0) continue;
    rows.push_back({{"op", op},
                    {"bytes", std::stoull(size)},
                    {"p50", p50 / 1000.0},
                    {"p99", number_at(stats, "p99") / 1000.0}});
  }
}

void add_latency(json& rows, const json& stats, const std::string& op) {
  const double p50 = number_at(stats, "p50");
  if (p50 <= 0) return;
  rows.push_back(
      {{"op", op}, {"bytes", 8}, {"p50", p50 / 1000.0}, {"p99", number_at(stats, "p99") / 1000.0}});
}

void add_bandwidths(json& rows, const json& by_size, const std::string& op) {
  if (!by_size.is_object()) return;
  for (const auto& [size, gbps] : by_size.items()) {
    if (gbps.is_number() && gbps.get<double>() > 0) {
      rows.push_back({{"op", op}, {"bytes", std::stoull(size)}, {"gbps", gbps.get<double>()}});
    }
  }
}

std::string microseconds(double ns) {
  return std::to_string(ns / 1000.0).substr(0, 6) + " µs";
}

// One job: every PE through its VM's agent at once, as oshrun starts them. Returns PE 0's
// output; `failure` names each PE that exited non-zero or could not be run.
std::string run_job(const ShmemRunPlan& plan, const std::string& backend, std::string& failure) {
  const std::size_t pes = plan.vms * plan.gpus_per_vm;
  std::random_device random;
  const std::uint32_t job = random() & 0x7fffffffu;
  std::string environment = "ETHX_SHMEM_NPES=" + std::to_string(pes) +
                            " ETHX_SHMEM_JOB=" + std::to_string(job) +
                            " ETHX_SHMEM_BACKEND=" + backend;
  if (backend == "rdma") {
    environment +=
        " ETHX_SHMEM_OOB=" + guest_nic_ip(0) + ":" + std::to_string(kOobPort + job % 500);
  }
  const std::string bench = plan.bench.empty() ? shmem_bench_path() : plan.bench;
  std::vector<std::string> outputs(pes), errors(pes);
  std::vector<int> statuses(pes, -1);
  std::vector<std::thread> threads;
  for (std::size_t pe = 0; pe < pes; ++pe) {
    threads.emplace_back([&, pe] {
      std::string command = "!ETHX_GPU_ID=" + std::to_string(pe);
      command += " " + environment;
      command += " exec " + bench;
      if (plan.quick) command += " --quick";
      try {
        GuestAgent agent(plan.log_directory, pe / plan.gpus_per_vm, kConnectTimeoutMs);
        // The bench's directory bound as `ethx run` binds one: a clone under /tmp is seen too.
        const GuestBlock block =
            agent.run(command, kPeTimeoutMs, std::filesystem::path(bench).parent_path().string());
        outputs[pe] = block.output;
        statuses[pe] = block.exit_status;
      } catch (const std::exception& error) {
        errors[pe] = error.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (std::size_t pe = 0; pe < pes; ++pe) {
    if (statuses[pe] == 0) continue;
    failure += (failure.empty() ? "" : "; ") + std::string("PE ") + std::to_string(pe) + ": " +
               (errors[pe].empty() ? "exit status " + std::to_string(statuses[pe]) + ": " +
                                         outputs[pe].substr(0, 300)
                                   : errors[pe]);
  }
  return outputs[0];
}

}  // namespace

std::string shmem_bench_path() {
  if (const char* path = std::getenv("ETHX_SHMEM_BENCH"); path != nullptr && *path != '\0') {
    return path;
  }
  return (std::filesystem::path(executable_directory()) / ".." / "tests" / "shmem" / "shmem_bench")
      .lexically_normal()
      .string();
}

json shmem_system_from_bench(const std::string& system, const std::string& transport,
                             const json& report, bool exited_ok, const std::string& error) {
  if (!error.empty() && !report.is_object()) return unavailable_system(system, transport, error);
  json out = empty_system(system, transport);
  add_latencies(out["latency_us"], report.value("put_latency_ns", json()), "put");
  add_latencies(out["latency_us"], report.value("get_latency_ns", json()), "get");
  add_latency(out["latency_us"], report.value("long_p_latency_ns", json()), "p");
  add_latency(out["latency_us"], report.value("long_g_latency_ns", json()), "g");
  add_latency(out["latency_us"], report.value("fetch_add_latency_ns", json()), "fetch-add");
  add_bandwidths(out["bandwidth_gbps"], report.value("put_bandwidth_gbps", json()), "put");
  add_bandwidths(out["bandwidth_gbps"], report.value("get_bandwidth_gbps", json()), "get");
  const double rate = number_at(report, "fetch_add_rate_mops");
  if (rate > 0) {
    out["message_rate_mops"].push_back(
        {{"op", "fetch-add"}, {"bytes", 8}, {"batch", 1}, {"mops", rate}});
  }
  double alltoall = 0;  // at the largest block (the keys sort as text: compare them as numbers)
  std::uint64_t largest_block = 0;
  const json by_block = report.value("alltoall_gbps", json::object());
  for (const auto& [size, gbps] : by_block.items()) {
    if (gbps.is_number() && std::stoull(size) >= largest_block) {
      largest_block = std::stoull(size);
      alltoall = gbps.get<double>();
    }
  }
  if (alltoall > 0) out["all_to_all_gbps"] = alltoall;
  out["verified"] = exited_ok && error.empty() && report.value("mismatches", -1) == 0;
  json& notes = out["notes"];
  notes.push_back(
      "tests/shmem/shmem_bench" + std::string(report.value("quick", false) ? " --quick" : "") +
      ", the same binary for both backends, " + std::to_string(report.value("npes", 0)) +
      " PEs in the 2 VMs, PE 0 -> PE " + std::to_string(report.value("peer", 0)));
  const int rounds = report.value("barrier_log2_npes", 0);
  notes.push_back("barrier_all p50 " +
                  microseconds(number_at(report.value("barrier_all_latency_ns", json()), "p50")) +
                  " (" + std::to_string(rounds) + (rounds == 1 ? " round)" : " rounds)"));
  const json& window = report.value("window_load_latency_ns", json());
  notes.push_back(window.is_object()
                      ? "8 B load through shmem_ptr p50 " + microseconds(number_at(window, "p50"))
                      : std::string("shmem_ptr is NULL for the peer: no load/store path"));
  if (!error.empty()) notes.push_back("FAILED: " + error.substr(0, 400));
  out["details"] = {{"shmem_bench", report}};
  return out;
}

json run_shmem_systems(const ShmemRunPlan& plan,
                       const std::function<void(const std::string&)>& progress) {
  json systems = json::array();
  const std::string bench = plan.bench.empty() ? shmem_bench_path() : plan.bench;
  for (const auto& [backend, name] :
       {std::pair{"load-store", kSystemShmemLoadStore}, std::pair{"rdma", kSystemShmemRdma}}) {
    const std::string transport =
        std::string(backend) == "rdma"
            ? "libibverbs RC on rdma_rxe over the guest NICs on the ethx switch"
            : "ethx-gpu windows over the ethx switch (" + plan.transport + ")";
    if (!std::filesystem::exists(bench)) {
      systems.push_back(unavailable_system(
          name, transport,
          "no OpenSHMEM benchmark at " + bench +
              " (build it: cmake --build build --target shmem_bench; ETHX_SHMEM_BENCH)"));
      continue;
    }
    progress("same-VM OpenSHMEM: shmem_bench with ETHX_SHMEM_BACKEND=" + std::string(backend));
    std::string failure;
    const std::string output = run_job(plan, backend, failure);
    const std::size_t start = output.find("{\"benchmark\"");
    const json report =
        start == std::string::npos
            ? json()
            : json::parse(output.substr(start, output.find('\n', start) - start), nullptr, false);
    std::string error = failure;
    if (!report.is_object() && error.empty())
      error = "PE 0 printed no report: " + output.substr(0, 300);
    systems.push_back(shmem_system_from_bench(name, transport, report.is_object() ? report : json(),
                                              failure.empty(), error));
  }
  return systems;
}

}  // namespace ethx
