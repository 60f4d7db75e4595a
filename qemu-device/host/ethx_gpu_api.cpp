// The C side of GpuDevice for the QEMU device. Every entry point catches everything: a C++
// exception must never unwind into QEMU's C frames.
#include "qemu-device/host/ethx_gpu_api.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "qemu-device/ethx_gpu_regs.h"
#include "qemu-device/host/gpu_device.hpp"

struct ethx_gpu {
  std::unique_ptr<ethx::GpuDevice> device;
};

// The C API passes the register map's opcodes straight through as ethx::AtomicOp.
static_assert(static_cast<int>(ethx::AtomicOp::kFetchAdd) == ETHX_GPU_FETCH_ADD &&
              static_cast<int>(ethx::AtomicOp::kSwap) == ETHX_GPU_SWAP &&
              static_cast<int>(ethx::AtomicOp::kCompareSwap) == ETHX_GPU_COMPARE_SWAP);

namespace {

std::string text(const char* value) {
  return value == nullptr ? std::string() : value;
}

void report(char* error, std::size_t error_bytes, const std::string& message) {
  if (error == nullptr || error_bytes == 0) return;
  std::snprintf(error, error_bytes, "%s", message.c_str());
}

void log_internal(const char* where, const char* what) {
  std::fprintf(stderr, "ethx-gpu: %s: unexpected failure: %s\n", where, what);
}

int finish(const ethx::DeviceResult& result, std::uint64_t* value, std::uint64_t* fault_addr) {
  if (value != nullptr) *value = result.value;
  if (fault_addr != nullptr) *fault_addr = result.fault_addr;
  return static_cast<int>(result.status);
}

int internal_error(const char* where, std::uint64_t window_addr, std::uint64_t* value,
                   std::uint64_t* fault_addr) {
  if (value != nullptr) *value = ~std::uint64_t{0};
  if (fault_addr != nullptr) *fault_addr = window_addr;
  (void)where;
  return ETHX_GPU_INTERNAL;
}

}  // namespace

extern "C" {

ethx_gpu* ethx_gpu_open(const ethx_gpu_options* options, char* error, size_t error_bytes) {
  try {
    ethx::GpuDeviceOptions device_options;
    device_options.fabric = text(options->fabric);
    device_options.gpu = static_cast<ethx::GpuId>(options->gpu_id);
    device_options.gpus = options->gpus;
    device_options.config_path = text(options->config_path);
    device_options.transport = options->transport ? options->transport : "shm";
    device_options.netns_tag = text(options->netns_tag);
    device_options.interface = text(options->interface);
    device_options.netns = text(options->netns);
    device_options.ready_when_told = true;  // the guest writes GUEST_READY
    if (device_options.fabric.empty()) {
      report(error, error_bytes, "no fabric name given");
      return nullptr;
    }
    auto handle = std::make_unique<ethx_gpu>();
    handle->device = std::make_unique<ethx::GpuDevice>(device_options);
    return handle.release();
  } catch (const std::exception& failure) {
    report(error, error_bytes, failure.what());
  } catch (...) {
    report(error, error_bytes, "unknown error");
  }
  return nullptr;
}

void ethx_gpu_close(ethx_gpu* gpu) {
  try {
    delete gpu;
  } catch (...) {
    log_internal("close", "exception while stopping");
  }
}

void* ethx_gpu_map_hbm(ethx_gpu* gpu, uint64_t* bytes) {
  try {
    const std::string name = gpu->device->hbm_name();
    const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) return nullptr;
    const std::size_t size = gpu->device->hbm().size();
    void* mapping = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (mapping == MAP_FAILED) return nullptr;
    if (bytes != nullptr) *bytes = size;
    return mapping;
  } catch (const std::exception& failure) {
    log_internal("map_hbm", failure.what());
    return nullptr;
  }
}

uint64_t ethx_gpu_window_bytes(const ethx_gpu* gpu) {
  return gpu->device->window_bytes();
}

uint32_t ethx_gpu_gpu_count(const ethx_gpu* gpu) {
  return static_cast<uint32_t>(gpu->device->topology().gpu_count);
}

uint64_t ethx_gpu_aperture_bytes(const ethx_gpu* gpu) {
  return gpu->device->topology().aperture_bytes;
}

int ethx_gpu_load(ethx_gpu* gpu, uint64_t window_addr, unsigned width, uint64_t* value,
                  uint64_t* fault_addr) {
  try {
    return finish(gpu->device->load(window_addr, width), value, fault_addr);
  } catch (const std::exception& failure) {
    log_internal("load", failure.what());
    return internal_error("load", window_addr, value, fault_addr);
  }
}

int ethx_gpu_store(ethx_gpu* gpu, uint64_t window_addr, unsigned width, uint64_t value,
                   uint64_t* fault_addr) {
  try {
    return finish(gpu->device->store(window_addr, width, value), nullptr, fault_addr);
  } catch (const std::exception& failure) {
    log_internal("store", failure.what());
    return internal_error("store", window_addr, nullptr, fault_addr);
  }
}

int ethx_gpu_try_store(ethx_gpu* gpu, uint64_t window_addr, unsigned width, uint64_t value,
                       uint64_t* fault_addr) {
  try {
    const std::optional<ethx::DeviceResult> queued =
        gpu->device->try_store(window_addr, width, value);
    if (!queued) return ETHX_GPU_QUEUE_FULL;
    return finish(*queued, nullptr, fault_addr);
  } catch (const std::exception& failure) {
    log_internal("store", failure.what());
    return internal_error("store", window_addr, nullptr, fault_addr);
  }
}

int ethx_gpu_atomic(ethx_gpu* gpu, int op, uint64_t window_addr, unsigned width, uint64_t operand,
                    uint64_t compare, uint64_t* old_value, uint64_t* fault_addr) {
  try {
    if (op < ETHX_GPU_FETCH_ADD || op > ETHX_GPU_COMPARE_SWAP) {
      if (old_value != nullptr) *old_value = ~std::uint64_t{0};
      if (fault_addr != nullptr) *fault_addr = window_addr;
      return ETHX_GPU_BAD_WIDTH;
    }
    return finish(
        gpu->device->atomic(static_cast<ethx::AtomicOp>(op), window_addr, width, operand, compare),
        old_value, fault_addr);
  } catch (const std::exception& failure) {
    log_internal("atomic", failure.what());
    return internal_error("atomic", window_addr, old_value, fault_addr);
  }
}

int ethx_gpu_flush(ethx_gpu* gpu, uint64_t* fault_addr) {
  try {
    return finish(gpu->device->flush_all(), nullptr, fault_addr);
  } catch (const std::exception& failure) {
    log_internal("flush", failure.what());
    return internal_error("flush", 0, nullptr, fault_addr);
  }
}

namespace {

int start_copy(ethx_gpu* gpu, uint64_t src, uint64_t dst, uint64_t bytes, ethx_gpu_copy_done done,
               void* opaque, ethx::GpuDevice::CopyStart how) {
  try {
    const bool started = gpu->device->start_copy(
        src, dst, bytes,
        [done, opaque](const ethx::DeviceResult& result) {
          if (done != nullptr) done(opaque, static_cast<int>(result.status), result.fault_addr);
        },
        how);
    return started ? 0 : -1;
  } catch (const std::exception& failure) {
    log_internal("copy", failure.what());
    return -1;
  }
}

}  // namespace

int ethx_gpu_copy(ethx_gpu* gpu, uint64_t src, uint64_t dst, uint64_t bytes,
                  ethx_gpu_copy_done done, void* opaque) {
  return start_copy(gpu, src, dst, bytes, done, opaque, ethx::GpuDevice::CopyStart::kWakeService);
}

int ethx_gpu_copy_driven(ethx_gpu* gpu, uint64_t src, uint64_t dst, uint64_t bytes,
                         ethx_gpu_copy_done done, void* opaque, int64_t budget_ns) {
  const int started =
      start_copy(gpu, src, dst, bytes, done, opaque, ethx::GpuDevice::CopyStart::kCallerDrives);
  if (started == 0) ethx_gpu_copy_poll(gpu, budget_ns);
  return started;
}

int ethx_gpu_copy_poll(ethx_gpu* gpu, int64_t budget_ns) {
  try {
    return gpu->device->drive_copy(budget_ns) ? 1 : 0;
  } catch (const std::exception& failure) {
    log_internal("copy poll", failure.what());
    return 1;  // the copy's own completion still reports how it ended
  }
}

void ethx_gpu_guest_ready(ethx_gpu* gpu) {
  try {
    gpu->device->report_ready();
  } catch (const std::exception& failure) {
    log_internal("guest_ready", failure.what());
  }
}

void ethx_gpu_get_counters(const ethx_gpu* gpu, ethx_gpu_counters* counters) {
  const ethx::GpuDeviceCounters c = gpu->device->counters();
  counters->loads = c.loads;
  counters->stores = c.stores;
  counters->atomics = c.atomics;
  counters->errors = c.errors;
  counters->timeouts = c.timeouts;
  counters->served_requests = c.served_requests;
  counters->copies = c.copies;
  counters->copy_bytes = c.copy_bytes;
}

const char* ethx_gpu_status_name(int status) {
  if (status == ETHX_GPU_INTERNAL) return "internal error";
  return ethx::to_string(static_cast<ethx::DeviceStatus>(status));
}

}  // extern "C"
