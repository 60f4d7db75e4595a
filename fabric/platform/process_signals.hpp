// Shutdown signals for the long-running fabric processes (switch and nodes).
#pragma once

#include <atomic>
#include <stdexcept>
#include <string>

namespace ethx {

// Set by SIGINT/SIGTERM/SIGHUP; the main loops poll it and exit cleanly (unlinking their
// shared memory).
extern std::atomic<bool> g_stop_requested;

// Installs the handlers, and asks the kernel to send SIGTERM when the parent dies, so a
// killed `ethx bench` does not leave orphans behind.
void install_stop_signals(bool stop_with_parent);

// Stops the command as SIGINT does, for a reason worth one line (process_watcher.hpp: a
// process it coordinates exited): g_stop_requested is set, waits throw Interrupted, and the
// command prints the reason and exits with status 1. The first reason is kept.
void request_stop(const std::string& reason);
// The reason given to request_stop(); empty if none (a signal, or no stop).
std::string stop_reason();

// Thrown by waits that noticed g_stop_requested, so destructors clean up on the way out.
// What() is the stop reason when there is one, so a command that prints what() names the
// process that exited.
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error(stop_reason().empty() ? "interrupted" : stop_reason()) {}
};

// Throws Interrupted if a stop was requested: after work whose errors were caught (threads,
// optional parts of a suite), so a stop is not mistaken for a failed part.
void throw_if_stop_requested();

}  // namespace ethx
