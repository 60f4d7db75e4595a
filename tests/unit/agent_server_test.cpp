// ethx-agent's server (qemu-device/guest-tools/agent_server.hpp) on the host, with a pseudo
// terminal in raw mode standing in for a virtio-serial port: the test holds the master (the
// host side), a forked child serves the slave. Commands run on this machine; no VM.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "qemu-device/agent-protocol/agent_protocol.hpp"
#include "qemu-device/guest-tools/agent_command.hpp"
#include "qemu-device/guest-tools/agent_ports.hpp"
#include "qemu-device/guest-tools/agent_server.hpp"
#include "qemu-device/guest-tools/ethx_regs.hpp"

namespace ethx::guest {
namespace {

namespace fs = std::filesystem;
using agent::ErrorCode;
using agent::Frame;
using agent::MessageType;

constexpr int kAnswerMs = 20'000;  // only against a hang; nothing is timed

// A PCI function as sysfs shows it, with GPU_ID in its control BAR (a file here).
void add_gpu(const fs::path& devices, const std::string& bdf, std::uint32_t gpu_id) {
  const fs::path dir = devices / bdf;
  fs::create_directories(dir);
  std::ofstream(dir / "vendor") << "0x1234\n";
  std::ofstream(dir / "device") << "0xe7e0\n";
  std::vector<char> config(64, 0);
  config[4] = 0x02;
  std::ofstream(dir / "config", std::ios::binary).write(config.data(), 64);
  std::vector<std::uint32_t> bar(1024, 0);
  bar[0] = kIdentValue;
  bar[1] = 2;
  bar[2] = gpu_id;
  std::ofstream(dir / "resource0", std::ios::binary)
      .write(reinterpret_cast<const char*>(bar.data()), 4096);
}

class AgentServerTest : public testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("ethx-agent-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "work");
    add_gpu(root_ / "pci", "0000:00:07.0", 7);
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    ASSERT_GE(master_, 0);
    ASSERT_EQ(::grantpt(master_), 0);
    ASSERT_EQ(::unlockpt(master_), 0);
    const std::string slave = ::ptsname(master_);
    const int slave_fd = ::open(slave.c_str(), O_RDWR | O_NOCTTY);
    ASSERT_GE(slave_fd, 0);
    termios raw{};
    ::tcgetattr(slave_fd, &raw);
    ::cfmakeraw(&raw);  // bytes as they are, no echo, no line editing
    ::tcsetattr(slave_fd, TCSANOW, &raw);
    ::close(slave_fd);
    server_ = ::fork();
    if (server_ == 0) {
      ::close(master_);
      AgentConfig config;
      config.host_root = root_ / "no-shared-root";
      config.pci_devices = root_ / "pci";
      config.orphan_grace_ms = 500;
      AgentServer server({{"org.ethx.agent.0", slave}}, config);
      server.run();
      ::_exit(0);
    }
    ::fcntl(master_, F_SETFL, O_NONBLOCK);
  }
  void TearDown() override {
    if (server_ > 0) {
      ::kill(server_, SIGTERM);
      ::waitpid(server_, nullptr, 0);
    }
    if (master_ >= 0) ::close(master_);
    fs::remove_all(root_);
  }

  void send(const std::vector<std::uint8_t>& bytes) {
    ASSERT_EQ(::write(master_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  void hello(std::uint64_t nonce = 5) {
    std::vector<std::uint8_t> out;
    agent::append_body_frame(out, MessageType::kHello,
                             agent::HelloBody{nonce, agent::kVersion, 0, agent::kMaxPayloadBytes});
    send(out);
    const Frame reply = next_frame();
    ASSERT_EQ(reply.type, MessageType::kHelloReply);
    const auto body = agent::read_body<agent::HelloReplyBody>(reply);
    EXPECT_EQ(body.nonce, nonce);
    EXPECT_EQ(body.version, agent::kVersion);
    EXPECT_EQ(body.flags, 0);  // no /run/ethx-host here
  }
  void start(const std::vector<std::string>& argv, bool forward_stdin = false,
             std::uint32_t gpu_id = agent::kNoGpu, const std::string& cwd = "") {
    agent::StartRequest request;
    request.argv = argv;
    request.forward_stdin = forward_stdin;
    request.gpu_id = gpu_id;
    request.working_directory = cwd;
    request.environment = {"ETHX_TEST=yes"};
    std::vector<std::uint8_t> out;
    agent::append_start(out, request);
    send(out);
  }
  Frame next_frame() {
    for (;;) {
      if (std::optional<Frame> frame = decoder_.next()) return *frame;
      pollfd wait{master_, POLLIN, 0};
      if (::poll(&wait, 1, kAnswerMs) <= 0) throw std::runtime_error("no answer from the agent");
      std::uint8_t buffer[4096];
      const ssize_t got = ::read(master_, buffer, sizeof buffer);
      if (got > 0) decoder_.feed(buffer, static_cast<std::size_t>(got));
    }
  }
  struct Outcome {
    std::string out, err;
    std::vector<std::string> errors;
    std::vector<ErrorCode> codes;
    agent::ExitBody exit{};
    std::uint32_t pid = 0;
  };
  // Frames until the command's Exit.
  Outcome until_exit() {
    Outcome outcome;
    for (;;) {
      const Frame frame = next_frame();
      const std::string data(frame.payload.begin(), frame.payload.end());
      switch (frame.type) {
        case MessageType::kStdout:
          outcome.out += data;
          break;
        case MessageType::kStderr:
          outcome.err += data;
          break;
        case MessageType::kStarted:
          outcome.pid = agent::read_body<agent::StartedBody>(frame).pid;
          break;
        case MessageType::kError: {
          const agent::ErrorReport error = agent::parse_error(frame);
          outcome.errors.push_back(error.message);
          outcome.codes.push_back(error.code);
          break;
        }
        case MessageType::kExit:
          outcome.exit = agent::read_body<agent::ExitBody>(frame);
          return outcome;
        default:
          break;
      }
    }
  }

  fs::path root_;
  int master_ = -1;
  pid_t server_ = -1;
  agent::FrameDecoder decoder_;
};

TEST_F(AgentServerTest, RunsACommandWithItsStreamsEnvironmentAndExitStatus) {
  hello();
  start({"sh", "-c", "echo out $ETHX_TEST; echo err >&2; exit 3"});
  const Outcome outcome = until_exit();
  EXPECT_EQ(outcome.out, "out yes\n");
  EXPECT_EQ(outcome.err, "err\n");
  EXPECT_GT(outcome.pid, 0u);
  EXPECT_EQ(outcome.exit.exit_status, 3u);
  EXPECT_EQ(outcome.exit.signal, 0u);
  // The port serves the next command on the same connection.
  start({"sh", "-c", "pwd"}, false, agent::kNoGpu, (root_ / "work").string());
  EXPECT_EQ(until_exit().out, (root_ / "work").string() + "\n");
}

TEST_F(AgentServerTest, ForwardsStdinUntilEof) {
  hello();
  start({"cat"}, true);
  std::vector<std::uint8_t> out;
  agent::append_data_frames(out, MessageType::kStdin, "abc\n", 4);
  agent::append_frame(out, MessageType::kStdinEof, {});
  send(out);
  const Outcome outcome = until_exit();
  EXPECT_EQ(outcome.out, "abc\n");
  EXPECT_EQ(outcome.exit.exit_status, 0u);
}

TEST_F(AgentServerTest, ASignalIsReportedAs128PlusItsNumber) {
  hello();
  start({"sh", "-c", "kill -KILL $$"});
  const Outcome outcome = until_exit();
  EXPECT_EQ(outcome.exit.exit_status, 128u + SIGKILL);
  EXPECT_EQ(outcome.exit.signal, static_cast<std::uint32_t>(SIGKILL));
}

TEST_F(AgentServerTest, StopSendsSigtermToTheProcessGroup) {
  hello();
  start({"sh", "-c", "sleep 30; echo not reached"});
  ASSERT_EQ(next_frame().type, MessageType::kStarted);
  // A second Start while it runs is refused, and the command goes on.
  start({"true"});
  const Frame busy = next_frame();
  ASSERT_EQ(busy.type, MessageType::kError);
  EXPECT_EQ(agent::parse_error(busy).code, ErrorCode::kBusy);
  std::vector<std::uint8_t> out;
  agent::append_body_frame(out, MessageType::kStop, agent::StopBody{5000, 0});
  send(out);
  const Outcome outcome = until_exit();
  EXPECT_EQ(outcome.exit.exit_status, 128u + SIGTERM);
  EXPECT_EQ(outcome.out, "");
}

TEST_F(AgentServerTest, AMissingProgramIsOneLineAndStatus127) {
  hello();
  start({"/nonexistent/program"});
  Outcome outcome = until_exit();
  ASSERT_EQ(outcome.errors.size(), 1u);
  EXPECT_EQ(outcome.codes[0], ErrorCode::kNotFound);
  EXPECT_NE(outcome.errors[0].find("program not found in the guest: /nonexistent/program"),
            std::string::npos);
  EXPECT_EQ(outcome.errors[0].find('\n'), std::string::npos);
  EXPECT_EQ(outcome.exit.exit_status, 127u);
  start({"ethx-no-such-program-anywhere"});
  EXPECT_EQ(until_exit().exit.exit_status, 127u);
  start({"true"}, false, agent::kNoGpu, (root_ / "absent").string());
  outcome = until_exit();
  ASSERT_EQ(outcome.errors.size(), 1u);
  EXPECT_NE(outcome.errors[0].find("working directory"), std::string::npos);
  EXPECT_EQ(outcome.exit.exit_status, 126u);
}

TEST_F(AgentServerTest, TheGpuIdGivesItsPciAddress) {
  hello();
  start({"sh", "-c", "echo $ETHX_GPU_BDF"}, false, 7);
  EXPECT_EQ(until_exit().out, "0000:00:07.0\n");
  start({"true"}, false, 9);
  const Outcome outcome = until_exit();
  ASSERT_EQ(outcome.codes.size(), 1u);
  EXPECT_EQ(outcome.codes[0], ErrorCode::kNoSuchGpu);
  EXPECT_NE(outcome.errors[0].find("7 at 0000:00:07.0"), std::string::npos);
  EXPECT_EQ(outcome.exit.exit_status, 126u);
}

TEST_F(AgentServerTest, RequestsBeforeHelloAndMalformedBytesAreAnsweredWithErrors) {
  start({"true"});
  Frame frame = next_frame();
  ASSERT_EQ(frame.type, MessageType::kError);
  EXPECT_EQ(agent::parse_error(frame).code, ErrorCode::kHelloFirst);
  hello();
  std::vector<std::uint8_t> junk = {'E', 'T', 'X', 'A', 8, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f};
  send(junk);
  frame = next_frame();
  ASSERT_EQ(frame.type, MessageType::kError);
  EXPECT_EQ(agent::parse_error(frame).code, ErrorCode::kBadRequest);
  // Still serving.
  start({"sh", "-c", "echo alive"});
  EXPECT_EQ(until_exit().out, "alive\n");
}

TEST_F(AgentServerTest, TheHostGoingAwayStopsItsCommand) {
  hello();
  start({"sleep", "30"});
  const Frame started = next_frame();
  ASSERT_EQ(started.type, MessageType::kStarted);
  const auto pid = static_cast<pid_t>(agent::read_body<agent::StartedBody>(started).pid);
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  ASSERT_GE(pidfd, 0);
  ::close(master_);  // the slave now reports POLLHUP, as a port whose host disconnected
  master_ = -1;
  pollfd wait{pidfd, POLLIN, 0};
  EXPECT_EQ(::poll(&wait, 1, kAnswerMs), 1) << "the command survived its host";
  ::close(pidfd);
}

TEST(AgentPieces, KernelCommandLineEnvironmentAndExitStatus) {
  EXPECT_EQ(agent_ports_from_cmdline("console=ttyS0 ethx.agent_ports=6 quiet", 4), 6u);
  EXPECT_EQ(agent_ports_from_cmdline("console=ttyS0", 4), 4u);
  EXPECT_EQ(agent_ports_from_cmdline("ethx.agent_ports=x", 4), 4u);
  EXPECT_EQ(merge_environment({"PATH=/bin", "A=1", "B=2"}, {"A=9", "C=3"}),
            (std::vector<std::string>{"PATH=/bin", "B=2", "A=9", "C=3"}));
  EXPECT_EQ(exit_report(3 << 8).exit_status, 3u);  // WEXITSTATUS layout
  EXPECT_EQ(exit_report(SIGTERM).exit_status, 128u + SIGTERM);
  EXPECT_EQ(exit_report(SIGTERM).signal, static_cast<std::uint32_t>(SIGTERM));
}

TEST(AgentPieces, FindsNamedAgentPortsInSysfs) {
  const fs::path root = fs::temp_directory_path() / ("ethx-ports-" + std::to_string(::getpid()));
  fs::remove_all(root);
  auto port = [&root](const std::string& node, const std::string& name) {
    fs::create_directories(root / "class" / node);
    if (!name.empty()) std::ofstream(root / "class" / node / "name") << name << "\n";
    fs::create_directories(root / "dev");
    std::ofstream(root / "dev" / node) << "";
  };
  port("vport1p2", "org.ethx.agent.1");
  port("vport1p1", "org.ethx.agent.0");
  port("vport1p3", "org.qemu.guest_agent.0");  // another port
  port("vport1p4", "");                        // not named yet
  EXPECT_FALSE(has_virtio_console(root / "virtio"));
  fs::create_directories(root / "virtio" / "virtio0");
  std::ofstream(root / "virtio" / "virtio0" / "device") << "0x0001\n";  // a NIC
  EXPECT_FALSE(has_virtio_console(root / "virtio"));
  fs::create_directories(root / "virtio" / "virtio1");
  std::ofstream(root / "virtio" / "virtio1" / "device") << "0x0003\n";
  EXPECT_TRUE(has_virtio_console(root / "virtio"));
  const std::vector<AgentPortInfo> found = find_agent_ports(root / "class", root / "dev");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].name, "org.ethx.agent.0");
  EXPECT_EQ(found[0].device, root / "dev" / "vport1p1");
  EXPECT_EQ(found[1].name, "org.ethx.agent.1");
  fs::remove_all(root);
}

}  // namespace
}  // namespace ethx::guest
