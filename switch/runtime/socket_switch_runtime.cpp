#include "switch/runtime/socket_switch_runtime.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <random>
#include <stdexcept>
#include <system_error>

#include "fabric/platform/clock.hpp"

namespace ethx {
namespace {

constexpr std::size_t kReceiveBatchPerPort = 32;

class CoreSink final : public FrameSink {
 public:
  CoreSink(SwitchCore& core, std::vector<PortId>& touched, const SwitchCommandHook& commands)
      : core_(core), touched_(touched), commands_(commands) {}
  void set(PortId port, TimeNs now) {
    port_ = port;
    now_ = now;
  }
  void on_frame(std::span<const std::byte> frame) override {
    commands_.tap(port_, frame);
    core_.on_frame(port_, frame, now_, touched_);
  }

 private:
  SwitchCore& core_;
  std::vector<PortId>& touched_;
  const SwitchCommandHook& commands_;
  PortId port_ = 0;
  TimeNs now_ = 0;
};

}  // namespace

SocketSwitchRuntime::SocketSwitchRuntime(const TopologyConfig& topology,
                                         std::vector<FrameSocket*> ports)
    : ports_(std::move(ports)),
      core_(topology.emulated_switch_config(
          ports_.size() > topology.gpu_count ? ports_.size() - topology.gpu_count : 0,
          std::random_device{}())),
      pending_(ports_.size()) {
  if (ports_.size() != core_.port_count()) {
    throw std::invalid_argument("the switch has " + std::to_string(core_.port_count()) +
                                " ports but " + std::to_string(ports_.size()) +
                                " sockets were given");
  }
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  event_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || event_fd_ < 0) {
    throw std::system_error(errno, std::generic_category(), "epoll/eventfd");
  }
  auto add = [this](int fd, std::uint32_t tag) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u32 = tag;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
      throw std::system_error(errno, std::generic_category(), "epoll_ctl");
    }
  };
  for (std::size_t port = 0; port < ports_.size(); ++port) {
    add(ports_[port]->fd(), static_cast<std::uint32_t>(port));
  }
  add(event_fd_, UINT32_MAX);
}

SocketSwitchRuntime::~SocketSwitchRuntime() {
  ::close(epoll_fd_);
  ::close(event_fd_);
}

bool SocketSwitchRuntime::receive_all(TimeNs now) {
  // Frames a delay spike held whose time has come go before anything newer. A stalled port is
  // still read: a veth cannot be back-pressured, so the core holds what arrives meanwhile.
  core_.release_held(now, touched_);
  CoreSink sink(core_, touched_, commands_);
  bool moved = !touched_.empty();
  const auto count = static_cast<std::uint32_t>(ports_.size());
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint32_t port = (first_port_ + i) % count;  // rotate for fairness
    sink.set(port, now);
    moved = ports_[port]->receive(kReceiveBatchPerPort, sink) > 0 || moved;
  }
  first_port_ = (first_port_ + 1) % count;
  pending_.add(touched_);
  return moved;
}

bool SocketSwitchRuntime::transmit_all() {
  bool moved = false;
  pending_.drain_each([&](PortId egress) {
    FrameSocket& socket = *ports_[egress];
    bool sent = false;
    while (const QueuedFrame* frame = core_.front(egress)) {
      const SendResult result = socket.try_send(frame->bytes);
      if (result == SendResult::kFull) break;  // the link is busy: the core's queue holds it
      if (result == SendResult::kTooLarge) ++counters_.tx_too_large;
      if (result == SendResult::kQueued) commands_.tap(egress, frame->bytes);
      core_.pop(egress);
      sent = sent || result == SendResult::kQueued;
    }
    if (sent) socket.flush();
    moved = moved || sent;
    return core_.front(egress) != nullptr;
  });
  return moved;
}

bool SocketSwitchRuntime::has_work() {
  if (commands_.enabled() && commands_.pending()) return true;
  if (core_.next_release_ns() <= monotonic_now_ns()) return true;
  for (PortId egress : pending_.ports()) {
    if (ports_[egress]->can_send()) return true;
  }
  for (FrameSocket* port : ports_) {
    if (port->has_input()) return true;
  }
  return false;
}

bool SocketSwitchRuntime::step() {
  ++counters_.rounds;
  const bool received = receive_all(monotonic_now_ns());
  const bool sent = transmit_all();
  return received || sent;
}

void SocketSwitchRuntime::run(const std::atomic<bool>& stop) {
  run([&stop] { return stop.load(std::memory_order_relaxed); });
}

void SocketSwitchRuntime::run(const std::function<bool()>& should_stop) {
  const std::array<int, 1> fds{epoll_fd_};
  while (!should_stop()) {
    // A changed fault is news for `ethx status` too.
    if (commands_.poll(core_)) periodic_.note_activity();
    if (step()) {
      periodic_.note_activity();
      if (periodic_.enabled()) periodic_.poll(monotonic_ns());
      continue;
    }
    // With frames held for a busy port, block only briefly: its completions do not wake us.
    // Frames a delay spike holds wake us when they are due.
    const TimeNs now = monotonic_now_ns();
    const TimeNs release = core_.next_release_ns();
    const std::int64_t until_release_ns =
        release == kNoRelease ? -1 : static_cast<std::int64_t>(release > now ? release - now : 0);
    const std::int64_t timeout_ns =
        PeriodicHook::shorter(PeriodicHook::shorter(pending_.empty() ? -1 : 100'000,
                                                    periodic_.poll(static_cast<std::int64_t>(now))),
                              until_release_ns);
    waiter_.wait(
        fds, [this, &should_stop] { return should_stop() || has_work(); }, timeout_ns);
    std::uint64_t drained = 0;
    while (::read(event_fd_, &drained, sizeof drained) > 0) {
    }
  }
}

void SocketSwitchRuntime::interrupt() {
  const std::uint64_t one = 1;
  (void)::write(event_fd_, &one, sizeof one);
}

}  // namespace ethx
