// Running the ethx command from integration tests, as a user would, and looking at what it left:
// its output, its processes (from /proc) and its files in /dev/shm.
#pragma once

#include <poll.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "fabric/platform/process_identity.hpp"

namespace ethx::test {

struct CommandResult {
  int exit_status = -1;
  std::string output;
};

// Runs a shell command line and captures its stdout (and stderr if `command` redirects it).
inline CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  while (std::size_t got = std::fread(buffer, 1, sizeof buffer, pipe)) {
    result.output.append(buffer, got);
  }
  const int status = ::pclose(pipe);
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

inline std::string ethx_binary() {
  return std::string(ETHX_BIN_DIR) + "/ethx";
}

// Names in /dev/shm starting with `prefix`.
inline std::vector<std::string> shm_files_with_prefix(const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) found.push_back(name);
  }
  return found;
}

// The whole file; empty if it cannot be read.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Lines of `text` that contain `needle`.
inline std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) lines.push_back(line);
  }
  return lines;
}

struct ProcessInfo {
  pid_t pid = -1;
  pid_t parent = -1;
  std::string start_time;    // process_start_time(pid): tells a reused PID apart
  std::string command_line;  // each argument followed by one space
};

// Every process in /proc that has not exited (zombies are left out); one that exits while it
// is read may be missing or have an empty command line.
inline std::vector<ProcessInfo> live_processes() {
  std::vector<ProcessInfo> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so parse after the last.
    const std::string stat = read_file((entry.path() / "stat").string());
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) continue;
    std::istringstream fields(stat.substr(close + 2));
    char state = 0;
    long parent = 0;
    fields >> state >> parent;
    if (state == 'Z') continue;
    ProcessInfo process;
    process.pid = static_cast<pid_t>(std::stol(name));
    process.parent = static_cast<pid_t>(parent);
    process.start_time = process_start_time(process.pid);
    process.command_line = read_file((entry.path() / "cmdline").string());
    std::replace(process.command_line.begin(), process.command_line.end(), '\0', ' ');
    found.push_back(std::move(process));
  }
  return found;
}

// The live processes whose parent is `parent`.
inline std::vector<ProcessInfo> children_of(pid_t parent) {
  std::vector<ProcessInfo> found = live_processes();
  std::erase_if(found, [parent](const ProcessInfo& process) { return process.parent != parent; });
  return found;
}

// The live processes whose command line has `--netns-tag <tag>`: the switch and nodes of one
// socket-transport run, whoever their parent is now.
inline std::vector<ProcessInfo> processes_of_tag(const std::string& tag) {
  std::vector<ProcessInfo> found = live_processes();
  const std::string option = "--netns-tag " + tag + " ";
  std::erase_if(found, [&option](const ProcessInfo& process) {
    return process.command_line.find(option) == std::string::npos;
  });
  return found;
}

// Waits until the file `path` contains `needle` (true), or the process `pid` has exited or
// `timeout` has passed (false). `pid` must be a child not reaped yet, or any process not ours
// (its PID then must not be reused meanwhile), and `path` must exist: create it before the
// writer starts. Sleeps on inotify (woken by each write to the file) and a pidfd, not a timer.
inline bool wait_for_output(pid_t pid, const std::string& path, const std::string& needle,
                            std::chrono::milliseconds timeout) {
  const auto contains = [&] { return read_file(path).find(needle) != std::string::npos; };
  const int watch = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  const int process = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  const auto closing = [&](bool result) {
    if (watch >= 0) ::close(watch);
    if (process >= 0) ::close(process);
    return result;
  };
  // Watch first, then look: a write between the two still wakes the poll below.
  if (watch < 0 || ::inotify_add_watch(watch, path.c_str(), IN_MODIFY) < 0 || process < 0) {
    return closing(contains());
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::array<char, 4096> events{};
  for (;;) {
    if (contains()) return closing(true);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return closing(false);
    std::array<pollfd, 2> fds{pollfd{watch, POLLIN, 0}, pollfd{process, POLLIN, 0}};
    if (::poll(fds.data(), fds.size(), static_cast<int>(left.count())) < 0 && errno != EINTR) {
      return closing(contains());
    }
    // The process has ended: whatever it wrote is in the file now.
    if ((fds[1].revents & POLLIN) != 0) return closing(contains());
    while (::read(watch, events.data(), events.size()) > 0) {
    }
  }
}

}  // namespace ethx::test
