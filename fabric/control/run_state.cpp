#include "fabric/control/run_state.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include "fabric/platform/process_identity.hpp"
#include "fabric/platform/process_signals.hpp"

namespace ethx {

bool RecordedProcess::running() const {
  return same_process_running(pid, start_time);
}

nlohmann::json RunState::to_json() const {
  nlohmann::json processes_json = nlohmann::json::array();
  for (const RecordedProcess& process : processes) {
    processes_json.push_back(
        {{"role", process.role}, {"pid", process.pid}, {"start_time", process.start_time}});
  }
  return {{"name", name},
          {"fabric", fabric},
          {"transport", transport},
          {"gpus", gpus},
          {"config", config_path},
          {"netns_tag", netns_tag},
          {"phase", phase},
          {"created_unix_s", created_unix_s},
          {"processes", processes_json},
          {"namespaces", namespaces},
          {"links", links},
          {"shared_memory", shared_memory},
          {"stats_file", stats_file},
          {"vms", vms},
          {"gpus_per_vm", gpus_per_vm},
          {"guest_nics", guest_nics}};
}

RunState RunState::from_json(const nlohmann::json& value) {
  try {
    RunState state;
    state.name = value.at("name").get<std::string>();
    state.fabric = value.at("fabric").get<std::string>();
    state.transport = value.at("transport").get<std::string>();
    state.gpus = value.at("gpus").get<std::size_t>();
    state.config_path = value.at("config").get<std::string>();
    state.netns_tag = value.at("netns_tag").get<std::string>();
    state.phase = value.at("phase").get<std::string>();
    state.created_unix_s = value.at("created_unix_s").get<std::int64_t>();
    for (const auto& process : value.at("processes")) {
      state.processes.push_back(RecordedProcess{process.at("role").get<std::string>(),
                                                process.at("pid").get<pid_t>(),
                                                process.at("start_time").get<std::string>()});
    }
    state.namespaces = value.at("namespaces").get<std::vector<std::string>>();
    state.links = value.at("links").get<std::vector<std::string>>();
    state.shared_memory = value.at("shared_memory").get<std::vector<std::string>>();
    state.stats_file = value.at("stats_file").get<std::string>();
    state.vms = value.value("vms", std::size_t{0});
    state.gpus_per_vm = value.value("gpus_per_vm", std::size_t{0});
    state.guest_nics = value.value("guest_nics", false);
    return state;
  } catch (const nlohmann::json::exception& error) {
    throw std::runtime_error(std::string("run record: ") + error.what());
  }
}

bool valid_fabric_name(const std::string& name) {
  if (name.empty() || name.size() > 16 || name.front() == '-') return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

std::string RunDirectory::root() {
  if (const char* configured = std::getenv("ETHX_RUN_DIR"); configured && *configured) {
    return configured;
  }
  if (::geteuid() == 0) return "/run/ethx/up";
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  return std::string(runtime && *runtime ? runtime : "/tmp") + "/ethx-" +
         std::to_string(::geteuid()) + "/up";
}

RunDirectory::RunDirectory(std::string name) : name_(std::move(name)) {
  if (!valid_fabric_name(name_)) {
    throw std::invalid_argument("--name " + name_ +
                                ": use 1 to 16 characters of a-z, 0-9 and '-', not starting "
                                "with '-'");
  }
}

RunDirectory::~RunDirectory() {
  if (switch_lock_fd_ >= 0) ::close(switch_lock_fd_);  // releases the flock
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string RunDirectory::path() const {
  return root() + "/" + name_;
}

bool RunDirectory::exists() const {
  std::error_code error;
  return std::filesystem::exists(state_path(), error);
}

namespace {

// Opens <root>/<file> (creating the root) and takes an exclusive flock on it.
int take_lock(const std::string& root, const std::string& file) {
  std::error_code error;
  std::filesystem::create_directories(root, error);
  if (error) {
    throw std::runtime_error("cannot create the run directory root " + root + ": " +
                             error.message());
  }
  const std::string lock_path = root + "/" + file;
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "open " + lock_path);
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      const int saved = errno;
      ::close(fd);
      throw std::system_error(saved, std::generic_category(), "flock " + lock_path);
    }
  }
  return fd;
}

}  // namespace

void RunDirectory::lock() {
  if (lock_fd_ < 0) lock_fd_ = take_lock(root(), name_ + ".lock");
}

void RunDirectory::lock_switch() {
  if (switch_lock_fd_ < 0) switch_lock_fd_ = take_lock(root(), name_ + ".switch.lock");
}

bool RunDirectory::switch_lock_busy() const {
  if (switch_lock_fd_ >= 0) return false;  // ours
  const std::string lock_path = root() + "/" + name_ + ".switch.lock";
  const int fd = ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // never taken
  const bool busy = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // also releases the shared lock if we got it
  return busy;
}

void RunDirectory::create() {
  std::filesystem::create_directories(path());
  std::filesystem::permissions(path(), std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace);
}

void RunDirectory::save(const RunState& state) const {
  const std::string temporary = state_path() + ".tmp";
  {
    std::ofstream out(temporary);
    out << state.to_json().dump(2) << "\n";
    if (!out) throw std::runtime_error("cannot write " + temporary);
  }
  std::filesystem::rename(temporary, state_path());
}

std::optional<RunState> RunDirectory::load() const {
  std::ifstream in(state_path());
  if (!in) return std::nullopt;
  const nlohmann::json value = nlohmann::json::parse(in, nullptr, false);
  if (value.is_discarded()) throw std::runtime_error(state_path() + ": not valid JSON");
  return RunState::from_json(value);
}

void RunDirectory::remove() const {
  std::error_code error;
  std::filesystem::remove_all(path(), error);
  if (error) throw std::runtime_error("cannot remove " + path() + ": " + error.message());
}

std::vector<std::string> list_run_directories() {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(RunDirectory::root(), error)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && valid_fabric_name(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string degraded_fabric_hint(const RunState& state) {
  const std::string name = state.name == "default" ? "" : " --name " + state.name;
  return "`ethx status" + name + "` shows the fabric, `ethx down" + name + "` removes it";
}

std::unique_ptr<ProcessWatcher> watch_recorded_processes(const RunDirectory& directory,
                                                         const RunState& state) {
  const pid_t recorded_switch = [&state] {
    for (const RecordedProcess& process : state.processes) {
      if (process.role == "switch") return process.pid;
    }
    return pid_t{-1};
  }();
  auto replaced = [&directory, recorded_switch] {
    if (directory.switch_lock_busy()) return true;
    const std::optional<RunState> now = directory.load();
    if (!now) return false;
    for (const RecordedProcess& process : now->processes) {
      if (process.role == "switch" && process.pid != recorded_switch && process.running()) {
        return true;
      }
    }
    return false;
  };
  auto watcher = std::make_unique<ProcessWatcher>([replaced](const ProcessExit& exit) {
    if (exit.name == "switch" && replaced()) return false;
    request_stop(exit.line());
    return true;
  });
  for (const RecordedProcess& process : state.processes) {
    watcher->watch({process.role, process.pid, process.start_time, degraded_fabric_hint(state)});
  }
  return watcher;
}

}  // namespace ethx
