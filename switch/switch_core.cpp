#include "switch/switch_core.hpp"

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
    : config_(std::move(config)), fault_rng_(config_.fault_seed) {
  if (config_.ports.empty()) throw std::invalid_argument("switch needs at least one port");
  ports_.resize(config_.ports.size());
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    const double rate_gbps = config_.ports[i].rate_gbps;
    // The simulator divides by the rate to get serialization time.
    if (!std::isfinite(rate_gbps) || rate_gbps <= 0.0) {
      throw std::invalid_argument("switch port " + std::to_string(i) +
                                  ": rate_gbps must be positive");
    }
    ports_[i].queue_bytes_limit = config_.ports[i].egress_queue_bytes;
  }
  for (const auto& [port, faults] : config_.faults) {
    if (port >= ports_.size()) {
      throw std::invalid_argument("faults for port " + std::to_string(port) + ": switch has only " +
                                  std::to_string(ports_.size()) + " ports");
    }
    set_faults(port, faults);
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
  if (ingress >= ports_.size()) {
    ++drops_bad_port_;
    return;
  }
  Port& in = ports_[ingress];
  ++in.counters.rx_frames;
  in.counters.rx_bytes += frame.size();
  if (!in.up) {
    // A down link delivers nothing; a runtime racing the link-state change may still call us.
    ++in.counters.drops_link_down;
    return;
  }

  // Injected faults act as the link would: before anything in the switch sees the frame.
  bool reorder = false;
  if (in.faults.any()) {
    std::uniform_real_distribution<double> chance(0.0, 1.0);
    if (in.faults.drop_rate > 0 && chance(fault_rng_) < in.faults.drop_rate) {
      ++in.counters.faults_dropped;
      return;
    }
    if (in.faults.corrupt_rate > 0 && !frame.empty() &&
        chance(fault_rng_) < in.faults.corrupt_rate) {
      ++in.counters.faults_corrupted;
      corrupted_.assign(frame.begin(), frame.end());
      const std::uint64_t bit = fault_rng_() % (corrupted_.size() * 8);
      corrupted_[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
      frame = corrupted_;
    }
    reorder = in.faults.reorder_rate > 0 && chance(fault_rng_) < in.faults.reorder_rate;
  }

  MacAddr dst;
  MacAddr src;
  std::uint16_t ether_type = 0;
  if (frame.size() < wire::kEthernetHeaderBytes ||
      !wire::peek_ethernet(frame, dst, src, ether_type)) {
    count_malformed(in.counters, wire::DecodeError::kTruncatedEthernet);
    return;
  }
  // Port security comes before learning: a forged source must not move a station's entry.
  if (in.bound && src != in.bound_mac) {
    ++in.counters.drops_spoofed;
    return;
  }
  // Only our own protocol is validated: a corrupt fabric frame would otherwise reach a GPU's
  // engine and be counted there, far from the link that damaged it. Other traffic (ARP, IPv4,
  // RoCE) is not ours to judge and is switched by MAC alone.
  if (ether_type == wire::kEtherTypeFabric) {
    wire::FrameView view;
    const wire::DecodeError error = wire::decode_frame(frame, view);
    if (error != wire::DecodeError::kOk) {
      count_malformed(in.counters, error);
      return;
    }
    // The completer trusts the frame's source GPU for partition and rights checks.
    if (in.bound && view.src_gpu != in.bound_gpu) {
      ++in.counters.drops_spoofed;
      return;
    }
  }

  if (config_.learning && !src.is_multicast()) learn(src, ingress);

  const auto route = routes_.find(dst.as_u64());
  if (route != routes_.end()) {
    const PortId egress = route->second.port;
    if (egress == ingress) {
      ++in.counters.drops_hairpin;
    } else if (enqueue(egress, ingress, frame, now)) {
      egress_touched.push_back(egress);
      std::deque<QueuedFrame>& queue = ports_[egress].queue;
      if (reorder && queue.size() >= 2) {
        std::swap(queue[queue.size() - 1], queue[queue.size() - 2]);
        ++in.counters.faults_reordered;
      }
    }
    return;
  }
  // Learned entries are only ever unicast, so broadcast and multicast always land here too.
  if (config_.learning) {
    ++in.counters.flooded_frames;
    flood(ingress, frame, now, egress_touched);
  } else {
    ++in.counters.drops_unknown_destination;
  }
}

void SwitchCore::learn(const MacAddr& src, PortId ingress) {
  const auto [it, inserted] = routes_.try_emplace(src.as_u64(), Route{ingress, false});
  // A station that moved is found on its new port; static entries never move.
  if (!inserted && !it->second.is_static) it->second.port = ingress;
}

void SwitchCore::flood(PortId ingress, std::span<const std::byte> frame, TimeNs now,
                       std::vector<PortId>& egress_touched) {
  const auto port_total = static_cast<PortId>(ports_.size());
  for (PortId egress = 0; egress < port_total; ++egress) {
    // Down ports are simply not part of the flood domain, so they are not counted as drops.
    if (egress == ingress || !ports_[egress].up) continue;
    if (enqueue(egress, ingress, frame, now)) egress_touched.push_back(egress);
  }
}

bool SwitchCore::enqueue(PortId egress, PortId ingress, std::span<const std::byte> frame,
                         TimeNs now) {
  Port& out = ports_[egress];
  if (!out.up) {
    ++out.counters.drops_link_down;
    return false;
  }
  if (out.queued_bytes + frame.size() > out.queue_bytes_limit) {
    ++out.counters.drops_queue_full;
    return false;
  }
  out.queue.push_back(QueuedFrame{wire::Frame(frame.begin(), frame.end()), now, ingress});
  out.queued_bytes += frame.size();
  if (out.queued_bytes > out.counters.queue_bytes_high_water) {
    out.counters.queue_bytes_high_water = out.queued_bytes;
  }
  return true;
}

void SwitchCore::set_faults(PortId ingress, const PortFaults& faults) {
  if (ingress >= ports_.size()) return;
  auto valid = [](double rate) { return rate >= 0.0 && rate <= 1.0; };
  if (!valid(faults.drop_rate) || !valid(faults.corrupt_rate) || !valid(faults.reorder_rate)) {
    throw std::invalid_argument("fault rates must be between 0 and 1");
  }
  ports_[ingress].faults = faults;
}

const QueuedFrame* SwitchCore::front(PortId egress) const {
  if (egress >= ports_.size() || ports_[egress].queue.empty()) return nullptr;
  return &ports_[egress].queue.front();
}

void SwitchCore::pop(PortId egress) {
  if (egress >= ports_.size()) return;
  Port& out = ports_[egress];
  if (out.queue.empty()) return;
  const std::size_t frame_bytes = out.queue.front().bytes.size();
  ++out.counters.tx_frames;
  out.counters.tx_bytes += frame_bytes;
  out.queued_bytes -= frame_bytes;
  out.queue.pop_front();
}

void SwitchCore::pop_into(PortId egress, wire::Frame& out) {
  out.clear();
  if (egress >= ports_.size() || ports_[egress].queue.empty()) return;
  out.swap(ports_[egress].queue.front().bytes);
  Port& port = ports_[egress];
  ++port.counters.tx_frames;
  port.counters.tx_bytes += out.size();
  port.queued_bytes -= out.size();
  port.queue.pop_front();
}

std::size_t SwitchCore::queued_bytes(PortId egress) const {
  return egress < ports_.size() ? ports_[egress].queued_bytes : 0;
}

std::size_t SwitchCore::queued_frames(PortId egress) const {
  return egress < ports_.size() ? ports_[egress].queue.size() : 0;
}

const PortCounters& SwitchCore::counters(PortId port) const {
  return ports_.at(port).counters;
}

void SwitchCore::set_port_up(PortId port, bool up) {
  Port& target = ports_.at(port);
  if (target.up == up) return;
  target.up = up;
  if (up) return;
  target.counters.drops_link_down += target.queue.size();
  target.queue.clear();
  target.queued_bytes = 0;
  // Forget stations learned behind the dead link, as a real switch flushes its table on link
  // down: if they reappear elsewhere they are flooded to and relearned instead of black-holed.
  std::erase_if(routes_, [port](const auto& entry) {
    return !entry.second.is_static && entry.second.port == port;
  });
}

bool SwitchCore::port_up(PortId port) const {
  return port < ports_.size() && ports_[port].up;
}

}  // namespace ethx
