#include "switch/runtime/switch_command_box.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "switch/runtime/capture_commands.hpp"
#include "switch/runtime/fault_change.hpp"

namespace ethx {
namespace {

void write_text(char* destination, std::uint32_t& bytes, const std::string& text) {
  const std::size_t length = std::min(text.size(), kSwitchCommandBytes);
  // Length-prefixed (bytes), not NUL-terminated: the reader takes exactly `bytes`.
  std::copy_n(text.data(), length, destination);
  bytes = static_cast<std::uint32_t>(length);
}

std::string read_text(const char* source, std::uint32_t bytes) {
  return std::string(source, std::min<std::size_t>(bytes, kSwitchCommandBytes));
}

nlohmann::json apply_fault_change(const nlohmann::json& request, SwitchCore& core) {
  nlohmann::json fields = request;
  fields.erase("command");
  const FaultChange change = FaultChange::from_json(fields);
  change.validate(core.port_count());
  const PortFaults faults = change.applied_to(core.faults(change.port));
  // A rate with no length would silently inject nothing.
  if (faults.delay_spike_rate > 0 && faults.delay_spike_ns == 0) {
    throw std::invalid_argument("delay_spike_us: port " + std::to_string(change.port) +
                                " has a delay spike rate but no spike length; give both");
  }
  core.set_faults(change.port, faults);
  return {{"ok", true},
          {"port", change.port},
          {"faults", port_faults_json(core.faults(change.port), core.port_up(change.port))}};
}

}  // namespace

nlohmann::json run_switch_command(const nlohmann::json& request, SwitchCore& core,
                                  PortCapture* capture) {
  try {
    const std::string command =
        request.is_object() ? request.value("command", std::string()) : std::string();
    if (capture != nullptr && is_capture_command(command)) {
      return run_capture_command(request, core, *capture);
    }
    if (command != "fault") {
      return {{"ok", false},
              {"error",
               "command: this switch knows \"fault\" and \"capture-start\", "
               "\"capture-status\", \"capture-stop\""}};
    }
    return apply_fault_change(request, core);
  } catch (const std::exception& error) {
    return {{"ok", false}, {"error", error.what()}};
  }
}

SwitchCommandServer::SwitchCommandServer(ControlRegion& control)
    : box_(control.header().switch_command),
      last_seen_(box_.request_seq.load(std::memory_order_acquire)) {}

bool SwitchCommandServer::pending() const {
  return box_.request_seq.load(std::memory_order_acquire) != last_seen_;
}

void SwitchCommandServer::serve(SwitchCore& core) {
  const std::uint32_t sequence = box_.request_seq.load(std::memory_order_acquire);
  if (sequence == last_seen_) return;
  last_seen_ = sequence;
  const nlohmann::json request =
      nlohmann::json::parse(read_text(box_.request, box_.request_bytes), nullptr, false);
  const nlohmann::json reply = request.is_discarded()
                                   ? nlohmann::json{{"ok", false}, {"error", "request: not JSON"}}
                                   : run_switch_command(request, core, &capture_);
  write_text(box_.reply, box_.reply_bytes, reply.dump());
  box_.reply_seq.store(sequence, std::memory_order_release);
}

SwitchCommandHook SwitchCommandServer::hook() {
  return {[this] { return pending(); }, [this](SwitchCore& core) { serve(core); }, &capture_};
}

nlohmann::json send_switch_command(ControlRegion& control, const nlohmann::json& request,
                                   std::int64_t timeout_ms,
                                   const std::function<bool()>& switch_alive) {
  SwitchCommandBox& box = control.header().switch_command;
  const std::string text = request.dump();
  if (text.size() > kSwitchCommandBytes) throw std::invalid_argument("switch command too long");
  write_text(box.request, box.request_bytes, text);
  const std::uint32_t sequence = box.request_seq.load(std::memory_order_relaxed) + 1;
  box.request_seq.store(sequence, std::memory_order_release);
  // Polled, not waited on coordinator_bell: an attached `ethx bench` may be that bell's one
  // sleeper, and the switch answers within one idle sleep (50 ms at most) anyway.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (box.reply_seq.load(std::memory_order_acquire) != sequence) {
    if (!switch_alive()) throw std::runtime_error("ethx-switch is not running");
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("ethx-switch did not answer within " + std::to_string(timeout_ms) +
                               " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  nlohmann::json reply =
      nlohmann::json::parse(read_text(box.reply, box.reply_bytes), nullptr, false);
  if (reply.is_discarded()) throw std::runtime_error("ethx-switch answered with invalid JSON");
  return reply;
}

}  // namespace ethx
