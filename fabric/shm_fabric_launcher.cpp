#include "fabric/shm_fabric_launcher.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <thread>

#include "fabric/fabric_names.hpp"
#include "fabric/process_signals.hpp"
#include "fabric/socket_transport.hpp"

namespace ethx {
namespace {

constexpr std::int64_t kStartTimeoutNs = 30'000'000'000;
// A benchmark command may run long under a slow machine; a dead node is noticed at once.
constexpr std::int64_t kPollSliceNs = 100'000'000;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr const char* kRunRecordDirectory = "/run/ethx/bench";

// Field 22 of /proc/<pid>/stat (start time in clock ticks); empty if the process is gone.
std::string process_start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int index = 3; index <= 22 && (fields >> field); ++index) {
    if (index == 22) return field;
  }
  return {};
}

}  // namespace

std::vector<std::string> reap_stale_bench_runs() {
  std::vector<std::string> removed;
  std::error_code error;
  if (!std::filesystem::is_directory(kRunRecordDirectory, error)) return removed;
  for (const auto& entry : std::filesystem::directory_iterator(kRunRecordDirectory, error)) {
    const std::string tag = entry.path().filename().string();
    if (!netns::valid_tag(tag)) continue;
    std::ifstream in(entry.path());
    long pid = 0;
    std::string start_time;
    in >> pid >> start_time;
    if (pid > 0 && !start_time.empty() &&
        process_start_time(static_cast<pid_t>(pid)) == start_time) {
      continue;  // its coordinator still runs
    }
    for (std::string& name : netns::cleanup_by_prefix(netns::run_prefix(tag))) {
      removed.push_back(std::move(name));
    }
    std::filesystem::remove(entry.path(), error);
  }
  return removed;
}

ShmFabricLauncher::ShmFabricLauncher(std::string fabric_name, std::string config_path,
                                     TopologyConfig topology, std::string transport)
    : fabric_name_(std::move(fabric_name)),
      config_path_(std::move(config_path)),
      topology_(std::move(topology)),
      transport_(std::move(transport)),
      netns_tag_(is_socket_transport(transport_) ? bench_tag(::getpid()) : std::string()),
      stats_path_((std::filesystem::temp_directory_path() /
                   (std::string(kNamePrefix) + fabric_name_ + "-switch-stats.json"))
                      .string()) {}

ShmFabricLauncher::~ShmFabricLauncher() {
  if (!stopped_) {
    try {
      stop();
    } catch (...) {
      // Destructors must not throw; the files are removed below regardless.
    }
  }
  remove_files();
  remove_socket_topology();
}

void ShmFabricLauncher::write_run_record() {
  if (!run_record_.empty()) return;
  for (const std::string& name : reap_stale_bench_runs()) {
    std::cerr << "ethx: removed " << name << ", left by an earlier run that was killed\n";
  }
  std::error_code error;
  std::filesystem::create_directories(kRunRecordDirectory, error);
  run_record_ = std::string(kRunRecordDirectory) + "/" + netns_tag_;
  std::ofstream record(run_record_);
  record << ::getpid() << " " << process_start_time(::getpid()) << "\n";
}

RawPingPongResult ShmFabricLauncher::measure_raw_pingpong(std::uint32_t rounds,
                                                          std::uint32_t samples_per_round) {
  write_run_record();
  const unsigned mtu = static_cast<unsigned>(topology_.frame_bytes_max) - 14;
  return ethx::measure_raw_pingpong(transport_, netns_tag_, mtu, rounds, samples_per_round);
}

void ShmFabricLauncher::start_socket_topology() {
  write_run_record();
  const unsigned mtu = static_cast<unsigned>(topology_.frame_bytes_max) - 14;
  veths_ = std::make_unique<netns::VethTopology>(
      netns::star_topology(netns_tag_, topology_.gpu_count, mtu));
}

void ShmFabricLauncher::remove_socket_topology() {
  if (veths_) {
    veths_->destroy();
    if (!veths_->destroy_error().empty()) {
      std::cerr << "ethx: cleanup: " << veths_->destroy_error() << "\n";
    }
    veths_.reset();
  }
  if (!run_record_.empty()) {
    std::error_code ignored;
    std::filesystem::remove(run_record_, ignored);
    run_record_.clear();
  }
}

void ShmFabricLauncher::remove_files() {
  shm::SharedMemoryFile::remove(switch_region_name(fabric_name_));
  shm::SharedMemoryFile::remove(control_region_name(fabric_name_));
  for (std::size_t gpu = 0; gpu < topology_.gpu_count; ++gpu) {
    shm::SharedMemoryFile::remove(hbm_file_name(fabric_name_, static_cast<GpuId>(gpu)));
  }
  std::error_code ignored;
  std::filesystem::remove(stats_path_, ignored);
}

void ShmFabricLauncher::start() {
  const std::string bin = executable_directory();
  std::vector<std::string> common = {"--fabric", fabric_name_, "--gpus",
                                     std::to_string(topology_.gpu_count)};
  if (!config_path_.empty()) {
    common.push_back("--config");
    common.push_back(config_path_);
  }
  const bool sockets = is_socket_transport(transport_);
  if (sockets) {
    start_socket_topology();
    common.insert(common.end(), {"--transport", transport_, "--netns-tag", netns_tag_});
  }
  control_.emplace(ControlRegion::create(control_region_name(fabric_name_),
                                         static_cast<std::uint32_t>(topology_.gpu_count)));

  std::vector<std::string> switch_args = {bin + "/ethx-switch"};
  switch_args.insert(switch_args.end(), common.begin(), common.end());
  switch_args.insert(switch_args.end(), {"--stats-file", stats_path_, "--stop-with-parent"});
  switch_process_ = std::make_unique<ChildProcess>(ChildProcess::spawn(switch_args));

  // The switch creates the port region; wait for it to be built. On the socket transports it
  // opens its ports and then reports its PID in the control header.
  const std::int64_t deadline = now_ns() + kStartTimeoutNs;
  auto switch_ready = [this] { return control_->header().switch_pid.load() != 0; };
  while (sockets && !switch_ready()) {
    if (g_stop_requested.load()) throw Interrupted();
    if (!switch_process_->running()) {
      throw std::runtime_error("ethx-switch exited during start (" +
                               switch_process_->exit_description() + ")");
    }
    if (now_ns() > deadline) throw std::runtime_error("ethx-switch did not start within 30 s");
    waiter_.wait(control_->header().coordinator_bell, switch_ready, kPollSliceNs);
  }
  while (!sockets && !region_) {
    if (g_stop_requested.load()) throw Interrupted();
    if (!switch_process_->running()) {
      throw std::runtime_error("ethx-switch exited during start (" +
                               switch_process_->exit_description() + ")");
    }
    if (now_ns() > deadline) throw std::runtime_error("ethx-switch did not start within 30 s");
    if (shm::SharedMemoryFile::exists(switch_region_name(fabric_name_))) {
      try {
        region_.emplace(shm::ShmFabricRegion::attach(switch_region_name(fabric_name_)));
      } catch (const std::exception&) {
        region_.reset();  // still being built
      }
    }
    if (!region_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  for (std::size_t gpu = 0; gpu < topology_.gpu_count; ++gpu) {
    std::vector<std::string> node_args = {bin + "/ethx-node", "--gpu", std::to_string(gpu)};
    node_args.insert(node_args.end(), common.begin(), common.end());
    nodes_.push_back(ChildProcess::spawn(node_args));
  }
  auto all_ready = [this] {
    for (std::uint32_t gpu = 0; gpu < control_->node_count(); ++gpu) {
      if (control_->node(gpu).state.load() != static_cast<std::uint32_t>(NodeState::kReady)) {
        return false;
      }
    }
    return true;
  };
  while (!all_ready()) {
    check_alive();
    if (now_ns() > deadline) throw std::runtime_error("the nodes did not get ready within 30 s");
    waiter_.wait(control_->header().coordinator_bell, all_ready, kPollSliceNs);
  }
  control_->unlink_name();
}

void ShmFabricLauncher::check_alive() {
  if (g_stop_requested.load()) throw Interrupted();
  if (switch_process_ && !switch_process_->running()) {
    throw std::runtime_error("ethx-switch stopped unexpectedly (" +
                             switch_process_->exit_description() + ")");
  }
  for (std::size_t gpu = 0; gpu < nodes_.size(); ++gpu) {
    if (!nodes_[gpu].running()) {
      throw std::runtime_error("ethx-node for GPU " + std::to_string(gpu) +
                               " stopped unexpectedly (" + nodes_[gpu].exit_description() + ")");
    }
  }
}

std::uint32_t ShmFabricLauncher::post(GpuId node, const std::string& command) {
  NodeMailbox& box = control_->node(node);
  if (command.size() > kCommandBytes) throw std::runtime_error("command too long");
  std::memcpy(box.command, command.data(), command.size());
  box.command_bytes = static_cast<std::uint32_t>(command.size());
  const std::uint32_t sequence = box.command_seq.load() + 1;
  box.command_seq.store(sequence, std::memory_order_release);
  if (region_) shm::ring(region_->port(node).node_bell);
  shm::ring(box.node_bell);  // socket transports: ethx-node's command bell thread
  return sequence;
}

nlohmann::json ShmFabricLauncher::wait_result(GpuId node, std::uint32_t sequence) {
  NodeMailbox& box = control_->node(node);
  auto done = [&box, sequence] {
    return box.result_seq.load(std::memory_order_acquire) == sequence;
  };
  while (!done()) {
    check_alive();
    waiter_.wait(control_->header().coordinator_bell, done, kPollSliceNs);
  }
  const std::size_t bytes = std::min<std::size_t>(box.result_bytes, kResultBytes);
  nlohmann::json result = nlohmann::json::parse(std::string(box.result, bytes));
  if (result.contains("error")) {
    throw std::runtime_error("GPU " + std::to_string(node) + ": " +
                             result["error"].get<std::string>());
  }
  return result;
}

nlohmann::json ShmFabricLauncher::run(GpuId node, const nlohmann::json& command) {
  return wait_result(node, post(node, command.dump()));
}

std::vector<nlohmann::json> ShmFabricLauncher::run_parallel(
    const std::vector<std::pair<GpuId, nlohmann::json>>& commands) {
  std::vector<std::uint32_t> sequences;
  for (const auto& [node, command] : commands) sequences.push_back(post(node, command.dump()));
  std::vector<nlohmann::json> results;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    results.push_back(wait_result(commands[i].first, sequences[i]));
  }
  return results;
}

nlohmann::json ShmFabricLauncher::stop() {
  stopped_ = true;
  for (std::size_t gpu = 0; gpu < nodes_.size(); ++gpu) {
    if (nodes_[gpu].running() && control_) post(static_cast<GpuId>(gpu), "exit");
  }
  for (ChildProcess& node : nodes_) {
    if (!node.wait_exit(5000)) node.terminate();
  }
  nlohmann::json stats;
  if (switch_process_) {
    switch_process_->terminate();
    std::ifstream in(stats_path_);
    if (in) stats = nlohmann::json::parse(in, nullptr, false);
    if (stats.is_discarded()) stats = nullptr;
  }
  remove_files();
  remove_socket_topology();
  return stats;
}

}  // namespace ethx
