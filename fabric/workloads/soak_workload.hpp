// The soak workload (`ethx soak`): a long random mix of 8-byte posted stores, loads and
// fetch-adds from this GPU to every other one, each checked against a model of what this GPU
// wrote, then a sweep that reads every written word back.
//
// Every GPU writes only its own slice of each peer's memory and adds only to its own counter
// there, so the model is exact: a load must return the last value this GPU stored at that
// address before issuing it (transactions to one destination are performed in issue order),
// and fetch-adds to one counter must return 0, 1, 2, ... in issue order. A lost store shows up
// as a mismatch, a lost request as a timeout ("hung" operation), a reordered one as a mismatch.
#pragma once

#include <cstdint>
#include <vector>

#include "fabric/node/node_runtime.hpp"
#include "fabric/workloads/bench_workloads.hpp"

namespace ethx {

struct SoakRun {
  std::uint64_t ops = 0;  // stores + loads + atomics issued
  std::uint64_t stores = 0;
  std::uint64_t loads = 0;
  std::uint64_t atomics = 0;
  // Loads and atomics whose result was checked, plus stores whose value was read back (by a
  // later load or by the final sweep) and matched. A store overwritten before anyone read it
  // is not counted.
  std::uint64_t verified_ops = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t timeouts = 0;  // operations that ended by timing out: would have hung
  std::uint64_t errors = 0;    // any other failed operation
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;  // end of the random mix, before the sweep
};

class SoakWorkload {
 public:
  SoakWorkload(NodeRuntime& node, const BenchWorkloads& bench);

  SoakRun run(std::uint64_t ops, std::uint64_t seed, std::uint32_t outstanding);

 private:
  enum class WordState : std::uint8_t { kUnknown, kUnconfirmed, kConfirmed };
  struct PeerModel {
    std::vector<std::uint64_t> value;  // what this GPU last stored at each word
    std::vector<WordState> state;
    std::uint64_t counter_next = 0;  // the old value the next fetch-add must return
  };
  struct Pending {
    enum class Kind : std::uint8_t { kLoad, kAtomic } kind = Kind::kLoad;
    std::uint64_t expected = 0;
    bool confirms_store = false;
  };

  // Engine destination and address of a word of `peer`'s memory, through the address map.
  bool translate(GpuId peer, std::uint64_t remote_offset, Access access, GpuId& dst,
                 std::uint64_t& address);
  void issue_store(GpuId peer, std::size_t word, std::uint64_t value, SoakRun& run);
  void issue_load(GpuId peer, std::size_t word, SoakRun& run);
  void issue_atomic(GpuId peer, SoakRun& run);
  void settle(const Completion& completion, SoakRun& run);
  // Waits for one completion and returns it; counts a failure to `run`.
  std::optional<Completion> wait_one(SoakRun& run);
  void reset_counters(SoakRun& run);
  void sweep(SoakRun& run);
  std::uint64_t word_offset(std::size_t word) const;
  std::uint64_t counter_offset() const;

  NodeRuntime& node_;
  const BenchWorkloads& bench_;
  std::vector<PeerModel> peers_;  // indexed by GpuId; this GPU's own entry is unused
  std::unordered_map<OpId, Pending> pending_;
  std::vector<Segment> segments_;
};

}  // namespace ethx
