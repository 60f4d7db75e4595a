// The callers' requests from the moment they enter the engine until they are answered: the
// queue they are issued from, in order, and the one record of each operation in flight (by the
// requester's op id) that a completion finishes. Engine owner only (EngineOwner); no thread,
// clock or port of its own: it issues through NodeRequests and is handed completions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "qemu-device/host/device_request.hpp"
#include "qemu-device/host/node_requests.hpp"

namespace ethx {

class RequestTable {
 public:
  using Queue = std::deque<std::shared_ptr<DeviceRequest>>;

  struct Geometry {
    GpuId self = 0;
    std::size_t gpu_count = 0;
    std::uint64_t aperture_bytes = 0;  // GPU g's memory starts at window address g x aperture
    // Posted writes wait while this many frames are queued in front of a full port.
    std::size_t max_backlog_frames = 64;
  };
  RequestTable(const Geometry& geometry, std::span<std::byte> local_memory,
               FailureCounters& counters);

  // Where requests wait to be issued, oldest first (EngineOwner moves the posted ones in).
  Queue& queue() { return queue_; }
  // Issues queued requests in order while the node has room for the oldest: a store waits
  // while the port is backed up, a load, atomic or flush for free tags, and everything behind
  // it waits too, so no request passes an earlier one (a load never passes the stores queued
  // before it). Requests for the GPU's own window are performed on its memory here.
  void issue(NodeRequests& node);
  // Finishes the request `completion` answers; false if it answers none of them (a copy's).
  bool on_completion(const Completion& completion);
  // Nothing queued and nothing in flight.
  bool idle() const { return queue_.empty() && in_flight_.empty(); }
  // The device is going away: every request a caller still waits for (queued or in flight; not
  // a posted store) ends with `status`.
  void fail_waiting(DeviceStatus status);

 private:
  bool has_room(const DeviceRequest& request, const NodeRequests& node) const;
  bool stays_local(const DeviceRequest& request) const;
  void perform_locally(DeviceRequest& request);
  void issue_remote(const std::shared_ptr<DeviceRequest>& request, NodeRequests& node);
  void issue_flush_all(const std::shared_ptr<DeviceRequest>& request, NodeRequests& node);
  void finish_flush(DeviceRequest& request, const Completion& completion, DeviceStatus status);
  void finish(DeviceRequest& request, DeviceStatus status, std::uint64_t value);

  Geometry geometry_;
  std::span<std::byte> memory_;
  FailureCounters& counters_;
  Queue queue_;
  // Each operation in flight and the request it belongs to (a flush_all has one per GPU it
  // flushes). The shared_ptr keeps the request alive until its completion.
  std::unordered_map<OpId, std::shared_ptr<DeviceRequest>> in_flight_;
  std::vector<bool> written_since_flush_;  // by GPU: posted writes a flush_all must cover
  // By GPU: flush_all flushes sent and not answered yet. A flush_all must wait for the writes
  // an earlier, still unanswered flush covers too, so it flushes such a GPU again (behind
  // those writes on the in-order path, its answer implies theirs) instead of skipping it.
  std::vector<std::uint32_t> flushes_in_flight_;
};

}  // namespace ethx
