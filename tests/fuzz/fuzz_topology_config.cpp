// Fuzz target: the topology config parser (parse_topology) on arbitrary text. ConfigError is
// its one documented failure; any other exception escaping, or a crash, is a bug. A config it
// accepts must also build everything the commands build from it without throwing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "address-map/config_error.hpp"
#include "fabric/config/topology_config.hpp"
#include "switch/core/switch_core.hpp"
#include "tests/fuzz/fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ethx;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  TopologyConfig config;
  try {
    config = parse_topology(text, "fuzz.toml");
  } catch (const ConfigError&) {
    return 0;
  }
  ETHX_FUZZ_CHECK(config.gpu_count >= kMinGpus && config.gpu_count <= kMaxGpus);
  ETHX_FUZZ_CHECK(config.gpus.size() == config.gpu_count);
  ETHX_FUZZ_CHECK(config.frame_bytes_max >= wire::kMinFrameBytesMax);
  const AddressMap map = config.address_map();
  ETHX_FUZZ_CHECK(!map.windows().empty());
  const auto last = static_cast<GpuId>(config.gpu_count - 1);
  ETHX_FUZZ_CHECK(config.engine_config(last).gpu_macs.size() == config.gpu_count);
  const SwitchCore core(config.switch_config());
  ETHX_FUZZ_CHECK(core.port_count() == config.gpu_count);
  // The --gpus override re-validates; it may refuse (ConfigError) but nothing else.
  try {
    config.resize(kMinGpus + size % 4);
  } catch (const ConfigError&) {
  }
  return 0;
}
