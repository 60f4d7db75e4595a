#include "switch/runtime/capture_commands.hpp"

#include <stdexcept>

namespace ethx {
namespace {

nlohmann::json capture_status(const PortCapture& capture) {
  nlohmann::json status = {{"id", capture.id()},
                           {"active", capture.active()},
                           {"port", capture.request().port},
                           {"path", capture.request().path},
                           {"frames", capture.frames()}};
  if (!capture.error().empty()) status["error"] = "-w: " + capture.error();
  return status;
}

// Status and stop name the capture they mean: one that another `ethx capture` replaced is
// not theirs to report on or to stop.
void check_id(const nlohmann::json& request, const PortCapture& capture) {
  const auto id = request.value("id", std::uint64_t{0});
  if (id != capture.id()) {
    throw std::invalid_argument("capture: another `ethx capture` replaced this one (now port " +
                                std::to_string(capture.request().port) + " into " +
                                capture.request().path + ")");
  }
}

CaptureRequest request_from(const nlohmann::json& request, const SwitchCore& core) {
  CaptureRequest capture;
  const nlohmann::json& given = request.at("port");
  if (!given.is_number_integer()) throw std::invalid_argument("--port: must be a whole number");
  const auto port = given.get<long long>();
  if (port < 0 || static_cast<unsigned long long>(port) >= core.port_count()) {
    throw std::invalid_argument("--port: " + std::to_string(port) +
                                " is not a port of this switch (" +
                                std::to_string(core.port_count()) + " ports: 0.." +
                                std::to_string(core.port_count() - 1) + ")");
  }
  capture.port = static_cast<std::uint32_t>(port);
  capture.path = request.at("path").get<std::string>();
  if (capture.path.empty() || capture.path.front() != '/') {
    throw std::invalid_argument("-w: the switch needs an absolute path (got \"" + capture.path +
                                "\")");
  }
  capture.max_frames = request.value("max_frames", std::uint64_t{0});
  capture.duration_ns = request.value("duration_ns", TimeNs{0});
  return capture;
}

}  // namespace

bool is_capture_command(const std::string& command) {
  return command == "capture-start" || command == "capture-status" || command == "capture-stop";
}

nlohmann::json run_capture_command(const nlohmann::json& request, const SwitchCore& core,
                                   PortCapture& capture) {
  const std::string command = request.at("command").get<std::string>();
  if (command == "capture-start") {
    const CaptureRequest wanted = request_from(request, core);
    try {
      capture.start(wanted);
    } catch (const std::runtime_error& error) {
      throw std::runtime_error(std::string("-w: ") + error.what());
    }
  } else if (command == "capture-stop") {
    check_id(request, capture);
    capture.stop();
  } else {
    check_id(request, capture);
    capture.watched();
    capture.poll();
  }
  return {{"ok", true}, {"capture", capture_status(capture)}};
}

}  // namespace ethx
