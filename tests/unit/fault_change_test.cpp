// The run-time fault path without processes: a change as `ethx fault` sends it, through JSON,
// applied by the switch's command handler to a real switch core.
#include "switch/runtime/fault_change.hpp"

#include <gtest/gtest.h>

#include <string>

#include "switch/runtime/switch_command_box.hpp"

namespace ethx {
namespace {

SwitchCore four_port_switch() {
  SwitchConfig config;
  config.ports.resize(4);
  return SwitchCore(config);
}

TEST(FaultChange, OnlyTheGivenFieldsChangeAndClearResetsFirst) {
  PortFaults current;
  current.drop_rate = 0.5;
  current.reorder_rate = 0.25;
  FaultChange change;
  change.corrupt_rate = 0.1;
  PortFaults result = change.applied_to(current);
  EXPECT_EQ(result.drop_rate, 0.5);
  EXPECT_EQ(result.corrupt_rate, 0.1);
  EXPECT_EQ(result.reorder_rate, 0.25);
  change.clear = true;
  result = change.applied_to(current);
  EXPECT_EQ(result.drop_rate, 0.0);
  EXPECT_EQ(result.corrupt_rate, 0.1);
  EXPECT_EQ(result.reorder_rate, 0.0);
  EXPECT_TRUE(FaultChange{}.empty());
}

TEST(FaultChange, SurvivesJsonAndRejectsUnknownOrMistypedFieldsByName) {
  FaultChange change;
  change.port = 3;
  change.drop_rate = 1.0;
  change.delay_spike_rate = 0.01;
  change.delay_spike_ns = 250'000;
  change.link_down = true;
  const FaultChange back = FaultChange::from_json(change.to_json());
  EXPECT_EQ(back.port, 3u);
  EXPECT_EQ(back.drop_rate, 1.0);
  EXPECT_FALSE(back.corrupt_rate.has_value());
  EXPECT_EQ(back.delay_spike_ns, 250'000u);
  EXPECT_EQ(back.link_down, true);

  auto error_of = [](const nlohmann::json& value) -> std::string {
    try {
      FaultChange::from_json(value);
    } catch (const std::invalid_argument& error) {
      return error.what();
    }
    return "";
  };
  EXPECT_NE(error_of({{"drop_rate", 0.1}}).find("port: is required"), std::string::npos);
  EXPECT_NE(error_of({{"port", 1}, {"dorp_rate", 0.1}}).find("dorp_rate"), std::string::npos);
  EXPECT_NE(error_of({{"port", 1}, {"drop_rate", "lots"}}).find("drop_rate"), std::string::npos);
  EXPECT_NE(error_of({{"port", 1}, {"link", "sideways"}}).find("link"), std::string::npos);
}

TEST(FaultChange, ValidateNamesTheField) {
  auto error_of = [](const FaultChange& change) -> std::string {
    try {
      change.validate(4);
    } catch (const std::invalid_argument& error) {
      return error.what();
    }
    return "";
  };
  FaultChange change;
  change.port = 4;
  EXPECT_NE(error_of(change).find("port: 4"), std::string::npos);
  change.port = 0;
  change.reorder_rate = -0.1;
  EXPECT_NE(error_of(change).find("reorder_rate"), std::string::npos);
  change.reorder_rate.reset();
  change.delay_spike_ns = kMaxDelaySpikeNs + 1000;
  EXPECT_NE(error_of(change).find("delay_spike_us"), std::string::npos);
  change.delay_spike_ns = 1000;
  EXPECT_EQ(error_of(change), "");
}

TEST(SwitchCommand, AFaultCommandChangesThePortAndAnswersWithItsFaults) {
  SwitchCore core = four_port_switch();
  const nlohmann::json reply = run_switch_command(
      {{"command", "fault"}, {"port", 2}, {"drop_rate", 1.0}, {"link", "down"}}, core);
  ASSERT_TRUE(reply["ok"].get<bool>()) << reply.dump();
  EXPECT_EQ(core.faults(2).drop_rate, 1.0);
  EXPECT_FALSE(core.port_up(2));
  EXPECT_EQ(reply["faults"]["link"], "down");
  EXPECT_EQ(describe_port_faults(reply["faults"]), "drop 1, link down");

  const nlohmann::json cleared =
      run_switch_command({{"command", "fault"}, {"port", 2}, {"clear", true}}, core);
  ASSERT_TRUE(cleared["ok"].get<bool>());
  EXPECT_EQ(core.faults(2), PortFaults{});
  EXPECT_TRUE(core.port_up(2));
  EXPECT_EQ(describe_port_faults(cleared["faults"]), "none");
}

TEST(SwitchCommand, RefusedCommandsChangeNothingAndSayWhy) {
  SwitchCore core = four_port_switch();
  auto error_of = [&core](const nlohmann::json& request) {
    const nlohmann::json reply = run_switch_command(request, core);
    EXPECT_FALSE(reply["ok"].get<bool>());
    return reply.value("error", std::string());
  };
  EXPECT_NE(error_of({{"command", "fault"}, {"port", 9}, {"drop_rate", 0.5}}).find("port: 9"),
            std::string::npos);
  EXPECT_NE(error_of({{"command", "fault"}, {"port", 1}, {"drop_rate", 1.5}}).find("drop_rate"),
            std::string::npos);
  // A spike rate with no length would inject nothing, silently.
  EXPECT_NE(error_of({{"command", "fault"}, {"port", 1}, {"delay_spike_rate", 0.5}})
                .find("delay_spike_us"),
            std::string::npos);
  EXPECT_NE(error_of({{"command", "reboot"}}).find("command"), std::string::npos);
  for (PortId port = 0; port < core.port_count(); ++port) {
    EXPECT_EQ(core.faults(port), PortFaults{});
  }
}

}  // namespace
}  // namespace ethx
