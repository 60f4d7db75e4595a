// The callers' requests inside a GpuDevice (qemu-device/host/request_table.hpp,
// device_request.hpp, local_access.hpp), with a fake node: issued strictly in queue order (a
// request that must wait holds back everything behind it, so a load never passes earlier
// stores), answered by their completions, flush_all flushing every GPU written to or with a
// flush in flight, the GPU's own window served from its memory, and every waiting request
// answered when the device goes away.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "qemu-device/host/local_access.hpp"
#include "qemu-device/host/request_table.hpp"
#include "tests/unit/fake_node_requests.hpp"

namespace ethx {
namespace {

using test::answer;
using test::FakeNodeRequests;
using Kind = FakeNodeRequests::Kind;

constexpr std::uint64_t kAperture = 1 << 20;

std::uint64_t window(GpuId gpu, std::uint64_t offset) {
  return gpu * kAperture + offset;
}

class RequestTableTest : public ::testing::Test {
 protected:
  RequestTableTest()
      : topology_(parse_topology("[fabric]\ngpus = 4\nhbm_bytes = 1048576\n"
                                 "aperture_bytes = 1048576\n",
                                 "request-table-test")),
        map_(topology_.address_map()),
        memory_(kAperture / 8),
        table_({0, 4, kAperture, 64}, std::as_writable_bytes(std::span(memory_)), failures_) {}

  std::shared_ptr<DeviceRequest> request(RequestKind kind, std::uint64_t window_addr,
                                         unsigned width, std::uint64_t value = 0) {
    PreparedRequest prepared = prepare_request(map_, kind, window_addr, width);
    EXPECT_TRUE(prepared.request) << to_string(prepared.error.status);
    prepared.request->value = value;
    return prepared.request;
  }
  std::shared_ptr<DeviceRequest> queue(RequestKind kind, std::uint64_t window_addr, unsigned width,
                                       std::uint64_t value = 0) {
    table_.queue().push_back(request(kind, window_addr, width, value));
    return table_.queue().back();
  }
  std::shared_ptr<DeviceRequest> queue_flush_all() {
    auto flush = std::make_shared<DeviceRequest>();
    flush->kind = RequestKind::kFlushAll;
    table_.queue().push_back(flush);
    return flush;
  }

  TopologyConfig topology_;
  AddressMap map_;
  std::vector<std::uint64_t> memory_;  // GPU 0's own, 8-byte aligned for the atomics
  FailureCounters failures_;
  RequestTable table_;
  FakeNodeRequests node_;
};

TEST_F(RequestTableTest, ALoadNeverPassesTheStoresQueuedBeforeIt) {
  queue(RequestKind::kStore, window(1, 0x10), 8, 1);
  queue(RequestKind::kStore, window(2, 0x20), 4, 2);
  const auto load = queue(RequestKind::kLoad, window(1, 0x10), 8);
  node_.backlog = 65;  // the port is backed up: the stores wait, and so does the load
  table_.issue(node_);
  EXPECT_TRUE(node_.calls.empty()) << "the load passed the stores waiting for the port";
  EXPECT_EQ(table_.queue().size(), 3u);
  node_.backlog = 0;
  table_.issue(node_);
  ASSERT_EQ(node_.calls.size(), 3u);
  EXPECT_EQ(node_.calls[0].kind, Kind::kWrite);
  EXPECT_EQ(node_.calls[0].gpu, 1u);
  EXPECT_EQ(node_.calls[0].remote, 0x10u);
  EXPECT_EQ(node_.calls[1].kind, Kind::kWrite);
  EXPECT_EQ(node_.calls[1].data.size(), 4u);
  EXPECT_EQ(node_.calls[2].kind, Kind::kRead);
  EXPECT_FALSE(load->finished());
  EXPECT_TRUE(table_.queue().empty());
  EXPECT_FALSE(table_.idle()) << "the load is in flight";
}

TEST_F(RequestTableTest, ARequestWaitingForTagsHoldsBackEverythingBehindIt) {
  queue(RequestKind::kLoad, window(1, 0), 8);
  queue(RequestKind::kStore, window(1, 8), 8, 5);
  node_.tags = 0;
  table_.issue(node_);
  EXPECT_TRUE(node_.calls.empty());
  node_.tags = 1;
  table_.issue(node_);
  ASSERT_EQ(node_.calls.size(), 2u);
  EXPECT_EQ(node_.calls[0].kind, Kind::kRead);
  EXPECT_EQ(node_.calls[1].kind, Kind::kWrite);
}

TEST_F(RequestTableTest, AnswersFinishTheirRequestsAndFailuresReadAllOnes) {
  const auto load = queue(RequestKind::kLoad, window(1, 0x40), 4);
  const auto atomic = queue(RequestKind::kAtomic, window(2, 0x80), 8, 3);
  const auto lost = queue(RequestKind::kLoad, window(3, 0x100), 8);
  table_.issue(node_);
  ASSERT_EQ(node_.calls.size(), 3u);
  EXPECT_EQ(node_.calls[1].operand, 3u);
  const std::vector<std::byte> data = {std::byte{0x78}, std::byte{0x56}, std::byte{0x34},
                                       std::byte{0x12}};
  EXPECT_TRUE(table_.on_completion(answer(node_.calls[0], wire::Status::kOk, data)));
  EXPECT_TRUE(table_.on_completion(answer(node_.calls[1], wire::Status::kOk, {}, 41)));
  EXPECT_TRUE(table_.on_completion(answer(node_.calls[2], wire::Status::kTimeout)));
  EXPECT_EQ(load->wait().value, 0x12345678u) << "little-endian, as on the wire";
  EXPECT_EQ(atomic->wait().value, 41u) << "an atomic answers the old value";
  const DeviceResult failed = lost->wait();
  EXPECT_EQ(failed.status, DeviceStatus::kTimeout);
  EXPECT_EQ(failed.value, ~std::uint64_t{0});
  EXPECT_EQ(failed.fault_addr, window(3, 0x100));
  EXPECT_EQ(failures_.errors.load(), 1u);
  EXPECT_EQ(failures_.timeouts.load(), 1u);
  EXPECT_TRUE(table_.idle());
  Completion other;
  other.id = 999;
  EXPECT_FALSE(table_.on_completion(other)) << "an answer to someone else's operation";
}

TEST_F(RequestTableTest, FlushAllCoversEveryGpuWrittenToAndEveryFlushStillInFlight) {
  queue(RequestKind::kStore, window(1, 0), 8, 1);
  queue(RequestKind::kStore, window(2, 0), 8, 2);
  const auto first = queue_flush_all();
  table_.issue(node_);
  ASSERT_EQ(node_.of(Kind::kFlush).size(), 2u);
  // Nothing written since, but the first flush is unanswered: a second flush_all must not
  // return before those stores are performed, so it flushes both GPUs again.
  const auto second = queue_flush_all();
  table_.issue(node_);
  const std::vector<FakeNodeRequests::Call> flushes = node_.of(Kind::kFlush);
  ASSERT_EQ(flushes.size(), 4u);
  EXPECT_EQ(flushes[2].gpu, 1u);
  EXPECT_EQ(flushes[3].gpu, 2u);
  for (const auto& flush : flushes) EXPECT_TRUE(table_.on_completion(answer(flush)));
  EXPECT_EQ(first->wait().status, DeviceStatus::kOk);
  EXPECT_EQ(second->wait().status, DeviceStatus::kOk);
  // Nothing written and nothing in flight: done at once, without a frame.
  const auto third = queue_flush_all();
  table_.issue(node_);
  EXPECT_EQ(node_.of(Kind::kFlush).size(), 4u);
  EXPECT_TRUE(third->finished());
  EXPECT_EQ(third->result.status, DeviceStatus::kOk);
}

TEST_F(RequestTableTest, AFailedFlushNamesTheGpuThatFailedByItsWindow) {
  queue(RequestKind::kStore, window(1, 0), 8, 1);
  queue(RequestKind::kStore, window(3, 0), 8, 1);
  const auto flush = queue_flush_all();
  table_.issue(node_);
  const std::vector<FakeNodeRequests::Call> flushes = node_.of(Kind::kFlush);
  ASSERT_EQ(flushes.size(), 2u);
  EXPECT_TRUE(table_.on_completion(answer(flushes[1], wire::Status::kUnreachable)));
  EXPECT_FALSE(flush->finished()) << "GPU 1 has not answered yet";
  EXPECT_TRUE(table_.on_completion(answer(flushes[0])));
  const DeviceResult result = flush->wait();
  EXPECT_EQ(result.status, DeviceStatus::kUnreachable);
  EXPECT_EQ(result.fault_addr, window(3, 0));
}

TEST_F(RequestTableTest, TheGpusOwnWindowIsServedFromItsMemoryWithoutAFrame) {
  queue(RequestKind::kStore, window(0, 0x18), 4, 0xcafef00d);
  const auto load = queue(RequestKind::kLoad, window(0, 0x18), 4);
  const auto add = queue(RequestKind::kAtomic, window(0, 0x20), 8, 5);
  const auto misaligned = queue(RequestKind::kAtomic, window(0, 0x24), 8, 1);
  node_.backlog = 1000;  // does not matter: no frame
  node_.tags = 0;
  table_.issue(node_);
  EXPECT_TRUE(node_.calls.empty());
  EXPECT_EQ(memory_[3] & 0xffffffff, 0xcafef00du);
  EXPECT_EQ(load->wait().value, 0xcafef00du);
  EXPECT_EQ(add->wait().value, 0u);
  EXPECT_EQ(memory_[4], 5u);
  EXPECT_EQ(misaligned->wait().status, DeviceStatus::kRemoteError);
  EXPECT_TRUE(table_.idle());
}

TEST_F(RequestTableTest, GoingAwayAnswersEveryWaitingRequestButNotAPostedStore) {
  const auto in_flight = queue(RequestKind::kAtomic, window(1, 0), 8, 1);
  table_.issue(node_);
  node_.tags = 0;
  const auto queued = queue(RequestKind::kLoad, window(2, 0), 8);
  const auto store = queue(RequestKind::kStore, window(2, 8), 8, 1);
  table_.issue(node_);
  table_.fail_waiting(DeviceStatus::kUnreachable);
  EXPECT_EQ(in_flight->wait().status, DeviceStatus::kUnreachable);
  EXPECT_EQ(queued->wait().status, DeviceStatus::kUnreachable);
  EXPECT_FALSE(store->finished()) << "nobody waits for a posted store";
}

TEST(LocalAccess, AnAccessPastTheMemoryIsARemoteErrorAndTouchesNothing) {
  std::vector<std::uint64_t> words(2, 0);
  const std::span<std::byte> memory = std::as_writable_bytes(std::span(words));
  DeviceRequest store;
  store.kind = RequestKind::kStore;
  store.remote = 12;
  store.width = 8;
  store.value = ~std::uint64_t{0};
  EXPECT_EQ(perform_local(store, memory).status, DeviceStatus::kRemoteError);
  EXPECT_EQ(words[1], 0u);
  DeviceRequest swap;
  swap.kind = RequestKind::kAtomic;
  swap.op = AtomicOp::kCompareSwap;
  swap.remote = 8;
  swap.width = 4;
  swap.value = 9;
  swap.compare = 0;
  EXPECT_EQ(perform_local(swap, memory).value, 0u);
  EXPECT_EQ(words[1], 9u);
  EXPECT_EQ(perform_local(swap, memory).value, 9u) << "compare fails: the current value";
}

TEST(PrepareRequest, BadWidthsAndAddressesEndAtOnceWithTheFaultAddress) {
  const TopologyConfig topology =
      parse_topology("[fabric]\ngpus = 2\nhbm_bytes = 1048576\naperture_bytes = 1048576\n", "t");
  const AddressMap map = topology.address_map();
  PreparedRequest bad_width = prepare_request(map, RequestKind::kLoad, window(1, 0), 3);
  EXPECT_FALSE(bad_width.request);
  EXPECT_EQ(bad_width.error.status, DeviceStatus::kBadWidth);
  EXPECT_EQ(bad_width.error.value, ~std::uint64_t{0});
  EXPECT_EQ(prepare_request(map, RequestKind::kAtomic, window(1, 0), 2).error.status,
            DeviceStatus::kBadWidth);
  PreparedRequest outside = prepare_request(map, RequestKind::kStore, window(2, 8), 8);
  EXPECT_EQ(outside.error.status, DeviceStatus::kOutOfWindow);
  EXPECT_EQ(outside.error.fault_addr, window(2, 8));
  PreparedRequest straddling = prepare_request(map, RequestKind::kLoad, window(1, 0) - 4, 8);
  EXPECT_EQ(straddling.error.status, DeviceStatus::kOutOfWindow);
  EXPECT_EQ(straddling.error.fault_addr, window(1, 0)) << "no single target";
  PreparedRequest good = prepare_request(map, RequestKind::kLoad, window(1, 0x40), 8);
  ASSERT_TRUE(good.request);
  EXPECT_EQ(good.request->dst, 1u);
  EXPECT_EQ(good.request->remote, 0x40u);
}

}  // namespace
}  // namespace ethx
