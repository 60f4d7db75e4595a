#include "fabric/transport/shm/shm_node_port.hpp"

#include <signal.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace ethx {

namespace {

shm::WaitPolicy sleep_at_once() {
  shm::WaitPolicy policy = shm::WaitPolicy::from_environment();
  policy.spin_iterations = 0;
  policy.yield_iterations = 0;
  return policy;
}

}  // namespace

ShmNodePort::ShmNodePort(shm::ShmFabricRegion& region, std::uint32_t index)
    : region_(region), channel_(region.port(index)), nap_waiter_(sleep_at_once()) {
  claim(index);
}

ShmNodePort::ShmNodePort(shm::ShmFabricRegion&& region, std::uint32_t index)
    : owned_region_(std::move(region)),
      region_(*owned_region_),
      channel_(region_.port(index)),
      nap_waiter_(sleep_at_once()) {
  claim(index);
}

std::unique_ptr<ShmNodePort> ShmNodePort::attach(const std::string& region_name,
                                                 std::uint32_t index) {
  // Not make_unique: the owning constructor is private.
  return std::unique_ptr<ShmNodePort>(
      new ShmNodePort(shm::ShmFabricRegion::attach(region_name), index));
}

void ShmNodePort::claim(std::uint32_t index) {
  const std::int32_t holder = channel_.node_pid.load();
  // A port whose holder died may be taken over (the node restarted after a crash).
  if (holder != 0 && holder != ::getpid() && ::kill(holder, 0) == 0) {
    throw std::runtime_error("switch port " + std::to_string(index) + " is in use by pid " +
                             std::to_string(holder));
  }
  channel_.node_pid.store(::getpid());
}

ShmNodePort::~ShmNodePort() {
  channel_.node_pid.store(0);
}

bool ShmNodePort::try_send(std::span<const std::byte> frame) {
  if (!channel_.to_switch.try_push(frame)) return false;
  sent_since_kick_ = true;
  return true;
}

void ShmNodePort::kick() {
  if (!sent_since_kick_) return;
  sent_since_kick_ = false;
  waiter_.ring(region_.header().switch_bell);
}

std::size_t ShmNodePort::receive(std::size_t max, FrameSink& sink) {
  // A (nearly) full ring means the switch may be holding frames for us and waiting for room:
  // tell it once we made some, or it would only notice at its next timed wake-up.
  const bool switch_may_wait = channel_.to_node.size() >= shm::kRingSlots * 3 / 4;
  const std::size_t popped = channel_.to_node.pop_batch(
      max, [&sink](std::span<const std::byte> frame) { sink.on_frame(frame); });
  if (switch_may_wait && popped > 0) waiter_.ring(region_.header().switch_bell);
  return popped;
}

void ShmNodePort::wait(std::int64_t timeout_ns, const std::function<bool()>& also_ready) {
  waiter_.wait(
      channel_.node_bell, [&] { return !channel_.to_node.empty() || also_ready(); }, timeout_ns);
}

void ShmNodePort::wait_unowned(std::int64_t timeout_ns, const std::function<bool()>& ready) {
  unowned_waiter_.wait(channel_.node_bell, ready, timeout_ns);
}

// Not on the node's doorbell: a sleeper announced there makes the switch pay a futex wake-up
// for every frame it delivers to this port, on the path of the response a vCPU is polling for.
// A doorbell of its own, which only interrupt() rings.
void ShmNodePort::nap(std::int64_t timeout_ns, const std::function<bool()>& ready) {
  nap_waiter_.wait(nap_bell_, ready, timeout_ns);
}

void ShmNodePort::interrupt() {
  shm::ring(channel_.node_bell);
  shm::ring(nap_bell_);
}

}  // namespace ethx
