#include "fabric/sim/sim_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <system_error>
#include <utility>

namespace ethx::sim {

SparseMemory::SparseMemory(std::size_t bytes) : size_(bytes) {
  void* mapping = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) {
    throw std::system_error(errno, std::generic_category(), "mmap of simulated GPU memory");
  }
  data_ = static_cast<std::byte*>(mapping);
}

SparseMemory::~SparseMemory() {
  if (data_ != nullptr) munmap(data_, size_);
}

SparseMemory::SparseMemory(SparseMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

bool grow_heap_with_huge_pages(std::size_t bytes) {
#if defined(__GLIBC__)
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
  constexpr int kHeapBlockMax = 32 << 20;  // glibc's largest M_MMAP_THRESHOLD
  const int pad = static_cast<int>(std::min<std::size_t>(bytes, INT_MAX / 2));
  // Blocks up to 32 MiB come from the heap, not mmap; a free never trims the heap; and the next
  // growth of the heap adds `pad`.
  if (mallopt(M_MMAP_THRESHOLD, kHeapBlockMax) == 0 || mallopt(M_TRIM_THRESHOLD, INT_MAX) == 0 ||
      mallopt(M_TOP_PAD, pad) == 0) {
    return false;
  }
  auto* const before = static_cast<char*>(sbrk(0));
  // Blocks larger than any the heap has left, until it grows (volatile: a malloc and free of
  // an unused block may be left out by the compiler).
  constexpr std::size_t kMaxProbes = 64;
  void* volatile probes[kMaxProbes] = {};
  std::size_t count = 0;
  while (count < kMaxProbes && sbrk(0) == before) {
    probes[count] = std::malloc(kHeapBlockMax - 4096);
    if (probes[count++] == nullptr) break;
  }
  auto* const after = static_cast<char*>(sbrk(0));
  for (std::size_t i = 0; i < count; ++i) std::free(probes[i]);
  mallopt(M_TOP_PAD, 128 * 1024);  // glibc's default again for later growth
  // madvise from the first 2 MiB boundary of the new stretch.
  const std::uintptr_t misaligned = reinterpret_cast<std::uintptr_t>(before) % kHugePage;
  char* const from = before + (misaligned == 0 ? 0 : kHugePage - misaligned);
  if (after <= from) return false;
  return madvise(from, static_cast<std::size_t>(after - from), MADV_HUGEPAGE) == 0;
#else
  (void)bytes;
  return false;
#endif
}

}  // namespace ethx::sim
