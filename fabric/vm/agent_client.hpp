// The host side of ethx-agent (docs/agent-protocol.md): one command on one virtio-serial port
// of a VM. The constructor leases a free port (agent_port_lease.hpp), connects to its QEMU
// socket and exchanges Hello; then the command is started and driven without blocking: poll
// fd(), call read_events() and write_pending(). run_agent_command() does all of it for callers
// that just want the output (`ethx guest`, GuestAgent). `ethx run` drives several at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fabric/vm/agent_port_lease.hpp"
#include "qemu-device/agent-protocol/agent_protocol.hpp"

namespace ethx {

struct AgentEvent {
  enum class Kind {
    kStarted,  // exec succeeded (pid)
    kStdout,   // data
    kStderr,   // data
    kError,    // the agent refused or failed something: code, data (one line)
    kExit,     // the command ended: exit_status, signal; the last event of a command
    kClosed,   // the connection closed before the Exit: the VM (or QEMU) went away
  };
  Kind kind = Kind::kStarted;
  std::string data;
  agent::ErrorCode code = agent::ErrorCode::kBadRequest;
  std::uint32_t exit_status = 0;
  std::uint32_t signal = 0;
  std::uint32_t pid = 0;
};

class AgentClient {
 public:
  // Throws std::runtime_error naming the VM and port (no socket, no Hello answer within
  // `timeout_ms`, another protocol version), Interrupted on a stop request.
  AgentClient(const std::string& log_directory, std::size_t vm, std::int64_t timeout_ms);
  ~AgentClient();
  AgentClient(const AgentClient&) = delete;
  AgentClient& operator=(const AgentClient&) = delete;

  std::size_t vm() const { return vm_; }
  std::size_t port() const { return lease_.port(); }
  bool shared_root() const { return shared_root_; }  // the guest has /run/ethx-host

  // Queues the Start (throws agent::ProtocolError for a request that cannot be encoded).
  void start(const agent::StartRequest& request);
  void send_stdin(const char* data, std::size_t size);
  void send_stdin_eof();
  // SIGTERM to the command's process group now, SIGKILL after `grace_ms`.
  void stop(std::uint32_t grace_ms);

  int fd() const { return fd_; }
  bool wants_write() const { return outbox_sent_ < outbox_.size(); }
  std::size_t unsent_bytes() const { return outbox_.size() - outbox_sent_; }
  // Writes what is queued, as far as the socket takes it (non-blocking).
  void write_pending();
  // What arrived (non-blocking; nothing if nothing did).
  std::vector<AgentEvent> read_events();

 private:
  void connect_socket(std::int64_t deadline_ms);
  void handshake(std::int64_t deadline_ms, std::int64_t timeout_ms);
  void events_from_frames(std::vector<AgentEvent>& events);
  std::string where() const;

  std::size_t vm_;
  AgentPortLease lease_;
  int fd_ = -1;
  bool shared_root_ = false;
  agent::FrameDecoder decoder_;
  std::uint64_t reported_rejects_ = 0;
  std::vector<std::uint8_t> outbox_;
  std::size_t outbox_sent_ = 0;
};

struct AgentCommandResult {
  std::uint32_t exit_status = 0;
  std::uint32_t signal = 0;
  std::vector<std::string> errors;  // the agent's Error lines
};

// Runs `request` to its end on `client`, handing stdout (false) and stderr (true) bytes to
// `on_output` as they come. Throws std::runtime_error when the VM goes away or `timeout_ms`
// passes (the command is stopped first), Interrupted on a stop request (likewise).
AgentCommandResult run_agent_command(
    AgentClient& client, const agent::StartRequest& request, std::int64_t timeout_ms,
    const std::function<void(bool is_stderr, const std::string& data)>& on_output);

}  // namespace ethx
