#include "fabric/platform/process_signals.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <mutex>

namespace ethx {

std::atomic<bool> g_stop_requested{false};

namespace {

std::mutex g_stop_reason_mutex;
std::string g_stop_reason;

void stop_on_signal(int) {
  g_stop_requested.store(true);
}
}  // namespace

void request_stop(const std::string& reason) {
  {
    const std::lock_guard lock(g_stop_reason_mutex);
    if (g_stop_reason.empty()) g_stop_reason = reason;
  }
  g_stop_requested.store(true);
}

std::string stop_reason() {
  const std::lock_guard lock(g_stop_reason_mutex);
  return g_stop_reason;
}

void throw_if_stop_requested() {
  if (g_stop_requested.load()) throw Interrupted();
}

void install_stop_signals(bool stop_with_parent) {
  struct sigaction action {};
  action.sa_handler = stop_on_signal;
  sigemptyset(&action.sa_mask);
  // No SA_RESTART: a futex sleep returns with EINTR and the loop sees the flag at once.
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal_number, &action, nullptr);
  if (stop_with_parent) {
    const pid_t parent = ::getppid();
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) g_stop_requested.store(true);  // parent died before prctl
  }
}

}  // namespace ethx
