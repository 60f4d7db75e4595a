// The requester side of a GPU's packet engine: turns loads, stores, atomics and flushes into
// transactions and matches the responses. Sans-I/O: it is handed `now` and returns frames
// through Effects; a runtime or the simulator drives it.
//
// Ordering (given a FIFO path, as a single switch provides): transactions to one destination
// leave in issue order and the completer performs them in arrival order, so posted writes to
// one destination are performed in order, a read after a write to the same address returns
// the written data, and a flush completes after every earlier write to that destination.
//
// Peer liveness (EngineConfig::liveness): after `down_after_timeouts` request timeouts in a row
// to one GPU within `timeout_window_ns`, with no frame from it in between, that GPU is marked
// down. Reads, writes, atomics and flushes to a down GPU then complete at once with
// kUnreachable and posted writes to it are dropped (and counted), instead of each waiting a
// whole request timeout. While it is down, poll() sends it a probe (a flush with a reserved
// tag) every `probe_interval_ns`; the probe's answer, or any other frame from the GPU
// (on_peer_frame()), marks it up again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "packet-engine/effects.hpp"
#include "packet-engine/engine_config.hpp"
#include "packet-engine/fifo.hpp"
#include "packet-engine/tx_framer.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {

using OpId = std::uint64_t;

enum class OpKind : std::uint8_t { kRead, kWrite, kAtomic, kFlush };
enum class AtomicOp : std::uint8_t { kFetchAdd, kSwap, kCompareSwap };

struct Completion {
  OpId id = 0;
  OpKind kind = OpKind::kRead;
  wire::Status status = wire::Status::kOk;
  GpuId dst_gpu = kInvalidGpu;
  std::uint64_t address = 0;
  std::uint64_t fault_addr = 0;  // first failing byte when status != kOk
  std::vector<std::byte> data;   // read data
  std::uint64_t old_value = 0;   // atomics: the value before the operation
  TimeNs issued_ns = 0;
  TimeNs completed_ns = 0;
  bool ok() const { return status == wire::Status::kOk; }
};

struct RequesterCounters {
  std::uint64_t ops_issued = 0;
  std::uint64_t ops_completed = 0;
  std::uint64_t ops_failed = 0;
  std::uint64_t posted_writes = 0;
  std::uint64_t posted_bytes = 0;
  std::uint64_t writes_combined = 0;  // posted writes merged into the previous transaction
  std::uint64_t timeouts = 0;
  std::uint64_t busy_rejects = 0;           // no free tag
  std::uint64_t stale_responses = 0;        // tag not outstanding, wrong generation or wrong sender
  std::uint64_t bad_responses = 0;          // opcode or length does not match the request
  std::uint64_t peers_marked_down = 0;      // liveness: up -> down transitions
  std::uint64_t peers_marked_up = 0;        // liveness: down -> up transitions
  std::uint64_t ops_fast_failed = 0;        // completed at once with kUnreachable: peer down
  std::uint64_t posted_writes_dropped = 0;  // posted writes not sent: peer down
  std::uint64_t probes_sent = 0;
  std::uint64_t probes_answered = 0;
};

class Requester {
 public:
  Requester(const EngineConfig& config, TxFramer& framer);

  // Tags a request of `bytes` needs (reads and non-posted writes split at the frame MTU).
  std::size_t tags_needed(std::uint64_t bytes) const;
  std::size_t free_tags() const { return free_tags_.size(); }
  std::size_t outstanding_ops() const { return ops_.size() - free_ops_.size(); }

  // Each returns an id; its Completion appears in take_completion(), possibly at once (an
  // error such as kBusy or kUnreachable).
  OpId read(GpuId dst, std::uint64_t address, std::uint32_t length, TimeNs now, Effects& effects);
  OpId write(GpuId dst, std::uint64_t address, std::span<const std::byte> data, TimeNs now,
             Effects& effects);
  OpId atomic(GpuId dst, std::uint64_t address, AtomicOp op, std::uint8_t width_bytes,
              std::uint64_t operand, std::uint64_t compare, TimeNs now, Effects& effects);
  OpId flush(GpuId dst, TimeNs now, Effects& effects);
  // Posted: no completion. False (and nothing sent) if dst is unknown or down, or data is
  // empty.
  bool write_posted(GpuId dst, std::uint64_t address, std::span<const std::byte> data, TimeNs now,
                    Effects& effects);

  // A response transaction from `src` arrived.
  void on_response(GpuId src, const wire::TxnView& txn, TimeNs now);
  // A valid frame from `src` arrived (any frame: it proves the GPU is alive).
  void on_peer_frame(GpuId src);
  // Expires requests past their deadline and probes down peers; asks to be woken for the next
  // deadline or probe.
  void poll(TimeNs now, Effects& effects);
  // Whether poll(now) may expire a request: a runtime hands over every frame that has already
  // arrived first, so that an answered request is never timed out because its response was still
  // waiting in the port (a runtime starved of the CPU for a whole request timeout).
  bool deadline_due(TimeNs now) const {
    return !deadlines_.empty() && deadlines_.front().at_ns <= now;
  }

  bool peer_down(GpuId gpu) const {
    return gpu < peer_flags_.size() && (peer_flags_[gpu] & kPeerDown) != 0;
  }
  // The GPUs marked down, in the order they went down.
  const std::vector<GpuId>& down_peers() const { return down_peers_; }

  std::optional<Completion> take_completion();
  bool has_completion() const { return !completions_.empty(); }
  const RequesterCounters& counters() const { return counters_; }
  // Changes whenever a peer is marked down or up (peers_marked_down + peers_marked_up). It sits
  // beside the completions, which a runtime reads after every call anyway, so a runtime that
  // follows liveness checks this instead of the counters' colder line (docs/simulator.md,
  // "Round 6").
  std::uint64_t liveness_transitions() const { return liveness_transitions_; }

 private:
  struct TagSlot {
    bool busy = false;
    std::uint8_t generation = 0;
    std::uint32_t op = 0;  // the op's index in ops_
    GpuId dst = kInvalidGpu;
    wire::Opcode expected = wire::Opcode::kReadResp;
    std::uint64_t address = 0;
    std::uint32_t length = 0;
    std::uint32_t data_offset = 0;  // where this fragment's data goes in the op's buffer
    TimeNs deadline_ns = 0;
  };
  struct PendingOp {
    Completion completion;
    std::uint32_t fragments_left = 0;
  };
  struct Deadline {
    TimeNs at_ns;
    std::uint16_t tag;
  };
  struct PeerLiveness {
    std::uint32_t timeouts_in_row = 0;
    TimeNs first_timeout_ns = 0;  // of the current run of timeouts
    TimeNs next_probe_ns = 0;     // while down
  };
  // Per peer, one byte that every operation and every received frame reads, instead of the
  // peer's PeerLiveness (a cold line each time with a thousand peers): whether it is down, and
  // whether it has timeouts counted (so a frame from it has something to reset).
  enum PeerFlag : std::uint8_t { kPeerDown = 1, kPeerTimedOut = 2 };

  // Ops are addressed by their index in ops_ (an OpIndex), ids are only handed out.
  using OpIndex = std::uint32_t;
  OpIndex begin_op(OpKind kind, GpuId dst, std::uint64_t address, TimeNs now);
  // Moves the op's completion to completions_ and frees its index.
  void complete(OpIndex op, TimeNs now);
  void fail_now(OpIndex op, wire::Status status, std::uint64_t fault_addr, TimeNs now);
  std::uint16_t take_tag(OpIndex op, GpuId dst, wire::Opcode expected, std::uint64_t address,
                         std::uint32_t length, std::uint32_t data_offset, TimeNs now);
  void resolve_fragment(std::uint16_t index, wire::Status status, std::uint64_t fault_addr,
                        TimeNs now);
  // peer_flags_ has one entry per GPU of the config, and is read next anyway (the config's
  // vector is a line of its own).
  bool dst_known(GpuId dst) const { return dst < peer_flags_.size(); }
  // Fails `id` at once if `dst` is unknown or down; true if it did.
  bool fail_if_unreachable(OpIndex op, GpuId dst, std::uint64_t address, TimeNs now);
  void note_timeout(GpuId dst, TimeNs now);
  void probe_down_peers(TimeNs now, Effects& effects);

  const EngineConfig& config_;
  TxFramer& framer_;
  std::vector<TagSlot> slots_;
  Fifo<std::uint16_t> free_tags_;  // FIFO so a just-freed tag is reused last
  Fifo<Deadline> deadlines_;       // issue order == deadline order
  // Operations in progress, by index; an index is reused once its op completes, so the
  // table is as large as the most ops ever outstanding at once (at most one per tag).
  std::vector<PendingOp> ops_;
  std::vector<OpIndex> free_ops_;
  Fifo<Completion> completions_;
  std::uint64_t liveness_transitions_ = 0;  // see liveness_transitions()
  std::vector<PeerLiveness> liveness_;      // indexed by GpuId
  std::vector<std::uint8_t> peer_flags_;    // PeerFlag bits, indexed by GpuId
  std::vector<GpuId> down_peers_;
  OpId next_op_ = 1;
  RequesterCounters counters_;
};

}  // namespace ethx
