#include "fabric/sim/sim_memory.hpp"

#include <sys/mman.h>

#include <cerrno>
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

}  // namespace ethx::sim
