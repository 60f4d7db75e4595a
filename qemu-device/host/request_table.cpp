#include "qemu-device/host/request_table.hpp"

#include <algorithm>
#include <cstring>

#include "qemu-device/host/local_access.hpp"

namespace ethx {

RequestTable::RequestTable(const Geometry& geometry, std::span<std::byte> local_memory,
                           FailureCounters& counters)
    : geometry_(geometry),
      memory_(local_memory),
      counters_(counters),
      written_since_flush_(geometry.gpu_count, false),
      flushes_in_flight_(geometry.gpu_count, 0) {}

bool RequestTable::stays_local(const DeviceRequest& request) const {
  return request.dst == geometry_.self && request.kind != RequestKind::kFlushAll;
}

bool RequestTable::has_room(const DeviceRequest& request, const NodeRequests& node) const {
  if (stays_local(request)) return true;
  if (request.kind == RequestKind::kStore) {
    return node.backlog_frames() <= geometry_.max_backlog_frames;
  }
  const std::size_t needed = request.kind == RequestKind::kFlushAll
                                 ? geometry_.gpu_count
                                 : node.tags_needed(request.width);
  return node.free_tags() >= needed;  // else: wait for completions to free tags
}

void RequestTable::issue(NodeRequests& node) {
  while (!queue_.empty()) {
    if (!has_room(*queue_.front(), node)) return;  // keep the rest in order for later
    const std::shared_ptr<DeviceRequest> request = std::move(queue_.front());
    queue_.pop_front();
    if (stays_local(*request)) {
      perform_locally(*request);
    } else {
      issue_remote(request, node);
    }
  }
}

void RequestTable::perform_locally(DeviceRequest& request) {
  const LocalAccessResult local = perform_local(request, memory_);
  // A posted store that landed has nobody to answer.
  if (request.kind == RequestKind::kStore && local.status == DeviceStatus::kOk) return;
  finish(request, local.status, local.value);
}

void RequestTable::issue_remote(const std::shared_ptr<DeviceRequest>& request, NodeRequests& node) {
  switch (request->kind) {
    case RequestKind::kStore: {
      std::byte data[8];
      std::memcpy(data, &request->value, request->width);
      written_since_flush_[request->dst] = true;
      node.write_posted(request->dst, request->remote, std::span(data, request->width));
      return;
    }
    case RequestKind::kLoad:
      in_flight_.emplace(node.read(request->dst, request->remote, request->width), request);
      return;
    case RequestKind::kAtomic:
      in_flight_.emplace(
          node.atomic(request->dst, request->remote, request->op,
                      static_cast<std::uint8_t>(request->width), request->value, request->compare),
          request);
      return;
    case RequestKind::kFlushAll:
      issue_flush_all(request, node);
      return;
  }
}

// A flush to each GPU written to since the previous flush_all, or with a flush still in flight.
void RequestTable::issue_flush_all(const std::shared_ptr<DeviceRequest>& request,
                                   NodeRequests& node) {
  request->flushes_left = 0;
  for (std::size_t gpu = 0; gpu < geometry_.gpu_count; ++gpu) {
    if (!written_since_flush_[gpu] && flushes_in_flight_[gpu] == 0) continue;
    written_since_flush_[gpu] = false;
    ++flushes_in_flight_[gpu];
    in_flight_.emplace(node.flush(static_cast<GpuId>(gpu)), request);
    ++request->flushes_left;
  }
  if (request->flushes_left == 0) finish(*request, DeviceStatus::kOk, 0);
}

bool RequestTable::on_completion(const Completion& completion) {
  const auto found = in_flight_.find(completion.id);
  if (found == in_flight_.end()) return false;
  const std::shared_ptr<DeviceRequest> request = std::move(found->second);
  in_flight_.erase(found);
  const DeviceStatus status = from_wire(completion.status);
  if (request->kind == RequestKind::kFlushAll) {
    finish_flush(*request, completion, status);
    return true;
  }
  std::uint64_t value = request->kind == RequestKind::kAtomic ? completion.old_value : 0;
  if (request->kind == RequestKind::kLoad && status == DeviceStatus::kOk) {
    value = read_le(completion.data.data(), static_cast<unsigned>(std::min<std::size_t>(
                                                request->width, completion.data.size())));
  }
  finish(*request, status, value);
  return true;
}

// One GPU's answer to a flush_all. A failure names that GPU by the window address of its
// memory (GPU g at g x aperture), the first failing GPU's.
void RequestTable::finish_flush(DeviceRequest& request, const Completion& completion,
                                DeviceStatus status) {
  const GpuId gpu = completion.dst_gpu;
  if (gpu < flushes_in_flight_.size()) --flushes_in_flight_[gpu];
  if (status != DeviceStatus::kOk && request.result.status == DeviceStatus::kOk) {
    request.result.status = status;
    request.result.fault_addr = std::uint64_t{gpu} * geometry_.aperture_bytes;
  }
  if (--request.flushes_left == 0) {
    finish_request(request, request.result.status, 0, request.result.fault_addr, counters_);
  }
}

void RequestTable::finish(DeviceRequest& request, DeviceStatus status, std::uint64_t value) {
  finish_request(request, status, value, request.window_addr, counters_);
}

void RequestTable::fail_waiting(DeviceStatus status) {
  for (const auto& request : queue_) {
    if (request->kind != RequestKind::kStore && !request->finished()) finish(*request, status, 0);
  }
  for (const auto& [id, request] : in_flight_) {
    if (!request->finished()) finish(*request, status, 0);
  }
}

}  // namespace ethx
