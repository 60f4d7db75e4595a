// GpuDevice, the emulated GPU behind the QEMU device, on a real shared-memory fabric in this
// process (the switch runtime on a thread): window loads, stores and atomics of every width
// between devices, the device's own window, address errors and timeouts (all-ones, the fault
// address), concurrent callers, and the copy engine with verified data.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <latch>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "fabric/config/fabric_names.hpp"
#include "fabric/transport/shm/control_region.hpp"
#include "fabric/transport/shm/shm_fabric_region.hpp"
#include "qemu-device/ethx_gpu_regs.h"
#include "qemu-device/host/ethx_gpu_api.h"
#include "qemu-device/host/gpu_device.hpp"
#include "switch/runtime/shm_switch_runtime.hpp"

namespace ethx {
namespace {

constexpr std::uint64_t kAperture = 4ull << 20;  // = hbm_bytes: GPU k's window at k * 4 MiB
constexpr std::size_t kGpus = 4;                 // GPU 3 never joins: requests to it time out

class GpuDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override { start_fabric(3, 400'000'000); }
  // A fabric of kGpus ports whose first `joined` GPUs have a device.
  void start_fabric(GpuId joined, std::uint64_t request_timeout_ns) {
    fabric_ = "devtest" + std::to_string(::getpid());
    config_path_ = std::filesystem::temp_directory_path() / (fabric_ + ".toml");
    std::ofstream(config_path_) << "[fabric]\ngpus = 4\nhbm_bytes = 4194304\n"
                                   "aperture_bytes = 4194304\nrequest_timeout_ns = "
                                << request_timeout_ns << "\n";
    topology_ = load_topology(config_path_.string());
    region_.emplace(shm::ShmFabricRegion::create(switch_region_name(fabric_), kGpus));
    switch_ = std::make_unique<ShmSwitchRuntime>(topology_, *region_);
    switch_thread_ = std::thread([this] { switch_->run(stop_switch_); });
    for (GpuId gpu = 0; gpu < joined; ++gpu) {
      GpuDeviceOptions options;
      options.fabric = fabric_;
      options.gpu = gpu;
      options.config_path = config_path_.string();
      devices_.push_back(std::make_unique<GpuDevice>(options));
    }
  }
  void TearDown() override {
    devices_.clear();
    stop_switch_.store(true);
    shm::ring(region_->header().switch_bell);
    if (switch_thread_.joinable()) switch_thread_.join();
    std::filesystem::remove(config_path_);
  }
  static std::uint64_t window(GpuId gpu, std::uint64_t offset) { return gpu * kAperture + offset; }

  std::string fabric_;
  std::filesystem::path config_path_;
  TopologyConfig topology_;
  std::optional<shm::ShmFabricRegion> region_;
  std::unique_ptr<ShmSwitchRuntime> switch_;
  std::atomic<bool> stop_switch_{false};
  std::thread switch_thread_;
  std::vector<std::unique_ptr<GpuDevice>> devices_;
};

TEST_F(GpuDeviceTest, StoresAndLoadsOfEveryWidthReachTheTargetsMemory) {
  GpuDevice& gpu0 = *devices_[0];
  GpuDevice& gpu1 = *devices_[1];
  EXPECT_EQ(gpu0.window_bytes(), 16ull << 20);  // 4 windows of 4 MiB, a power of two
  const std::uint64_t values[] = {0xab, 0xbeef, 0xdeadbeef, 0x0123456789abcdef};
  const unsigned widths[] = {1, 2, 4, 8};
  for (int i = 0; i < 4; ++i) {
    const std::uint64_t offset = 0x1000 + 16 * i;
    ASSERT_EQ(gpu0.store(window(1, offset), widths[i], values[i]).status, DeviceStatus::kOk);
    const DeviceResult back = gpu0.load(window(1, offset), widths[i]);  // ordered after the store
    ASSERT_EQ(back.status, DeviceStatus::kOk) << to_string(back.status);
    EXPECT_EQ(back.value, values[i]) << "width " << widths[i];
    std::uint64_t in_memory = 0;
    std::memcpy(&in_memory, gpu1.hbm().data() + offset, widths[i]);
    EXPECT_EQ(in_memory, values[i]) << "width " << widths[i];
  }
  // Bytes written into GPU 1's memory directly (its HBM BAR) are what GPU 0 loads.
  const std::uint64_t direct = 0x1122334455667788;
  std::memcpy(gpu1.hbm().data() + 0x2000, &direct, 8);
  EXPECT_EQ(gpu0.load(window(1, 0x2000), 8).value, direct);
  EXPECT_GT(gpu1.counters().served_requests, 0u);
}

TEST_F(GpuDeviceTest, ItsOwnWindowIsServedFromItsMemory) {
  GpuDevice& gpu2 = *devices_[2];
  ASSERT_EQ(gpu2.store(window(2, 64), 4, 0xcafef00d).status, DeviceStatus::kOk);
  EXPECT_EQ(gpu2.load(window(2, 64), 4).value, 0xcafef00du);
  std::uint32_t in_memory = 0;
  std::memcpy(&in_memory, gpu2.hbm().data() + 64, 4);
  EXPECT_EQ(in_memory, 0xcafef00du);
  EXPECT_EQ(gpu2.atomic(AtomicOp::kFetchAdd, window(2, 128), 8, 5, 0).value, 0u);
  EXPECT_EQ(gpu2.load(window(2, 128), 8).value, 5u);
}

TEST_F(GpuDeviceTest, BadAccessesFailWithAllOnesAndTheFaultAddress) {
  GpuDevice& gpu0 = *devices_[0];
  const DeviceResult outside = gpu0.load(gpu0.window_bytes() + 8, 8);
  EXPECT_EQ(outside.status, DeviceStatus::kOutOfWindow);
  EXPECT_EQ(outside.value, ~std::uint64_t{0});
  EXPECT_EQ(outside.fault_addr, gpu0.window_bytes() + 8);
  EXPECT_EQ(gpu0.load(window(1, 0), 3).status, DeviceStatus::kBadWidth);
  EXPECT_EQ(gpu0.atomic(AtomicOp::kSwap, window(1, 0), 2, 1, 0).status, DeviceStatus::kBadWidth);
  EXPECT_EQ(gpu0.store(kAperture * kGpus + 4, 4, 1).status, DeviceStatus::kOutOfWindow);
  // A straddling access has no single target.
  EXPECT_EQ(gpu0.load(window(2, 0) - 4, 8).status, DeviceStatus::kOutOfWindow);
  // GPU 3 never joined: the engine's timeout ends the wait.
  const DeviceResult lost = gpu0.load(window(3, 0), 8);
  EXPECT_EQ(lost.status, DeviceStatus::kTimeout);
  EXPECT_EQ(lost.value, ~std::uint64_t{0});
  EXPECT_EQ(lost.fault_addr, window(3, 0));
  EXPECT_GE(gpu0.counters().timeouts, 1u);
  EXPECT_GE(gpu0.counters().errors, 5u);
  // Still serving afterwards.
  ASSERT_EQ(gpu0.store(window(1, 8), 8, 42).status, DeviceStatus::kOk);
  EXPECT_EQ(gpu0.load(window(1, 8), 8).value, 42u);
}

TEST_F(GpuDeviceTest, ConcurrentAtomicsFromTwoDevicesAndThreadsAreEachPerformedOnce) {
  constexpr int kPerThread = 300;
  const std::uint64_t counter = window(2, 0x3000);
  std::vector<std::uint64_t> olds[4];
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      GpuDevice& device = *devices_[t % 2];  // GPU 0 and GPU 1, two vCPUs each
      for (int i = 0; i < kPerThread; ++i) {
        const DeviceResult result = device.atomic(AtomicOp::kFetchAdd, counter, 8, 1, 0);
        if (result.status == DeviceStatus::kOk) olds[t].push_back(result.value);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::set<std::uint64_t> seen;
  for (const auto& list : olds) seen.insert(list.begin(), list.end());
  EXPECT_EQ(seen.size(), 4u * kPerThread);  // every old value exactly once
  EXPECT_EQ(*seen.rbegin(), 4u * kPerThread - 1);
  EXPECT_EQ(devices_[0]->load(counter, 8).value, 4u * kPerThread);
  // Compare-and-swap: succeeds once, then reports the current value.
  EXPECT_EQ(devices_[1]->atomic(AtomicOp::kCompareSwap, counter, 8, 7, 4 * kPerThread).value,
            4u * kPerThread);
  EXPECT_EQ(devices_[1]->atomic(AtomicOp::kCompareSwap, counter, 8, 9, 4 * kPerThread).value, 7u);
}

TEST_F(GpuDeviceTest, StoresFromManyThreadsAreAllVisibleAfterFlushAll) {
  constexpr int kStores = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kStores; ++i) {
        const std::uint64_t offset = 0x10000 + (t * kStores + i) * 8;
        devices_[0]->store(window(1, offset), 8, offset ^ 0x5555);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_EQ(devices_[0]->flush_all().status, DeviceStatus::kOk);
  int wrong = 0;
  for (int i = 0; i < 2 * kStores; ++i) {
    const std::uint64_t offset = 0x10000 + i * 8;
    std::uint64_t value = 0;
    std::memcpy(&value, devices_[1]->hbm().data() + offset, 8);
    wrong += value != (offset ^ 0x5555);
  }
  EXPECT_EQ(wrong, 0);
}

// QEMU's store handler tries first and waits (in store()) only without its big lock: a full
// queue refuses a try_store without queueing or counting it, and the store that follows keeps
// the order, so every value lands and each store is counted once.
TEST_F(GpuDeviceTest, ATryStoreThatFindsTheQueueFullQueuesNothingAndTheWaitingStoreFollows) {
  constexpr int kStores = 20 * 1024;  // five times the queue: it fills unless drained faster
  int refused = 0;
  for (int i = 0; i < kStores; ++i) {
    const std::uint64_t offset = 0x80000 + (i % 1024) * 8;
    const std::uint64_t value = static_cast<std::uint64_t>(i);
    std::optional<DeviceResult> queued = devices_[0]->try_store(window(1, offset), 8, value);
    if (!queued) {
      ++refused;
      queued = devices_[0]->store(window(1, offset), 8, value);
    }
    ASSERT_EQ(queued->status, DeviceStatus::kOk);
  }
  ASSERT_EQ(devices_[0]->flush_all().status, DeviceStatus::kOk);
  int wrong = 0;
  for (int slot = 0; slot < 1024; ++slot) {  // the last value written to each slot
    std::uint64_t value = 0;
    std::memcpy(&value, devices_[1]->hbm().data() + 0x80000 + slot * 8, 8);
    wrong += value != static_cast<std::uint64_t>(kStores - 1024 + slot);
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(devices_[0]->counters().stores, static_cast<std::uint64_t>(kStores));  // once each
  EXPECT_EQ(devices_[0]->try_store(window(1, 0), 3, 0)->status, DeviceStatus::kBadWidth)
      << "a bad access is an answer, not a full queue (refused " << refused << ")";
}

// A thread that loads drives the engine itself; what it queued before (posted stores, more than
// the port's backlog allows at once) must still reach the target first. Meanwhile another thread
// of the same device drives its own loads, and another device loads from this one, whose
// completer must keep serving whoever owns the engine.
TEST_F(GpuDeviceTest, ALoadNeverPassesTheSameThreadsPostedStoresWhileOthersDriveTheEngine) {
  constexpr int kRounds = 20;
  constexpr int kStoresPerRound = 3000;
  std::uint64_t pattern = 0x0bad5eed;
  std::memcpy(devices_[0]->hbm().data() + 0x100, &pattern, 8);
  std::memcpy(devices_[2]->hbm().data() + 0x200, &pattern, 8);
  std::atomic<bool> done{false};
  std::atomic<int> other_loads{0}, other_wrong{0};
  std::vector<std::thread> others;
  others.emplace_back([&] {  // a second vCPU of GPU 0
    while (!done.load()) {
      other_wrong += devices_[0]->load(window(2, 0x200), 8).value != pattern;
      ++other_loads;
    }
  });
  others.emplace_back([&] {  // GPU 1 loads from GPU 0
    while (!done.load()) {
      other_wrong += devices_[1]->load(window(0, 0x100), 8).value != pattern;
      ++other_loads;
    }
  });
  int stale = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::uint64_t last = 0;
    for (int i = 0; i < kStoresPerRound; ++i) {
      last = (std::uint64_t{static_cast<unsigned>(round)} << 32) | static_cast<unsigned>(i);
      ASSERT_EQ(devices_[0]->store(window(1, 0x40000 + 8 * i), 8, last).status, DeviceStatus::kOk);
    }
    const DeviceResult back = devices_[0]->load(window(1, 0x40000 + 8 * (kStoresPerRound - 1)), 8);
    ASSERT_EQ(back.status, DeviceStatus::kOk) << to_string(back.status);
    stale += back.value != last;
  }
  done.store(true);
  for (auto& thread : others) thread.join();
  EXPECT_EQ(stale, 0);
  EXPECT_EQ(other_wrong.load(), 0);
  EXPECT_GT(other_loads.load(), 0);
}

TEST_F(GpuDeviceTest, CopyEngineMovesAMebibyteBetweenOtherGpusAndReportsErrors) {
  constexpr std::uint64_t kBytes = 1 << 20;
  std::span<std::byte> source = devices_[1]->hbm();
  for (std::uint64_t i = 0; i < kBytes; ++i) source[i] = std::byte((i * 131 + 7) & 0xff);
  std::promise<DeviceResult> finished;
  ASSERT_TRUE(devices_[0]->start_copy(window(1, 0), window(2, 0x100000), kBytes,
                                      [&](const DeviceResult& r) { finished.set_value(r); }));
  const DeviceResult result = finished.get_future().get();
  ASSERT_EQ(result.status, DeviceStatus::kOk) << to_string(result.status);
  EXPECT_EQ(std::memcmp(devices_[2]->hbm().data() + 0x100000, source.data(), kBytes), 0);
  EXPECT_EQ(devices_[0]->counters().copies, 1u);
  EXPECT_EQ(devices_[0]->counters().copy_bytes, kBytes);

  // Into its own memory, from a GPU that never answers: a timeout, reported once.
  std::promise<DeviceResult> failed;
  ASSERT_TRUE(devices_[0]->start_copy(window(3, 0), window(0, 0), 64 << 10,
                                      [&](const DeviceResult& r) { failed.set_value(r); }));
  const DeviceResult error = failed.get_future().get();
  EXPECT_EQ(error.status, DeviceStatus::kTimeout);
  EXPECT_GE(error.fault_addr, window(3, 0));
  EXPECT_LT(error.fault_addr, window(3, 64 << 10));
  EXPECT_EQ(devices_[0]->counters().timeouts, 1u) << "a copy's timeout is a timeout (CNT_TIMEOUTS)";

  // Out of its own memory to that GPU: the data leaves as posted writes, and the flush that
  // makes them visible is what fails (unreachable: the timeouts above marked GPU 3 down); it
  // names that GPU, as flush_all does.
  std::promise<DeviceResult> unflushed;
  ASSERT_TRUE(devices_[0]->start_copy(window(0, 0x10000), window(3, 0x10000), 4096,
                                      [&](const DeviceResult& r) { unflushed.set_value(r); }));
  const DeviceResult flush_error = unflushed.get_future().get();
  EXPECT_EQ(flush_error.status, DeviceStatus::kUnreachable) << to_string(flush_error.status);
  EXPECT_EQ(flush_error.fault_addr, window(3, 0));
}

// A guest that polls COPY_STATUS drives its copy (drive_copy, with QEMU's big lock dropped):
// the copy ends on the polling thread itself, not on the service thread it would otherwise
// wait for (which naps while vCPUs are busy). The engine is the caller's for the whole call,
// so the completion callback runs on it.
TEST_F(GpuDeviceTest, ACopyPolledByItsCallerIsDrivenToTheEndOnTheCallersThread) {
  constexpr std::uint64_t kBytes = 256 << 10;  // many round trips: more than one engine round
  std::span<std::byte> source = devices_[1]->hbm();
  for (std::uint64_t i = 0; i < kBytes; ++i) source[i] = std::byte((i * 17 + 3) & 0xff);
  std::thread::id finished_on;
  DeviceResult result;
  ASSERT_TRUE(devices_[0]->start_copy(window(1, 0), window(0, 0x200000), kBytes,
                                      [&](const DeviceResult& r) {
                                        result = r;
                                        finished_on = std::this_thread::get_id();
                                      }));
  const bool still_running = devices_[0]->drive_copy(10'000'000'000);
  EXPECT_FALSE(still_running);
  EXPECT_EQ(finished_on, std::this_thread::get_id()) << "the service thread ended the copy";
  ASSERT_EQ(result.status, DeviceStatus::kOk) << to_string(result.status);
  EXPECT_EQ(std::memcmp(devices_[0]->hbm().data() + 0x200000, source.data(), kBytes), 0);
  EXPECT_EQ(devices_[0]->counters().copy_drives, 1u);
  EXPECT_FALSE(devices_[0]->drive_copy(1'000'000)) << "no copy: nothing to drive";
  EXPECT_EQ(devices_[0]->counters().copy_drives, 1u);
}

// A copy started while another thread keeps driving the engine for its loads (a busy vCPU) is
// carried on by that thread's engine rounds and by the service thread, which watches the port
// while a copy runs instead of napping: it ends without anyone polling it.
TEST_F(GpuDeviceTest, ACopyStartedWhileAnotherThreadDrivesLoadsEndsWithoutPolling) {
  constexpr std::uint64_t kBytes = 256 << 10;
  std::span<std::byte> source = devices_[1]->hbm();
  for (std::uint64_t i = 0; i < kBytes; ++i) source[i] = std::byte((i * 29 + 1) & 0xff);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> loads{0};
  std::thread vcpu([&] {
    while (!stop.load()) {
      EXPECT_EQ(devices_[0]->load(window(2, 0x40), 8).status, DeviceStatus::kOk);
      ++loads;
    }
  });
  while (loads.load() < 10) std::this_thread::yield();
  std::promise<DeviceResult> finished;
  ASSERT_TRUE(devices_[0]->start_copy(window(1, 0), window(0, 0x300000), kBytes,
                                      [&](const DeviceResult& r) { finished.set_value(r); }));
  const DeviceResult result = finished.get_future().get();
  stop.store(true);
  vcpu.join();
  ASSERT_EQ(result.status, DeviceStatus::kOk) << to_string(result.status);
  EXPECT_EQ(std::memcmp(devices_[0]->hbm().data() + 0x300000, source.data(), kBytes), 0);
  EXPECT_EQ(devices_[0]->counters().copy_drives, 0u);
}

// FLUSH's host side (register map 3): the C API's flush returns once every store posted before
// it is in the target's memory, so the data is checked right after it, without waiting.
TEST_F(GpuDeviceTest, TheCApisFlushReturnsOnceEveryPostedStoreIsInTheTargetsMemory) {
  ethx_gpu_options options{};
  options.fabric = fabric_.c_str();
  options.gpu_id = 3;
  options.config_path = config_path_.c_str();
  char error[256] = "";
  ethx_gpu* gpu3 = ethx_gpu_open(&options, error, sizeof error);
  ASSERT_NE(gpu3, nullptr) << error;
  constexpr int kStores = 3000;
  for (int i = 0; i < kStores; ++i) {
    const std::uint64_t offset = 0x20000 + 8 * static_cast<std::uint64_t>(i);
    std::uint64_t fault = 0;
    ASSERT_EQ(ethx_gpu_store(gpu3, window(1, offset), 8, offset * 3 + 1, &fault), ETHX_GPU_OK);
  }
  std::uint64_t fault_addr = 123;
  EXPECT_EQ(ethx_gpu_flush(gpu3, &fault_addr), ETHX_GPU_OK);
  EXPECT_EQ(fault_addr, 0u);
  int wrong = 0;
  for (int i = 0; i < kStores; ++i) {
    const std::uint64_t offset = 0x20000 + 8 * static_cast<std::uint64_t>(i);
    std::uint64_t value = 0;
    std::memcpy(&value, devices_[1]->hbm().data() + offset, 8);
    wrong += value != offset * 3 + 1;
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(ethx_gpu_flush(gpu3, &fault_addr), ETHX_GPU_OK);  // nothing written since
  ethx_gpu_close(gpu3);
}

// Two flushes racing after a store to a GPU that no longer answers: whichever is issued second
// finds that GPU's flag already cleared by the first, yet the store is not performed. It must
// flush that GPU again (and time out) rather than report ok while the first is unanswered.
TEST_F(GpuDeviceTest, AFlushOverlappingAnUnansweredFlushWaitsForItsStoresToo) {
  devices_[2].reset();  // GPU 2 leaves the fabric: nothing answers it any more
  ASSERT_EQ(devices_[0]->store(window(2, 0x100), 8, 42).status, DeviceStatus::kOk);
  std::latch both_ready(2);
  DeviceResult results[2];
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      both_ready.arrive_and_wait();
      results[t] = devices_[0]->flush_all();
    });
  }
  for (auto& thread : threads) thread.join();
  for (const DeviceResult& result : results) {
    EXPECT_EQ(result.status, DeviceStatus::kTimeout) << to_string(result.status);
    EXPECT_EQ(result.fault_addr, window(2, 0));  // names the GPU that did not answer
  }
}

}  // namespace
}  // namespace ethx

namespace ethx {
namespace {

// A control region the device cannot use (another build's layout) is a clean error from the
// constructor, not std::terminate from a service thread already running: QEMU must be able to
// report it and exit instead of aborting.
TEST_F(GpuDeviceTest, AControlRegionOfAnotherVersionIsACleanErrorNotAnAbort) {
  ControlRegion control = ControlRegion::create(control_region_name(fabric_), kGpus);
  control.header().version = 0xBAD;
  GpuDeviceOptions options;
  options.fabric = fabric_;
  options.gpu = 3;
  options.config_path = config_path_.string();
  EXPECT_THROW(GpuDevice device(options), std::exception);
}

}  // namespace
}  // namespace ethx

// Four GpuDevices, each both requester and target (as OpenSHMEM PEs are): every device's caller
// thread runs copies in both directions (driven by polling, as a guest polling COPY_STATUS
// does, and left to the service thread), flushes, loads and posted stores against the others
// at once. Nothing may be lost: every operation ends ok with the right data, and no device
// counts an error or a timeout.
namespace ethx {
namespace {

constexpr std::uint64_t kChunk = 4096;
// Per device: its source data at kSourceOffset, and one landing slot per peer for data that
// peer copies or stores into it.
constexpr std::uint64_t kSourceOffset = 0x10000;
constexpr std::uint64_t kLandingOffset = 0x100000;

std::byte pattern(GpuId gpu, std::uint64_t round, std::uint64_t i) {
  return std::byte(static_cast<std::uint8_t>(std::uint64_t{gpu} * 59 + round * 13 + i * 7));
}

class GpuDeviceStressTest : public GpuDeviceTest {
 protected:
  // Every GPU joins; the request timeout is long (10 s) so that a slow machine cannot fail
  // the test, only a lost frame or a lost wake-up can.
  void SetUp() override { start_fabric(kGpus, 10'000'000'000); }

  // One copy, polled to its end by the caller (drive_copy with a short budget, as QEMU's
  // COPY_STATUS read does) or, if `polled` is false, left to the service thread.
  DeviceResult copy(GpuDevice& device, std::uint64_t src, std::uint64_t dst, std::uint64_t bytes,
                    bool polled) {
    std::promise<DeviceResult> finished;
    std::future<DeviceResult> result = finished.get_future();
    const auto how =
        polled ? GpuDevice::CopyStart::kCallerDrives : GpuDevice::CopyStart::kWakeService;
    if (!device.start_copy(
            src, dst, bytes, [&](const DeviceResult& r) { finished.set_value(r); }, how)) {
      return DeviceResult{DeviceStatus::kRemoteError, 0, src};
    }
    if (polled) {
      while (device.drive_copy(200'000)) {
      }
    }
    return result.get();
  }

  // Device `self` for `rounds` rounds: fills its source, pulls the next GPU's source into its
  // landing slot (a get), pushes its own source into the GPU after next (a put), flushes, then
  // stores and loads a word at the previous GPU. Counts what went wrong.
  void run_pe(GpuId self, int rounds, std::atomic<int>& failures, std::atomic<int>& wrong_data) {
    GpuDevice& device = *devices_[self];
    const GpuId next = (self + 1) % kGpus;
    const GpuId after_next = (self + 2) % kGpus;
    const GpuId previous = (self + kGpus - 1) % kGpus;
    for (int round = 0; round < rounds; ++round) {
      const bool polled = round % 2 == 0;
      const DeviceResult get = copy(device, window(next, kSourceOffset),
                                    window(self, kLandingOffset + next * kChunk), kChunk, polled);
      const DeviceResult put =
          copy(device, window(self, kSourceOffset),
               window(after_next, kLandingOffset + 0x10000 + self * kChunk), kChunk, !polled);
      const std::uint64_t word =
          window(previous, kLandingOffset + 0x20000 + std::uint64_t{self} * 8);
      const DeviceResult store = device.store(word, 8, static_cast<std::uint64_t>(round));
      const DeviceResult flush = device.flush_all();
      const DeviceResult load = device.load(word, 8);
      for (const DeviceResult* r : {&get, &put, &store, &flush, &load}) {
        if (r->status != DeviceStatus::kOk) {
          ADD_FAILURE() << "GPU " << self << " round " << round << ": " << to_string(r->status)
                        << " at 0x" << std::hex << r->fault_addr;
          ++failures;
        }
      }
      if (load.status == DeviceStatus::kOk && load.value != static_cast<std::uint64_t>(round)) {
        ++wrong_data;
      }
    }
  }
};

TEST_F(GpuDeviceStressTest, EveryGpuCopyingFlushingAndLoadingAtOnceLosesNothing) {
  // Sources that never change: a get may read them at any time.
  for (GpuId gpu = 0; gpu < kGpus; ++gpu) {
    for (std::uint64_t i = 0; i < kChunk; ++i) {
      devices_[gpu]->hbm()[kSourceOffset + i] = pattern(gpu, 0, i);
    }
  }
  constexpr int kRounds = 300;
  std::atomic<int> failures{0};
  std::atomic<int> wrong_data{0};
  std::vector<std::thread> pes;
  for (GpuId gpu = 0; gpu < kGpus; ++gpu) {
    pes.emplace_back([&, gpu] { run_pe(gpu, kRounds, failures, wrong_data); });
  }
  for (auto& pe : pes) pe.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(wrong_data.load(), 0);
  for (GpuId gpu = 0; gpu < kGpus; ++gpu) {
    const GpuId next = (gpu + 1) % kGpus;
    const GpuId before_previous = (gpu + 2) % kGpus;  // the GPU whose puts land here
    EXPECT_EQ(std::memcmp(devices_[gpu]->hbm().data() + kLandingOffset + next * kChunk,
                          devices_[next]->hbm().data() + kSourceOffset, kChunk),
              0)
        << "GPU " << gpu << "'s get";
    EXPECT_EQ(std::memcmp(
                  devices_[gpu]->hbm().data() + kLandingOffset + 0x10000 + before_previous * kChunk,
                  devices_[before_previous]->hbm().data() + kSourceOffset, kChunk),
              0)
        << "GPU " << before_previous << "'s put";
    const GpuDeviceCounters counters = devices_[gpu]->counters();
    EXPECT_EQ(counters.timeouts, 0u) << "GPU " << gpu;
    EXPECT_EQ(counters.errors, 0u) << "GPU " << gpu;
    EXPECT_EQ(counters.copies, 2u * kRounds) << "GPU " << gpu;
  }
}

}  // namespace
}  // namespace ethx
