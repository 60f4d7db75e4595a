// Traffic patterns for `ethx sim`. A workload only decides what each GPU issues next and
// when; the simulator asks it whenever a GPU may issue (it has free tags) and tells it about
// every completed operation. Everything is a pure function of (gpus, bytes, seed, repeat), so
// two runs issue the same operations in the same order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "address-map/fabric_types.hpp"

namespace ethx::sim {

enum class WorkloadKind : std::uint8_t {
  kAllToAll,
  kAllReduceRing,
  kIncast,
  kRandom,
  kLoadLatency,  // = read-latency, under its first name
  kReadLatency,
  kWriteLatency,
  kMessageRate,
  // Not on the command line: the bench's own experiments for `ethx sim --calibrate`
  // (sim_stream_workload.hpp).
  kStream
};
const char* to_string(WorkloadKind kind);
bool parse_workload_kind(const std::string& text, WorkloadKind& out);
// Every workload name, for messages: "all-to-all, allreduce-ring, ...".
std::string workload_names();
// The default --bytes: 8 for the latency and message-rate workloads, 4096 for the others.
std::uint64_t default_bytes(WorkloadKind kind);

// One Requester operation: a non-posted write (completion = write ack) or a read.
struct OpSpec {
  bool read = false;
  GpuId dst = kInvalidGpu;
  std::uint64_t address = 0;  // in the destination's local memory
  std::uint32_t bytes = 0;
  // Load/store only (the stream workload): a posted write (no tag, no completion), an 8 B
  // fetch-add, or a flush of the posted writes to dst before it. A flush's `bytes` are the
  // posted bytes it stands for, counted as its payload when it completes.
  bool posted = false;
  bool atomic = false;
  bool flush = false;
  // Handed to the engine without polling it, so the next operations may share its frame (or
  // merge into its transaction): the bench polls its engine once every few stores.
  bool hold = false;
};

// The stream workload (kStream): what `ethx bench` does between two GPUs (or every pair).
enum class StreamOp : std::uint8_t { kRead, kWrite, kPostedWrite, kAtomic };
struct StreamParams {
  StreamOp op = StreamOp::kWrite;
  std::uint64_t ops_per_destination = 1;
  // Operations in flight per GPU (posted writes are not counted: they have no completion).
  std::uint32_t window = 1;
  // false: GPU 0 to GPU 1 only; true: every GPU to every other, destinations interleaved.
  bool every_gpu = false;
  // Posted writes: the engine is polled (its open frames sent) after every this many.
  std::uint32_t ops_per_poll = 1;
};

struct WorkloadParams {
  std::size_t gpus = 2;
  std::uint64_t bytes = 4096;  // per message (allreduce-ring: the buffer, B / N per step)
  std::uint64_t seed = 1;
  std::uint64_t repeat = 1;
  std::size_t peers = 0;  // message-rate: peers each GPU cycles through (0: all the others)
  bool reads = false;     // message-rate: reads (RDMA READs) instead of writes
  std::uint64_t hbm_bytes = 64ull << 20;
  // Messages longer than this are issued as several operations (a write may not need more
  // tags than the requester has).
  std::uint32_t max_op_bytes = 1 << 16;
  StreamParams stream;  // kStream only
};

// Writes to a GPU land in its first kLandingZoneBytes (each sender in its own slot of the
// message size, wrapping), so 1024 GPUs touch at most 1024 x 256 KiB of sparse memory.
inline constexpr std::uint64_t kLandingZoneBytes = std::uint64_t{256} * 1024;
// read-latency (load-latency) and write-latency issue this many operations per repeat, one at
// a time.
inline constexpr std::uint64_t kLoadsPerRepeat = 100;
// message-rate: operations each GPU issues per repeat.
inline constexpr std::uint64_t kMessagesPerRepeat = 1000;

class Workload {
 public:
  virtual ~Workload() = default;
  // The operation `gpu` would issue next, if it may issue one now.
  virtual bool peek(GpuId gpu, OpSpec& op) = 0;
  // `gpu` issued what peek() returned.
  virtual void issued(GpuId gpu) = 0;
  // An operation of `gpu` completed (successfully or not). Appends to `wake` the other GPUs
  // that may now have something to issue (the completing GPU is always retried).
  virtual void completed(GpuId gpu, std::vector<GpuId>& wake) = 0;
  // Every operation has been issued and completed.
  virtual bool done() const = 0;

  // Each GPU's calls read and write that GPU's state only, and completed() wakes no other GPU:
  // the simulator may then run groups of GPUs on different threads (sim_partition.hpp), and
  // asks gpu_done() instead of done() there. Calls for two GPUs may then run at once.
  virtual bool independent_gpus() const { return false; }
  // Every operation of `gpu` has been issued and completed. Only if independent_gpus().
  virtual bool gpu_done(GpuId /*gpu*/) const { return done(); }
};

// Throws std::invalid_argument on bad parameters (no bytes, bytes past local memory).
std::unique_ptr<Workload> make_workload(WorkloadKind kind, const WorkloadParams& params);

}  // namespace ethx::sim
