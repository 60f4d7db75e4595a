#include "switch/runtime/bare_forwarder.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "packet-engine/mac_addr.hpp"

namespace ethx {
namespace {

constexpr std::size_t kReceiveBatchPerPort = 32;

class ForwardingSink final : public FrameSink {
 public:
  ForwardingSink(const std::unordered_map<std::uint64_t, std::size_t>& port_by_mac,
                 std::vector<FrameSocket*>& ports, std::vector<bool>& needs_flush,
                 BareForwarderCounters& counters)
      : port_by_mac_(port_by_mac), ports_(ports), needs_flush_(needs_flush), counters_(counters) {}

  void on_frame(std::span<const std::byte> frame) override {
    MacAddr destination;
    if (frame.size() < destination.octets.size()) {
      ++counters_.unknown_destination;
      return;
    }
    std::memcpy(destination.octets.data(), frame.data(), destination.octets.size());
    const auto route = port_by_mac_.find(destination.as_u64());
    if (route == port_by_mac_.end()) {
      ++counters_.unknown_destination;
      return;
    }
    if (ports_[route->second]->try_send(frame) != SendResult::kQueued) {
      ++counters_.egress_full;
      return;
    }
    needs_flush_[route->second] = true;
    ++counters_.forwarded;
  }

 private:
  const std::unordered_map<std::uint64_t, std::size_t>& port_by_mac_;
  std::vector<FrameSocket*>& ports_;
  std::vector<bool>& needs_flush_;
  BareForwarderCounters& counters_;
};

}  // namespace

BareForwarder::BareForwarder(const TopologyConfig& topology, std::vector<FrameSocket*> ports)
    : ports_(std::move(ports)), needs_flush_(ports_.size(), false) {
  if (ports_.size() != topology.gpu_count) {
    throw std::invalid_argument("the bare forwarder needs one port per GPU (" +
                                std::to_string(topology.gpu_count) + "), got " +
                                std::to_string(ports_.size()));
  }
  for (std::size_t gpu = 0; gpu < topology.gpu_count; ++gpu) {
    port_by_mac_[topology.gpus[gpu].mac.as_u64()] = gpu;
  }
}

bool BareForwarder::step() {
  ForwardingSink sink(port_by_mac_, ports_, needs_flush_, counters_);
  bool moved = false;
  for (FrameSocket* port : ports_) moved = port->receive(kReceiveBatchPerPort, sink) > 0 || moved;
  for (std::size_t port = 0; port < ports_.size(); ++port) {
    if (!needs_flush_[port]) continue;
    ports_[port]->flush();
    needs_flush_[port] = false;
  }
  return moved;
}

void BareForwarder::run(const std::function<bool()>& should_stop) {
  std::vector<int> fds;
  for (FrameSocket* port : ports_) fds.push_back(port->fd());
  while (!should_stop()) {
    if (step()) continue;
    waiter_.wait(
        fds,
        [this, &should_stop] {
          if (should_stop()) return true;
          for (FrameSocket* port : ports_) {
            if (port->has_input()) return true;
          }
          return false;
        },
        -1);
  }
}

}  // namespace ethx
