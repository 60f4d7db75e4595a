// An access to the GPU's own window, performed on its memory (the completer's mapping of the
// HBM): such requests never leave the GPU, because the switch would not send a frame back out of
// the port it came in on.
#pragma once

#include <cstdint>
#include <span>

#include "qemu-device/host/device_request.hpp"

namespace ethx {

struct LocalAccessResult {
  DeviceStatus status = DeviceStatus::kOk;
  std::uint64_t value = 0;  // loads: the data; atomics: the old value
};

// Performs `request` (a load, store or atomic whose dst is this GPU) at request.remote.
// kRemoteError, and nothing touched, if it reaches past the memory or an atomic is misaligned,
// as the completer refuses such a request from another GPU.
LocalAccessResult perform_local(const DeviceRequest& request, std::span<std::byte> memory);

// `width` bytes at `bytes`, little-endian (x86-64 and the wire both are).
std::uint64_t read_le(const std::byte* bytes, unsigned width);

}  // namespace ethx
