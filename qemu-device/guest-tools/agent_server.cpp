#include "qemu-device/guest-tools/agent_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace ethx::guest {

using agent::ErrorCode;
using agent::MessageType;

struct AgentServer::Command {
  agent::StartRequest request;
  CommandPipes pipes;
  std::string stdin_pending;
  bool stdin_eof = false;  // StdinEof received: close stdin once stdin_pending is written
  bool exited = false;
  int wait_status = 0;
  std::optional<SpawnFailure> failure;
  std::int64_t kill_at_ms = -1;      // after a Stop: SIGKILL then
  std::int64_t drain_until_ms = -1;  // after the exit: the pipes' EOF is waited for until then
};

struct AgentServer::Port {
  AgentPortInfo info;
  int fd = -1;
  bool connected = false;  // the host side is open (no POLLHUP)
  bool greeted = false;    // a Hello arrived on this connection
  std::uint64_t nonce = 0;
  agent::FrameDecoder decoder;
  std::vector<std::uint8_t> outbox;
  std::size_t outbox_sent = 0;
  std::uint64_t reported_rejects = 0;
  std::unique_ptr<Command> command;

  std::size_t outbox_bytes() const { return outbox.size() - outbox_sent; }
};

namespace {

constexpr std::size_t kReadBytes = agent::kMaxPayloadBytes;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::runtime_error system_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

}  // namespace

std::int64_t agent_now_ms() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1'000'000;
}

AgentServer::AgentServer(const std::vector<AgentPortInfo>& ports, AgentConfig config)
    : config_(std::move(config)), environment_(agent_environment()) {
  sigset_t mask;
  ::sigemptyset(&mask);
  for (const int signal_number : {SIGCHLD, SIGIO, SIGTERM, SIGINT, SIGHUP}) {
    ::sigaddset(&mask, signal_number);
  }
  ::sigprocmask(SIG_BLOCK, &mask, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a command that closed its stdin: EPIPE, not death
  signal_fd_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd_ < 0) throw system_error("signalfd");
  for (const AgentPortInfo& info : ports) {
    auto port = std::make_unique<Port>();
    port->info = info;
    port->fd = ::open(info.device.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (port->fd < 0) throw system_error("open " + info.device.string() + " (" + info.name + ")");
    // SIGIO when the host connects or disconnects (and when data arrives).
    if (::fcntl(port->fd, F_SETOWN, ::getpid()) != 0 ||
        ::fcntl(port->fd, F_SETFL, O_RDWR | O_NONBLOCK | O_ASYNC) != 0) {
      throw system_error("O_ASYNC on " + info.device.string());
    }
    ports_.push_back(std::move(port));
  }
}

AgentServer::~AgentServer() {
  for (auto& port : ports_) {
    if (port->command) orphan(*port);
    close_fd(port->fd);
  }
  for (const Orphan& orphan : orphans_) ::kill(-orphan.pid, SIGKILL);
  close_fd(signal_fd_);
}

void AgentServer::run() {
  refresh_connections();
  std::vector<pollfd> fds;
  std::vector<Target> targets;
  while (!quit_) {
    collect(fds, targets);
    const int ready = ::poll(fds.data(), fds.size(), next_timeout_ms());
    if (ready < 0 && errno != EINTR) throw system_error("poll");
    for (std::size_t i = 0; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents != 0) dispatch(targets[i], fds[i].revents);
    }
    run_deadlines();
    finish_commands();
  }
}

void AgentServer::collect(std::vector<pollfd>& fds, std::vector<Target>& targets) const {
  fds.clear();
  targets.clear();
  auto add = [&](int fd, short events, Source source, std::size_t port) {
    fds.push_back({fd, events, 0});
    targets.push_back({source, port, fd});
  };
  add(signal_fd_, POLLIN, Source::kSignals, 0);
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    const Port& port = *ports_[i];
    if (!port.connected) continue;  // POLLHUP without end; SIGIO says when it connects
    const Command* command = port.command.get();
    const bool stdin_full =
        command != nullptr && command->stdin_pending.size() >= config_.stdin_limit_bytes;
    add(port.fd,
        static_cast<short>((stdin_full ? 0 : POLLIN) | (port.outbox_bytes() ? POLLOUT : 0)),
        Source::kPort, i);
    if (command == nullptr) continue;
    const bool outbox_room = port.outbox_bytes() < config_.outbox_limit_bytes;
    if (command->pipes.stdout_fd >= 0 && outbox_room) {
      add(command->pipes.stdout_fd, POLLIN, Source::kStdout, i);
    }
    if (command->pipes.stderr_fd >= 0 && outbox_room) {
      add(command->pipes.stderr_fd, POLLIN, Source::kStderr, i);
    }
    if (command->pipes.stdin_fd >= 0 && !command->stdin_pending.empty()) {
      add(command->pipes.stdin_fd, POLLOUT, Source::kStdin, i);
    }
    if (command->pipes.exec_status_fd >= 0) {
      add(command->pipes.exec_status_fd, POLLIN, Source::kExecStatus, i);
    }
  }
}

int AgentServer::next_timeout_ms() const {
  std::int64_t next = -1;
  auto consider = [&next](std::int64_t at_ms) {
    if (at_ms >= 0 && (next < 0 || at_ms < next)) next = at_ms;
  };
  for (const auto& port : ports_) {
    if (!port->command) continue;
    consider(port->command->kill_at_ms);
    if (port->command->exited) consider(port->command->drain_until_ms);
  }
  for (const Orphan& orphan : orphans_) consider(orphan.kill_at_ms);
  if (next < 0) return -1;
  return static_cast<int>(std::clamp<std::int64_t>(next - agent_now_ms(), 0, 60'000));
}

void AgentServer::dispatch(const Target& target, short revents) {
  if (target.source == Source::kSignals) {
    on_signals();
    return;
  }
  Port& port = *ports_[target.port];
  if (target.source == Source::kPort) {
    if (port.fd == target.fd && port.connected) on_port(port, revents);
    return;
  }
  Command* command = port.command.get();
  // An earlier handler of this round may have ended the command or closed the descriptor.
  if (command == nullptr) return;
  const CommandPipes& pipes = command->pipes;
  switch (target.source) {
    case Source::kStdout:
    case Source::kStderr:
      if (target.fd == (target.source == Source::kStdout ? pipes.stdout_fd : pipes.stderr_fd)) {
        on_output(port, target.source, target.fd);
      }
      break;
    case Source::kStdin:
      if (target.fd == pipes.stdin_fd) on_stdin_writable(port);
      break;
    case Source::kExecStatus:
      if (target.fd == pipes.exec_status_fd) on_exec_status(port);
      break;
    default:
      break;
  }
}

void AgentServer::on_signals() {
  signalfd_siginfo info{};
  bool children = false, connections = false;
  while (::read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    switch (info.ssi_signo) {
      case SIGCHLD:
        children = true;
        break;
      case SIGIO:
        connections = true;
        break;
      case SIGTERM:
      case SIGINT:
        quit_ = true;
        break;
      default:
        break;  // SIGHUP: the agent has no terminal to lose
    }
  }
  if (children) reap();
  if (connections) refresh_connections();
}

void AgentServer::reap() {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    for (auto& port : ports_) {
      Command* command = port->command.get();
      if (command != nullptr && command->pipes.pid == pid) {
        command->exited = true;
        command->wait_status = status;
        command->drain_until_ms = agent_now_ms() + config_.drain_grace_ms;
      }
    }
    std::erase_if(orphans_, [pid](const Orphan& orphan) { return orphan.pid == pid; });
  }
}

void AgentServer::refresh_connections() {
  for (auto& port : ports_) {
    if (port->connected) continue;
    pollfd probe{port->fd, POLLIN, 0};
    if (::poll(&probe, 1, 0) >= 0 && (probe.revents & POLLHUP) == 0) port->connected = true;
  }
}

void AgentServer::on_port(Port& port, short revents) {
  if ((revents & (POLLHUP | POLLERR)) != 0) {
    disconnect(port);
    return;
  }
  if ((revents & POLLIN) != 0) read_port(port);
  if (port.connected && (revents & POLLOUT) != 0) flush_port(port);
}

void AgentServer::read_port(Port& port) {
  std::vector<std::uint8_t> buffer(kReadBytes);
  const ssize_t got = ::read(port.fd, buffer.data(), buffer.size());
  if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
    disconnect(port);  // 0: the host side closed and nothing is left to read
    return;
  }
  if (got < 0) return;
  port.decoder.feed(buffer.data(), static_cast<std::size_t>(got));
  while (std::optional<agent::Frame> frame = port.decoder.next()) {
    on_frame(port, *frame);
    if (!port.connected) return;
  }
  if (port.decoder.rejected_frames() > port.reported_rejects) {
    port.reported_rejects = port.decoder.rejected_frames();
    send_error(port, ErrorCode::kBadRequest, "malformed input: " + port.decoder.last_error());
  }
}

void AgentServer::flush_port(Port& port) {
  while (port.outbox_bytes() > 0) {
    const ssize_t wrote =
        ::write(port.fd, port.outbox.data() + port.outbox_sent, port.outbox_bytes());
    if (wrote < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      disconnect(port);
      return;
    }
    port.outbox_sent += static_cast<std::size_t>(wrote);
  }
  port.outbox.clear();
  port.outbox_sent = 0;
}

void AgentServer::disconnect(Port& port) {
  // What is still buffered came from the host that left: drop it.
  std::vector<std::uint8_t> buffer(kReadBytes);
  while (::read(port.fd, buffer.data(), buffer.size()) > 0) {
  }
  if (port.command) orphan(port);
  port.decoder.reset();
  port.outbox.clear();
  port.outbox_sent = 0;
  port.greeted = false;
  port.connected = false;
  // It may have connected again already: SIGIO for that may have come before this.
  refresh_connections();
}

void AgentServer::orphan(Port& port) {
  Command& command = *port.command;
  CommandPipes& pipes = command.pipes;
  for (int* fd : {&pipes.stdin_fd, &pipes.stdout_fd, &pipes.stderr_fd, &pipes.exec_status_fd}) {
    close_fd(*fd);
  }
  if (!command.exited) {
    ::kill(-pipes.pid, SIGTERM);
    orphans_.push_back({pipes.pid, agent_now_ms() + config_.orphan_grace_ms});
  }
  port.command.reset();
}

void AgentServer::on_frame(Port& port, const agent::Frame& frame) {
  try {
    if (frame.type == MessageType::kHello) {
      on_hello(port, frame);
      return;
    }
    if (!port.greeted) {
      send_error(port, ErrorCode::kHelloFirst,
                 std::string(agent::message_name(frame.type)) + " before Hello");
      return;
    }
    switch (frame.type) {
      case MessageType::kStart:
        on_start(port, frame);
        break;
      case MessageType::kStdin:
      case MessageType::kStdinEof:
        on_stdin(port, frame);
        break;
      case MessageType::kStop:
        on_stop(port, frame);
        break;
      default:
        throw agent::ProtocolError(std::string("unexpected ") + agent::message_name(frame.type) +
                                   " from the host");
    }
  } catch (const agent::ProtocolError& error) {
    send_error(port, ErrorCode::kBadRequest, error.what());
  }
}

void AgentServer::on_hello(Port& port, const agent::Frame& frame) {
  const auto hello = agent::read_body<agent::HelloBody>(frame);
  if (hello.version != agent::kVersion) {
    send_error(port, ErrorCode::kVersionMismatch,
               "the host speaks agent protocol version " + std::to_string(hello.version) +
                   ", this ethx-agent " + std::to_string(agent::kVersion) +
                   ": rebuild the guest image (qemu-device/guest/build-guest-image.sh)");
    return;
  }
  // A new nonce is a new host on this port (the old one may have left unseen): its command,
  // if any, is not this host's. The same nonce again is a repeated Hello: answer it again.
  if (!port.greeted || hello.nonce != port.nonce) {
    if (port.command) orphan(port);
    port.greeted = true;
    port.nonce = hello.nonce;
  }
  std::error_code error;
  const bool shared_root = std::filesystem::is_directory(config_.host_root, error);
  const agent::HelloReplyBody reply{hello.nonce, agent::kVersion,
                                    shared_root ? agent::kHelloSharedRoot : std::uint16_t{0},
                                    static_cast<std::uint32_t>(::getpid())};
  agent::append_body_frame(port.outbox, MessageType::kHelloReply, reply);
}

void AgentServer::on_start(Port& port, const agent::Frame& frame) {
  if (port.command) {
    send_error(port, ErrorCode::kBusy,
               port.info.name + " runs a command already (pid " +
                   std::to_string(port.command->pipes.pid) + "): one at a time per port");
    return;
  }
  agent::StartRequest request = agent::parse_start(frame);
  std::vector<std::string> additions = request.environment;
  if (request.gpu_id != agent::kNoGpu) {
    std::string known;
    const std::optional<std::string> bdf = gpu_bdf(request.gpu_id, known);
    if (!bdf) {
      fail_start(port, {ErrorCode::kNoSuchGpu,
                        "GPU " + std::to_string(request.gpu_id) + " is not in this VM (its GPUs: " +
                            (known.empty() ? "none" : known) + ")",
                        agent::kExitCannotRun});
      return;
    }
    additions.push_back("ETHX_GPU_BDF=" + *bdf);
  }
  auto command = std::make_unique<Command>();
  try {
    command->pipes =
        spawn_command(request, merge_environment(environment_, additions), config_.host_root);
  } catch (const std::runtime_error& error) {
    fail_start(port, {ErrorCode::kCannotRun, error.what(), agent::kExitCannotRun});
    return;
  }
  command->request = std::move(request);
  port.command = std::move(command);
}

std::optional<std::string> AgentServer::gpu_bdf(std::uint32_t gpu_id, std::string& known) {
  if (!gpus_) {
    try {
      gpus_ = gpu_bdfs(config_.pci_devices);
    } catch (const std::exception& error) {
      known = error.what();
      return std::nullopt;
    }
  }
  for (const auto& [id, bdf] : *gpus_) {
    known += (known.empty() ? "" : ", ") + std::to_string(id) + " at " + bdf;
  }
  const auto found = gpus_->find(gpu_id);
  if (found == gpus_->end()) return std::nullopt;
  return found->second;
}

void AgentServer::fail_start(Port& port, const StartFailure& failure) {
  send_error(port, failure.code, failure.message);
  agent::append_body_frame(port.outbox, MessageType::kExit,
                           agent::ExitBody{failure.exit_status, 0});
}

void AgentServer::on_stdin(Port& port, const agent::Frame& frame) {
  Command* command = port.command.get();
  // Input for a command that does not take it (or has ended) is dropped, as a closed pipe
  // would drop it.
  if (command == nullptr || !command->request.forward_stdin || command->stdin_eof ||
      command->pipes.stdin_fd < 0) {
    return;
  }
  if (frame.type == MessageType::kStdinEof) {
    command->stdin_eof = true;
    if (command->stdin_pending.empty()) close_fd(command->pipes.stdin_fd);
    return;
  }
  command->stdin_pending.append(frame.payload.begin(), frame.payload.end());
}

void AgentServer::on_stop(Port& port, const agent::Frame& frame) {
  const auto stop = agent::read_body<agent::StopBody>(frame);
  Command* command = port.command.get();
  if (command == nullptr || command->exited) return;
  ::kill(-command->pipes.pid, stop.grace_ms == 0 ? SIGKILL : SIGTERM);
  if (stop.grace_ms > 0) command->kill_at_ms = agent_now_ms() + stop.grace_ms;
}

void AgentServer::on_output(Port& port, Source source, int fd) {
  std::vector<std::uint8_t> buffer(kReadBytes);
  const ssize_t got = ::read(fd, buffer.data(), buffer.size());
  if (got < 0 && (errno == EAGAIN || errno == EINTR)) return;
  CommandPipes& pipes = port.command->pipes;
  if (got <= 0) {
    close_fd(source == Source::kStdout ? pipes.stdout_fd : pipes.stderr_fd);
    return;
  }
  agent::append_data_frames(port.outbox,
                            source == Source::kStdout ? MessageType::kStdout : MessageType::kStderr,
                            buffer.data(), static_cast<std::size_t>(got));
}

void AgentServer::on_stdin_writable(Port& port) {
  Command& command = *port.command;
  const ssize_t wrote =
      ::write(command.pipes.stdin_fd, command.stdin_pending.data(), command.stdin_pending.size());
  if (wrote < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (wrote < 0) {  // EPIPE: the command closed its stdin; the rest has nowhere to go
    command.stdin_pending.clear();
    command.stdin_eof = true;
    close_fd(command.pipes.stdin_fd);
    return;
  }
  command.stdin_pending.erase(0, static_cast<std::size_t>(wrote));
  if (command.stdin_pending.empty() && command.stdin_eof) close_fd(command.pipes.stdin_fd);
}

void AgentServer::on_exec_status(Port& port) {
  Command& command = *port.command;
  SpawnFailure failure;
  const ssize_t got = ::read(command.pipes.exec_status_fd, &failure, sizeof failure);
  if (got < 0 && (errno == EAGAIN || errno == EINTR)) return;
  close_fd(command.pipes.exec_status_fd);
  if (got == static_cast<ssize_t>(sizeof failure)) {
    command.failure = failure;
    return;
  }
  agent::append_body_frame(port.outbox, MessageType::kStarted,
                           agent::StartedBody{static_cast<std::uint32_t>(command.pipes.pid), 0});
}

void AgentServer::run_deadlines() {
  const std::int64_t now = agent_now_ms();
  for (auto& port : ports_) {
    Command* command = port->command.get();
    if (command != nullptr && !command->exited && command->kill_at_ms >= 0 &&
        command->kill_at_ms <= now) {
      ::kill(-command->pipes.pid, SIGKILL);
      command->kill_at_ms = -1;
    }
  }
  for (Orphan& orphan : orphans_) {
    if (orphan.kill_at_ms >= 0 && orphan.kill_at_ms <= now) {
      ::kill(-orphan.pid, SIGKILL);
      orphan.kill_at_ms = -1;  // reaped on its SIGCHLD
    }
  }
}

void AgentServer::finish_commands() {
  const std::int64_t now = agent_now_ms();
  for (auto& port : ports_) {
    Command* command = port->command.get();
    if (command != nullptr && command->exited) {
      if (command->pipes.exec_status_fd >= 0) on_exec_status(*port);  // the child is gone
      const bool drained = command->pipes.stdout_fd < 0 && command->pipes.stderr_fd < 0;
      if (drained || now >= command->drain_until_ms) finish(*port);
    }
    if (port->connected && port->outbox_bytes() > 0) flush_port(*port);
  }
}

void AgentServer::finish(Port& port) {
  Command& command = *port.command;
  CommandPipes& pipes = command.pipes;
  if (pipes.stdout_fd >= 0 || pipes.stderr_fd >= 0) {
    // Something it started still holds its output open: the command is over, and so is that.
    ::kill(-pipes.pid, SIGKILL);
  }
  for (int* fd : {&pipes.stdin_fd, &pipes.stdout_fd, &pipes.stderr_fd, &pipes.exec_status_fd}) {
    close_fd(*fd);
  }
  if (command.failure) {
    const StartFailure failure =
        describe_spawn_failure(*command.failure, command.request, config_.host_root);
    fail_start(port, failure);
  } else {
    agent::append_body_frame(port.outbox, MessageType::kExit, exit_report(command.wait_status));
  }
  port.command.reset();
}

void AgentServer::send_error(Port& port, ErrorCode code, const std::string& message) {
  agent::append_error(port.outbox, code, message);
}

}  // namespace ethx::guest
