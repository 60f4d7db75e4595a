// Booting the ethx guest image from tests: finding QEMU and the image, running a VM with a
// deadline, and reading the ETHX-BEGIN / ETHX-END blocks its /init prints.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace ethx::test {

struct VmPrerequisites {
  std::string qemu, kernel, initrd;
  std::string missing;  // what is absent and which script makes it; empty when all exist
};

// The same lookup as qemu-device/guest/run-vm.sh: environment first, then the build caches.
inline VmPrerequisites find_vm_prerequisites() {
  auto env_or = [](const char* name, const std::string& fallback) {
    const char* value = std::getenv(name);
    return std::string(value != nullptr && *value != '\0' ? value : fallback);
  };
  const char* home = std::getenv("HOME");
  const std::string cache = env_or("ETHX_CACHE", std::string(home ? home : "") + "/.cache/ethx");
  VmPrerequisites found{env_or("ETHX_QEMU", cache + "/qemu-7.2/src/build/qemu-system-x86_64"),
                        env_or("ETHX_GUEST_KERNEL", cache + "/guest/vmlinux"),
                        env_or("ETHX_GUEST_INITRD", cache + "/guest/initramfs.cpio.gz"),
                        {}};
  if (!std::filesystem::exists(found.qemu)) {
    found.missing +=
        "no QEMU with ethx-gpu at " + found.qemu + " (ETHX_QEMU); run qemu-device/build-qemu.sh. ";
  }
  if (!std::filesystem::exists(found.kernel) || !std::filesystem::exists(found.initrd)) {
    found.missing += "no guest image at " + found.kernel + " and " + found.initrd +
                     " (ETHX_GUEST_KERNEL, ETHX_GUEST_INITRD); build the guest tools and run "
                     "qemu-device/guest/build-guest-image.sh.";
  }
  return found;
}

// For a suite that boots its own fabric: checks QEMU and the image, then makes a run-directory
// root of its own, <temp>/<prefix>-<pid>, and points ETHX_RUN_DIR at it, so its `ethx up`
// never meets a user's fabric. Empty, with `error` set, when something is missing.
inline std::filesystem::path make_suite_run_root(const std::string& prefix, std::string& error) {
  const VmPrerequisites found = find_vm_prerequisites();
  if (!found.missing.empty()) {
    error = found.missing;
    return {};
  }
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root);
  ::setenv("ETHX_RUN_DIR", root.c_str(), 1);
  return root;
}

// After the suite's `ethx down`: removes the root and ETHX_RUN_DIR.
inline void remove_suite_run_root(const std::filesystem::path& root) {
  std::filesystem::remove_all(root);
  ::unsetenv("ETHX_RUN_DIR");
}

struct ProcessResult {
  bool timed_out = false;
  int exit_status = -1;  // -1 unless the process exited normally
  std::string output;    // stdout and stderr
};

// Runs argv in its own process group; on the deadline the whole group (the boot script,
// timeout(1), QEMU) is killed by that id and timed_out is set.
inline ProcessResult run_with_deadline(const std::vector<std::string>& argv,
                                       std::chrono::seconds deadline) {
  ProcessResult result;
  // Everything the child needs is prepared before fork: it only calls async-signal-safe
  // functions between fork and exec.
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return result;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    ::dup2(null_fd, STDIN_FILENO);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  if (pid < 0) {
    ::close(pipe_fds[0]);
    return result;
  }
  const auto end = std::chrono::steady_clock::now() + deadline;
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    pollfd poll_fd{pipe_fds[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&poll_fd, 1, static_cast<int>(left.count())) == 0) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    const ssize_t got = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (got <= 0) break;  // EOF: every process holding the pipe has exited
    result.output.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!result.timed_out && WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  return result;
}

struct GuestBlock {
  int exit_status = -1;
  std::string text;  // the lines between the markers, '\n'-separated, no '\r'
};

// The ETHX-BEGIN ... ETHX-END <status> blocks in console output, in order.
inline std::vector<GuestBlock> parse_guest_blocks(const std::string& console) {
  std::vector<GuestBlock> blocks;
  std::istringstream lines(console);
  std::string line;
  bool inside = false;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // the tty's onlcr
    if (line == "ETHX-BEGIN") {
      blocks.emplace_back();
      inside = true;
    } else if (inside && line.rfind("ETHX-END ", 0) == 0) {
      blocks.back().exit_status = std::atoi(line.c_str() + 9);
      inside = false;
    } else if (inside) {
      blocks.back().text += line + "\n";
    }
  }
  return blocks;
}

}  // namespace ethx::test
