// How a node reaches its switch port, whatever the transport: shared-memory rings here,
// AF_XDP and AF_PACKET sockets behind the same interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>

namespace ethx {

class FrameSink {
 public:
  virtual void on_frame(std::span<const std::byte> frame) = 0;

 protected:
  ~FrameSink() = default;
};

class NodePort {
 public:
  virtual ~NodePort() = default;
  virtual const char* transport() const = 0;  // "shm", "afxdp", "afpacket"
  virtual std::size_t max_frame_bytes() const = 0;
  // False when the transmit path is full right now; the caller keeps the frame and retries.
  virtual bool try_send(std::span<const std::byte> frame) = 0;
  // Whether try_send would find room now.
  virtual bool can_send() const = 0;
  // After a batch of sends: tell the peer (one wake-up per batch, not per frame).
  virtual void kick() = 0;
  // Hands up to `max` received frames to `sink`; returns how many.
  virtual std::size_t receive(std::size_t max, FrameSink& sink) = 0;
  // Waits adaptively (spin, yield, block) until a frame arrives, `also_ready()` holds or
  // `timeout_ns` passes.
  virtual void wait(std::int64_t timeout_ns, const std::function<bool()>& also_ready) = 0;
  // Ends a wait() or wait_unowned() at once, from any thread (e.g. a vCPU handing the node
  // work).
  virtual void interrupt() = 0;
  // Whether receive() would find a frame now (may also push out frames queued for sending).
  virtual bool has_input() = 0;
  // Waits like wait() until `ready()` holds, the port's kernel object signals (a frame may
  // have arrived, or interrupt()) or `timeout_ns` passes, but touches none of the port's
  // user-space state: for a thread that does not own the port right now while another thread
  // may be using it. `ready()` decides whether there is work (under the caller's own lock).
  virtual void wait_unowned(std::int64_t timeout_ns, const std::function<bool()>& ready) = 0;
  // Sleeps up to `timeout_ns` (unless `ready()`) without watching for frames: for a thread that
  // leaves the port to another one for a while and must not be woken (nor make the sender pay a
  // wake-up) by every frame meanwhile. interrupt() ends it early.
  virtual void nap(std::int64_t timeout_ns, const std::function<bool()>& ready) = 0;
  // When the port itself next needs a call (receive, has_input) to run a timer of its own
  // (monotonic ns; the link layer's ACK delay or replay timer), for a caller that plans its
  // sleeps. std::nullopt: never (a plain transport port has no timers).
  virtual std::optional<std::uint64_t> next_timer_ns() const { return std::nullopt; }
  // Frames try_send took that the port itself still holds for sending (a link layer's queues,
  // waiting for credit): part of the caller's backlog for its writers' back-pressure.
  virtual std::size_t frames_queued() const { return 0; }
};

}  // namespace ethx
