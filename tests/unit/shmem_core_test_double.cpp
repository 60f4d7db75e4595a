// The unit-test double of the OpenSHMEM core: see shmem_core_test_double.hpp.
#include "tests/unit/shmem_core_test_double.hpp"

#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>

namespace ethx::shmem_double {
namespace {

struct alignas(64) Heap {
  unsigned char bytes[kHeapBytes];
};

struct BarrierState {
  int arrived = 0;
  std::uint64_t generation = 0;
};

struct Fabric {
  int npes = 1;
  bool initialized = false;
  std::vector<std::unique_ptr<Heap>> heaps;
  std::mutex data_mutex;  // every copy into or out of the heaps
  std::mutex log_mutex;
  std::vector<Call> log;
  std::vector<std::string> forwarded;
  std::size_t malloc_next = kTestBytes;
  std::mutex barrier_mutex;
  std::condition_variable barrier_cv;
  std::map<std::tuple<int, int, int>, BarrierState> barriers;
};

Fabric& fabric() {
  static Fabric instance;
  return instance;
}

thread_local int t_me = 0;

void record(Call call) {
  call.caller = t_me;
  std::lock_guard<std::mutex> lock(fabric().log_mutex);
  fabric().log.push_back(call);
}

void forward(const char* name) {
  std::lock_guard<std::mutex> lock(fabric().log_mutex);
  fabric().forwarded.emplace_back(name);
}

// The symmetric offset of [addr, addr + bytes) on the calling PE, or a fatal error.
std::size_t offset_of(const void* addr, std::size_t bytes, const char* what) {
  if (ethx_shmem_is_symmetric(addr, bytes) == 0) {
    ethx_shmem_fatal("double: %s %p (%zu bytes) is not symmetric", what, addr, bytes);
  }
  return static_cast<std::size_t>(static_cast<const unsigned char*>(addr) - heap(t_me));
}

std::uint64_t mask(unsigned width) {
  return width >= 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * width)) - 1;
}

// Through the exact-width type, so the value is the low bytes whatever the byte order.
template <class T>
std::uint64_t load_as(const void* addr) {
  T value;
  std::memcpy(&value, addr, sizeof value);
  return value;
}

template <class T>
void store_as(void* addr, std::uint64_t bits) {
  auto value = static_cast<T>(bits);
  std::memcpy(addr, &value, sizeof value);
}

std::uint64_t load(const void* addr, unsigned width) {
  switch (width) {
    case 1:
      return load_as<std::uint8_t>(addr);
    case 2:
      return load_as<std::uint16_t>(addr);
    case 4:
      return load_as<std::uint32_t>(addr);
    case 8:
      return load_as<std::uint64_t>(addr);
    default:
      ethx_shmem_fatal("double: width %u", width);
  }
}

void store(void* addr, std::uint64_t value, unsigned width) {
  switch (width) {
    case 1:
      store_as<std::uint8_t>(addr, value);
      return;
    case 2:
      store_as<std::uint16_t>(addr, value);
      return;
    case 4:
      store_as<std::uint32_t>(addr, value);
      return;
    case 8:
      store_as<std::uint64_t>(addr, value);
      return;
    default:
      ethx_shmem_fatal("double: width %u", width);
  }
}

std::uint64_t apply(ethx_shmem_amo_op op, std::uint64_t old, std::uint64_t operand,
                    std::uint64_t compare) {
  switch (op) {
    case ETHX_AMO_FETCH:
      return old;
    case ETHX_AMO_SET:
    case ETHX_AMO_SWAP:
      return operand;
    case ETHX_AMO_CSWAP:
      return old == compare ? operand : old;
    case ETHX_AMO_FETCH_ADD:
      return old + operand;
    case ETHX_AMO_FETCH_AND:
      return old & operand;
    case ETHX_AMO_FETCH_OR:
      return old | operand;
    case ETHX_AMO_FETCH_XOR:
      return old ^ operand;
  }
  ethx_shmem_fatal("double: amo op %d", static_cast<int>(op));
}

// The value of `width` bytes as a signed number, in an int64_t.
std::int64_t sign_extend(std::uint64_t value, unsigned width) {
  if (width >= 8) {
    return static_cast<std::int64_t>(value);
  }
  std::uint64_t sign = std::uint64_t{1} << (8 * width - 1);
  value &= mask(width);
  return static_cast<std::int64_t>((value ^ sign) - sign);
}

}  // namespace

void reset(int npes, bool initialized) {
  Fabric& f = fabric();
  f.npes = npes;
  f.initialized = initialized;
  f.heaps.clear();
  for (int pe = 0; pe < npes; ++pe) {
    f.heaps.push_back(std::make_unique<Heap>());  // value-initialised: zeroed
  }
  f.log.clear();
  f.forwarded.clear();
  f.malloc_next = kTestBytes;
  f.barriers.clear();
  t_me = 0;
}

int me() {
  return t_me;
}

void run_pes(const std::function<void()>& body) {
  std::vector<std::thread> threads;
  for (int pe = 0; pe < fabric().npes; ++pe) {
    threads.emplace_back([pe, &body] {
      t_me = pe;
      body();
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
}

unsigned char* heap(int pe) {
  return fabric().heaps.at(static_cast<std::size_t>(pe))->bytes;
}

std::vector<Call> calls() {
  std::lock_guard<std::mutex> lock(fabric().log_mutex);
  return fabric().log;
}

void clear_calls() {
  std::lock_guard<std::mutex> lock(fabric().log_mutex);
  fabric().log.clear();
}

std::vector<Call> calls_of(Call::Kind kind) {
  std::vector<Call> out;
  for (const Call& call : calls()) {
    if (call.kind == kind) {
      out.push_back(call);
    }
  }
  return out;
}

std::vector<std::string> forwarded() {
  std::lock_guard<std::mutex> lock(fabric().log_mutex);
  return fabric().forwarded;
}

}  // namespace ethx::shmem_double

namespace sd = ethx::shmem_double;

// ---- the core's functions (shmem_core.h) ----
extern "C" {

int ethx_shmem_initialized(void) {
  return sd::fabric().initialized ? 1 : 0;
}
int ethx_shmem_me(void) {
  return sd::t_me;
}
int ethx_shmem_npes(void) {
  return sd::fabric().npes;
}

void ethx_shmem_require_init(const char* function) {
  if (!sd::fabric().initialized) {
    ethx_shmem_fatal("%s called before shmem_init", function);
  }
}

void ethx_shmem_check_pe(int pe, const char* function) {
  if (pe < 0 || pe >= sd::fabric().npes) {
    ethx_shmem_fatal("%s: PE %d is outside [0, %d)", function, pe, sd::fabric().npes);
  }
}

void ethx_shmem_fatal(const char* format, ...) {
  std::fprintf(stderr, "ethx-shmem: PE %d: ", sd::t_me);
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::fflush(stderr);
  std::_Exit(1);
}

int ethx_shmem_is_symmetric(const void* addr, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(addr);
  const unsigned char* base = sd::heap(sd::t_me);
  return p >= base && bytes <= sd::kHeapBytes &&
                 static_cast<std::size_t>(p - base) <= sd::kHeapBytes - bytes
             ? 1
             : 0;
}

void ethx_shmem_put_bytes(void* dest, const void* src, size_t bytes, int pe) {
  std::size_t offset = sd::offset_of(dest, bytes, "put dest");
  {
    std::lock_guard<std::mutex> lock(sd::fabric().data_mutex);
    std::memcpy(sd::heap(pe) + offset, src, bytes);
  }
  sd::record({sd::Call::Kind::kPutBytes, 0, pe, offset, bytes});
}

void ethx_shmem_get_bytes(void* dest, const void* src, size_t bytes, int pe) {
  std::size_t offset = sd::offset_of(src, bytes, "get source");
  {
    std::lock_guard<std::mutex> lock(sd::fabric().data_mutex);
    std::memcpy(dest, sd::heap(pe) + offset, bytes);
  }
  sd::record({sd::Call::Kind::kGetBytes, 0, pe, offset, bytes});
}

void ethx_shmem_put_value(void* dest, uint64_t value, unsigned width, int pe) {
  std::size_t offset = sd::offset_of(dest, width, "put_value dest");
  {
    std::lock_guard<std::mutex> lock(sd::fabric().data_mutex);
    sd::store(sd::heap(pe) + offset, value, width);
  }
  sd::record({sd::Call::Kind::kPutValue, 0, pe, offset, width, {}, value});
}

uint64_t ethx_shmem_get_value(const void* src, unsigned width, int pe) {
  std::size_t offset = sd::offset_of(src, width, "get_value source");
  std::uint64_t value = 0;
  {
    std::lock_guard<std::mutex> lock(sd::fabric().data_mutex);
    value = sd::load(sd::heap(pe) + offset, width);
  }
  sd::record({sd::Call::Kind::kGetValue, 0, pe, offset, width});
  return value;
}

uint64_t ethx_shmem_amo(enum ethx_shmem_amo_op op, void* dest, unsigned width, uint64_t operand,
                        uint64_t compare, int pe) {
  if (width != 4 && width != 8) {
    ethx_shmem_fatal("double: amo width %u", width);
  }
  std::size_t offset = sd::offset_of(dest, width, "amo dest");
  std::uint64_t old = 0;
  {
    std::lock_guard<std::mutex> lock(sd::fabric().data_mutex);
    unsigned char* target = sd::heap(pe) + offset;
    old = sd::load(target, width);
    sd::store(target, sd::apply(op, old, operand & sd::mask(width), compare & sd::mask(width)),
              width);
  }
  sd::record({sd::Call::Kind::kAmo, 0, pe, offset, width, op, operand, compare});
  return old;
}

void ethx_shmem_quiet_all(void) {
  sd::record({sd::Call::Kind::kQuiet});
}
void ethx_shmem_fence_all(void) {}

ethx_shmem_set ethx_shmem_world(void) {
  return {0, 1, sd::fabric().npes};
}

int ethx_shmem_set_index(const ethx_shmem_set* set) {
  int offset = sd::t_me - set->start;
  if (offset < 0 || offset % set->stride != 0 || offset / set->stride >= set->size) {
    return -1;
  }
  return offset / set->stride;
}

int ethx_shmem_set_pe(const ethx_shmem_set* set, int index) {
  if (index < 0 || index >= set->size) {
    ethx_shmem_fatal("double: set index %d of %d", index, set->size);
  }
  return set->start + index * set->stride;
}

void ethx_shmem_barrier_set(const ethx_shmem_set* set, int with_quiet) {
  sd::Call call{sd::Call::Kind::kBarrier};
  call.set = *set;
  call.with_quiet = with_quiet;
  sd::record(call);
  sd::Fabric& f = sd::fabric();
  std::unique_lock<std::mutex> lock(f.barrier_mutex);
  sd::BarrierState& state = f.barriers[{set->start, set->stride, set->size}];
  std::uint64_t generation = state.generation;
  if (++state.arrived == set->size) {
    state.arrived = 0;
    ++state.generation;
    f.barrier_cv.notify_all();
    return;
  }
  f.barrier_cv.wait(lock, [&] { return state.generation != generation; });
}

void* ethx_shmem_scratch(void) {
  return sd::heap(sd::t_me) + sd::kHeapBytes - sd::kScratchBytes;
}
size_t ethx_shmem_scratch_bytes(void) {
  return sd::kScratchBytes;
}

int ethx_shmem_compare(int cmp, uint64_t have, uint64_t want, unsigned width, int is_signed) {
  std::int64_t h = is_signed != 0 ? sd::sign_extend(have, width) : 0;
  std::int64_t w = is_signed != 0 ? sd::sign_extend(want, width) : 0;
  std::uint64_t uh = have & sd::mask(width);
  std::uint64_t uw = want & sd::mask(width);
  bool less = is_signed != 0 ? h < w : uh < uw;
  bool equal = is_signed != 0 ? h == w : uh == uw;
  switch (cmp) {
    case SHMEM_CMP_EQ:
      return equal ? 1 : 0;
    case SHMEM_CMP_NE:
      return equal ? 0 : 1;
    case SHMEM_CMP_GT:
      return !less && !equal ? 1 : 0;
    case SHMEM_CMP_LE:
      return less || equal ? 1 : 0;
    case SHMEM_CMP_LT:
      return less ? 1 : 0;
    case SHMEM_CMP_GE:
      return less ? 0 : 1;
    default:
      ethx_shmem_fatal("double: cmp %d", cmp);
  }
}

int ethx_shmem_test(const volatile void* ivar, unsigned width, int is_signed, int cmp,
                    uint64_t value) {
  std::uint64_t have = 0;
  {
    std::lock_guard<std::mutex> lock(sd::fabric().data_mutex);
    have = sd::load(const_cast<const void*>(ivar), width);
  }
  return ethx_shmem_compare(cmp, have, value, width, is_signed);
}

void ethx_shmem_wait_until(const volatile void* ivar, unsigned width, int is_signed, int cmp,
                           uint64_t value) {
  ethx_shmem_waiter waiter{};
  while (ethx_shmem_test(ivar, width, is_signed, cmp, value) == 0) {
    ethx_shmem_waiter_pause(&waiter);
  }
}

void ethx_shmem_waiter_pause(ethx_shmem_waiter* waiter) {
  ++waiter->rounds;
  std::this_thread::yield();
}

// ---- the public routines the deprecated names forward to ----
void shmem_init(void) {
  sd::forward("shmem_init");
  sd::fabric().initialized = true;
}
void shmem_finalize(void) {
  sd::forward("shmem_finalize");
}
int shmem_my_pe(void) {
  sd::forward("shmem_my_pe");
  return sd::t_me;
}
int shmem_n_pes(void) {
  sd::forward("shmem_n_pes");
  return sd::fabric().npes;
}
void* shmem_malloc(size_t size) {
  sd::forward("shmem_malloc");
  void* block = sd::heap(sd::t_me) + sd::fabric().malloc_next;
  sd::fabric().malloc_next += (size + 63) / 64 * 64;
  return block;
}
void* shmem_align(size_t alignment, size_t size) {
  sd::forward("shmem_align");
  sd::fabric().malloc_next = (sd::fabric().malloc_next + alignment - 1) / alignment * alignment;
  void* block = sd::heap(sd::t_me) + sd::fabric().malloc_next;
  sd::fabric().malloc_next += size;
  return block;
}
void* shmem_realloc(void* ptr, size_t size) {
  sd::forward("shmem_realloc");
  (void)size;
  return ptr;
}
void shmem_free(void* ptr) {
  sd::forward("shmem_free");
  (void)ptr;
}

}  // extern "C"
