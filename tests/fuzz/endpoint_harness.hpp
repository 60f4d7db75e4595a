// One GPU's packet engine in a small fabric, as fuzz_endpoint_rx and the seed generator use it:
// GPU 0 of four, 16 KiB of local memory, requests issued through the default address layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "address-map/address_map.hpp"
#include "packet-engine/effects.hpp"
#include "packet-engine/endpoint.hpp"
#include "packet-engine/engine_config.hpp"

namespace ethx::fuzz {

inline constexpr std::size_t kHarnessGpus = 4;
inline constexpr std::uint64_t kHarnessMemoryBytes = 16 * 1024;
inline constexpr TimeNs kHarnessTimeoutNs = 20'000'000;
inline constexpr TimeNs kHarnessTimeStepNs = 1'000'000;  // per unit of a record's time bits

inline EngineConfig harness_engine_config(GpuId self) {
  EngineConfig config;
  config.self = self;
  config.self_mac = default_mac_for_gpu(self);
  for (std::size_t gpu = 0; gpu < kHarnessGpus; ++gpu) {
    config.gpu_macs.push_back(default_mac_for_gpu(static_cast<GpuId>(gpu)));
  }
  // Few tags, so the fuzzer can reach a full outstanding table; a short timeout, so the time
  // bits of a record can expire requests.
  config.max_outstanding = 16;
  config.request_timeout_ns = kHarnessTimeoutNs;
  return config;
}

struct EndpointHarness {
  // The memory is exactly the endpoint's size, so ASan reports any access past either end.
  std::vector<std::byte> memory;
  AddressMap map;
  Endpoint endpoint;
  Effects effects;
  TimeNs now = 1'000;

  explicit EndpointHarness(GpuId self = 0)
      : memory(kHarnessMemoryBytes),
        map(AddressMap::build(AddressMap::default_layout(kHarnessGpus, kHarnessMemoryBytes,
                                                         kHarnessMemoryBytes, kRightAll),
                              std::vector<std::uint64_t>(kHarnessGpus, kHarnessMemoryBytes))),
        endpoint(harness_engine_config(self), memory) {}

  // Leaves one request of every kind outstanding towards GPUs 1 and 2, so forged responses
  // have something to match. Accesses go through the address map like a node's loads and
  // stores; the last read straddles GPU 1's and GPU 2's windows.
  void issue_requests() {
    constexpr std::uint64_t kPeer = 1 * kHarnessMemoryBytes;
    std::vector<std::byte> data(100, std::byte{0x5A});
    std::vector<Segment> segments;
    Requester& requester = endpoint.requester();
    auto each = [&](std::uint64_t addr, std::uint64_t length, Access access, auto issue) {
      if (!map.translate(addr, length, access, segments).ok()) return;
      for (const Segment& segment : segments) issue(segment);
    };
    each(kPeer + 128, 3000, Access::kRead, [&](const Segment& s) {
      requester.read(s.dst_gpu, s.remote_addr, s.length, now, effects);
    });
    each(kPeer + 4096, data.size(), Access::kWrite, [&](const Segment& s) {
      requester.write(s.dst_gpu, s.remote_addr, data, now, effects);
      requester.write_posted(s.dst_gpu, s.remote_addr + 512, data, now, effects);
    });
    each(kPeer + 64, 8, Access::kAtomic, [&](const Segment& s) {
      requester.atomic(s.dst_gpu, s.remote_addr, AtomicOp::kFetchAdd, 8, 1, 0, now, effects);
      requester.atomic(s.dst_gpu, s.remote_addr, AtomicOp::kCompareSwap, 4, 7, 3, now, effects);
      requester.flush(s.dst_gpu, now, effects);
    });
    each(2 * kHarnessMemoryBytes - 100, 200, Access::kRead, [&](const Segment& s) {
      requester.read(s.dst_gpu, s.remote_addr, s.length, now, effects);
    });
    endpoint.poll(now, effects);
  }
};

}  // namespace ethx::fuzz
