// Both ends of the switch's command mailbox in the control region (SwitchCommandBox): ethx-switch
// serves `{"command": "fault", ...FaultChange}` and the capture commands (capture_commands.hpp)
// on its forwarding thread; `ethx fault` and `ethx capture` post one and wait for the answer
// with a deadline.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "fabric/transport/shm/control_region.hpp"
#include "switch/capture/port_capture.hpp"
#include "switch/runtime/switch_command_hook.hpp"

namespace ethx {

// Switch side. Commands posted before it was made (to a switch that has since been restarted)
// are not served: their client has given up on them.
class SwitchCommandServer {
 public:
  explicit SwitchCommandServer(ControlRegion& control);
  bool pending() const;
  // Runs the pending command on `core` and posts the answer: {"ok": true, "port": P,
  // "faults": port_faults_json(...)} or {"ok": false, "error": "<field>: <why>"}.
  void serve(SwitchCore& core);
  // The hook for the runtimes; the server must outlive it.
  SwitchCommandHook hook();

 private:
  SwitchCommandBox& box_;
  std::uint32_t last_seen_;
  PortCapture capture_;  // `ethx capture`'s recorder, fed through the hook's tap
};

// The answer to `request` for `core` (what serve() posts); never throws. Capture commands
// (capture_commands.hpp) need `capture`; without one they are unknown commands.
nlohmann::json run_switch_command(const nlohmann::json& request, SwitchCore& core,
                                  PortCapture* capture = nullptr);

// Client side: posts `request` and returns the switch's answer. Throws std::runtime_error when
// no answer came within timeout_ms, or as soon as switch_alive() is false. The caller makes sure
// it is the only client (a lock file).
nlohmann::json send_switch_command(ControlRegion& control, const nlohmann::json& request,
                                   std::int64_t timeout_ms,
                                   const std::function<bool()>& switch_alive);

}  // namespace ethx
