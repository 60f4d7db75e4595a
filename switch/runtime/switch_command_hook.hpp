// How a switch runtime hears of run-time commands (`ethx fault`, `ethx capture`) without knowing
// where they come from: it asks pending() between passes and in its idle waits (one atomic load),
// and runs serve() on its own forwarding thread, so the switch core needs no lock.
#pragma once

#include <functional>

#include "switch/capture/port_capture.hpp"
#include "switch/core/switch_core.hpp"

namespace ethx {

struct SwitchCommandHook {
  std::function<bool()> pending;
  std::function<void(SwitchCore&)> serve;
  // `ethx capture`'s recorder, fed by the runtime with every frame a port receives and sends
  // (PortCapture::tap); null when nobody serves commands.
  PortCapture* capture = nullptr;

  void tap(PortId port, std::span<const std::byte> frame) const {
    if (capture != nullptr) capture->tap(port, frame);
  }

  bool enabled() const { return static_cast<bool>(pending); }
  // Serves a pending command; true if there was one.
  bool poll(SwitchCore& core) const {
    if (!enabled() || !pending()) return false;
    serve(core);
    return true;
  }
};

}  // namespace ethx
