// Sparse local memory for simulated GPUs: one private anonymous mapping per GPU, reserved
// without swap accounting (MAP_NORESERVE), so pages exist only once touched. 1024 GPUs of
// 64 MiB take 64 GiB of address space but only the pages the workload writes.
#pragma once

#include <cstddef>
#include <span>

namespace ethx::sim {

class SparseMemory {
 public:
  explicit SparseMemory(std::size_t bytes);  // throws std::system_error if mmap fails
  ~SparseMemory();
  SparseMemory(SparseMemory&& other) noexcept;
  SparseMemory& operator=(SparseMemory&&) = delete;
  SparseMemory(const SparseMemory&) = delete;
  SparseMemory& operator=(const SparseMemory&) = delete;

  std::span<std::byte> bytes() const { return {data_, size_}; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ethx::sim
