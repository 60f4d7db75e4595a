// What `ethx capture` records in the switch: every frame one port receives and sends, on any
// transport (AF_XDP frames never reach the kernel's taps, shared memory has none), into a pcap
// file, until a number of frames or a time has passed or it is stopped. The switch's forwarding
// thread owns it: start/stop/status come through the command mailbox on that thread, frames
// through tap(), so it needs no lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "address-map/fabric_types.hpp"
#include "switch/capture/pcap_writer.hpp"

namespace ethx {

struct CaptureRequest {
  std::uint32_t port = 0;
  std::string path;              // absolute: the switch's working directory is not the user's
  std::uint64_t max_frames = 0;  // 0: no limit
  TimeNs duration_ns = 0;        // 0: no limit
};

class PortCapture {
 public:
  // Starts a capture, ending one that runs. Throws std::runtime_error naming the file if it
  // cannot be made.
  void start(const CaptureRequest& request);
  // Ends the capture (the file is complete); nothing if none runs.
  void stop();
  // Ends the capture if its frames or its time are used up; true while it runs.
  bool poll();
  bool active() const { return writer_ != nullptr; }

  // A frame port `port` received or sent. Cheap when no capture runs: one pointer test.
  void tap(std::uint32_t port, std::span<const std::byte> frame) {
    if (writer_ != nullptr && port == request_.port) write(frame);
  }

  const CaptureRequest& request() const { return request_; }
  std::uint64_t frames() const { return frames_; }

 private:
  void write(std::span<const std::byte> frame);

  CaptureRequest request_;
  std::unique_ptr<PcapWriter> writer_;
  std::chrono::steady_clock::time_point ends_at_;
  std::uint64_t frames_ = 0;
};

}  // namespace ethx
