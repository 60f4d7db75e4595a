// The requester's view of the fabric: a table of windows in its remote-window BAR, each mapping
// a range of window addresses onto a range of one GPU's local memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "address-map/fabric_types.hpp"

namespace ethx {

struct Window {
  std::string name;                 // used in error messages, e.g. "gpu3"
  std::uint64_t window_offset = 0;  // byte offset in the requester's remote-window BAR
  std::uint64_t size_bytes = 0;
  GpuId dst_gpu = kInvalidGpu;
  std::uint64_t remote_base = 0;  // byte offset in dst GPU's local memory
  Rights rights = kRightAll;
};

// One piece of a translated access: the part that falls in a single window.
struct Segment {
  std::uint64_t window_addr;  // where this piece starts in window space
  GpuId dst_gpu;
  std::uint64_t remote_addr;  // offset in dst GPU's local memory
  std::uint32_t length;
  std::size_t window_index;  // into AddressMap::windows()
};

// A piece longer than this is cut into several segments so its length fits Segment::length.
// A power of two, so the pieces of an aligned access stay aligned.
inline constexpr std::uint64_t kMaxSegmentBytes = std::uint64_t{1} << 31;

enum class TranslateError : std::uint8_t { kNone, kZeroLength, kOutOfWindow, kNoRights };
const char* to_string(TranslateError error);

struct TranslateResult {
  TranslateError error = TranslateError::kNone;
  std::uint64_t fault_addr = 0;  // window address of the first byte that failed
  bool ok() const { return error == TranslateError::kNone; }
};

class AddressMap {
 public:
  // An empty map: every access is kOutOfWindow.
  AddressMap() = default;

  // Validates and builds. gpu_memory_bytes[g] is GPU g's local memory size; its size is the GPU
  // count. Throws ConfigError naming the offending window(s) or GPU.
  static AddressMap build(std::vector<Window> windows,
                          const std::vector<std::uint64_t>& gpu_memory_bytes);

  // Window k ("gpuK") at k * aperture_bytes maps all hbm_bytes of GPU k, for every k in
  // [0, gpu_count), the requester included. Throws ConfigError naming the fabric.* field.
  static std::vector<Window> default_layout(std::size_t gpu_count, std::uint64_t aperture_bytes,
                                            std::uint64_t hbm_bytes, Rights rights);

  // Translates [window_addr, window_addr + length) into segments appended to `out`, which is
  // cleared first (and left empty on error). Never throws on bad input.
  TranslateResult translate(std::uint64_t window_addr, std::uint64_t length, Access access,
                            std::vector<Segment>& out) const;

  const std::vector<Window>& windows() const { return windows_; }  // sorted by window_offset
  std::uint64_t span_bytes() const { return span_bytes_; }  // end of the highest window, 0 if none
  std::uint64_t bar_bytes() const { return bar_bytes_; }    // span rounded up to a power of two

 private:
  // Index of the window containing `window_addr`, or windows_.size() if it falls in no window.
  std::size_t find_window(std::uint64_t window_addr) const;

  std::vector<Window> windows_;
  std::uint64_t span_bytes_ = 0;
  std::uint64_t bar_bytes_ = 4096;
};

}  // namespace ethx
