#include "fabric/cli/fault_command.hpp"

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "fabric/cli/switch_mailbox.hpp"
#include "fabric/config/fabric_names.hpp"
#include "fabric/control/run_state.hpp"
#include "switch/runtime/fault_change.hpp"
#include "switch/runtime/switch_command_box.hpp"

namespace ethx {
namespace {

// Bad input, named by the option the user typed.
class BadOption : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

std::optional<double> checked_rate(const char* option, const std::optional<double>& rate) {
  if (rate && !(*rate >= 0.0 && *rate <= 1.0)) {
    throw BadOption(std::string(option) + ": must be between 0 and 1 (got " + format_number(*rate) +
                    ")");
  }
  return rate;
}

FaultChange change_from(const FaultOptions& options, std::size_t port_count) {
  if (!options.port)
    throw BadOption("--port: is required (the switch port, 0.." + std::to_string(port_count - 1) +
                    ")");
  if (*options.port < 0 || static_cast<unsigned long long>(*options.port) >= port_count) {
    throw BadOption("--port: " + std::to_string(*options.port) + " is not a port of this fabric (" +
                    std::to_string(port_count) + " ports: 0.." + std::to_string(port_count - 1) +
                    ")");
  }
  FaultChange change;
  change.port = static_cast<PortId>(*options.port);
  change.clear = options.clear;
  change.drop_rate = checked_rate("--drop", options.drop);
  change.corrupt_rate = checked_rate("--corrupt", options.corrupt);
  change.reorder_rate = checked_rate("--reorder", options.reorder);
  change.delay_spike_rate = checked_rate("--delay-spike-rate", options.delay_spike_rate);
  if (options.delay_spike_us) {
    const double us = *options.delay_spike_us;
    const double max_us = static_cast<double>(kMaxDelaySpikeNs) / 1000.0;
    if (!(us >= 0.0 && us <= max_us)) {
      throw BadOption("--delay-spike-us: must be between 0 and " +
                      std::to_string(kMaxDelaySpikeNs / 1000) + " (got " + std::to_string(us) +
                      ")");
    }
    change.delay_spike_ns = static_cast<TimeNs>(std::llround(us * 1000.0));
  }
  if (options.link) {
    if (*options.link != "up" && *options.link != "down") {
      throw BadOption("--link: must be up or down (got \"" + *options.link + "\")");
    }
    change.link_down = *options.link == "down";
  }
  if (change.empty()) {
    throw BadOption(
        "nothing to change: give --drop, --corrupt, --reorder, --delay-spike-rate, "
        "--delay-spike-us, --link or --clear");
  }
  return change;
}

}  // namespace

int run_fault(const FaultOptions& options) {
  RunDirectory directory(options.name);
  const std::optional<RunState> state = directory.load();
  if (!state) {
    std::cerr << "ethx fault: no fabric '" << options.name << "' is up\n";
    return 3;
  }
  FaultChange change;
  try {
    change = change_from(options, state->gpus);
  } catch (const BadOption& error) {
    std::cerr << "ethx fault: " << error.what() << "\n";
    return 2;
  }
  const RecordedProcess* process = switch_process(*state);
  if (state->phase != "up" || process == nullptr || !process->running()) {
    std::cerr << "ethx fault: the switch of '" << options.name
              << "' is not running; see `ethx status --name " << options.name
              << "`, or `ethx restart-switch --name " << options.name << "`\n";
    return 1;
  }
  ControlRegion control = ControlRegion::attach(control_region_name(state->fabric));
  MailboxLock lock(directory);
  nlohmann::json request = change.to_json();
  request["command"] = "fault";
  nlohmann::json reply;
  try {
    reply = send_switch_command(control, request, options.timeout_ms,
                                [process] { return process->running(); });
  } catch (const std::runtime_error& error) {
    std::cerr << "ethx fault: " << error.what() << "; the change may not have been applied\n";
    return 1;
  }
  if (!reply.value("ok", false)) {
    std::cerr << "ethx fault: the switch refused: " << reply.value("error", std::string("?"))
              << "\n";
    return 2;
  }
  if (options.json) {
    std::cout << reply.dump(2) << "\n";
  } else {
    std::cout << "ethx fault: '" << options.name << "' port " << change.port
              << " now injects: " << describe_port_faults(reply["faults"]) << "\n";
  }
  return 0;
}

}  // namespace ethx
