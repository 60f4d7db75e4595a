#include "fabric/cli/capture_command.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "fabric/cli/switch_mailbox.hpp"
#include "fabric/config/fabric_names.hpp"
#include "fabric/control/run_state.hpp"
#include "switch/runtime/switch_command_box.hpp"

namespace ethx {
namespace {

// How often the command asks the switch whether the capture has ended.
constexpr auto kStatusInterval = std::chrono::milliseconds(50);

std::atomic<bool> interrupted{false};

void on_interrupt(int) {
  interrupted.store(true);
}

// The start request, or an error naming the option.
nlohmann::json start_request(const CaptureOptions& options, std::string& path) {
  if (!options.port) throw std::invalid_argument("--port: is required (the switch port)");
  if (*options.port < 0) {
    throw std::invalid_argument("--port: " + std::to_string(*options.port) + " is not a port");
  }
  if (options.count < 0) throw std::invalid_argument("--count: must be 0 (no limit) or more");
  if (!(options.duration_s >= 0 && options.duration_s <= 86400)) {
    throw std::invalid_argument("--duration-s: must be between 0 (no limit) and 86400");
  }
  path = options.path.empty()
             ? "ethx-" + options.name + "-port" + std::to_string(*options.port) + ".pcap"
             : options.path;
  path = std::filesystem::absolute(path).string();  // the switch runs elsewhere
  return {{"command", "capture-start"},
          {"port", *options.port},
          {"path", path},
          {"max_frames", options.count},
          {"duration_ns", static_cast<std::uint64_t>(options.duration_s * 1e9)}};
}

class SwitchClient {
 public:
  SwitchClient(const RunDirectory& directory, const RunState& state, const RecordedProcess& process,
               std::int64_t timeout_ms)
      : directory_(directory),
        control_(ControlRegion::attach(control_region_name(state.fabric))),
        process_(process),
        timeout_ms_(timeout_ms) {}
  // One request, the lock held only for it: `ethx fault` may run during a capture.
  nlohmann::json ask(const nlohmann::json& request) {
    MailboxLock lock(directory_);
    return send_switch_command(control_, request, timeout_ms_,
                               [this] { return process_.running(); });
  }

 private:
  const RunDirectory& directory_;
  ControlRegion control_;
  const RecordedProcess& process_;
  std::int64_t timeout_ms_;
};

// Asks until capture `id` has ended (its count, its time) or a signal stops it; the last status.
nlohmann::json wait_until_done(SwitchClient& client, std::uint64_t id) {
  nlohmann::json reply;
  for (;;) {
    std::this_thread::sleep_for(kStatusInterval);
    const bool stop = interrupted.load();
    reply = client.ask({{"command", stop ? "capture-stop" : "capture-status"}, {"id", id}});
    if (!reply.value("ok", false) || stop || !reply["capture"].value("active", false)) break;
  }
  return reply;
}

// Ctrl-C, a kill or a closed terminal stop the capture (and complete its file) instead of
// leaving it running in the switch; installed before the capture starts.
class StopOnSignals {
 public:
  StopOnSignals() {
    for (int signal : kSignals) previous_[index(signal)] = std::signal(signal, on_interrupt);
  }
  ~StopOnSignals() {
    for (int signal : kSignals) std::signal(signal, previous_[index(signal)]);
  }
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
  static std::size_t index(int signal) { return signal == SIGINT ? 0 : signal == SIGTERM ? 1 : 2; }
  void (*previous_[3])(int) = {};
};

void report(const CaptureOptions& options, const nlohmann::json& capture) {
  if (options.json) {
    std::cout << capture.dump(2) << "\n";
    return;
  }
  std::cout << "ethx capture: " << capture["frames"].get<std::uint64_t>() << " frames of port "
            << capture["port"].get<std::uint64_t>() << " of '" << options.name << "' in "
            << capture["path"].get<std::string>()
            << "\n  read it with: tshark -X lua_script:fabric/tools/wireshark/ethx.lua -r "
            << capture["path"].get<std::string>() << "\n";
}

}  // namespace

int run_capture(const CaptureOptions& options) {
  RunDirectory directory(options.name);
  const std::optional<RunState> state = directory.load();
  if (!state) {
    std::cerr << "ethx capture: no fabric '" << options.name << "' is up\n";
    return 3;
  }
  std::string path;
  nlohmann::json request;
  try {
    request = start_request(options, path);
  } catch (const std::invalid_argument& error) {
    std::cerr << "ethx capture: " << error.what() << "\n";
    return 2;
  }
  const RecordedProcess* process = switch_process(*state);
  if (state->phase != "up" || process == nullptr || !process->running()) {
    std::cerr << "ethx capture: the switch of '" << options.name << "' is not running; see "
              << "`ethx status --name " << options.name << "`\n";
    return 1;
  }
  try {
    const StopOnSignals signals;
    SwitchClient client(directory, *state, *process, options.timeout_ms);
    const nlohmann::json started = client.ask(request);
    if (!started.value("ok", false)) {
      std::cerr << "ethx capture: " << started.value("error", std::string("?")) << "\n";
      return 2;
    }
    const auto id = started["capture"]["id"].get<std::uint64_t>();
    if (!options.json)
      std::cout << "ethx capture: recording port " << *options.port << " into " << path
                << std::endl;
    const nlohmann::json done = wait_until_done(client, id);
    if (!done.value("ok", false) || done["capture"].contains("error")) {
      const nlohmann::json& why = done.value("ok", false) ? done["capture"] : done;
      std::cerr << "ethx capture: " << why.value("error", std::string("?")) << "\n";
      return 1;
    }
    report(options, done["capture"]);
  } catch (const std::runtime_error& error) {
    std::cerr << "ethx capture: " << error.what() << "; the capture file may be incomplete\n";
    return 1;
  }
  return 0;
}

}  // namespace ethx
