#include "fabric/sim/sim_workloads.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include "fabric/sim/sim_stream_workload.hpp"

namespace ethx::sim {

const char* to_string(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::kAllToAll:
      return "all-to-all";
    case WorkloadKind::kAllReduceRing:
      return "allreduce-ring";
    case WorkloadKind::kIncast:
      return "incast";
    case WorkloadKind::kRandom:
      return "random";
    case WorkloadKind::kLoadLatency:
      return "load-latency";
    case WorkloadKind::kReadLatency:
      return "read-latency";
    case WorkloadKind::kWriteLatency:
      return "write-latency";
    case WorkloadKind::kMessageRate:
      return "message-rate";
    case WorkloadKind::kStream:
      return "stream";
  }
  return "unknown";
}

namespace {

constexpr WorkloadKind kEveryWorkload[] = {
    WorkloadKind::kAllToAll,     WorkloadKind::kAllReduceRing, WorkloadKind::kIncast,
    WorkloadKind::kRandom,       WorkloadKind::kLoadLatency,   WorkloadKind::kReadLatency,
    WorkloadKind::kWriteLatency, WorkloadKind::kMessageRate};

}  // namespace

bool parse_workload_kind(const std::string& text, WorkloadKind& out) {
  for (WorkloadKind kind : kEveryWorkload) {
    if (text == to_string(kind)) {
      out = kind;
      return true;
    }
  }
  return false;
}

std::string workload_names() {
  std::string names;
  for (WorkloadKind kind : kEveryWorkload)
    names += (names.empty() ? "" : ", ") + std::string(to_string(kind));
  return names;
}

std::uint64_t default_bytes(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::kLoadLatency:
    case WorkloadKind::kReadLatency:
    case WorkloadKind::kWriteLatency:
    case WorkloadKind::kMessageRate:
      return 8;
    default:
      return 4096;
  }
}

namespace {

// SplitMix64: a fixed, portable generator (the standard distributions are not portable).
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t align64(std::uint64_t bytes) {
  return (bytes + 63) / 64 * 64;
}

// Where `src`'s message of `bytes` lands in a destination's memory.
std::uint64_t landing_address(GpuId src, std::uint64_t bytes, std::uint64_t hbm_bytes) {
  const std::uint64_t slot = align64(bytes);
  const std::uint64_t zone = std::min(hbm_bytes, kLandingZoneBytes);
  if (slot >= zone) return 0;
  return (src % (zone / slot)) * slot;
}

// A GPU's message in progress, cut into operations of at most max_op_bytes.
struct Cursor {
  bool active = false;
  GpuId dst = kInvalidGpu;
  std::uint64_t base = 0;
  std::uint64_t bytes = 0;
  std::uint64_t offset = 0;  // bytes issued so far
};

OpSpec next_piece(const Cursor& cursor, std::uint32_t max_op_bytes) {
  OpSpec op;
  op.dst = cursor.dst;
  op.address = cursor.base + cursor.offset;
  op.bytes = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(max_op_bytes, cursor.bytes - cursor.offset));
  return op;
}

// Each GPU sends a list of messages, no barrier: all-to-all, incast, random.
class ListWorkload : public Workload {
 public:
  ListWorkload(WorkloadKind kind, const WorkloadParams& params)
      : kind_(kind), params_(params), gpus_(params.gpus) {
    for (std::size_t gpu = 0; gpu < params.gpus; ++gpu) {
      State& state = gpus_[gpu];
      state.rng = params.seed * 0x100000001B3ull + gpu;
      if (kind == WorkloadKind::kIncast) {
        state.messages = gpu == 0 ? 0 : params.repeat;
      } else if (kind == WorkloadKind::kMessageRate) {
        state.messages = params.repeat * kMessagesPerRepeat;
      } else {
        state.messages = params.repeat * (params.gpus - 1);
      }
      state.ops_left = state.messages * ops_per_message();
      gpus_left_ += state.ops_left > 0;
    }
  }

  bool peek(GpuId gpu, OpSpec& op) override {
    State& state = gpus_[gpu];
    if (!state.cursor.active) {
      if (state.started == state.messages) return false;
      start_message(gpu, state);
    }
    op = next_piece(state.cursor, params_.max_op_bytes);
    op.read = params_.reads;
    return true;
  }

  void issued(GpuId gpu) override {
    State& state = gpus_[gpu];
    state.cursor.offset += next_piece(state.cursor, params_.max_op_bytes).bytes;
    if (state.cursor.offset == state.cursor.bytes) state.cursor.active = false;
  }

  void completed(GpuId gpu, std::vector<GpuId>&) override {
    // A GPU finishes once: the one count two threads may share changes that rarely.
    if (--gpus_[gpu].ops_left == 0) gpus_left_.fetch_sub(1, std::memory_order_relaxed);
  }
  bool done() const override { return gpus_left_.load(std::memory_order_relaxed) == 0; }
  bool independent_gpus() const override { return true; }
  bool gpu_done(GpuId gpu) const override { return gpus_[gpu].ops_left == 0; }

 private:
  // A cache line each: GPUs of two partitions may be handled on two threads at once.
  struct alignas(64) State {
    std::uint64_t messages = 0;
    std::uint64_t ops_left = 0;  // operations not yet completed
    std::uint64_t started = 0;
    std::uint64_t rng = 0;
    Cursor cursor;
  };

  std::uint64_t ops_per_message() const {
    return (params_.bytes + params_.max_op_bytes - 1) / params_.max_op_bytes;
  }

  void start_message(GpuId gpu, State& state) {
    const std::size_t n = params_.gpus;
    GpuId dst = 0;
    switch (kind_) {
      case WorkloadKind::kIncast:
        dst = 0;
        break;
      case WorkloadKind::kMessageRate:  // round robin over the next `peers` GPUs
        dst = static_cast<GpuId>((gpu + 1 + state.started % params_.peers) % n);
        break;
      case WorkloadKind::kRandom:
        // Uniform over the n - 1 other GPUs (the bias of a 64-bit modulo is negligible).
        dst = static_cast<GpuId>((gpu + 1 + splitmix64(state.rng) % (n - 1)) % n);
        break;
      default:  // all-to-all: shift pattern, GPU g sends to g+1, g+2, ... so no two collide
        dst = static_cast<GpuId>((gpu + 1 + state.started % (n - 1)) % n);
        break;
    }
    ++state.started;
    state.cursor =
        Cursor{true, dst, landing_address(gpu, params_.bytes, params_.hbm_bytes), params_.bytes, 0};
  }

  WorkloadKind kind_;
  WorkloadParams params_;
  std::vector<State> gpus_;
  std::atomic<std::size_t> gpus_left_{0};  // GPUs with operations not yet completed
};

// Ring allreduce: 2(N-1) steps (reduce-scatter, then all-gather) per repeat; in each step
// every GPU writes ceil(B / N) bytes to GPU (g + 1) % N; a step starts when every write of the
// previous step has completed (bulk-synchronous).
class RingWorkload : public Workload {
 public:
  explicit RingWorkload(const WorkloadParams& params)
      : params_(params),
        chunk_((params.bytes + params.gpus - 1) / params.gpus),
        steps_(2 * (params.gpus - 1) * params.repeat),
        cursors_(params.gpus) {
    ops_per_step_ = params.gpus * ((chunk_ + params.max_op_bytes - 1) / params.max_op_bytes);
    start_step();
  }

  bool peek(GpuId gpu, OpSpec& op) override {
    const Cursor& cursor = cursors_[gpu];
    if (!cursor.active) return false;
    op = next_piece(cursor, params_.max_op_bytes);
    return true;
  }

  void issued(GpuId gpu) override {
    Cursor& cursor = cursors_[gpu];
    cursor.offset += next_piece(cursor, params_.max_op_bytes).bytes;
    if (cursor.offset == cursor.bytes) cursor.active = false;
  }

  void completed(GpuId, std::vector<GpuId>& wake) override {
    if (++step_completed_ < ops_per_step_) return;
    ++step_;
    if (step_ == steps_) return;
    start_step();
    for (std::size_t gpu = 0; gpu < params_.gpus; ++gpu) wake.push_back(static_cast<GpuId>(gpu));
  }

  bool done() const override { return step_ == steps_; }

 private:
  void start_step() {
    step_completed_ = 0;
    for (std::size_t gpu = 0; gpu < params_.gpus; ++gpu) {
      const auto src = static_cast<GpuId>(gpu);
      cursors_[gpu] = Cursor{true, static_cast<GpuId>((gpu + 1) % params_.gpus),
                             landing_address(src, chunk_, params_.hbm_bytes), chunk_, 0};
    }
  }

  WorkloadParams params_;
  std::uint64_t chunk_;
  std::uint64_t steps_;
  std::uint64_t step_ = 0;
  std::uint64_t ops_per_step_ = 0;
  std::uint64_t step_completed_ = 0;
  std::vector<Cursor> cursors_;
};

// Reads (loads) or writes from GPU 0 to GPU 1, one at a time, on an otherwise idle fabric.
class LatencyWorkload : public Workload {
 public:
  LatencyWorkload(const WorkloadParams& params, bool read)
      : params_(params), total_(kLoadsPerRepeat * params.repeat), read_(read) {}

  bool peek(GpuId gpu, OpSpec& op) override {
    if (gpu != 0 || outstanding_ || issued_ == total_) return false;
    op = OpSpec{read_, 1, 0, static_cast<std::uint32_t>(params_.bytes)};
    return true;
  }
  void issued(GpuId) override {
    ++issued_;
    outstanding_ = true;
  }
  void completed(GpuId, std::vector<GpuId>&) override {
    outstanding_ = false;
    ++completed_;
  }
  bool done() const override { return completed_ == total_; }

 private:
  WorkloadParams params_;
  std::uint64_t total_;
  std::uint64_t issued_ = 0;
  std::uint64_t completed_ = 0;
  bool read_;
  bool outstanding_ = false;
};

}  // namespace

std::unique_ptr<Workload> make_workload(WorkloadKind kind, const WorkloadParams& params) {
  if (params.gpus < 2) throw std::invalid_argument("a workload needs at least 2 GPUs");
  if (params.bytes == 0) throw std::invalid_argument("--bytes must be at least 1");
  if (params.bytes > params.hbm_bytes) {
    throw std::invalid_argument("--bytes " + std::to_string(params.bytes) +
                                " is larger than a GPU's local memory (fabric.hbm_bytes " +
                                std::to_string(params.hbm_bytes) + ")");
  }
  if (params.repeat == 0) throw std::invalid_argument("--repeat must be at least 1");
  if (params.max_op_bytes == 0) throw std::invalid_argument("max_op_bytes must be positive");
  if (params.peers >= params.gpus) {
    throw std::invalid_argument("--peers must be at most the GPUs less one (" +
                                std::to_string(params.gpus - 1) + ")");
  }
  switch (kind) {
    case WorkloadKind::kAllReduceRing:
      return std::make_unique<RingWorkload>(params);
    case WorkloadKind::kLoadLatency:
    case WorkloadKind::kReadLatency:
    case WorkloadKind::kWriteLatency:
      if (params.bytes > params.max_op_bytes) {
        throw std::invalid_argument(std::string(to_string(kind)) +
                                    ": --bytes must fit one operation (" +
                                    std::to_string(params.max_op_bytes) + " B)");
      }
      return std::make_unique<LatencyWorkload>(params, kind != WorkloadKind::kWriteLatency);
    case WorkloadKind::kStream:
      return make_stream_workload(params);
    case WorkloadKind::kMessageRate: {
      WorkloadParams rate = params;
      if (rate.peers == 0) rate.peers = params.gpus - 1;
      return std::make_unique<ListWorkload>(kind, rate);
    }
    default:
      return std::make_unique<ListWorkload>(kind, params);
  }
}

}  // namespace ethx::sim
