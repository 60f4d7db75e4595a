/*
 * Atomics: shmem_<T>_atomic_* (1.5 names) for the standard, extended and bitwise AMO types,
 * their _nbi forms, and the deprecated shmem_<T>_fadd/finc/add/inc/cswap/swap/fetch/set. All
 * are ethx_shmem_amo of width sizeof(T): the device's 4- and 8-byte atomics (a type of any
 * other size does not compile). Each operation is defined once, below, by the name it gets.
 *
 * The _nbi forms complete before they return (*fetch holds the old value): the spec allows it.
 */
#include "shmem_api.h"

/* The X-macros below take types and pieces of names, which cannot be parenthesised. */
/* NOLINTBEGIN(bugprone-macro-parentheses) */

uint64_t ethx_api_amo(enum ethx_shmem_amo_op op, const void* dest, size_t bytes, uint64_t operand,
                      uint64_t compare, int pe, const char* fn) {
  ethx_shmem_check_pe(pe, fn);
  if ((uintptr_t)dest % bytes != 0) {
    ethx_shmem_fatal("%s: dest %p is not aligned to its %zu bytes (atomics need it)", fn, dest,
                     bytes);
  }
  /* The core takes void *: ETHX_AMO_FETCH (the only op with a const dest here) does not
   * write it. */
  return ethx_shmem_amo(op, (void*)dest, (unsigned)bytes, operand, compare, pe);
}

/* ethx_amo_<T>: one atomic on a T, operands and old value as T's bytes. */
#define ETHX_DEFINE_AMO_CALL(NAME, TYPE, A)                                              \
  static TYPE ethx_amo_##NAME(enum ethx_shmem_amo_op op, const TYPE* dest, TYPE operand, \
                              TYPE compare, int pe, const char* fn) {                    \
    _Static_assert(sizeof(TYPE) == 4 || sizeof(TYPE) == 8,                               \
                   "the device's atomics are 4 or 8 bytes wide");                        \
    uint64_t old =                                                                       \
        ethx_api_amo(op, dest, sizeof(TYPE), ethx_api_load_bits(&operand, sizeof(TYPE)), \
                     ethx_api_load_bits(&compare, sizeof(TYPE)), pe, fn);                \
    TYPE result;                                                                         \
    ethx_api_store_bits(&result, old, sizeof(TYPE));                                     \
    return result;                                                                       \
  }
ETHX_SHMEM_AMO_TYPES(ETHX_DEFINE_AMO_CALL, _)
ETHX_SHMEM_AMO_EXTENDED_ONLY_TYPES(ETHX_DEFINE_AMO_CALL, _)

/* ---- the operations, each as function FN on type TYPE (typename NAME) ---- */
#define ETHX_AMO_FETCHING(FN, NAME, TYPE, OP)                 \
  TYPE FN(TYPE* dest, TYPE value, int pe) {                   \
    ethx_shmem_require_init(__func__);                        \
    return ethx_amo_##NAME(OP, dest, value, 0, pe, __func__); \
  }
#define ETHX_AMO_NON_FETCHING(FN, NAME, TYPE, OP)            \
  void FN(TYPE* dest, TYPE value, int pe) {                  \
    ethx_shmem_require_init(__func__);                       \
    (void)ethx_amo_##NAME(OP, dest, value, 0, pe, __func__); \
  }
#define ETHX_AMO_FETCHING_NBI(FN, NAME, TYPE, OP)               \
  void FN(TYPE* fetch, TYPE* dest, TYPE value, int pe) {        \
    ethx_shmem_require_init(__func__);                          \
    *fetch = ethx_amo_##NAME(OP, dest, value, 0, pe, __func__); \
  }
#define ETHX_AMO_FETCH_INC(FN, NAME, TYPE)                                \
  TYPE FN(TYPE* dest, int pe) {                                           \
    ethx_shmem_require_init(__func__);                                    \
    return ethx_amo_##NAME(ETHX_AMO_FETCH_ADD, dest, 1, 0, pe, __func__); \
  }
#define ETHX_AMO_INC(FN, NAME, TYPE)                                     \
  void FN(TYPE* dest, int pe) {                                          \
    ethx_shmem_require_init(__func__);                                   \
    (void)ethx_amo_##NAME(ETHX_AMO_FETCH_ADD, dest, 1, 0, pe, __func__); \
  }
#define ETHX_AMO_FETCH_INC_NBI(FN, NAME, TYPE)                              \
  void FN(TYPE* fetch, TYPE* dest, int pe) {                                \
    ethx_shmem_require_init(__func__);                                      \
    *fetch = ethx_amo_##NAME(ETHX_AMO_FETCH_ADD, dest, 1, 0, pe, __func__); \
  }
#define ETHX_AMO_COMPARE_SWAP(FN, NAME, TYPE)                                \
  TYPE FN(TYPE* dest, TYPE cond, TYPE value, int pe) {                       \
    ethx_shmem_require_init(__func__);                                       \
    return ethx_amo_##NAME(ETHX_AMO_CSWAP, dest, value, cond, pe, __func__); \
  }
#define ETHX_AMO_COMPARE_SWAP_NBI(FN, NAME, TYPE)                              \
  void FN(TYPE* fetch, TYPE* dest, TYPE cond, TYPE value, int pe) {            \
    ethx_shmem_require_init(__func__);                                         \
    *fetch = ethx_amo_##NAME(ETHX_AMO_CSWAP, dest, value, cond, pe, __func__); \
  }
#define ETHX_AMO_FETCH(FN, NAME, TYPE)                                  \
  TYPE FN(const TYPE* source, int pe) {                                 \
    ethx_shmem_require_init(__func__);                                  \
    return ethx_amo_##NAME(ETHX_AMO_FETCH, source, 0, 0, pe, __func__); \
  }
#define ETHX_AMO_FETCH_NBI(FN, NAME, TYPE)                                \
  void FN(TYPE* fetch, const TYPE* source, int pe) {                      \
    ethx_shmem_require_init(__func__);                                    \
    *fetch = ethx_amo_##NAME(ETHX_AMO_FETCH, source, 0, 0, pe, __func__); \
  }

/* ---- 1.5 names ---- */
#define ETHX_DEFINE_AMO(NAME, TYPE, A)                                                       \
  ETHX_AMO_COMPARE_SWAP(shmem_##NAME##_atomic_compare_swap, NAME, TYPE)                      \
  ETHX_AMO_FETCHING(shmem_##NAME##_atomic_fetch_add, NAME, TYPE, ETHX_AMO_FETCH_ADD)         \
  ETHX_AMO_NON_FETCHING(shmem_##NAME##_atomic_add, NAME, TYPE, ETHX_AMO_FETCH_ADD)           \
  ETHX_AMO_FETCH_INC(shmem_##NAME##_atomic_fetch_inc, NAME, TYPE)                            \
  ETHX_AMO_INC(shmem_##NAME##_atomic_inc, NAME, TYPE)                                        \
  ETHX_AMO_COMPARE_SWAP_NBI(shmem_##NAME##_atomic_compare_swap_nbi, NAME, TYPE)              \
  ETHX_AMO_FETCHING_NBI(shmem_##NAME##_atomic_fetch_add_nbi, NAME, TYPE, ETHX_AMO_FETCH_ADD) \
  ETHX_AMO_FETCH_INC_NBI(shmem_##NAME##_atomic_fetch_inc_nbi, NAME, TYPE)
#define ETHX_DEFINE_AMO_EXTENDED(NAME, TYPE, A)                              \
  ETHX_AMO_FETCH(shmem_##NAME##_atomic_fetch, NAME, TYPE)                    \
  ETHX_AMO_NON_FETCHING(shmem_##NAME##_atomic_set, NAME, TYPE, ETHX_AMO_SET) \
  ETHX_AMO_FETCHING(shmem_##NAME##_atomic_swap, NAME, TYPE, ETHX_AMO_SWAP)   \
  ETHX_AMO_FETCH_NBI(shmem_##NAME##_atomic_fetch_nbi, NAME, TYPE)            \
  ETHX_AMO_FETCHING_NBI(shmem_##NAME##_atomic_swap_nbi, NAME, TYPE, ETHX_AMO_SWAP)
#define ETHX_DEFINE_AMO_BITWISE(NAME, TYPE, A)                                               \
  ETHX_AMO_FETCHING(shmem_##NAME##_atomic_fetch_and, NAME, TYPE, ETHX_AMO_FETCH_AND)         \
  ETHX_AMO_NON_FETCHING(shmem_##NAME##_atomic_and, NAME, TYPE, ETHX_AMO_FETCH_AND)           \
  ETHX_AMO_FETCHING(shmem_##NAME##_atomic_fetch_or, NAME, TYPE, ETHX_AMO_FETCH_OR)           \
  ETHX_AMO_NON_FETCHING(shmem_##NAME##_atomic_or, NAME, TYPE, ETHX_AMO_FETCH_OR)             \
  ETHX_AMO_FETCHING(shmem_##NAME##_atomic_fetch_xor, NAME, TYPE, ETHX_AMO_FETCH_XOR)         \
  ETHX_AMO_NON_FETCHING(shmem_##NAME##_atomic_xor, NAME, TYPE, ETHX_AMO_FETCH_XOR)           \
  ETHX_AMO_FETCHING_NBI(shmem_##NAME##_atomic_fetch_and_nbi, NAME, TYPE, ETHX_AMO_FETCH_AND) \
  ETHX_AMO_FETCHING_NBI(shmem_##NAME##_atomic_fetch_or_nbi, NAME, TYPE, ETHX_AMO_FETCH_OR)   \
  ETHX_AMO_FETCHING_NBI(shmem_##NAME##_atomic_fetch_xor_nbi, NAME, TYPE, ETHX_AMO_FETCH_XOR)

ETHX_SHMEM_AMO_TYPES(ETHX_DEFINE_AMO, _)
ETHX_SHMEM_AMO_TYPES(ETHX_DEFINE_AMO_EXTENDED, _)
ETHX_SHMEM_AMO_EXTENDED_ONLY_TYPES(ETHX_DEFINE_AMO_EXTENDED, _)
ETHX_SHMEM_AMO_BITWISE_TYPES(ETHX_DEFINE_AMO_BITWISE, _)

/* ---- deprecated names (1.4), the same operations ---- */
#define ETHX_DEFINE_AMO_DEPRECATED(NAME, TYPE, A)                           \
  ETHX_AMO_FETCHING(shmem_##NAME##_fadd, NAME, TYPE, ETHX_AMO_FETCH_ADD)    \
  ETHX_AMO_FETCH_INC(shmem_##NAME##_finc, NAME, TYPE)                       \
  ETHX_AMO_NON_FETCHING(shmem_##NAME##_add, NAME, TYPE, ETHX_AMO_FETCH_ADD) \
  ETHX_AMO_INC(shmem_##NAME##_inc, NAME, TYPE)                              \
  ETHX_AMO_COMPARE_SWAP(shmem_##NAME##_cswap, NAME, TYPE)
#define ETHX_DEFINE_AMO_DEPRECATED_EXTENDED(NAME, TYPE, A)          \
  ETHX_AMO_FETCHING(shmem_##NAME##_swap, NAME, TYPE, ETHX_AMO_SWAP) \
  ETHX_AMO_FETCH(shmem_##NAME##_fetch, NAME, TYPE)                  \
  ETHX_AMO_NON_FETCHING(shmem_##NAME##_set, NAME, TYPE, ETHX_AMO_SET)

ETHX_SHMEM_AMO_DEPRECATED_TYPES(ETHX_DEFINE_AMO_DEPRECATED, _)
ETHX_SHMEM_AMO_DEPRECATED_EXTENDED_TYPES(ETHX_DEFINE_AMO_DEPRECATED_EXTENDED, _)

/* NOLINTEND(bugprone-macro-parentheses) */
