#include "fabric/platform/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace ethx {

ChildProcess ChildProcess::spawn(const std::vector<std::string>& argv) {
  return spawn(argv, SpawnOptions{});
}

ChildProcess ChildProcess::spawn(const std::vector<std::string>& argv,
                                 const SpawnOptions& options) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawnattr_init(&attributes);
  if (!options.log_path.empty()) {
    ::posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, options.log_path.c_str(),
                                       O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  if (options.inherit_fd >= 0) {
    // dup2 clears FD_CLOEXEC on the copy, so only `inherit_as` reaches the child.
    ::posix_spawn_file_actions_adddup2(&actions, options.inherit_fd, options.inherit_as);
  }
  if (options.new_session) ::posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID);
  pid_t pid = -1;
  const int error = ::posix_spawn(&pid, args[0], &actions, &attributes, args.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attributes);
  if (error != 0) {
    throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(error));
  }
  return ChildProcess(pid, std::filesystem::path(argv[0]).filename().string());
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_),
      name_(std::move(other.name_)),
      exited_(other.exited_),
      status_(other.status_) {
  other.pid_ = -1;
  other.exited_ = true;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exited_) terminate(1000);
}

bool ChildProcess::running() {
  if (exited_ || pid_ <= 0) return false;
  int status = 0;
  const pid_t done = ::waitpid(pid_, &status, WNOHANG);
  if (done == pid_) {
    exited_ = true;
    status_ = status;
  }
  return !exited_;
}

bool ChildProcess::wait_exit(std::int64_t timeout_ms) {
  // Child exit has no descriptor to wait on before pidfd_open; short polls are enough here.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

void ChildProcess::terminate(std::int64_t grace_ms) {
  if (!running()) return;
  ::kill(pid_, SIGTERM);
  if (wait_exit(grace_ms)) return;
  ::kill(pid_, SIGKILL);
  wait_exit(5000);
}

pid_t ChildProcess::release() {
  const pid_t pid = pid_;
  pid_ = -1;
  exited_ = true;
  return pid;
}

std::string ChildProcess::exit_description() const {
  if (!exited_) return "";
  if (WIFEXITED(status_)) return "exit status " + std::to_string(WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) return "killed by signal " + std::to_string(WTERMSIG(status_));
  return "ended";
}

std::string executable_directory() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

}  // namespace ethx
