// Whole GpuDevices (qemu-device/host/gpu_device.hpp) without QEMU, sockets or shared memory:
// two devices on an in-memory fabric (tests/unit/memory_fabric.hpp), their HBM anonymous
// memory, their service threads and driving callers real. Loads, stores and atomics of every
// width reach the other device's memory, a load returns the same thread's last store, copies
// arrive whether polled or left to the service thread, and a GPU nobody serves times out.
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "qemu-device/host/gpu_device.hpp"
#include "tests/unit/memory_fabric.hpp"

namespace ethx {
namespace {

constexpr std::uint64_t kAperture = 1 << 20;  // = hbm_bytes

std::uint64_t window(GpuId gpu, std::uint64_t offset) {
  return gpu * kAperture + offset;
}

// Three GPUs, of which 0 and 1 have a device; GPU 2 never answers.
class DevicePairTest : public ::testing::Test {
 protected:
  void SetUp() override { start(10'000'000'000); }  // long: only a lost frame can time out
  void start(std::uint64_t request_timeout_ns) {
    topology_ = parse_topology(
        "[fabric]\ngpus = 3\nhbm_bytes = 1048576\naperture_bytes = "
        "1048576\nrequest_timeout_ns = " +
            std::to_string(request_timeout_ns) + "\n",
        "device-pair-test");
    fabric_ = std::make_unique<test::MemoryFabric>(topology_);
    for (GpuId gpu = 0; gpu < 2; ++gpu) {
      devices_.push_back(std::make_unique<GpuDevice>(topology_, gpu, fabric_->attach(gpu)));
    }
  }
  void TearDown() override { devices_.clear(); }

  TopologyConfig topology_;
  std::unique_ptr<test::MemoryFabric> fabric_;
  std::vector<std::unique_ptr<GpuDevice>> devices_;
};

TEST_F(DevicePairTest, AccessesOfEveryWidthReachTheOtherDevicesMemory) {
  GpuDevice& gpu0 = *devices_[0];
  GpuDevice& gpu1 = *devices_[1];
  EXPECT_TRUE(gpu0.hbm_name().empty()) << "anonymous memory";
  const std::uint64_t values[] = {0xab, 0xbeef, 0xdeadbeef, 0x0123456789abcdef};
  const unsigned widths[] = {1, 2, 4, 8};
  for (int i = 0; i < 4; ++i) {
    const std::uint64_t offset = 0x1000 + 16 * i;
    ASSERT_EQ(gpu0.store(window(1, offset), widths[i], values[i]).status, DeviceStatus::kOk);
    const DeviceResult back = gpu0.load(window(1, offset), widths[i]);
    ASSERT_EQ(back.status, DeviceStatus::kOk) << to_string(back.status);
    EXPECT_EQ(back.value, values[i]) << "width " << widths[i];
    std::uint64_t in_memory = 0;
    std::memcpy(&in_memory, gpu1.hbm().data() + offset, widths[i]);
    EXPECT_EQ(in_memory, values[i]) << "width " << widths[i];
  }
  EXPECT_EQ(gpu1.atomic(AtomicOp::kFetchAdd, window(0, 0x80), 8, 5, 0).value, 0u);
  EXPECT_EQ(gpu1.atomic(AtomicOp::kSwap, window(0, 0x80), 8, 9, 0).value, 5u);
  EXPECT_EQ(gpu0.load(window(0, 0x80), 8).value, 9u) << "its own window, from its memory";
  EXPECT_GT(gpu1.counters().served_requests, 0u);
  EXPECT_GT(fabric_->delivered(1), 0u);
}

TEST_F(DevicePairTest, ALoadReturnsTheSameThreadsLastStoreWhileAnotherThreadDrives) {
  constexpr int kRounds = 20;
  constexpr int kStores = 500;
  std::atomic<bool> done{false};
  std::thread other([&] {  // a second vCPU of GPU 0, driving the engine for its own loads
    while (!done.load())
      EXPECT_EQ(devices_[0]->load(window(1, 0x100), 8).status, DeviceStatus::kOk);
  });
  int stale = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::uint64_t last = 0;
    for (int i = 0; i < kStores; ++i) {
      last = (std::uint64_t{static_cast<unsigned>(round)} << 32) | static_cast<unsigned>(i);
      ASSERT_EQ(devices_[0]->store(window(1, 0x4000 + 8 * i), 8, last).status, DeviceStatus::kOk);
    }
    stale += devices_[0]->load(window(1, 0x4000 + 8 * (kStores - 1)), 8).value != last;
  }
  done.store(true);
  other.join();
  EXPECT_EQ(stale, 0);
}

TEST_F(DevicePairTest, CopiesArriveWhetherPolledOrLeftToTheServiceThread) {
  constexpr std::uint64_t kBytes = 256 << 10;
  std::span<std::byte> source = devices_[1]->hbm();
  for (std::uint64_t i = 0; i < kBytes; ++i) source[i] = std::byte((i * 13 + 5) & 0xff);
  DeviceResult polled;
  ASSERT_TRUE(devices_[0]->start_copy(
      window(1, 0), window(0, 0x40000), kBytes, [&](const DeviceResult& r) { polled = r; },
      GpuDevice::CopyStart::kCallerDrives));
  while (devices_[0]->drive_copy(200'000)) {
  }
  ASSERT_EQ(polled.status, DeviceStatus::kOk) << to_string(polled.status);
  EXPECT_EQ(std::memcmp(devices_[0]->hbm().data() + 0x40000, source.data(), kBytes), 0);

  std::promise<DeviceResult> finished;
  ASSERT_TRUE(devices_[0]->start_copy(window(1, 0), window(1, 0x80000), kBytes,
                                      [&](const DeviceResult& r) { finished.set_value(r); }));
  const DeviceResult result = finished.get_future().get();
  ASSERT_EQ(result.status, DeviceStatus::kOk) << to_string(result.status);
  EXPECT_EQ(std::memcmp(devices_[1]->hbm().data() + 0x80000, source.data(), kBytes), 0);
  EXPECT_EQ(devices_[0]->counters().copies, 2u);
  EXPECT_EQ(devices_[0]->counters().copy_bytes, 2 * kBytes);
}

TEST_F(DevicePairTest, OneCopyAtATime) {
  // From the GPU nobody serves: it runs until its reads time out, long after this test.
  ASSERT_TRUE(devices_[0]->start_copy(window(2, 0), window(0, 0), 4096, {}));
  EXPECT_FALSE(devices_[0]->start_copy(window(1, 0), window(0, 0), 8, {}));
  EXPECT_TRUE(devices_[0]->drive_copy(0)) << "still running";
}

TEST_F(DevicePairTest, FlushAllReturnsOnceEveryStoreIsInTheTargetsMemory) {
  constexpr int kStores = 2000;
  for (int i = 0; i < kStores; ++i) {
    const std::uint64_t offset = 0x10000 + 8 * static_cast<std::uint64_t>(i);
    ASSERT_EQ(devices_[1]->store(window(0, offset), 8, offset * 3).status, DeviceStatus::kOk);
  }
  ASSERT_EQ(devices_[1]->flush_all().status, DeviceStatus::kOk);
  int wrong = 0;
  for (int i = 0; i < kStores; ++i) {
    const std::uint64_t offset = 0x10000 + 8 * static_cast<std::uint64_t>(i);
    std::uint64_t value = 0;
    std::memcpy(&value, devices_[0]->hbm().data() + offset, 8);
    wrong += value != offset * 3;
  }
  EXPECT_EQ(wrong, 0);
}

class DevicePairTimeoutTest : public DevicePairTest {
 protected:
  void SetUp() override { start(50'000'000); }
};

TEST_F(DevicePairTimeoutTest, ALoadFromAGpuNobodyServesTimesOutWithAllOnes) {
  const DeviceResult lost = devices_[0]->load(window(2, 0x10), 8);
  EXPECT_EQ(lost.status, DeviceStatus::kTimeout);
  EXPECT_EQ(lost.value, ~std::uint64_t{0});
  EXPECT_EQ(lost.fault_addr, window(2, 0x10));
  EXPECT_EQ(devices_[0]->counters().timeouts, 1u);
  EXPECT_EQ(devices_[0]->counters().errors, 1u);
}

}  // namespace
}  // namespace ethx
