/*
 * Only for checking the tests themselves against an OpenSHMEM 1.4 library (Open MPI's, see
 * README.md): the 1.5 team collectives the tests call, written naively with putmem and
 * barrier_all. Against a 1.5 library (ours) this header is empty and the library's own
 * collectives are what the tests check.
 */
#ifndef ETHX_SHMEM_COMPAT14_H
#define ETHX_SHMEM_COMPAT14_H

#if defined(SHMEM_MAJOR_VERSION) && SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION < 5

#define ST_COMPAT14 1

typedef int shmem_team_t;
#define SHMEM_TEAM_WORLD ((shmem_team_t)0)

static inline int shmem_broadcastmem(shmem_team_t team, void* dest, const void* source,
                                     size_t nelems, int root) {
  (void)team;
  shmem_barrier_all();
  if (shmem_my_pe() == root) {
    for (int pe = 0; pe < shmem_n_pes(); ++pe) shmem_putmem(dest, source, nelems, pe);
  }
  shmem_barrier_all();
  return 0;
}

static inline int shmem_fcollectmem(shmem_team_t team, void* dest, const void* source,
                                    size_t nelems) {
  (void)team;
  shmem_barrier_all();
  char* at = (char*)dest + (size_t)shmem_my_pe() * nelems;
  for (int pe = 0; pe < shmem_n_pes(); ++pe) shmem_putmem(at, source, nelems, pe);
  shmem_barrier_all();
  return 0;
}

static inline int shmem_collectmem(shmem_team_t team, void* dest, const void* source,
                                   size_t nelems) {
  (void)team;
  int npes = shmem_n_pes();
  int me = shmem_my_pe();
  size_t* sizes = (size_t*)shmem_malloc((size_t)npes * sizeof(size_t));
  for (int pe = 0; pe < npes; ++pe) shmem_putmem(&sizes[me], &nelems, sizeof nelems, pe);
  shmem_barrier_all();
  size_t offset = 0;
  for (int pe = 0; pe < me; ++pe) offset += sizes[pe];
  for (int pe = 0; pe < npes; ++pe) shmem_putmem((char*)dest + offset, source, nelems, pe);
  shmem_barrier_all();
  shmem_free(sizes);
  return 0;
}

static inline int shmem_alltoallmem(shmem_team_t team, void* dest, const void* source,
                                    size_t nelems) {
  (void)team;
  int me = shmem_my_pe();
  shmem_barrier_all();
  for (int pe = 0; pe < shmem_n_pes(); ++pe) {
    shmem_putmem((char*)dest + (size_t)me * nelems, (const char*)source + (size_t)pe * nelems,
                 nelems, pe);
  }
  shmem_barrier_all();
  return 0;
}

/* Every PE gathers all sources, then combines them in PE order. */
#define ST14_REDUCE(T, TYPENAME, OPNAME, COMBINE)                                           \
  static inline int shmem_##TYPENAME##_##OPNAME##_reduce(shmem_team_t team, T* dest,        \
                                                         const T* source, size_t nreduce) { \
    (void)team;                                                                             \
    int npes = shmem_n_pes();                                                               \
    T* all = (T*)shmem_malloc((size_t)npes * nreduce * sizeof(T));                          \
    shmem_fcollectmem(SHMEM_TEAM_WORLD, all, source, nreduce * sizeof(T));                  \
    for (size_t i = 0; i < nreduce; ++i) {                                                  \
      T acc = all[i];                                                                       \
      for (int pe = 1; pe < npes; ++pe) {                                                   \
        T x = all[(size_t)pe * nreduce + i];                                                \
        acc = (T)(COMBINE);                                                                 \
      }                                                                                     \
      dest[i] = acc;                                                                        \
    }                                                                                       \
    shmem_free(all);                                                                        \
    return 0;                                                                               \
  }

#define ST14_ARITH(T, TYPENAME)                    \
  ST14_REDUCE(T, TYPENAME, sum, (acc + x))         \
  ST14_REDUCE(T, TYPENAME, prod, (acc * x))        \
  ST14_REDUCE(T, TYPENAME, max, acc > x ? acc : x) \
  ST14_REDUCE(T, TYPENAME, min, acc < x ? acc : x)
#define ST14_BITWISE(T, TYPENAME)          \
  ST14_REDUCE(T, TYPENAME, and, (acc & x)) \
  ST14_REDUCE(T, TYPENAME, or, (acc | x))  \
  ST14_REDUCE(T, TYPENAME, xor, (acc ^ x))

ST14_ARITH(int, int)
ST14_ARITH(long, long)
ST14_ARITH(double, double)
ST14_ARITH(unsigned int, uint)
ST14_ARITH(unsigned long, ulong)
ST14_BITWISE(unsigned int, uint)
ST14_BITWISE(unsigned long, ulong)
ST14_BITWISE(uint64_t, uint64)

/* Open MPI 4.1 declares the fixed-width types only for the bitwise atomics; 1.4 has them
 * for all. On x86-64 Linux they are the same types as these. */
#if defined(OSHMEM_MAJOR_VERSION)
#define shmem_int32_atomic_fetch_inc shmem_int_atomic_fetch_inc
#define shmem_int64_atomic_compare_swap shmem_long_atomic_compare_swap
#define shmem_int64_atomic_fetch shmem_long_atomic_fetch
#define shmem_uint32_atomic_fetch shmem_uint_atomic_fetch
#define shmem_uint32_atomic_set shmem_uint_atomic_set
#define shmem_uint64_atomic_fetch_inc shmem_ulong_atomic_fetch_inc

/* Open MPI 4.1.4's 32-bit compare-swap overruns its own stack ("stack smashing detected"):
 * a 32-bit compare-swap made of 64-bit ones on the aligned word around it. */
static inline uint32_t st14_cswap32(void* dest, uint32_t cond, uint32_t value, int pe) {
  uintptr_t address = (uintptr_t)dest;
  unsigned long* word = (unsigned long*)(address & ~(uintptr_t)7);
  unsigned shift = (unsigned)(address & 4) * 8; /* little-endian: offset 4 is the high half */
  for (;;) {
    unsigned long old = shmem_ulong_atomic_fetch(word, pe);
    uint32_t half = (uint32_t)(old >> shift);
    if (half != cond) return half;
    unsigned long replaced = (old & ~(0xfffffffful << shift)) | ((unsigned long)value << shift);
    if (shmem_ulong_atomic_compare_swap(word, old, replaced, pe) == old) return cond;
  }
}
/* Its fetching and/or/xor lose updates (a PE's operation on its own memory against the
 * others', and xor does not xor): compare-swap loops on the aligned word around the target. */
enum st14_bitwise { ST14_AND, ST14_OR, ST14_XOR };
static inline uint64_t st14_fetch_bitwise(void* dest, unsigned width, enum st14_bitwise op,
                                          uint64_t operand, int pe) {
  uintptr_t address = (uintptr_t)dest;
  unsigned long* word = (unsigned long*)(address & ~(uintptr_t)7);
  unsigned shift = (unsigned)(address & 7) * 8;
  unsigned long mask = width == 8 ? ~0ul : 0xfffffffful << shift;
  for (;;) {
    unsigned long old = shmem_ulong_atomic_fetch(word, pe);
    uint64_t value = (old & mask) >> shift;
    uint64_t result = op == ST14_AND  ? value & operand
                      : op == ST14_OR ? value | operand
                                      : value ^ operand;
    unsigned long replaced = (old & ~mask) | ((unsigned long)(result << shift) & mask);
    if (shmem_ulong_atomic_compare_swap(word, old, replaced, pe) == old) return value;
  }
}
#define shmem_uint64_atomic_fetch_or(dest, v, pe) \
  st14_fetch_bitwise((dest), 8, ST14_OR, (uint64_t)(v), (pe))
#define shmem_ulong_atomic_fetch_xor(dest, v, pe) \
  (unsigned long)st14_fetch_bitwise((dest), 8, ST14_XOR, (uint64_t)(v), (pe))
#define shmem_uint_atomic_fetch_and(dest, v, pe) \
  (unsigned)st14_fetch_bitwise((dest), 4, ST14_AND, (uint32_t)(v), (pe))
#define shmem_uint32_atomic_or(dest, v, pe) \
  (void)st14_fetch_bitwise((dest), 4, ST14_OR, (uint32_t)(v), (pe))

#define shmem_int_atomic_compare_swap(dest, cond, value, pe) \
  ((int)st14_cswap32((dest), (uint32_t)(cond), (uint32_t)(value), (pe)))
#define shmem_int_cswap(dest, cond, value, pe) \
  ((int)st14_cswap32((dest), (uint32_t)(cond), (uint32_t)(value), (pe)))
#define shmem_uint32_atomic_compare_swap(dest, cond, value, pe) \
  st14_cswap32((dest), (uint32_t)(cond), (uint32_t)(value), (pe))
#endif

#endif /* OpenSHMEM < 1.5 */

#endif /* ETHX_SHMEM_COMPAT14_H */
