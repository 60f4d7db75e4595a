#include "fabric/transport/shm/control_region.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>

namespace ethx {
namespace {

constexpr std::uint64_t kControlMagic = 0x3174'6c72'7463'6865;  // "ethctrl1"
constexpr std::uint32_t kControlVersion = 4;                    // 4: PeerHealthBoard

std::size_t bytes_for(std::uint32_t node_count) {
  return sizeof(ControlHeader) + std::size_t{node_count} * sizeof(NodeMailbox);
}

}  // namespace

ControlRegion::ControlRegion(shm::SharedMemoryFile file, ControlHeader* header, NodeMailbox* nodes,
                             std::uint32_t node_count)
    : file_(std::move(file)), header_(header), nodes_(nodes), node_count_(node_count) {}

ControlRegion ControlRegion::create(const std::string& name, std::uint32_t node_count) {
  auto file = shm::SharedMemoryFile::create(name, bytes_for(node_count));
  auto* header = new (file.data()) ControlHeader();
  auto* nodes = reinterpret_cast<NodeMailbox*>(file.data() + sizeof(ControlHeader));
  for (std::uint32_t i = 0; i < node_count; ++i) new (&nodes[i]) NodeMailbox();
  header->node_count = node_count;
  header->version = kControlVersion;
  std::atomic_thread_fence(std::memory_order_release);
  header->magic = kControlMagic;
  return ControlRegion(std::move(file), header, nodes, node_count);
}

ControlRegion ControlRegion::attach(const std::string& name) {
  auto file = shm::SharedMemoryFile::open(name);
  if (file.size_bytes() < sizeof(ControlHeader)) {
    throw std::runtime_error("control region " + name + " is too small");
  }
  auto* header = std::launder(reinterpret_cast<ControlHeader*>(file.data()));
  std::atomic_thread_fence(std::memory_order_acquire);
  if (header->magic != kControlMagic || header->version != kControlVersion) {
    throw std::runtime_error("control region " + name + " was made by another ethx version");
  }
  const std::uint32_t count = header->node_count;
  if (file.size_bytes() < bytes_for(count)) {
    throw std::runtime_error("control region " + name + " is smaller than its node count needs");
  }
  auto* nodes = std::launder(reinterpret_cast<NodeMailbox*>(file.data() + sizeof(ControlHeader)));
  return ControlRegion(std::move(file), header, nodes, count);
}

NodeMailbox& ControlRegion::node(std::uint32_t index) {
  if (index >= node_count_) throw std::out_of_range("no mailbox for node " + std::to_string(index));
  return nodes_[index];
}

std::optional<std::string> ControlRegion::take_command(std::uint32_t node_index,
                                                       std::uint32_t& last_seen) {
  NodeMailbox& box = node(node_index);
  const std::uint32_t sequence = box.command_seq.load(std::memory_order_acquire);
  if (sequence == last_seen) return std::nullopt;
  last_seen = sequence;
  const std::size_t bytes = std::min<std::size_t>(box.command_bytes, kCommandBytes);
  return std::string(box.command, bytes);
}

void ControlRegion::post_result(std::uint32_t node_index, std::uint32_t sequence,
                                const std::string& result) {
  NodeMailbox& box = node(node_index);
  const std::size_t bytes = std::min(result.size(), kResultBytes);
  std::memcpy(box.result, result.data(), bytes);
  box.result_bytes = static_cast<std::uint32_t>(bytes);
  box.result_seq.store(sequence, std::memory_order_release);
  shm::ring(header_->coordinator_bell);
}

}  // namespace ethx
