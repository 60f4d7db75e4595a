// One watcher for every command that coordinates processes (`ethx bench`, `compare`, `soak`,
// `softroce`, `guest`): it notices any recorded process (switch, node, VM) exiting and stops
// the command, as Ctrl-C does, with one line naming it:
//
//   node-3 (pid 1234) exited: killed by SIGKILL
//
// Processes are named by PID and start time (process_identity.hpp) and watched through pidfds,
// so a reused PID is never taken for the recorded process, and a process that is not our child
// (`ethx up` started it) is watched as well as one that is. A child's exit status is read
// without reaping it (waitid WNOWAIT): ChildProcess still reaps its own children.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace ethx {

struct WatchedProcess {
  std::string name;  // "node-3", "vm-1", "switch"
  pid_t pid = -1;
  // From process_start_time(); empty: the caller's own child, not yet reaped (its PID cannot
  // have been reused), whose start time the watcher reads itself.
  std::string start_time;
  // Appended to the line, e.g. where the process's log is.
  std::string hint;
};

struct ProcessExit {
  std::string name;
  pid_t pid = -1;
  // "exit status 1", "killed by SIGKILL"; empty for a process that is not our child (its
  // parent, not this command, learns how it ended).
  std::string how;
  std::string hint;
  // The one line: "node-3 (pid 1234) exited: killed by SIGKILL".
  std::string line() const;
};

class ProcessWatcher {
 public:
  // Called for a watched process that exits: on the watcher's thread, or in watch() for a
  // process that is already gone. Returns true if the exit stops the command: it is then the
  // first_exit() and nothing more is reported; false: the others are still watched (a switch
  // that `ethx restart-switch` replaces). It must not call the watcher back. The default:
  // request_stop(exit.line()) (process_signals.hpp), true.
  using ExitHandler = std::function<bool(const ProcessExit&)>;

  ProcessWatcher();
  explicit ProcessWatcher(ExitHandler on_exit);
  ~ProcessWatcher();
  ProcessWatcher(const ProcessWatcher&) = delete;
  ProcessWatcher& operator=(const ProcessWatcher&) = delete;

  // Watches one more process. One that is already gone, or whose PID now names a process with
  // another start time, is reported at once.
  void watch(const WatchedProcess& process);
  // Forgets every process: the command is about to end them itself. No report follows.
  void stop_watching();
  // The exit that stopped the command, if any (waits for a report under way).
  std::optional<ProcessExit> first_exit() const;

 private:
  struct Entry;
  void run();
  // `generation`: that of the thread's snapshot the exit was seen in (nullopt: from watch()).
  void report(const ProcessExit& exit, std::optional<std::uint64_t> generation);
  void wake() const;

  ExitHandler on_exit_;
  mutable std::mutex report_mutex_;  // taken before mutex_, held while the handler runs
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<Entry>> entries_;
  std::uint64_t generation_ = 0;  // bumped whenever entries_ changes
  bool quitting_ = false;
  std::optional<ProcessExit> first_exit_;
  int wake_fd_ = -1;  // eventfd: entries_ changed or the destructor runs
  std::thread thread_;
};

// How a child ended, from waitid's si_code and si_status (child_code, child_status): "exit status
// 1", "killed by SIGKILL".
std::string describe_child_exit(int child_code, int child_status);

}  // namespace ethx
