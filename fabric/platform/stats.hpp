// Small statistics helpers for benchmark samples.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ethx {

// The p-th percentile (0..100) by nearest rank; 0 for no samples. Reorders `samples`.
inline std::uint64_t percentile(std::vector<std::uint64_t>& samples, double p) {
  if (samples.empty()) return 0;
  const double rank = p / 100.0 * static_cast<double>(samples.size() - 1);
  const auto index = static_cast<std::size_t>(std::llround(rank));
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(index),
                   samples.end());
  return samples[index];
}

// A non-negative figure (a percentile of nanoseconds, say) rounded to the nearest integer.
inline std::uint64_t rounded(double value) {
  return static_cast<std::uint64_t>(std::llround(value));
}

inline double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2.0;
}

}  // namespace ethx
