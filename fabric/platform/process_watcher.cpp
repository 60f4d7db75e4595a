#include "fabric/platform/process_watcher.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "fabric/platform/process_identity.hpp"
#include "fabric/platform/process_signals.hpp"

#ifndef P_PIDFD
#define P_PIDFD 3  // linux/wait.h; glibc's sys/wait.h has it from 2.36 on only with _GNU_SOURCE
#endif

namespace ethx {

struct ProcessWatcher::Entry {
  WatchedProcess process;
  int pidfd = -1;
  ~Entry() {
    if (pidfd >= 0) ::close(pidfd);
  }
};

namespace {

int open_pidfd(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

// How the process behind a readable pidfd ended, without reaping it; empty if it is not our
// child (waitid fails with ECHILD).
std::string how_it_ended(int pidfd) {
  siginfo_t info{};
  int result = 0;
  do {
    result = ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info,
                      WEXITED | WNOHANG | WNOWAIT);
  } while (result < 0 && errno == EINTR);
  if (result < 0 || info.si_pid == 0) return "";
  return describe_child_exit(info.si_code, info.si_status);
}

}  // namespace

std::string describe_child_exit(int child_code, int child_status) {
  if (child_code == CLD_EXITED) return "exit status " + std::to_string(child_status);
  if (child_code == CLD_KILLED || child_code == CLD_DUMPED) {
    const char* abbreviation = ::sigabbrev_np(child_status);
    const std::string signal_name = abbreviation != nullptr
                                        ? std::string("SIG") + abbreviation
                                        : "signal " + std::to_string(child_status);
    return "killed by " + signal_name + (child_code == CLD_DUMPED ? " (core dumped)" : "");
  }
  return "";
}

std::string ProcessExit::line() const {
  std::string text = name + " (pid " + std::to_string(pid) + ") exited";
  text += how.empty() ? " (not a child of this command: how it ended is unknown)" : ": " + how;
  if (!hint.empty()) text += "; " + hint;
  return text;
}

ProcessWatcher::ProcessWatcher()
    : ProcessWatcher([](const ProcessExit& exit) {
        request_stop(exit.line());
        return true;
      }) {}

ProcessWatcher::ProcessWatcher(ExitHandler on_exit) : on_exit_(std::move(on_exit)) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    throw std::runtime_error(std::string("process watcher: eventfd: ") + std::strerror(errno));
  }
  thread_ = std::thread([this] { run(); });
}

ProcessWatcher::~ProcessWatcher() {
  {
    const std::lock_guard lock(mutex_);
    quitting_ = true;
  }
  wake();
  thread_.join();
  ::close(wake_fd_);
}

void ProcessWatcher::wake() const {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = ::write(wake_fd_, &one, sizeof one);
}

void ProcessWatcher::watch(const WatchedProcess& process) {
  auto entry = std::make_shared<Entry>();
  entry->process = process;
  entry->pidfd = open_pidfd(process.pid);
  if (entry->pidfd < 0 && errno != ESRCH) {
    throw std::runtime_error("process watcher: pidfd_open(" + std::to_string(process.pid) +
                             "): " + std::strerror(errno));
  }
  // The pidfd names whatever has the PID now: check that it is still the recorded process
  // (a zombie child still has its start time and a pidfd that reports the exit at once).
  if (entry->process.start_time.empty()) {
    entry->process.start_time = process_start_time(process.pid);
  }
  if (entry->pidfd < 0 || process_start_time(process.pid) != entry->process.start_time ||
      entry->process.start_time.empty()) {
    report({process.name, process.pid, "", process.hint}, std::nullopt);
    return;
  }
  {
    const std::lock_guard lock(mutex_);
    entries_.push_back(std::move(entry));
    ++generation_;
  }
  wake();
}

void ProcessWatcher::stop_watching() {
  {
    const std::lock_guard lock(mutex_);
    entries_.clear();
    ++generation_;
  }
  wake();
}

std::optional<ProcessExit> ProcessWatcher::first_exit() const {
  const std::lock_guard reporting(report_mutex_);
  const std::lock_guard lock(mutex_);
  return first_exit_;
}

void ProcessWatcher::report(const ProcessExit& exit, std::optional<std::uint64_t> generation) {
  // Held through the handler: first_exit() waits for a report under way.
  const std::lock_guard reporting(report_mutex_);
  {
    const std::lock_guard lock(mutex_);
    // stop_watching() since the thread's snapshot: these processes are being ended on purpose.
    if (first_exit_ || (generation && *generation != generation_)) return;
    std::erase_if(entries_, [&exit](const auto& entry) { return entry->process.pid == exit.pid; });
    ++generation_;
  }
  if (!on_exit_(exit)) return;
  const std::lock_guard lock(mutex_);
  if (first_exit_) return;
  first_exit_ = exit;
  entries_.clear();  // one line per command: later exits are consequences of the first
  ++generation_;
}

void ProcessWatcher::run() {
  for (;;) {
    std::vector<std::shared_ptr<Entry>> snapshot;
    std::uint64_t generation = 0;
    {
      const std::lock_guard lock(mutex_);
      if (quitting_) return;
      snapshot = entries_;  // shared: an fd stays open while poll() uses it
      generation = generation_;
    }
    std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}};
    for (const auto& entry : snapshot) fds.push_back({entry->pidfd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) continue;  // EINTR: look again
    if ((fds[0].revents & POLLIN) != 0) {
      std::uint64_t count = 0;
      [[maybe_unused]] const ssize_t read = ::read(wake_fd_, &count, sizeof count);
    }
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      const Entry& entry = *snapshot[i - 1];
      report({entry.process.name, entry.process.pid, how_it_ended(entry.pidfd), entry.process.hint},
             generation);
      break;
    }
  }
}

}  // namespace ethx
