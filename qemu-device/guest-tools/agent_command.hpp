// One command of ethx-agent: the child process (its own session and process group, a private
// mount namespace with the working directory bound in from the host's root), its pipes, and
// how its end is reported. qemu-device/guest-tools/agent_server.hpp drives it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "qemu-device/agent-protocol/agent_protocol.hpp"

namespace ethx::guest {

inline const std::filesystem::path kHostRoot = agent::kGuestHostRoot;

struct CommandPipes {
  pid_t pid = -1;     // also the process group: the child calls setsid()
  int stdin_fd = -1;  // -1: the command reads /dev/null
  int stdout_fd = -1;
  int stderr_fd = -1;
  int exec_status_fd = -1;  // EOF once exec succeeded; a SpawnFailure if something failed
};

// What the child writes on its status pipe before _exit when it cannot run the program.
struct SpawnFailure {
  enum Stage : std::int32_t {
    kChdir = 1,
    kMountNamespace = 2,
    kBindWorkingDirectory = 3,
    kExec = 4,
  };
  std::int32_t stage = 0;
  std::int32_t error_number = 0;
};

// Forks and runs request.argv with `environment` (complete: NAME=VALUE) in the request's
// working directory: with `host_root` present, in a private mount namespace where
// host_root/<dir> is bound onto <dir> (created if missing), else simply chdir(<dir>). Signal
// mask and dispositions are reset in the child. Throws std::runtime_error if fork or a pipe
// fails; everything after the fork is reported through exec_status_fd.
CommandPipes spawn_command(const agent::StartRequest& request,
                           const std::vector<std::string>& environment,
                           const std::filesystem::path& host_root);

// The Error a SpawnFailure is reported as, its one line, and the command's exit status
// (127 when the program is not found, 126 otherwise).
struct StartFailure {
  agent::ErrorCode code = agent::ErrorCode::kCannotRun;
  std::string message;
  std::uint32_t exit_status = agent::kExitCannotRun;
};
StartFailure describe_spawn_failure(const SpawnFailure& failure, const agent::StartRequest& request,
                                    const std::filesystem::path& host_root);

// A wait status as a shell reports it: the exit code, or 128 + the signal.
agent::ExitBody exit_report(int wait_status);

// `base` (the agent's environment) with `additions` replacing entries of the same name.
std::vector<std::string> merge_environment(const std::vector<std::string>& base,
                                           const std::vector<std::string>& additions);

// The agent's own environment, with a PATH if it has none.
std::vector<std::string> agent_environment();

// Fabric GPU id (GPU_ID register) -> BDF of every ethx GPU under `devices_dir`.
std::map<std::uint32_t, std::string> gpu_bdfs(const std::filesystem::path& devices_dir);

}  // namespace ethx::guest
