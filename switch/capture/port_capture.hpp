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
  // A capture nobody has asked about for this long ends by itself: its `ethx capture` is gone
  // (killed, or its terminal closed) and nobody will stop it. The command asks every 50 ms.
  static constexpr auto kUnwatched = std::chrono::seconds(5);

  // Starts a capture, ending one that runs, and returns its id (status and stop name it, so a
  // command whose capture another one replaced finds out). Throws std::runtime_error naming
  // the file if it cannot be made.
  std::uint64_t start(const CaptureRequest& request);
  // Ends the capture and completes its file; a write that failed is kept in error().
  void stop();
  // Someone is still watching: restarts the kUnwatched count.
  void watched() { watched_at_ = std::chrono::steady_clock::now(); }
  // Ends the capture if its frames or its time are used up, or nobody watches; true while it
  // runs.
  bool poll();
  bool active() const { return writer_ != nullptr; }
  std::uint64_t id() const { return id_; }
  // Why writing the file failed ("" if it did not): a full disk, say.
  const std::string& error() const { return error_; }

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
  std::chrono::steady_clock::time_point watched_at_;
  std::uint64_t frames_ = 0;
  std::uint64_t id_ = 0;
  std::string error_;
};

}  // namespace ethx
