// The OpenSHMEM public API (qemu-device/shmem: include/shmem.h and its .c files) over the
// unit-test double of the core (shmem_core_test_double.hpp): which core call each routine
// makes (operation, width, bytes, target), and what collectives, reductions and locks compute
// with several PEs simulated as threads. The fabric itself is not here.
#include <gtest/gtest.h>

#include <shmem.h>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/unit/shmem_api_c11_calls.h"
#include "tests/unit/shmem_core_test_double.hpp"

namespace {

namespace sd = ethx::shmem_double;
using Kind = sd::Call::Kind;

constexpr int kPes = 4;

class ShmemApiTest : public ::testing::Test {
 protected:
  void SetUp() override { sd::reset(kPes); }
};

template <class T>
std::uint64_t bits_of(T value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof value);
  return bits;
}

// ---- atomics: operation, width and operands ----

TEST_F(ShmemApiTest, IntFetchIncIsFetchAddOfOneAtWidth4) {
  int* counter = sd::sym<int>(64);
  *sd::sym_on<int>(2, 64) = 41;
  EXPECT_EQ(shmem_int_atomic_fetch_inc(counter, 2), 41);
  EXPECT_EQ(*sd::sym_on<int>(2, 64), 42);
  auto amos = sd::calls_of(Kind::kAmo);
  ASSERT_EQ(amos.size(), 1U);
  EXPECT_EQ(amos[0].op, ETHX_AMO_FETCH_ADD);
  EXPECT_EQ(amos[0].bytes, 4U);
  EXPECT_EQ(amos[0].operand, 1U);
  EXPECT_EQ(amos[0].pe, 2);
  EXPECT_EQ(amos[0].offset, 64U);
}

TEST_F(ShmemApiTest, UlongFetchXorIsFetchXorAtWidth8) {
  auto* word = sd::sym<unsigned long>(128);
  *sd::sym_on<unsigned long>(1, 128) = 0xF0F0;
  EXPECT_EQ(shmem_ulong_atomic_fetch_xor(word, 0xFFUL, 1), 0xF0F0UL);
  EXPECT_EQ(*sd::sym_on<unsigned long>(1, 128), 0xF00FUL);
  auto amos = sd::calls_of(Kind::kAmo);
  ASSERT_EQ(amos.size(), 1U);
  EXPECT_EQ(amos[0].op, ETHX_AMO_FETCH_XOR);
  EXPECT_EQ(amos[0].bytes, 8U);
  EXPECT_EQ(amos[0].operand, 0xFFU);
}

TEST_F(ShmemApiTest, NegativeOperandsAreTheTypesOwnBytes) {
  int* small = sd::sym<int>(0);
  long* big = sd::sym<long>(8);
  *sd::sym_on<int>(3, 0) = 10;
  *sd::sym_on<long>(3, 8) = 10;
  EXPECT_EQ(shmem_int_atomic_fetch_add(small, -15, 3), 10);
  EXPECT_EQ(shmem_long_atomic_fetch_add(big, -15, 3), 10);
  EXPECT_EQ(*sd::sym_on<int>(3, 0), -5);
  EXPECT_EQ(*sd::sym_on<long>(3, 8), -5);
  auto amos = sd::calls_of(Kind::kAmo);
  ASSERT_EQ(amos.size(), 2U);
  EXPECT_EQ(amos[0].operand, 0xFFFFFFF1U);  // 4 bytes of -15, not sign-extended
  EXPECT_EQ(amos[1].operand, 0xFFFFFFFFFFFFFFF1U);
}

TEST_F(ShmemApiTest, CompareSwapPassesCondAsTheCompareValue) {
  long* word = sd::sym<long>(0);
  *sd::sym_on<long>(1, 0) = 7;
  EXPECT_EQ(shmem_long_atomic_compare_swap(word, 7, 9, 1), 7);
  EXPECT_EQ(*sd::sym_on<long>(1, 0), 9);
  EXPECT_EQ(shmem_long_atomic_compare_swap(word, 7, 11, 1), 9);  // cond no longer holds
  EXPECT_EQ(*sd::sym_on<long>(1, 0), 9);
  auto amos = sd::calls_of(Kind::kAmo);
  ASSERT_EQ(amos.size(), 2U);
  EXPECT_EQ(amos[0].op, ETHX_AMO_CSWAP);
  EXPECT_EQ(amos[0].operand, 9U);
  EXPECT_EQ(amos[0].compare, 7U);
}

TEST_F(ShmemApiTest, FloatingAtomicsMoveTheBits) {
  float* f = sd::sym<float>(0);
  double* d = sd::sym<double>(8);
  *sd::sym_on<float>(1, 0) = 1.5F;
  EXPECT_EQ(shmem_float_atomic_swap(f, 2.5F, 1), 1.5F);
  EXPECT_EQ(*sd::sym_on<float>(1, 0), 2.5F);
  shmem_double_atomic_set(d, -0.25, 2);
  EXPECT_EQ(*sd::sym_on<double>(2, 8), -0.25);
  EXPECT_EQ(shmem_double_atomic_fetch(d, 2), -0.25);
  auto amos = sd::calls_of(Kind::kAmo);
  ASSERT_EQ(amos.size(), 3U);
  EXPECT_EQ(amos[0].op, ETHX_AMO_SWAP);
  EXPECT_EQ(amos[0].bytes, 4U);
  EXPECT_EQ(amos[0].operand, bits_of(2.5F));
  EXPECT_EQ(amos[1].op, ETHX_AMO_SET);
  EXPECT_EQ(amos[1].bytes, 8U);
  EXPECT_EQ(amos[1].operand, bits_of(-0.25));
  EXPECT_EQ(amos[2].op, ETHX_AMO_FETCH);
}

TEST_F(ShmemApiTest, NonFetchingAndNbiFormsAreTheSameOperations) {
  auto* u = sd::sym<unsigned>(0);
  auto* w = sd::sym<std::uint64_t>(8);
  *sd::sym_on<std::uint64_t>(1, 8) = 0xFF00;
  shmem_uint_atomic_inc(u, 1);
  std::uint64_t fetched = 0;
  shmem_uint64_atomic_fetch_and_nbi(&fetched, w, 0x0FF0, 1);
  EXPECT_EQ(fetched, 0xFF00U);
  shmem_ulonglong_atomic_or(sd::sym<unsigned long long>(8), 0x1ULL, 1);
  EXPECT_EQ(*sd::sym_on<unsigned>(1, 0), 1U);
  EXPECT_EQ(*sd::sym_on<std::uint64_t>(1, 8), 0x0F01U);
  auto amos = sd::calls_of(Kind::kAmo);
  ASSERT_EQ(amos.size(), 3U);
  EXPECT_EQ(amos[0].op, ETHX_AMO_FETCH_ADD);
  EXPECT_EQ(amos[0].bytes, 4U);
  EXPECT_EQ(amos[1].op, ETHX_AMO_FETCH_AND);
  EXPECT_EQ(amos[2].op, ETHX_AMO_FETCH_OR);
}

TEST_F(ShmemApiTest, DeprecatedAtomicNamesAreTheSameOperations) {
  long* l = sd::sym<long>(0);
  int* i = sd::sym<int>(8);
  double* d = sd::sym<double>(16);
  EXPECT_EQ(shmem_long_fadd(l, 5, 1), 0);
  EXPECT_EQ(shmem_int_finc(i, 1), 0);
  shmem_long_add(l, 2, 1);
  shmem_int_inc(i, 1);
  EXPECT_EQ(shmem_longlong_cswap(sd::sym<long long>(0), 7, 1, 1), 7);
  EXPECT_EQ(shmem_double_swap(d, 3.0, 1), 0.0);
  EXPECT_EQ(shmem_double_fetch(d, 1), 3.0);
  shmem_int_set(i, 40, 1);
  EXPECT_EQ(*sd::sym_on<long>(1, 0), 1);  // 5 + 2, then compare-swapped from 7 to 1
  EXPECT_EQ(*sd::sym_on<int>(1, 8), 40);
  std::vector<ethx_shmem_amo_op> ops;
  for (const sd::Call& call : sd::calls_of(Kind::kAmo)) {
    ops.push_back(call.op);
  }
  EXPECT_EQ(ops, (std::vector<ethx_shmem_amo_op>{
                     ETHX_AMO_FETCH_ADD, ETHX_AMO_FETCH_ADD, ETHX_AMO_FETCH_ADD, ETHX_AMO_FETCH_ADD,
                     ETHX_AMO_CSWAP, ETHX_AMO_SWAP, ETHX_AMO_FETCH, ETHX_AMO_SET}));
}

TEST_F(ShmemApiTest, MisalignedAtomicIsAFatalErrorNamingTheRoutine) {
  auto* odd = static_cast<void*>(sd::heap(0) + 2);
  EXPECT_EXIT(shmem_int_atomic_inc(static_cast<int*>(odd), 1), ::testing::ExitedWithCode(1),
              "shmem_int_atomic_inc: dest .* is not aligned to its 4 bytes");
}

// ---- RMA: bytes, widths and placement ----

template <class T>
class ShmemRmaTest : public ShmemApiTest {};
using RmaTypes = ::testing::Types<float, double, long double, char, signed char, short, int, long,
                                  long long, unsigned char, unsigned short, unsigned int,
                                  unsigned long, unsigned long long>;
TYPED_TEST_SUITE(ShmemRmaTest, RmaTypes);

// Through the C++ overloads, which call the typed C routines.
TYPED_TEST(ShmemRmaTest, PutAndGetMoveNTimesSizeofTBytes) {
  using T = TypeParam;
  T* dest = sd::sym<T>(256);
  T source[5];
  for (int i = 0; i < 5; ++i) {
    source[i] = static_cast<T>(i + 1);
  }
  shmem_put(dest, source, 5, 1);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(sd::sym_on<T>(1, 256)[i], static_cast<T>(i + 1));
  }
  T back[5] = {};
  shmem_get(back, dest, 5, 1);
  EXPECT_EQ(back[4], static_cast<T>(5));
  auto puts = sd::calls_of(Kind::kPutBytes);
  auto gets = sd::calls_of(Kind::kGetBytes);
  ASSERT_EQ(puts.size(), 1U);
  ASSERT_EQ(gets.size(), 1U);
  EXPECT_EQ(puts[0].bytes, 5 * sizeof(T));
  EXPECT_EQ(puts[0].offset, 256U);
  EXPECT_EQ(puts[0].pe, 1);
  EXPECT_EQ(gets[0].bytes, 5 * sizeof(T));
}

TYPED_TEST(ShmemRmaTest, PAndGAreOneElement) {
  using T = TypeParam;
  T* x = sd::sym<T>(512);
  shmem_p(x, static_cast<T>(7), 3);
  EXPECT_EQ(*sd::sym_on<T>(3, 512), static_cast<T>(7));
  EXPECT_EQ(shmem_g(x, 3), static_cast<T>(7));
  if (sizeof(T) <= 8) {
    auto puts = sd::calls_of(Kind::kPutValue);
    ASSERT_EQ(puts.size(), 1U);
    EXPECT_EQ(puts[0].bytes, sizeof(T));
    EXPECT_EQ(sd::calls_of(Kind::kGetValue).size(), 1U);
  } else {  // long double: a copy of its bytes
    auto puts = sd::calls_of(Kind::kPutBytes);
    ASSERT_EQ(puts.size(), 1U);
    EXPECT_EQ(puts[0].bytes, sizeof(T));
  }
}

TEST_F(ShmemApiTest, ExactWidthNamesUseTheirWidth) {
  shmem_int8_put(sd::sym<int8_t>(0), std::vector<int8_t>(3, 1).data(), 3, 1);
  shmem_uint16_p(sd::sym<uint16_t>(8), 0xBEEF, 1);
  *sd::sym_on<size_t>(2, 16) = 12345;
  EXPECT_EQ(shmem_size_g(sd::sym<size_t>(16), 2), 12345U);
  ptrdiff_t strided[4] = {-1, -2, -3, -4};
  shmem_ptrdiff_iput(sd::sym<ptrdiff_t>(32), strided, 1, 2, 2, 1);
  EXPECT_EQ(*sd::sym_on<uint16_t>(1, 8), 0xBEEF);
  EXPECT_EQ(sd::sym_on<ptrdiff_t>(1, 32)[1], -3);
  auto all = sd::calls();
  ASSERT_EQ(all.size(), 5U);
  EXPECT_EQ(all[0].bytes, 3U);  // int8: 3 bytes
  EXPECT_EQ(all[1].bytes, 2U);  // uint16 p: one 2-byte store
  EXPECT_EQ(all[2].bytes, 8U);  // size_t g
  EXPECT_EQ(all[3].bytes, 8U);  // ptrdiff_t iput: element by element
  EXPECT_EQ(all[4].offset, 40U);
}

TEST_F(ShmemApiTest, SizedNamesCountElementsOfTheirSize) {
  std::vector<unsigned char> source(64, 0xAB);
  void* dest = sd::sym<unsigned char>(0);
  shmem_put8(dest, source.data(), 3, 1);
  shmem_put16(dest, source.data(), 3, 1);
  shmem_put32(dest, source.data(), 3, 1);
  shmem_put64_nbi(dest, source.data(), 3, 1);
  shmem_put128(dest, source.data(), 3, 1);
  shmem_putmem(dest, source.data(), 7, 1);
  shmem_getmem_nbi(source.data(), dest, 5, 1);
  shmem_get32(source.data(), dest, 2, 1);
  auto all = sd::calls();
  std::vector<std::size_t> bytes;
  for (const sd::Call& call : all) {
    bytes.push_back(call.bytes);
  }
  EXPECT_EQ(bytes, (std::vector<std::size_t>{3, 6, 12, 24, 48, 7, 5, 8}));
}

TEST_F(ShmemApiTest, StridedPutAndGetPlaceEveryElement) {
  int source[8] = {10, 11, 12, 13, 14, 15, 16, 17};
  shmem_int_iput(sd::sym<int>(0), source, 3, 2, 4, 1);  // dest stride 3, source stride 2
  const int* dest = sd::sym_on<int>(1, 0);
  EXPECT_EQ(dest[0], 10);
  EXPECT_EQ(dest[3], 12);
  EXPECT_EQ(dest[6], 14);
  EXPECT_EQ(dest[9], 16);
  EXPECT_EQ(dest[1], 0);
  auto puts = sd::calls_of(Kind::kPutValue);
  ASSERT_EQ(puts.size(), 4U);
  EXPECT_EQ(puts[3].offset, 9 * sizeof(int));
  int back[4] = {};
  shmem_iget32(back, sd::sym<int>(0), 1, 3, 4, 1);
  EXPECT_EQ(back[0], 10);
  EXPECT_EQ(back[3], 16);
  shmem_iput128(sd::sym<unsigned char>(128), source, 2, 1, 2, 1);  // 16-byte elements
  auto copies = sd::calls_of(Kind::kPutBytes);
  ASSERT_EQ(copies.size(), 2U);
  EXPECT_EQ(copies[1].offset, 128U + 32U);
  EXPECT_EQ(copies[1].bytes, 16U);
}

TEST_F(ShmemApiTest, NbiFormsAreCompleteOnReturn) {
  long source[2] = {5, 6};
  shmem_long_put_nbi(sd::sym<long>(0), source, 2, 2);
  EXPECT_EQ(sd::sym_on<long>(2, 0)[1], 6);
  long back[2] = {};
  shmem_long_get_nbi(back, sd::sym<long>(0), 2, 2);
  EXPECT_EQ(back[0], 5);
}

// ---- errors ----

TEST_F(ShmemApiTest, PeOutOfRangeIsAFatalErrorNamingTheRoutine) {
  EXPECT_EXIT(shmem_int_p(sd::sym<int>(0), 1, kPes), ::testing::ExitedWithCode(1),
              "shmem_int_p: PE 4");
  EXPECT_EXIT(shmem_long_atomic_fetch_add(sd::sym<long>(0), 1, -1), ::testing::ExitedWithCode(1),
              "shmem_long_atomic_fetch_add: PE -1");
  EXPECT_EXIT(shmem_putmem(sd::sym<char>(0), "x", 1, 9), ::testing::ExitedWithCode(1),
              "shmem_putmem: PE 9");
}

TEST_F(ShmemApiTest, CallsBeforeInitAreFatalErrorsNamingTheRoutine) {
  sd::reset(kPes, false);
  EXPECT_EXIT(shmem_long_g(sd::sym<long>(0), 0), ::testing::ExitedWithCode(1),
              "shmem_long_g called before shmem_init");
  EXPECT_EXIT(shmem_int_sum_reduce(SHMEM_TEAM_WORLD, sd::sym<int>(0), sd::sym<int>(0), 1),
              ::testing::ExitedWithCode(1), "shmem_int_sum_reduce called before shmem_init");
  EXPECT_EXIT(shmem_set_lock(sd::sym<long>(0)), ::testing::ExitedWithCode(1),
              "shmem_set_lock called before shmem_init");
  EXPECT_EXIT(shmalloc(8), ::testing::ExitedWithCode(1), "shmalloc called before shmem_init");
  EXPECT_EXIT(shmem_wait_until(sd::sym<long>(0), SHMEM_CMP_EQ, 0L), ::testing::ExitedWithCode(1),
              "shmem_wait_until called before shmem_init");
}

// ---- point-to-point synchronization ----

TEST_F(ShmemApiTest, TestComparesAtTheTypesWidthAndSignedness) {
  *sd::sym<short>(0) = -1;
  *sd::sym<unsigned short>(8) = 65535;
  *sd::sym<int>(16) = -2;
  *sd::sym<unsigned long>(24) = ~0UL;
  EXPECT_EQ(shmem_short_test(sd::sym<short>(0), SHMEM_CMP_LT, 0), 1);
  EXPECT_EQ(shmem_short_test(sd::sym<short>(0), SHMEM_CMP_GT, 0), 0);
  EXPECT_EQ(shmem_ushort_test(sd::sym<unsigned short>(8), SHMEM_CMP_GT, 0), 1);
  EXPECT_EQ(shmem_ushort_test(sd::sym<unsigned short>(8), SHMEM_CMP_LT, 1), 0);
  EXPECT_EQ(shmem_int_test(sd::sym<int>(16), SHMEM_CMP_GE, -2), 1);
  EXPECT_EQ(shmem_int_test(sd::sym<int>(16), SHMEM_CMP_NE, -2), 0);
  EXPECT_EQ(shmem_ulong_test(sd::sym<unsigned long>(24), SHMEM_CMP_GT, 1UL), 1);
  shmem_short_wait_until(sd::sym<short>(0), SHMEM_CMP_LE, -1);  // already true: returns
  shmem_long_wait(sd::sym<long>(32), 3);                        // 0 != 3: returns
  shmem_wait(sd::sym<long>(32), 3);
  shmem_wait_until(sd::sym<long>(32), SHMEM_CMP_EQ, 0L);
}

TEST_F(ShmemApiTest, WaitUntilReturnsOnceAnotherPeStores) {
  sd::reset(2);
  std::atomic<int> woke{0};
  sd::run_pes([&] {
    long* flag = sd::sym<long>(0);
    if (sd::me() == 1) {
      shmem_long_wait_until(flag, SHMEM_CMP_EQ, 5);
      woke = 1;
    } else {
      shmem_long_p(flag, 5, 1);
    }
  });
  EXPECT_EQ(woke.load(), 1);
}

TEST_F(ShmemApiTest, BadWaitsAreFatalErrors) {
  EXPECT_EXIT(shmem_int_test(sd::sym<int>(0), 42, 0), ::testing::ExitedWithCode(1),
              "shmem_int_test: cmp 42 is not a comparison");
  EXPECT_EXIT(shmem_int_test(sd::sym<int>(0), 0, 0), ::testing::ExitedWithCode(1), "cmp 0");
  int local = 0;
  EXPECT_EXIT(shmem_int_wait_until(&local, SHMEM_CMP_EQ, 1), ::testing::ExitedWithCode(1),
              "shmem_int_wait_until: ivar .* is not symmetric");
}

// ---- reductions (4 PEs as threads) ----

// Every PE's dest after body ran on every PE; T at offset 0, n of them.
template <class T>
std::vector<std::vector<T>> dests(std::size_t offset, std::size_t n) {
  std::vector<std::vector<T>> out;
  for (int pe = 0; pe < kPes; ++pe) {
    const T* d = sd::sym_on<T>(pe, offset);
    out.emplace_back(d, d + n);
  }
  return out;
}

// 300 ints: the double's scratch holds 1024 / (4 PEs x 4 bytes) = 64 per chunk, so 5 chunks.
TEST_F(ShmemApiTest, IntReductionsOverFourPesInChunks) {
  constexpr std::size_t kN = 300;
  sd::run_pes([&] {
    int* source = sd::sym<int>(0);
    for (std::size_t i = 0; i < kN; ++i) {
      source[i] = static_cast<int>(i % 7) * (sd::me() + 1) - 3;
    }
    EXPECT_EQ(shmem_int_sum_reduce(SHMEM_TEAM_WORLD, sd::sym<int>(2048), source, kN), 0);
    EXPECT_EQ(shmem_max_reduce(SHMEM_TEAM_WORLD, sd::sym<int>(4096), source, kN), 0);
    EXPECT_EQ(shmem_int_min_reduce(SHMEM_TEAM_WORLD, sd::sym<int>(6144), source, kN), 0);
    EXPECT_EQ(shmem_int_prod_reduce(SHMEM_TEAM_WORLD, sd::sym<int>(8192), source, kN), 0);
  });
  auto sums = dests<int>(2048, kN);
  auto maxes = dests<int>(4096, kN);
  auto mins = dests<int>(6144, kN);
  auto prods = dests<int>(8192, kN);
  for (std::size_t i = 0; i < kN; ++i) {
    int sum = 0;
    int max = INT_MIN;
    int min = INT_MAX;
    int prod = 1;
    for (int pe = 0; pe < kPes; ++pe) {
      int v = static_cast<int>(i % 7) * (pe + 1) - 3;
      sum += v;
      max = std::max(max, v);
      min = std::min(min, v);
      prod *= v;
    }
    for (int pe = 0; pe < kPes; ++pe) {
      ASSERT_EQ(sums[pe][i], sum) << "PE " << pe << " element " << i;
      ASSERT_EQ(maxes[pe][i], max);
      ASSERT_EQ(mins[pe][i], min);
      ASSERT_EQ(prods[pe][i], prod);
    }
  }
  // Per chunk and PE: one sync, the puts, one barrier with quiet.
  auto barriers = sd::calls_of(Kind::kBarrier);
  EXPECT_EQ(barriers.size(), 4U * 5 * 2 * kPes);
  auto puts = sd::calls_of(Kind::kPutBytes);
  EXPECT_EQ(puts.size(), 4U * 5 * kPes * kPes);
}

TEST_F(ShmemApiTest, BitwiseReductions) {
  sd::run_pes([&] {
    auto* source = sd::sym<std::uint64_t>(0);
    auto* bytes = sd::sym<unsigned char>(64);
    source[0] = 0xFF00FF00FF00FF00ULL | (1ULL << sd::me());
    source[1] = 1ULL << (8 * sd::me());
    bytes[0] = static_cast<unsigned char>(0xF0 | sd::me());
    shmem_uint64_and_reduce(SHMEM_TEAM_WORLD, sd::sym<std::uint64_t>(128), source, 2);
    shmem_uint64_or_reduce(SHMEM_TEAM_WORLD, sd::sym<std::uint64_t>(256), source, 2);
    shmem_xor_reduce(SHMEM_TEAM_WORLD, sd::sym<unsigned char>(384), bytes, 1);
  });
  for (int pe = 0; pe < kPes; ++pe) {
    EXPECT_EQ(sd::sym_on<std::uint64_t>(pe, 128)[0], 0xFF00FF00FF00FF00ULL);
    EXPECT_EQ(sd::sym_on<std::uint64_t>(pe, 128)[1], 0U);
    EXPECT_EQ(sd::sym_on<std::uint64_t>(pe, 256)[0], 0xFF00FF00FF00FF0FULL);
    EXPECT_EQ(sd::sym_on<std::uint64_t>(pe, 256)[1], 0x01010101ULL);
    EXPECT_EQ(*sd::sym_on<unsigned char>(pe, 384), 0xF0 ^ 0xF1 ^ 0xF2 ^ 0xF3);
  }
}

// Floating sums are reduced in PE order on every PE: ((c0 + c1) + c2) + c3, bit for bit.
TEST_F(ShmemApiTest, FloatingSumsAreInPeOrderAndIdenticalEverywhere) {
  const double contributions[kPes] = {1e16, 1.0, -1e16, 1.0};
  sd::run_pes([&] {
    double* x = sd::sym<double>(0);
    *x = contributions[sd::me()];
    shmem_double_sum_reduce(SHMEM_TEAM_WORLD, x, x, 1);  // in place
    long double* y = sd::sym<long double>(64);
    *y = static_cast<long double>(sd::me()) - 1.5L;
    shmem_longdouble_max_reduce(SHMEM_TEAM_WORLD, sd::sym<long double>(128), y, 1);
  });
  volatile double in_order = ((contributions[0] + contributions[1]) + contributions[2]);
  in_order = in_order + contributions[3];
  for (int pe = 0; pe < kPes; ++pe) {
    EXPECT_EQ(bits_of(*sd::sym_on<double>(pe, 0)), bits_of(static_cast<double>(in_order)));
    EXPECT_EQ(*sd::sym_on<long double>(pe, 128), 1.5L);
  }
}

TEST_F(ShmemApiTest, IntegerSumsWrapInsteadOfOverflowing) {
  sd::run_pes([&] {
    int* x = sd::sym<int>(0);
    *x = sd::me() == 0 ? INT_MAX : 1;
    shmem_int_sum_reduce(SHMEM_TEAM_WORLD, sd::sym<int>(8), x, 1);
  });
  EXPECT_EQ(*sd::sym_on<int>(2, 8), INT_MIN + 2);
}

TEST_F(ShmemApiTest, ToAllReducesOverTheActiveSetOnly) {
  // PE_start 1, logPE_stride 1, PE_size 2: PEs 1 and 3.
  sd::run_pes([&] {
    long* source = sd::sym<long>(0);
    long* dest = sd::sym<long>(64);
    *source = 10 * (sd::me() + 1);
    *dest = -1;
    long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE] = {};
    long psync[SHMEM_REDUCE_SYNC_SIZE] = {SHMEM_SYNC_VALUE};
    if (sd::me() % 2 == 1) {
      shmem_long_sum_to_all(dest, source, 1, 1, 1, 2, pwrk, psync);
    }
  });
  EXPECT_EQ(*sd::sym_on<long>(0, 64), -1);
  EXPECT_EQ(*sd::sym_on<long>(1, 64), 20 + 40);
  EXPECT_EQ(*sd::sym_on<long>(2, 64), -1);
  EXPECT_EQ(*sd::sym_on<long>(3, 64), 20 + 40);
  for (const sd::Call& call : sd::calls_of(Kind::kBarrier)) {
    EXPECT_EQ(call.set.start, 1);
    EXPECT_EQ(call.set.stride, 2);
    EXPECT_EQ(call.set.size, 2);
  }
}

TEST_F(ShmemApiTest, BadActiveSetsAreFatalErrors) {
  long psync[SHMEM_BARRIER_SYNC_SIZE] = {};
  EXPECT_EXIT(shmem_barrier(0, 0, 0, psync), ::testing::ExitedWithCode(1),
              "shmem_barrier: PE_size 0 is outside \\[1, 4\\]");
  EXPECT_EXIT(shmem_barrier(0, 31, 2, psync), ::testing::ExitedWithCode(1),
              "logPE_stride 31 is outside");
  EXPECT_EXIT(shmem_barrier(1, 1, 3, psync), ::testing::ExitedWithCode(1), "ends at PE 5");
  EXPECT_EXIT(shmem_barrier(1, 0, 2, psync), ::testing::ExitedWithCode(1),
              "PE 0 is not in the active set");
  int i = 0;
  EXPECT_EXIT(shmem_int_sum_to_all(&i, &i, -1, 0, 0, 4, &i, psync), ::testing::ExitedWithCode(1),
              "shmem_int_sum_to_all: nreduce -1 is negative");
}

// ---- collectives that move data ----

TEST_F(ShmemApiTest, TeamBroadcastUpdatesEveryDestIncludingTheRoots) {
  sd::run_pes([&] {
    long* source = sd::sym<long>(0);
    long* dest = sd::sym<long>(64);
    for (int i = 0; i < 3; ++i) {
      source[i] = 100 * sd::me() + i;
    }
    EXPECT_EQ(shmem_broadcast(SHMEM_TEAM_WORLD, dest, source, 3, 2), 0);
  });
  for (int pe = 0; pe < kPes; ++pe) {
    EXPECT_EQ(dests<long>(64, 3)[pe], (std::vector<long>{200, 201, 202}));
  }
}

TEST_F(ShmemApiTest, DeprecatedBroadcastLeavesTheRootsDest) {
  sd::run_pes([&] {
    auto* source = sd::sym<std::uint64_t>(0);
    auto* dest = sd::sym<std::uint64_t>(64);
    *source = 7 + sd::me();
    *dest = 99;
    long psync[SHMEM_BCAST_SYNC_SIZE] = {};
    shmem_broadcast64(dest, source, 1, 1, 0, 0, kPes, psync);
  });
  EXPECT_EQ(*sd::sym_on<std::uint64_t>(0, 64), 8U);
  EXPECT_EQ(*sd::sym_on<std::uint64_t>(1, 64), 99U);
  EXPECT_EQ(*sd::sym_on<std::uint64_t>(3, 64), 8U);
}

TEST_F(ShmemApiTest, FcollectAndCollectConcatenateInPeOrder) {
  sd::run_pes([&] {
    int* source = sd::sym<int>(0);
    for (int i = 0; i < 4; ++i) {
      source[i] = 10 * sd::me() + i;
    }
    shmem_int_fcollect(SHMEM_TEAM_WORLD, sd::sym<int>(64), source, 2);
    // PE k gives k + 1 elements.
    shmem_collect(SHMEM_TEAM_WORLD, sd::sym<int>(256), source, static_cast<size_t>(sd::me() + 1));
  });
  for (int pe = 0; pe < kPes; ++pe) {
    EXPECT_EQ(dests<int>(64, 8)[pe], (std::vector<int>{0, 1, 10, 11, 20, 21, 30, 31}));
    EXPECT_EQ(dests<int>(256, 10)[pe], (std::vector<int>{0, 10, 11, 20, 21, 22, 30, 31, 32, 33}));
  }
}

TEST_F(ShmemApiTest, AlltoallSendsBlockJToPeJ) {
  sd::run_pes([&] {
    short* source = sd::sym<short>(0);
    for (int j = 0; j < kPes; ++j) {
      source[2 * j] = static_cast<short>(100 * sd::me() + j);
      source[2 * j + 1] = static_cast<short>(-(100 * sd::me() + j));
    }
    shmem_alltoall(SHMEM_TEAM_WORLD, sd::sym<short>(64), source, 2);
  });
  for (int pe = 0; pe < kPes; ++pe) {
    for (int i = 0; i < kPes; ++i) {
      EXPECT_EQ(sd::sym_on<short>(pe, 64)[2 * i], 100 * i + pe);
      EXPECT_EQ(sd::sym_on<short>(pe, 64)[2 * i + 1], -(100 * i + pe));
    }
  }
}

TEST_F(ShmemApiTest, AlltoallsStridesBothSides) {
  // nelems 2, sst 3, dst 2: block j of the source is elements 6j and 6j + 3; block i of dest
  // elements 4i and 4i + 2.
  sd::run_pes([&] {
    int* source = sd::sym<int>(0);
    for (int j = 0; j < kPes; ++j) {
      source[6 * j] = 100 * sd::me() + 10 * j;
      source[6 * j + 3] = 100 * sd::me() + 10 * j + 1;
    }
    shmem_int_alltoalls(SHMEM_TEAM_WORLD, sd::sym<int>(256), source, 2, 3, 2);
  });
  for (int pe = 0; pe < kPes; ++pe) {
    for (int i = 0; i < kPes; ++i) {
      EXPECT_EQ(sd::sym_on<int>(pe, 256)[4 * i], 100 * i + 10 * pe);
      EXPECT_EQ(sd::sym_on<int>(pe, 256)[4 * i + 2], 100 * i + 10 * pe + 1);
      EXPECT_EQ(sd::sym_on<int>(pe, 256)[4 * i + 1], 0);
    }
  }
}

TEST_F(ShmemApiTest, SizedActiveSetCollectives) {
  // PEs 0 and 2 (PE_start 0, logPE_stride 1, PE_size 2).
  sd::run_pes([&] {
    if (sd::me() % 2 != 0) {
      return;
    }
    auto* source = sd::sym<std::uint32_t>(0);
    source[0] = 1000U + static_cast<unsigned>(sd::me());
    source[1] = 2000U + static_cast<unsigned>(sd::me());
    long psync[SHMEM_COLLECT_SYNC_SIZE] = {};
    shmem_fcollect32(sd::sym<std::uint32_t>(64), source, 2, 0, 1, 2, psync);
    shmem_alltoall32(sd::sym<std::uint32_t>(128), source, 1, 0, 1, 2, psync);
  });
  EXPECT_EQ(dests<std::uint32_t>(64, 4)[2], (std::vector<std::uint32_t>{1000, 2000, 1002, 2002}));
  EXPECT_EQ(dests<std::uint32_t>(128, 2)[0], (std::vector<std::uint32_t>{1000, 1002}));
  EXPECT_EQ(dests<std::uint32_t>(128, 2)[2], (std::vector<std::uint32_t>{2000, 2002}));
  EXPECT_EQ(dests<std::uint32_t>(64, 4)[1], (std::vector<std::uint32_t>{0, 0, 0, 0}));
}

// ---- teams ----

TEST_F(ShmemApiTest, WorldIsTheOnlyTeam) {
  EXPECT_EQ(shmem_team_my_pe(SHMEM_TEAM_WORLD), 0);
  EXPECT_EQ(shmem_team_n_pes(SHMEM_TEAM_WORLD), kPes);
  EXPECT_EQ(shmem_team_my_pe(SHMEM_TEAM_INVALID), -1);
  EXPECT_EQ(shmem_team_n_pes(SHMEM_TEAM_INVALID), -1);
  EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 3, SHMEM_TEAM_WORLD), 3);
  EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, kPes, SHMEM_TEAM_WORLD), -1);
  EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD), -1);
  int x = 0;
  EXPECT_EXIT(shmem_int_sum_reduce(SHMEM_TEAM_INVALID, &x, &x, 1), ::testing::ExitedWithCode(1),
              "shmem_int_sum_reduce: team is SHMEM_TEAM_INVALID");
  EXPECT_EXIT(shmem_team_sync(SHMEM_TEAM_INVALID), ::testing::ExitedWithCode(1),
              "shmem_team_sync: team is SHMEM_TEAM_INVALID");
  EXPECT_EXIT(shmem_broadcastmem(SHMEM_TEAM_WORLD, &x, &x, 1, kPes), ::testing::ExitedWithCode(1),
              "shmem_broadcastmem: PE_root 4 is outside");
}

TEST_F(ShmemApiTest, SyncsAndBarriersUseTheCoresBarrier) {
  sd::run_pes([&] {
    long psync[SHMEM_BARRIER_SYNC_SIZE] = {};
    shmem_team_sync(SHMEM_TEAM_WORLD);
    if (sd::me() % 2 == 0) {
      shmem_barrier(0, 1, 2, psync);
      shmem_sync(0, 1, 2, psync);
    }
  });
  auto barriers = sd::calls_of(Kind::kBarrier);
  int world = 0;
  int with_quiet = 0;
  for (const sd::Call& call : barriers) {
    world += call.set.size == kPes ? 1 : 0;
    with_quiet += call.with_quiet;
    if (call.set.size == 2) {
      EXPECT_EQ(call.set.stride, 2);
    }
  }
  EXPECT_EQ(world, kPes);    // shmem_team_sync: a sync of the world
  EXPECT_EQ(with_quiet, 2);  // shmem_barrier on PEs 0 and 2; shmem_sync is without
  EXPECT_EQ(barriers.size(), static_cast<std::size_t>(kPes + 4));
}

// ---- locks ----

TEST_F(ShmemApiTest, LockGivesMutualExclusionAndCountsTickets) {
  constexpr int kRounds = 50;
  sd::run_pes([&] {
    long* lock = sd::sym<long>(0);
    long* counter = sd::sym<long>(64);
    for (int round = 0; round < kRounds; ++round) {
      shmem_set_lock(lock);
      long seen = shmem_long_g(counter, 0);
      shmem_long_p(counter, seen + 1, 0);
      shmem_clear_lock(lock);
    }
  });
  EXPECT_EQ(*sd::sym_on<long>(0, 64), kPes * kRounds);
  // Next ticket and ticket served, both kPes x kRounds; PE 0's copy is the lock.
  auto word = static_cast<std::uint64_t>(*sd::sym_on<long>(0, 0));
  EXPECT_EQ(word >> 32, static_cast<std::uint64_t>(kPes * kRounds));
  EXPECT_EQ(word & 0xFFFFFFFFU, static_cast<std::uint64_t>(kPes * kRounds));
  for (const sd::Call& call : sd::calls_of(Kind::kAmo)) {
    ASSERT_EQ(call.pe, 0);
  }
  EXPECT_EQ(sd::calls_of(Kind::kQuiet).size(), static_cast<std::size_t>(kPes * kRounds));
}

TEST_F(ShmemApiTest, TestLockTakesOnlyAFreeLock) {
  long* lock = sd::sym<long>(0);
  EXPECT_EQ(shmem_test_lock(lock), 0);
  EXPECT_EQ(shmem_test_lock(lock), 1);
  shmem_clear_lock(lock);
  EXPECT_EQ(shmem_test_lock(lock), 0);
  shmem_clear_lock(lock);
  EXPECT_EQ(*sd::sym_on<long>(0, 0), (2L << 32) | 2L);
}

// ---- deprecated names that forward ----

TEST_F(ShmemApiTest, DeprecatedSetupAndMemoryNamesForward) {
  sd::reset(kPes, false);
  start_pes(0);
  void* block = shmalloc(100);
  EXPECT_NE(shmemalign(256, 64), nullptr);
  EXPECT_EQ(shrealloc(block, 200), block);
  shfree(block);
  EXPECT_EQ(_my_pe(), 0);
  EXPECT_EQ(_num_pes(), kPes);
  shmem_pcontrol(1);
  EXPECT_EQ(sd::forwarded(),
            (std::vector<std::string>{"shmem_init", "shmem_malloc", "shmem_align", "shmem_realloc",
                                      "shmem_free", "shmem_my_pe", "shmem_n_pes"}));
}

// ---- C11 type-generic selection (tests/unit/shmem_api_c11_calls.c) ----

TEST_F(ShmemApiTest, C11GenericNamesReachTheTypedRoutines) {
  long longs[3] = {1, 2, 3};
  ethx_c11_put_long(sd::sym<long>(0), longs, 3, 1);
  ethx_c11_p_short(sd::sym<short>(64), -7, 2);
  *sd::sym_on<double>(3, 128) = 2.25;
  EXPECT_EQ(ethx_c11_g_double(sd::sym<double>(128), 3), 2.25);
  *sd::sym_on<int8_t>(1, 192) = -5;
  *sd::sym_on<int8_t>(1, 194) = -6;
  int8_t bytes[2] = {};
  ethx_c11_iget_int8(bytes, sd::sym<int8_t>(192), 1, 2, 2, 1);
  EXPECT_EQ(bytes[1], -6);
  EXPECT_EQ(ethx_c11_atomic_fetch_inc_uint(sd::sym<unsigned>(256), 1), 0U);
  EXPECT_EQ(ethx_c11_atomic_fetch_xor_int64(sd::sym<int64_t>(264), -1, 1), 0);
  EXPECT_EQ(ethx_c11_atomic_swap_float(sd::sym<float>(272), 0.5F, 1), 0.0F);
  EXPECT_EQ(ethx_c11_fadd_long(sd::sym<long>(280), 3, 1), 0);
  auto all = sd::calls();
  ASSERT_EQ(all.size(), 9U);
  EXPECT_EQ(all[0].kind, Kind::kPutBytes);
  EXPECT_EQ(all[0].bytes, 3 * sizeof(long));
  EXPECT_EQ(all[1].kind, Kind::kPutValue);
  EXPECT_EQ(all[1].bytes, sizeof(short));
  EXPECT_EQ(all[2].bytes, sizeof(double));
  EXPECT_EQ(all[3].bytes, 1U);  // int8_t, element by element
  EXPECT_EQ(all[5].op, ETHX_AMO_FETCH_ADD);
  EXPECT_EQ(all[5].bytes, 4U);
  EXPECT_EQ(all[6].op, ETHX_AMO_FETCH_XOR);
  EXPECT_EQ(all[6].bytes, 8U);
  EXPECT_EQ(all[7].op, ETHX_AMO_SWAP);
  EXPECT_EQ(all[7].bytes, 4U);
  EXPECT_EQ(all[8].op, ETHX_AMO_FETCH_ADD);
  EXPECT_EQ(all[8].bytes, 8U);
  EXPECT_EQ(*sd::sym_on<int64_t>(1, 264), -1);
  EXPECT_EQ(*sd::sym_on<short>(2, 64), -7);
  *sd::sym<unsigned short>(512) = 65535;
  EXPECT_EQ(ethx_c11_test_ushort(sd::sym<unsigned short>(512), SHMEM_CMP_GT, 1), 1);
  ethx_c11_wait_until_long(sd::sym<long>(520), SHMEM_CMP_EQ, 0);
}

TEST_F(ShmemApiTest, C11GenericCollectivesAndBothSyncs) {
  sd::run_pes([&] {
    double* x = sd::sym<double>(0);
    *x = 0.5 * sd::me();
    EXPECT_EQ(ethx_c11_sum_reduce_double(sd::sym<double>(8), x, 1), 0);
    EXPECT_EQ(ethx_c11_sync_team(), 0);
    long psync[SHMEM_BARRIER_SYNC_SIZE] = {};
    ethx_c11_sync_active_set(0, 0, kPes, psync);
  });
  EXPECT_EQ(*sd::sym_on<double>(3, 8), 3.0);
  std::size_t syncs = 0;
  for (const sd::Call& call : sd::calls_of(Kind::kBarrier)) {
    syncs += call.with_quiet == 0 ? 1 : 0;
  }
  // The reduction's one sync and the two shmem_sync calls, on each PE.
  EXPECT_EQ(syncs, 3U * kPes);
}

}  // namespace
