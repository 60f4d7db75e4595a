// Names of everything a fabric instance creates, all under one prefix so cleanup can find
// them and nothing else on the machine is touched.
#pragma once

#include <string>

#include "address-map/fabric_types.hpp"

namespace ethx {

inline constexpr const char* kNamePrefix = "ethx-";

inline std::string switch_region_name(const std::string& fabric) {
  return "/" + std::string(kNamePrefix) + fabric + "-switch";
}
inline std::string control_region_name(const std::string& fabric) {
  return "/" + std::string(kNamePrefix) + fabric + "-control";
}
inline std::string hbm_file_name(const std::string& fabric, GpuId gpu) {
  return "/" + std::string(kNamePrefix) + fabric + "-hbm-" + std::to_string(gpu);
}

}  // namespace ethx
