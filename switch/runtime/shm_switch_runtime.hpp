// Runs the switch core in real time over the shared-memory rings of every port, from one
// thread: it polls all ports in batches and sleeps on one doorbell when the fabric is idle.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "fabric/transport/doorbell.hpp"
#include "fabric/transport/shm/shm_fabric_region.hpp"
#include "switch/core/switch_core.hpp"
#include "switch/runtime/pending_egress.hpp"
#include "switch/runtime/periodic_hook.hpp"
#include "switch/runtime/switch_command_hook.hpp"

namespace ethx {

class ShmSwitchRuntime {
 public:
  ShmSwitchRuntime(const TopologyConfig& topology, shm::ShmFabricRegion& region);

  // Forwards until `stop` becomes true.
  void run(const std::atomic<bool>& stop);
  // Runs `hook` from the forwarding thread (e.g. to publish counters for `ethx status`).
  void set_periodic(PeriodicHook hook) { periodic_ = std::move(hook); }
  // Serves run-time commands (`ethx fault`) from the forwarding thread.
  void set_commands(SwitchCommandHook hook) { commands_ = std::move(hook); }
  // One pass over every port; returns whether it moved any frame.
  bool step();

  const SwitchCore& core() const { return core_; }
  const shm::WaitStats& wait_stats() const { return waiter_.stats(); }
  std::uint64_t rounds() const { return rounds_; }

 private:
  std::size_t admission_budget_frames(TimeNs now);
  bool receive_all(TimeNs now);
  bool transmit_all();
  bool has_input();

  shm::ShmFabricRegion& region_;
  SwitchCore core_;
  shm::AdaptiveWaiter waiter_{shm::WaitPolicy::from_environment()};
  std::vector<PortId> touched_;
  PendingEgress pending_;
  std::vector<TimeNs> congested_since_ns_;  // per port: since when its queue is (nearly) full
  std::uint32_t first_port_ = 0;
  std::uint64_t rounds_ = 0;
  PeriodicHook periodic_;
  SwitchCommandHook commands_;
};

}  // namespace ethx
