#include "fabric/node/protocol_fields.hpp"

namespace ethx::protocol {

void throw_wrong_type(const nlohmann::json& in, const std::string& path, const char* wanted) {
  throw ProtocolError(path + ": want " + wanted + ", got " + in.type_name());
}

void read_value(const nlohmann::json& in, const std::string& path, std::string& value) {
  if (!in.is_string()) throw_wrong_type(in, path, "a string");
  value = in.get<std::string>();
}

void read_value(const nlohmann::json& in, const std::string& path, double& value) {
  if (!in.is_number()) throw_wrong_type(in, path, "a number");
  value = in.get<double>();
}

std::uint64_t read_unsigned(const nlohmann::json& in, const std::string& path,
                            std::uint64_t max_value) {
  // A negative integer parses as number_integer; 3.5 as number_float: both are refused rather
  // than wrapped or truncated.
  if (in.is_number_integer() && !in.is_number_unsigned() && in.get<std::int64_t>() >= 0) {
    return read_unsigned(nlohmann::json(in.get<std::uint64_t>()), path, max_value);
  }
  if (!in.is_number_unsigned()) {
    const std::string got = in.is_number() ? in.dump() : std::string(in.type_name());
    throw ProtocolError(path + ": want an unsigned integer, got " + got);
  }
  const auto value = in.get<std::uint64_t>();
  if (value > max_value) {
    throw ProtocolError(path + ": " + std::to_string(value) + " is out of range (at most " +
                        std::to_string(max_value) + ")");
  }
  return value;
}

}  // namespace ethx::protocol
