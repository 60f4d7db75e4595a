// The switch core: an ETH-X-style Ethernet switch, sans-I/O.
//
// It never opens sockets, starts threads or reads clocks. A runtime hands it a frame, the
// port it arrived on and `now`; the core puts copies into per-port egress queues, and the
// runtime drains those queues (front/pop) at whatever pace its links allow. The same core
// runs under the real-time runtimes and inside the discrete-event simulator.
// Semantics are documented in docs/switch.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "address-map/fabric_types.hpp"
#include "packet-engine/fifo.hpp"
#include "packet-engine/flow_control.hpp"
#include "packet-engine/link_retry.hpp"
#include "packet-engine/mac_addr.hpp"
#include "packet-engine/wire.hpp"
#include "switch/core/earliest_deadline.hpp"

namespace ethx {

using PortId = std::uint32_t;

struct SwitchPortConfig {
  double rate_gbps = 800.0;                  // link rate; stored for the simulator
  std::size_t egress_queue_bytes = 1 << 20;  // byte limit of this port's egress queue
  // Link-level retry on this port's hop (SwitchConfig::link_retry; docs/link-layer.md): what
  // the port sends carries an LLR trailer and waits in a replay buffer until acknowledged; what
  // it receives must carry one. The far end (a GPU's NIC or another switch) must do the same.
  bool link_retry = false;
  // Whether this port's hop runs SwitchConfig::flow_control (when that is not "none"): false
  // where the far end does not (the emulator's guest NICs and host RDMA port).
  bool flow_control = true;
  // The hop's one-way propagation delay: sizes the PFC headroom (SwitchConfig::flow_control).
  TimeNs propagation_ns = 0;
};

// Faults a port injects into the frames it receives or (SwitchConfig::tx_faults; drop and
// corrupt only) sends: fault injection for reliability tests, docs/switch.md. Probabilities per
// frame, drawn from the switch's own seeded generator, so a run with the same seed and the same
// frames injects the same faults.
struct PortFaults {
  double drop_rate = 0.0;     // the frame is lost
  double corrupt_rate = 0.0;  // one bit of the frame is flipped (fabric frames then fail the CRC)
  double reorder_rate = 0.0;  // the frame overtakes the one queued before it on its egress port
  // A delay spike stalls the port's ingress link: the frame, and every frame arriving on the
  // port after it, waits until delay_spike_ns after the frame arrived, then they move on in
  // arrival order. Both must be set for spikes to happen.
  double delay_spike_rate = 0.0;
  TimeNs delay_spike_ns = 0;
  bool link_down = false;  // the link is down (set_faults applies it through set_port_up)
  // Whether on_frame has any per-frame draw to make (link state is not per frame).
  bool any() const {
    return drop_rate > 0 || corrupt_rate > 0 || reorder_rate > 0 ||
           (delay_spike_rate > 0 && delay_spike_ns > 0);
  }
  bool operator==(const PortFaults&) const = default;
};
// The longest delay spike set_faults accepts: a minute is already far past any timeout, and the
// bound keeps `now + delay` far from overflowing.
inline constexpr TimeNs kMaxDelaySpikeNs = 60'000'000'000;
inline constexpr TimeNs kNoRelease = std::numeric_limits<TimeNs>::max();

struct SwitchConfig {
  std::vector<SwitchPortConfig> ports;
  TimeNs forwarding_latency_ns = 250;  // pipeline latency; stored for the simulator
  // Learn source MACs and flood broadcast/multicast/unknown unicast to all other ports. Only
  // safe where the topology cannot loop (a single switch): there is no spanning tree, so a
  // flood in a leaf/spine fabric would circulate forever. Multi-layer topologies turn it off
  // and rely on static routes.
  bool learning = true;
  std::vector<std::pair<MacAddr, PortId>> static_routes;  // dst MAC -> egress port
  // Port security (threat model: a compromised node can put any frame on its own port): a
  // port bound to a GPU accepts only frames whose source MAC is that GPU's and, for fabric
  // frames, whose source GPU field is that GPU; anything else is dropped as spoofed before it
  // can be learned or forwarded. Unbound ports (spine links, NICs of VMs) accept any source.
  struct PortBinding {
    PortId port = 0;
    MacAddr mac;
    GpuId gpu = kInvalidGpu;
  };
  std::vector<PortBinding> port_bindings;
  std::vector<std::pair<PortId, PortFaults>> faults;     // ingress port -> faults
  std::vector<std::pair<PortId, PortFaults>> tx_faults;  // egress port -> faults on what it sends
  LinkRetryConfig link_retry;  // for the ports with SwitchPortConfig::link_retry
  // Link training on every LLR port (LinkRetry::start_training) at start and whenever a port
  // comes back up: where the far ends are processes that start and restart on their own (the
  // emulator). Nonces are drawn from `link_training_seed`. The simulator leaves it off: its
  // hops start together and a link flap resets both ends.
  bool link_training = false;
  std::uint64_t link_training_seed = 1;
  // Flow control per traffic class on every port (docs/link-layer.md), or none. With it, a
  // port's egress queue is one per class, served by deficit round robin, and frames are never
  // tail-dropped: the far ends hold them instead (credits or pause), so the buffer is bounded
  // per ingress port and class, as in a shared-buffer switch, and egress_queue_bytes does not
  // apply. Throws std::invalid_argument naming class_buffer_bytes if PFC's headroom does not fit.
  FlowControlConfig flow_control;
  std::uint64_t fault_seed = 1;
  // Whether fabric frames carry a CRC that is checked (wire::Crc). Only the simulator turns it
  // off: its frames come from FrameBuilder (CRC field zero) and only move between its own
  // objects. The corrupt fault then computes the frame's CRC before it flips a bit, and the
  // damaged frame is checked as always: the same drops, the same counters.
  wire::Crc crc = wire::Crc::kOn;
};

enum class DropReason : std::uint8_t {
  kMalformed,
  kQueueFull,
  kUnknownDestination,
  kHairpin,
  kBadPort,
  kSpoofed,
};
const char* to_string(DropReason reason);

struct PortCounters {
  // rx counts every frame handed to on_frame on this port, dropped or not.
  std::uint64_t rx_frames = 0;
  std::uint64_t rx_bytes = 0;
  // tx counts frames the runtime dequeued (pop), i.e. actually sent.
  std::uint64_t tx_frames = 0;
  std::uint64_t tx_bytes = 0;
  std::uint64_t drops_malformed = 0;            // on the ingress port
  std::uint64_t drops_queue_full = 0;           // on the egress port
  std::uint64_t drops_unknown_destination = 0;  // on the ingress port
  std::uint64_t drops_hairpin = 0;              // on the ingress port
  std::uint64_t drops_spoofed = 0;        // on the ingress port: source not the GPU bound to it
  std::uint64_t faults_dropped = 0;       // injected (ingress port)
  std::uint64_t faults_corrupted = 0;     // injected (ingress port); counted malformed afterwards
  std::uint64_t faults_reordered = 0;     // injected (ingress port)
  std::uint64_t faults_delay_spikes = 0;  // injected (ingress port): stalls started
  std::uint64_t faults_delayed = 0;       // frames held by a stall (ingress port)
  std::uint64_t faults_tx_dropped = 0;    // injected on what the port sends (tx_faults)
  // Injected on what the port sends (tx_faults). Where frames carry no CRC and the port runs
  // no link-level retry, the far end's MAC would drop the frame: it is not sent.
  std::uint64_t faults_tx_corrupted = 0;
  // Frames lost because this port was down: queued when it went down, routed to it while
  // down, or arriving on it while down.
  std::uint64_t drops_link_down = 0;
  std::uint64_t flooded_frames = 0;  // frames this port received that were flooded
  std::uint64_t queue_bytes_high_water = 0;
  std::array<std::uint64_t, wire::kDecodeErrorCount> malformed_by_reason{};  // by DecodeError
};

struct QueuedFrame {
  wire::Frame bytes;
  TimeNs enqueued_ns = 0;
  PortId ingress = 0;
  // Flow control: the frame holds buffer of its ingress port's class until it is sent.
  bool holds_ingress_buffer = false;
};

class SwitchCore {
 public:
  // Throws std::invalid_argument on 0 ports, a port whose rate is not positive, a static route
  // naming a port out of range, or one MAC statically routed to two different ports.
  explicit SwitchCore(SwitchConfig config);

  // A frame arrived on `ingress`. Appends (never clears) to `egress_touched` every port whose
  // queue received a copy, so event-driven runtimes know which ports to kick. Never throws on
  // bad input: every rejected frame is counted instead (see docs/switch.md).
  void on_frame(PortId ingress, std::span<const std::byte> frame, TimeNs now,
                std::vector<PortId>& egress_touched);
  // on_frame for a runtime that has no further use for `frame`: where on_frame would copy it
  // into one egress queue (or hold it behind a delay spike), this takes its buffer instead and
  // leaves `frame` empty; so it does, to write its own ACKs and credit updates into, with a
  // link-level retry or flow-control frame the port consumed. Otherwise `frame` is left as it
  // was. The same decisions, counters and queues as on_frame: the simulator moves every frame
  // through its switches this way.
  void on_owned_frame(PortId ingress, wire::Frame& frame, TimeNs now,
                      std::vector<PortId>& egress_touched);

  // What the switch reads of a frame's headers at ingress, to forward it: read once by
  // whoever has the bytes at hand. The simulator reads it on the thread that wrote the frame,
  // so that the switch's thread never touches the bytes of a frame it only forwards
  // (fabric/sim/sim_partition.hpp).
  struct IngressRead {
    bool ethernet_ok = false;  // long enough for an Ethernet header
    MacAddr dst;
    MacAddr src;
    std::uint16_t ether_type = 0;
    // Fabric frames only: validate_frame's verdict under `crc`, and the source GPU.
    wire::Crc crc = wire::Crc::kOn;
    wire::DecodeError fabric_error = wire::DecodeError::kOk;
    GpuId src_gpu = kInvalidGpu;
  };
  // Pure: reads `frame` only; safe on any thread.
  static IngressRead read_ingress(std::span<const std::byte> frame, wire::Crc crc);
  wire::Crc crc() const { return config_.crc; }
  // on_owned_frame with the frame's headers already read (read_ingress with crc()): the same
  // decisions, counters and queues, without reading the bytes unless a fault needs them.
  void on_owned_frame(PortId ingress, wire::Frame& frame, const IngressRead& read, TimeNs now,
                      std::vector<PortId>& egress_touched);

  // Changes the faults `ingress` injects from now on (run-time fault injection), including its
  // link state (faults.link_down). Throws std::invalid_argument for a rate outside [0, 1] or a
  // delay spike over kMaxDelaySpikeNs, naming the field; ignores an out-of-range port. Frames a
  // spike already holds keep their release time.
  void set_faults(PortId ingress, const PortFaults& faults);
  const PortFaults& faults(PortId ingress) const;  // throws std::out_of_range

  // Faults on what `egress` sends, from now on: drop_rate and corrupt_rate only. Throws
  // std::invalid_argument naming the field for a rate outside [0, 1] or any other fault set;
  // ignores an out-of-range port.
  void set_tx_faults(PortId egress, const PortFaults& faults);
  const PortFaults& tx_faults(PortId egress) const;  // throws std::out_of_range

  // Time. Frames held by a stalled ingress link (delay spikes) move on when a call hands in a
  // `now` at or past their release time: on_frame on that port, or release_held, which also
  // runs the link-level retry timers that are due (ACK delay, replay) and appends the ports
  // that then have a frame to send. A runtime calls release_held every pass and, when idle,
  // sleeps no longer than until next_release_ns().
  void release_held(TimeNs now, std::vector<PortId>& egress_touched);
  TimeNs next_release_ns() const {  // kNoRelease when nothing is held or timed
    // Inline for the usual switch, which has neither: the simulator asks after every frame.
    if (ports_holding_ == 0 && llr_ports_.empty() && flow_ports_.empty()) return kNoRelease;
    return next_timed_release_ns();
  }
  // True while a spike stalls `ingress`: a runtime that can back-pressure the sender (shared
  // memory rings) leaves the port's frames where they are until then; others may hand them in
  // and the core holds them (up to the port's egress_queue_bytes, beyond that they are dropped
  // as queue-full on the ingress port).
  bool ingress_stalled(PortId ingress, TimeNs now) const;
  std::size_t held_frames(PortId ingress) const;

  // The egress side, drained by the runtime. Out-of-range ports read as empty.
  // nullptr if empty; valid until the next call that adds to or takes from the queue. Inline:
  // the simulator asks after every frame a port sends.
  // On a port with link-level retry or tx faults, it is the frame prepared to go next (an ACK
  // or NAK, a replay, or the queue's head with its trailer), already out of the queue.
  const QueuedFrame* front(PortId egress) const {
    if (egress >= ports_.size()) return nullptr;
    const Port& port = ports_[egress];
    if (port.staging) return port.has_staged ? &port.staged : nullptr;
    return port.queue.empty() ? nullptr : &port.queue.front();
  }
  // The runtime sent front() (at `now`; without it, at the latest `now` the core was handed);
  // counts tx.
  void pop(PortId egress, TimeNs now);
  void pop(PortId egress) { pop(egress, now_ns_); }
  // pop(), handing the frame's bytes to `out` instead of freeing them (no copy; what `out`
  // held is freed). `out` is left empty if there is nothing queued.
  void pop_into(PortId egress, wire::Frame& out, TimeNs now);
  void pop_into(PortId egress, wire::Frame& out) { pop_into(egress, out, now_ns_); }
  std::size_t queued_bytes(PortId egress) const;
  std::size_t queued_frames(PortId egress) const;

  std::size_t port_count() const { return ports_.size(); }
  const PortCounters& counters(PortId port) const;  // throws std::out_of_range
  // The port's link-level retry counters; nullptr where it is off (or out of range).
  const LinkRetryCounters* link_retry_counters(PortId port) const;
  // The port's flow-control counters, both ends (what it sends, what it receives); std::nullopt
  // where flow control is off (or out of range).
  std::optional<FlowControlCounters> flow_control_counters(PortId port) const;
  // Bytes of `c` that arrived on `ingress` and have not left the switch yet.
  std::size_t ingress_buffer_bytes(PortId ingress, TrafficClass c) const;
  // CBFC: bytes of `c` the port may still send its far end (0 where flow control is off).
  std::size_t credit_bytes(PortId egress, TrafficClass c) const;
  std::uint64_t drops_bad_port() const { return drops_bad_port_; }
  const SwitchConfig& config() const { return config_; }

  // Link state hooks for the runtimes and fault injection. Taking a port down drops everything
  // queued to it, and it then neither sends nor receives until it comes back up.
  void set_port_up(PortId port, bool up);  // throws std::out_of_range
  bool port_up(PortId port) const;         // false for out-of-range ports

 private:
  // next_release_ns() for a switch with held frames or timed ports.
  TimeNs next_timed_release_ns() const;
  struct HeldFrame {
    wire::Frame bytes;
    bool reorder = false;    // drawn on arrival, applied when it is forwarded
    bool corrupted = false;  // the corrupt fault flipped a bit: check its CRC
  };
  // A frame on its way through the core: its bytes, and the buffer holding them when the
  // runtime handed it over (on_owned_frame) so a queue can take it instead of a copy.
  struct Incoming {
    std::span<const std::byte> bytes;
    wire::Frame* owner = nullptr;
    bool reorder = false;
    bool corrupted = false;
    const IngressRead* read = nullptr;  // the headers, read already (on_owned_frame)
  };
  struct Port {
    Fifo<QueuedFrame> queue;     // one array per port: no allocation per frame
    std::deque<HeldFrame> held;  // frames behind a delay spike, in arrival order
    std::size_t held_bytes = 0;
    TimeNs stalled_until_ns = 0;
    std::size_t queued_bytes = 0;
    std::size_t queue_bytes_limit = 0;
    bool up = true;
    PortFaults faults;
    bool bound = false;  // port security: only `bound_mac` / `bound_gpu` may send here
    MacAddr bound_mac;
    GpuId bound_gpu = kInvalidGpu;
    // The source MAC this port last learned, and routes_epoch_ then: while neither changes,
    // learning it again changes nothing, so the lookup is skipped (one per frame otherwise).
    std::uint64_t learned_src = 0;
    std::uint64_t learned_epoch = kNoEpoch;
    PortCounters counters;
    // Link-level retry and tx faults (switch_link.cpp). With either, the frame to send next is
    // prepared in `staged` (`staging`), so front() stays a plain read.
    std::unique_ptr<LinkRetry> llr;
    PortFaults tx_faults;
    bool staging = false;
    bool has_staged = false;
    QueuedFrame staged;
    // Flow control (switch_flow.cpp): both ends of this port's hop, and the responses' queue
    // (requests wait in `queue`).
    struct Flow {
      FlowSender sender;
      FlowReceiver receiver;
      Fifo<QueuedFrame> responses;
      bool blocked = false;    // frames wait and the far end lets none go
      TimeNs retry_at_ns = 0;  // when a pause that blocks it ends (kNever: waits for credit)
      FlowControlCounters before_reset;  // of the sender and receiver the hop had before
    };
    std::unique_ptr<Flow> flow;
  };
  static constexpr std::uint64_t kNoEpoch = std::numeric_limits<std::uint64_t>::max();
  // One table for static and learned entries, so forwarding costs a single lookup. Static
  // entries are pinned: learning never moves them.
  struct Route {
    PortId port = 0;
    bool is_static = false;
  };

  // The switch proper, after the link (and its faults) delivered the frame.
  void receive(PortId ingress, Incoming frame, TimeNs now, std::vector<PortId>& egress_touched);
  // After the link: a delay spike's stall, or on to forward().
  void pass_on(PortId ingress, const Incoming& frame, bool spike, TimeNs now,
               std::vector<PortId>& egress_touched);
  void forward(PortId ingress, const Incoming& frame, TimeNs now,
               std::vector<PortId>& egress_touched);
  // Fabric frames only: false (and counted) if the frame must be dropped.
  bool admit_fabric(Port& in, const IngressRead& read);
  void hold(Port& in, const Incoming& frame);
  void release_port(PortId ingress, TimeNs now, std::vector<PortId>& egress_touched);
  void drop_held(Port& port);
  void learn(const MacAddr& src, PortId ingress);
  void flood(PortId ingress, std::span<const std::byte> frame, TimeNs now,
             std::vector<PortId>& egress_touched);
  // Queues one copy on `egress`, or counts why not. True if queued.
  // With `owner`, the queue takes its buffer instead of copying `frame`.
  bool enqueue(PortId egress, PortId ingress, std::span<const std::byte> frame, wire::Frame* owner,
               TimeNs now);
  // switch_link.cpp: link-level retry and tx faults.
  void add_link_retry(PortId port);
  // A frame arrived on an LLR port: false if LLR took it (control) or dropped it; otherwise
  // its trailer is cut off `frame`.
  bool accept_link_frame(PortId ingress, Incoming& frame, TimeNs now,
                         std::vector<PortId>& egress_touched);
  // Prepares the frame the port sends next, if it has none ready; appends the port to
  // `egress_touched` if it then has one and `egress_touched` is given.
  void restage(PortId egress, TimeNs now, std::vector<PortId>* egress_touched = nullptr);
  bool take_next(PortId egress, wire::Frame& out, TimeNs now);
  // The buffers of link and flow-control frames the switch received and consumed, handed out
  // again for the ones it writes itself: the runtime takes each frame it sends and leaves an
  // empty one in its place, so each ACK or credit update would allocate otherwise.
  void keep_spare(const Incoming& consumed);
  void lend_spare(Port& port, wire::Frame& out);
  // Applies tx faults to a prepared frame: false if it is lost.
  bool survives_tx_faults(Port& port, wire::Frame& frame);
  void run_link_timers(TimeNs now, std::vector<PortId>& egress_touched);
  void after_tx(PortId egress, std::size_t frame_bytes, TimeNs now);
  void reset_link(Port& port);
  // switch_flow.cpp: flow control per traffic class.
  void add_flow_control(PortId port);
  // Fresh ends for the port's hop (at start, and when its link comes back): full credit, no
  // pause, an empty buffer. Its queues are empty then.
  void reset_flow(PortId port);
  // A flow-control frame arrived on `ingress`: applied, never forwarded. False if `frame` is
  // data; then it is counted into the port's buffer.
  bool accept_flow_frame(PortId ingress, const Incoming& frame, TimeNs now,
                         std::vector<PortId>& egress_touched);
  // The head of the class the scheduler picks, if one may go; false if none may.
  bool take_scheduled(PortId egress, wire::Frame& out, TimeNs now);
  // `frame` left the buffer of its ingress port (sent, or lost): its credit goes back.
  void release_ingress_buffer(PortId ingress, TrafficClass c, std::size_t frame_bytes);
  // After anything that may move port `port`'s link-level retry or flow-control timer (a frame
  // in or out, a timer running, a buffer freed, its link going down or up): tells
  // link_timers_ and flow_timers_.
  void note_timers(PortId port);
  void run_flow_timers(TimeNs now, std::vector<PortId>& egress_touched);
  TimeNs next_flow_deadline_ns() const;
  void drop_queued(Port& port);

  SwitchConfig config_;
  std::vector<Port> ports_;
  std::unordered_map<std::uint64_t, Route> routes_;  // keyed by MacAddr::as_u64()
  std::uint64_t routes_epoch_ = 0;                   // bumped by every change to routes_
  std::uint64_t drops_bad_port_ = 0;
  std::size_t ports_holding_ = 0;  // ports with held frames: release_held's fast path
  std::vector<PortId> llr_ports_;  // ports with link-level retry, for their timers
  // Each port's link-level retry timer and flow-control timer (kNever for a port without one
  // or down), as note_timers() last saw them.
  EarliestDeadline link_timers_;
  EarliestDeadline flow_timers_;
  std::vector<PortId> flow_ports_;  // ports with flow control, for their pauses
  // Ports that got a frame to send outside on_frame / release_held (a sent frame freed buffer
  // and a credit update or XON became due on its ingress port): the next release_held reports
  // them, and next_release_ns() is `now` until it does.
  std::vector<PortId> ready_ports_;
  // run_flow_timers' copy of ready_ports_, kept so that neither list allocates once warm.
  std::vector<PortId> ready_taken_;
  // Set by enqueue when the copy it queued took over its ingress buffer accounting.
  bool buffer_taken_ = false;
  TimeNs now_ns_ = 0;  // the latest `now` handed in
  std::mt19937_64 fault_rng_;
  std::mt19937 training_rng_;  // link training nonces (a stream of its own: faults stay as seeded)
  wire::Frame corrupted_;      // scratch for a frame with an injected bit flip
  std::vector<wire::Frame> spare_frames_;  // keep_spare, lend_spare
};

}  // namespace ethx
