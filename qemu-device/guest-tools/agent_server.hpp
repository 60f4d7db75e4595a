// ethx-agent's event loop: every agent port at once, one command per port at a time
// (docs/agent-protocol.md). One thread and one poll(2) over the ports, the commands' pipes and
// a signalfd (SIGCHLD: reap; SIGIO: a host connected to a port; SIGTERM: quit).
//
// A port whose host is not connected is not polled: the kernel reports POLLHUP for it without
// end, so polling it would spin. The agent asks for SIGIO instead (O_ASYNC), which the
// virtio_console driver sends when the host side opens or closes the port, and looks then.
// When the host goes away mid-command (its chardev socket closed), the command is stopped
// (SIGTERM, then SIGKILL) and its output dropped; the port is free at once.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "qemu-device/agent-protocol/agent_protocol.hpp"
#include "qemu-device/guest-tools/agent_command.hpp"
#include "qemu-device/guest-tools/agent_ports.hpp"
#include "qemu-device/guest-tools/pci_scan.hpp"

struct pollfd;

namespace ethx::guest {

struct AgentConfig {
  std::filesystem::path host_root = kHostRoot;
  std::filesystem::path pci_devices = kSysfsPciDevices;
  // After a command exited, how long its pipes may stay open (a background child holding
  // them) before its process group is killed and its Exit sent.
  std::int64_t drain_grace_ms = 2000;
  // A command whose host went away: SIGTERM, then SIGKILL after this.
  std::int64_t orphan_grace_ms = 2000;
  // Output waiting for the host beyond this stops reading the commands' pipes.
  std::size_t outbox_limit_bytes = std::size_t{256} << 10;
  // stdin waiting for the command beyond this stops reading the port.
  std::size_t stdin_limit_bytes = std::size_t{1} << 20;
};

class AgentServer {
 public:
  // Opens the ports (non-blocking, O_ASYNC) and blocks the signals the loop reads. Throws
  // std::runtime_error naming what failed.
  AgentServer(const std::vector<AgentPortInfo>& ports, AgentConfig config);
  ~AgentServer();
  AgentServer(const AgentServer&) = delete;
  AgentServer& operator=(const AgentServer&) = delete;

  // Serves until SIGTERM or SIGINT; then stops every command.
  void run();

 private:
  struct Command;
  struct Port;
  struct Orphan {
    pid_t pid = -1;
    std::int64_t kill_at_ms = -1;
  };
  enum class Source { kSignals, kPort, kStdout, kStderr, kStdin, kExecStatus };
  struct Target {
    Source source;
    std::size_t port;
    int fd;
  };

  void collect(std::vector<pollfd>& fds, std::vector<Target>& targets) const;
  int next_timeout_ms() const;
  void dispatch(const Target& target, short revents);
  void on_signals();
  void reap();
  void refresh_connections();
  void on_port(Port& port, short revents);
  void read_port(Port& port);
  void flush_port(Port& port);
  void disconnect(Port& port);
  void on_frame(Port& port, const agent::Frame& frame);
  void on_hello(Port& port, const agent::Frame& frame);
  void on_start(Port& port, const agent::Frame& frame);
  void on_stdin(Port& port, const agent::Frame& frame);
  void on_stop(Port& port, const agent::Frame& frame);
  void fail_start(Port& port, const StartFailure& failure);
  void on_output(Port& port, Source source, int fd);
  void on_stdin_writable(Port& port);
  void on_exec_status(Port& port);
  void run_deadlines();
  void finish_commands();
  void finish(Port& port);
  void orphan(Port& port);
  void send_error(Port& port, agent::ErrorCode code, const std::string& message);
  std::optional<std::string> gpu_bdf(std::uint32_t gpu_id, std::string& known);

  AgentConfig config_;
  std::vector<std::unique_ptr<Port>> ports_;
  std::vector<Orphan> orphans_;
  std::vector<std::string> environment_;
  std::optional<std::map<std::uint32_t, std::string>> gpus_;  // read on first use
  int signal_fd_ = -1;
  bool quit_ = false;
};

// CLOCK_MONOTONIC in milliseconds.
std::int64_t agent_now_ms();

}  // namespace ethx::guest
