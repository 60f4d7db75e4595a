#include "qemu-device/guest-tools/agent_command.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "qemu-device/guest-tools/ethx_gpu.hpp"

extern char** environ;  // NOLINT: POSIX; execvp looks up PATH in it

namespace ethx::guest {
namespace {

// Everything the child needs, prepared before fork: between fork and exec it only makes
// system calls.
struct ChildPlan {
  std::vector<std::string> argv_storage, env_storage, parents;
  std::vector<char*> argv, envp;
  std::string directory;    // where the command runs
  std::string bind_source;  // host_root + directory; empty: no private mount namespace
};

ChildPlan plan_child(const agent::StartRequest& request,
                     const std::vector<std::string>& environment,
                     const std::filesystem::path& host_root) {
  ChildPlan plan;
  plan.argv_storage = request.argv;
  plan.env_storage = environment;
  for (std::string& arg : plan.argv_storage) plan.argv.push_back(arg.data());
  plan.argv.push_back(nullptr);
  for (std::string& entry : plan.env_storage) plan.envp.push_back(entry.data());
  plan.envp.push_back(nullptr);
  plan.directory = request.working_directory.empty() ? "/" : request.working_directory;
  std::error_code error;
  if (plan.directory != "/" && std::filesystem::is_directory(host_root, error)) {
    plan.bind_source = host_root.string() + plan.directory;
    // The mount point may not exist in the guest (a host /tmp/x under the guest's own /tmp).
    for (std::size_t slash = plan.directory.find('/', 1);;
         slash = plan.directory.find('/', slash + 1)) {
      plan.parents.push_back(plan.directory.substr(0, slash));
      if (slash == std::string::npos) break;
    }
  }
  return plan;
}

[[noreturn]] void child_fail(int status_fd, SpawnFailure::Stage stage, int error_number) {
  const SpawnFailure failure{stage, error_number};
  [[maybe_unused]] const ssize_t wrote = ::write(status_fd, &failure, sizeof failure);
  const bool not_found = stage == SpawnFailure::kExec && error_number == ENOENT;
  ::_exit(static_cast<int>(not_found ? agent::kExitNotFound : agent::kExitCannotRun));
}

[[noreturn]] void run_child(const ChildPlan& plan, const int (&stdio)[3], int status_fd) {
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (const int signal_number : {SIGPIPE, SIGCHLD, SIGIO, SIGTERM, SIGINT, SIGHUP}) {
    ::signal(signal_number, SIG_DFL);
  }
  ::setsid();  // its own process group: a stop reaches what it starts as well
  for (int fd = 0; fd < 3; ++fd) ::dup2(stdio[fd], fd);
  if (!plan.bind_source.empty()) {
    // In the shared root the overlay keeps the 9p inode (and its page cache) of every file it
    // has seen, so a binary rebuilt on the host since would run from stale pages (cache=none
    // covers read() and stat, not mmap): unused dentries and inodes go first (a few ms).
    if (const int caches = ::open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC); caches >= 0) {
      [[maybe_unused]] const ssize_t dropped = ::write(caches, "2", 1);
      ::close(caches);
    }
    // Private, so the bind below stays this command's and no other command sees it.
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      child_fail(status_fd, SpawnFailure::kMountNamespace, errno);
    }
    for (const std::string& parent : plan.parents) ::mkdir(parent.c_str(), 0755);
    if (::mount(plan.bind_source.c_str(), plan.directory.c_str(), nullptr, MS_BIND | MS_REC,
                nullptr) != 0) {
      child_fail(status_fd, SpawnFailure::kBindWorkingDirectory, errno);
    }
  }
  if (::chdir(plan.directory.c_str()) != 0) child_fail(status_fd, SpawnFailure::kChdir, errno);
  environ = const_cast<char**>(plan.envp.data());
  ::execvp(plan.argv[0], const_cast<char**>(plan.argv.data()));
  child_fail(status_fd, SpawnFailure::kExec, errno);
}

void make_pipe(int (&fds)[2]) {
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

CommandPipes spawn_command(const agent::StartRequest& request,
                           const std::vector<std::string>& environment,
                           const std::filesystem::path& host_root) {
  const ChildPlan plan = plan_child(request, environment, host_root);
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, status[2] = {-1, -1};
  auto close_all = [&] {
    for (int* fds : {in, out, err, status}) {
      close_fd(fds[0]);
      close_fd(fds[1]);
    }
  };
  try {
    if (request.forward_stdin) {
      make_pipe(in);
    } else if ((in[0] = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
      throw std::runtime_error(std::string("/dev/null: ") + std::strerror(errno));
    }
    make_pipe(out);
    make_pipe(err);
    make_pipe(status);
  } catch (...) {
    close_all();
    throw;
  }
  const pid_t pid = ::fork();
  if (pid == 0) run_child(plan, {in[0], out[1], err[1]}, status[1]);
  if (pid < 0) {
    const int error = errno;
    close_all();
    throw std::runtime_error(std::string("fork: ") + std::strerror(error));
  }
  CommandPipes pipes{pid, in[1], out[0], err[0], status[0]};
  for (int* fd : {&in[0], &out[1], &err[1], &status[1]}) close_fd(*fd);
  for (const int fd : {pipes.stdin_fd, pipes.stdout_fd, pipes.stderr_fd, pipes.exec_status_fd}) {
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return pipes;
}

StartFailure describe_spawn_failure(const SpawnFailure& failure, const agent::StartRequest& request,
                                    const std::filesystem::path& host_root) {
  const std::string why = std::strerror(failure.error_number);
  const std::string program = request.argv.empty() ? "" : request.argv[0];
  const std::string directory = request.working_directory.empty() ? "/" : request.working_directory;
  std::error_code error;
  const bool shared_root = std::filesystem::is_directory(host_root, error);
  const std::string no_root =
      shared_root ? "" : " (this guest has no shared root: only its image's files are there)";
  switch (failure.stage) {
    case SpawnFailure::kChdir:
      return {agent::ErrorCode::kCannotRun,
              "working directory " + directory + ": " + why + no_root};
    case SpawnFailure::kMountNamespace:
      return {agent::ErrorCode::kCannotRun, "private mount namespace: " + why};
    case SpawnFailure::kBindWorkingDirectory:
      return {agent::ErrorCode::kCannotRun,
              "cannot bind " + host_root.string() + directory + " onto " + directory + ": " + why};
    default:
      break;
  }
  if (failure.error_number != ENOENT) {
    return {agent::ErrorCode::kCannotRun, "cannot run " + program + ": " + why};
  }
  if (program.find('/') != std::string::npos && std::filesystem::exists(program, error)) {
    // execve's ENOENT for a file that exists: its ELF interpreter (dynamic loader) is missing.
    return {agent::ErrorCode::kNotFound,
            "cannot run " + program + ": its dynamic loader is not in the guest" + no_root,
            agent::kExitNotFound};
  }
  return {agent::ErrorCode::kNotFound, "program not found in the guest: " + program + no_root,
          agent::kExitNotFound};
}

agent::ExitBody exit_report(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    const auto signal_number = static_cast<std::uint32_t>(WTERMSIG(wait_status));
    return {128 + signal_number, signal_number};
  }
  return {static_cast<std::uint32_t>(WEXITSTATUS(wait_status)), 0};
}

std::vector<std::string> merge_environment(const std::vector<std::string>& base,
                                           const std::vector<std::string>& additions) {
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> merged;
  for (const std::string& entry : base) {
    bool replaced = false;
    for (const std::string& addition : additions) {
      replaced = replaced || name_of(addition) == name_of(entry);
    }
    if (!replaced) merged.push_back(entry);
  }
  merged.insert(merged.end(), additions.begin(), additions.end());
  return merged;
}

std::vector<std::string> agent_environment() {
  std::vector<std::string> entries;
  bool has_path = false;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    entries.emplace_back(*entry);
    has_path = has_path || entries.back().rfind("PATH=", 0) == 0;
  }
  if (!has_path)
    entries.emplace_back("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  return entries;
}

std::map<std::uint32_t, std::string> gpu_bdfs(const std::filesystem::path& devices_dir) {
  std::map<std::uint32_t, std::string> bdfs;
  for (EthxGpu& gpu : find_ethx_gpus(devices_dir)) {
    bdfs[static_cast<std::uint32_t>(gpu.read(kGpuId))] = gpu.bdf();
  }
  return bdfs;
}

}  // namespace ethx::guest
