// NodePort over the shared-memory rings of one ethx-switch port.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "fabric/transport/doorbell.hpp"
#include "fabric/transport/node_port.hpp"
#include "fabric/transport/shm/shm_fabric_region.hpp"

namespace ethx {

class ShmNodePort final : public NodePort {
 public:
  // Attaches to port `index` of the switch's region; throws if the port is taken by a live
  // process.
  ShmNodePort(shm::ShmFabricRegion& region, std::uint32_t index);
  // Attaches to the switch's region `region_name` (shm::ShmFabricRegion::attach) and to its port
  // `index`; the port keeps the region mapped for as long as it lives.
  static std::unique_ptr<ShmNodePort> attach(const std::string& region_name, std::uint32_t index);
  ~ShmNodePort() override;

  const char* transport() const override { return "shm"; }
  std::size_t max_frame_bytes() const override { return shm::FrameRing::max_frame_bytes(); }
  bool try_send(std::span<const std::byte> frame) override;
  bool can_send() const override { return channel_.to_switch.has_free_slot(); }
  void kick() override;
  std::size_t receive(std::size_t max, FrameSink& sink) override;
  void wait(std::int64_t timeout_ns, const std::function<bool()>& also_ready) override;
  void interrupt() override;
  bool has_input() override { return !channel_.to_node.empty(); }
  // Sleeps on the node's doorbell, whose contract is one sleeper: the port's owner must not
  // sleep on it meanwhile (GpuDevice's vCPUs spin and yield instead).
  void wait_unowned(std::int64_t timeout_ns, const std::function<bool()>& ready) override;
  void nap(std::int64_t timeout_ns, const std::function<bool()>& ready) override;

  const shm::WaitStats& wait_stats() const { return waiter_.stats(); }
  shm::Doorbell& node_bell() { return channel_.node_bell; }

 private:
  ShmNodePort(shm::ShmFabricRegion&& region, std::uint32_t index);
  void claim(std::uint32_t index);

  std::optional<shm::ShmFabricRegion> owned_region_;  // attach(): the region region_ refers to
  shm::ShmFabricRegion& region_;
  shm::PortChannel& channel_;
  shm::AdaptiveWaiter waiter_{shm::WaitPolicy::from_environment()};
  shm::AdaptiveWaiter unowned_waiter_{shm::WaitPolicy::from_environment()};
  shm::Doorbell nap_bell_;          // this process only: nap() sleeps on it
  shm::AdaptiveWaiter nap_waiter_;  // sleeps at once: no spin, no yield
  bool sent_since_kick_ = false;
};

}  // namespace ethx
