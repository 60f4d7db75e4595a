#include "fabric/control/fabric_client.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace ethx {
namespace {

// A benchmark command may run long on a slow machine; a dead process is noticed at once.
constexpr std::int64_t kPollSliceNs = 100'000'000;

}  // namespace

FabricClient::FabricClient(ControlRegion& control, shm::ShmFabricRegion* region,
                           std::function<void()> check_alive)
    : control_(control), region_(region), check_alive_(std::move(check_alive)) {}

std::uint32_t FabricClient::post(GpuId node, const std::string& command) {
  if (node >= control_.node_count()) {
    throw std::out_of_range("GPU " + std::to_string(node) + ": the fabric has " +
                            std::to_string(control_.node_count()) + " GPUs");
  }
  NodeMailbox& box = control_.node(node);
  if (command.size() > kCommandBytes) throw std::runtime_error("command too long");
  std::memcpy(box.command, command.data(), command.size());
  box.command_bytes = static_cast<std::uint32_t>(command.size());
  const std::uint32_t sequence = box.command_seq.load() + 1;
  box.command_seq.store(sequence, std::memory_order_release);
  // A shared-memory node sleeps on its port doorbell; on the socket transports a thread of
  // the node sleeps on the mailbox's node_bell.
  if (region_ != nullptr) shm::ring(region_->port(node).node_bell);
  shm::ring(box.node_bell);
  return sequence;
}

nlohmann::json FabricClient::wait_result(GpuId node, std::uint32_t sequence) {
  NodeMailbox& box = control_.node(node);
  auto done = [&box, sequence] {
    return box.result_seq.load(std::memory_order_acquire) == sequence;
  };
  while (!done()) {
    check_alive_();
    waiter_.wait(control_.header().coordinator_bell, done, kPollSliceNs);
  }
  const std::size_t bytes = std::min<std::size_t>(box.result_bytes, kResultBytes);
  nlohmann::json result = nlohmann::json::parse(std::string(box.result, bytes));
  if (const std::optional<std::string> error = protocol::error_of(result)) {
    throw std::runtime_error("GPU " + std::to_string(node) + ": " + *error);
  }
  return result;
}

nlohmann::json FabricClient::run(GpuId node, const nlohmann::json& command) {
  return wait_result(node, post(node, command.dump()));
}

std::vector<nlohmann::json> FabricClient::run_parallel(
    const std::vector<std::pair<GpuId, nlohmann::json>>& commands) {
  std::vector<std::uint32_t> sequences;
  sequences.reserve(commands.size());
  for (const auto& [node, command] : commands) sequences.push_back(post(node, command.dump()));
  std::vector<nlohmann::json> results;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    results.push_back(wait_result(commands[i].first, sequences[i]));
  }
  return results;
}

}  // namespace ethx
