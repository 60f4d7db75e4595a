// `ethx capture`'s recorder in the switch (PortCapture) and its mailbox commands, without a
// fabric: which frames are written, when a capture ends, and how bad requests are named.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "switch/capture/port_capture.hpp"
#include "switch/core/switch_core.hpp"
#include "switch/runtime/switch_command_box.hpp"

namespace ethx {
namespace {

struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ethx-capture-test-" + std::to_string(::getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};

constexpr std::size_t kPcapHeaderBytes = 24;    // the file header
constexpr std::size_t kRecordHeaderBytes = 16;  // before each frame

SwitchConfig switch_of_ports(std::size_t ports) {
  SwitchConfig config;
  config.ports.resize(ports);
  return config;
}

TEST(PortCapture, RecordsOnlyItsPortAndEndsAfterItsFrames) {
  TempDir dir;
  const std::string file = (dir.path / "p1.pcap").string();
  PortCapture capture;
  EXPECT_FALSE(capture.active());
  capture.start(CaptureRequest{.port = 1, .path = file, .max_frames = 3, .duration_ns = 0});
  const std::vector<std::byte> frame(60, std::byte{0x5a});
  capture.tap(2, frame);  // another port: not recorded
  capture.tap(1, frame);
  capture.tap(1, frame);
  EXPECT_TRUE(capture.poll());
  capture.tap(1, frame);  // the third: the capture ends with it
  EXPECT_FALSE(capture.active());
  capture.tap(1, frame);  // after the end: not recorded
  EXPECT_EQ(capture.frames(), 3u);
  EXPECT_EQ(std::filesystem::file_size(file), kPcapHeaderBytes + 3 * (kRecordHeaderBytes + 60));
}

TEST(SwitchCommand, CaptureStartsReportsAndStopsThroughTheMailboxCommands) {
  TempDir dir;
  SwitchCore core(switch_of_ports(4));
  PortCapture capture;
  const std::string file = (dir.path / "p3.pcap").string();
  const nlohmann::json started = run_switch_command(
      {{"command", "capture-start"}, {"port", 3}, {"path", file}}, core, &capture);
  ASSERT_TRUE(started["ok"].get<bool>()) << started.dump();
  EXPECT_TRUE(started["capture"]["active"].get<bool>());
  const auto id = started["capture"]["id"].get<std::uint64_t>();
  capture.tap(3, std::vector<std::byte>(64));
  const nlohmann::json status =
      run_switch_command({{"command", "capture-status"}, {"id", id}}, core, &capture);
  EXPECT_EQ(status["capture"]["frames"], 1);
  EXPECT_EQ(status["capture"]["path"], file);
  EXPECT_FALSE(status["capture"].contains("error"));
  // A capture started meanwhile replaces this one: the first command is told, not misled.
  const std::string other = (dir.path / "p2.pcap").string();
  ASSERT_TRUE(run_switch_command({{"command", "capture-start"}, {"port", 2}, {"path", other}}, core,
                                 &capture)["ok"]
                  .get<bool>());
  const nlohmann::json replaced =
      run_switch_command({{"command", "capture-status"}, {"id", id}}, core, &capture);
  EXPECT_FALSE(replaced["ok"].get<bool>());
  EXPECT_NE(replaced.value("error", std::string()).find("replaced this one (now port 2"),
            std::string::npos);
  const nlohmann::json stopped =
      run_switch_command({{"command", "capture-stop"}, {"id", id + 1}}, core, &capture);
  EXPECT_FALSE(stopped["capture"]["active"].get<bool>());
  EXPECT_EQ(std::filesystem::file_size(file), kPcapHeaderBytes + kRecordHeaderBytes + 64);
}

TEST(SwitchCommand, BadCaptureRequestsNameTheOptionAndStartNothing) {
  SwitchCore core(switch_of_ports(4));
  PortCapture capture;
  auto error_of = [&](const nlohmann::json& request) {
    const nlohmann::json reply = run_switch_command(request, core, &capture);
    EXPECT_FALSE(reply["ok"].get<bool>());
    return reply.value("error", std::string());
  };
  EXPECT_NE(error_of({{"command", "capture-start"}, {"port", 9}, {"path", "/tmp/x.pcap"}})
                .find("--port: 9 is not a port of this switch (4 ports: 0..3)"),
            std::string::npos);
  EXPECT_NE(error_of({{"command", "capture-start"}, {"port", "one"}, {"path", "/tmp/x.pcap"}})
                .find("--port: must be a whole number"),
            std::string::npos);
  EXPECT_NE(error_of({{"command", "capture-start"}, {"port", 1}, {"path", "x.pcap"}})
                .find("-w: the switch needs an absolute path"),
            std::string::npos);
  EXPECT_NE(error_of({{"command", "capture-start"}, {"port", 1}, {"path", "/no-such-dir/x.pcap"}})
                .find("-w: capture file /no-such-dir/x.pcap"),
            std::string::npos);
  EXPECT_FALSE(capture.active());
  // Without a recorder (a caller that serves only faults) the commands are unknown.
  EXPECT_FALSE(run_switch_command({{"command", "capture-status"}}, core)["ok"].get<bool>());
}

}  // namespace
}  // namespace ethx
