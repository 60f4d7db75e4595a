// `ethx capture`'s commands as ethx-switch serves them (switch_command_box.hpp):
//   {"command": "capture-start", "port": P, "path": "/abs/file.pcap", "max_frames": K,
//    "duration_ns": D}      starts recording port P (K, D: 0 for no limit), ending a running one
//   {"command": "capture-status"}   ends the capture if its frames or time are used up
//   {"command": "capture-stop"}
// Each answers {"ok": true, "capture": {"active", "port", "path", "frames"}}, or {"ok": false,
// "error": "<option>: <why>"} naming the option of `ethx capture` that was wrong.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "switch/capture/port_capture.hpp"
#include "switch/core/switch_core.hpp"

namespace ethx {

bool is_capture_command(const std::string& command);
// Throws std::invalid_argument (bad request) or std::runtime_error (file), naming the option.
nlohmann::json run_capture_command(const nlohmann::json& request, const SwitchCore& core,
                                   PortCapture& capture);

}  // namespace ethx
