#include "switch/core/switch_core.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ethx {

static_assert(static_cast<std::size_t>(wire::DecodeError::kTxnCountMismatch) + 1 ==
                  wire::kDecodeErrorCount,
              "malformed_by_reason must have one bucket per DecodeError");

const char* to_string(DropReason reason) {
  switch (reason) {
    case DropReason::kMalformed:
      return "malformed";
    case DropReason::kQueueFull:
      return "queue_full";
    case DropReason::kUnknownDestination:
      return "unknown_destination";
    case DropReason::kHairpin:
      return "hairpin";
    case DropReason::kBadPort:
      return "bad_port";
    case DropReason::kSpoofed:
      return "spoofed";
  }
  return "unknown";
}

namespace {

void count_malformed(PortCounters& counters, wire::DecodeError error) {
  ++counters.drops_malformed;
  const auto bucket = static_cast<std::size_t>(error);
  if (bucket < counters.malformed_by_reason.size()) ++counters.malformed_by_reason[bucket];
}

}  // namespace

SwitchCore::SwitchCore(SwitchConfig config)
    : config_(std::move(config)),
      fault_rng_(config_.fault_seed),
      training_rng_(static_cast<std::mt19937::result_type>(config_.link_training_seed)) {
  if (config_.ports.empty()) throw std::invalid_argument("switch needs at least one port");
  ports_.resize(config_.ports.size());
  link_timers_.resize(ports_.size());
  flow_timers_.resize(ports_.size());
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    const double rate_gbps = config_.ports[i].rate_gbps;
    // The simulator divides by the rate to get serialization time.
    if (!std::isfinite(rate_gbps) || rate_gbps <= 0.0) {
      throw std::invalid_argument("switch port " + std::to_string(i) +
                                  ": rate_gbps must be positive");
    }
    ports_[i].queue_bytes_limit = config_.ports[i].egress_queue_bytes;
    if (config_.ports[i].link_retry) add_link_retry(static_cast<PortId>(i));
    if (config_.flow_control.mode != FlowControlMode::kNone && config_.ports[i].flow_control) {
      add_flow_control(static_cast<PortId>(i));
    }
  }
  for (const auto& [port, faults] : config_.faults) {
    if (port >= ports_.size()) {
      throw std::invalid_argument("faults for port " + std::to_string(port) + ": switch has only " +
                                  std::to_string(ports_.size()) + " ports");
    }
    set_faults(port, faults);
  }
  for (const auto& [port, faults] : config_.tx_faults) {
    if (port >= ports_.size()) {
      throw std::invalid_argument("tx faults for port " + std::to_string(port) +
                                  ": switch has only " + std::to_string(ports_.size()) + " ports");
    }
    set_tx_faults(port, faults);
  }
  for (const SwitchConfig::PortBinding& binding : config_.port_bindings) {
    if (binding.port >= ports_.size()) {
      throw std::invalid_argument("port binding of " + binding.mac.to_string() + " to port " +
                                  std::to_string(binding.port) + ": switch has only " +
                                  std::to_string(ports_.size()) + " ports");
    }
    Port& port = ports_[binding.port];
    port.bound = true;
    port.bound_mac = binding.mac;
    port.bound_gpu = binding.gpu;
  }
  for (const auto& [mac, port] : config_.static_routes) {
    if (port >= ports_.size()) {
      throw std::invalid_argument("static route " + mac.to_string() + " -> port " +
                                  std::to_string(port) + ": switch has only " +
                                  std::to_string(ports_.size()) + " ports");
    }
    const auto [it, inserted] = routes_.try_emplace(mac.as_u64(), Route{port, true});
    // Two routes for one MAC is a config mistake; silently picking one would hide it.
    if (!inserted && it->second.port != port) {
      throw std::invalid_argument("static route " + mac.to_string() + " names two egress ports: " +
                                  std::to_string(it->second.port) + " and " + std::to_string(port));
    }
  }
}

void SwitchCore::on_frame(PortId ingress, std::span<const std::byte> frame, TimeNs now,
                          std::vector<PortId>& egress_touched) {
  receive(ingress, Incoming{frame}, now, egress_touched);
}

void SwitchCore::on_owned_frame(PortId ingress, wire::Frame& frame, TimeNs now,
                                std::vector<PortId>& egress_touched) {
  receive(ingress, Incoming{frame, &frame}, now, egress_touched);
}

void SwitchCore::on_owned_frame(PortId ingress, wire::Frame& frame, const IngressRead& read,
                                TimeNs now, std::vector<PortId>& egress_touched) {
  receive(ingress, Incoming{frame, &frame, false, false, &read}, now, egress_touched);
}

SwitchCore::IngressRead SwitchCore::read_ingress(std::span<const std::byte> frame, wire::Crc crc) {
  IngressRead read;
  read.crc = crc;
  if (frame.size() < wire::kEthernetHeaderBytes ||
      !wire::peek_ethernet(frame, read.dst, read.src, read.ether_type)) {
    return read;
  }
  read.ethernet_ok = true;
  if (read.ether_type == wire::kEtherTypeFabric) {
    read.fabric_error = wire::validate_frame(frame, read.src_gpu, crc);
  }
  return read;
}

void SwitchCore::receive(PortId ingress, Incoming frame, TimeNs now,
                         std::vector<PortId>& egress_touched) {
  if (ingress >= ports_.size()) {
    ++drops_bad_port_;
    return;
  }
  Port& in = ports_[ingress];
  now_ns_ = now;
  ++in.counters.rx_frames;
  in.counters.rx_bytes += frame.bytes.size();
  if (!in.up) {
    // A down link delivers nothing; a runtime racing the link-state change may still call us.
    ++in.counters.drops_link_down;
    return;
  }
  // A link delivers in order: frames an ended stall still holds go before this one.
  if (!in.held.empty() && now >= in.stalled_until_ns) release_port(ingress, now, egress_touched);

  // Injected faults act as the link would: before anything in the switch sees the frame.
  bool spike = false;
  if (in.faults.any()) {
    std::uniform_real_distribution<double> chance(0.0, 1.0);
    if (in.faults.drop_rate > 0 && chance(fault_rng_) < in.faults.drop_rate) {
      ++in.counters.faults_dropped;
      return;
    }
    if (in.faults.corrupt_rate > 0 && !frame.bytes.empty() &&
        chance(fault_rng_) < in.faults.corrupt_rate) {
      ++in.counters.faults_corrupted;
      corrupted_.assign(frame.bytes.begin(), frame.bytes.end());
      // A frame without its CRC gets it now, so the flip is caught as on a wire: the link's
      // FCS where link-level retry checks one, else the fabric frame's own.
      if (config_.crc == wire::Crc::kOff && !(in.llr && fill_llr_fcs(corrupted_))) {
        wire::fill_crc(corrupted_);
      }
      const std::uint64_t bit = fault_rng_() % (corrupted_.size() * 8);
      corrupted_[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
      // The damaged copy goes on; the runtime's buffer keeps the intact bytes.
      frame = Incoming{corrupted_, nullptr, false, true};
    }
    frame.reorder = in.faults.reorder_rate > 0 && chance(fault_rng_) < in.faults.reorder_rate;
    // A frame behind a running stall cannot start another one: it is already waiting.
    spike = now >= in.stalled_until_ns && in.faults.delay_spike_rate > 0 &&
            in.faults.delay_spike_ns > 0 && chance(fault_rng_) < in.faults.delay_spike_rate;
  }
  if (in.llr) frame.read = nullptr;  // the hop's trailer goes first: read what is left
  if (in.llr && !accept_link_frame(ingress, frame, now, egress_touched)) return;
  if (in.flow) {
    if (accept_flow_frame(ingress, frame, now, egress_touched)) return;
    // Counted into the port's buffer: it stays there while an egress queue holds it, and goes
    // back now if the switch drops it, floods it or a stall holds it.
    buffer_taken_ = false;
    const std::size_t frame_bytes = frame.bytes.size();
    const TrafficClass c = traffic_class_of(frame.bytes);
    pass_on(ingress, frame, spike, now, egress_touched);
    if (!buffer_taken_) release_ingress_buffer(ingress, c, frame_bytes);
    return;
  }
  pass_on(ingress, frame, spike, now, egress_touched);
}

void SwitchCore::pass_on(PortId ingress, const Incoming& frame, bool spike, TimeNs now,
                         std::vector<PortId>& egress_touched) {
  Port& in = ports_[ingress];
  if (spike) {
    ++in.counters.faults_delay_spikes;
    in.stalled_until_ns = now + in.faults.delay_spike_ns;
  }
  // Checked even when the faults were cleared meanwhile: a stall that began still runs out.
  if (now < in.stalled_until_ns) {
    hold(in, frame);
    return;
  }
  forward(ingress, frame, now, egress_touched);
}

bool SwitchCore::admit_fabric(Port& in, const IngressRead& read) {
  // decode_frame's checks and verdicts, without decoding what the switch does not read.
  if (read.fabric_error != wire::DecodeError::kOk) {
    count_malformed(in.counters, read.fabric_error);
    return false;
  }
  // The completer trusts the frame's source GPU for partition and rights checks.
  if (in.bound && read.src_gpu != in.bound_gpu) {
    ++in.counters.drops_spoofed;
    return false;
  }
  return true;
}

void SwitchCore::forward(PortId ingress, const Incoming& frame, TimeNs now,
                         std::vector<PortId>& egress_touched) {
  Port& in = ports_[ingress];
  // A corrupted copy is checked with its CRC on (the fault filled one in before the flip).
  const wire::Crc crc = frame.corrupted ? wire::Crc::kOn : config_.crc;
  const IngressRead read =
      frame.read && frame.read->crc == crc ? *frame.read : read_ingress(frame.bytes, crc);
  if (!read.ethernet_ok) {
    count_malformed(in.counters, wire::DecodeError::kTruncatedEthernet);
    return;
  }
  const MacAddr& dst = read.dst;
  const MacAddr& src = read.src;
  // Port security comes before learning: a forged source must not move a station's entry.
  if (in.bound && src != in.bound_mac) {
    ++in.counters.drops_spoofed;
    return;
  }
  // Only our own protocol is validated: a corrupt fabric frame would otherwise reach a GPU's
  // engine and be counted there, far from the link that damaged it. Other traffic (ARP, IPv4,
  // RoCE) is not ours to judge and is switched by MAC alone.
  if (read.ether_type == wire::kEtherTypeFabric && !admit_fabric(in, read)) return;

  if (config_.learning && !src.is_multicast()) learn(src, ingress);

  const auto route = routes_.find(dst.as_u64());
  if (route != routes_.end()) {
    const PortId egress = route->second.port;
    if (egress == ingress) {
      ++in.counters.drops_hairpin;
    } else if (enqueue(egress, ingress, frame.bytes, frame.owner, now)) {
      egress_touched.push_back(egress);
      Fifo<QueuedFrame>& queue = ports_[egress].queue;
      // With flow control the frame may be in the responses' queue: no reorder there.
      if (frame.reorder && !ports_[egress].flow && queue.size() >= 2) {
        std::swap(queue[queue.size() - 1], queue[queue.size() - 2]);
        ++in.counters.faults_reordered;
      }
    }
    return;
  }
  // Learned entries are only ever unicast, so broadcast and multicast always land here too.
  if (config_.learning) {
    ++in.counters.flooded_frames;
    flood(ingress, frame.bytes, now, egress_touched);
  } else {
    ++in.counters.drops_unknown_destination;
  }
}

void SwitchCore::hold(Port& in, const Incoming& frame) {
  // A stalled link still has only so much buffer: the port's queue limit, as for egress.
  if (in.held_bytes + frame.bytes.size() > in.queue_bytes_limit) {
    ++in.counters.drops_queue_full;
    return;
  }
  if (in.held.empty()) ++ports_holding_;
  const std::size_t frame_bytes = frame.bytes.size();
  wire::Frame bytes =
      frame.owner ? std::move(*frame.owner) : wire::Frame(frame.bytes.begin(), frame.bytes.end());
  in.held.push_back(HeldFrame{std::move(bytes), frame.reorder, frame.corrupted});
  in.held_bytes += frame_bytes;
  ++in.counters.faults_delayed;
}

void SwitchCore::release_port(PortId ingress, TimeNs now, std::vector<PortId>& egress_touched) {
  // Taken out first: forward() never adds to a held queue, but the loop must not care.
  std::deque<HeldFrame> released;
  released.swap(ports_[ingress].held);
  ports_[ingress].held_bytes = 0;
  --ports_holding_;
  // Held frames gave their flow-control buffer back when the stall took them.
  buffer_taken_ = true;
  for (HeldFrame& frame : released) {
    forward(ingress, Incoming{frame.bytes, &frame.bytes, frame.reorder, frame.corrupted}, now,
            egress_touched);
  }
}

void SwitchCore::drop_held(Port& port) {
  if (port.held.empty()) return;
  port.counters.drops_link_down += port.held.size();
  port.held.clear();
  port.held_bytes = 0;
  --ports_holding_;
}

void SwitchCore::release_held(TimeNs now, std::vector<PortId>& egress_touched) {
  now_ns_ = now;
  if (!llr_ports_.empty()) run_link_timers(now, egress_touched);
  if (!flow_ports_.empty()) run_flow_timers(now, egress_touched);
  if (ports_holding_ == 0) return;
  for (PortId port = 0; port < ports_.size(); ++port) {
    if (!ports_[port].held.empty() && now >= ports_[port].stalled_until_ns) {
      release_port(port, now, egress_touched);
    }
  }
}

TimeNs SwitchCore::next_timed_release_ns() const {
  TimeNs next = kNoRelease;
  if (!llr_ports_.empty()) next = std::min(next, link_timers_.earliest_ns());
  if (!flow_ports_.empty()) next = std::min(next, next_flow_deadline_ns());
  if (ports_holding_ == 0) return next;
  for (const Port& port : ports_) {
    if (!port.held.empty()) next = std::min(next, port.stalled_until_ns);
  }
  return next;
}

bool SwitchCore::ingress_stalled(PortId ingress, TimeNs now) const {
  return ingress < ports_.size() && now < ports_[ingress].stalled_until_ns;
}

std::size_t SwitchCore::held_frames(PortId ingress) const {
  return ingress < ports_.size() ? ports_[ingress].held.size() : 0;
}

void SwitchCore::learn(const MacAddr& src, PortId ingress) {
  Port& port = ports_[ingress];
  const std::uint64_t key = src.as_u64();
  if (port.learned_src == key && port.learned_epoch == routes_epoch_) return;
  const auto [it, inserted] = routes_.try_emplace(key, Route{ingress, false});
  if (inserted) {
    ++routes_epoch_;
  } else if (!it->second.is_static && it->second.port != ingress) {
    // A station that moved is found on its new port; static entries never move.
    it->second.port = ingress;
    ++routes_epoch_;
  }
  port.learned_src = key;
  port.learned_epoch = routes_epoch_;
}

void SwitchCore::flood(PortId ingress, std::span<const std::byte> frame, TimeNs now,
                       std::vector<PortId>& egress_touched) {
  const auto port_total = static_cast<PortId>(ports_.size());
  for (PortId egress = 0; egress < port_total; ++egress) {
    // Down ports are simply not part of the flood domain, so they are not counted as drops.
    if (egress == ingress || !ports_[egress].up) continue;
    if (enqueue(egress, ingress, frame, nullptr, now)) egress_touched.push_back(egress);
  }
}

bool SwitchCore::enqueue(PortId egress, PortId ingress, std::span<const std::byte> frame,
                         wire::Frame* owner, TimeNs now) {
  Port& out = ports_[egress];
  if (!out.up) {
    ++out.counters.drops_link_down;
    return false;
  }
  // Lossless under flow control: the far ends hold what the buffer cannot take. A frame from a
  // port without it (a guest NIC's, in the emulator) is held back by nothing, so it still meets
  // the queue's limit.
  const bool lossless = out.flow && ports_[ingress].flow;
  if (!lossless && out.queued_bytes + frame.size() > out.queue_bytes_limit) {
    ++out.counters.drops_queue_full;
    return false;
  }
  const bool responses = out.flow && traffic_class_of(frame) == TrafficClass::kResponses;
  // Filled in place: the entry's empty buffer and the runtime's trade places, no moves.
  QueuedFrame& queued = responses ? out.flow->responses.append() : out.queue.append();
  if (owner) {
    queued.bytes.swap(*owner);
  } else {
    queued.bytes.assign(frame.begin(), frame.end());
  }
  queued.enqueued_ns = now;
  queued.ingress = ingress;
  // The first copy of a frame from a port with flow control keeps its buffer until it is sent,
  // if it leaves through a port that gives it back then (take_scheduled); one that leaves
  // through a port without flow control gives it back at once (on_frame).
  queued.holds_ingress_buffer = lossless && !buffer_taken_;
  buffer_taken_ = buffer_taken_ || queued.holds_ingress_buffer;
  out.queued_bytes += queued.bytes.size();
  if (out.queued_bytes > out.counters.queue_bytes_high_water) {
    out.counters.queue_bytes_high_water = out.queued_bytes;
  }
  if (out.staging) restage(egress, now);
  return true;
}

void SwitchCore::set_faults(PortId ingress, const PortFaults& faults) {
  if (ingress >= ports_.size()) return;
  const std::pair<const char*, double> rates[] = {{"drop_rate", faults.drop_rate},
                                                  {"corrupt_rate", faults.corrupt_rate},
                                                  {"reorder_rate", faults.reorder_rate},
                                                  {"delay_spike_rate", faults.delay_spike_rate}};
  for (const auto& [field, rate] : rates) {
    // Written so that NaN fails too.
    if (!(rate >= 0.0 && rate <= 1.0)) {
      throw std::invalid_argument(std::string(field) + " must be between 0 and 1 (got " +
                                  std::to_string(rate) + ")");
    }
  }
  if (faults.delay_spike_ns > kMaxDelaySpikeNs) {
    throw std::invalid_argument("delay_spike_ns must be at most " +
                                std::to_string(kMaxDelaySpikeNs) + " (got " +
                                std::to_string(faults.delay_spike_ns) + ")");
  }
  ports_[ingress].faults = faults;
  set_port_up(ingress, !faults.link_down);
}

const PortFaults& SwitchCore::faults(PortId ingress) const {
  return ports_.at(ingress).faults;
}

void SwitchCore::pop(PortId egress, TimeNs now) {
  if (egress >= ports_.size()) return;
  Port& out = ports_[egress];
  if (out.staging) {
    if (!out.has_staged) return;
    out.has_staged = false;
    after_tx(egress, out.staged.bytes.size(), now);
    return;
  }
  if (out.queue.empty()) return;
  const std::size_t frame_bytes = out.queue.front().bytes.size();
  ++out.counters.tx_frames;
  out.counters.tx_bytes += frame_bytes;
  out.queued_bytes -= frame_bytes;
  out.queue.pop_front();
}

void SwitchCore::pop_into(PortId egress, wire::Frame& out, TimeNs now) {
  out.clear();
  if (egress >= ports_.size()) return;
  Port& port = ports_[egress];
  if (port.staging) {
    if (!port.has_staged) return;
    out.swap(port.staged.bytes);
    port.has_staged = false;
    after_tx(egress, out.size(), now);
    return;
  }
  if (port.queue.empty()) return;
  out.swap(port.queue.front().bytes);
  ++port.counters.tx_frames;
  port.counters.tx_bytes += out.size();
  port.queued_bytes -= out.size();
  port.queue.pop_front();
}

std::size_t SwitchCore::queued_bytes(PortId egress) const {
  return egress < ports_.size() ? ports_[egress].queued_bytes : 0;
}

std::size_t SwitchCore::queued_frames(PortId egress) const {
  if (egress >= ports_.size()) return 0;
  const Port& port = ports_[egress];
  return port.queue.size() + (port.flow ? port.flow->responses.size() : 0);
}

const PortCounters& SwitchCore::counters(PortId port) const {
  return ports_.at(port).counters;
}

void SwitchCore::set_port_up(PortId port, bool up) {
  Port& target = ports_.at(port);
  if (target.up == up) return;
  target.up = up;
  if (up) {
    // A hop that comes back starts with full credit and no pause at both ends.
    if (target.flow) reset_flow(port);
    // The far end did not see the link go (a process behind a ring or a veth): train again.
    if (target.llr && config_.link_training)
      target.llr->start_training(static_cast<std::uint32_t>(training_rng_()), now_ns_);
    note_timers(port);
    return;
  }
  drop_queued(target);
  reset_link(target);
  note_timers(port);
  // Frames a delay spike holds were still on the link, which is gone now.
  drop_held(target);
  target.stalled_until_ns = 0;
  // Forget stations learned behind the dead link, as a real switch flushes its table on link
  // down: if they reappear elsewhere they are flooded to and relearned instead of black-holed.
  std::erase_if(routes_, [port](const auto& entry) {
    return !entry.second.is_static && entry.second.port == port;
  });
  ++routes_epoch_;
}

bool SwitchCore::port_up(PortId port) const {
  return port < ports_.size() && ports_[port].up;
}

}  // namespace ethx
