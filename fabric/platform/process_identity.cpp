#include "fabric/platform/process_identity.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

namespace ethx {

namespace {

// Fields 3 (state) and 22 (start time) of /proc/<pid>/stat; empty strings if there is none.
std::pair<std::string, std::string> state_and_start_time(pid_t pid) {
  if (pid <= 0) return {};
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) may hold spaces and parentheses: fields start after the last ')'.
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 > text.size()) return {};
  std::istringstream fields(text.substr(close + 2));
  std::string state, field;
  fields >> state;
  for (int index = 4; index <= 22 && (fields >> field); ++index) {
    if (index == 22) return {state, field};
  }
  return {};
}

}  // namespace

std::string process_start_time(pid_t pid) {
  return state_and_start_time(pid).second;
}

bool same_process_running(pid_t pid, const std::string& start_time) {
  const auto [state, started] = state_and_start_time(pid);
  // A zombie (Z) or dead (X) process has ended; only its parent has yet to reap it.
  return !start_time.empty() && started == start_time && state != "Z" && state != "X";
}

bool terminate_recorded_process(pid_t pid, const std::string& start_time, long grace_ms) {
  if (!same_process_running(pid, start_time)) return false;
  // Not our child, so no waitpid: a pidfd (taken before the PID could be reused, and checked
  // against the start time again) polls readable when the process ends.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    if (errno == ESRCH) return false;
    ::kill(pid, SIGKILL);  // no pidfd support: end it without waiting
    return true;
  }
  if (!same_process_running(pid, start_time)) {
    ::close(pidfd);
    return false;
  }
  auto wait_exit = [pidfd](long timeout_ms) {
    pollfd pfd{pidfd, POLLIN, 0};
    int ready = 0;
    do {
      ready = ::poll(&pfd, 1, static_cast<int>(timeout_ms));
    } while (ready < 0 && errno == EINTR);
    return ready > 0;
  };
  ::syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, nullptr, 0);
  if (!wait_exit(grace_ms)) {
    ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
    wait_exit(5000);
  }
  ::close(pidfd);
  return true;
}

}  // namespace ethx
