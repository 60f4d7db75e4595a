// The host side of a guest's command agent (qemu-device/guest/init): a line of `ethx-guest`
// arguments goes to the VM's second serial port (a QEMU chardev socket); the answer comes back
// between ETHX-BEGIN and ETHX-END <exit status>. One command at a time per VM.
#pragma once

#include <cstdint>
#include <string>

#include "fabric/vm/guest_console.hpp"

namespace ethx {

class GuestAgent {
 public:
  // Connects to the agent socket of a running VM (retrying until `timeout_ms` while QEMU
  // creates it). Throws std::runtime_error naming the path.
  GuestAgent(std::string socket_path, std::int64_t timeout_ms);
  ~GuestAgent();
  GuestAgent(const GuestAgent&) = delete;
  GuestAgent& operator=(const GuestAgent&) = delete;

  // Runs `ethx-guest <arguments>` in the guest. Throws std::runtime_error on a timeout or a
  // closed connection (the VM died), Interrupted on Ctrl-C.
  GuestBlock run(const std::string& arguments, std::int64_t timeout_ms);

 private:
  std::string path_;
  int fd_ = -1;
  std::string pending_;  // bytes received after the last answer
};

}  // namespace ethx
