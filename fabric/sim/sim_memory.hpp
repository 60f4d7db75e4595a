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

// Best effort, process-wide, for a simulator run: grows glibc malloc's heap by `bytes` now,
// asks for transparent huge pages on that stretch (madvise), and has malloc keep what is freed
// instead of giving it back, so the frame buffers allocated next (hundreds of megabytes at 1024
// GPUs, each touched once in a hundred thousand events) cost one TLB entry per 2 MiB instead
// of one per 4 KiB. Only the addresses are reserved: pages are allocated when touched. False
// when the heap did not grow or madvise refused (no THP, not glibc); malloc's settings may have
// changed either way.
bool grow_heap_with_huge_pages(std::size_t bytes);

}  // namespace ethx::sim
