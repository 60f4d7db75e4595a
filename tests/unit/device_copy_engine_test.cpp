// The GPU's copy engine on its own (qemu-device/host/copy_engine.hpp): a window of reads in
// 4 KiB chunks that never straddle a window edge, each answer written to its destination, a
// flush per GPU written to before the copy ends, the GPU's own memory used directly, and the
// first failure reported with its address while what is in flight drains. A fake node records
// what the engine issues; the test answers it.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "qemu-device/host/copy_engine.hpp"
#include "tests/unit/fake_node_requests.hpp"

namespace ethx {
namespace {

using test::answer;
using test::FakeNodeRequests;
using Kind = FakeNodeRequests::Kind;

constexpr std::uint64_t kAperture = 1 << 20;  // = hbm_bytes: GPU g's window at g x 1 MiB
constexpr std::uint64_t kChunk = 4096;

std::uint64_t window(GpuId gpu, std::uint64_t offset) {
  return gpu * kAperture + offset;
}

std::vector<std::byte> pattern(std::size_t bytes, unsigned seed) {
  std::vector<std::byte> data(bytes);
  for (std::size_t i = 0; i < bytes; ++i) data[i] = std::byte((i * 31 + seed) & 0xff);
  return data;
}

class CopyEngineTest : public ::testing::Test {
 protected:
  CopyEngineTest()
      : topology_(parse_topology("[fabric]\ngpus = 4\nhbm_bytes = 1048576\n"
                                 "aperture_bytes = 1048576\n",
                                 "copy-engine-test")),
        map_(topology_.address_map()),
        memory_(kAperture),
        copy_(map_, 0, memory_, CopyLimits{.aperture_bytes = kAperture}) {}

  // Answers every read issued so far and not answered yet with its pattern (seeded by the
  // read's remote address), in issue order.
  void answer_reads() {
    const std::vector<FakeNodeRequests::Call> reads = node_.of(Kind::kRead);
    for (std::size_t i = answered_reads_; i < reads.size(); ++i) {
      const FakeNodeRequests::Call& read = reads[i];
      EXPECT_TRUE(copy_.on_completion(
          answer(read, wire::Status::kOk, pattern(read.length, read.remote & 0xff)), node_));
    }
    answered_reads_ = reads.size();
  }
  // The copy has ended with `status` at `fault_addr`.
  void expect_result(DeviceStatus status, std::uint64_t fault_addr) {
    const std::optional<DeviceResult> result = copy_.take_result();
    ASSERT_TRUE(result) << "still running";
    EXPECT_EQ(result->status, status) << to_string(result->status);
    EXPECT_EQ(result->fault_addr, fault_addr);
  }

  TopologyConfig topology_;
  AddressMap map_;
  std::vector<std::byte> memory_;  // GPU 0's own
  CopyEngine copy_;
  FakeNodeRequests node_;
  std::size_t answered_reads_ = 0;
};

TEST_F(CopyEngineTest, KeepsAWindowOfReadsInFlightAndFlushesWhereItWroteBeforeItEnds) {
  constexpr std::uint64_t kBytes = 64 * kChunk;
  copy_.start(window(1, 0), window(2, 0x1000), kBytes);
  copy_.advance(node_);
  const std::vector<FakeNodeRequests::Call> reads = node_.of(Kind::kRead);
  ASSERT_EQ(reads.size(), 32u) << "32 reads of 4 KiB in flight, no more";
  EXPECT_EQ(copy_.reads_in_flight(), 32u);
  for (std::size_t i = 0; i < 32; ++i) {
    const FakeNodeRequests::Call& read = reads[i];
    EXPECT_EQ(read.gpu, 1u);
    EXPECT_EQ(read.remote, i * kChunk);
    EXPECT_EQ(read.length, kChunk);
  }
  // One answer: its data goes out as a posted write to the destination; one more read fits.
  ASSERT_TRUE(copy_.on_completion(answer(reads[0], wire::Status::kOk, pattern(kChunk, 7)), node_));
  ASSERT_EQ(node_.of(Kind::kWrite).size(), 1u);
  EXPECT_EQ(node_.of(Kind::kWrite)[0].gpu, 2u);
  EXPECT_EQ(node_.of(Kind::kWrite)[0].remote, 0x1000u);
  EXPECT_EQ(node_.of(Kind::kWrite)[0].data, pattern(kChunk, 7));
  answered_reads_ = 1;
  copy_.advance(node_);
  EXPECT_EQ(node_.of(Kind::kRead).size(), 33u);

  while (node_.of(Kind::kFlush).empty()) {
    answer_reads();
    copy_.advance(node_);
    ASSERT_LE(node_.of(Kind::kRead).size(), 64u);
  }
  EXPECT_EQ(node_.of(Kind::kWrite).size(), 64u);
  ASSERT_EQ(node_.of(Kind::kFlush).size(), 1u) << "one flush, to the one GPU written to";
  EXPECT_EQ(node_.of(Kind::kFlush)[0].gpu, 2u);
  EXPECT_FALSE(copy_.take_result()) << "ended before its flush was answered";
  ASSERT_TRUE(copy_.on_completion(answer(node_.of(Kind::kFlush)[0]), node_));
  expect_result(DeviceStatus::kOk, 0);
  EXPECT_EQ(copy_.moved_bytes(), kBytes);
  EXPECT_FALSE(copy_.running());
  EXPECT_FALSE(copy_.take_result()) << "a result is taken once";
}

TEST_F(CopyEngineTest, ChunksNeverStraddleAWindowEdgeOnEitherSide) {
  // The source crosses from GPU 1's window into GPU 2's after 100 bytes, the destination from
  // GPU 2's into GPU 3's after 4146.
  copy_.start(window(1, kAperture - 100), window(2, kAperture - 4146), 3 * kChunk);
  copy_.advance(node_);
  const std::vector<FakeNodeRequests::Call> reads = node_.of(Kind::kRead);
  ASSERT_EQ(reads.size(), 4u);
  EXPECT_EQ(reads[0].gpu, 1u);
  EXPECT_EQ(reads[0].length, 100u) << "cut where the source's window ends";
  EXPECT_EQ(reads[1].gpu, 2u);
  EXPECT_EQ(reads[1].remote, 0u);
  EXPECT_EQ(reads[1].length, 4046u) << "cut where the destination's window ends";
  EXPECT_EQ(reads[2].length, kChunk);
  EXPECT_EQ(reads[3].length, 3 * kChunk - 100 - 4046 - kChunk);
  for (const auto& read : reads) EXPECT_LE(read.remote % kAperture + read.length, kAperture);
}

TEST_F(CopyEngineTest, ItsOwnMemoryIsReadAndWrittenDirectly) {
  const std::vector<std::byte> source = pattern(2 * kChunk, 3);
  std::memcpy(memory_.data() + 0x8000, source.data(), source.size());
  copy_.start(window(0, 0x8000), window(1, 0x100), 2 * kChunk);
  copy_.advance(node_);
  EXPECT_TRUE(node_.of(Kind::kRead).empty()) << "its own memory needs no read";
  ASSERT_EQ(node_.of(Kind::kWrite).size(), 2u);
  EXPECT_EQ(node_.of(Kind::kWrite)[1].remote, 0x100 + kChunk);
  EXPECT_TRUE(
      std::equal(source.begin() + kChunk, source.end(), node_.of(Kind::kWrite)[1].data.begin()));
  ASSERT_EQ(node_.of(Kind::kFlush).size(), 1u);
  ASSERT_TRUE(copy_.on_completion(answer(node_.of(Kind::kFlush)[0]), node_));
  expect_result(DeviceStatus::kOk, 0);

  // Into its own memory: the answers land there, and nothing needs a flush.
  node_.calls.clear();
  copy_.start(window(3, 0x2000), window(0, 0x10000), kChunk);
  copy_.advance(node_);
  answered_reads_ = 0;
  answer_reads();
  copy_.advance(node_);
  EXPECT_TRUE(node_.of(Kind::kFlush).empty());
  expect_result(DeviceStatus::kOk, 0);
  const std::vector<std::byte> expected = pattern(kChunk, 0x2000 & 0xff);
  EXPECT_EQ(std::memcmp(memory_.data() + 0x10000, expected.data(), kChunk), 0);
}

TEST_F(CopyEngineTest, AFailedReadNamesItsSourceStopsIssuingAndTheRestDrains) {
  copy_.start(window(1, 0), window(2, 0), 64 * kChunk);
  copy_.advance(node_);
  const std::vector<FakeNodeRequests::Call> reads = node_.of(Kind::kRead);
  ASSERT_EQ(reads.size(), 32u);
  ASSERT_TRUE(copy_.on_completion(answer(reads[0], wire::Status::kOk, pattern(kChunk, 1)), node_));
  ASSERT_TRUE(copy_.on_completion(answer(reads[1], wire::Status::kTimeout), node_));
  copy_.advance(node_);
  EXPECT_EQ(node_.of(Kind::kRead).size(), 32u) << "nothing issued after the failure";
  for (std::size_t i = 2; i < reads.size(); ++i) {
    ASSERT_TRUE(
        copy_.on_completion(answer(reads[i], wire::Status::kOk, pattern(kChunk, 2)), node_));
    EXPECT_FALSE(copy_.take_result()) << "reads still in flight";
  }
  EXPECT_EQ(node_.of(Kind::kWrite).size(), 1u) << "answers after the failure are dropped";
  copy_.advance(node_);
  ASSERT_EQ(node_.of(Kind::kFlush).size(), 1u) << "what was written is still flushed";
  ASSERT_TRUE(copy_.on_completion(answer(node_.of(Kind::kFlush)[0]), node_));
  expect_result(DeviceStatus::kTimeout, window(1, kChunk));
}

TEST_F(CopyEngineTest, NoChunkLeavesWhileThePortIsBackedUpOrTagsAreShort) {
  copy_.start(window(1, 0), window(2, 0), 4 * kChunk);
  node_.backlog = 65;
  copy_.advance(node_);
  EXPECT_TRUE(node_.calls.empty());
  node_.backlog = 0;
  node_.tags = 3;  // a 4 KiB read needs 4 tags of 1 KiB here
  copy_.advance(node_);
  EXPECT_TRUE(node_.calls.empty());
  node_.tags = 4;
  copy_.advance(node_);
  EXPECT_EQ(node_.of(Kind::kRead).size(), 4u) << "the fake's tags do not run out";
  EXPECT_TRUE(copy_.running());
}

TEST_F(CopyEngineTest, AnAddressOutsideEveryWindowFailsWithoutAFrame) {
  copy_.start(window(4, 0), window(1, 0), kChunk);  // 4 GPUs: window 4 does not exist
  copy_.advance(node_);
  EXPECT_TRUE(node_.calls.empty());
  expect_result(DeviceStatus::kOutOfWindow, window(4, 0));
}

TEST_F(CopyEngineTest, AFailedFlushNamesTheGpuThatDidNotAnswer) {
  copy_.start(window(0, 0), window(3, 0x40), kChunk);
  copy_.advance(node_);
  ASSERT_EQ(node_.of(Kind::kFlush).size(), 1u);
  ASSERT_TRUE(
      copy_.on_completion(answer(node_.of(Kind::kFlush)[0], wire::Status::kUnreachable), node_));
  expect_result(DeviceStatus::kUnreachable, window(3, 0));
}

TEST_F(CopyEngineTest, ACompletionOfAnotherPartsOperationIsNotTheCopys) {
  copy_.start(window(1, 0), window(2, 0), kChunk);
  copy_.advance(node_);
  Completion other;
  other.id = 999;
  EXPECT_FALSE(copy_.on_completion(other, node_));
  EXPECT_EQ(copy_.reads_in_flight(), 1u);
}

}  // namespace
}  // namespace ethx
