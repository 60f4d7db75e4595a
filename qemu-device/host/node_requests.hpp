// The node's requester as the device's engine-owner parts (RequestTable, CopyEngine) use it:
// room to issue, and the four operations. GpuDevice hands them RuntimeRequests, over its
// NodeRuntime; the unit tests hand them a fake that records every call, so those parts run
// without a port or a clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "packet-engine/requester.hpp"

namespace ethx {

class NodeRuntime;

class NodeRequests {
 public:
  // Frames not on the wire yet (NodeRuntime::backlog_frames): posted writes wait while many are.
  virtual std::size_t backlog_frames() const = 0;
  virtual std::size_t free_tags() const = 0;
  virtual std::size_t tags_needed(std::uint64_t bytes) const = 0;
  // Each returns the id its Completion will carry (Requester).
  virtual OpId read(GpuId gpu, std::uint64_t remote, std::uint32_t length) = 0;
  virtual OpId atomic(GpuId gpu, std::uint64_t remote, AtomicOp op, std::uint8_t width_bytes,
                      std::uint64_t operand, std::uint64_t compare) = 0;
  virtual OpId flush(GpuId gpu) = 0;
  virtual void write_posted(GpuId gpu, std::uint64_t remote, std::span<const std::byte> data) = 0;

 protected:
  ~NodeRequests() = default;
};

// NodeRequests over a running node: its requester, its effects, the monotonic clock.
class RuntimeRequests final : public NodeRequests {
 public:
  explicit RuntimeRequests(NodeRuntime& node) : node_(node) {}
  std::size_t backlog_frames() const override;
  std::size_t free_tags() const override;
  std::size_t tags_needed(std::uint64_t bytes) const override;
  OpId read(GpuId gpu, std::uint64_t remote, std::uint32_t length) override;
  OpId atomic(GpuId gpu, std::uint64_t remote, AtomicOp op, std::uint8_t width_bytes,
              std::uint64_t operand, std::uint64_t compare) override;
  OpId flush(GpuId gpu) override;
  void write_posted(GpuId gpu, std::uint64_t remote, std::span<const std::byte> data) override;

 private:
  NodeRuntime& node_;
};

}  // namespace ethx
