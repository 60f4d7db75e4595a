// Running the ethx command from integration tests, as a user would.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

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

}  // namespace ethx::test
