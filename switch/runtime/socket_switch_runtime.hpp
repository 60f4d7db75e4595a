// Runs the switch core in real time over one FrameSocket per port (AF_XDP or AF_PACKET), from
// one thread: it polls every port in batches and, when the fabric is idle, waits adaptively
// (spin, yield, then one epoll over all ports), so 32 ports never need 32 spinning threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "fabric/transport/net/frame_socket.hpp"
#include "switch/core/switch_core.hpp"
#include "switch/runtime/pending_egress.hpp"
#include "switch/runtime/periodic_hook.hpp"
#include "switch/runtime/switch_command_hook.hpp"

namespace ethx {

struct SocketSwitchCounters {
  std::uint64_t rounds = 0;
  std::uint64_t tx_too_large = 0;  // frames a port's buffers cannot carry: counted, dropped
};

class SocketSwitchRuntime {
 public:
  // Port i of the switch is ports[i] (GPU i's link); ports beyond the GPUs are unbound extra
  // ports (guest NICs, docs/softroce.md). The sockets must outlive the runtime.
  SocketSwitchRuntime(const TopologyConfig& topology, std::vector<FrameSocket*> ports);
  ~SocketSwitchRuntime();
  SocketSwitchRuntime(const SocketSwitchRuntime&) = delete;
  SocketSwitchRuntime& operator=(const SocketSwitchRuntime&) = delete;

  // Forwards until `stop` becomes true; interrupt() ends a blocked wait at once.
  void run(const std::atomic<bool>& stop);
  // Forwards until should_stop() (checked before every pass and within every wait).
  void run(const std::function<bool()>& should_stop);
  // Runs `hook` from the forwarding thread (e.g. to publish counters for `ethx status`).
  void set_periodic(PeriodicHook hook) { periodic_ = std::move(hook); }
  // Serves run-time commands (`ethx fault`) from the forwarding thread.
  void set_commands(SwitchCommandHook hook) { commands_ = std::move(hook); }
  bool step();
  void interrupt();

  const SwitchCore& core() const { return core_; }
  const SocketSwitchCounters& counters() const { return counters_; }
  const shm::WaitStats& wait_stats() const { return waiter_.stats(); }

 private:
  bool receive_all(TimeNs now);
  bool transmit_all();
  bool has_work();

  std::vector<FrameSocket*> ports_;
  SwitchCore core_;
  PollWaiter waiter_;
  int epoll_fd_ = -1;
  int event_fd_ = -1;
  std::vector<PortId> touched_;
  PendingEgress pending_;
  std::uint32_t first_port_ = 0;
  SocketSwitchCounters counters_;
  PeriodicHook periodic_;
  SwitchCommandHook commands_;
};

}  // namespace ethx
