#include "fabric/vm/guest_agent.hpp"
#include "fabric/platform/clock.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fabric/platform/process_signals.hpp"

namespace ethx {
namespace {}  // namespace

GuestAgent::GuestAgent(std::string socket_path, std::int64_t timeout_ms)
    : path_(std::move(socket_path)) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path_.size() >= sizeof address.sun_path) {
    throw std::runtime_error("agent socket path too long: " + path_);
  }
  std::memcpy(address.sun_path, path_.c_str(), path_.size() + 1);
  const std::int64_t deadline = monotonic_ms() + timeout_ms;
  for (;;) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error("socket: " + std::string(std::strerror(errno)));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) return;
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    if (g_stop_requested.load()) throw Interrupted();
    if (monotonic_ms() > deadline) {
      throw std::runtime_error("cannot connect to the guest agent at " + path_ + ": " +
                               std::strerror(error));
    }
    // QEMU creates the socket while it starts; nothing to wait on but time.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

GuestAgent::~GuestAgent() {
  if (fd_ >= 0) ::close(fd_);
}

GuestBlock GuestAgent::run(const std::string& arguments, std::int64_t timeout_ms) {
  const std::string line = arguments + "\n";
  std::size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t wrote = ::send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) throw std::runtime_error("guest agent " + path_ + ": connection closed");
    sent += static_cast<std::size_t>(wrote);
  }
  const std::int64_t deadline = monotonic_ms() + timeout_ms;
  for (;;) {
    // A complete answer: ETHX-BEGIN ... ETHX-END <status>.
    const std::size_t end = pending_.find("ETHX-END ");
    if (end != std::string::npos) {
      const std::size_t eol = pending_.find('\n', end);
      if (eol != std::string::npos) {
        const std::vector<GuestBlock> blocks = parse_guest_console(pending_.substr(0, eol + 1));
        pending_.erase(0, eol + 1);
        if (!blocks.empty()) return blocks.back();
      }
    }
    if (g_stop_requested.load()) throw Interrupted();
    const std::int64_t left = deadline - monotonic_ms();
    if (left <= 0) {
      throw std::runtime_error("guest agent " + path_ + ": no answer to `" + arguments +
                               "` within " + std::to_string(timeout_ms / 1000) + " s");
    }
    pollfd pfd{fd_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<std::int64_t>(left, 100)));
    if (ready < 0 && errno != EINTR)
      throw std::runtime_error("poll: " + std::string(std::strerror(errno)));
    if (ready <= 0) continue;
    char buffer[4096];
    const ssize_t got = ::recv(fd_, buffer, sizeof buffer, 0);
    if (got == 0)
      throw std::runtime_error("guest agent " + path_ + ": the VM closed the connection");
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw std::runtime_error("recv: " + std::string(std::strerror(errno)));
    }
    pending_.append(buffer, static_cast<std::size_t>(got));
  }
}

}  // namespace ethx
