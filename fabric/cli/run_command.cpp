#include "fabric/cli/run_command.hpp"

#include <poll.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "fabric/control/run_state.hpp"
#include "fabric/platform/clock.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/vm/agent_client.hpp"

namespace ethx {

namespace po = boost::program_options;

namespace {

constexpr const char* kRunUsage =
    "usage: ethx run [--name N] [--vm K | --all-vms] [--per-gpu] [--timeout-s S]\n"
    "                [--env NAME=VALUE]... -- PROGRAM [ARGS...]\n"
    "Runs PROGRAM in the caller's working directory inside VM K (default 0) or every VM of\n"
    "the fabric `ethx up --vms` started; --per-gpu once per GPU of the VM, with ETHX_GPU_ID,\n"
    "ETHX_GPU_BDF and ETHX_GPU_COUNT set (docs/programs.md).\n";

constexpr std::int64_t kConnectTimeoutMs = 30'000;  // a free agent port, its Hello
constexpr std::uint32_t kStopGraceMs = 3000;        // SIGTERM, then SIGKILL after this
constexpr std::int64_t kStopConfirmMs = 5000;       // then we stop waiting for their Exit
constexpr std::size_t kStdinBacklogBytes = std::size_t{256} << 10;

po::options_description run_option_descriptions(RunOptions& options) {
  po::options_description description("ethx run options");
  description.add_options()("help", "show this help")(
      "name", po::value(&options.name)->default_value("default"), "the fabric's name")(
      "vm", po::value<std::size_t>(), "run in this VM (default 0)")(
      "all-vms", po::bool_switch(&options.all_vms), "run in every VM")(
      "per-gpu", po::bool_switch(&options.per_gpu),
      "one copy per GPU of the VM, with ETHX_GPU_ID, ETHX_GPU_BDF, ETHX_GPU_COUNT")(
      "timeout-s", po::value(&options.timeout_s)->default_value(0),
      "stop every copy after this long (0: no limit)")("env", po::value(&options.env)->composing(),
                                                       "NAME=VALUE for the program; repeatable");
  return description;
}

bool valid_env(const std::string& entry) {
  return agent::valid_environment_entry(entry);
}

}  // namespace

std::size_t program_start(const std::vector<std::string>& args,
                          const std::function<bool(const std::string&)>& takes_value,
                          bool& has_separator) {
  has_separator = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      has_separator = true;
      return i;
    }
    if (arg.empty() || arg[0] != '-') return i;
    if (takes_value(arg)) ++i;
  }
  return args.size();
}

std::string run_help() {
  RunOptions options;
  std::ostringstream text;
  text << kRunUsage << run_option_descriptions(options) << "\n";
  return text.str();
}

RunOptions parse_run_options(const std::vector<std::string>& args) {
  RunOptions options;
  bool has_separator = false;
  const auto takes_value = [](const std::string& arg) {
    return arg == "--name" || arg == "--vm" || arg == "--timeout-s" || arg == "--env";
  };
  const std::size_t start = program_start(args, takes_value, has_separator);
  const std::vector<std::string> option_args(args.begin(),
                                             args.begin() + static_cast<std::ptrdiff_t>(start));
  options.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(start + (has_separator ? 1 : 0)),
                      args.end());
  const po::options_description description = run_option_descriptions(options);
  po::variables_map vm;
  po::store(po::command_line_parser(option_args).options(description).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    options.help = true;
    return options;
  }
  if (vm.count("vm")) options.vm = vm["vm"].as<std::size_t>();
  if (options.vm && options.all_vms) throw po::error("--vm and --all-vms exclude each other");
  if (options.timeout_s < 0) throw po::error("--timeout-s: must be 0 (none) or more seconds");
  for (const std::string& entry : options.env) {
    if (!valid_env(entry)) throw po::error("--env " + entry + ": not NAME=VALUE");
  }
  if (options.argv.empty()) {
    throw po::error("no program: give it after --, e.g. `ethx run -- ./my_program`");
  }
  if (options.argv[0].empty()) throw po::error("the program's name is empty");
  return options;
}

namespace {

// Writes everything to fd; a closed pipe (`ethx run ... | head`) is not an error of ours.
void write_all(int fd, const std::string& data) {
  for (std::size_t done = 0; done < data.size();) {
    const ssize_t wrote = ::write(fd, data.data() + done, data.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return;
    done += static_cast<std::size_t>(wrote);
  }
}

// Several copies: each line of each stream prefixed with the copy's name. One copy: as is.
class OutputStream {
 public:
  OutputStream(int fd, std::string prefix) : fd_(fd), prefix_(std::move(prefix)) {}
  void write(const std::string& data) {
    if (prefix_.empty()) {
      write_all(fd_, data);
      return;
    }
    partial_ += data;
    std::string lines;
    for (std::size_t eol; (eol = partial_.find('\n')) != std::string::npos;) {
      lines += prefix_ + partial_.substr(0, eol + 1);
      partial_.erase(0, eol + 1);
    }
    write_all(fd_, lines);
  }
  void flush() {
    if (!partial_.empty()) write_all(fd_, prefix_ + partial_ + "\n");
    partial_.clear();
  }

 private:
  int fd_;
  std::string prefix_;
  std::string partial_;
};

struct Copy {
  std::size_t vm = 0;
  std::optional<std::size_t> gpu;
  std::string name;  // "vm 0", "vm 0 gpu 1"
  agent::StartRequest request;
  std::unique_ptr<AgentClient> client;
  std::unique_ptr<OutputStream> out, err;
  enum class State { kRunning, kExited, kLost } state = State::kRunning;
  std::uint32_t exit_status = 0;
};

// The environment a copy gets: --env first, then ETHX_VM and (--per-gpu) the GPU's, which
// replace a --env of the same name.
std::vector<std::string> copy_environment(const RunOptions& options, std::size_t vm,
                                          std::optional<std::size_t> gpu, std::size_t gpus) {
  std::vector<std::string> ours = {"ETHX_VM=" + std::to_string(vm)};
  if (gpu) {
    ours.push_back("ETHX_GPU_ID=" + std::to_string(*gpu));
    ours.push_back("ETHX_GPU_COUNT=" + std::to_string(gpus));
  }
  std::vector<std::string> environment;
  for (const std::string& entry : options.env) {
    const std::string name = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const std::string& own : ours) replaced = replaced || own.rfind(name, 0) == 0;
    if (!replaced) environment.push_back(entry);
  }
  environment.insert(environment.end(), ours.begin(), ours.end());
  return environment;
}

std::vector<Copy> plan_copies(const RunOptions& options, const RunState& state,
                              const std::string& working_directory) {
  std::vector<Copy> copies;
  const std::size_t first_vm = options.all_vms ? 0 : options.vm.value_or(0);
  const std::size_t end_vm = options.all_vms ? state.vms : first_vm + 1;
  for (std::size_t vm = first_vm; vm < end_vm; ++vm) {
    for (std::size_t i = 0; i < (options.per_gpu ? state.gpus_per_vm : 1); ++i) {
      Copy copy;
      copy.vm = vm;
      if (options.per_gpu) copy.gpu = vm * state.gpus_per_vm + i;
      copy.name = options.name_by_gpu && copy.gpu
                      ? "pe " + std::to_string(*copy.gpu)
                      : "vm " + std::to_string(vm) +
                            (copy.gpu ? " gpu " + std::to_string(*copy.gpu) : std::string());
      copy.request.argv = options.argv;
      copy.request.working_directory = working_directory;
      copy.request.environment = copy_environment(options, vm, copy.gpu, state.gpus_per_vm);
      if (copy.gpu) copy.request.gpu_id = static_cast<std::uint32_t>(*copy.gpu);
      copy.request.forward_stdin = copies.empty();  // stdin goes to the first copy only
      if (options.max_copies == 0 || copies.size() < options.max_copies) {
        copies.push_back(std::move(copy));
      }
    }
  }
  const bool labelled = copies.size() > 1;
  for (Copy& copy : copies) {
    const std::string prefix = labelled ? "[" + copy.name + "] " : "";
    copy.out = std::make_unique<OutputStream>(STDOUT_FILENO, prefix);
    copy.err = std::make_unique<OutputStream>(STDERR_FILENO, prefix);
  }
  return copies;
}

// The fabric `name` if it is up with VMs and everything it recorded runs; else nullopt after
// one line on stderr, with the exit status in `status`.
std::optional<RunState> load_vm_fabric(const RunDirectory& directory, const std::string& command,
                                       std::optional<std::size_t> vm, int& status) {
  std::optional<RunState> state = directory.load();
  const std::string fabric = "fabric '" + directory.name() + "'";
  status = 2;
  if (!state) {
    std::cerr << "ethx " << command << ": no " << fabric << " is up (start one with `ethx up "
              << (directory.name() == "default" ? "" : "--name " + directory.name() + " ")
              << "--vms`)\n";
    status = 3;
  } else if (state->vms == 0) {
    std::cerr << "ethx " << command << ": " << fabric << " has no VMs (started without --vms)\n";
  } else if (vm && *vm >= state->vms) {
    std::cerr << "ethx " << command << ": --vm " << *vm << ": " << fabric << " has " << state->vms
              << " VMs (0-" << state->vms - 1 << ")\n";
  } else {
    for (const RecordedProcess& process : state->processes) {
      if (process.running()) continue;
      std::cerr << "ethx " << command << ": " << fabric << ": " << process.role << " (pid "
                << process.pid << ") is gone; " << degraded_fabric_hint(*state) << "\n";
      status = 1;
      return std::nullopt;
    }
    return state;
  }
  return std::nullopt;
}

// Connects every copy to a port of its VM and starts it. A failure ends the run: the copies
// already started stop when their connections close.
void start_copies(std::vector<Copy>& copies, const std::string& log_directory) {
  for (Copy& copy : copies) {
    copy.client = std::make_unique<AgentClient>(log_directory, copy.vm, kConnectTimeoutMs);
    // Without the shared root no host directory is in the guest: the command runs in `/`.
    if (!copy.client->shared_root()) copy.request.working_directory.clear();
    copy.client->start(copy.request);
  }
}

// "exited with status 3", "was killed by signal 9" (the agent reports 128 + n for signal n).
std::string describe_exit(std::uint32_t status) {
  if (status > 128 && status < 128 + 65) {
    const int signal = static_cast<int>(status) - 128;
    const char* name = ::sigabbrev_np(signal);
    return "was killed by signal " + std::to_string(signal) +
           (name != nullptr ? std::string(" (SIG") + name + ")" : std::string());
  }
  return "exited with status " + std::to_string(status);
}

class RunLoop {
 public:
  RunLoop(std::vector<Copy>& copies, const RunOptions& options)
      : copies_(copies), options_(options) {
    if (options.timeout_s > 0) deadline_ms_ = monotonic_ms() + options.timeout_s * 1000;
  }
  int run();

 private:
  bool running() const;
  void poll_once();
  void on_event(Copy& copy, const AgentEvent& event);
  void forward_stdin();
  void check_stop();
  int report() const;

  std::vector<Copy>& copies_;
  const RunOptions& options_;
  std::int64_t deadline_ms_ = -1;
  bool stdin_open_ = true;
  std::optional<std::uint32_t> first_failure_;
  enum class Cause {
    kNone,
    kTimeout,
    kInterrupted,
    kWatcher,
    kLost,
    kFailed
  } cause_ = Cause::kNone;
  std::vector<std::string> stopped_;  // the copies still running when the stop began
  std::string lost_;                  // a copy whose connection closed: why
  std::string failed_;                // stop_on_failure: the copy that failed, how
  std::int64_t give_up_ms_ = -1;
};

bool RunLoop::running() const {
  for (const Copy& copy : copies_) {
    if (copy.state == Copy::State::kRunning) return true;
  }
  return false;
}

int RunLoop::run() {
  while (running()) {
    poll_once();
    check_stop();
    if (give_up_ms_ >= 0 && monotonic_ms() > give_up_ms_) break;
  }
  return report();
}

void RunLoop::poll_once() {
  std::vector<pollfd> fds;
  for (const Copy& copy : copies_) {
    const short events = static_cast<short>(
        copy.state == Copy::State::kRunning ? POLLIN | (copy.client->wants_write() ? POLLOUT : 0)
                                            : 0);
    fds.push_back({copy.state == Copy::State::kRunning ? copy.client->fd() : -1, events, 0});
  }
  const Copy& first = copies_.front();
  const bool take_stdin = stdin_open_ && first.state == Copy::State::kRunning &&
                          first.client->unsent_bytes() < kStdinBacklogBytes;
  fds.push_back({take_stdin ? STDIN_FILENO : -1, POLLIN, 0});
  // Bounded: Ctrl-C and the process watcher only set a flag (process_signals.hpp).
  if (::poll(fds.data(), fds.size(), 100) <= 0) return;
  for (std::size_t i = 0; i < copies_.size(); ++i) {
    Copy& copy = copies_[i];
    if (fds[i].revents == 0 || copy.state != Copy::State::kRunning) continue;
    if ((fds[i].revents & POLLOUT) != 0) copy.client->write_pending();
    for (const AgentEvent& event : copy.client->read_events()) on_event(copy, event);
  }
  if (fds.back().revents != 0) forward_stdin();
}

void RunLoop::on_event(Copy& copy, const AgentEvent& event) {
  switch (event.kind) {
    case AgentEvent::Kind::kStdout:
      copy.out->write(event.data);
      break;
    case AgentEvent::Kind::kStderr:
      copy.err->write(event.data);
      break;
    case AgentEvent::Kind::kError:
      copy.err->flush();
      write_all(STDERR_FILENO, options_.label + ": " + copy.name + ": " + event.data + "\n");
      break;
    case AgentEvent::Kind::kExit:
      copy.out->flush();
      copy.err->flush();
      copy.state = Copy::State::kExited;
      copy.exit_status = event.exit_status;
      if (event.exit_status != 0 && !first_failure_) first_failure_ = event.exit_status;
      if (event.exit_status != 0 && options_.stop_on_failure && failed_.empty()) {
        failed_ = copy.name + " " + describe_exit(event.exit_status);
      }
      break;
    case AgentEvent::Kind::kClosed:
      copy.out->flush();
      copy.err->flush();
      copy.state = Copy::State::kLost;
      if (lost_.empty()) lost_ = copy.name + ": " + event.data;
      break;
    case AgentEvent::Kind::kStarted:
      break;
  }
}

void RunLoop::forward_stdin() {
  AgentClient& client = *copies_.front().client;
  char buffer[64 * 1024];
  const ssize_t got = ::read(STDIN_FILENO, buffer, sizeof buffer);
  if (got < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (got <= 0) {
    stdin_open_ = false;
    client.send_stdin_eof();
    return;
  }
  client.send_stdin(buffer, static_cast<std::size_t>(got));
}

void RunLoop::check_stop() {
  if (cause_ != Cause::kNone) return;
  if (g_stop_requested.load()) {
    cause_ = stop_reason().empty() ? Cause::kInterrupted : Cause::kWatcher;
  } else if (deadline_ms_ >= 0 && monotonic_ms() > deadline_ms_) {
    cause_ = Cause::kTimeout;
  } else if (!lost_.empty()) {
    cause_ = Cause::kLost;
  } else if (!failed_.empty()) {
    cause_ = Cause::kFailed;
  } else {
    return;
  }
  for (Copy& copy : copies_) {
    if (copy.state != Copy::State::kRunning) continue;
    stopped_.push_back(copy.name);
    copy.client->stop(kStopGraceMs);
  }
  give_up_ms_ = monotonic_ms() + kStopGraceMs + kStopConfirmMs;
}

int RunLoop::report() const {
  std::string stopped;
  for (const std::string& name : stopped_) stopped += (stopped.empty() ? "" : ", ") + name;
  const std::string what = stopped.empty() ? "" : "; stopped what was still running: " + stopped;
  switch (cause_) {
    case Cause::kTimeout:
      std::cerr << options_.label << ": --timeout-s " << options_.timeout_s << " reached" << what
                << "\n";
      return 124;
    case Cause::kInterrupted:
      std::cerr << options_.label << ": interrupted" << what << "\n";
      return 130;
    case Cause::kWatcher:
      std::cerr << options_.label << ": " << stop_reason() << what << "\n";
      return 1;
    case Cause::kLost:
      // The watcher names the VM's QEMU and how it ended, if it has seen that already.
      std::cerr << options_.label << ": " << (stop_reason().empty() ? lost_ : stop_reason()) << what
                << "\n";
      return 1;
    case Cause::kFailed:
      std::cerr << options_.label << ": " << failed_ << what << "\n";
      break;
    case Cause::kNone:
      break;
  }
  return static_cast<int>(first_failure_.value_or(0));
}

}  // namespace

int run_in_vms(const RunOptions& options) {
  RunDirectory directory(options.name);
  int status = 0;
  const std::optional<RunState> state =
      load_vm_fabric(directory, "run", options.all_vms ? std::nullopt : options.vm, status);
  if (!state) return status;
  std::error_code error;
  const std::string working_directory = std::filesystem::current_path(error).string();
  if (error) {
    std::cerr << "ethx run: the current directory: " << error.message() << "\n";
    return 2;
  }
  install_stop_signals(false);
  std::signal(SIGPIPE, SIG_IGN);
  // A VM (or any process of the fabric) exiting stops the run at once, naming it.
  const std::unique_ptr<ProcessWatcher> watcher = watch_recorded_processes(directory, *state);
  std::vector<Copy> copies = plan_copies(options, *state, working_directory);
  start_copies(copies, directory.path());
  return RunLoop(copies, options).run();
}

int run_guest(const GuestOptions& options) {
  RunDirectory directory(options.name);
  int status = 0;
  const std::optional<RunState> state = load_vm_fabric(directory, "guest", options.vm, status);
  if (!state) return status;
  install_stop_signals(false);
  std::signal(SIGPIPE, SIG_IGN);
  // The VM (or any process of the fabric) exiting ends the wait for its answer at once.
  const std::unique_ptr<ProcessWatcher> watcher = watch_recorded_processes(directory, *state);
  AgentClient client(directory.path(), options.vm, kConnectTimeoutMs);
  agent::StartRequest request;
  request.argv = {"ethx-guest"};
  request.argv.insert(request.argv.end(), options.arguments.begin(), options.arguments.end());
  const AgentCommandResult result = run_agent_command(
      client, request, options.timeout_ms, [](bool is_stderr, const std::string& data) {
        write_all(is_stderr ? STDERR_FILENO : STDOUT_FILENO, data);
      });
  for (const std::string& line : result.errors) {
    std::cerr << "ethx guest: vm " << options.vm << ": " << line << "\n";
  }
  return static_cast<int>(result.exit_status);
}

}  // namespace ethx
