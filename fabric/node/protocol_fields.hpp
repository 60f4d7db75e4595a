// How the messages of the node protocol (node_protocol.hpp) become JSON and back. Each message
// struct lists its fields once, in a static `fields(self, f)` that calls f.required(name, member)
// or f.optional(name, member) per field; FieldWriter and FieldReader walk that list, so a field's
// name is written in one place for both directions and the two cannot drift apart.
//
// Reading is strict, because a node must answer a bad command with an error that names the
// field rather than crash or guess: a missing required field, a value of the wrong JSON type, a
// negative or too large integer all throw ProtocolError ("count: missing", "links.acks_sent:
// want an unsigned integer, got string"). An optional field that is absent keeps the struct's
// default.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ethx::protocol {

// A message that is not what the protocol says; what() starts with the field's path.
class ProtocolError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class FieldReader;

// A message struct: it lists its fields with a static fields(self, f).
template <class T>
concept Message = requires(T& value, FieldReader& reader) {
  T::fields(value, reader);
};

// Readers of one JSON value into one member; `path` names it in errors ("links.acks_sent").
void read_value(const nlohmann::json& in, const std::string& path, std::string& value);
void read_value(const nlohmann::json& in, const std::string& path, double& value);
std::uint64_t read_unsigned(const nlohmann::json& in, const std::string& path,
                            std::uint64_t max_value);
template <std::unsigned_integral T>
void read_value(const nlohmann::json& in, const std::string& path, T& value);
template <class T>
void read_value(const nlohmann::json& in, const std::string& path, std::vector<T>& values);
template <Message T>
void read_value(const nlohmann::json& in, const std::string& path, T& value);

// Writers: scalars as themselves, vectors as arrays, messages as objects.
template <class T>
void write_value(nlohmann::json& out, const T& value);
template <class T>
void write_value(nlohmann::json& out, const std::vector<T>& values);
template <Message T>
void write_value(nlohmann::json& out, const T& value);

class FieldWriter {
 public:
  explicit FieldWriter(nlohmann::json& out) : out_(out) {}
  template <class T>
  void required(const char* name, const T& value) {
    write_value(out_[name], value);
  }
  // Written even when it holds the default: the reader needs no knowledge of defaults.
  template <class T>
  void optional(const char* name, const T& value) {
    write_value(out_[name], value);
  }

 private:
  nlohmann::json& out_;
};

class FieldReader {
 public:
  // `in` must be an object; `prefix` is prepended to field names in errors ("" or "links.").
  FieldReader(const nlohmann::json& in, std::string prefix) : in_(in), prefix_(std::move(prefix)) {}
  template <class T>
  void required(const char* name, T& value) {
    const auto field = in_.find(name);
    if (field == in_.end()) throw ProtocolError(prefix_ + name + ": missing");
    read_value(*field, prefix_ + name, value);
  }
  template <class T>
  void optional(const char* name, T& value) {
    const auto field = in_.find(name);
    if (field != in_.end()) read_value(*field, prefix_ + name, value);
  }

 private:
  const nlohmann::json& in_;
  std::string prefix_;
};

// "want <wanted>, got <what `in` is>" for `path`.
[[noreturn]] void throw_wrong_type(const nlohmann::json& in, const std::string& path,
                                   const char* wanted);

template <std::unsigned_integral T>
void read_value(const nlohmann::json& in, const std::string& path, T& value) {
  if constexpr (std::same_as<T, bool>) {
    if (!in.is_boolean()) throw_wrong_type(in, path, "true or false");
    value = in.get<bool>();
  } else {
    value = static_cast<T>(read_unsigned(in, path, std::numeric_limits<T>::max()));
  }
}

template <class T>
void read_value(const nlohmann::json& in, const std::string& path, std::vector<T>& values) {
  if (!in.is_array()) throw_wrong_type(in, path, "an array");
  values.assign(in.size(), T{});
  for (std::size_t n = 0; n < in.size(); ++n) {
    read_value(in[n], path + "[" + std::to_string(n) + "]", values[n]);
  }
}

template <Message T>
void read_value(const nlohmann::json& in, const std::string& path, T& value) {
  if (!in.is_object()) throw_wrong_type(in, path.empty() ? "message" : path, "an object");
  FieldReader reader(in, path.empty() ? std::string() : path + ".");
  T::fields(value, reader);
}

template <class T>
void write_value(nlohmann::json& out, const T& value) {
  out = value;
}

template <class T>
void write_value(nlohmann::json& out, const std::vector<T>& values) {
  out = nlohmann::json::array();
  for (const T& value : values) write_value(out.emplace_back(), value);
}

template <Message T>
void write_value(nlohmann::json& out, const T& value) {
  out = nlohmann::json::object();
  FieldWriter writer(out);
  T::fields(value, writer);
}

// nlohmann's hooks, found by argument-dependent lookup: `nlohmann::json j = message;` and
// `j.get<Message>()` go through the field lists (reading throws ProtocolError).
template <Message T>
void to_json(nlohmann::json& out, const T& value) {
  write_value(out, value);
}

template <Message T>
void from_json(const nlohmann::json& in, T& value) {
  read_value(in, "", value);
}

}  // namespace ethx::protocol
