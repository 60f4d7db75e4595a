// One side of the simulated fabric's events, with everything its handlers write as they run:
// its clock, its event queue, the frames it holds in flight and its scratch buffers.
//
// SimFabric splits its events in two sides: the GPUs' (issue, delivery to an engine, wake-ups)
// and the switches' (a frame arriving at a switch, a port starting its next frame, releases,
// link faults). With the load/store engine and no link layer they are two partitions, which may
// run on two threads (sim_windows.cpp): a frame crossing from one side to the other travels as a
// CrossingFrame, collected in the sender's outbox and handed over between windows. Otherwise
// (the RoCE engine, link-level retry or flow control: their NIC touches both sides at once) both
// sides are one partition, and the run is the plain single-queue loop.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "address-map/fabric_types.hpp"
#include "fabric/sim/sim_event_queue.hpp"
#include "fabric/sim/sim_link.hpp"
#include "packet-engine/effects.hpp"
#include "packet-engine/wire.hpp"
#include "switch/core/switch_core.hpp"

namespace ethx::sim {

// What a partition's GPUs counted for the report, merged at the end of the run.
struct GpuTally {
  std::uint64_t frames_delivered = 0;  // frames handed to GPU engines
  std::uint64_t ops_ok = 0;
  std::uint64_t ops_failed = 0;
  std::uint64_t timeouts = 0;
  std::uint64_t unreachable = 0;
  std::uint64_t payload_bytes = 0;
  TimePs makespan_ps = 0;               // the last completion
  std::optional<TimePs> first_down_ps;  // a requester first marked a peer down
  std::optional<TimePs> first_up_ps;    // ... and a peer up again
  std::size_t peers_down = 0;           // (requester, peer) pairs marked down now
  std::size_t gpus = 0;                 // GPUs whose events the partition runs
  std::size_t gpus_done = 0;            // of which the workload is done (independent GPUs)
  std::vector<TimePs> latencies_ps;     // every completed operation's
};

// A frame on its way to the other partition: it reaches the far end of `link` at `at_ps`
// (a switch's ingress, or the GPU's NIC, where its delivery is worked out).
struct CrossingFrame {
  TimePs at_ps = 0;
  std::uint32_t link = 0;
  wire::Frame frame;
  // Toward a switch: its headers, read by the sender, which wrote them (the switch's thread
  // then never touches the bytes of a frame it forwards, nor pulls them into its cache).
  SwitchCore::IngressRead read;
};

// Cache-line aligned: two partitions sit side by side in SimFabric, each written by its own
// thread for every event.
struct alignas(64) SimPartition {
  explicit SimPartition(double rate_gbps) : serialization(rate_gbps) {}

  EventQueue queue;
  TimePs now = 0;
  GpuTally tally;
  std::uint64_t events = 0;        // handled so far
  std::size_t timers_pending = 0;  // events in `queue` that are timers, not work in progress
  Effects effects;                 // what an engine or switch call produced; its spare buffers
  SerializationTable serialization;
  std::vector<PortId> touched;  // switch ports a call queued frames on
  std::vector<GpuId> wake;      // GPUs a completion lets issue again
  // Frames in flight on links or waiting for an engine, by slot; free slots hold no buffer.
  std::vector<wire::Frame> slots;
  std::vector<std::uint32_t> free_slots;
  // By slot, for frames that crossed to a switch: their headers as the sender read them.
  std::vector<SwitchCore::IngressRead> ingress_reads;
  // Frames for the other partition, by window parity: the other side empties one while this
  // one fills the other (sim_windows.cpp).
  std::array<std::vector<CrossingFrame>, 2> outbox;
  std::uint64_t window = 0;            // windows run so far; outbox[window & 1] fills now
  TimePs window_end_ps = UINT64_MAX;   // the window runs the events earlier than this
  TimePs outbox_next_ps = UINT64_MAX;  // the earliest arrival in outbox[window & 1]

  TimeNs now_ns() const { return now / kPsPerNs; }

  // A slot for a frame in flight: the last one freed, or a new one (rare once warm).
  std::uint32_t take_slot() {
    if (free_slots.empty()) [[unlikely]] {
      slots.emplace_back();
      return static_cast<std::uint32_t>(slots.size() - 1);
    }
    const std::uint32_t slot = free_slots.back();
    free_slots.pop_back();
    return slot;
  }
  // Frees `slot`; the buffer its frame leaves behind goes to the engines' spares.
  void release_slot(std::uint32_t slot);

  // Sends a frame to the other partition, to reach the far end of `link` at `arrival_ps`.
  // Throws std::logic_error if that is inside the window running now (the lookahead was
  // wrong: the other partition may have run past it).
  void send_across(std::uint32_t link, TimePs arrival_ps, wire::Frame&& frame,
                   const SwitchCore::IngressRead& read = {}) {
    if (arrival_ps < window_end_ps) [[unlikely]] {
      throw_inside_window(arrival_ps);
    }
    outbox[window & 1].push_back(CrossingFrame{arrival_ps, link, std::move(frame), read});
    outbox_next_ps = std::min(outbox_next_ps, arrival_ps);
  }
  // send_across's error, out of its way.
  [[noreturn, gnu::cold]] void throw_inside_window(TimePs arrival_ps) const;
};

}  // namespace ethx::sim
