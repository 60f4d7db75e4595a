#include "fabric/platform/process_signals.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace ethx {

std::atomic<bool> g_stop_requested{false};

namespace {
void request_stop(int) {
  g_stop_requested.store(true);
}
}  // namespace

void install_stop_signals(bool stop_with_parent) {
  struct sigaction action {};
  action.sa_handler = request_stop;
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
