// The coordinator <-> node protocol (fabric/node/node_protocol.hpp): every command and result
// survives JSON both ways, and a malformed command is refused with the field named.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "fabric/bench/bench_plan.hpp"
#include "fabric/node/node_protocol.hpp"

namespace ethx {
namespace {

using nlohmann::json;
using namespace protocol;

// Sets every field a message lists to a value of its own (1, 2, 3, ...), so a round trip that
// drops or swaps a field shows up as a difference.
class FieldFiller {
 public:
  template <class T>
  void required(const char*, T& value) {
    fill(value);
  }
  template <class T>
  void optional(const char*, T& value) {
    fill(value);
  }

 private:
  template <class T>
  void fill(T& value) {
    if constexpr (Message<T>) {
      T::fields(value, *this);
    } else if constexpr (std::is_same_v<T, std::string>) {
      value = "text " + std::to_string(next_++);
    } else if constexpr (std::is_same_v<T, double>) {
      value = static_cast<double>(next_++) + 0.25;
    } else if constexpr (std::is_same_v<T, RoceOp>) {
      value = next_++ % 2 == 0 ? RoceOp::kRead : RoceOp::kWrite;
    } else {
      value = static_cast<T>(next_++);
    }
  }
  template <class T>
  void fill(std::vector<T>& values) {
    values.resize(3);
    for (T& value : values) fill(value);
  }

  std::uint64_t next_ = 1;
};

template <class T>
T filled() {
  T value;
  FieldFiller filler;
  T::fields(value, filler);
  return value;
}

// The messages that are not commands (each command's Result is covered with its command).
using Results =
    std::tuple<LatencyResult, ThroughputResult, EchoAndLoadResult, LinkStats, NodeStats, SoakResult,
               RoceCounterSummary, RoceInfo, CreatedQp, RoceCreateResult, RoceConnectResult,
               RoceDestroyResult, RoceMessageRateResult, BadRkeyProbeResult>;

template <class Command>
void expect_command_round_trip() {
  SCOPED_TRACE(std::string(Command::kOp));
  const Command sent = filled<Command>();
  const std::string text = command_json(sent).dump();
  const NodeCommand received = parse_command(text);
  ASSERT_TRUE(std::holds_alternative<Command>(received)) << text;
  EXPECT_TRUE(std::get<Command>(received) == sent) << text;
  // Its result comes back as the same struct too.
  using Result = typename Command::Result;
  const Result result = filled<Result>();
  EXPECT_TRUE(parse_result<Result>(json::parse(json(result).dump())) == result);
}

template <std::size_t... I>
void expect_every_command_round_trips(std::index_sequence<I...>) {
  (expect_command_round_trip<std::variant_alternative_t<I, NodeCommand>>(), ...);
}

TEST(NodeProtocol, EveryCommandAndItsResultSurviveJson) {
  expect_every_command_round_trips(std::make_index_sequence<std::variant_size_v<NodeCommand>>());
}

TEST(NodeProtocol, EveryResultSurvivesJson) {
  std::apply(
      [](const auto&... kinds) {
        const auto check = [](const auto& kind) {
          using Result = std::decay_t<decltype(kind)>;
          const Result sent = filled<Result>();
          EXPECT_TRUE(parse_result<Result>(json::parse(json(sent).dump())) == sent)
              << json(sent).dump();
        };
        (check(kinds), ...);
      },
      Results{});
}

TEST(NodeProtocol, CommandsCarryTheirOpAndNamedFields) {
  EXPECT_EQ(command_json(EchoCommand{.peer = 1, .count = 500}),
            json::parse(R"({"op": "echo", "peer": 1, "count": 500})"));
  RoceLatencyCommand latency;
  latency.peer = 1;
  latency.rdma_op = RoceOp::kRead;
  latency.bytes = 64;
  latency.count = 10;
  EXPECT_EQ(command_json(latency)["rdma_op"], "read");
  EXPECT_EQ(command_json(StatsCommand{}), json::parse(R"({"op": "stats"})"));
}

TEST(NodeProtocol, NestedAndFlattenedResultsKeepTheirKeys) {
  const json stats = json(filled<NodeStats>());
  EXPECT_TRUE(stats["links"].contains("retransmitted_on_nak"));
  const json created = json(filled<RoceCreateResult>());
  // RoceInfo's fields sit next to "created", as the coordinators and docs/roce.md expect.
  EXPECT_TRUE(created.contains("mac"));
  EXPECT_TRUE(created.contains("path_mtu_bytes"));
  EXPECT_EQ(created["created"].size(), 3u);
  EXPECT_TRUE(created["created"][0].contains("qpn"));
  const json rate = json(filled<RoceMessageRateResult>());
  EXPECT_TRUE(rate.contains("ops_per_second"));
  EXPECT_TRUE(rate.contains("qps"));
}

TEST(NodeProtocol, AbsentOptionalFieldsTakeTheirDefaults) {
  const NodeCommand command = parse_command(R"({"op": "load_latency", "peer": 1, "count": 5})");
  const auto& load = std::get<LoadLatencyCommand>(command);
  EXPECT_EQ(load.peer, 1);
  EXPECT_EQ(load.count, 5u);
  EXPECT_EQ(load.bytes, 8u);
  EXPECT_EQ(load.seed, 1u);
  // Keep the parsed command alive: std::get on the temporary would leave `rate` dangling.
  const NodeCommand rate_command =
      parse_command(R"({"op": "roce_message_rate", "peer": 1, "count": 100})");
  const auto& rate = std::get<RoceMessageRateCommand>(rate_command);
  EXPECT_EQ(rate.batch, 1u);
  EXPECT_EQ(rate.outstanding, 64u);
}

// The ProtocolError parse_command throws for `text`.
std::string parse_error(const std::string& text) {
  try {
    parse_command(text);
  } catch (const ProtocolError& error) {
    return error.what();
  }
  return "(accepted)";
}

TEST(NodeProtocol, MalformedCommandsAreRefusedNamingTheField) {
  EXPECT_EQ(parse_error(R"({"op": "echo", "peer": 1})"), "count: missing");
  EXPECT_EQ(parse_error(R"({"op": "echo", "peer": "one", "count": 3})"),
            "peer: want an unsigned integer, got string");
  EXPECT_EQ(parse_error(R"({"op": "echo", "peer": 1, "count": -3})"),
            "count: want an unsigned integer, got -3");
  EXPECT_EQ(parse_error(R"({"op": "echo", "peer": 1, "count": 2.5})"),
            "count: want an unsigned integer, got 2.5");
  EXPECT_EQ(parse_error(R"({"op": "echo", "peer": 70000, "count": 3})"),
            "peer: 70000 is out of range (at most 65535)");
  EXPECT_EQ(parse_error(R"({"op": "load_latency", "peer": 1, "count": 3, "seed": "x"})"),
            "seed: want an unsigned integer, got string");
  EXPECT_EQ(parse_error(R"({"op": "roce_latency", "peer": 1, "rdma_op": "erase", "bytes": 8,
                            "count": 1})"),
            R"(rdma_op: want "write" or "read", got "erase")");
  EXPECT_EQ(parse_error(R"({"op": "roce_connect", "peer": 1, "local_qpns": [1, "x"],
                            "remote_qpns": [], "remote_psns": [], "remote_mac": "",
                            "remote_ip": 0, "remote_rkey": 0})"),
            "local_qpns[1]: want an unsigned integer, got string");
  EXPECT_EQ(parse_error(R"({"op": "roce_connect", "peer": 1, "local_qpns": 7})"),
            "local_qpns: want an array, got number");
}

TEST(NodeProtocol, ACommandWithoutAKnownOpIsRefused) {
  EXPECT_EQ(parse_error(R"({"op": "warp", "peer": 1})"), R"(op: unknown command "warp")");
  EXPECT_EQ(parse_error(R"({"peer": 1})"), "op: missing");
  EXPECT_EQ(parse_error(R"({"op": 3})"), "op: want a string, got number");
  EXPECT_EQ(parse_error("[1, 2]"), "command: want an object, got array");
  EXPECT_EQ(parse_error("{\"op\": \"echo\", "), "command: not JSON");
  EXPECT_EQ(parse_error(""), "command: not JSON");
}

TEST(NodeProtocol, AMalformedResultNamesTheNestedField) {
  json stats = json(filled<NodeStats>());
  stats["links"].erase("acks_sent");
  try {
    parse_result<NodeStats>(stats);
    FAIL() << "accepted";
  } catch (const ProtocolError& error) {
    EXPECT_STREQ(error.what(), "links.acks_sent: missing");
  }
  json created = json(filled<RoceCreateResult>());
  created["created"][2]["psn"] = "late";
  EXPECT_THROW(parse_result<RoceCreateResult>(created), ProtocolError);
}

TEST(NodeProtocol, ErrorAnswersAreRecognised) {
  EXPECT_EQ(error_of(error_json("count: missing")), "count: missing");
  EXPECT_EQ(error_of(json(filled<LatencyResult>())), std::nullopt);
  EXPECT_EQ(error_of(json::array()), std::nullopt);
}

// The plans keep the sizes and counts each command printed before they shared one place.
TEST(BenchPlan, QuickAndFullPlansKeepTheirFigures) {
  const BenchPlan quick = bench_plan(true);
  const BenchPlan full = bench_plan(false);
  EXPECT_EQ(quick.load_store.store_sizes_bytes, (std::vector<std::uint32_t>{64, 256, 1024, 4096}));
  EXPECT_EQ(quick.load_store.latency_rounds, 4u);
  EXPECT_EQ(quick.load_store.latency_samples_per_round, 500u);
  EXPECT_EQ(full.load_store.latency_rounds, 10u);
  EXPECT_EQ(full.load_store.atomic_count, 20000u);
  EXPECT_EQ(quick.sweep.latency_sizes, (std::vector<std::uint32_t>{8, 64, 512, 4096, 65536}));
  EXPECT_EQ(full.sweep.bandwidth_sizes,
            (std::vector<std::uint32_t>{8, 64, 256, 1024, 4096, 16384, 65536}));
  EXPECT_EQ(quick.sweep.batches, (std::vector<std::uint32_t>{1, 16}));
  EXPECT_EQ(quick.vm.echo_samples_per_round, 500u);
  EXPECT_EQ(full.vm.latency_rounds, 4u);
  EXPECT_EQ(quick.perftest.latency_sizes_bytes, (std::vector<std::uint64_t>{8, 4096}));
  EXPECT_EQ(full.perftest.bandwidth_iterations, 500u);
}

TEST(BenchPlan, BandwidthRunsAreBoundedInBytesAndInFlight) {
  const SweepPlan plan = bench_plan(true).sweep;
  EXPECT_EQ(bandwidth_total_bytes(plan, 8), plan.bandwidth_min_bytes);  // 2000 x 8 B is too few
  EXPECT_EQ(bandwidth_total_bytes(plan, 65536), plan.bandwidth_max_bytes);
  EXPECT_EQ(bandwidth_outstanding(plan, 8), plan.outstanding);
  EXPECT_EQ(bandwidth_outstanding(plan, 65536), 2u);  // 128 KiB in flight
}

}  // namespace
}  // namespace ethx
