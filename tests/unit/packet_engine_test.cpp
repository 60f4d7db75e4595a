#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "packet-engine/effects.hpp"
#include "packet-engine/endpoint.hpp"
#include "packet-engine/engine_config.hpp"
#include "packet-engine/mac_addr.hpp"
#include "packet-engine/requester.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {
namespace {

using Bytes = std::vector<std::byte>;
using wire::Status;

constexpr std::size_t kMemoryBytes = 64 * 1024;
constexpr TimeNs kTimeoutNs = 1'000'000;

Bytes pattern_bytes(std::size_t count, unsigned seed) {
  Bytes out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<std::byte>((i * 7 + seed) & 0xFF);
  return out;
}

Bytes u64_bytes(std::uint64_t value) {
  Bytes out(8);
  std::memcpy(out.data(), &value, 8);
  return out;
}

// Memory holds atomics in host byte order, as a GPU's own loads and stores see them.
template <class T>
T load_host(const Bytes& memory, std::size_t offset) {
  T value;
  std::memcpy(&value, memory.data() + offset, sizeof(T));
  return value;
}
template <class T>
void store_host(Bytes& memory, std::size_t offset, T value) {
  std::memcpy(memory.data() + offset, &value, sizeof(T));
}

Bytes slice(const Bytes& memory, std::size_t offset, std::size_t count) {
  return Bytes(memory.begin() + static_cast<std::ptrdiff_t>(offset),
               memory.begin() + static_cast<std::ptrdiff_t>(offset + count));
}

// What the harness does with a frame about to be delivered.
enum class Verdict { kDeliver, kDrop, kHold };

// Several endpoints joined by a lossless FIFO "wire" that the test steps frame by frame. Frames
// go to the endpoint whose MAC is the destination MAC; a filter may drop or hold them.
class Fabric {
 public:
  explicit Fabric(std::size_t gpus, const std::function<void(EngineConfig&)>& tweak = {}) {
    std::vector<MacAddr> macs;
    for (std::size_t i = 0; i < gpus; ++i)
      macs.push_back(default_mac_for_gpu(static_cast<GpuId>(i)));
    for (std::size_t i = 0; i < gpus; ++i) {
      EngineConfig config;
      config.self = static_cast<GpuId>(i);
      config.self_mac = macs[i];
      config.gpu_macs = macs;
      config.request_timeout_ns = kTimeoutNs;
      if (tweak) tweak(config);
      memories_.push_back(std::make_unique<Bytes>(kMemoryBytes));
      Bytes& memory = *memories_.back();
      for (std::size_t b = 0; b < memory.size(); ++b) {
        memory[b] = static_cast<std::byte>((b * 13 + i * 101) & 0xFF);
      }
      endpoints_.push_back(std::make_unique<Endpoint>(config, memory));
    }
    wake_at_.resize(gpus);
    completions_.resize(gpus);
  }

  Endpoint& endpoint(GpuId gpu) { return *endpoints_.at(gpu); }
  Requester& requester(GpuId gpu) { return endpoint(gpu).requester(); }
  Bytes& memory(GpuId gpu) { return *memories_.at(gpu); }
  TimeNs now() const { return now_; }
  void advance_to(TimeNs when) { now_ = when; }
  std::optional<TimeNs> wake_at(GpuId gpu) const { return wake_at_.at(gpu); }
  std::size_t in_flight() const { return wire_.size(); }
  const std::deque<wire::Frame>& frames_in_flight() const { return wire_; }

  std::function<Verdict(const wire::Frame&)> filter;
  std::vector<wire::Frame> held;
  std::size_t dropped = 0;
  std::size_t undeliverable = 0;

  // Puts the frames of one endpoint call on the wire and remembers its wake-up request.
  void collect(GpuId gpu, Effects& effects) {
    for (auto& frame : effects.send) wire_.push_back(std::move(frame));
    wake_at_.at(gpu) = effects.wake_at;
    effects.clear();
  }

  void poll(GpuId gpu) {
    Effects effects;
    endpoint(gpu).poll(now_, effects);
    collect(gpu, effects);
  }
  void poll_all() {
    for (std::size_t i = 0; i < endpoints_.size(); ++i) poll(static_cast<GpuId>(i));
  }

  // Hands an arbitrary frame to one endpoint, as if it came off its link.
  void inject(GpuId gpu, std::span<const std::byte> frame) {
    Effects effects;
    endpoint(gpu).on_frame(frame, now_, effects);
    endpoint(gpu).poll(now_, effects);  // as a runtime does after each batch it receives
    collect(gpu, effects);
  }

  // Delivers (or drops or holds) the oldest frame on the wire. False when the wire is empty.
  bool step() {
    if (wire_.empty()) return false;
    wire::Frame frame = std::move(wire_.front());
    wire_.pop_front();
    const Verdict verdict = filter ? filter(frame) : Verdict::kDeliver;
    if (verdict == Verdict::kDrop) {
      ++dropped;
      return true;
    }
    if (verdict == Verdict::kHold) {
      held.push_back(std::move(frame));
      return true;
    }
    deliver(frame);
    return true;
  }

  // Sends whatever was issued and delivers until the wire is quiet.
  void run() {
    poll_all();
    while (step()) {
    }
  }

  // Puts held frames back on the wire (without the filter) and delivers everything.
  void release_held() {
    std::vector<wire::Frame> frames = std::move(held);
    held.clear();
    for (auto& frame : frames) deliver(frame);
    while (step()) {
    }
  }

  // ---- Issuing operations; frames a call emits at once go on the wire. ----
  OpId read(GpuId from, GpuId dst, std::uint64_t address, std::uint32_t length) {
    Effects effects;
    const OpId id = requester(from).read(dst, address, length, now_, effects);
    collect(from, effects);
    return id;
  }
  OpId write(GpuId from, GpuId dst, std::uint64_t address, const Bytes& data) {
    Effects effects;
    const OpId id = requester(from).write(dst, address, data, now_, effects);
    collect(from, effects);
    return id;
  }
  bool write_posted(GpuId from, GpuId dst, std::uint64_t address, const Bytes& data) {
    Effects effects;
    const bool accepted = requester(from).write_posted(dst, address, data, now_, effects);
    collect(from, effects);
    return accepted;
  }
  OpId atomic(GpuId from, GpuId dst, std::uint64_t address, AtomicOp op, std::uint8_t width,
              std::uint64_t operand, std::uint64_t compare = 0) {
    Effects effects;
    const OpId id =
        requester(from).atomic(dst, address, op, width, operand, compare, now_, effects);
    collect(from, effects);
    return id;
  }
  OpId flush(GpuId from, GpuId dst) {
    Effects effects;
    const OpId id = requester(from).flush(dst, now_, effects);
    collect(from, effects);
    return id;
  }

  // The completion of `id` if `from` has produced it (each is handed out once).
  std::optional<Completion> completion(GpuId from, OpId id) {
    auto& done = completions_.at(from);
    while (auto next = requester(from).take_completion()) done.emplace(next->id, std::move(*next));
    auto found = done.find(id);
    if (found == done.end()) return std::nullopt;
    Completion completion = std::move(found->second);
    done.erase(found);
    return completion;
  }

  // Runs the fabric and returns the completion of `id`; a failed expectation if there is none.
  Completion finish(GpuId from, OpId id) {
    run();
    auto found = completion(from, id);
    EXPECT_TRUE(found.has_value()) << "op " << id << " of GPU " << from << " did not complete";
    return found.value_or(Completion{});
  }

 private:
  void deliver(const wire::Frame& frame) {
    MacAddr dst, src;
    std::uint16_t ether_type = 0;
    if (wire::peek_ethernet(frame, dst, src, ether_type)) {
      for (std::size_t i = 0; i < endpoints_.size(); ++i) {
        if (endpoints_[i]->config().self_mac == dst) {
          inject(static_cast<GpuId>(i), frame);
          return;
        }
      }
    }
    ++undeliverable;
  }

  TimeNs now_ = 0;
  std::vector<std::unique_ptr<Bytes>> memories_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::deque<wire::Frame> wire_;
  std::vector<std::optional<TimeNs>> wake_at_;
  std::vector<std::map<OpId, Completion>> completions_;
};

// Source GPU of a fabric frame (kInvalidGpu if it does not decode).
GpuId src_gpu_of(const wire::Frame& frame) {
  wire::FrameView view;
  return wire::decode_frame(frame, view) == wire::DecodeError::kOk ? view.src_gpu : kInvalidGpu;
}

std::vector<wire::TxnView> txns_of(const wire::FrameView& view) {
  std::vector<wire::TxnView> out;
  wire::TxnCursor cursor(view);
  wire::TxnView txn;
  while (cursor.next(txn)) out.push_back(txn);
  return out;
}

constexpr GpuId kA = 0;
constexpr GpuId kB = 1;
constexpr GpuId kC = 2;

// ---- Reads and writes ----------------------------------------------------------------------

TEST(PacketEngine, ReadReturnsTheRemoteMemory) {
  Fabric fabric(2);
  const OpId id = fabric.read(kA, kB, 1000, 256);
  const Completion done = fabric.finish(kA, id);
  ASSERT_TRUE(done.ok()) << wire::to_string(done.status);
  EXPECT_EQ(done.kind, OpKind::kRead);
  EXPECT_EQ(done.dst_gpu, kB);
  EXPECT_EQ(done.address, 1000u);
  EXPECT_EQ(done.data, slice(fabric.memory(kB), 1000, 256));
  EXPECT_NE(done.data, slice(fabric.memory(kA), 1000, 256));  // not our own memory
  EXPECT_EQ(fabric.endpoint(kB).completer().counters().reads, 1u);
  EXPECT_EQ(fabric.requester(kA).outstanding_ops(), 0u);
}

TEST(PacketEngine, ManyOpsCompletingOutOfOrderEachGetTheirOwnDataAndIds) {
  // Ops live in a table whose entries are reused as ops complete: interleave completions
  // from two peers (C's frames held back) and check every op gets its own result.
  Fabric fabric(3);
  fabric.filter = [](const wire::Frame& frame) {
    return src_gpu_of(frame) == kC ? Verdict::kHold : Verdict::kDeliver;
  };
  std::vector<std::pair<OpId, std::pair<GpuId, std::uint64_t>>> issued;
  for (int round = 0; round < 3; ++round) {
    for (std::uint32_t i = 0; i < 20; ++i) {
      const GpuId dst = i % 2 == 0 ? kB : kC;
      const std::uint64_t address = 100 * i + 7 * static_cast<std::uint64_t>(round);
      issued.push_back({fabric.read(kA, dst, address, 8 + i), {dst, address}});
    }
    fabric.run();  // B's reads complete, C's wait
    fabric.release_held();
  }
  std::set<OpId> ids;
  for (const auto& [id, where] : issued) {
    ids.insert(id);
    const auto done = fabric.completion(kA, id);
    ASSERT_TRUE(done.has_value()) << id;
    ASSERT_TRUE(done->ok());
    EXPECT_EQ(done->id, id);
    EXPECT_EQ(done->dst_gpu, where.first);
    EXPECT_EQ(done->data, slice(fabric.memory(where.first), where.second, done->data.size()));
  }
  EXPECT_EQ(ids.size(), issued.size());
  EXPECT_EQ(fabric.requester(kA).outstanding_ops(), 0u);
}

TEST(PacketEngine, FramesAreBuiltInTheSpareBuffersTheRuntimeLendsBack) {
  Fabric lending(2);
  Fabric plain(2);
  Effects effects;
  wire::Frame spare;
  spare.reserve(4096);
  const std::byte* memory = spare.data();
  effects.spare.push_back(std::move(spare));
  const Bytes data = pattern_bytes(300, 5);
  lending.requester(kA).write(kB, 64, data, 0, effects);
  lending.endpoint(kA).poll(0, effects);
  ASSERT_EQ(effects.send.size(), 1u);
  EXPECT_EQ(effects.send[0].data(), memory);
  EXPECT_TRUE(effects.spare.empty());
  effects.clear();
  EXPECT_TRUE(effects.spare.empty());
  // The same bytes as a frame built in fresh memory.
  Effects fresh;
  plain.requester(kA).write(kB, 64, data, 0, fresh);
  plain.endpoint(kA).poll(0, fresh);
  ASSERT_EQ(fresh.send.size(), 1u);
  lending.requester(kA).write(kB, 64, data, 0, effects);
  lending.endpoint(kA).poll(0, effects);
  plain.requester(kA).write(kB, 64, data, 0, fresh);
  plain.endpoint(kA).poll(0, fresh);
  EXPECT_EQ(effects.send.back(), fresh.send.back());
}

TEST(PacketEngine, WithoutCrcsFramesCarryAZeroCrcAndStillWork) {
  Fabric fabric(2, [](EngineConfig& config) { config.crc = wire::Crc::kOff; });
  fabric.filter = [](const wire::Frame& frame) {
    wire::FrameView view;
    // Built without a CRC: only a decode that skips it accepts the frame.
    EXPECT_EQ(wire::decode_frame(frame, view), wire::DecodeError::kBadCrc);
    EXPECT_EQ(wire::decode_frame(frame, view, wire::Crc::kOff), wire::DecodeError::kOk);
    return Verdict::kDeliver;
  };
  const Bytes data = pattern_bytes(3000, 11);
  const OpId write = fabric.write(kA, kB, 128, data);
  EXPECT_TRUE(fabric.finish(kA, write).ok());
  const Completion read = fabric.finish(kA, fabric.read(kA, kB, 128, 3000));
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read.data, data);
  EXPECT_EQ(fabric.endpoint(kB).counters().malformed, 0u);
}

TEST(PacketEngine, ReadsFromTwoGpusAreRoutedToEach) {
  Fabric fabric(3);
  const OpId from_b = fabric.read(kA, kB, 64, 32);
  const OpId from_c = fabric.read(kA, kC, 64, 32);
  fabric.run();
  const auto done_b = fabric.completion(kA, from_b);
  const auto done_c = fabric.completion(kA, from_c);
  ASSERT_TRUE(done_b && done_c);
  EXPECT_EQ(done_b->data, slice(fabric.memory(kB), 64, 32));
  EXPECT_EQ(done_c->data, slice(fabric.memory(kC), 64, 32));
  EXPECT_EQ(fabric.undeliverable, 0u);
}

TEST(PacketEngine, NonPostedWriteThenReadIssuedBackToBackReadsTheWrittenData) {
  Fabric fabric(2);
  const Bytes data = pattern_bytes(200, 99);
  ASSERT_NE(slice(fabric.memory(kB), 4000, 200), data);
  const OpId write = fabric.write(kA, kB, 4000, data);
  const OpId read = fabric.read(kA, kB, 4000, 200);  // no waiting in between
  fabric.run();
  const auto write_done = fabric.completion(kA, write);
  const auto read_done = fabric.completion(kA, read);
  ASSERT_TRUE(write_done && read_done);
  EXPECT_TRUE(write_done->ok());
  EXPECT_EQ(write_done->kind, OpKind::kWrite);
  EXPECT_EQ(read_done->data, data);
  EXPECT_EQ(slice(fabric.memory(kB), 4000, 200), data);
}

TEST(PacketEngine, PostedWriteThenReadIssuedBackToBackReadsTheWrittenData) {
  Fabric fabric(2);
  const Bytes data = pattern_bytes(64, 5);
  ASSERT_TRUE(fabric.write_posted(kA, kB, 128, data));
  const OpId read = fabric.read(kA, kB, 120, 80);
  const Completion done = fabric.finish(kA, read);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(slice(done.data, 8, 64), data);
}

TEST(PacketEngine, PostedWritesArePerformedInIssueOrder) {
  Fabric fabric(2);
  // Overlapping 8-byte writes over a 12-byte range, enough to span several frames; a model
  // applies them in issue order.
  constexpr std::size_t kBase = 512;
  Bytes model = slice(fabric.memory(kB), kBase, 12);
  for (std::uint64_t i = 0; i < 300; ++i) {
    const std::size_t offset = (i * 3) % 5;  // 0..4: never where the previous write ended
    const Bytes data = u64_bytes(0x0101010101010101ull * (i + 1));
    std::copy(data.begin(), data.end(), model.begin() + static_cast<std::ptrdiff_t>(offset));
    ASSERT_TRUE(fabric.write_posted(kA, kB, kBase + offset, data));
  }
  fabric.run();
  EXPECT_GT(fabric.endpoint(kA).frames_tx(), 1u);
  EXPECT_EQ(fabric.endpoint(kB).completer().counters().writes, 300u);
  EXPECT_EQ(slice(fabric.memory(kB), kBase, 12), model);
}

TEST(PacketEngine, OverlappingPostedWritesToOneAddressLeaveTheLastValue) {
  Fabric fabric(2);
  for (std::uint64_t i = 1; i <= 200; ++i) {
    ASSERT_TRUE(fabric.write_posted(kA, kB, 2048, u64_bytes(i * 1000)));
    ASSERT_TRUE(fabric.write_posted(kA, kB, 2052, u64_bytes(i)));  // overlaps the upper half
  }
  fabric.run();
  EXPECT_EQ(load_host<std::uint32_t>(fabric.memory(kB), 2048),
            static_cast<std::uint32_t>(200 * 1000));
  EXPECT_EQ(load_host<std::uint64_t>(fabric.memory(kB), 2052), 200u);
  EXPECT_EQ(fabric.requester(kA).counters().posted_writes, 400u);
}

TEST(PacketEngine, AdjacentPostedWritesAreCombinedIntoOneTransaction) {
  Fabric fabric(2);
  Bytes expected;
  for (unsigned i = 0; i < 16; ++i) {
    const Bytes piece = pattern_bytes(8, i);
    expected.insert(expected.end(), piece.begin(), piece.end());
    ASSERT_TRUE(fabric.write_posted(kA, kB, 256 + 8 * i, piece));
  }
  fabric.run();
  const RequesterCounters& counters = fabric.requester(kA).counters();
  EXPECT_EQ(counters.posted_writes, 16u);
  EXPECT_EQ(counters.posted_bytes, 128u);
  EXPECT_EQ(counters.writes_combined, 15u);
  EXPECT_EQ(fabric.endpoint(kA).frames_tx(), 1u);
  EXPECT_EQ(fabric.endpoint(kA).txns_tx(), 1u);
  EXPECT_EQ(fabric.endpoint(kB).completer().counters().writes, 1u);
  EXPECT_EQ(fabric.endpoint(kB).completer().counters().write_bytes, 128u);
  EXPECT_EQ(slice(fabric.memory(kB), 256, 128), expected);
}

TEST(PacketEngine, NonAdjacentPostedWritesShareAFrameButNotATransaction) {
  Fabric fabric(2);
  ASSERT_TRUE(fabric.write_posted(kA, kB, 0, pattern_bytes(8, 1)));
  ASSERT_TRUE(fabric.write_posted(kA, kB, 64, pattern_bytes(8, 2)));  // gap
  ASSERT_TRUE(fabric.write_posted(kA, kB, 60, pattern_bytes(4, 3)));  // ends where #2 starts
  fabric.run();
  EXPECT_EQ(fabric.requester(kA).counters().writes_combined, 0u);
  EXPECT_EQ(fabric.endpoint(kA).frames_tx(), 1u);
  EXPECT_EQ(fabric.endpoint(kA).txns_tx(), 3u);
}

TEST(PacketEngine, RequestsIssuedBeforeAPollArePackedIntoOneFrame) {
  Fabric fabric(2);
  std::vector<OpId> ids;
  for (std::uint64_t i = 0; i < 10; ++i) ids.push_back(fabric.read(kA, kB, i * 64, 8));
  EXPECT_EQ(fabric.in_flight(), 0u);  // nothing leaves before the poll
  fabric.run();
  EXPECT_EQ(fabric.endpoint(kA).frames_tx(), 1u);
  EXPECT_EQ(fabric.endpoint(kA).txns_tx(), 10u);
  EXPECT_EQ(fabric.endpoint(kB).frames_tx(), 1u);  // the responses travel together too
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto done = fabric.completion(kA, ids[i]);
    ASSERT_TRUE(done && done->ok());
    EXPECT_EQ(done->data, slice(fabric.memory(kB), i * 64, 8));
  }
}

TEST(PacketEngine, LargeWriteAndReadAreSplitAndReassembled) {
  Fabric fabric(2);
  const std::size_t max_payload = wire::max_txn_payload(wire::kDefaultFrameBytesMax);
  const Bytes data = pattern_bytes(10000, 3);
  const std::size_t fragments = (data.size() + max_payload - 1) / max_payload;
  ASSERT_EQ(fragments, 6u);
  EXPECT_EQ(fabric.requester(kA).tags_needed(data.size()), fragments);

  const OpId write = fabric.write(kA, kB, 300, data);
  EXPECT_EQ(fabric.requester(kA).free_tags(), 256u - fragments);
  const Completion write_done = fabric.finish(kA, write);
  ASSERT_TRUE(write_done.ok()) << wire::to_string(write_done.status);
  EXPECT_EQ(slice(fabric.memory(kB), 300, data.size()), data);
  EXPECT_EQ(fabric.endpoint(kB).completer().counters().writes, fragments);

  const OpId read = fabric.read(kA, kB, 300, 10000);
  const Completion read_done = fabric.finish(kA, read);
  ASSERT_TRUE(read_done.ok()) << wire::to_string(read_done.status);
  EXPECT_EQ(read_done.data, data);
  EXPECT_EQ(fabric.endpoint(kB).completer().counters().reads, fragments);
  EXPECT_EQ(fabric.requester(kA).free_tags(), 256u);
}

TEST(PacketEngine, LargePostedWriteIsSplitIntoFrames) {
  Fabric fabric(2);
  const Bytes data = pattern_bytes(10000, 8);
  ASSERT_TRUE(fabric.write_posted(kA, kB, 1, data));
  fabric.run();
  EXPECT_EQ(fabric.endpoint(kB).completer().counters().writes, 6u);
  EXPECT_EQ(fabric.endpoint(kA).frames_tx(), 6u);
  EXPECT_EQ(slice(fabric.memory(kB), 1, data.size()), data);
}

TEST(PacketEngine, FlushCompletesOnlyAfterEarlierPostedWritesArePerformed) {
  Fabric fabric(2);
  const Bytes big = pattern_bytes(6000, 1);  // four frames of posted writes
  const Bytes small = pattern_bytes(16, 2);
  ASSERT_TRUE(fabric.write_posted(kA, kB, 0, big));
  ASSERT_TRUE(fabric.write_posted(kA, kB, 8000, small));
  const OpId flush = fabric.flush(kA, kB);
  fabric.poll_all();
  std::size_t delivered = 0;
  std::optional<Completion> done;
  while (!done && fabric.step()) {
    ++delivered;
    done = fabric.completion(kA, flush);
    if (!done) continue;
    // At the moment the flush completes every earlier posted write is in memory.
    EXPECT_EQ(slice(fabric.memory(kB), 0, big.size()), big);
    EXPECT_EQ(slice(fabric.memory(kB), 8000, small.size()), small);
  }
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->ok());
  EXPECT_EQ(done->kind, OpKind::kFlush);
  EXPECT_GE(delivered, 5u);  // four write frames, the flush, its response
  EXPECT_EQ(fabric.endpoint(kB).completer().counters().flushes, 1u);
}

// ---- Atomics -------------------------------------------------------------------------------

class PacketEngineAtomic : public ::testing::TestWithParam<std::uint8_t> {
 protected:
  std::uint8_t width() const { return GetParam(); }
  std::uint64_t mask() const { return width() == 8 ? ~std::uint64_t{0} : 0xFFFF'FFFFull; }
  void set_cell(Bytes& memory, std::size_t offset, std::uint64_t value) const {
    if (width() == 8) {
      store_host<std::uint64_t>(memory, offset, value);
    } else {
      store_host<std::uint32_t>(memory, offset, static_cast<std::uint32_t>(value));
    }
  }
  std::uint64_t cell(const Bytes& memory, std::size_t offset) const {
    return width() == 8 ? load_host<std::uint64_t>(memory, offset)
                        : load_host<std::uint32_t>(memory, offset);
  }
};

TEST_P(PacketEngineAtomic, FetchAddReturnsTheOldValueAndAdds) {
  Fabric fabric(2);
  constexpr std::size_t kCell = 4096;
  const Bytes after_cell = slice(fabric.memory(kB), kCell + width(), 8);
  set_cell(fabric.memory(kB), kCell, 0x7000'0001 & mask());
  const OpId id = fabric.atomic(kA, kB, kCell, AtomicOp::kFetchAdd, width(), 0x10);
  const Completion done = fabric.finish(kA, id);
  ASSERT_TRUE(done.ok()) << wire::to_string(done.status);
  EXPECT_EQ(done.kind, OpKind::kAtomic);
  EXPECT_EQ(done.old_value, 0x7000'0001u);
  EXPECT_EQ(cell(fabric.memory(kB), kCell), 0x7000'0011u);
  EXPECT_EQ(slice(fabric.memory(kB), kCell + width(), 8), after_cell);  // neighbours untouched
  EXPECT_EQ(fabric.endpoint(kB).completer().counters().atomics, 1u);
}

TEST_P(PacketEngineAtomic, FetchAddWrapsAtTheOperandWidth) {
  Fabric fabric(2);
  set_cell(fabric.memory(kB), 64, mask());
  const Bytes after_cell = slice(fabric.memory(kB), 64 + width(), 8);
  const Completion done =
      fabric.finish(kA, fabric.atomic(kA, kB, 64, AtomicOp::kFetchAdd, width(), 1));
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done.old_value, mask());
  EXPECT_EQ(cell(fabric.memory(kB), 64), 0u);
  EXPECT_EQ(slice(fabric.memory(kB), 64 + width(), 8), after_cell);  // no carry out
}

TEST_P(PacketEngineAtomic, SwapReturnsTheOldValueAndStoresTheNewOne) {
  Fabric fabric(2);
  const std::uint64_t old_value = 0x1122'3344'5566'7788ull & mask();
  const std::uint64_t new_value = 0xA1B2'C3D4'E5F6'0718ull & mask();
  set_cell(fabric.memory(kB), 128, old_value);
  const Completion done =
      fabric.finish(kA, fabric.atomic(kA, kB, 128, AtomicOp::kSwap, width(), new_value));
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done.old_value, old_value);
  EXPECT_EQ(cell(fabric.memory(kB), 128), new_value);
}

TEST_P(PacketEngineAtomic, CompareSwapSucceedsWhenTheValueMatches) {
  Fabric fabric(2);
  set_cell(fabric.memory(kB), 256, 42);
  const Completion done =
      fabric.finish(kA, fabric.atomic(kA, kB, 256, AtomicOp::kCompareSwap, width(), 77, 42));
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done.old_value, 42u);
  EXPECT_EQ(cell(fabric.memory(kB), 256), 77u);
}

TEST_P(PacketEngineAtomic, CompareSwapFailsAndLeavesMemoryWhenTheValueDiffers) {
  Fabric fabric(2);
  set_cell(fabric.memory(kB), 256, 41);
  const Completion done =
      fabric.finish(kA, fabric.atomic(kA, kB, 256, AtomicOp::kCompareSwap, width(), 77, 42));
  ASSERT_TRUE(done.ok());  // the operation ran; the old value tells the caller it lost
  EXPECT_EQ(done.old_value, 41u);
  EXPECT_EQ(cell(fabric.memory(kB), 256), 41u);
}

TEST_P(PacketEngineAtomic, MisalignedAtomicIsABadRequest) {
  Fabric fabric(2);
  const Bytes before = slice(fabric.memory(kB), 256, 16);
  const Completion done =
      fabric.finish(kA, fabric.atomic(kA, kB, 256 + width() / 2, AtomicOp::kFetchAdd, width(), 1));
  EXPECT_EQ(done.status, Status::kBadRequest);
  EXPECT_EQ(done.fault_addr, 256u + width() / 2);
  EXPECT_EQ(slice(fabric.memory(kB), 256, 16), before);
  EXPECT_EQ(fabric.endpoint(kB).completer().counters().atomics, 0u);
}

INSTANTIATE_TEST_SUITE_P(Widths, PacketEngineAtomic,
                         ::testing::Values(std::uint8_t{4}, std::uint8_t{8}),
                         [](const auto& width_info) {
                           return "Width" + std::to_string(width_info.param);
                         });

TEST(PacketEngine, AtomicWidthOtherThanFourOrEightFailsLocally) {
  Fabric fabric(2);
  const OpId id = fabric.atomic(kA, kB, 0, AtomicOp::kSwap, 2, 1);
  const auto done = fabric.completion(kA, id);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->status, Status::kBadRequest);
  fabric.run();
  EXPECT_EQ(fabric.endpoint(kA).frames_tx(), 0u);
}

// ---- Errors from the completer --------------------------------------------------------------

TEST(PacketEngine, ReadPastTheEndOfMemoryIsOutOfRange) {
  Fabric fabric(2);
  const Completion outside = fabric.finish(kA, fabric.read(kA, kB, kMemoryBytes + 100, 8));
  EXPECT_EQ(outside.status, Status::kOutOfRange);
  EXPECT_EQ(outside.fault_addr, kMemoryBytes + 100);
  EXPECT_TRUE(outside.data.empty());

  // Straddling the end: the fault address is the first byte that does not exist.
  const Completion straddling = fabric.finish(kA, fabric.read(kA, kB, kMemoryBytes - 4, 8));
  EXPECT_EQ(straddling.status, Status::kOutOfRange);
  EXPECT_EQ(straddling.fault_addr, kMemoryBytes);
  EXPECT_EQ(fabric.endpoint(kB).completer().counters().errors_by_status[static_cast<std::size_t>(
                Status::kOutOfRange)],
            2u);
  EXPECT_EQ(fabric.requester(kA).counters().ops_failed, 2u);
}

TEST(PacketEngine, SplitReadFailsAsAWholeWhenOneFragmentIsOutOfRange) {
  Fabric fabric(2);
  const std::uint64_t start = kMemoryBytes - 3000;  // the second fragment runs past the end
  const Completion done = fabric.finish(kA, fabric.read(kA, kB, start, 5000));
  EXPECT_EQ(done.status, Status::kOutOfRange);
  EXPECT_EQ(done.fault_addr, kMemoryBytes);
  EXPECT_TRUE(done.data.empty());
  EXPECT_EQ(fabric.requester(kA).free_tags(), 256u);
}

TEST(PacketEngine, WriteWithoutExportedWriteRightIsRefused) {
  Fabric fabric(2, [](EngineConfig& config) {
    if (config.self == kB) config.export_rights = static_cast<Rights>(kRightRead | kRightAtomic);
  });
  const Bytes before = slice(fabric.memory(kB), 0, 64);

  const Completion write = fabric.finish(kA, fabric.write(kA, kB, 0, pattern_bytes(64, 1)));
  EXPECT_EQ(write.status, Status::kNoRights);
  EXPECT_EQ(write.fault_addr, 0u);

  ASSERT_TRUE(fabric.write_posted(kA, kB, 0, pattern_bytes(64, 2)));
  fabric.run();
  const CompleterCounters& counters = fabric.endpoint(kB).completer().counters();
  EXPECT_EQ(counters.posted_write_errors, 1u);
  EXPECT_EQ(counters.errors_by_status[static_cast<std::size_t>(Status::kNoRights)], 2u);
  EXPECT_EQ(counters.writes, 0u);
  EXPECT_EQ(slice(fabric.memory(kB), 0, 64), before);

  // What is exported still works.
  const Completion read = fabric.finish(kA, fabric.read(kA, kB, 0, 64));
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read.data, before);
  const Completion atomic = fabric.finish(kA, fabric.atomic(kA, kB, 0, AtomicOp::kSwap, 8, 5));
  EXPECT_TRUE(atomic.ok());
}

TEST(PacketEngine, DifferentPartitionsCannotAccessEachOther) {
  Fabric fabric(2, [](EngineConfig& config) {
    config.partition = static_cast<std::uint16_t>(config.self == kA ? 1 : 2);
  });
  const Bytes before = slice(fabric.memory(kB), 0, 8);
  const Completion read = fabric.finish(kA, fabric.read(kA, kB, 0, 8));
  EXPECT_EQ(read.status, Status::kPartition);
  const Completion swap = fabric.finish(kA, fabric.atomic(kA, kB, 0, AtomicOp::kSwap, 8, 5));
  EXPECT_EQ(swap.status, Status::kPartition);
  const Completion flush = fabric.finish(kA, fabric.flush(kA, kB));
  EXPECT_EQ(flush.status, Status::kPartition);
  EXPECT_EQ(slice(fabric.memory(kB), 0, 8), before);
}

// ---- Local failures and timeouts -----------------------------------------------------------

TEST(PacketEngine, DroppedResponseTimesOutAndFreesTheTag) {
  Fabric fabric(2);
  fabric.filter = [](const wire::Frame& frame) {
    return src_gpu_of(frame) == kB ? Verdict::kDrop : Verdict::kDeliver;
  };
  fabric.advance_to(5'000);
  const OpId id = fabric.read(kA, kB, 0, 64);
  EXPECT_EQ(fabric.requester(kA).free_tags(), 255u);
  fabric.run();
  EXPECT_EQ(fabric.dropped, 1u);
  EXPECT_FALSE(fabric.completion(kA, id).has_value());
  EXPECT_EQ(fabric.wake_at(kA), 5'000 + kTimeoutNs);

  fabric.advance_to(5'000 + kTimeoutNs - 1);
  fabric.poll(kA);
  EXPECT_FALSE(fabric.completion(kA, id).has_value());
  EXPECT_EQ(fabric.wake_at(kA), 5'000 + kTimeoutNs);

  fabric.advance_to(5'000 + kTimeoutNs);
  fabric.poll(kA);
  const auto done = fabric.completion(kA, id);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->status, Status::kTimeout);
  EXPECT_EQ(done->fault_addr, 0u);
  EXPECT_EQ(done->completed_ns, 5'000 + kTimeoutNs);
  EXPECT_EQ(fabric.requester(kA).free_tags(), 256u);
  EXPECT_EQ(fabric.requester(kA).outstanding_ops(), 0u);
  EXPECT_EQ(fabric.requester(kA).counters().timeouts, 1u);
  EXPECT_FALSE(fabric.wake_at(kA).has_value());  // nothing left to wait for
}

TEST(PacketEngine, LateResponseAfterTheTimeoutIsCountedStaleAndIgnored) {
  Fabric fabric(2);
  fabric.filter = [](const wire::Frame& frame) {
    return src_gpu_of(frame) == kB ? Verdict::kHold : Verdict::kDeliver;
  };
  const OpId id = fabric.read(kA, kB, 0, 64);
  fabric.run();
  ASSERT_EQ(fabric.held.size(), 1u);
  fabric.advance_to(kTimeoutNs);
  fabric.poll(kA);
  const auto done = fabric.completion(kA, id);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->status, Status::kTimeout);

  // A new read may reuse tags; the late answer must not complete it.
  fabric.filter = {};
  const OpId next = fabric.read(kA, kB, 512, 8);
  fabric.poll(kA);
  fabric.release_held();
  EXPECT_EQ(fabric.requester(kA).counters().stale_responses, 1u);
  EXPECT_FALSE(fabric.completion(kA, id).has_value());
  const auto next_done = fabric.completion(kA, next);
  ASSERT_TRUE(next_done && next_done->ok());
  EXPECT_EQ(next_done->data, slice(fabric.memory(kB), 512, 8));
  EXPECT_EQ(fabric.requester(kA).counters().ops_completed, 1u);
}

TEST(PacketEngine, ResponseFromAGpuThatWasNotAskedIsStale) {
  Fabric fabric(3);
  fabric.filter = [](const wire::Frame& frame) {
    return src_gpu_of(frame) == kB ? Verdict::kHold : Verdict::kDeliver;
  };
  const OpId id = fabric.read(kA, kB, 0, 8);
  fabric.run();
  ASSERT_EQ(fabric.held.size(), 1u);

  // C forges B's answer with the right tag.
  wire::FrameView held_view;
  ASSERT_EQ(wire::decode_frame(fabric.held[0], held_view), wire::DecodeError::kOk);
  const auto held_txns = txns_of(held_view);
  ASSERT_EQ(held_txns.size(), 1u);
  wire::FrameBuilder builder(wire::kDefaultFrameBytesMax);
  builder.start({default_mac_for_gpu(kA), default_mac_for_gpu(kC), kC, kA, 0});
  auto payload = builder.append({wire::Opcode::kReadResp, Status::kOk, held_txns[0].tag, 8, 0}, 8);
  std::fill(payload.begin(), payload.end(), std::byte{0xEE});
  const wire::Frame forged = builder.finish();
  fabric.inject(kA, forged);
  EXPECT_EQ(fabric.requester(kA).counters().stale_responses, 1u);
  EXPECT_FALSE(fabric.completion(kA, id).has_value());

  fabric.release_held();
  const auto done = fabric.completion(kA, id);
  ASSERT_TRUE(done && done->ok());
  EXPECT_EQ(done->data, slice(fabric.memory(kB), 0, 8));
}

TEST(PacketEngine, ResponseOfTheWrongKindFailsTheOp) {
  Fabric fabric(2);
  fabric.filter = [](const wire::Frame& frame) {
    return src_gpu_of(frame) == kB ? Verdict::kDrop : Verdict::kDeliver;
  };
  const OpId id = fabric.read(kA, kB, 0, 8);
  fabric.poll(kA);
  ASSERT_EQ(fabric.in_flight(), 1u);
  wire::FrameView request;
  ASSERT_EQ(wire::decode_frame(fabric.frames_in_flight().front(), request), wire::DecodeError::kOk);
  const std::uint16_t tag = txns_of(request).at(0).tag;
  fabric.run();

  wire::FrameBuilder builder(wire::kDefaultFrameBytesMax);
  builder.start({default_mac_for_gpu(kA), default_mac_for_gpu(kB), kB, kA, 0});
  builder.append({wire::Opcode::kWriteAck, Status::kOk, tag, 8, 0}, 0);
  fabric.inject(kA, builder.finish());
  const auto done = fabric.completion(kA, id);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->status, Status::kBadRequest);
  EXPECT_EQ(fabric.requester(kA).counters().bad_responses, 1u);
  EXPECT_EQ(fabric.requester(kA).free_tags(), 256u);
}

TEST(PacketEngine, UnknownDestinationFailsImmediatelyAsUnreachable) {
  Fabric fabric(2);
  const GpuId nowhere = 7;
  const OpId read = fabric.read(kA, nowhere, 0, 8);
  const auto read_done = fabric.completion(kA, read);  // before any poll or delivery
  ASSERT_TRUE(read_done.has_value());
  EXPECT_EQ(read_done->status, Status::kUnreachable);
  for (OpId id :
       {fabric.write(kA, nowhere, 0, pattern_bytes(8, 0)),
        fabric.atomic(kA, nowhere, 0, AtomicOp::kSwap, 8, 1), fabric.flush(kA, nowhere)}) {
    const auto done = fabric.completion(kA, id);
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->status, Status::kUnreachable);
  }
  EXPECT_FALSE(fabric.write_posted(kA, nowhere, 0, pattern_bytes(8, 0)));
  fabric.run();
  EXPECT_EQ(fabric.endpoint(kA).frames_tx(), 0u);
  EXPECT_EQ(fabric.requester(kA).free_tags(), 256u);
  EXPECT_EQ(fabric.requester(kA).counters().ops_failed, 4u);
}

TEST(PacketEngine, TagExhaustionIsReportedAsBusy) {
  Fabric fabric(2, [](EngineConfig& config) { config.max_outstanding = 4; });
  std::vector<OpId> reads;
  for (std::uint64_t i = 0; i < 4; ++i) reads.push_back(fabric.read(kA, kB, i * 8, 8));
  EXPECT_EQ(fabric.requester(kA).free_tags(), 0u);

  const OpId busy = fabric.read(kA, kB, 64, 8);
  const auto busy_done = fabric.completion(kA, busy);
  ASSERT_TRUE(busy_done.has_value());
  EXPECT_EQ(busy_done->status, Status::kBusy);
  const auto flush_done = fabric.completion(kA, fabric.flush(kA, kB));
  ASSERT_TRUE(flush_done.has_value());
  EXPECT_EQ(flush_done->status, Status::kBusy);
  EXPECT_EQ(fabric.requester(kA).counters().busy_rejects, 2u);

  fabric.run();
  for (OpId id : reads) {
    const auto done = fabric.completion(kA, id);
    ASSERT_TRUE(done.has_value());
    EXPECT_TRUE(done->ok());
  }
  EXPECT_EQ(fabric.requester(kA).free_tags(), 4u);
}

TEST(PacketEngine, SplitRequestNeedingMoreTagsThanFreeIsBusyAndSendsNothing) {
  Fabric fabric(2, [](EngineConfig& config) { config.max_outstanding = 4; });
  const OpId id = fabric.read(kA, kB, 0, 5 * 1728);  // five fragments, four tags
  const auto done = fabric.completion(kA, id);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->status, Status::kBusy);
  EXPECT_EQ(fabric.requester(kA).free_tags(), 4u);
  fabric.run();
  EXPECT_EQ(fabric.endpoint(kA).frames_tx(), 0u);
}

// ---- Write combining delay -----------------------------------------------------------------

TEST(PacketEngine, WriteCombineDelayHoldsPostedWritesUntilItsTime) {
  Fabric fabric(2, [](EngineConfig& config) { config.write_combine_ns = 500; });
  fabric.advance_to(100);
  ASSERT_TRUE(fabric.write_posted(kA, kB, 0, pattern_bytes(8, 1)));
  fabric.poll(kA);
  EXPECT_EQ(fabric.in_flight(), 0u);
  EXPECT_EQ(fabric.wake_at(kA), TimeNs{600});

  fabric.advance_to(300);
  ASSERT_TRUE(fabric.write_posted(kA, kB, 8, pattern_bytes(8, 2)));  // joins the held write
  fabric.advance_to(599);
  fabric.poll(kA);
  EXPECT_EQ(fabric.in_flight(), 0u);
  EXPECT_EQ(fabric.wake_at(kA), TimeNs{600});  // the frame's opening time counts

  fabric.advance_to(600);
  fabric.poll(kA);
  EXPECT_EQ(fabric.in_flight(), 1u);
  EXPECT_FALSE(fabric.wake_at(kA).has_value());
  while (fabric.step()) {
  }
  EXPECT_EQ(fabric.endpoint(kA).txns_tx(), 1u);
  EXPECT_EQ(fabric.requester(kA).counters().writes_combined, 1u);
  Bytes expected = pattern_bytes(8, 1);
  const Bytes second = pattern_bytes(8, 2);
  expected.insert(expected.end(), second.begin(), second.end());
  EXPECT_EQ(slice(fabric.memory(kB), 0, 16), expected);
}

TEST(PacketEngine, UrgentRequestTakesHeldPostedWritesAlongAtOnce) {
  Fabric fabric(2, [](EngineConfig& config) { config.write_combine_ns = 10'000; });
  const Bytes data = pattern_bytes(32, 4);
  ASSERT_TRUE(fabric.write_posted(kA, kB, 700, data));
  fabric.poll(kA);
  EXPECT_EQ(fabric.in_flight(), 0u);
  const OpId read = fabric.read(kA, kB, 700, 32);  // now is still 0
  fabric.poll(kA);
  EXPECT_EQ(fabric.in_flight(), 1u);
  const Completion done = fabric.finish(kA, read);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done.data, data);
  EXPECT_EQ(fabric.endpoint(kA).frames_tx(), 1u);
}

// ---- Bad frames ----------------------------------------------------------------------------

TEST(PacketEngine, GarbageFramesAreCountedByReasonAndServiceContinues) {
  Fabric fabric(2);
  // A valid request frame to corrupt.
  fabric.read(kA, kB, 0, 8);
  fabric.poll(kA);
  ASSERT_EQ(fabric.in_flight(), 1u);
  wire::Frame good = fabric.frames_in_flight().front();

  wire::Frame bad_crc = good;
  bad_crc[40] ^= std::byte{0x10};
  fabric.inject(kB, bad_crc);
  fabric.inject(kB, wire::Frame(good.begin(), good.begin() + 10));
  fabric.inject(kB, wire::Frame(good.begin(), good.begin() + 20));
  fabric.inject(kB, wire::make_echo_frame(default_mac_for_gpu(kB), default_mac_for_gpu(kA),
                                          pattern_bytes(46, 0)));
  fabric.inject(kB, wire::Frame(100, std::byte{0xFF}));
  fabric.inject(kB, wire::Frame{});

  const EndpointCounters& counters = fabric.endpoint(kB).counters();
  const auto reason = [&](wire::DecodeError error) {
    return counters.malformed_by_reason[static_cast<std::size_t>(error)];
  };
  EXPECT_EQ(counters.frames_rx, 6u);
  EXPECT_EQ(counters.malformed, 6u);
  EXPECT_EQ(reason(wire::DecodeError::kBadCrc), 1u);
  EXPECT_EQ(reason(wire::DecodeError::kTruncatedEthernet), 2u);
  EXPECT_EQ(reason(wire::DecodeError::kTruncatedHeader), 1u);
  EXPECT_EQ(reason(wire::DecodeError::kNotFabric), 2u);
  EXPECT_EQ(counters.txns_rx, 0u);
  EXPECT_EQ(fabric.in_flight(), 1u);  // no responses to garbage
  EXPECT_EQ(fabric.endpoint(kB).completer().counters().reads, 0u);

  // The genuine frame is still served.
  const OpId id = fabric.read(kA, kB, 64, 16);
  const Completion done = fabric.finish(kA, id);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done.data, slice(fabric.memory(kB), 64, 16));
  EXPECT_EQ(fabric.endpoint(kB).counters().malformed, 6u);
}

TEST(PacketEngine, FrameForAnotherGpuIsCountedMisdeliveredAndNotServed) {
  Fabric fabric(3);
  const Bytes before = slice(fabric.memory(kB), 0, 8);
  // Right MAC, wrong GPU id; then right GPU id, wrong MAC.
  for (const auto& [mac, gpu] :
       {std::pair{default_mac_for_gpu(kB), kC}, std::pair{default_mac_for_gpu(kC), kB}}) {
    wire::FrameBuilder builder(wire::kDefaultFrameBytesMax);
    builder.start({mac, default_mac_for_gpu(kA), kA, gpu, 0});
    auto payload = builder.append({wire::Opcode::kWritePosted, Status::kOk, 0, 8, 0}, 8);
    std::fill(payload.begin(), payload.end(), std::byte{0x42});
    fabric.inject(kB, builder.finish());
  }
  EXPECT_EQ(fabric.endpoint(kB).counters().misdelivered, 2u);
  EXPECT_EQ(fabric.endpoint(kB).counters().malformed, 0u);
  EXPECT_EQ(fabric.endpoint(kB).completer().counters().writes, 0u);
  EXPECT_EQ(slice(fabric.memory(kB), 0, 8), before);
  EXPECT_EQ(fabric.in_flight(), 0u);
}

}  // namespace
}  // namespace ethx
