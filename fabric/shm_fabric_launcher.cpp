#include "fabric/shm_fabric_launcher.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "fabric/fabric_names.hpp"
#include "fabric/process_signals.hpp"

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

}  // namespace

ShmFabricLauncher::ShmFabricLauncher(std::string fabric_name, std::string config_path,
                                     TopologyConfig topology)
    : fabric_name_(std::move(fabric_name)),
      config_path_(std::move(config_path)),
      topology_(std::move(topology)),
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
  control_.emplace(ControlRegion::create(control_region_name(fabric_name_),
                                         static_cast<std::uint32_t>(topology_.gpu_count)));

  std::vector<std::string> switch_args = {bin + "/ethx-switch"};
  switch_args.insert(switch_args.end(), common.begin(), common.end());
  switch_args.insert(switch_args.end(), {"--stats-file", stats_path_, "--stop-with-parent"});
  switch_process_ = std::make_unique<ChildProcess>(ChildProcess::spawn(switch_args));

  // The switch creates the port region; wait for it to be built.
  const std::int64_t deadline = now_ns() + kStartTimeoutNs;
  while (!region_) {
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
  shm::ring(region_->port(node).node_bell);
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
  return stats;
}

}  // namespace ethx
