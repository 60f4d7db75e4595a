// FrameSocket over an AF_XDP socket (libxdp xsk API) with ethx's own XDP program: one UMEM,
// batched rx/tx/fill/completion rings, need-wakeup, zero-copy when asked for and the driver
// offers it (real NICs), copy mode otherwise (veth). See docs/afxdp.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/transport/net/afxdp_program.hpp"
#include "fabric/transport/net/frame_socket.hpp"

struct xsk_socket;
struct xsk_umem;

namespace ethx {

struct AfXdpOptions {
  std::string interface;
  // Network namespace (/var/run/netns name) to create and destroy the socket in; empty: the
  // calling thread's. The thread is moved there only for the constructor and destructor.
  std::string netns;
  std::uint32_t queue = 0;  // veths here have exactly one
  SocketRole role = SocketRole::kNode;
  bool accept_rocev2 = false;
  bool try_zero_copy = true;  // falls back to copy mode on EOPNOTSUPP (veth)
  XdpAttachMode attach_mode = XdpAttachMode::kAuto;
  std::uint32_t frame_size = 2048;   // UMEM chunk; the largest frame is frame_size - 256 B
  std::uint32_t frame_count = 4096;  // half for receive (fill ring), half for transmit
  std::uint32_t batch = 64;          // frames per ring operation
  std::int64_t busy_retry_ns = 1'000'000'000;  // keep retrying EBUSY binds this long
  std::string program_path;                    // empty: find_xdp_object()
};

// The kernel's own counters for the socket (XDP_STATISTICS).
struct AfXdpKernelStats {
  std::uint64_t rx_dropped = 0;
  std::uint64_t rx_invalid_descs = 0;
  std::uint64_t tx_invalid_descs = 0;
  std::uint64_t rx_ring_full = 0;
  std::uint64_t rx_fill_ring_empty = 0;
  std::uint64_t tx_ring_empty = 0;
};

// One thread uses a socket at a time (like every FrameSocket): the rings are single-producer,
// single-consumer between this process and the kernel.
class AfXdpSocket final : public FrameSocket {
 public:
  // Creates everything in the calling thread's network namespace; destroy it from the same
  // namespace (detaching the XDP program needs it). Throws std::runtime_error with a clear
  // message on failure.
  explicit AfXdpSocket(AfXdpOptions options);
  ~AfXdpSocket() override;
  AfXdpSocket(const AfXdpSocket&) = delete;
  AfXdpSocket& operator=(const AfXdpSocket&) = delete;

  const char* transport() const override { return "afxdp"; }
  const std::string& interface_name() const override { return options_.interface; }
  std::size_t max_frame_bytes() const override { return max_frame_bytes_; }
  int fd() const override;
  SendResult try_send(std::span<const std::byte> frame) override;
  bool can_send() override;
  void flush() override;
  std::size_t receive(std::size_t max, FrameSink& sink) override;
  bool has_input() override;
  void refresh_kernel_counters() override;

  bool zero_copy() const { return zero_copy_; }
  const char* xdp_mode() const { return program_->mode_name(); }
  AfXdpKernelStats kernel_stats() const;
  XdpProgramStats program_stats() const { return program_->stats(); }

  // Internal state (rings, UMEM); defined in the .cpp so libxdp's headers stay out of users.
  struct Rings;

 private:
  void create_socket();
  void reclaim_completions();
  void refill();

  AfXdpOptions options_;
  std::size_t max_frame_bytes_ = 0;
  std::unique_ptr<EthxXdpProgram> program_;
  std::unique_ptr<Rings> rings_;
  bool zero_copy_ = false;
  std::vector<std::uint64_t> free_tx_frames_;  // UMEM addresses of idle transmit chunks
  std::uint32_t tx_unsent_ = 0;                // submitted to the tx ring since the last kick
  std::vector<std::uint64_t> refill_;          // received chunks not yet back on the fill ring
};

}  // namespace ethx
