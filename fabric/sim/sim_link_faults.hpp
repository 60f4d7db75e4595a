// Link-down faults for `ethx sim` (--link-down GPU@TIME_NS[-UNTIL_NS]): at modelled time
// TIME_NS the switch port of GPU's link goes down (PortFaults::link_down through
// SwitchCore::set_faults) and, if UNTIL_NS is given, comes back up then. Parsing only; the
// simulator schedules them (SimFabric::schedule_link_faults).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "address-map/fabric_types.hpp"

namespace ethx::sim {

// The latest modelled time a fault may name: an hour, like the longest [liveness] window, and
// far from overflowing the simulator's picoseconds.
inline constexpr TimeNs kMaxLinkFaultNs = 3'600'000'000'000;

struct LinkFault {
  GpuId gpu = 0;
  TimeNs down_ns = 0;
  std::optional<TimeNs> up_ns;  // none: down until the end of the run
  bool operator==(const LinkFault&) const = default;
};

// Parses one --link-down value for a fabric of `gpus` GPUs. Throws std::invalid_argument with
// a one-line message naming the option and the value (bad syntax, GPU out of range, a time
// past kMaxLinkFaultNs, UNTIL_NS not after TIME_NS).
LinkFault parse_link_fault(std::string_view text, std::size_t gpus);

// Parses every value, then rejects two faults on one GPU whose down intervals overlap (the
// second would be cut short by the first one's link-up). Returns them in the order given.
std::vector<LinkFault> parse_link_faults(const std::vector<std::string>& values, std::size_t gpus);

// "3@1000-2000" / "3@1000": the form parse_link_fault reads.
std::string to_string(const LinkFault& fault);

}  // namespace ethx::sim
