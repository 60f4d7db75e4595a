#include "fabric/config/config_overlay.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <toml.hpp>

#include "address-map/config_error.hpp"
#include "fabric/config/topology_config.hpp"

namespace ethx {
namespace {

toml::value read_base(const std::string& base_path) {
  try {
    if (base_path.empty()) {
      std::istringstream text{std::string(default_topology_toml())};
      return toml::parse(text, "embedded default");
    }
    return toml::parse(base_path);
  } catch (const std::exception& error) {
    throw ConfigError(std::string(error.what()));
  }
}

// The table `key` of `root`, created empty if the file has none.
toml::table& table_of(toml::value& root, const std::string& key) {
  toml::value& child = root.as_table()[key];
  if (!child.is_table()) child = toml::table{};
  return child.as_table();
}

}  // namespace

void write_config_overlay(const std::string& base_path, const ConfigOverlay& overlay,
                          const std::string& out_path) {
  // Parse through the real reader first, so a bad base file is reported as such.
  (void)load_topology(base_path);
  toml::value root = read_base(base_path);
  if (overlay.reliability_mode) {
    table_of(root, "reliability")["mode"] = *overlay.reliability_mode;
  }
  if (overlay.fault_seed) {
    table_of(root, "switch")["fault_seed"] = static_cast<std::int64_t>(*overlay.fault_seed);
  }
  if (overlay.link_retry) table_of(root, "link")["retry"] = *overlay.link_retry;
  if (overlay.flow_control) table_of(root, "link")["flow_control"] = *overlay.flow_control;
  if (overlay.faults) {
    toml::array faults;
    for (const auto& [port, port_faults] : *overlay.faults) {
      toml::table entry{{"port", static_cast<std::int64_t>(port)},
                        {"drop_rate", port_faults.drop_rate},
                        {"corrupt_rate", port_faults.corrupt_rate}};
      // A sending port has no ingress link to reorder: the field is for "rx" only.
      if (port_faults.reorder_rate > 0 || overlay.fault_direction == "rx") {
        entry["reorder_rate"] = port_faults.reorder_rate;
      }
      if (overlay.fault_direction != "rx") entry["direction"] = overlay.fault_direction;
      if (port_faults.delay_spike_rate > 0 && port_faults.delay_spike_ns > 0) {
        entry["delay_spike_rate"] = port_faults.delay_spike_rate;
        entry["delay_spike_us"] = static_cast<std::int64_t>(port_faults.delay_spike_ns / 1000);
      }
      if (port_faults.link_down) entry["link"] = "down";
      faults.push_back(entry);
    }
    if (faults.empty()) {
      root.as_table().erase("fault");
    } else {
      root.as_table()["fault"] = faults;
    }
  }
  {
    std::ofstream out(out_path);
    out << "# Written by ethx for one run: "
        << (base_path.empty() ? "the embedded default" : base_path) << " with overrides.\n"
        << toml::format(root) << "\n";
    if (!out) throw ConfigError(out_path + ": cannot write the run's topology file");
  }
  (void)load_topology(out_path);
}

ScopedConfigOverlay::ScopedConfigOverlay(const std::string& base_path, const ConfigOverlay& overlay,
                                         const std::string& purpose)
    : path_((std::filesystem::temp_directory_path() /
             ("ethx-" + purpose + "-" + std::to_string(::getpid()) + ".toml"))
                .string()) {
  write_config_overlay(base_path, overlay, path_);
}

ScopedConfigOverlay::~ScopedConfigOverlay() {
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

}  // namespace ethx
