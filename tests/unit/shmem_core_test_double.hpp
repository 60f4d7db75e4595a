// A unit-test double of the OpenSHMEM core (qemu-device/shmem/shmem_core.h), for testing the
// public API files (shmem_*_typed.c, shmem_collectives.c, shmem_reduce.c, ...) without a
// fabric: several PEs simulated as threads of one process. PE k's symmetric memory is its own
// copy of one heap; a symmetric address on the calling PE (an offset into its copy) names the
// same offset on every PE. Puts, gets and atomics copy between the copies under one mutex,
// barriers are real barriers among the set's threads, and every call is logged so that tests
// can check what the API asked the core for. Also the few public routines the deprecated
// names forward to (shmem_init, shmem_malloc, ...). Not the real core: nothing here says how
// the fabric behaves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "qemu-device/shmem/shmem_core.h"

namespace ethx::shmem_double {

inline constexpr std::size_t kHeapBytes = 64 * 1024;
// Small, so that reductions of a few hundred elements go in several chunks.
inline constexpr std::size_t kScratchBytes = 1024;
// Offsets below this are the tests' to use; above it shmem_malloc's, then the scratch.
inline constexpr std::size_t kTestBytes = 32 * 1024;

// One call the API made to the core.
struct Call {
  enum class Kind { kPutBytes, kGetBytes, kPutValue, kGetValue, kAmo, kQuiet, kBarrier };
  Kind kind{};
  int caller = 0;          // the calling PE
  int pe = -1;             // the target PE (RMA, AMO)
  std::size_t offset = 0;  // the symmetric offset of the target (RMA, AMO)
  std::size_t bytes = 0;   // RMA bytes, or the width of one element or atomic
  ethx_shmem_amo_op op{};
  std::uint64_t operand = 0;
  std::uint64_t compare = 0;
  ethx_shmem_set set{};  // barrier
  int with_quiet = 0;    // barrier
};

// A fresh fabric of npes PEs, zeroed, and shmem_init done unless initialized is false.
void reset(int npes, bool initialized = true);
// The calling thread's PE (0 on the test's own thread).
int me();
// Runs body once per PE, PE k on a thread of its own, and waits for them all.
void run_pes(const std::function<void()>& body);

// PE pe's copy of the symmetric heap.
unsigned char* heap(int pe);
// The calling PE's symmetric object at offset.
template <class T>
T* sym(std::size_t offset) {
  return static_cast<T*>(static_cast<void*>(heap(me()) + offset));
}
// PE pe's copy of that object.
template <class T>
T* sym_on(int pe, std::size_t offset) {
  return static_cast<T*>(static_cast<void*>(heap(pe) + offset));
}

std::vector<Call> calls();
void clear_calls();
std::vector<Call> calls_of(Call::Kind kind);
// The public routines the double stands in for, as they were called ("shmem_malloc", ...).
std::vector<std::string> forwarded();

}  // namespace ethx::shmem_double
