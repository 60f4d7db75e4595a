// One interface for the transports that carry Ethernet frames on a real (or veth) interface:
// AF_XDP (afxdp_socket.hpp) and AF_PACKET (af_packet_socket.hpp). SocketNodePort turns any of
// them into the NodePort that NodeRuntime runs over; the socket switch runtime polls many.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>

#include "fabric/transport/doorbell.hpp"
#include "fabric/transport/node_port.hpp"

namespace ethx {

// A frame that cannot fit the transport's buffers. Never dropped silently: try_send reports
// it (and counts it); SocketNodePort throws this.
class FrameTooLarge : public std::length_error {
 public:
  using std::length_error::length_error;
};

enum class SendResult : std::uint8_t {
  kQueued,    // in the transmit ring (or batch); flush() sends it
  kFull,      // no room now: keep the frame and retry after flush()/receive()
  kTooLarge,  // longer than max_frame_bytes(): counted in tx_too_large, never sent
};

struct FrameSocketCounters {
  std::uint64_t rx_frames = 0;
  std::uint64_t rx_bytes = 0;
  std::uint64_t tx_frames = 0;  // handed to the kernel
  std::uint64_t tx_bytes = 0;
  std::uint64_t tx_too_large = 0;
  std::uint64_t tx_ring_full = 0;  // try_send found no room
  std::uint64_t tx_errors = 0;     // the kernel refused a frame (AF_PACKET sendmmsg)
  std::uint64_t rx_too_large = 0;  // AF_XDP: frames the XDP program refused to copy
  std::uint64_t rx_truncated = 0;  // AF_PACKET: a frame longer than the receive buffer
  std::uint64_t wakeups = 0;       // syscalls made to kick the kernel (need-wakeup)
  std::uint64_t rx_kernel_drops = 0;
  std::uint64_t rx_refill_deferred = 0;  // AF_XDP: the fill ring looked full; chunks kept for later
                                         // // what the kernel reports lost (ring full, no buffer)
};

// What a transport's socket is for: a node takes only the fabric's EtherTypes (0x88B5, 0x88B6,
// and RoCEv2 when asked); a switch port takes every frame.
enum class SocketRole : std::uint8_t { kNode, kSwitchPort };

class FrameSocket {
 public:
  virtual ~FrameSocket() = default;
  virtual const char* transport() const = 0;  // "afxdp", "afpacket"
  virtual const std::string& interface_name() const = 0;
  // The largest frame (Ethernet header included, no FCS) it can send and receive.
  virtual std::size_t max_frame_bytes() const = 0;
  // The file descriptor that polls readable when frames arrived (for poll/epoll).
  virtual int fd() const = 0;

  virtual SendResult try_send(std::span<const std::byte> frame) = 0;
  virtual bool can_send() = 0;
  // Hands queued frames to the kernel (one syscall per batch, only when needed).
  virtual void flush() = 0;
  // Hands up to `max` received frames to `sink`; returns how many. Never blocks.
  virtual std::size_t receive(std::size_t max, FrameSink& sink) = 0;
  // Cheap check whether receive() would find a frame (a memory read for AF_XDP).
  virtual bool has_input() = 0;

  // Counters; refresh_kernel_counters() reads the kernel's own (a syscall).
  const FrameSocketCounters& counters() const { return counters_; }
  virtual void refresh_kernel_counters() {}

 protected:
  FrameSocketCounters counters_;
};

// Adaptive waiting on file descriptors: spin on `ready()` for a short, adaptive budget, yield,
// then block in ppoll() on the given descriptors. Uses the same WaitPolicy (and environment
// overrides) as the shared-memory doorbells.
class PollWaiter {
 public:
  explicit PollWaiter(shm::WaitPolicy policy = shm::WaitPolicy::from_environment());
  // Waits until ready() or timeout_ns (< 0: block at most one policy.max_sleep_ns slice).
  // `fds` are polled for POLLIN in the blocking phase. Returns ready().
  bool wait(std::span<const int> fds, const std::function<bool()>& ready, std::int64_t timeout_ns);
  const shm::WaitStats& stats() const { return stats_; }

 private:
  shm::WaitPolicy policy_;
  shm::WaitStats stats_;
  std::int64_t spin_budget_ns_;
  bool idle_ = false;
};

// A NodePort over one FrameSocket: what NodeRuntime runs over on AF_XDP and AF_PACKET.
class SocketNodePort final : public NodePort {
 public:
  explicit SocketNodePort(std::unique_ptr<FrameSocket> socket);
  ~SocketNodePort() override;

  const char* transport() const override { return socket_->transport(); }
  std::size_t max_frame_bytes() const override { return socket_->max_frame_bytes(); }
  // Throws FrameTooLarge for a frame longer than max_frame_bytes().
  bool try_send(std::span<const std::byte> frame) override;
  bool can_send() const override { return socket_->can_send(); }
  void kick() override { socket_->flush(); }
  std::size_t receive(std::size_t max, FrameSink& sink) override;
  void wait(std::int64_t timeout_ns, const std::function<bool()>& also_ready) override;

  // Ends a blocked wait() from another thread (e.g. to stop a serving node).
  void interrupt() override;
  bool has_input() override { return socket_->has_input(); }
  void wait_unowned(std::int64_t timeout_ns, const std::function<bool()>& ready) override;
  void nap(std::int64_t timeout_ns, const std::function<bool()>& ready) override;
  FrameSocket& socket() { return *socket_; }
  const shm::WaitStats& wait_stats() const { return waiter_.stats(); }

 private:
  std::unique_ptr<FrameSocket> socket_;
  PollWaiter waiter_;
  PollWaiter unowned_waiter_;  // wait_unowned()'s own adaptive state: another thread owns waiter_
  int event_fd_ = -1;
};

}  // namespace ethx
