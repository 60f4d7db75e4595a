// A child process the ethx command started, ended by PID only by whoever started it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ethx {

class ChildProcess {
 public:
  // Starts argv[0] with the given arguments; stdout and stderr are inherited.
  static ChildProcess spawn(const std::vector<std::string>& argv);

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
