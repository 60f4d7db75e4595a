// Compile-only: every type-generic name of shmem.h as a C++ overload (C++17, -Wall -Wextra
// -Werror -pedantic), with every type of its table in the OpenSHMEM 1.5 spec, and the type
// each returns. Never run. The tables are the spec's, written out again here (C++ has no
// complex reductions).
#include <shmem.h>

#include <type_traits>

/* clang-format off */
#define RMA_TYPES(X)                                                  \
  X(float) X(double) X(long double) X(char) X(signed char) X(short)   \
  X(int) X(long) X(long long) X(unsigned char) X(unsigned short)      \
  X(unsigned int) X(unsigned long) X(unsigned long long) X(int8_t)    \
  X(int16_t) X(int32_t) X(int64_t) X(uint8_t) X(uint16_t) X(uint32_t) \
  X(uint64_t) X(size_t) X(ptrdiff_t)
#define AMO_TYPES(X)                                                  \
  X(int) X(long) X(long long) X(unsigned int) X(unsigned long)        \
  X(unsigned long long) X(int32_t) X(int64_t) X(uint32_t) X(uint64_t) \
  X(size_t) X(ptrdiff_t)
#define EXTENDED_AMO_TYPES(X)     \
  AMO_TYPES(X) X(float) X(double)
#define BITWISE_AMO_TYPES(X)                                        \
  X(unsigned int) X(unsigned long) X(unsigned long long) X(int32_t) \
  X(int64_t) X(uint32_t) X(uint64_t)
#define SYNC_TYPES(X)                     \
  AMO_TYPES(X) X(short) X(unsigned short)
#define REDUCE_BITWISE_TYPES(X)                                       \
  X(unsigned char) X(unsigned short) X(unsigned int) X(unsigned long) \
  X(unsigned long long) X(int8_t) X(int16_t) X(int32_t) X(int64_t)    \
  X(uint8_t) X(uint16_t) X(uint32_t) X(uint64_t) X(size_t)
#define REDUCE_ARITH_TYPES(X)                                 \
  X(char) X(signed char) X(short) X(int) X(long) X(long long) \
  X(ptrdiff_t) REDUCE_BITWISE_TYPES(X) X(float) X(double)     \
  X(long double)
/* clang-format on */

#define RETURNS(expr, TYPE) static_assert(std::is_same<decltype(expr), TYPE>::value, #expr)

#define CHECK_RMA(TYPE)                                         \
  {                                                             \
    TYPE d[8] = {};                                             \
    const TYPE s[8] = {};                                       \
    shmem_put(d, s, 8, pe);                                     \
    shmem_get(d, s, 8, pe);                                     \
    shmem_put_nbi(d, s, 8, pe);                                 \
    shmem_get_nbi(d, s, 8, pe);                                 \
    shmem_p(d, s[0], pe);                                       \
    d[1] = shmem_g(d, pe);                                      \
    d[2] = shmem_g(s, pe);                                      \
    RETURNS(shmem_g(s, pe), TYPE);                              \
    shmem_iput(d, s, 2, 1, 4, pe);                              \
    shmem_iget(d, s, 1, 2, 4, pe);                              \
    errors += shmem_broadcast(SHMEM_TEAM_WORLD, d, s, 8, 0);    \
    errors += shmem_collect(SHMEM_TEAM_WORLD, d, s, 1);         \
    errors += shmem_fcollect(SHMEM_TEAM_WORLD, d, s, 1);        \
    errors += shmem_alltoall(SHMEM_TEAM_WORLD, d, s, 1);        \
    errors += shmem_alltoalls(SHMEM_TEAM_WORLD, d, s, 1, 1, 1); \
  }

#define CHECK_EXTENDED_AMO(TYPE)                 \
  {                                              \
    TYPE d = 0;                                  \
    TYPE f = 0;                                  \
    const TYPE* c = &d;                          \
    f = shmem_atomic_fetch(&d, pe);              \
    f = shmem_atomic_fetch(c, pe);               \
    RETURNS(shmem_atomic_fetch(c, pe), TYPE);    \
    shmem_atomic_set(&d, f, pe);                 \
    f = shmem_atomic_swap(&d, f, pe);            \
    RETURNS(shmem_atomic_swap(&d, f, pe), TYPE); \
    shmem_atomic_fetch_nbi(&f, c, pe);           \
    shmem_atomic_swap_nbi(&f, &d, f, pe);        \
  }

#define CHECK_AMO(TYPE)                                                        \
  {                                                                            \
    TYPE d = 0;                                                                \
    TYPE f = 0;                                                                \
    f = shmem_atomic_compare_swap(&d, f, static_cast<TYPE>(1), pe);            \
    RETURNS(shmem_atomic_compare_swap(&d, f, static_cast<TYPE>(1), pe), TYPE); \
    f = shmem_atomic_fetch_add(&d, f, pe);                                     \
    RETURNS(shmem_atomic_fetch_add(&d, f, pe), TYPE);                          \
    shmem_atomic_add(&d, f, pe);                                               \
    f = shmem_atomic_fetch_inc(&d, pe);                                        \
    RETURNS(shmem_atomic_fetch_inc(&d, pe), TYPE);                             \
    shmem_atomic_inc(&d, pe);                                                  \
    shmem_atomic_compare_swap_nbi(&f, &d, f, static_cast<TYPE>(1), pe);        \
    shmem_atomic_fetch_add_nbi(&f, &d, f, pe);                                 \
    shmem_atomic_fetch_inc_nbi(&f, &d, pe);                                    \
  }

#define CHECK_BITWISE_AMO(TYPE)                       \
  {                                                   \
    TYPE d = 0;                                       \
    TYPE f = 1;                                       \
    f = shmem_atomic_fetch_and(&d, f, pe);            \
    RETURNS(shmem_atomic_fetch_and(&d, f, pe), TYPE); \
    f = shmem_atomic_fetch_or(&d, f, pe);             \
    f = shmem_atomic_fetch_xor(&d, f, pe);            \
    shmem_atomic_and(&d, f, pe);                      \
    shmem_atomic_or(&d, f, pe);                       \
    shmem_atomic_xor(&d, f, pe);                      \
    shmem_atomic_fetch_and_nbi(&f, &d, f, pe);        \
    shmem_atomic_fetch_or_nbi(&f, &d, f, pe);         \
    shmem_atomic_fetch_xor_nbi(&f, &d, f, pe);        \
  }

#define CHECK_SYNC(TYPE)                                              \
  {                                                                   \
    TYPE v = 0;                                                       \
    shmem_wait_until(&v, SHMEM_CMP_EQ, static_cast<TYPE>(0));         \
    errors += shmem_test(&v, SHMEM_CMP_NE, static_cast<TYPE>(1));     \
    RETURNS(shmem_test(&v, SHMEM_CMP_NE, static_cast<TYPE>(1)), int); \
  }

#define CHECK_REDUCE(TYPE, OP)                                    \
  {                                                               \
    TYPE d[4] = {};                                               \
    const TYPE s[4] = {};                                         \
    errors += shmem_##OP##_reduce(SHMEM_TEAM_WORLD, d, s, 4);     \
    RETURNS(shmem_##OP##_reduce(SHMEM_TEAM_WORLD, d, s, 4), int); \
  }
#define CHECK_BITWISE_REDUCE(TYPE) \
  CHECK_REDUCE(TYPE, and) CHECK_REDUCE(TYPE, or) CHECK_REDUCE(TYPE, xor)
#define CHECK_ARITH_REDUCE(TYPE) \
  CHECK_REDUCE(TYPE, max)        \
  CHECK_REDUCE(TYPE, min) CHECK_REDUCE(TYPE, sum) CHECK_REDUCE(TYPE, prod)

#define CHECK_DEPRECATED_AMO(TYPE)                               \
  {                                                              \
    TYPE d = 0;                                                  \
    TYPE f = 0;                                                  \
    f = shmem_fadd(&d, f, pe);                                   \
    f = shmem_finc(&d, pe);                                      \
    shmem_add(&d, f, pe);                                        \
    shmem_inc(&d, pe);                                           \
    f = shmem_cswap(&d, f, static_cast<TYPE>(1), pe);            \
    RETURNS(shmem_cswap(&d, f, static_cast<TYPE>(1), pe), TYPE); \
  }
#define CHECK_DEPRECATED_EXTENDED_AMO(TYPE) \
  {                                         \
    TYPE d = 0;                             \
    TYPE f = 0;                             \
    f = shmem_swap(&d, f, pe);              \
    f = shmem_fetch(&d, pe);                \
    RETURNS(shmem_fetch(&d, pe), TYPE);     \
    shmem_set(&d, f, pe);                   \
  }

int ethx_shmem_header_cxx17_check(int pe);
int ethx_shmem_header_cxx17_check(int pe) {
  int errors = 0;
  RMA_TYPES(CHECK_RMA)
  EXTENDED_AMO_TYPES(CHECK_EXTENDED_AMO)
  AMO_TYPES(CHECK_AMO)
  BITWISE_AMO_TYPES(CHECK_BITWISE_AMO)
  SYNC_TYPES(CHECK_SYNC)
  REDUCE_BITWISE_TYPES(CHECK_BITWISE_REDUCE)
  REDUCE_ARITH_TYPES(CHECK_ARITH_REDUCE)
  CHECK_DEPRECATED_AMO(int)
  CHECK_DEPRECATED_AMO(long)
  CHECK_DEPRECATED_AMO(long long)
  CHECK_DEPRECATED_EXTENDED_AMO(int)
  CHECK_DEPRECATED_EXTENDED_AMO(long)
  CHECK_DEPRECATED_EXTENDED_AMO(long long)
  CHECK_DEPRECATED_EXTENDED_AMO(float)
  CHECK_DEPRECATED_EXTENDED_AMO(double) {
    long psync[SHMEM_BARRIER_SYNC_SIZE] = {SHMEM_SYNC_VALUE};
    long flag = 0;
    errors += shmem_sync(SHMEM_TEAM_WORLD);
    RETURNS(shmem_sync(SHMEM_TEAM_WORLD), int);
    shmem_sync(0, 0, 1, psync);  // the deprecated active-set C function
    shmem_wait_until(&flag, SHMEM_CMP_GE, 0L);
    errors += shmem_test(&flag, SHMEM_CMP_GE, 0L);
  }
  return errors;
}
