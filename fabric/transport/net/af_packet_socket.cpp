#include "fabric/transport/net/af_packet_socket.hpp"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>

#include "fabric/transport/net/netns_topology.hpp"
#include "packet-engine/wire.hpp"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

namespace ethx {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

sock_filter statement(std::uint16_t code, std::uint32_t k) {
  return sock_filter{code, 0, 0, k};
}
sock_filter jump(std::uint16_t code, std::uint32_t k, std::uint8_t jt, std::uint8_t jf) {
  return sock_filter{code, jt, jf, k};
}

// Accepts 0x88B5 and 0x88B6 frames, and IPv4/UDP to port 4791 if `rocev2`; drops the rest
// in the kernel, before they are queued to the socket.
std::vector<sock_filter> node_filter(bool rocev2) {
  constexpr std::uint32_t kAccept = 0x40000;  // bytes to keep: the whole frame
  std::vector<sock_filter> program;
  program.push_back(statement(BPF_LD | BPF_H | BPF_ABS, 12));                        // 0
  program.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, wire::kEtherTypeFabric, 0, 1));  // 1
  program.push_back(statement(BPF_RET | BPF_K, kAccept));                            // 2
  program.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, wire::kEtherTypeEcho, 0, 1));    // 3
  program.push_back(statement(BPF_RET | BPF_K, kAccept));                            // 4
  if (rocev2) {
    program.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IP, 0, 6));     // 5
    program.push_back(statement(BPF_LD | BPF_B | BPF_ABS, 23));             // 6 protocol
    program.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, 0, 4));  // 7
    program.push_back(statement(BPF_LDX | BPF_B | BPF_MSH, 14));            // 8 x = ihl*4
    program.push_back(statement(BPF_LD | BPF_H | BPF_IND, 14 + 2));         // 9 dst port
    program.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, 4791, 0, 1));         // 10
    program.push_back(statement(BPF_RET | BPF_K, kAccept));                 // 11
  }
  program.push_back(statement(BPF_RET | BPF_K, 0));
  return program;
}

}  // namespace

AfPacketSocket::AfPacketSocket(AfPacketOptions options) : options_(std::move(options)) {
  if (options_.batch == 0) options_.batch = 1;
  std::optional<netns::NetnsGuard> in_namespace;
  if (!options_.netns.empty()) in_namespace.emplace(options_.netns);
  ifindex_ = static_cast<int>(::if_nametoindex(options_.interface.c_str()));
  if (ifindex_ == 0) fail("AF_PACKET: interface '" + options_.interface + "'");
  // Protocol 0 until bound: the socket must not see other interfaces' frames meanwhile.
  fd_ = ::socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) fail("AF_PACKET socket (needs CAP_NET_RAW)");
  try {
    ifreq request{};
    std::strncpy(request.ifr_name, options_.interface.c_str(), IFNAMSIZ - 1);
    if (::ioctl(fd_, SIOCGIFMTU, &request) != 0) fail("SIOCGIFMTU " + options_.interface);
    max_frame_bytes_ = static_cast<std::size_t>(request.ifr_mtu) + wire::kEthernetHeaderBytes;
    slot_bytes_ = max_frame_bytes_ + 64;  // room to notice (MSG_TRUNC) longer frames
    tx_buffer_.resize(options_.batch * slot_bytes_);
    tx_lengths_.reserve(options_.batch);
    rx_buffer_.resize(options_.batch * slot_bytes_);

    const int one = 1;
    if (options_.qdisc_bypass &&
        ::setsockopt(fd_, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) != 0) {
      fail("PACKET_QDISC_BYPASS");
    }
    // Our own transmissions would otherwise come back to us on an ETH_P_ALL socket.
    if (::setsockopt(fd_, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) != 0) {
      fail("PACKET_IGNORE_OUTGOING");
    }
    if (::setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &options_.receive_buffer_bytes,
                     sizeof options_.receive_buffer_bytes) != 0) {
      (void)::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &options_.receive_buffer_bytes,
                         sizeof options_.receive_buffer_bytes);
    }
    if (options_.role == SocketRole::kNode) {
      std::vector<sock_filter> program = node_filter(options_.accept_rocev2);
      sock_fprog filter{static_cast<unsigned short>(program.size()), program.data()};
      if (::setsockopt(fd_, SOL_SOCKET, SO_ATTACH_FILTER, &filter, sizeof filter) != 0) {
        fail("SO_ATTACH_FILTER");
      }
    }
    sockaddr_ll address{};
    address.sll_family = AF_PACKET;
    address.sll_protocol = htons(ETH_P_ALL);
    address.sll_ifindex = ifindex_;
    if (::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
      fail("AF_PACKET bind to " + options_.interface);
    }
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

AfPacketSocket::~AfPacketSocket() {
  flush();
  ::close(fd_);
}

SendResult AfPacketSocket::try_send(std::span<const std::byte> frame) {
  if (frame.size() > max_frame_bytes_) {
    ++counters_.tx_too_large;
    return SendResult::kTooLarge;
  }
  if (tx_lengths_.size() == options_.batch) flush();
  if (tx_lengths_.size() == options_.batch) {
    ++counters_.tx_ring_full;
    return SendResult::kFull;
  }
  std::memcpy(tx_buffer_.data() + tx_lengths_.size() * slot_bytes_, frame.data(), frame.size());
  tx_lengths_.push_back(frame.size());
  return SendResult::kQueued;
}

bool AfPacketSocket::can_send() {
  if (tx_lengths_.size() == options_.batch) flush();
  return tx_lengths_.size() < options_.batch;
}

void AfPacketSocket::flush() {
  while (tx_first_ < tx_lengths_.size()) {
    const std::size_t count = tx_lengths_.size() - tx_first_;
    std::vector<iovec> iovs(count);
    std::vector<mmsghdr> messages(count);
    for (std::size_t i = 0; i < count; ++i) {
      iovs[i] =
          iovec{tx_buffer_.data() + (tx_first_ + i) * slot_bytes_, tx_lengths_[tx_first_ + i]};
      messages[i] = mmsghdr{};
      messages[i].msg_hdr.msg_iov = &iovs[i];
      messages[i].msg_hdr.msg_iovlen = 1;
    }
    ++counters_.wakeups;
    const int sent = ::sendmmsg(fd_, messages.data(), static_cast<unsigned>(count), MSG_DONTWAIT);
    if (sent > 0) {
      for (int i = 0; i < sent; ++i)
        counters_.tx_bytes += tx_lengths_[tx_first_ + static_cast<std::size_t>(i)];
      counters_.tx_frames += static_cast<std::uint64_t>(sent);
      tx_first_ += static_cast<std::size_t>(sent);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == ENOBUFS) return;  // device queue full: retry later
    // The kernel refused this frame (e.g. EMSGSIZE, ENETDOWN): count it and move on.
    ++counters_.tx_errors;
    ++tx_first_;
  }
  tx_lengths_.clear();
  tx_first_ = 0;
}

std::size_t AfPacketSocket::receive(std::size_t max, FrameSink& sink) {
  const std::size_t want = std::min(max, options_.batch);
  if (want == 0) return 0;
  std::vector<iovec> iovs(want);
  std::vector<mmsghdr> messages(want);
  for (std::size_t i = 0; i < want; ++i) {
    iovs[i] = iovec{rx_buffer_.data() + i * slot_bytes_, slot_bytes_};
    messages[i] = mmsghdr{};
    messages[i].msg_hdr.msg_iov = &iovs[i];
    messages[i].msg_hdr.msg_iovlen = 1;
  }
  const int got = ::recvmmsg(fd_, messages.data(), static_cast<unsigned>(want),
                             MSG_DONTWAIT | MSG_TRUNC, nullptr);
  if (got <= 0) return 0;
  std::size_t delivered = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(got); ++i) {
    const std::size_t length = messages[i].msg_len;
    if ((messages[i].msg_hdr.msg_flags & MSG_TRUNC) != 0 || length > max_frame_bytes_) {
      ++counters_.rx_truncated;  // longer than the interface MTU allows: counted, not served
      continue;
    }
    ++counters_.rx_frames;
    counters_.rx_bytes += length;
    sink.on_frame(std::span<const std::byte>(rx_buffer_.data() + i * slot_bytes_, length));
    ++delivered;
  }
  return delivered;
}

bool AfPacketSocket::has_input() {
  std::byte probe{};
  return ::recv(fd_, &probe, 1, MSG_PEEK | MSG_DONTWAIT | MSG_TRUNC) >= 0;
}

void AfPacketSocket::refresh_kernel_counters() {
  tpacket_stats stats{};
  socklen_t length = sizeof stats;
  if (::getsockopt(fd_, SOL_PACKET, PACKET_STATISTICS, &stats, &length) == 0) {
    counters_.rx_kernel_drops += stats.tp_drops;  // the kernel resets them on every read
  }
}

}  // namespace ethx
