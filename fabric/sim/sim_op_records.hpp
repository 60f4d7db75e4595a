// What the simulator remembers of each operation until it completes: when the workload decided
// it, and its bytes (for its latency and the payload count).
//
// Kept by OpId in a ring of slots (a vector indexed by OpId grew by every operation of a run:
// 70 MB for 4 M operations, each page faulted in and never read again). Operations usually
// complete within a ring's length of each other; one that is still outstanding when its slot
// comes round again (waiting out a timeout while thousands of others complete) moves to a map,
// so every operation keeps its own record whatever order completions come in.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "fabric/sim/sim_event_heap.hpp"
#include "packet-engine/requester.hpp"

namespace ethx::sim {

struct OpRecord {
  TimePs decided_ps = 0;
  std::uint32_t bytes = 0;
};

class OpRecords {
 public:
  // `slots` is rounded up to a power of two (at least 1).
  explicit OpRecords(std::size_t slots = 1) { resize(slots); }
  void resize(std::size_t slots) { ring_.assign(std::bit_ceil(slots < 1 ? 1 : slots), Slot{}); }

  void add(OpId id, const OpRecord& record) {
    Slot& slot = slot_of(id);
    if (slot.id != kFree) moved_.emplace(slot.id, slot.record);  // still outstanding
    slot = Slot{id, record};
  }
  // The record add(id) kept; empty if there is none (an id never added, or taken already).
  OpRecord take(OpId id) {
    Slot& slot = slot_of(id);
    if (slot.id == id) {
      slot.id = kFree;
      return slot.record;
    }
    const auto moved = moved_.find(id);
    if (moved == moved_.end()) return OpRecord{};
    const OpRecord record = moved->second;
    moved_.erase(moved);
    return record;
  }
  // Records that had to move out of the ring, now.
  std::size_t moved() const { return moved_.size(); }

 private:
  static constexpr OpId kFree = 0;  // requesters number operations from 1
  struct Slot {
    OpId id = kFree;
    OpRecord record;
  };
  Slot& slot_of(OpId id) { return ring_[id & (ring_.size() - 1)]; }

  std::vector<Slot> ring_;
  // Only ever looked up by id, never iterated: its order cannot change a result.
  std::unordered_map<OpId, OpRecord> moved_;
};

}  // namespace ethx::sim
