#include "fabric/vm/agent_client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <stdexcept>
#include <thread>

#include "fabric/platform/clock.hpp"
#include "fabric/platform/process_signals.hpp"

namespace ethx {
namespace {

using agent::MessageType;

constexpr std::int64_t kHelloRepeatMs = 1000;
constexpr std::uint32_t kStopGraceMs = 2000;

std::uint64_t random_nonce() {
  std::random_device device;
  return (std::uint64_t{device()} << 32) ^ device() ^ static_cast<std::uint64_t>(monotonic_ns());
}

}  // namespace

AgentClient::AgentClient(const std::string& log_directory, std::size_t vm, std::int64_t timeout_ms)
    : vm_(vm), lease_(AgentPortLease::acquire(log_directory, vm, timeout_ms)) {
  const std::int64_t deadline_ms = monotonic_ms() + timeout_ms;
  connect_socket(deadline_ms);
  try {
    handshake(deadline_ms, timeout_ms);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

AgentClient::~AgentClient() {
  if (fd_ >= 0) ::close(fd_);
}

std::string AgentClient::where() const {
  return "VM " + std::to_string(vm_) + " (agent port " + std::to_string(lease_.port()) + ")";
}

void AgentClient::connect_socket(std::int64_t deadline_ms) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string& path = lease_.socket_path();
  if (path.size() >= sizeof address.sun_path) {
    throw std::runtime_error("agent socket path too long: " + path);
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  for (;;) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error("socket: " + std::string(std::strerror(errno)));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) break;
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    if (g_stop_requested.load()) throw Interrupted();
    if (monotonic_ms() > deadline_ms) {
      throw std::runtime_error("cannot connect to " + where() + " at " + path + ": " +
                               std::strerror(error));
    }
    // QEMU listens again a moment after the previous client of this port left.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
}

void AgentClient::handshake(std::int64_t deadline_ms, std::int64_t timeout_ms) {
  const std::uint64_t nonce = random_nonce();
  const std::vector<std::uint8_t> reply_prefix = agent::hello_reply_prefix(nonce);
  std::int64_t next_hello_ms = 0;
  for (;;) {
    const std::int64_t now_ms = monotonic_ms();
    if (now_ms >= next_hello_ms) {
      // Repeated: a Hello cut short by an earlier host's leftovers in the port is lost.
      agent::append_body_frame(
          outbox_, MessageType::kHello,
          agent::HelloBody{nonce, agent::kVersion, 0, agent::kMaxPayloadBytes});
      next_hello_ms = now_ms + kHelloRepeatMs;
    }
    write_pending();
    if (decoder_.skip_to(reply_prefix)) {
      if (std::optional<agent::Frame> frame = decoder_.next()) {
        const auto reply = agent::read_body<agent::HelloReplyBody>(*frame);
        if (reply.version != agent::kVersion) {
          throw std::runtime_error(where() + ": ethx-agent speaks protocol version " +
                                   std::to_string(reply.version) + ", this ethx " +
                                   std::to_string(agent::kVersion) +
                                   "; rebuild the guest image (build-guest-image.sh)");
        }
        shared_root_ = (reply.flags & agent::kHelloSharedRoot) != 0;
        reported_rejects_ = decoder_.rejected_frames();
        return;
      }
    }
    if (g_stop_requested.load()) throw Interrupted();
    if (now_ms > deadline_ms) {
      throw std::runtime_error(where() + ": ethx-agent did not answer within " +
                               std::to_string(timeout_ms / 1000) +
                               " s (a guest image without ethx-agent? rebuild it with "
                               "qemu-device/guest/build-guest-image.sh)");
    }
    pollfd wait{fd_, static_cast<short>(POLLIN | (wants_write() ? POLLOUT : 0)), 0};
    const auto wait_ms = std::min<std::int64_t>({next_hello_ms, deadline_ms + 1}) - now_ms;
    if (::poll(&wait, 1, static_cast<int>(std::clamp<std::int64_t>(wait_ms, 1, 100))) <= 0) {
      continue;
    }
    std::uint8_t buffer[4096];
    const ssize_t got = ::recv(fd_, buffer, sizeof buffer, 0);
    if (got == 0) throw std::runtime_error(where() + ": the VM closed the agent connection");
    if (got > 0) decoder_.feed(buffer, static_cast<std::size_t>(got));
  }
}

void AgentClient::start(const agent::StartRequest& request) {
  agent::append_start(outbox_, request);
  write_pending();
}

void AgentClient::send_stdin(const char* data, std::size_t size) {
  agent::append_data_frames(outbox_, MessageType::kStdin, data, size);
  write_pending();
}

void AgentClient::send_stdin_eof() {
  agent::append_frame(outbox_, MessageType::kStdinEof, {});
  write_pending();
}

void AgentClient::stop(std::uint32_t grace_ms) {
  agent::append_body_frame(outbox_, MessageType::kStop, agent::StopBody{grace_ms, 0});
  write_pending();
}

void AgentClient::write_pending() {
  while (wants_write()) {
    const ssize_t sent =
        ::send(fd_, outbox_.data() + outbox_sent_, outbox_.size() - outbox_sent_, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      outbox_sent_ = outbox_.size();  // the connection is gone; read_events() reports it
      break;
    }
    outbox_sent_ += static_cast<std::size_t>(sent);
  }
  outbox_.clear();
  outbox_sent_ = 0;
}

std::vector<AgentEvent> AgentClient::read_events() {
  std::vector<AgentEvent> events;
  std::vector<std::uint8_t> buffer(agent::kMaxPayloadBytes);
  const ssize_t got = ::recv(fd_, buffer.data(), buffer.size(), 0);
  const int error = errno;
  if (got < 0 && (error == EAGAIN || error == EINTR)) return events;
  if (got > 0) decoder_.feed(buffer.data(), static_cast<std::size_t>(got));
  events_from_frames(events);
  if (got <= 0) {
    AgentEvent closed;
    closed.kind = AgentEvent::Kind::kClosed;
    closed.data = got == 0 ? "the VM closed the agent connection"
                           : std::string("agent connection: ") + std::strerror(error);
    events.push_back(closed);
  }
  return events;
}

void AgentClient::events_from_frames(std::vector<AgentEvent>& events) {
  while (std::optional<agent::Frame> frame = decoder_.next()) {
    AgentEvent event;
    try {
      switch (frame->type) {
        case MessageType::kStarted:
          event.pid = agent::read_body<agent::StartedBody>(*frame).pid;
          break;
        case MessageType::kStdout:
        case MessageType::kStderr:
          event.kind = frame->type == MessageType::kStdout ? AgentEvent::Kind::kStdout
                                                           : AgentEvent::Kind::kStderr;
          event.data.assign(frame->payload.begin(), frame->payload.end());
          break;
        case MessageType::kExit: {
          const auto exit = agent::read_body<agent::ExitBody>(*frame);
          event.kind = AgentEvent::Kind::kExit;
          event.exit_status = exit.exit_status;
          event.signal = exit.signal;
          break;
        }
        case MessageType::kError: {
          const agent::ErrorReport error = agent::parse_error(*frame);
          event.kind = AgentEvent::Kind::kError;
          event.code = error.code;
          event.data = error.message;
          break;
        }
        default:
          continue;  // a repeated HelloReply
      }
    } catch (const agent::ProtocolError& error) {
      event.kind = AgentEvent::Kind::kError;
      event.data = std::string("malformed frame from ethx-agent: ") + error.what();
    }
    events.push_back(event);
  }
  if (decoder_.rejected_frames() > reported_rejects_) {
    reported_rejects_ = decoder_.rejected_frames();
    AgentEvent event;
    event.kind = AgentEvent::Kind::kError;
    event.data = "malformed input from ethx-agent: " + decoder_.last_error();
    events.push_back(event);
  }
}

AgentCommandResult run_agent_command(
    AgentClient& client, const agent::StartRequest& request, std::int64_t timeout_ms,
    const std::function<void(bool is_stderr, const std::string& data)>& on_output) {
  client.start(request);
  const std::int64_t deadline_ms = monotonic_ms() + timeout_ms;
  const std::string timed_out = "VM " + std::to_string(client.vm()) + ": `" + request.argv[0] +
                                "` did not end within " + std::to_string(timeout_ms / 1000) +
                                " s; stopped it";
  bool interrupted = false;
  std::int64_t give_up_ms = -1;  // once a Stop was sent: wait for its Exit until then
  auto end_stopped = [&](const std::string& suffix) {
    if (interrupted) throw Interrupted();
    throw std::runtime_error(timed_out + suffix);
  };
  AgentCommandResult result;
  for (;;) {
    for (const AgentEvent& event : client.read_events()) {
      if (event.kind == AgentEvent::Kind::kStdout || event.kind == AgentEvent::Kind::kStderr) {
        on_output(event.kind == AgentEvent::Kind::kStderr, event.data);
      } else if (event.kind == AgentEvent::Kind::kError) {
        result.errors.push_back(event.data);
      } else if (event.kind == AgentEvent::Kind::kClosed) {
        throw std::runtime_error("VM " + std::to_string(client.vm()) + ": " + event.data);
      } else if (event.kind == AgentEvent::Kind::kExit) {
        if (give_up_ms >= 0) end_stopped("");
        result.exit_status = event.exit_status;
        result.signal = event.signal;
        return result;
      }
    }
    const std::int64_t now_ms = monotonic_ms();
    if (give_up_ms < 0 && (g_stop_requested.load() || now_ms > deadline_ms)) {
      interrupted = g_stop_requested.load();
      client.stop(kStopGraceMs);
      give_up_ms = now_ms + kStopGraceMs + 3000;
    }
    if (give_up_ms >= 0 && now_ms > give_up_ms) end_stopped(" (the agent did not confirm)");
    pollfd wait{client.fd(), static_cast<short>(POLLIN | (client.wants_write() ? POLLOUT : 0)), 0};
    // Bounded: a stop request (Ctrl-C, a process of the fabric exiting) only sets a flag.
    if (::poll(&wait, 1, 100) > 0 && (wait.revents & POLLOUT) != 0) client.write_pending();
  }
}

}  // namespace ethx
