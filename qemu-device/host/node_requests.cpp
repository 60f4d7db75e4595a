#include "qemu-device/host/node_requests.hpp"

#include "fabric/node/node_runtime.hpp"
#include "fabric/platform/clock.hpp"

namespace ethx {

std::size_t RuntimeRequests::backlog_frames() const {
  return node_.backlog_frames();
}

std::size_t RuntimeRequests::free_tags() const {
  return node_.endpoint().requester().free_tags();
}

std::size_t RuntimeRequests::tags_needed(std::uint64_t bytes) const {
  return node_.endpoint().requester().tags_needed(bytes);
}

OpId RuntimeRequests::read(GpuId gpu, std::uint64_t remote, std::uint32_t length) {
  return node_.endpoint().requester().read(gpu, remote, length, monotonic_now_ns(),
                                           node_.effects());
}

OpId RuntimeRequests::atomic(GpuId gpu, std::uint64_t remote, AtomicOp op, std::uint8_t width_bytes,
                             std::uint64_t operand, std::uint64_t compare) {
  return node_.endpoint().requester().atomic(gpu, remote, op, width_bytes, operand, compare,
                                             monotonic_now_ns(), node_.effects());
}

OpId RuntimeRequests::flush(GpuId gpu) {
  return node_.endpoint().requester().flush(gpu, monotonic_now_ns(), node_.effects());
}

void RuntimeRequests::write_posted(GpuId gpu, std::uint64_t remote,
                                   std::span<const std::byte> data) {
  node_.endpoint().requester().write_posted(gpu, remote, data, monotonic_now_ns(), node_.effects());
}

}  // namespace ethx
