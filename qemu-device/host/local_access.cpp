#include "qemu-device/host/local_access.hpp"

#include <atomic>
#include <cstring>
#include <type_traits>

namespace ethx {
namespace {

// The atomic on a cell other threads (the completer serving remote atomics, other vCPUs) may
// update at the same time; returns the old value.
template <class Cell>
std::uint64_t apply_atomic(Cell& cell, const DeviceRequest& request) {
  using T = std::remove_reference_t<decltype(cell.load())>;
  const auto operand = static_cast<T>(request.value);
  switch (request.op) {
    case AtomicOp::kFetchAdd:
      return cell.fetch_add(operand);
    case AtomicOp::kSwap:
      return cell.exchange(operand);
    case AtomicOp::kCompareSwap: {
      T expected = static_cast<T>(request.compare);
      cell.compare_exchange_strong(expected, operand);
      return expected;
    }
  }
  return 0;
}

LocalAccessResult local_atomic(const DeviceRequest& request, std::span<std::byte> memory) {
  if (request.remote % request.width != 0) return {DeviceStatus::kRemoteError, 0};
  std::byte* at = memory.data() + request.remote;
  if (request.width == 8) {
    std::atomic_ref cell(*reinterpret_cast<std::uint64_t*>(at));
    return {DeviceStatus::kOk, apply_atomic(cell, request)};
  }
  std::atomic_ref cell(*reinterpret_cast<std::uint32_t*>(at));
  return {DeviceStatus::kOk, apply_atomic(cell, request)};
}

}  // namespace

std::uint64_t read_le(const std::byte* bytes, unsigned width) {
  std::uint64_t value = 0;
  std::memcpy(&value, bytes, width);  // x86-64 and the wire are both little-endian
  return value;
}

LocalAccessResult perform_local(const DeviceRequest& request, std::span<std::byte> memory) {
  if (request.remote + request.width > memory.size()) return {DeviceStatus::kRemoteError, 0};
  switch (request.kind) {
    case RequestKind::kStore:
      std::memcpy(memory.data() + request.remote, &request.value, request.width);
      return {};
    case RequestKind::kLoad:
      return {DeviceStatus::kOk, read_le(memory.data() + request.remote, request.width)};
    case RequestKind::kAtomic:
      return local_atomic(request, memory);
    case RequestKind::kFlushAll:
      break;
  }
  return {};  // a flush of the GPU's own memory has nothing to wait for
}

}  // namespace ethx
