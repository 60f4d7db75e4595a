// Readiness notification for child processes, in the style of s6 and systemd's notify: the
// parent passes the write end of a pipe to the child, which writes one line once it is ready
// (e.g. the switch has opened all its ports). If the child dies first the pipe closes, so the
// parent learns of either outcome without polling the process.
#pragma once

#include <cstdint>

namespace ethx {

class ReadinessPipe {
 public:
  ReadinessPipe();  // both ends close-on-exec; only a dup2'ed copy reaches the child
  ~ReadinessPipe();
  ReadinessPipe(const ReadinessPipe&) = delete;
  ReadinessPipe& operator=(const ReadinessPipe&) = delete;

  // The end to hand to the child (ChildProcess::SpawnOptions::inherit_fd).
  int child_end() const { return write_fd_; }
  // Call after spawning, so that the child's exit closes the last write end.
  void close_child_end();

  enum class Outcome { kReady, kClosed, kTimeout };
  // Waits for the child's line. Throws Interrupted on Ctrl-C (g_stop_requested).
  Outcome wait(std::int64_t timeout_ns);

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
};

// Child side: writes "ready\n" to `fd` and closes it. A negative fd does nothing.
void notify_ready(int fd);

}  // namespace ethx
