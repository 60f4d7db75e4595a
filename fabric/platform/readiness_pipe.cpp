#include "fabric/platform/readiness_pipe.hpp"
#include "fabric/platform/clock.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <system_error>

#include "fabric/platform/process_signals.hpp"

namespace ethx {
namespace {}  // namespace

ReadinessPipe::ReadinessPipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe2 for a readiness pipe");
  }
  read_fd_ = fds[0];
  write_fd_ = fds[1];
}

ReadinessPipe::~ReadinessPipe() {
  close_child_end();
  if (read_fd_ >= 0) ::close(read_fd_);
}

void ReadinessPipe::close_child_end() {
  if (write_fd_ >= 0) ::close(write_fd_);
  write_fd_ = -1;
}

ReadinessPipe::Outcome ReadinessPipe::wait(std::int64_t timeout_ns) {
  const std::int64_t deadline = monotonic_ns() + timeout_ns;
  for (;;) {
    if (g_stop_requested.load()) throw Interrupted();
    const std::int64_t left_ns = deadline - monotonic_ns();
    if (left_ns <= 0) return Outcome::kTimeout;
    pollfd pfd{read_fd_, POLLIN, 0};
    // Slices of at most 100 ms so a Ctrl-C whose signal hit another thread is noticed.
    const int slice_ms = static_cast<int>(std::min<std::int64_t>(left_ns / 1'000'000 + 1, 100));
    const int ready = ::poll(&pfd, 1, slice_ms);
    if (ready < 0 && errno != EINTR) {
      throw std::system_error(errno, std::generic_category(), "poll on a readiness pipe");
    }
    if (ready <= 0) continue;
    char byte = 0;
    const ssize_t got = ::read(read_fd_, &byte, 1);
    if (got == 1) return Outcome::kReady;
    if (got == 0) return Outcome::kClosed;
    if (errno != EINTR && errno != EAGAIN) return Outcome::kClosed;
  }
}

void notify_ready(int fd) {
  if (fd < 0) return;
  const char line[] = "ready\n";
  // A parent that stopped listening is not an error of ours.
  [[maybe_unused]] const ssize_t written = ::write(fd, line, sizeof line - 1);
  ::close(fd);
}

}  // namespace ethx
