// `ethx capture`'s commands as ethx-switch serves them (switch_command_box.hpp):
//   {"command": "capture-start", "port": P, "path": "/abs/file.pcap", "max_frames": K,
//    "duration_ns": D}      starts recording port P (K, D: 0 for no limit), ending a running one
//   {"command": "capture-status", "id": I}   ends the capture if its frames or time are used
//                                           up; a capture nobody asks about for 5 s ends too
//   {"command": "capture-stop", "id": I}
// Each answers {"ok": true, "capture": {"id", "active", "port", "path", "frames"[, "error"]}}
// ("error": writing the file failed), or {"ok": false, "error": "<option>: <why>"} naming the
// option of `ethx capture` that was wrong, or saying another capture replaced capture I.
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
