// A child process the ethx command started, ended by PID only by whoever started it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ethx {

class ChildProcess {
 public:
  struct SpawnOptions {
    // Non-empty: stdout and stderr are appended to this file instead of inherited, so a
    // process that outlives its starter (`ethx up`) never writes into a closed pipe.
    std::string log_path;
    // Its own session: a later Ctrl-C in the starter's terminal does not reach it.
    bool new_session = false;
    // >= 0: this descriptor of the parent becomes descriptor `inherit_as` in the child
    // (a readiness pipe, see ReadinessPipe).
    int inherit_fd = -1;
    int inherit_as = 3;
  };

  // Starts argv[0] with the given arguments; stdout and stderr are inherited.
  static ChildProcess spawn(const std::vector<std::string>& argv);
  static ChildProcess spawn(const std::vector<std::string>& argv, const SpawnOptions& options);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ~ChildProcess();  // terminates and reaps a child that still runs

  pid_t pid() const { return pid_; }
  const std::string& name() const { return name_; }
  // Reaps without blocking; false once the child has exited.
  bool running();
  // Waits up to timeout_ms for the exit; true if it exited.
  bool wait_exit(std::int64_t timeout_ms);
  // SIGTERM, then SIGKILL if it has not exited after grace_ms.
  void terminate(std::int64_t grace_ms = 2000);
  // Gives up ownership: the destructor no longer ends it (`ethx up` leaves it running; the
  // run directory records it so `ethx down` can). Returns the PID.
  pid_t release();
  // How it ended, e.g. "exit status 1" or "killed by signal 9"; empty while running.
  std::string exit_description() const;
  int exit_status() const { return status_; }

 private:
  ChildProcess(pid_t pid, std::string name) : pid_(pid), name_(std::move(name)) {}

  pid_t pid_ = -1;
  std::string name_;
  bool exited_ = false;
  int status_ = 0;
};

// Directory of the running executable (to find ethx-switch and ethx-node beside ethx).
std::string executable_directory();

}  // namespace ethx
