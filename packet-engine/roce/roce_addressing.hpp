// How a GPU's RoCEv2 engine is addressed on the fabric: the GPU's own MAC (the switch's port
// security only lets port k send with GPU k's MAC) and an IPv4 address derived from the GPU
// id, 10.88.0.0/16 + id + 1 (GPU 0 is 10.88.0.1, GPU 257 is 10.88.1.2). docs/roce.md.
#pragma once

#include <cstdint>
#include <string>

#include "address-map/fabric_types.hpp"

namespace ethx {

inline constexpr std::uint32_t kRoceSubnet = (10u << 24) | (88u << 16);  // 10.88.0.0/16

// Host order; GPU ids below 65535 fit the /16.
constexpr std::uint32_t roce_ipv4_for_gpu(GpuId gpu) {
  return kRoceSubnet | ((static_cast<std::uint32_t>(gpu) + 1) & 0xFFFF);
}

inline std::string format_ipv4(std::uint32_t ip) {
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 0xFF) + "." +
         std::to_string((ip >> 8) & 0xFF) + "." + std::to_string(ip & 0xFF);
}

}  // namespace ethx
