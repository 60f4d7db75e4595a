// Shutdown signals for the long-running fabric processes (switch and nodes).
#pragma once

#include <atomic>
#include <stdexcept>

namespace ethx {

// Set by SIGINT/SIGTERM/SIGHUP; the main loops poll it and exit cleanly (unlinking their
// shared memory).
extern std::atomic<bool> g_stop_requested;

// Installs the handlers, and asks the kernel to send SIGTERM when the parent dies, so a
// killed `ethx bench` does not leave orphans behind.
void install_stop_signals(bool stop_with_parent);

// Thrown by waits that noticed g_stop_requested, so destructors clean up on the way out.
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};

}  // namespace ethx
