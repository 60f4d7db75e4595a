#include "switch/capture/port_capture.hpp"

#include <stdexcept>

namespace ethx {

std::uint64_t PortCapture::start(const CaptureRequest& request) {
  stop();
  writer_ = std::make_unique<PcapWriter>(request.path);  // throws, naming the file
  request_ = request;
  frames_ = 0;
  error_.clear();
  const auto now = std::chrono::steady_clock::now();
  ends_at_ = now + std::chrono::nanoseconds(request.duration_ns);
  watched_at_ = now;
  return ++id_;
}

void PortCapture::stop() {
  if (writer_ == nullptr) return;
  try {
    writer_->flush();
  } catch (const std::runtime_error& failed) {
    error_ = failed.what();
  }
  writer_.reset();  // closes the file
}

bool PortCapture::poll() {
  if (writer_ == nullptr) return false;
  const auto now = std::chrono::steady_clock::now();
  const bool frames_done = request_.max_frames > 0 && frames_ >= request_.max_frames;
  const bool time_done = request_.duration_ns > 0 && now >= ends_at_;
  if (frames_done || time_done || now - watched_at_ > kUnwatched) stop();
  return active();
}

void PortCapture::write(std::span<const std::byte> frame) {
  // Wall-clock time, as tcpdump stamps frames: what people line up with their logs.
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  writer_->write(frame,
                 static_cast<TimeNs>(
                     std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch).count()));
  ++frames_;
  poll();  // its last frame, or its time, ends it here: not only when someone asks
}

}  // namespace ethx
