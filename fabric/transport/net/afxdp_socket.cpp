#include "fabric/transport/net/afxdp_socket.hpp"
#include "fabric/platform/clock.hpp"

#include <linux/if_xdp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xdp/xsk.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "fabric/transport/doorbell.hpp"
#include "fabric/transport/net/netns_topology.hpp"

namespace ethx {

// The UMEM and the four rings, as in the xdp-tutorial: small named parts.
struct UmemArea {
  void* base = nullptr;
  std::size_t bytes = 0;
};

struct AfXdpSocket::Rings {
  UmemArea area;
  xsk_umem* umem = nullptr;
  xsk_ring_prod fill{};
  xsk_ring_cons completion{};
  xsk_socket* socket = nullptr;
  xsk_ring_cons rx{};
  xsk_ring_prod tx{};
  std::uint32_t ring_size = 0;

  ~Rings() {
    if (socket != nullptr) xsk_socket__delete(socket);
    if (umem != nullptr) xsk_umem__delete(umem);
    if (area.base != nullptr) ::munmap(area.base, area.bytes);
  }
};

namespace {

constexpr std::uint32_t kXdpHeadroom = 256;  // XDP_PACKET_HEADROOM: copy mode keeps it free

}  // namespace

AfXdpSocket::AfXdpSocket(AfXdpOptions options) : options_(std::move(options)) {
  const std::uint32_t frame_size = options_.frame_size;
  if (frame_size < 2048 || frame_size > 4096 || (frame_size & (frame_size - 1)) != 0) {
    throw std::invalid_argument("AF_XDP: frame_size must be 2048 or 4096");
  }
  if (options_.frame_count < 64 || (options_.frame_count & (options_.frame_count - 1)) != 0) {
    throw std::invalid_argument("AF_XDP: frame_count must be a power of two >= 64");
  }
  if (options_.batch == 0) options_.batch = 1;
  std::optional<netns::NetnsGuard> in_namespace;
  if (!options_.netns.empty()) in_namespace.emplace(options_.netns);
  max_frame_bytes_ = frame_size - kXdpHeadroom;

  XdpProgramOptions program_options;
  program_options.switch_port = options_.role == SocketRole::kSwitchPort;
  program_options.accept_rocev2 = options_.accept_rocev2;
  program_options.max_frame_bytes = static_cast<std::uint32_t>(max_frame_bytes_);
  program_options.mode = options_.attach_mode;
  program_options.object_path = options_.program_path;
  program_ = std::make_unique<EthxXdpProgram>(options_.interface, program_options);

  // Right after a previous socket on this queue closed, the bind fails with EBUSY for
  // 50-200 ms (measured here, docs/sources.md): retry with backoff.
  const std::int64_t deadline = monotonic_ns() + options_.busy_retry_ns;
  std::chrono::milliseconds backoff(5);
  for (;;) {
    try {
      create_socket();
      break;
    } catch (const std::system_error& error) {
      rings_.reset();
      if (error.code().value() != EBUSY || monotonic_ns() >= deadline) {
        throw std::runtime_error(
            std::string("AF_XDP on ") + options_.interface + ": " + error.what() +
            (error.code().value() == EBUSY ? " (queue still busy after retrying for 1 s)" : ""));
      }
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
    }
  }
}

void AfXdpSocket::create_socket() {
  auto rings = std::make_unique<Rings>();
  const std::uint32_t frame_size = options_.frame_size;
  const std::uint32_t half = options_.frame_count / 2;
  rings->ring_size = half;
  // The fill ring is twice the receive chunks (as in the kernel's xdpsock sample): the kernel
  // publishes how far it consumed the fill ring lazily, only when its cached window runs out,
  // so with a ring of exactly `half` entries chunks it already turned into received frames
  // would still look unconsumed, and giving them back would find the ring full.
  rings->area.bytes = static_cast<std::size_t>(options_.frame_count) * frame_size;
  rings->area.base = ::mmap(nullptr, rings->area.bytes, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (rings->area.base == MAP_FAILED) {
    rings->area.base = nullptr;
    throw std::system_error(errno, std::generic_category(), "UMEM mmap");
  }
  xsk_umem_config umem_config{};
  umem_config.fill_size = options_.frame_count;
  umem_config.comp_size = half;
  umem_config.frame_size = frame_size;
  umem_config.frame_headroom = 0;
  int result = xsk_umem__create(&rings->umem, rings->area.base, rings->area.bytes, &rings->fill,
                                &rings->completion, &umem_config);
  if (result != 0) {
    rings->umem = nullptr;
    throw std::system_error(-result, std::generic_category(),
                            "xsk_umem__create (needs CAP_NET_RAW; RLIMIT_MEMLOCK?)");
  }

  xsk_socket_config socket_config{};
  socket_config.rx_size = half;
  socket_config.tx_size = half;
  socket_config.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;  // our own program
  socket_config.xdp_flags = 0;
  const bool try_zero_copy = options_.try_zero_copy;
  socket_config.bind_flags = XDP_USE_NEED_WAKEUP | (try_zero_copy ? XDP_ZEROCOPY : XDP_COPY);
  result = xsk_socket__create(&rings->socket, options_.interface.c_str(), options_.queue,
                              rings->umem, &rings->rx, &rings->tx, &socket_config);
  bool zero_copy = try_zero_copy && result == 0;
  if (result != 0 && try_zero_copy && (result == -EOPNOTSUPP || result == -EINVAL)) {
    // The driver has no zero-copy support (veth): copy mode. A fresh UMEM, because the failed
    // bind may have consumed the UMEM's first socket.
    rings.reset();
    options_.try_zero_copy = false;
    create_socket();
    options_.try_zero_copy = true;
    return;
  }
  if (result != 0) {
    rings->socket = nullptr;
    throw std::system_error(-result, std::generic_category(),
                            "xsk_socket__create queue " + std::to_string(options_.queue));
  }

  // Every receive chunk goes to the fill ring; every transmit chunk is idle.
  std::uint32_t index = 0;
  if (xsk_ring_prod__reserve(&rings->fill, half, &index) != half) {
    throw std::system_error(ENOSPC, std::generic_category(), "fill ring reserve");
  }
  for (std::uint32_t i = 0; i < half; ++i) {
    *xsk_ring_prod__fill_addr(&rings->fill, index + i) = static_cast<std::uint64_t>(i) * frame_size;
  }
  xsk_ring_prod__submit(&rings->fill, half);
  free_tx_frames_.clear();
  free_tx_frames_.reserve(half);
  refill_.clear();
  refill_.reserve(half);
  for (std::uint32_t i = half; i < options_.frame_count; ++i) {
    free_tx_frames_.push_back(static_cast<std::uint64_t>(i) * frame_size);
  }

  result = xsk_socket__update_xskmap(rings->socket, program_->xsks_map_fd());
  if (result != 0) {
    throw std::system_error(-result, std::generic_category(), "xsk_socket__update_xskmap");
  }
  zero_copy_ = zero_copy;
  tx_unsent_ = 0;
  rings_ = std::move(rings);
}

AfXdpSocket::~AfXdpSocket() {
  if (rings_) flush();
  std::optional<netns::NetnsGuard> in_namespace;
  try {
    if (!options_.netns.empty()) in_namespace.emplace(options_.netns);
  } catch (const netns::NetnsError&) {
    // The namespace is gone, and with it the interface and its XDP program.
    program_->forget_attachment();
  }
  rings_.reset();    // the socket first: it leaves the xskmap
  program_.reset();  // then the program leaves the interface
}

int AfXdpSocket::fd() const {
  return xsk_socket__fd(rings_->socket);
}

void AfXdpSocket::reclaim_completions() {
  std::uint32_t index = 0;
  const std::uint32_t done = xsk_ring_cons__peek(&rings_->completion, rings_->ring_size, &index);
  if (done == 0) return;
  for (std::uint32_t i = 0; i < done; ++i) {
    free_tx_frames_.push_back(*xsk_ring_cons__comp_addr(&rings_->completion, index + i));
  }
  xsk_ring_cons__release(&rings_->completion, done);
}

SendResult AfXdpSocket::try_send(std::span<const std::byte> frame) {
  if (frame.size() > max_frame_bytes_) {
    ++counters_.tx_too_large;
    return SendResult::kTooLarge;
  }
  if (free_tx_frames_.empty()) reclaim_completions();
  if (free_tx_frames_.empty() && tx_unsent_ > 0) {
    flush();
    reclaim_completions();
  }
  std::uint32_t index = 0;
  if (free_tx_frames_.empty() || xsk_ring_prod__reserve(&rings_->tx, 1, &index) != 1) {
    ++counters_.tx_ring_full;
    return SendResult::kFull;
  }
  const std::uint64_t address = free_tx_frames_.back();
  free_tx_frames_.pop_back();
  std::memcpy(xsk_umem__get_data(rings_->area.base, address), frame.data(), frame.size());
  xdp_desc* descriptor = xsk_ring_prod__tx_desc(&rings_->tx, index);
  descriptor->addr = address;
  descriptor->len = static_cast<std::uint32_t>(frame.size());
  descriptor->options = 0;
  xsk_ring_prod__submit(&rings_->tx, 1);
  ++counters_.tx_frames;
  counters_.tx_bytes += frame.size();
  // Copy mode transmits at most 32 frames per kick: kick every batch so the ring keeps moving.
  if (++tx_unsent_ >= options_.batch) flush();
  return SendResult::kQueued;
}

bool AfXdpSocket::can_send() {
  if (free_tx_frames_.empty()) reclaim_completions();
  return !free_tx_frames_.empty() && xsk_prod_nb_free(&rings_->tx, 1) >= 1;
}

void AfXdpSocket::flush() {
  if (tx_unsent_ == 0) return;
  if (!xsk_ring_prod__needs_wakeup(&rings_->tx)) {  // the driver polls (zero-copy NICs)
    tx_unsent_ = 0;
    return;
  }
  // Copy mode sends up to 32 frames per call and returns EAGAIN while more are queued; keep
  // kicking until the kernel consumed the ring (bounded: a full ring is 64 kicks).
  const int fd = xsk_socket__fd(rings_->socket);
  for (std::uint32_t attempt = 0; attempt < rings_->ring_size / 32 + 2; ++attempt) {
    ++counters_.wakeups;
    const ssize_t sent = ::sendto(fd, nullptr, 0, MSG_DONTWAIT, nullptr, 0);
    if (sent < 0 && errno != EAGAIN && errno != EBUSY && errno != ENOBUFS && errno != EINTR) {
      // e.g. ENETDOWN: the frames stay queued; the next try_send kicks again.
      ++counters_.tx_errors;
      tx_unsent_ = 0;
      return;
    }
    if (xsk_prod_nb_free(&rings_->tx, rings_->ring_size) == rings_->ring_size) {
      tx_unsent_ = 0;
      return;
    }
  }
  // Still frames in the ring (the device was busy): tx_unsent_ stays set, so the next flush(),
  // receive() or has_input() kicks again instead of leaving them stranded.
}

std::size_t AfXdpSocket::receive(std::size_t max, FrameSink& sink) {
  std::uint32_t index = 0;
  const auto want = static_cast<std::uint32_t>(std::min<std::size_t>(max, options_.batch));
  if (tx_unsent_ > 0) flush();  // frames a busy device left in the tx ring
  refill();
  const std::uint32_t got = xsk_ring_cons__peek(&rings_->rx, want, &index);
  if (got == 0) {
    // Copy mode needs no kick to receive, but a driver that sleeps (need-wakeup on the fill
    // ring) must be told there are buffers.
    if (xsk_ring_prod__needs_wakeup(&rings_->fill)) {
      ++counters_.wakeups;
      ::recvfrom(xsk_socket__fd(rings_->socket), nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
    }
    return 0;
  }
  // The chunks go back to the fill ring after the sink has seen them.
  const std::uint64_t frame_mask = ~static_cast<std::uint64_t>(options_.frame_size - 1);
  for (std::uint32_t i = 0; i < got; ++i) {
    const xdp_desc* descriptor = xsk_ring_cons__rx_desc(&rings_->rx, index + i);
    const auto* data =
        static_cast<const std::byte*>(xsk_umem__get_data(rings_->area.base, descriptor->addr));
    ++counters_.rx_frames;
    counters_.rx_bytes += descriptor->len;
    sink.on_frame(std::span<const std::byte>(data, descriptor->len));
    refill_.push_back(descriptor->addr & frame_mask);
  }
  xsk_ring_cons__release(&rings_->rx, got);
  refill();
  return got;
}

void AfXdpSocket::refill() {
  if (refill_.empty()) return;
  // Normally all fit (see create_socket); whatever does not waits for the next call, so no
  // chunk is ever lost.
  std::uint32_t index = 0;
  const auto want = static_cast<std::uint32_t>(refill_.size());
  std::uint32_t room = xsk_ring_prod__reserve(&rings_->fill, want, &index);
  if (room == 0 && want > 1) {
    const std::uint32_t free_now = xsk_prod_nb_free(&rings_->fill, 1);
    room =
        free_now == 0 ? 0 : xsk_ring_prod__reserve(&rings_->fill, std::min(free_now, want), &index);
  }
  if (room == 0) {
    ++counters_.rx_refill_deferred;
    return;
  }
  for (std::uint32_t i = 0; i < room; ++i) {
    *xsk_ring_prod__fill_addr(&rings_->fill, index + i) = refill_[refill_.size() - room + i];
  }
  xsk_ring_prod__submit(&rings_->fill, room);
  refill_.resize(refill_.size() - room);
}

bool AfXdpSocket::has_input() {
  if (tx_unsent_ > 0) flush();  // frames a busy device left in the tx ring
  return xsk_cons_nb_avail(&rings_->rx, 1) > 0;
}

AfXdpKernelStats AfXdpSocket::kernel_stats() const {
  AfXdpKernelStats stats;
  xdp_statistics raw{};
  socklen_t length = sizeof raw;
  if (::getsockopt(xsk_socket__fd(rings_->socket), SOL_XDP, XDP_STATISTICS, &raw, &length) == 0) {
    stats.rx_dropped = raw.rx_dropped;
    stats.rx_invalid_descs = raw.rx_invalid_descs;
    stats.tx_invalid_descs = raw.tx_invalid_descs;
    stats.rx_ring_full = raw.rx_ring_full;
    stats.rx_fill_ring_empty = raw.rx_fill_ring_empty_descs;
    stats.tx_ring_empty = raw.tx_ring_empty_descs;
  }
  return stats;
}

void AfXdpSocket::refresh_kernel_counters() {
  const AfXdpKernelStats stats = kernel_stats();
  counters_.rx_kernel_drops = stats.rx_dropped + stats.rx_ring_full;
  counters_.rx_too_large = program_->stats().oversize;
}

}  // namespace ethx
