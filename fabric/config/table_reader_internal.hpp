// Reading the topology file's tables: a reader of typed fields that names the field in every
// error, shared by the files that read one table each. Private to fabric/config.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <toml.hpp>

#include "address-map/config_error.hpp"
#include "address-map/fabric_types.hpp"
#include "fabric/config/rnic_config.hpp"
#include "packet-engine/mac_addr.hpp"

namespace ethx {

// Reads typed fields of one TOML table and names the field in every error.
class TableReader {
 public:
  TableReader(const toml::value& table, std::string path, const std::string& source)
      : table_(table), path_(std::move(path)), source_(source) {
    if (!table_.is_table()) fail("", "must be a table");
  }

  [[noreturn]] void fail(const std::string& key, const std::string& reason) const {
    std::string field = path_;
    if (!key.empty()) field += (field.empty() ? "" : ".") + key;
    throw ConfigError(source_ + ": " + field + ": " + reason);
  }

  // Rejects keys the format does not know, so a typo is an error instead of a silent default.
  void allow_only(std::initializer_list<std::string_view> known) const {
    for (const auto& [key, value] : table_.as_table()) {
      bool found = false;
      for (auto name : known) found = found || name == key;
      if (!found) fail(key, "unknown key");
    }
  }

  bool has(const std::string& key) const { return table_.as_table().count(key) != 0; }

  std::uint64_t unsigned_field(const std::string& key, std::uint64_t fallback, std::uint64_t min,
                               std::uint64_t max) const {
    if (!has(key)) return fallback;
    const toml::value& value = table_.as_table().at(key);
    if (!value.is_integer()) fail(key, "must be an integer");
    const std::int64_t number = value.as_integer();
    if (number < 0 || static_cast<std::uint64_t>(number) < min ||
        static_cast<std::uint64_t>(number) > max) {
      fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                    " (got " + std::to_string(number) + ")");
    }
    return static_cast<std::uint64_t>(number);
  }

  double double_field(const std::string& key, double fallback, double min, double max) const {
    if (!has(key)) return fallback;
    const toml::value& value = table_.as_table().at(key);
    double number = 0;
    if (value.is_floating()) {
      number = value.as_floating();
    } else if (value.is_integer()) {
      number = static_cast<double>(value.as_integer());
    } else {
      fail(key, "must be a number");
    }
    if (!(number >= min && number <= max)) {
      std::ostringstream reason;
      reason << "must be between " << min << " and " << max << " (got " << number << ")";
      fail(key, reason.str());
    }
    return number;
  }

  bool bool_field(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    const toml::value& value = table_.as_table().at(key);
    if (!value.is_boolean()) fail(key, "must be true or false");
    return value.as_boolean();
  }

  std::string string_field(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    const toml::value& value = table_.as_table().at(key);
    if (!value.is_string()) fail(key, "must be a string");
    return value.as_string().str;
  }

  Rights rights_field(const std::string& key, Rights fallback) const {
    if (!has(key)) return fallback;
    Rights rights = kRightNone;
    if (!parse_rights(string_field(key, ""), rights)) {
      fail(key, "must be a subset of \"rwa\" (read, write, atomic)");
    }
    return rights;
  }

  MacAddr mac_field(const std::string& key, MacAddr fallback) const {
    if (!has(key)) return fallback;
    auto mac = MacAddr::parse(string_field(key, ""));
    if (!mac) fail(key, "must be a MAC address like \"02:e7:68:00:00:01\"");
    if (mac->is_multicast()) fail(key, "must be a unicast MAC address");
    return *mac;
  }

 private:
  const toml::value& table_;
  std::string path_;
  const std::string& source_;
};

// [rnic] (rnic_config.cpp).
void read_rnic(const toml::value& node, const std::string& source, RnicConfig& rnic);

}  // namespace ethx
