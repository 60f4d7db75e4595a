// What `ethx fault` and `ethx capture` share to talk to a running fabric's switch through its
// command mailbox (switch/runtime/switch_command_box.hpp): one client at a time (a lock file in
// the run directory), and the switch's recorded process to tell whether it still runs.
#pragma once

#include <string>

#include "fabric/control/run_state.hpp"

namespace ethx {

// One client of the switch's single mailbox at a time. Not the run directory's own lock: that
// one is held by an attached `ethx bench` for its whole run, and changing faults or capturing
// during a benchmark is the point.
class MailboxLock {
 public:
  explicit MailboxLock(const RunDirectory& directory);
  ~MailboxLock();
  MailboxLock(const MailboxLock&) = delete;
  MailboxLock& operator=(const MailboxLock&) = delete;

 private:
  int fd_;
};

// The fabric's switch process, or nullptr if none is recorded.
const RecordedProcess* switch_process(const RunState& state);

}  // namespace ethx
