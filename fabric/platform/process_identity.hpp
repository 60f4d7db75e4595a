// A process named by PID and start time, so that a record written earlier (a run directory,
// a bench run record) never leads to signalling an unrelated process that reused the PID.
#pragma once

#include <sys/types.h>

#include <string>

namespace ethx {

// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); empty if no such
// process exists.
std::string process_start_time(pid_t pid);

// True if `pid` runs and started at `start_time` (as returned by process_start_time).
bool same_process_running(pid_t pid, const std::string& start_time);

// Ends the process if it is still the recorded one: SIGTERM, then SIGKILL after grace_ms.
// Returns true if it was running. Works for processes that are not our children.
bool terminate_recorded_process(pid_t pid, const std::string& start_time, long grace_ms = 2000);

}  // namespace ethx
