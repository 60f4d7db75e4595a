// The switch's command mailbox in a real control region, both ends in this process: the client
// waits for the answer, a switch that is gone or silent is reported instead of waited for, and
// a restarted switch does not replay a command posted to its predecessor.
#include "switch/runtime/switch_command_box.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "fabric/platform/shm_file.hpp"

namespace ethx {
namespace {

class SwitchCommandBoxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    shm::SharedMemoryFile::remove(name_);
    control_.emplace(ControlRegion::create(name_, 2));
  }
  void TearDown() override { control_.reset(); }

  static SwitchCore two_port_switch() {
    SwitchConfig config;
    config.ports.resize(2);
    return SwitchCore(config);
  }

  const std::string name_ = "/ethx-test-" + std::to_string(::getpid()) + "-switch-command";
  std::optional<ControlRegion> control_;
};

TEST_F(SwitchCommandBoxTest, TheClientGetsTheAnswerOfTheSwitchThread) {
  SwitchCore core = two_port_switch();
  SwitchCommandServer server(*control_);
  const SwitchCommandHook hook = server.hook();
  std::atomic<bool> done{false};
  std::thread forwarding([&] {
    while (!done.load()) {
      if (!hook.poll(core)) std::this_thread::yield();
    }
  });
  const nlohmann::json reply =
      send_switch_command(*control_, {{"command", "fault"}, {"port", 1}, {"reorder_rate", 0.5}},
                          5000, [] { return true; });
  const nlohmann::json refused = send_switch_command(
      *control_, {{"command", "fault"}, {"port", 1}, {"drop_rate", -1}}, 5000, [] { return true; });
  done = true;
  forwarding.join();
  EXPECT_TRUE(reply["ok"].get<bool>()) << reply.dump();
  EXPECT_EQ(reply["faults"]["reorder_rate"], 0.5);
  EXPECT_FALSE(refused["ok"].get<bool>());
  EXPECT_NE(refused["error"].get<std::string>().find("drop_rate"), std::string::npos);
  EXPECT_EQ(core.faults(1).reorder_rate, 0.5);  // the refused change changed nothing
  EXPECT_EQ(core.faults(1).drop_rate, 0.0);
}

TEST_F(SwitchCommandBoxTest, AGoneOrSilentSwitchIsReportedAndAFreshOneDoesNotReplayOldCommands) {
  const nlohmann::json request = {{"command", "fault"}, {"port", 0}, {"drop_rate", 1.0}};
  EXPECT_THROW(send_switch_command(*control_, request, 5000, [] { return false; }),
               std::runtime_error);
  try {
    send_switch_command(*control_, request, 20, [] { return true; });
    ADD_FAILURE() << "no switch answered, yet the command returned";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("did not answer within 20 ms"), std::string::npos);
  }
  // A switch started after those commands were given up on does not apply them.
  SwitchCore core = two_port_switch();
  SwitchCommandServer restarted(*control_);
  EXPECT_FALSE(restarted.pending());
  EXPECT_FALSE(restarted.hook().poll(core));
  EXPECT_EQ(core.faults(0).drop_rate, 0.0);
}

}  // namespace
}  // namespace ethx
