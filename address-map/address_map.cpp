#include "address-map/address_map.hpp"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <utility>

#include "address-map/config_error.hpp"

namespace ethx {
namespace {

constexpr std::uint64_t kPageBytes = 4096;
// A 64-bit BAR is a power of two, so no window may end past 2^63.
constexpr std::uint64_t kMaxSpanBytes = std::uint64_t{1} << 63;
// A remote address must fit the offset field of a packed FabricAddr.
constexpr std::uint64_t kMaxGpuMemoryBytes = std::uint64_t{1} << kFabricOffsetBits;

// Only valid once build() has ruled out overflow.
std::uint64_t window_end(const Window& window) {
  return window.window_offset + window.size_bytes;
}

std::string hex(std::uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%" PRIx64, value);
  return text;
}

std::string range_text(std::uint64_t begin, std::uint64_t end) {
  return "[" + hex(begin) + ", " + hex(end) + ")";
}

std::string window_label(const Window& window, std::size_t input_index) {
  if (window.name.empty()) return "window #" + std::to_string(input_index);
  return "window '" + window.name + "'";
}

void check_window(const Window& window, std::size_t input_index,
                  const std::vector<std::uint64_t>& gpu_memory_bytes) {
  const std::string label = window_label(window, input_index);
  if (window.size_bytes == 0) throw ConfigError(label + ": size_bytes is 0");
  if (window.size_bytes > std::numeric_limits<std::uint64_t>::max() - window.window_offset) {
    throw ConfigError(label + ": window_offset " + hex(window.window_offset) + " + size_bytes " +
                      hex(window.size_bytes) + " overflows 64 bits");
  }
  if (window_end(window) > kMaxSpanBytes) {
    throw ConfigError(label + ": ends at " + hex(window_end(window)) +
                      ", past the largest possible BAR (2^63 bytes)");
  }
  if (window.dst_gpu >= gpu_memory_bytes.size()) {
    throw ConfigError(label + ": dst_gpu " + std::to_string(window.dst_gpu) +
                      " is not a GPU (gpu count " + std::to_string(gpu_memory_bytes.size()) + ")");
  }
  const std::uint64_t memory_bytes = gpu_memory_bytes[window.dst_gpu];
  if (window.size_bytes > memory_bytes || window.remote_base > memory_bytes - window.size_bytes) {
    throw ConfigError(label + ": remote_base " + hex(window.remote_base) + " + size_bytes " +
                      hex(window.size_bytes) + " runs past the end of GPU " +
                      std::to_string(window.dst_gpu) + "'s memory (" + hex(memory_bytes) +
                      " bytes)");
  }
}

// Also caps the GPU count below kInvalidGpu, so an unset dst_gpu fails the range check.
void check_gpu_memory(const std::vector<std::uint64_t>& gpu_memory_bytes) {
  if (gpu_memory_bytes.size() > kInvalidGpu) {
    throw ConfigError("gpu count " + std::to_string(gpu_memory_bytes.size()) + " exceeds " +
                      std::to_string(kInvalidGpu));
  }
  for (std::size_t gpu = 0; gpu < gpu_memory_bytes.size(); ++gpu) {
    if (gpu_memory_bytes[gpu] > kMaxGpuMemoryBytes) {
      throw ConfigError("GPU " + std::to_string(gpu) + " memory size " +
                        hex(gpu_memory_bytes[gpu]) + " exceeds the " + hex(kMaxGpuMemoryBytes) +
                        "-byte fabric offset space");
    }
  }
}

}  // namespace

const char* to_string(TranslateError error) {
  switch (error) {
    case TranslateError::kNone:
      return "none";
    case TranslateError::kZeroLength:
      return "zero length";
    case TranslateError::kOutOfWindow:
      return "out of window";
    case TranslateError::kNoRights:
      return "no rights";
  }
  return "unknown";
}

AddressMap AddressMap::build(std::vector<Window> windows,
                             const std::vector<std::uint64_t>& gpu_memory_bytes) {
  check_gpu_memory(gpu_memory_bytes);
  for (std::size_t i = 0; i < windows.size(); ++i) check_window(windows[i], i, gpu_memory_bytes);

  std::stable_sort(windows.begin(), windows.end(), [](const Window& a, const Window& b) {
    return a.window_offset < b.window_offset;
  });
  // Sorted by start, so any overlap shows up between neighbours.
  for (std::size_t i = 1; i < windows.size(); ++i) {
    const Window& previous = windows[i - 1];
    const Window& current = windows[i];
    if (window_end(previous) > current.window_offset) {
      throw ConfigError("windows '" + previous.name + "' " +
                        range_text(previous.window_offset, window_end(previous)) + " and '" +
                        current.name + "' " +
                        range_text(current.window_offset, window_end(current)) + " overlap");
    }
  }

  AddressMap map;
  map.span_bytes_ = windows.empty() ? 0 : window_end(windows.back());
  map.bar_bytes_ = std::bit_ceil(std::max(map.span_bytes_, kPageBytes));
  map.windows_ = std::move(windows);
  return map;
}

std::vector<Window> AddressMap::default_layout(std::size_t gpu_count, std::uint64_t aperture_bytes,
                                               std::uint64_t hbm_bytes, Rights rights) {
  if (aperture_bytes == 0 || aperture_bytes % kPageBytes != 0) {
    throw ConfigError("fabric.aperture_bytes " + hex(aperture_bytes) +
                      " must be a non-zero multiple of 4096");
  }
  if (hbm_bytes == 0) throw ConfigError("fabric.hbm_bytes must be non-zero");
  if (hbm_bytes > aperture_bytes) {
    throw ConfigError("fabric.hbm_bytes " + hex(hbm_bytes) + " exceeds fabric.aperture_bytes " +
                      hex(aperture_bytes));
  }
  if (gpu_count > kInvalidGpu) {
    throw ConfigError("gpu count " + std::to_string(gpu_count) + " exceeds " +
                      std::to_string(kInvalidGpu));
  }
  if (gpu_count > kMaxSpanBytes / aperture_bytes) {
    throw ConfigError("fabric.aperture_bytes " + hex(aperture_bytes) + " times " +
                      std::to_string(gpu_count) + " GPUs exceeds the largest possible BAR");
  }

  std::vector<Window> windows;
  windows.reserve(gpu_count);
  for (std::size_t k = 0; k < gpu_count; ++k) {
    Window window;
    window.name = "gpu" + std::to_string(k);
    window.window_offset = k * aperture_bytes;
    window.size_bytes = hbm_bytes;
    window.dst_gpu = static_cast<GpuId>(k);
    window.remote_base = 0;
    window.rights = rights;
    windows.push_back(std::move(window));
  }
  return windows;
}

std::size_t AddressMap::find_window(std::uint64_t window_addr) const {
  // The last window starting at or below the address is the only one that can contain it.
  const auto after = std::upper_bound(
      windows_.begin(), windows_.end(), window_addr,
      [](std::uint64_t addr, const Window& window) { return addr < window.window_offset; });
  if (after == windows_.begin()) return windows_.size();
  const auto candidate = after - 1;
  if (window_addr >= window_end(*candidate)) return windows_.size();
  return static_cast<std::size_t>(candidate - windows_.begin());
}

TranslateResult AddressMap::translate(std::uint64_t window_addr, std::uint64_t length,
                                      Access access, std::vector<Segment>& out) const {
  out.clear();
  if (length == 0) return {TranslateError::kZeroLength, window_addr};

  const Rights needed = right_needed(access);
  // Walk window by window, tracking the bytes still to place rather than an end address,
  // which could wrap past UINT64_MAX.
  std::uint64_t addr = window_addr;
  std::uint64_t remaining_bytes = length;
  std::size_t index = find_window(addr);
  if (index == windows_.size()) return {TranslateError::kOutOfWindow, addr};
  while (true) {
    const Window& window = windows_[index];
    if ((window.rights & needed) == 0) {
      out.clear();
      return {TranslateError::kNoRights, addr};
    }
    const std::uint64_t end = window_end(window);
    const std::uint64_t piece_bytes = std::min(remaining_bytes, end - addr);
    for (std::uint64_t done = 0; done < piece_bytes;) {
      const std::uint64_t chunk = std::min(piece_bytes - done, kMaxSegmentBytes);
      out.push_back(Segment{addr + done, window.dst_gpu,
                            window.remote_base + (addr + done - window.window_offset),
                            static_cast<std::uint32_t>(chunk), index});
      done += chunk;
    }
    remaining_bytes -= piece_bytes;
    if (remaining_bytes == 0) return {};
    addr = end;  // at most 2^63, so no overflow
    ++index;
    // Windows do not overlap, so the access continues only if the next one starts right here.
    if (index == windows_.size() || windows_[index].window_offset != addr) {
      out.clear();
      return {TranslateError::kOutOfWindow, addr};
    }
  }
}

}  // namespace ethx
