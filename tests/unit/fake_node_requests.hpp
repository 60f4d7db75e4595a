// A fake node for the GpuDevice parts that issue through NodeRequests (RequestTable,
// CopyEngine): it records every call in order, hands out consecutive op ids, and reports the
// room the test sets (backlog, free tags). Answers are Completions the test builds with
// answer().
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "qemu-device/host/node_requests.hpp"

namespace ethx::test {

class FakeNodeRequests final : public NodeRequests {
 public:
  enum class Kind { kRead, kAtomic, kFlush, kWrite };
  struct Call {
    Kind kind = Kind::kRead;
    OpId id = 0;  // 0 for posted writes
    GpuId gpu = 0;
    std::uint64_t remote = 0;
    std::uint32_t length = 0;     // reads
    std::vector<std::byte> data;  // posted writes
    std::uint64_t operand = 0;    // atomics
  };

  std::size_t backlog = 0;
  std::size_t tags = 256;
  std::uint64_t bytes_per_tag = 1024;
  std::vector<Call> calls;

  std::size_t backlog_frames() const override { return backlog; }
  std::size_t free_tags() const override { return tags; }
  std::size_t tags_needed(std::uint64_t bytes) const override {
    return bytes == 0 ? 1 : static_cast<std::size_t>((bytes + bytes_per_tag - 1) / bytes_per_tag);
  }
  OpId read(GpuId gpu, std::uint64_t remote, std::uint32_t length) override {
    return record({Kind::kRead, next_id_, gpu, remote, length, {}, 0});
  }
  OpId atomic(GpuId gpu, std::uint64_t remote, AtomicOp /*op*/, std::uint8_t width_bytes,
              std::uint64_t operand, std::uint64_t /*compare*/) override {
    return record({Kind::kAtomic, next_id_, gpu, remote, width_bytes, {}, operand});
  }
  OpId flush(GpuId gpu) override { return record({Kind::kFlush, next_id_, gpu, 0, 0, {}, 0}); }
  void write_posted(GpuId gpu, std::uint64_t remote, std::span<const std::byte> data) override {
    record({Kind::kWrite, 0, gpu, remote, 0, {data.begin(), data.end()}, 0});
  }

  // The calls of one kind, in order.
  std::vector<Call> of(Kind kind) const {
    std::vector<Call> found;
    for (const Call& call : calls) {
      if (call.kind == kind) found.push_back(call);
    }
    return found;
  }

 private:
  OpId record(Call call) {
    if (call.kind != Kind::kWrite) ++next_id_;
    calls.push_back(std::move(call));
    return calls.back().id;
  }
  OpId next_id_ = 1;
};

// The completion answering `call`: `data` for a read, `old_value` for an atomic.
inline Completion answer(const FakeNodeRequests::Call& call,
                         wire::Status status = wire::Status::kOk, std::vector<std::byte> data = {},
                         std::uint64_t old_value = 0) {
  Completion completion;
  completion.id = call.id;
  completion.status = status;
  completion.dst_gpu = call.gpu;
  completion.address = call.remote;
  completion.data = std::move(data);
  completion.old_value = old_value;
  return completion;
}

}  // namespace ethx::test
