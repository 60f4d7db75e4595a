// Four GpuDevices on one shared-memory fabric, each both requester and target (as OpenSHMEM
// PEs are): every device's caller thread runs copies in both directions (driven by polling, as
// a guest polling COPY_STATUS does, and left to the service thread), flushes, loads and posted
// stores against the others at once. Nothing may be lost: every operation ends ok (no timeout)
// with the right data, and no device counts an error or a timeout. The request timeout is
// long (10 s) so that a slow machine cannot fail it; only a lost frame or a lost wake-up can.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fabric/config/fabric_names.hpp"
#include "fabric/transport/shm/shm_fabric_region.hpp"
#include "qemu-device/host/gpu_device.hpp"
#include "switch/runtime/shm_switch_runtime.hpp"

namespace ethx {
namespace {

constexpr std::uint64_t kAperture = 4ull << 20;
constexpr std::size_t kGpus = 4;
constexpr std::uint64_t kChunk = 4096;
// Per device: its source data at kSourceOffset, and one landing slot per peer for data that
// peer copies or stores into it.
constexpr std::uint64_t kSourceOffset = 0x10000;
constexpr std::uint64_t kLandingOffset = 0x100000;

std::byte pattern(GpuId gpu, std::uint64_t round, std::uint64_t i) {
  return std::byte(static_cast<std::uint8_t>(std::uint64_t{gpu} * 59 + round * 13 + i * 7));
}

class GpuDeviceStressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fabric_ = "devstress" + std::to_string(::getpid());
    config_path_ = std::filesystem::temp_directory_path() / (fabric_ + ".toml");
    std::ofstream(config_path_) << "[fabric]\ngpus = 4\nhbm_bytes = 4194304\n"
                                   "aperture_bytes = 4194304\nrequest_timeout_ns = 10000000000\n";
    topology_ = load_topology(config_path_.string());
    region_.emplace(shm::ShmFabricRegion::create(switch_region_name(fabric_), kGpus));
    switch_ = std::make_unique<ShmSwitchRuntime>(topology_, *region_);
    switch_thread_ = std::thread([this] { switch_->run(stop_switch_); });
    for (GpuId gpu = 0; gpu < kGpus; ++gpu) {
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
      const std::uint64_t word = window(previous, kLandingOffset + 0x20000 + std::uint64_t{self} * 8);
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

  std::string fabric_;
  std::filesystem::path config_path_;
  TopologyConfig topology_;
  std::optional<shm::ShmFabricRegion> region_;
  std::unique_ptr<ShmSwitchRuntime> switch_;
  std::atomic<bool> stop_switch_{false};
  std::thread switch_thread_;
  std::vector<std::unique_ptr<GpuDevice>> devices_;
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
