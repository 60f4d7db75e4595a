// The egress ports whose queue in the switch core still holds frames, each listed once: what
// a real-time switch runtime revisits after a receive round or when a link frees up.
#pragma once

#include <cstdint>
#include <vector>

#include "switch/core/switch_core.hpp"

namespace ethx {

class PendingEgress {
 public:
  explicit PendingEgress(std::size_t port_count) : listed_(port_count, 0) {}

  // Lists every port of `touched` (from SwitchCore::on_frame) not listed yet; clears it.
  void add(std::vector<PortId>& touched) {
    for (PortId port : touched) {
      if (!listed_[port]) {
        listed_[port] = 1;
        ports_.push_back(port);
      }
    }
    touched.clear();
  }

  // Calls drain(port) for every listed port; a port stays listed while drain returns true
  // (frames still queued).
  template <class Drain>
  void drain_each(Drain drain) {
    std::size_t kept = 0;
    for (PortId port : ports_) {
      if (drain(port)) {
        ports_[kept++] = port;
      } else {
        listed_[port] = 0;
      }
    }
    ports_.resize(kept);
  }

  const std::vector<PortId>& ports() const { return ports_; }
  bool empty() const { return ports_.empty(); }

 private:
  std::vector<std::uint8_t> listed_;  // per port: in ports_
  std::vector<PortId> ports_;
};

}  // namespace ethx
