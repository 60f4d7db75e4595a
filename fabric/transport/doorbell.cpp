#include "fabric/transport/doorbell.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <system_error>

namespace ethx::shm {
namespace detail {
namespace {

std::uint32_t* futex_word(Doorbell& bell) {
  // std::atomic<std::uint32_t> is a plain uint32_t in memory (asserted in the header).
  return reinterpret_cast<std::uint32_t*>(&bell.sequence);
}

// No FUTEX_PRIVATE_FLAG: waiter and waker are different processes mapping the same file.
long futex(Doorbell& bell, int operation, std::uint32_t value, const timespec* timeout) {
  return ::syscall(SYS_futex, futex_word(bell), operation, value, timeout, nullptr, 0);
}

}  // namespace

void futex_wait(Doorbell& bell, std::uint32_t expected, std::int64_t timeout_ns) {
  constexpr std::int64_t kNsPerSecond = 1'000'000'000;
  const std::int64_t bounded_ns = std::max<std::int64_t>(timeout_ns, 1);
  const timespec timeout{.tv_sec = static_cast<time_t>(bounded_ns / kNsPerSecond),
                         .tv_nsec = static_cast<long>(bounded_ns % kNsPerSecond)};
  if (futex(bell, FUTEX_WAIT, expected, &timeout) == 0) return;
  const int error_number = errno;
  // Woken early by a signal, the sequence already moved on, or the slice ran out: all normal.
  if (error_number == EINTR || error_number == EAGAIN || error_number == ETIMEDOUT) return;
  // Anything else (EFAULT, ENOSYS under a seccomp filter) would turn every sleep into a busy
  // loop; better to say so.
  throw std::system_error(error_number, std::generic_category(), "FUTEX_WAIT on a doorbell");
}

bool wake_sleeper(Doorbell& bell) {
  // Of several producers ringing at once, only the one that clears the flag pays the syscall.
  if (bell.sleeping.exchange(0, std::memory_order_acq_rel) == 0) return false;
  bell.sequence.fetch_add(1, std::memory_order_release);
  // Wake all: one waiter is the contract, but a stray second one must not sleep forever.
  futex(bell, FUTEX_WAKE, static_cast<std::uint32_t>(std::numeric_limits<int>::max()), nullptr);
  return true;
}

}  // namespace detail

namespace {
std::int64_t env_number(const char* name, std::int64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  return (end != nullptr && *end == '\0' && value >= 0) ? value : fallback;
}
}  // namespace

WaitPolicy WaitPolicy::from_environment() {
  WaitPolicy policy;
  policy.max_spin_ns = env_number("ETHX_WAIT_SPIN_NS", policy.max_spin_ns);
  policy.min_spin_ns = std::min(policy.min_spin_ns, policy.max_spin_ns);
  policy.yield_iterations =
      static_cast<std::uint32_t>(env_number("ETHX_WAIT_YIELDS", policy.yield_iterations));
  policy.max_sleep_ns =
      std::max<std::int64_t>(1000, env_number("ETHX_WAIT_SLEEP_NS", policy.max_sleep_ns));
  return policy;
}

AdaptiveWaiter::AdaptiveWaiter(WaitPolicy policy)
    : policy_(policy), spin_budget_ns_(std::max(policy.max_spin_ns, std::int64_t{0})) {}

bool AdaptiveWaiter::ring(Doorbell& peer_bell) {
  const bool woke = shm::ring(peer_bell);
  if (woke) ++stats_.wakeups_sent;
  return woke;
}

void AdaptiveWaiter::found_while_spinning() {
  spin_budget_ns_ = std::min(policy_.max_spin_ns, spin_budget_ns_ * 2 + 1);
}

void AdaptiveWaiter::spin_exhausted() {
  spin_budget_ns_ =
      std::max(std::min(policy_.min_spin_ns, policy_.max_spin_ns), spin_budget_ns_ / 2);
}

}  // namespace ethx::shm
