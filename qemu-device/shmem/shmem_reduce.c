/*
 * Reductions: shmem_<T>_{and,or,xor,max,min,sum,prod}_reduce on teams and the deprecated
 * shmem_<T>_<op>_to_all on active sets (pWrk and pSync accepted, not used).
 *
 * Every PE puts its contribution into its slot of every PE's symmetric scratch, then each PE
 * reduces the slots locally in the set's PE order: every PE computes the same expression on
 * the same values, so the results are identical everywhere and floating sums deterministic
 * (((c0 + c1) + c2) + ...). Arrays larger than the scratch go in chunks, each one sync (the
 * previous reader is done with the scratch), the puts, and one barrier.
 */
#include <string.h>

#include "shmem_api.h"

/* The X-macros below take types and pieces of names, which cannot be parenthesised. */
/* NOLINTBEGIN(bugprone-macro-parentheses) */

static size_t ethx_reduce_chunk_elems(const ethx_shmem_set* set, size_t elem_bytes,
                                      const char* fn) {
  size_t chunk = ethx_shmem_scratch_bytes() / ((size_t)set->size * elem_bytes);
  if (chunk == 0) {
    ethx_shmem_fatal(
        "%s: the collective scratch (%zu bytes) cannot hold one %zu-byte element "
        "from each of %d PEs",
        fn, ethx_shmem_scratch_bytes(), elem_bytes, set->size);
  }
  return chunk;
}

static void ethx_reduce_chunk(const ethx_shmem_set* set, char* dest, const char* source,
                              size_t count, size_t elem_bytes, ethx_api_combine_fn combine) {
  char* scratch = ethx_shmem_scratch();
  size_t slot_bytes = count * elem_bytes;
  int me = ethx_shmem_set_index(set);
  ethx_shmem_barrier_set(set, 0);
  for (int step = 0; step < set->size; ++step) {
    ethx_shmem_put_bytes(scratch + (size_t)me * slot_bytes, source, slot_bytes,
                         ethx_shmem_set_pe(set, (me + step) % set->size));
  }
  ethx_shmem_barrier_set(set, 1);
  /* dest may be source: this PE's contribution is already in the scratch. */
  memcpy(dest, scratch, slot_bytes);
  for (int index = 1; index < set->size; ++index) {
    combine(dest, scratch + (size_t)index * slot_bytes, count);
  }
}

void ethx_api_reduce(const ethx_shmem_set* set, void* dest, const void* source, size_t nelems,
                     size_t elem_bytes, ethx_api_combine_fn combine, const char* fn) {
  (void)ethx_api_bytes(nelems, elem_bytes, fn);
  size_t chunk = ethx_reduce_chunk_elems(set, elem_bytes, fn);
  for (size_t done = 0; done < nelems; done += chunk) {
    size_t count = nelems - done < chunk ? nelems - done : chunk;
    ethx_reduce_chunk(set, (char*)dest + done * elem_bytes, (const char*)source + done * elem_bytes,
                      count, elem_bytes, combine);
  }
}

/* ---- the operations on two elements ----
 * Integer sums and products wrap, as two's complement hardware does: computed in unsigned
 * long long (where overflow is defined, unlike signed overflow in C) and truncated to the
 * type. Floating and complex ones are the type's own arithmetic. */
#define ETHX_IS_FLOATING(TYPE)                                                  \
  _Generic((TYPE)0, float : 1, double : 1, long double : 1, float _Complex : 1, \
           double _Complex : 1, long double _Complex : 1, default : 0)
#define ETHX_OP_and(TYPE, a, b) (TYPE)((a) & (b))
#define ETHX_OP_or(TYPE, a, b) (TYPE)((a) | (b))
#define ETHX_OP_xor(TYPE, a, b) (TYPE)((a) ^ (b))
#define ETHX_OP_max(TYPE, a, b) (TYPE)((a) > (b) ? (a) : (b))
#define ETHX_OP_min(TYPE, a, b) (TYPE)((a) < (b) ? (a) : (b))
#define ETHX_OP_sum(TYPE, a, b)               \
  (ETHX_IS_FLOATING(TYPE) ? (TYPE)((a) + (b)) \
                          : (TYPE)((unsigned long long)(a) + (unsigned long long)(b)))
#define ETHX_OP_prod(TYPE, a, b)              \
  (ETHX_IS_FLOATING(TYPE) ? (TYPE)((a) * (b)) \
                          : (TYPE)((unsigned long long)(a) * (unsigned long long)(b)))

/* ethx_combine_<T><OP>, OP one of _and, _or, _xor, _max, _min, _sum, _prod. */
#define ETHX_DEFINE_COMBINE(NAME, TYPE, OP)                                                  \
  static void ethx_combine_##NAME##OP(void* acc_bytes, const void* in_bytes, size_t count) { \
    TYPE* acc = acc_bytes;                                                                   \
    const TYPE* in = in_bytes;                                                               \
    for (size_t i = 0; i < count; ++i) {                                                     \
      acc[i] = ETHX_OP##OP(TYPE, acc[i], in[i]);                                             \
    }                                                                                        \
  }
/* The team tables cover the active-set ones but for the bitwise operations on short, int,
 * long and long long (the teams have int16_t ... int64_t instead). */
ETHX_SHMEM_REDUCE_BITWISE_TYPES(ETHX_DEFINE_COMBINE, _and)
ETHX_SHMEM_REDUCE_BITWISE_TYPES(ETHX_DEFINE_COMBINE, _or)
ETHX_SHMEM_REDUCE_BITWISE_TYPES(ETHX_DEFINE_COMBINE, _xor)
ETHX_SHMEM_TO_ALL_BITWISE_TYPES(ETHX_DEFINE_COMBINE, _and)
ETHX_SHMEM_TO_ALL_BITWISE_TYPES(ETHX_DEFINE_COMBINE, _or)
ETHX_SHMEM_TO_ALL_BITWISE_TYPES(ETHX_DEFINE_COMBINE, _xor)
ETHX_SHMEM_REDUCE_MINMAX_TYPES(ETHX_DEFINE_COMBINE, _max)
ETHX_SHMEM_REDUCE_MINMAX_TYPES(ETHX_DEFINE_COMBINE, _min)
ETHX_SHMEM_REDUCE_ARITH_TYPES(ETHX_DEFINE_COMBINE, _sum)
ETHX_SHMEM_REDUCE_ARITH_TYPES(ETHX_DEFINE_COMBINE, _prod)

/* ---- team-based ---- */
#define ETHX_DEFINE_REDUCE(NAME, TYPE, OP)                                                         \
  int shmem_##NAME##OP##_reduce(shmem_team_t team, TYPE* dest, const TYPE* source,                 \
                                size_t nreduce) {                                                  \
    ethx_shmem_require_init(__func__);                                                             \
    ethx_shmem_set set = ethx_api_team_set(team, __func__);                                        \
    ethx_api_reduce(&set, dest, source, nreduce, sizeof(TYPE), ethx_combine_##NAME##OP, __func__); \
    return 0;                                                                                      \
  }
ETHX_SHMEM_REDUCE_BITWISE_TYPES(ETHX_DEFINE_REDUCE, _and)
ETHX_SHMEM_REDUCE_BITWISE_TYPES(ETHX_DEFINE_REDUCE, _or)
ETHX_SHMEM_REDUCE_BITWISE_TYPES(ETHX_DEFINE_REDUCE, _xor)
ETHX_SHMEM_REDUCE_MINMAX_TYPES(ETHX_DEFINE_REDUCE, _max)
ETHX_SHMEM_REDUCE_MINMAX_TYPES(ETHX_DEFINE_REDUCE, _min)
ETHX_SHMEM_REDUCE_ARITH_TYPES(ETHX_DEFINE_REDUCE, _sum)
ETHX_SHMEM_REDUCE_ARITH_TYPES(ETHX_DEFINE_REDUCE, _prod)

/* ---- deprecated, active set ---- */
#define ETHX_DEFINE_TO_ALL(NAME, TYPE, OP)                                                  \
  void shmem_##NAME##OP##_to_all(TYPE* dest, const TYPE* source, int nreduce, int PE_start, \
                                 int logPE_stride, int PE_size, TYPE* pWrk, long* pSync) {  \
    ethx_shmem_require_init(__func__);                                                      \
    (void)pWrk;                                                                             \
    (void)pSync;                                                                            \
    ethx_shmem_set set = ethx_api_active_set(PE_start, logPE_stride, PE_size, __func__);    \
    ethx_api_reduce(&set, dest, source, ethx_api_count(nreduce, "nreduce", __func__),       \
                    sizeof(TYPE), ethx_combine_##NAME##OP, __func__);                       \
  }
ETHX_SHMEM_TO_ALL_BITWISE_TYPES(ETHX_DEFINE_TO_ALL, _and)
ETHX_SHMEM_TO_ALL_BITWISE_TYPES(ETHX_DEFINE_TO_ALL, _or)
ETHX_SHMEM_TO_ALL_BITWISE_TYPES(ETHX_DEFINE_TO_ALL, _xor)
ETHX_SHMEM_TO_ALL_MINMAX_TYPES(ETHX_DEFINE_TO_ALL, _max)
ETHX_SHMEM_TO_ALL_MINMAX_TYPES(ETHX_DEFINE_TO_ALL, _min)
ETHX_SHMEM_TO_ALL_ARITH_TYPES(ETHX_DEFINE_TO_ALL, _sum)
ETHX_SHMEM_TO_ALL_ARITH_TYPES(ETHX_DEFINE_TO_ALL, _prod)

/* NOLINTEND(bugprone-macro-parentheses) */
