#include "qemu-device/host/device_request.hpp"

#include <vector>

namespace ethx {
namespace {

bool valid_width(RequestKind kind, unsigned width) {
  if (kind == RequestKind::kAtomic) return width == 4 || width == 8;
  return width == 1 || width == 2 || width == 4 || width == 8;
}

Access access_of(RequestKind kind) {
  switch (kind) {
    case RequestKind::kLoad:
      return Access::kRead;
    case RequestKind::kStore:
      return Access::kWrite;
    default:
      return Access::kAtomic;
  }
}

}  // namespace

const char* to_string(DeviceStatus status) {
  switch (status) {
    case DeviceStatus::kOk:
      return "ok";
    case DeviceStatus::kOutOfWindow:
      return "out of window";
    case DeviceStatus::kNoRights:
      return "no rights";
    case DeviceStatus::kTimeout:
      return "timeout";
    case DeviceStatus::kRemoteError:
      return "remote error";
    case DeviceStatus::kBadWidth:
      return "bad width";
    case DeviceStatus::kUnreachable:
      return "unreachable";
  }
  return "unknown";
}

DeviceStatus from_wire(wire::Status status) {
  switch (status) {
    case wire::Status::kOk:
      return DeviceStatus::kOk;
    case wire::Status::kTimeout:
      return DeviceStatus::kTimeout;
    case wire::Status::kUnreachable:
      return DeviceStatus::kUnreachable;
    case wire::Status::kNoRights:
      return DeviceStatus::kNoRights;
    default:
      return DeviceStatus::kRemoteError;
  }
}

void FailureCounters::count(DeviceStatus status) {
  if (status != DeviceStatus::kOk) ++errors;
  // CNT_TIMEOUTS counts a copy that timed out as it counts a load that did.
  if (status == DeviceStatus::kTimeout) ++timeouts;
}

WindowTarget translate_window(const AddressMap& map, std::uint64_t window_addr, std::uint64_t bytes,
                              Access access) {
  // Every MMIO access translates: reuse this thread's segment buffer instead of allocating.
  thread_local std::vector<Segment> segments;
  segments.clear();
  const TranslateResult result = map.translate(window_addr, bytes, access, segments);
  WindowTarget target;
  if (!result.ok()) {
    target.status = result.error == TranslateError::kNoRights ? DeviceStatus::kNoRights
                                                              : DeviceStatus::kOutOfWindow;
    target.fault_addr = result.fault_addr;
  } else if (segments.size() != 1) {  // an access straddling two windows: no single target
    target.status = DeviceStatus::kOutOfWindow;
    target.fault_addr = segments.at(1).window_addr;
  } else {
    target.gpu = segments[0].dst_gpu;
    target.remote = segments[0].remote_addr;
  }
  return target;
}

DeviceResult DeviceRequest::wait() {
  done.wait(0);
  return result;
}

void finish_request(DeviceRequest& request, DeviceStatus status, std::uint64_t value,
                    std::uint64_t fault_addr, FailureCounters& counters) {
  request.result.status = status;
  request.result.value = status == DeviceStatus::kOk ? value : ~std::uint64_t{0};
  request.result.fault_addr = status == DeviceStatus::kOk ? 0 : fault_addr;
  counters.count(status);
  request.done.store(1, std::memory_order_release);
  request.done.notify_all();
}

PreparedRequest prepare_request(const AddressMap& map, RequestKind kind, std::uint64_t window_addr,
                                unsigned width) {
  PreparedRequest prepared;
  prepared.error.fault_addr = window_addr;
  prepared.error.value = ~std::uint64_t{0};  // what a failed load reads, as on real PCIe
  if (!valid_width(kind, width)) {
    prepared.error.status = DeviceStatus::kBadWidth;
    return prepared;
  }
  const WindowTarget target = translate_window(map, window_addr, width, access_of(kind));
  if (!target.ok()) {
    prepared.error.status = target.status;
    prepared.error.fault_addr = target.fault_addr;
    return prepared;
  }
  prepared.request = std::make_shared<DeviceRequest>();
  prepared.request->kind = kind;
  prepared.request->window_addr = window_addr;
  prepared.request->width = width;
  prepared.request->dst = target.gpu;
  prepared.request->remote = target.remote;
  return prepared;
}

}  // namespace ethx
