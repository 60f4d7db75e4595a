// FrameSocket over an AF_PACKET SOCK_RAW socket bound to one interface: the fallback where
// XDP cannot attach, and the baseline AF_XDP is measured against. Batched with
// sendmmsg/recvmmsg, PACKET_QDISC_BYPASS on, its own transmitted frames ignored; a node's
// socket carries a classic BPF filter so it only sees the fabric's EtherTypes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "fabric/transport/net/frame_socket.hpp"

namespace ethx {

struct AfPacketOptions {
  std::string interface;
  std::string netns;  // network namespace to open the socket in; empty: the calling thread's
  SocketRole role = SocketRole::kNode;
  bool accept_rocev2 = false;  // node role: also take IPv4/UDP port 4791
  std::size_t batch = 64;      // frames per sendmmsg/recvmmsg
  bool qdisc_bypass = true;
  int receive_buffer_bytes = 4 << 20;
};

class AfPacketSocket final : public FrameSocket {
 public:
  // Opens and binds the socket in the calling thread's network namespace. Throws
  // std::system_error with the failing step on error.
  explicit AfPacketSocket(AfPacketOptions options);
  ~AfPacketSocket() override;
  AfPacketSocket(const AfPacketSocket&) = delete;
  AfPacketSocket& operator=(const AfPacketSocket&) = delete;

  const char* transport() const override { return "afpacket"; }
  const std::string& interface_name() const override { return options_.interface; }
  std::size_t max_frame_bytes() const override { return max_frame_bytes_; }
  int fd() const override { return fd_; }
  SendResult try_send(std::span<const std::byte> frame) override;
  bool can_send() override;
  void flush() override;
  std::size_t receive(std::size_t max, FrameSink& sink) override;
  bool has_input() override;
  void refresh_kernel_counters() override;

 private:
  AfPacketOptions options_;
  int fd_ = -1;
  int ifindex_ = 0;
  std::size_t max_frame_bytes_ = 0;
  std::size_t slot_bytes_ = 0;
  std::vector<std::byte> tx_buffer_;  // options_.batch slots of slot_bytes_
  std::vector<std::size_t> tx_lengths_;
  std::size_t tx_first_ = 0;  // frames before this one were sent by a partial sendmmsg
  std::vector<std::byte> rx_buffer_;
};

}  // namespace ethx
