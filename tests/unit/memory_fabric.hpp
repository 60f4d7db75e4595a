// An in-memory fabric for unit tests: NodePorts whose frames go straight, in order, to the port
// of the GPU whose MAC they are addressed to (what the switch does with a unicast frame); frames
// for a GPU without a port are dropped, as the switch drops them for a port nobody serves. No
// shared memory, no sockets, no switch thread. Thread-safe as the real ports are: the port's
// owner sends and receives, any thread interrupts, and the waits behave like ShmNodePort's
// (they return once their condition holds or the timeout passes; a frame or interrupt() makes
// them look again).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "fabric/transport/node_port.hpp"
#include "packet-engine/mac_addr.hpp"

namespace ethx::test {

// A doorbell: ring() makes every wait look at its condition again.
class MemoryBell {
 public:
  void ring() {
    {
      std::lock_guard lock(mutex_);
      ++sequence_;
    }
    rung_.notify_all();
  }
  // Until ready() holds or timeout_ns passes (at once if timeout_ns <= 0).
  void wait(const std::function<bool()>& ready, std::int64_t timeout_ns) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
    for (;;) {
      std::uint64_t seen = 0;
      {
        std::lock_guard lock(mutex_);
        seen = sequence_;
      }
      // Outside the lock: ready() may look at the port (has_input) or take other locks.
      if ((ready && ready()) || timeout_ns <= 0) return;
      std::unique_lock lock(mutex_);
      if (!rung_.wait_until(lock, deadline, [&] { return sequence_ != seen; })) return;
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable rung_;
  std::uint64_t sequence_ = 0;
};

class MemoryFabric {
 public:
  explicit MemoryFabric(const TopologyConfig& topology) : inboxes_(topology.gpu_count) {
    for (const GpuConfig& gpu : topology.gpus) macs_.push_back(gpu.mac);
  }
  // GPU `gpu`'s port; before any thread uses the fabric. The fabric must outlive its ports.
  std::unique_ptr<NodePort> attach(GpuId gpu) {
    inboxes_.at(gpu) = std::make_unique<Inbox>();
    return std::make_unique<Port>(*this, *inboxes_[gpu]);
  }
  // Frames delivered to each GPU's port so far.
  std::uint64_t delivered(GpuId gpu) const {
    std::lock_guard lock(inboxes_.at(gpu)->mutex);
    return inboxes_[gpu]->delivered;
  }

 private:
  struct Inbox {
    mutable std::mutex mutex;
    std::deque<std::vector<std::byte>> frames;  // guarded by mutex
    std::uint64_t delivered = 0;                // guarded by mutex
    MemoryBell bell;                            // a frame arrived, or interrupt()
    MemoryBell nap_bell;                        // interrupt() only
  };

  class Port final : public NodePort {
   public:
    Port(MemoryFabric& fabric, Inbox& inbox) : fabric_(fabric), inbox_(inbox) {}
    const char* transport() const override { return "memory"; }
    std::size_t max_frame_bytes() const override { return 65536; }
    bool try_send(std::span<const std::byte> frame) override {
      fabric_.deliver(frame);
      return true;
    }
    bool can_send() const override { return true; }
    void kick() override {}
    std::size_t receive(std::size_t max, FrameSink& sink) override {
      std::vector<std::vector<std::byte>> taken;
      {
        std::lock_guard lock(inbox_.mutex);
        while (taken.size() < max && !inbox_.frames.empty()) {
          taken.push_back(std::move(inbox_.frames.front()));
          inbox_.frames.pop_front();
        }
      }
      for (const auto& frame : taken) sink.on_frame(frame);
      return taken.size();
    }
    void wait(std::int64_t timeout_ns, const std::function<bool()>& also_ready) override {
      inbox_.bell.wait([&] { return has_input() || (also_ready && also_ready()); }, timeout_ns);
    }
    void interrupt() override {
      inbox_.bell.ring();
      inbox_.nap_bell.ring();
    }
    bool has_input() override {
      std::lock_guard lock(inbox_.mutex);
      return !inbox_.frames.empty();
    }
    void wait_unowned(std::int64_t timeout_ns, const std::function<bool()>& ready) override {
      inbox_.bell.wait(ready, timeout_ns);
    }
    void nap(std::int64_t timeout_ns, const std::function<bool()>& ready) override {
      inbox_.nap_bell.wait(ready, timeout_ns);
    }

   private:
    MemoryFabric& fabric_;
    Inbox& inbox_;
  };

  void deliver(std::span<const std::byte> frame) {
    if (frame.size() < 6) return;
    for (std::size_t gpu = 0; gpu < macs_.size(); ++gpu) {
      const auto& octets = macs_[gpu].octets;
      if (!std::equal(octets.begin(), octets.end(),
                      reinterpret_cast<const std::uint8_t*>(frame.data())) ||
          !inboxes_[gpu]) {
        continue;
      }
      Inbox& inbox = *inboxes_[gpu];
      {
        std::lock_guard lock(inbox.mutex);
        inbox.frames.emplace_back(frame.begin(), frame.end());
        ++inbox.delivered;
      }
      inbox.bell.ring();
      return;
    }
  }

  std::vector<MacAddr> macs_;
  std::vector<std::unique_ptr<Inbox>> inboxes_;
};

}  // namespace ethx::test
