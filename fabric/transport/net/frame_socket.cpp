#include "fabric/transport/net/frame_socket.hpp"
#include "fabric/platform/clock.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <system_error>
#include <vector>

namespace ethx {
namespace {

constexpr std::size_t kMaxPollFds = 8;

}  // namespace

PollWaiter::PollWaiter(shm::WaitPolicy policy)
    : policy_(policy), spin_budget_ns_(policy.max_spin_ns) {}

bool PollWaiter::wait(std::span<const int> fds, const std::function<bool()>& ready,
                      std::int64_t timeout_ns) {
  if (ready()) {
    idle_ = false;
    return true;
  }
  if (timeout_ns == 0) return false;
  const bool sleep_once = timeout_ns < 0;
  const std::int64_t start_ns = monotonic_ns();
  const std::int64_t deadline_ns =
      sleep_once || timeout_ns > std::numeric_limits<std::int64_t>::max() - start_ns
          ? std::numeric_limits<std::int64_t>::max()
          : start_ns + timeout_ns;
  auto found = [this] {
    idle_ = false;
    return true;
  };
  auto timed_out = [&] {
    if (ready()) return found();
    idle_ = monotonic_ns() - start_ns >= policy_.idle_after_ns;
    return false;
  };
  const bool eager = !idle_;

  // Spin: a frame from a peer on the other core is often < 1 µs away.
  const std::int64_t spin_end_ns = std::min(deadline_ns, start_ns + spin_budget_ns_);
  for (std::uint32_t poll = 1; eager && poll <= policy_.spin_iterations; ++poll) {
    shm::detail::cpu_relax();
    ++stats_.spins;
    if (ready()) {
      spin_budget_ns_ = std::min(policy_.max_spin_ns, spin_budget_ns_ * 2);
      return found();
    }
    if (poll % 8 == 0 && monotonic_ns() >= spin_end_ns) break;
  }
  if (eager) spin_budget_ns_ = std::max(policy_.min_spin_ns, spin_budget_ns_ / 2);

  // Yield: the peer that will answer may need this very core.
  for (std::uint32_t yield = 0; eager && yield < policy_.yield_iterations; ++yield) {
    if (monotonic_ns() >= deadline_ns) return timed_out();
    ::sched_yield();
    ++stats_.yields;
    if (ready()) return found();
  }

  // Block in the kernel until a descriptor is readable, in bounded slices.
  std::array<pollfd, kMaxPollFds> polls{};
  const std::size_t count = std::min(fds.size(), kMaxPollFds);
  for (;;) {
    const std::int64_t now_ns = monotonic_ns();
    if (now_ns >= deadline_ns) return timed_out();
    const std::int64_t sleep_ns =
        sleep_once ? policy_.max_sleep_ns : std::min(deadline_ns - now_ns, policy_.max_sleep_ns);
    for (std::size_t i = 0; i < count; ++i) polls[i] = pollfd{fds[i], POLLIN, 0};
    const timespec timeout{static_cast<time_t>(sleep_ns / 1'000'000'000),
                           static_cast<long>(sleep_ns % 1'000'000'000)};
    ++stats_.sleeps;
    ::ppoll(polls.data(), count, &timeout, nullptr);
    if (ready()) return found();
    if (sleep_once) return timed_out();
  }
}

SocketNodePort::SocketNodePort(std::unique_ptr<FrameSocket> socket)
    : socket_(std::move(socket)), event_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (event_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
}

SocketNodePort::~SocketNodePort() {
  ::close(event_fd_);
}

bool SocketNodePort::try_send(std::span<const std::byte> frame) {
  switch (socket_->try_send(frame)) {
    case SendResult::kQueued:
      return true;
    case SendResult::kFull:
      return false;
    case SendResult::kTooLarge:
      break;
  }
  throw FrameTooLarge("a " + std::to_string(frame.size()) + " B frame does not fit the " +
                      socket_->transport() + " buffers of " + socket_->interface_name() +
                      " (at most " + std::to_string(socket_->max_frame_bytes()) + " B)");
}

std::size_t SocketNodePort::receive(std::size_t max, FrameSink& sink) {
  return socket_->receive(max, sink);
}

void SocketNodePort::wait(std::int64_t timeout_ns, const std::function<bool()>& also_ready) {
  const std::array<int, 2> fds{socket_->fd(), event_fd_};
  waiter_.wait(
      fds, [&] { return socket_->has_input() || (also_ready && also_ready()); }, timeout_ns);
  std::uint64_t drained = 0;
  while (::read(event_fd_, &drained, sizeof drained) > 0) {
  }
}

void SocketNodePort::wait_unowned(std::int64_t timeout_ns, const std::function<bool()>& ready) {
  // ppoll() on the socket is safe beside its owner: the kernel reports a non-empty receive
  // ring without this thread touching the ring's user-space indices.
  const std::array<int, 2> fds{socket_->fd(), event_fd_};
  unowned_waiter_.wait(fds, ready, timeout_ns);
  std::uint64_t drained = 0;
  while (::read(event_fd_, &drained, sizeof drained) > 0) {
  }
}

void SocketNodePort::nap(std::int64_t timeout_ns, const std::function<bool()>& ready) {
  if (ready()) return;
  pollfd poll{event_fd_, POLLIN, 0};
  const timespec timeout{static_cast<time_t>(timeout_ns / 1'000'000'000),
                         static_cast<long>(timeout_ns % 1'000'000'000)};
  ::ppoll(&poll, 1, &timeout, nullptr);
  std::uint64_t drained = 0;
  while (::read(event_fd_, &drained, sizeof drained) > 0) {
  }
}

void SocketNodePort::interrupt() {
  const std::uint64_t one = 1;
  (void)::write(event_fd_, &one, sizeof one);
}

}  // namespace ethx
