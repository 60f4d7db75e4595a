#include "fabric/node/node_protocol.hpp"

#include <array>
#include <utility>

namespace ethx::protocol {
namespace {

using nlohmann::json;

constexpr std::size_t kCommandCount = std::variant_size_v<NodeCommand>;

template <std::size_t... I>
constexpr std::array<std::string_view, kCommandCount> op_names(std::index_sequence<I...>) {
  return {std::variant_alternative_t<I, NodeCommand>::kOp...};
}

constexpr bool ops_are_unique() {
  constexpr auto names = op_names(std::make_index_sequence<kCommandCount>());
  for (std::size_t a = 0; a < names.size(); ++a) {
    for (std::size_t b = a + 1; b < names.size(); ++b) {
      if (names[a] == names[b]) return false;
    }
  }
  return true;
}
static_assert(ops_are_unique(), "two commands share an op name");

// The alternative of NodeCommand whose kOp is `op`, read from `in`; nullopt for no such op.
template <std::size_t... I>
std::optional<NodeCommand> parse_as(std::string_view op, const json& in,
                                    std::index_sequence<I...>) {
  std::optional<NodeCommand> command;
  const auto try_one = [&]<std::size_t N>() {
    using Alternative = std::variant_alternative_t<N, NodeCommand>;
    if (!command && Alternative::kOp == op) command = parse_result<Alternative>(in);
  };
  (try_one.template operator()<I>(), ...);
  return command;
}

}  // namespace

void read_value(const json& in, const std::string& path, RoceOp& value) {
  if (in == "write") {
    value = RoceOp::kWrite;
  } else if (in == "read") {
    value = RoceOp::kRead;
  } else {
    throw ProtocolError(path + ": want \"write\" or \"read\", got " + in.dump());
  }
}

void write_value(json& out, RoceOp value) {
  out = value == RoceOp::kWrite ? "write" : "read";
}

json command_json(const NodeCommand& command) {
  return std::visit([](const auto& alternative) { return command_json(alternative); }, command);
}

NodeCommand parse_command(std::string_view text) {
  const json in = json::parse(text, nullptr, false);
  if (in.is_discarded()) throw ProtocolError("command: not JSON");
  if (!in.is_object()) throw_wrong_type(in, "command", "an object");
  const auto op = in.find("op");
  if (op == in.end()) throw ProtocolError("op: missing");
  if (!op->is_string()) throw_wrong_type(*op, "op", "a string");
  const std::string name = op->get<std::string>();
  std::optional<NodeCommand> command =
      parse_as(name, in, std::make_index_sequence<kCommandCount>());
  if (!command) throw ProtocolError("op: unknown command \"" + name + "\"");
  return std::move(*command);
}

json error_json(const std::string& message) {
  return json{{"error", message}};
}

std::optional<std::string> error_of(const json& answer) {
  if (!answer.is_object()) return std::nullopt;
  const auto error = answer.find("error");
  if (error == answer.end()) return std::nullopt;
  return error->is_string() ? error->get<std::string>() : error->dump();
}

}  // namespace ethx::protocol
