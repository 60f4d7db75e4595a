// Who drives a GpuDevice's node (qemu-device/host/engine_owner.hpp): posted work enters the
// engine in order and before a driver's own request (so a load never passes the same thread's
// posted stores), the bounded queue, one wake-up per batch, and the service thread's choice
// between napping and watching the port after a vCPU hands the engine back. The clock is a fake
// one the tests move; nothing sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <thread>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "qemu-device/host/engine_owner.hpp"
#include "qemu-device/host/request_table.hpp"
#include "tests/unit/fake_node_requests.hpp"

namespace ethx {
namespace {

using test::FakeNodeRequests;
using Kind = FakeNodeRequests::Kind;

std::shared_ptr<DeviceRequest> work(RequestKind kind, std::uint64_t remote) {
  auto request = std::make_shared<DeviceRequest>();
  request->kind = kind;
  request->dst = 1;
  request->remote = remote;
  request->width = 8;
  return request;
}

class EngineOwnerTest : public ::testing::Test {
 protected:
  EngineOwner make_owner(std::size_t max_posted = kMaxPostedRequests) {
    return EngineOwner([this] { ++wakes_; }, [this] { return now_ns_.load(); }, max_posted);
  }

  std::atomic<int> wakes_{0};
  std::atomic<TimeNs> now_ns_{1'000'000'000};
};

TEST_F(EngineOwnerTest, PostedWorkEntersTheEngineInOrderBeforeTheDriversOwnRequest) {
  EngineOwner owner = make_owner();
  const auto first = work(RequestKind::kStore, 0);
  const auto second = work(RequestKind::kStore, 8);
  const auto load = work(RequestKind::kLoad, 8);
  ASSERT_TRUE(owner.post(first, false));
  ASSERT_TRUE(owner.post(second, false));
  RequestTable::Queue queue;
  {
    std::unique_lock engine = owner.drive(load, queue);
    EXPECT_TRUE(engine.owns_lock());
  }
  ASSERT_EQ(queue.size(), 3u);
  EXPECT_EQ(queue[0], first);
  EXPECT_EQ(queue[1], second);
  EXPECT_EQ(queue[2], load) << "the driver's own request jumped the posted stores";
}

// The whole path a vCPU's load takes through the engine, with a fake node: it posts stores, then
// drives for its load while the port is backed up. Nothing may leave until the stores can, and
// then the stores leave first.
TEST_F(EngineOwnerTest, ALoadNeverPassesTheSameThreadsPostedStores) {
  EngineOwner owner = make_owner();
  const TopologyConfig topology = parse_topology("[fabric]\ngpus = 2\n", "engine-owner-test");
  std::vector<std::byte> memory(64);
  FailureCounters failures;
  RequestTable table({0, 2, topology.aperture_bytes, 64}, memory, failures);
  FakeNodeRequests node;
  for (std::uint64_t i = 0; i < 3; ++i)
    ASSERT_TRUE(owner.post(work(RequestKind::kStore, i * 8), true));
  const auto load = work(RequestKind::kLoad, 16);
  std::unique_lock engine = owner.drive(load, table.queue());
  node.backlog = 65;
  table.issue(node);
  EXPECT_TRUE(node.calls.empty()) << "the load left while its stores waited for the port";
  node.backlog = 0;
  table.issue(node);
  ASSERT_EQ(node.calls.size(), 4u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(node.calls[i].kind, Kind::kWrite) << "call " << i;
    EXPECT_EQ(node.calls[i].remote, i * 8);
  }
  EXPECT_EQ(node.calls[3].kind, Kind::kRead);
  owner.hand_back(engine, true, std::nullopt);
}

TEST_F(EngineOwnerTest, OnlyTheFirstPostSinceTheOwnerTookThemWakesTheServiceThread) {
  EngineOwner owner = make_owner();
  ASSERT_TRUE(owner.post(work(RequestKind::kStore, 0), false));
  ASSERT_TRUE(owner.post(work(RequestKind::kStore, 8), false));
  EXPECT_EQ(wakes_.load(), 1) << "a wake-up per store costs a system call per MMIO store";
  EXPECT_TRUE(owner.nap_interrupted()) << "posted work ends a nap";
  RequestTable::Queue queue;
  owner.take_posted(queue);
  EXPECT_EQ(queue.size(), 2u);
  EXPECT_FALSE(owner.nap_interrupted());
  ASSERT_TRUE(owner.post(work(RequestKind::kStore, 16), false));
  EXPECT_EQ(wakes_.load(), 2);
}

TEST_F(EngineOwnerTest, AFullQueueRefusesATryAndAWaitingPostFollowsOnceTheOwnerTakesIt) {
  EngineOwner owner = make_owner(2);
  const auto a = work(RequestKind::kStore, 0);
  const auto b = work(RequestKind::kStore, 8);
  const auto c = work(RequestKind::kStore, 16);
  ASSERT_TRUE(owner.post(a, false));
  ASSERT_TRUE(owner.post(b, false));
  EXPECT_FALSE(owner.post(work(RequestKind::kStore, 99), false)) << "full: nothing queued";
  std::thread poster([&] { EXPECT_TRUE(owner.post(c, true)); });
  RequestTable::Queue queue;
  owner.take_posted(queue);  // makes room for the waiting post, whenever it comes
  poster.join();
  owner.take_posted(queue);
  ASSERT_EQ(queue.size(), 3u);
  EXPECT_EQ(queue[0], a);
  EXPECT_EQ(queue[1], b);
  EXPECT_EQ(queue[2], c);
}

TEST_F(EngineOwnerTest, StoppingReleasesAPostWaitingForRoom) {
  EngineOwner owner = make_owner(1);
  ASSERT_TRUE(owner.post(work(RequestKind::kStore, 0), false));
  std::thread poster([&] { EXPECT_TRUE(owner.post(work(RequestKind::kStore, 8), true)); });
  owner.stop();
  poster.join();
  EXPECT_TRUE(owner.stopping());
  EXPECT_TRUE(owner.nap_interrupted());
}

TEST_F(EngineOwnerTest, WhileVcpusDriveTheServiceThreadNapsInShortSlicesUnlessACopyRuns) {
  EngineOwner owner = make_owner();
  // Nobody drove yet: watch the port, up to the idle wait or the node's next timer.
  ServiceWait wait = owner.plan_service_wait(std::nullopt, false);
  EXPECT_FALSE(wait.nap);
  EXPECT_EQ(wait.wait_ns, kIdleWaitNs);
  EXPECT_EQ(owner.plan_service_wait(now_ns_ + 3000, false).wait_ns, 3000);
  std::unique_lock engine = owner.take();
  owner.hand_back(engine, false, std::nullopt);
  EXPECT_EQ(wakes_.load(), 0) << "nothing left: the service thread is not woken";
  now_ns_ += 1000;
  wait = owner.plan_service_wait(std::nullopt, false);
  EXPECT_TRUE(wait.nap);
  EXPECT_EQ(wait.wait_ns, kServiceNapNs);
  EXPECT_FALSE(owner.plan_service_wait(std::nullopt, true).nap) << "a copy's responses";
  now_ns_ += kVcpuActiveNs;
  EXPECT_FALSE(owner.plan_service_wait(std::nullopt, false).nap) << "the vCPUs went quiet";
}

TEST_F(EngineOwnerTest, AHandBackWithWorkLeftWakesTheServiceThreadToWatchThePort) {
  EngineOwner owner = make_owner();
  std::unique_lock engine = owner.take();
  owner.hand_back(engine, true, std::nullopt);
  EXPECT_FALSE(engine.owns_lock());
  EXPECT_EQ(wakes_.load(), 1);
  EXPECT_TRUE(owner.nap_interrupted()) << "the kick ends a nap";
  const ServiceWait wait = owner.plan_service_wait(std::nullopt, false);
  EXPECT_FALSE(wait.nap) << "work handed back unfinished is watched for, not napped through";
  owner.begin_service_round();
  EXPECT_FALSE(owner.nap_interrupted());
}

TEST_F(EngineOwnerTest, AHandBackLeavingAnEarlierTimerWakesTheServiceThread) {
  EngineOwner owner = make_owner();
  owner.plan_service_wait(now_ns_ + 10'000'000, false);  // it sleeps 10 ms
  std::unique_lock engine = owner.take();
  owner.hand_back(engine, false, now_ns_ + 20'000'000);
  EXPECT_EQ(wakes_.load(), 0) << "a later timer: it wakes in time anyway";
  engine = owner.take();
  owner.hand_back(engine, false, now_ns_ + 1'000'000);
  EXPECT_EQ(wakes_.load(), 1);
}

TEST_F(EngineOwnerTest, ADriverRunsRoundsOnlyWhenThereIsWorkAndGivesUpAfterItsBudget) {
  EngineOwner owner = make_owner();
  int polls = 0;
  int rounds = 0;
  const auto tick = [&](TimeNs now_ns) {
    now_ns_ = now_ns + 1000;  // every look at the node takes 1 µs
    return ++polls % 3 == 0;  // every third look finds a frame
  };
  std::unique_lock engine = owner.take();
  owner.drive_while([] { return true; }, tick, [&] { ++rounds; }, 30'000);
  EXPECT_EQ(polls, 30) << "30 µs of budget, 1 µs a look";
  EXPECT_EQ(rounds, 10);
  rounds = 0;
  owner.drive_while([&] { return rounds < 2; }, [](TimeNs) { return true; }, [&] { ++rounds; },
                    1'000'000'000);
  EXPECT_EQ(rounds, 2) << "ends as soon as the caller's answer is there";
  owner.stop();
  owner.drive_while([] { return true; }, [](TimeNs) { return true; }, [&] { ++rounds; },
                    1'000'000'000);
  EXPECT_EQ(rounds, 2) << "a stopping device is not driven";
}

TEST_F(EngineOwnerTest, TheServiceThreadLooksAgainWhileADriverHoldsTheEngine) {
  EngineOwner owner = make_owner();
  std::latch held(1);
  std::latch checked(1);
  std::thread driver([&] {
    std::unique_lock engine = owner.take();
    held.count_down();
    checked.wait();
  });
  held.wait();
  EXPECT_TRUE(owner.service_has_work([] { return false; })) << "a driver has the engine";
  checked.count_down();
  driver.join();
  EXPECT_FALSE(owner.service_has_work([] { return false; }));
  EXPECT_TRUE(owner.service_has_work([] { return true; }));
  owner.signal_work(false);
  EXPECT_EQ(wakes_.load(), 0);
  EXPECT_TRUE(owner.service_has_work([] { return false; })) << "a copy was started";
}

}  // namespace
}  // namespace ethx
