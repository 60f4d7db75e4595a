// The stream workload: the experiments of `ethx bench` in modelled time, for
// `ethx sim --calibrate` (sim_calibrate.hpp). A GPU sends `ops_per_destination` operations of
// `bytes` to each of its destinations (GPU 1, or every other GPU, interleaved as the bench's
// all-to-all does), keeping at most `window` of them in flight; a stream of posted writes
// ends with one flush per destination, whose completion is the stream's end.
#pragma once

#include <memory>

#include "fabric/sim/sim_workloads.hpp"

namespace ethx::sim {

// Throws std::invalid_argument on bad parameters (a zero window or count, an operation larger
// than max_op_bytes).
std::unique_ptr<Workload> make_stream_workload(const WorkloadParams& params);

}  // namespace ethx::sim
