// Which of a VM's ethx-agent ports a host process uses (docs/agent-protocol.md). A QEMU socket
// chardev serves one client at a time, so each command takes a port for itself: an exclusive
// flock on <log dir>/vm-<k>.agent-<N>.lock, holding the holder's PID for error messages.
// Several `ethx run`s and `ethx guest`s thus use different ports; when all are taken the
// next one waits (inotify on the lock files, no polling) and, after its timeout, names the
// holders.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ethx {

// Ports VM `vm` has: its sockets vm-<k>.agent-<N>.sock for N = 0, 1, ... (QEMU creates them
// all when it starts; vm_plan.cpp decides how many).
std::size_t count_agent_ports(const std::string& log_directory, std::size_t vm);

class AgentPortLease {
 public:
  // Takes the first free port of VM `vm`, waiting up to `timeout_ms` while QEMU has not made
  // the sockets yet or every port is taken. Throws std::runtime_error naming the VM (and the
  // PIDs holding its ports), Interrupted on a stop request (process_signals.hpp).
  static AgentPortLease acquire(const std::string& log_directory, std::size_t vm,
                                std::int64_t timeout_ms);

  AgentPortLease(AgentPortLease&& other) noexcept;
  AgentPortLease& operator=(AgentPortLease&& other) noexcept;
  AgentPortLease(const AgentPortLease&) = delete;
  AgentPortLease& operator=(const AgentPortLease&) = delete;
  ~AgentPortLease();

  std::size_t port() const { return port_; }
  const std::string& socket_path() const { return socket_path_; }

 private:
  AgentPortLease(int fd, std::size_t port, std::string socket_path)
      : fd_(fd), port_(port), socket_path_(std::move(socket_path)) {}
  int fd_ = -1;
  std::size_t port_ = 0;
  std::string socket_path_;
};

// "pid 123 (ethx run -- sleep 30)" for the holder of a lock file; "" if none is recorded.
std::string describe_lock_holder(const std::string& lock_path);

}  // namespace ethx
