// A guest command as one call, on ethx-agent (agent_client.hpp): `ethx-guest <arguments>`, or
// after a `!` a shell command line (`sh -c`), with stdin from /dev/null; its stdout and stderr
// together, and its exit status. Each run() takes a free agent port of the VM for itself, so
// runs from several threads or processes (and `ethx run`s) proceed at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "fabric/vm/guest_console.hpp"

namespace ethx {

class GuestAgent {
 public:
  // The agent of VM `vm` of the fabric whose logs (and QEMU sockets) are in `log_directory`.
  // `connect_timeout_ms` bounds each run's wait for a port, the connection and the agent's
  // Hello.
  GuestAgent(std::string log_directory, std::size_t vm, std::int64_t connect_timeout_ms);

  // Runs the command in the guest. Throws std::runtime_error on a timeout (the command is
  // stopped) or when the VM goes away, Interrupted on Ctrl-C or a stop request.
  // `working_directory` (absolute, on the host): the command runs there, the host's directory
  // bound over the guest's as `ethx run` does, so a host directory under the guest's own /tmp
  // or /run is seen too. Empty: the guest's /.
  GuestBlock run(const std::string& arguments, std::int64_t timeout_ms,
                 const std::string& working_directory = {});

 private:
  std::string log_directory_;
  std::size_t vm_;
  std::int64_t connect_timeout_ms_;
};

}  // namespace ethx
