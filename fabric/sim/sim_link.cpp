#include "fabric/sim/sim_link.hpp"

#include <cmath>

#include "packet-engine/wire.hpp"

namespace ethx::sim {

TimePs serialization_ps(std::size_t frame_bytes, double rate_gbps) {
  const double bits = static_cast<double>(wire::wire_bytes(frame_bytes)) * 8.0;
  // bits / (Gbit/s) = ns; times 1000 = ps.
  return static_cast<TimePs>(std::llround(bits * 1000.0 / rate_gbps));
}

}  // namespace ethx::sim
