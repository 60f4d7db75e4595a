#include "fabric/sim/sim_stream_workload.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace ethx::sim {
namespace {

class StreamWorkload : public Workload {
 public:
  explicit StreamWorkload(const WorkloadParams& params) : params_(params), gpus_(params.gpus) {
    const std::size_t sources = params.stream.every_gpu ? params.gpus : 1;
    destinations_ = params.stream.every_gpu ? params.gpus - 1 : 1;
    // Operations land in slots of the landing zone, wrapping (contents are not modelled).
    slots_ = std::max<std::uint64_t>(1, kLandingZoneBytes / params.bytes);
    for (std::size_t gpu = 0; gpu < sources; ++gpu) gpus_[gpu].left = ops_of_one_gpu();
    total_ = sources * ops_of_one_gpu();
  }

  bool peek(GpuId gpu, OpSpec& op) override {
    const State& state = gpus_[gpu];
    if (state.left == 0 || state.in_flight >= params_.stream.window) return false;
    const std::uint64_t index = ops_of_one_gpu() - state.left;
    const std::uint64_t data_ops = params_.stream.ops_per_destination * destinations_;
    op = OpSpec{};
    if (index >= data_ops) {  // the flushes, one per destination, after every posted write
      op.dst = destination(gpu, index - data_ops);
      op.flush = true;
      op.bytes = static_cast<std::uint32_t>(params_.stream.ops_per_destination * params_.bytes);
      return true;
    }
    op.dst = destination(gpu, index % destinations_);
    op.bytes = static_cast<std::uint32_t>(params_.bytes);
    op.address = (index / destinations_ % slots_) * params_.bytes;
    op.read = params_.stream.op == StreamOp::kRead;
    op.posted = params_.stream.op == StreamOp::kPostedWrite;
    op.hold = op.posted && (index + 1) % params_.stream.ops_per_poll != 0;
    op.atomic = params_.stream.op == StreamOp::kAtomic;
    return true;
  }

  void issued(GpuId gpu) override {
    State& state = gpus_[gpu];
    const bool posted = params_.stream.op == StreamOp::kPostedWrite &&
                        state.left > destinations_;  // the last ones are the flushes
    --state.left;
    if (posted) {
      ++done_;  // a posted write has no completion: it is done when handed over
    } else {
      ++state.in_flight;
    }
  }

  void completed(GpuId gpu, std::vector<GpuId>&) override {
    --gpus_[gpu].in_flight;
    ++done_;
  }

  bool done() const override { return done_ == total_; }

 private:
  struct State {
    std::uint64_t left = 0;  // operations (and flushes) not yet issued
    std::uint32_t in_flight = 0;
  };

  std::uint64_t ops_of_one_gpu() const {
    const bool posted = params_.stream.op == StreamOp::kPostedWrite;
    return params_.stream.ops_per_destination * destinations_ + (posted ? destinations_ : 0);
  }
  // The n-th destination of `gpu`: GPU 1, or gpu + 1, gpu + 2, ... (the bench's order).
  GpuId destination(GpuId gpu, std::uint64_t n) const {
    if (!params_.stream.every_gpu) return 1;
    return static_cast<GpuId>((gpu + 1 + n) % params_.gpus);
  }

  WorkloadParams params_;
  std::vector<State> gpus_;
  std::size_t destinations_ = 1;
  std::uint64_t slots_ = 1;
  std::uint64_t total_ = 0;
  std::uint64_t done_ = 0;
};

}  // namespace

std::unique_ptr<Workload> make_stream_workload(const WorkloadParams& params) {
  const StreamParams& stream = params.stream;
  if (stream.window == 0 || stream.ops_per_poll == 0) {
    throw std::invalid_argument("stream: the window and operations per poll must be at least 1");
  }
  if (stream.ops_per_destination == 0) {
    throw std::invalid_argument("stream: at least one operation per destination");
  }
  if (params.bytes > params.max_op_bytes) {
    throw std::invalid_argument("stream: an operation must fit " +
                                std::to_string(params.max_op_bytes) + " B");
  }
  if (stream.op == StreamOp::kAtomic && params.bytes != 8) {
    throw std::invalid_argument("stream: atomics are 8 B");
  }
  if (stream.ops_per_destination * params.bytes > UINT32_MAX) {
    throw std::invalid_argument("stream: a flush stands for at most 4 GiB");
  }
  return std::make_unique<StreamWorkload>(params);
}

}  // namespace ethx::sim
