/*
 * shmem.h: OpenSHMEM 1.5 on the ethx fabric (vendor "ethx"). PE k is GPU k; the symmetric
 * heap and the program's globals live in the GPUs' memory; a remote access is a load, a store,
 * an atomic command or a copy through the remote window. docs/shmem.md has the API table and
 * how each operation maps onto the fabric.
 *
 * Plain C (C99 and later; the type-generic interfaces need C11) and C++ (the C11 generic
 * names as overloads). Link with -lethx-shmem, or compile with oshcc / oshc++.
 *
 * The typed routines are declared from the spec's type tables below (ETHX_SHMEM_*_TYPES), one
 * declaration per operation: shmem_<TYPENAME>_<op> for every TYPENAME of the operation's table,
 * e.g. shmem_int_put, shmem_ulong_atomic_fetch_xor, shmem_double_sum_reduce.
 *
 * NOT PROVIDED (not declared, so a program using them fails to compile or link; never a
 * silent substitute):
 *   - communication contexts: shmem_ctx_t, SHMEM_CTX_DEFAULT, SHMEM_CTX_INVALID,
 *     SHMEM_CTX_SERIALIZED/PRIVATE/NOSTORE, shmem_ctx_create/destroy/get_team, every
 *     shmem_ctx_* RMA, AMO and ordering routine, shmem_team_create_ctx, the ctx forms of
 *     the generic interfaces;
 *   - teams other than SHMEM_TEAM_WORLD: SHMEM_TEAM_SHARED, shmem_team_split_strided,
 *     shmem_team_split_2d, shmem_team_destroy, shmem_team_get_config, shmem_team_config_t,
 *     SHMEM_TEAM_NUM_CONTEXTS;
 *   - signals: shmem_put_signal, shmem_put_signal_nbi, shmem_signal_fetch,
 *     shmem_signal_wait_until, SHMEM_SIGNAL_SET, SHMEM_SIGNAL_ADD;
 *   - multi-variable waits: shmem_wait_until_all/any/some and their _vector forms,
 *     shmem_test_all/any/some and their _vector forms;
 *   - shmem_malloc_with_hints, SHMEM_MALLOC_ATOMICS_REMOTE, SHMEM_MALLOC_SIGNAL_REMOTE;
 *   - thread level SHMEM_THREAD_SERIALIZED and SHMEM_THREAD_MULTIPLE are defined (the spec's
 *     constants) but shmem_init_thread provides at most SHMEM_THREAD_FUNNELED;
 *   - the C++ overloads of the complex reductions (complexd, complexf are C only);
 *   - removed before 1.5 and not here: shmem_clear_cache_inv, shmem_set_cache_inv,
 *     shmem_clear_cache_line_inv, shmem_set_cache_line_inv, shmem_udcflush(_line), the
 *     Fortran API. (The deprecated <mpp/shmem.h> is still there: it includes this file.)
 */
#ifndef SHMEM_H
#define SHMEM_H

#include <stddef.h>
#include <stdint.h>

/* The X-macros below take types and pieces of names, which cannot be parenthesised. */
/* NOLINTBEGIN(bugprone-macro-parentheses) */

/* ---- library constants (1.5 section 9.2) ---- */
#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define SHMEM_MAX_NAME_LEN 256
#define SHMEM_VENDOR_STRING "ethx"

#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

/* Contiguous, EQ first and GE last, so [SHMEM_CMP_EQ, SHMEM_CMP_GE] is the valid range; 0 is
 * not a comparison (an uninitialised cmp is caught). */
#define SHMEM_CMP_EQ 1
#define SHMEM_CMP_NE 2
#define SHMEM_CMP_GT 3
#define SHMEM_CMP_LE 4
#define SHMEM_CMP_LT 5
#define SHMEM_CMP_GE 6

/* pSync and pWrk arrays (deprecated active-set collectives) are accepted but not used: the
 * library synchronises with its own symmetric flags, keyed by the active set. */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_SYNC_SIZE 4
#define SHMEM_BARRIER_SYNC_SIZE 4
#define SHMEM_BCAST_SYNC_SIZE 4
#define SHMEM_REDUCE_SYNC_SIZE 4
#define SHMEM_COLLECT_SYNC_SIZE 4
#define SHMEM_ALLTOALL_SYNC_SIZE 4
#define SHMEM_ALLTOALLS_SYNC_SIZE 4
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 1

/* Deprecated spellings (since 1.3), still in 1.5: the spec's names, reserved or not. */
/* NOLINTBEGIN(bugprone-reserved-identifier) */
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_LE SHMEM_CMP_LE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE
/* NOLINTEND(bugprone-reserved-identifier) */

/* ---- teams: SHMEM_TEAM_WORLD is the only team ---- */
typedef struct ethx_shmem_team* shmem_team_t;
/* A link-time constant (usable in initialisers), as the spec's handles are. */
#define SHMEM_TEAM_WORLD (&ethx_shmem_team_world)
#define SHMEM_TEAM_INVALID NULL

#if defined(__cplusplus) && __cplusplus >= 201103L
#define ETHX_SHMEM_NORETURN [[noreturn]]
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define ETHX_SHMEM_NORETURN _Noreturn
#elif defined(__GNUC__)
#define ETHX_SHMEM_NORETURN __attribute__((noreturn))
#else
#define ETHX_SHMEM_NORETURN
#endif

/* clang-format off */
/* ---- the spec's type tables, X(TYPENAME, TYPE, A): A is passed through (an operation) ---- */

/* "Standard RMA Types": RMA, broadcast, collect, fcollect, alltoall(s). */
#define ETHX_SHMEM_RMA_TYPES(X, A)    \
  X(float, float, A)                  \
  X(double, double, A)                \
  X(longdouble, long double, A)       \
  X(char, char, A)                    \
  X(schar, signed char, A)            \
  X(short, short, A)                  \
  X(int, int, A)                      \
  X(long, long, A)                    \
  X(longlong, long long, A)           \
  X(uchar, unsigned char, A)          \
  X(ushort, unsigned short, A)        \
  X(uint, unsigned int, A)            \
  X(ulong, unsigned long, A)          \
  X(ulonglong, unsigned long long, A) \
  X(int8, int8_t, A)                  \
  X(int16, int16_t, A)                \
  X(int32, int32_t, A)                \
  X(int64, int64_t, A)                \
  X(uint8, uint8_t, A)                \
  X(uint16, uint16_t, A)              \
  X(uint32, uint32_t, A)              \
  X(uint64, uint64_t, A)              \
  X(size, size_t, A)                  \
  X(ptrdiff, ptrdiff_t, A)

/* "Standard AMO Types": every AMO; in 1.5 also the point-to-point synchronization types. */
#define ETHX_SHMEM_AMO_TYPES(X, A)    \
  X(int, int, A)                      \
  X(long, long, A)                    \
  X(longlong, long long, A)           \
  X(uint, unsigned int, A)            \
  X(ulong, unsigned long, A)          \
  X(ulonglong, unsigned long long, A) \
  X(int32, int32_t, A)                \
  X(int64, int64_t, A)                \
  X(uint32, uint32_t, A)              \
  X(uint64, uint64_t, A)              \
  X(size, size_t, A)                  \
  X(ptrdiff, ptrdiff_t, A)
/* "Extended AMO Types" (fetch, set, swap): the standard ones and these. */
#define ETHX_SHMEM_AMO_EXTENDED_ONLY_TYPES(X, A) X(float, float, A) X(double, double, A)
/* "Bitwise AMO Types". */
#define ETHX_SHMEM_AMO_BITWISE_TYPES(X, A) \
  X(uint, unsigned int, A)                 \
  X(ulong, unsigned long, A)               \
  X(ulonglong, unsigned long long, A)      \
  X(int32, int32_t, A)                     \
  X(int64, int64_t, A)                     \
  X(uint32, uint32_t, A)                   \
  X(uint64, uint64_t, A)
/* Point-to-point synchronization: the standard AMO types and (deprecated) short, ushort. */
#define ETHX_SHMEM_SYNC_TYPES(X, A) \
  ETHX_SHMEM_AMO_TYPES(X, A)        \
  X(short, short, A)                \
  X(ushort, unsigned short, A)

/* "Team-Based Reductions": AND/OR/XOR, MAX/MIN, SUM/PROD. */
#define ETHX_SHMEM_REDUCE_BITWISE_TYPES(X, A) \
  X(uchar, unsigned char, A)                  \
  X(ushort, unsigned short, A)                \
  X(uint, unsigned int, A)                    \
  X(ulong, unsigned long, A)                  \
  X(ulonglong, unsigned long long, A)         \
  X(int8, int8_t, A)                          \
  X(int16, int16_t, A)                        \
  X(int32, int32_t, A)                        \
  X(int64, int64_t, A)                        \
  X(uint8, uint8_t, A)                        \
  X(uint16, uint16_t, A)                      \
  X(uint32, uint32_t, A)                      \
  X(uint64, uint64_t, A)                      \
  X(size, size_t, A)
#define ETHX_SHMEM_REDUCE_MINMAX_TYPES(X, A) \
  X(char, char, A)                           \
  X(schar, signed char, A)                   \
  X(short, short, A)                         \
  X(int, int, A)                             \
  X(long, long, A)                           \
  X(longlong, long long, A)                  \
  X(ptrdiff, ptrdiff_t, A)                   \
  ETHX_SHMEM_REDUCE_BITWISE_TYPES(X, A)      \
  X(float, float, A)                         \
  X(double, double, A)                       \
  X(longdouble, long double, A)
#if !defined(__cplusplus) && !defined(__STDC_NO_COMPLEX__)
#define ETHX_SHMEM_REDUCE_COMPLEX_TYPES(X, A) \
  X(complexd, double _Complex, A)             \
  X(complexf, float _Complex, A)
#else
#define ETHX_SHMEM_REDUCE_COMPLEX_TYPES(X, A)
#endif
#define ETHX_SHMEM_REDUCE_ARITH_TYPES(X, A) \
  ETHX_SHMEM_REDUCE_MINMAX_TYPES(X, A)      \
  ETHX_SHMEM_REDUCE_COMPLEX_TYPES(X, A)

/* "Active-Set-Based Reductions" (deprecated), shmem_<T>_<op>_to_all. */
#define ETHX_SHMEM_TO_ALL_BITWISE_TYPES(X, A) \
  X(short, short, A)                          \
  X(int, int, A)                              \
  X(long, long, A)                            \
  X(longlong, long long, A)
#define ETHX_SHMEM_TO_ALL_MINMAX_TYPES(X, A) \
  ETHX_SHMEM_TO_ALL_BITWISE_TYPES(X, A)      \
  X(float, float, A)                         \
  X(double, double, A)                       \
  X(longdouble, long double, A)
#define ETHX_SHMEM_TO_ALL_ARITH_TYPES(X, A) \
  ETHX_SHMEM_TO_ALL_MINMAX_TYPES(X, A)      \
  ETHX_SHMEM_REDUCE_COMPLEX_TYPES(X, A)

/* Deprecated AMO names: fadd, finc, add, inc, cswap for these; swap, fetch, set also for
 * float and double. Deprecated shmem_<T>_wait: short, int, long, longlong. */
#define ETHX_SHMEM_AMO_DEPRECATED_TYPES(X, A) \
  X(int, int, A)                              \
  X(long, long, A)                            \
  X(longlong, long long, A)
#define ETHX_SHMEM_AMO_DEPRECATED_EXTENDED_TYPES(X, A) \
  ETHX_SHMEM_AMO_DEPRECATED_TYPES(X, A)                \
  X(float, float, A)                                   \
  X(double, double, A)
#define ETHX_SHMEM_WAIT_DEPRECATED_TYPES(X, A) \
  X(short, short, A)                           \
  X(int, int, A)                               \
  X(long, long, A)                             \
  X(longlong, long long, A)

/* Sized RMA: shmem_put<BITS>, ... with elements of BYTES bytes. */
#define ETHX_SHMEM_RMA_SIZES(X, A) \
  X(8, 1, A)                       \
  X(16, 2, A)                      \
  X(32, 4, A)                      \
  X(64, 8, A)                      \
  X(128, 16, A)
/* Sized (deprecated, active-set) collectives: shmem_broadcast32, shmem_collect64, ... */
#define ETHX_SHMEM_COLLECTIVE_SIZES(X, A) X(32, 4, A) X(64, 8, A)

/* clang-format on */

/* ---- declarations generated from the tables ---- */
#define ETHX_SHMEM_DECLARE_RMA(NAME, TYPE, A)                                                    \
  void shmem_##NAME##_put(TYPE* dest, const TYPE* source, size_t nelems, int pe);                \
  void shmem_##NAME##_get(TYPE* dest, const TYPE* source, size_t nelems, int pe);                \
  void shmem_##NAME##_put_nbi(TYPE* dest, const TYPE* source, size_t nelems, int pe);            \
  void shmem_##NAME##_get_nbi(TYPE* dest, const TYPE* source, size_t nelems, int pe);            \
  void shmem_##NAME##_p(TYPE* dest, TYPE value, int pe);                                         \
  TYPE shmem_##NAME##_g(const TYPE* source, int pe);                                             \
  void shmem_##NAME##_iput(TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst,         \
                           size_t nelems, int pe);                                               \
  void shmem_##NAME##_iget(TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst,         \
                           size_t nelems, int pe);                                               \
  int shmem_##NAME##_broadcast(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems, \
                               int PE_root);                                                     \
  int shmem_##NAME##_collect(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems);  \
  int shmem_##NAME##_fcollect(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems); \
  int shmem_##NAME##_alltoall(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems); \
  int shmem_##NAME##_alltoalls(shmem_team_t team, TYPE* dest, const TYPE* source, ptrdiff_t dst, \
                               ptrdiff_t sst, size_t nelems);

#define ETHX_SHMEM_DECLARE_RMA_SIZED(BITS, BYTES, A)                                  \
  void shmem_put##BITS(void* dest, const void* source, size_t nelems, int pe);        \
  void shmem_get##BITS(void* dest, const void* source, size_t nelems, int pe);        \
  void shmem_put##BITS##_nbi(void* dest, const void* source, size_t nelems, int pe);  \
  void shmem_get##BITS##_nbi(void* dest, const void* source, size_t nelems, int pe);  \
  void shmem_iput##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, \
                        size_t nelems, int pe);                                       \
  void shmem_iget##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, \
                        size_t nelems, int pe);

/* Standard AMO types. */
#define ETHX_SHMEM_DECLARE_AMO(NAME, TYPE, A)                                                 \
  TYPE shmem_##NAME##_atomic_compare_swap(TYPE* dest, TYPE cond, TYPE value, int pe);         \
  TYPE shmem_##NAME##_atomic_fetch_add(TYPE* dest, TYPE value, int pe);                       \
  void shmem_##NAME##_atomic_add(TYPE* dest, TYPE value, int pe);                             \
  TYPE shmem_##NAME##_atomic_fetch_inc(TYPE* dest, int pe);                                   \
  void shmem_##NAME##_atomic_inc(TYPE* dest, int pe);                                         \
  void shmem_##NAME##_atomic_compare_swap_nbi(TYPE* fetch, TYPE* dest, TYPE cond, TYPE value, \
                                              int pe);                                        \
  void shmem_##NAME##_atomic_fetch_add_nbi(TYPE* fetch, TYPE* dest, TYPE value, int pe);      \
  void shmem_##NAME##_atomic_fetch_inc_nbi(TYPE* fetch, TYPE* dest, int pe);

/* Extended AMO types (the standard ones and float, double). */
#define ETHX_SHMEM_DECLARE_AMO_EXTENDED(NAME, TYPE, A)                           \
  TYPE shmem_##NAME##_atomic_fetch(const TYPE* source, int pe);                  \
  void shmem_##NAME##_atomic_set(TYPE* dest, TYPE value, int pe);                \
  TYPE shmem_##NAME##_atomic_swap(TYPE* dest, TYPE value, int pe);               \
  void shmem_##NAME##_atomic_fetch_nbi(TYPE* fetch, const TYPE* source, int pe); \
  void shmem_##NAME##_atomic_swap_nbi(TYPE* fetch, TYPE* dest, TYPE value, int pe);

#define ETHX_SHMEM_DECLARE_AMO_BITWISE(NAME, TYPE, A)                                    \
  TYPE shmem_##NAME##_atomic_fetch_and(TYPE* dest, TYPE value, int pe);                  \
  void shmem_##NAME##_atomic_and(TYPE* dest, TYPE value, int pe);                        \
  TYPE shmem_##NAME##_atomic_fetch_or(TYPE* dest, TYPE value, int pe);                   \
  void shmem_##NAME##_atomic_or(TYPE* dest, TYPE value, int pe);                         \
  TYPE shmem_##NAME##_atomic_fetch_xor(TYPE* dest, TYPE value, int pe);                  \
  void shmem_##NAME##_atomic_xor(TYPE* dest, TYPE value, int pe);                        \
  void shmem_##NAME##_atomic_fetch_and_nbi(TYPE* fetch, TYPE* dest, TYPE value, int pe); \
  void shmem_##NAME##_atomic_fetch_or_nbi(TYPE* fetch, TYPE* dest, TYPE value, int pe);  \
  void shmem_##NAME##_atomic_fetch_xor_nbi(TYPE* fetch, TYPE* dest, TYPE value, int pe);

#define ETHX_SHMEM_DECLARE_SYNC(NAME, TYPE, A)                         \
  void shmem_##NAME##_wait_until(TYPE* ivar, int cmp, TYPE cmp_value); \
  int shmem_##NAME##_test(TYPE* ivar, int cmp, TYPE cmp_value);

/* OP is _and, _or, _xor, _max, _min, _sum or _prod (with the underscore: "and", "or" and
 * "xor" are operators in C++ and macros of <iso646.h>). */
#define ETHX_SHMEM_DECLARE_REDUCE(NAME, TYPE, OP) \
  int shmem_##NAME##OP##_reduce(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nreduce);
#define ETHX_SHMEM_DECLARE_TO_ALL(NAME, TYPE, OP)                                           \
  void shmem_##NAME##OP##_to_all(TYPE* dest, const TYPE* source, int nreduce, int PE_start, \
                                 int logPE_stride, int PE_size, TYPE* pWrk, long* pSync);

#define ETHX_SHMEM_DECLARE_AMO_DEPRECATED(NAME, TYPE, A)    \
  TYPE shmem_##NAME##_fadd(TYPE* dest, TYPE value, int pe); \
  TYPE shmem_##NAME##_finc(TYPE* dest, int pe);             \
  void shmem_##NAME##_add(TYPE* dest, TYPE value, int pe);  \
  void shmem_##NAME##_inc(TYPE* dest, int pe);              \
  TYPE shmem_##NAME##_cswap(TYPE* dest, TYPE cond, TYPE value, int pe);
#define ETHX_SHMEM_DECLARE_AMO_DEPRECATED_EXTENDED(NAME, TYPE, A) \
  TYPE shmem_##NAME##_swap(TYPE* dest, TYPE value, int pe);       \
  TYPE shmem_##NAME##_fetch(const TYPE* source, int pe);          \
  void shmem_##NAME##_set(TYPE* dest, TYPE value, int pe);
#define ETHX_SHMEM_DECLARE_WAIT_DEPRECATED(NAME, TYPE, A) \
  void shmem_##NAME##_wait(TYPE* ivar, TYPE cmp_value);

#define ETHX_SHMEM_DECLARE_COLLECTIVE_SIZED(BITS, BYTES, A)                                \
  void shmem_broadcast##BITS(void* dest, const void* source, size_t nelems, int PE_root,   \
                             int PE_start, int logPE_stride, int PE_size, long* pSync);    \
  void shmem_collect##BITS(void* dest, const void* source, size_t nelems, int PE_start,    \
                           int logPE_stride, int PE_size, long* pSync);                    \
  void shmem_fcollect##BITS(void* dest, const void* source, size_t nelems, int PE_start,   \
                            int logPE_stride, int PE_size, long* pSync);                   \
  void shmem_alltoall##BITS(void* dest, const void* source, size_t nelems, int PE_start,   \
                            int logPE_stride, int PE_size, long* pSync);                   \
  void shmem_alltoalls##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, \
                             size_t nelems, int PE_start, int logPE_stride, int PE_size,   \
                             long* pSync);

#ifdef __cplusplus
extern "C" {
#endif

/* Defined by the library; use SHMEM_TEAM_WORLD. */
extern struct ethx_shmem_team ethx_shmem_team_world;

/* ---- setup, query, memory, ordering, barrier_all ---- */
void shmem_init(void);
int shmem_init_thread(int requested, int* provided);
void shmem_query_thread(int* provided);
void shmem_finalize(void);
int shmem_my_pe(void);
int shmem_n_pes(void);
ETHX_SHMEM_NORETURN void shmem_global_exit(int status);
void shmem_info_get_version(int* major, int* minor);
void shmem_info_get_name(char* name);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void* addr, int pe);
void* shmem_malloc(size_t size);
void* shmem_calloc(size_t count, size_t size);
void* shmem_align(size_t alignment, size_t size);
void* shmem_realloc(void* ptr, size_t size);
void shmem_free(void* ptr);
void* shmem_ptr(const void* dest, int pe);
void shmem_quiet(void);
void shmem_fence(void);
void shmem_barrier_all(void);
void shmem_sync_all(void);

/* ---- RMA ---- */
ETHX_SHMEM_RMA_TYPES(ETHX_SHMEM_DECLARE_RMA, _)
ETHX_SHMEM_RMA_SIZES(ETHX_SHMEM_DECLARE_RMA_SIZED, _)
void shmem_putmem(void* dest, const void* source, size_t nelems, int pe);
void shmem_getmem(void* dest, const void* source, size_t nelems, int pe);
void shmem_putmem_nbi(void* dest, const void* source, size_t nelems, int pe);
void shmem_getmem_nbi(void* dest, const void* source, size_t nelems, int pe);

/* ---- AMO ---- */
ETHX_SHMEM_AMO_TYPES(ETHX_SHMEM_DECLARE_AMO, _)
ETHX_SHMEM_AMO_TYPES(ETHX_SHMEM_DECLARE_AMO_EXTENDED, _)
ETHX_SHMEM_AMO_EXTENDED_ONLY_TYPES(ETHX_SHMEM_DECLARE_AMO_EXTENDED, _)
ETHX_SHMEM_AMO_BITWISE_TYPES(ETHX_SHMEM_DECLARE_AMO_BITWISE, _)

/* ---- point-to-point synchronization ---- */
ETHX_SHMEM_SYNC_TYPES(ETHX_SHMEM_DECLARE_SYNC, _)

/* ---- locks: a ticket lock on PE 0's copy of the lock word (first come, first served) ---- */
void shmem_set_lock(long* lock);
void shmem_clear_lock(long* lock);
int shmem_test_lock(long* lock);

/* ---- teams and collectives (return 0 on success) ---- */
int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
int shmem_team_sync(shmem_team_t team);
int shmem_broadcastmem(shmem_team_t team, void* dest, const void* source, size_t nelems,
                       int PE_root);
int shmem_collectmem(shmem_team_t team, void* dest, const void* source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void* dest, const void* source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void* dest, const void* source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void* dest, const void* source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems);
ETHX_SHMEM_REDUCE_BITWISE_TYPES(ETHX_SHMEM_DECLARE_REDUCE, _and)
ETHX_SHMEM_REDUCE_BITWISE_TYPES(ETHX_SHMEM_DECLARE_REDUCE, _or)
ETHX_SHMEM_REDUCE_BITWISE_TYPES(ETHX_SHMEM_DECLARE_REDUCE, _xor)
ETHX_SHMEM_REDUCE_MINMAX_TYPES(ETHX_SHMEM_DECLARE_REDUCE, _max)
ETHX_SHMEM_REDUCE_MINMAX_TYPES(ETHX_SHMEM_DECLARE_REDUCE, _min)
ETHX_SHMEM_REDUCE_ARITH_TYPES(ETHX_SHMEM_DECLARE_REDUCE, _sum)
ETHX_SHMEM_REDUCE_ARITH_TYPES(ETHX_SHMEM_DECLARE_REDUCE, _prod)

/* ---- profiling interface: accepted, no profiling library is attached ---- */
void shmem_pcontrol(int level, ...);

/* ---- deprecated names 1.5 still lists ---- */
void start_pes(int npes);
void* shmalloc(size_t size);
void shfree(void* ptr);
void* shmemalign(size_t alignment, size_t size);
void* shrealloc(void* ptr, size_t size);
int _my_pe(void);   /* NOLINT(bugprone-reserved-identifier): the spec's name */
int _num_pes(void); /* NOLINT(bugprone-reserved-identifier): the spec's name */
ETHX_SHMEM_AMO_DEPRECATED_TYPES(ETHX_SHMEM_DECLARE_AMO_DEPRECATED, _)
ETHX_SHMEM_AMO_DEPRECATED_EXTENDED_TYPES(ETHX_SHMEM_DECLARE_AMO_DEPRECATED_EXTENDED, _)
ETHX_SHMEM_WAIT_DEPRECATED_TYPES(ETHX_SHMEM_DECLARE_WAIT_DEPRECATED, _)
void shmem_wait(long* ivar, long cmp_value);
/* In C11 these two names are also type-generic (below); the functions stay for C99. */
void shmem_wait_until(long* ivar, int cmp, long cmp_value);
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long* pSync);
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long* pSync);
ETHX_SHMEM_COLLECTIVE_SIZES(ETHX_SHMEM_DECLARE_COLLECTIVE_SIZED, _)
ETHX_SHMEM_TO_ALL_BITWISE_TYPES(ETHX_SHMEM_DECLARE_TO_ALL, _and)
ETHX_SHMEM_TO_ALL_BITWISE_TYPES(ETHX_SHMEM_DECLARE_TO_ALL, _or)
ETHX_SHMEM_TO_ALL_BITWISE_TYPES(ETHX_SHMEM_DECLARE_TO_ALL, _xor)
ETHX_SHMEM_TO_ALL_MINMAX_TYPES(ETHX_SHMEM_DECLARE_TO_ALL, _max)
ETHX_SHMEM_TO_ALL_MINMAX_TYPES(ETHX_SHMEM_DECLARE_TO_ALL, _min)
ETHX_SHMEM_TO_ALL_ARITH_TYPES(ETHX_SHMEM_DECLARE_TO_ALL, _sum)
ETHX_SHMEM_TO_ALL_ARITH_TYPES(ETHX_SHMEM_DECLARE_TO_ALL, _prod)

#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---- type-generic interfaces ----
 * The tables of distinct C types behind them: int8_t ... uint64_t, size_t and ptrdiff_t are
 * typedefs of these, so selecting on the basic types covers the exact-width names too (a
 * _Generic may not name one type twice). */
/* clang-format off */
#define ETHX_SHMEM_GENERIC_RMA_TYPES(X, A) \
  X(float, float, A)                       \
  X(double, double, A)                     \
  X(longdouble, long double, A)            \
  X(char, char, A)                         \
  X(schar, signed char, A)                 \
  X(short, short, A)                       \
  X(int, int, A)                           \
  X(long, long, A)                         \
  X(longlong, long long, A)                \
  X(uchar, unsigned char, A)               \
  X(ushort, unsigned short, A)             \
  X(uint, unsigned int, A)                 \
  X(ulong, unsigned long, A)               \
  X(ulonglong, unsigned long long, A)
#define ETHX_SHMEM_GENERIC_AMO_TYPES(X, A) \
  X(int, int, A)                           \
  X(long, long, A)                         \
  X(longlong, long long, A)                \
  X(uint, unsigned int, A)                 \
  X(ulong, unsigned long, A)               \
  X(ulonglong, unsigned long long, A)
#define ETHX_SHMEM_GENERIC_AMO_EXTENDED_TYPES(X, A) \
  ETHX_SHMEM_GENERIC_AMO_TYPES(X, A)                \
  X(float, float, A)                                \
  X(double, double, A)
/* int32_t and int64_t are bitwise AMO types, int and long long as such are not. */
#define ETHX_SHMEM_GENERIC_AMO_BITWISE_TYPES(X, A) \
  X(uint, unsigned int, A)                         \
  X(ulong, unsigned long, A)                       \
  X(ulonglong, unsigned long long, A)              \
  X(int32, int32_t, A)                             \
  X(int64, int64_t, A)
/* long is left out: shmem_wait_until(long *, ...) is also a (deprecated) C function. */
#define ETHX_SHMEM_GENERIC_SYNC_TYPES_BUT_LONG(X, A) \
  X(int, int, A)                                     \
  X(longlong, long long, A)                          \
  X(uint, unsigned int, A)                           \
  X(ulong, unsigned long, A)                         \
  X(ulonglong, unsigned long long, A)                \
  X(short, short, A)                                 \
  X(ushort, unsigned short, A)
#define ETHX_SHMEM_GENERIC_REDUCE_BITWISE_TYPES(X, A) \
  X(uchar, unsigned char, A)                          \
  X(ushort, unsigned short, A)                        \
  X(uint, unsigned int, A)                            \
  X(ulong, unsigned long, A)                          \
  X(ulonglong, unsigned long long, A)                 \
  X(int8, int8_t, A)                                  \
  X(int16, int16_t, A)                                \
  X(int32, int32_t, A)                                \
  X(int64, int64_t, A)
#define ETHX_SHMEM_GENERIC_REDUCE_MINMAX_TYPES(X, A) \
  X(char, char, A)                                   \
  X(schar, signed char, A)                           \
  X(short, short, A)                                 \
  X(int, int, A)                                     \
  X(long, long, A)                                   \
  X(longlong, long long, A)                          \
  X(uchar, unsigned char, A)                         \
  X(ushort, unsigned short, A)                       \
  X(uint, unsigned int, A)                           \
  X(ulong, unsigned long, A)                         \
  X(ulonglong, unsigned long long, A)                \
  X(float, float, A)                                 \
  X(double, double, A)                               \
  X(longdouble, long double, A)
#define ETHX_SHMEM_GENERIC_REDUCE_ARITH_TYPES(X, A) \
  ETHX_SHMEM_GENERIC_REDUCE_MINMAX_TYPES(X, A)      \
  ETHX_SHMEM_REDUCE_COMPLEX_TYPES(X, A)
/* clang-format on */

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)

/* Selected for a type the operation does not take: the call then fails to compile ("too
 * many arguments to function 'ethx_shmem_generic_type_not_supported'"). Never defined. */
void ethx_shmem_generic_type_not_supported(void);

/* &*(p) turns an array argument into a pointer; the selection is on the pointer's type. */
/* clang-format off */
#define ETHX_SHMEM_ASSOC(NAME, TYPE, OP) TYPE*: shmem_##NAME##OP,
#define ETHX_SHMEM_ASSOC_CONST(NAME, TYPE, OP) \
  TYPE*: shmem_##NAME##OP, const TYPE*: shmem_##NAME##OP,
#define ETHX_SHMEM_SELECT(LIST, OP, PTR)            \
  _Generic(&*(PTR), LIST(ETHX_SHMEM_ASSOC, OP)      \
           default: ethx_shmem_generic_type_not_supported)
#define ETHX_SHMEM_SELECT_CONST(LIST, OP, PTR)      \
  _Generic(&*(PTR), LIST(ETHX_SHMEM_ASSOC_CONST, OP) \
           default: ethx_shmem_generic_type_not_supported)
/* clang-format on */

/* RMA */
#define shmem_put(dest, source, nelems, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_RMA_TYPES, _put, dest)(dest, source, nelems, pe)
#define shmem_get(dest, source, nelems, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_RMA_TYPES, _get, dest)(dest, source, nelems, pe)
#define shmem_put_nbi(dest, source, nelems, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_RMA_TYPES, _put_nbi, dest)(dest, source, nelems, pe)
#define shmem_get_nbi(dest, source, nelems, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_RMA_TYPES, _get_nbi, dest)(dest, source, nelems, pe)
#define shmem_p(dest, value, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_RMA_TYPES, _p, dest)(dest, value, pe)
#define shmem_g(source, pe) \
  ETHX_SHMEM_SELECT_CONST(ETHX_SHMEM_GENERIC_RMA_TYPES, _g, source)(source, pe)
#define shmem_iput(dest, source, dst, sst, nelems, pe)         \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_RMA_TYPES, _iput, dest) \
  (dest, source, dst, sst, nelems, pe)
#define shmem_iget(dest, source, dst, sst, nelems, pe)         \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_RMA_TYPES, _iget, dest) \
  (dest, source, dst, sst, nelems, pe)

/* AMO, extended types */
#define shmem_atomic_fetch(source, pe)                                                  \
  ETHX_SHMEM_SELECT_CONST(ETHX_SHMEM_GENERIC_AMO_EXTENDED_TYPES, _atomic_fetch, source) \
  (source, pe)
#define shmem_atomic_set(dest, value, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_EXTENDED_TYPES, _atomic_set, dest)(dest, value, pe)
#define shmem_atomic_swap(dest, value, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_EXTENDED_TYPES, _atomic_swap, dest)(dest, value, pe)
#define shmem_atomic_fetch_nbi(fetch, source, pe)                                    \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_EXTENDED_TYPES, _atomic_fetch_nbi, fetch) \
  (fetch, source, pe)
#define shmem_atomic_swap_nbi(fetch, dest, value, pe)                               \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_EXTENDED_TYPES, _atomic_swap_nbi, fetch) \
  (fetch, dest, value, pe)

/* AMO, standard types */
#define shmem_atomic_compare_swap(dest, cond, value, pe)                      \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_TYPES, _atomic_compare_swap, dest) \
  (dest, cond, value, pe)
#define shmem_atomic_fetch_add(dest, value, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_TYPES, _atomic_fetch_add, dest)(dest, value, pe)
#define shmem_atomic_add(dest, value, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_TYPES, _atomic_add, dest)(dest, value, pe)
#define shmem_atomic_fetch_inc(dest, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_TYPES, _atomic_fetch_inc, dest)(dest, pe)
#define shmem_atomic_inc(dest, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_TYPES, _atomic_inc, dest)(dest, pe)
#define shmem_atomic_compare_swap_nbi(fetch, dest, cond, value, pe)                \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_TYPES, _atomic_compare_swap_nbi, fetch) \
  (fetch, dest, cond, value, pe)
#define shmem_atomic_fetch_add_nbi(fetch, dest, value, pe)                      \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_TYPES, _atomic_fetch_add_nbi, fetch) \
  (fetch, dest, value, pe)
#define shmem_atomic_fetch_inc_nbi(fetch, dest, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_TYPES, _atomic_fetch_inc_nbi, fetch)(fetch, dest, pe)

/* AMO, bitwise types */
#define shmem_atomic_fetch_and(dest, value, pe)                                    \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_BITWISE_TYPES, _atomic_fetch_and, dest) \
  (dest, value, pe)
#define shmem_atomic_and(dest, value, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_BITWISE_TYPES, _atomic_and, dest)(dest, value, pe)
#define shmem_atomic_fetch_or(dest, value, pe)                                    \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_BITWISE_TYPES, _atomic_fetch_or, dest) \
  (dest, value, pe)
#define shmem_atomic_or(dest, value, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_BITWISE_TYPES, _atomic_or, dest)(dest, value, pe)
#define shmem_atomic_fetch_xor(dest, value, pe)                                    \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_BITWISE_TYPES, _atomic_fetch_xor, dest) \
  (dest, value, pe)
#define shmem_atomic_xor(dest, value, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_BITWISE_TYPES, _atomic_xor, dest)(dest, value, pe)
#define shmem_atomic_fetch_and_nbi(fetch, dest, value, pe)                              \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_BITWISE_TYPES, _atomic_fetch_and_nbi, fetch) \
  (fetch, dest, value, pe)
#define shmem_atomic_fetch_or_nbi(fetch, dest, value, pe)                              \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_BITWISE_TYPES, _atomic_fetch_or_nbi, fetch) \
  (fetch, dest, value, pe)
#define shmem_atomic_fetch_xor_nbi(fetch, dest, value, pe)                              \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_AMO_BITWISE_TYPES, _atomic_fetch_xor_nbi, fetch) \
  (fetch, dest, value, pe)

/* Point-to-point synchronization */
/* clang-format off */
#define shmem_wait_until(ivar, cmp, cmp_value)                                     \
  _Generic(&*(ivar),                                                               \
           ETHX_SHMEM_GENERIC_SYNC_TYPES_BUT_LONG(ETHX_SHMEM_ASSOC, _wait_until)   \
           long*: shmem_long_wait_until,                                           \
           default: ethx_shmem_generic_type_not_supported)(ivar, cmp, cmp_value)
#define shmem_test(ivar, cmp, cmp_value)                                           \
  _Generic(&*(ivar),                                                               \
           ETHX_SHMEM_GENERIC_SYNC_TYPES_BUT_LONG(ETHX_SHMEM_ASSOC, _test)         \
           long*: shmem_long_test,                                                 \
           default: ethx_shmem_generic_type_not_supported)(ivar, cmp, cmp_value)
/* clang-format on */

/* Collectives */
#define shmem_broadcast(team, dest, source, nelems, PE_root)        \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_RMA_TYPES, _broadcast, dest) \
  (team, dest, source, nelems, PE_root)
#define shmem_collect(team, dest, source, nelems) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_RMA_TYPES, _collect, dest)(team, dest, source, nelems)
#define shmem_fcollect(team, dest, source, nelems) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_RMA_TYPES, _fcollect, dest)(team, dest, source, nelems)
#define shmem_alltoall(team, dest, source, nelems) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_RMA_TYPES, _alltoall, dest)(team, dest, source, nelems)
#define shmem_alltoalls(team, dest, source, dst, sst, nelems)       \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_RMA_TYPES, _alltoalls, dest) \
  (team, dest, source, dst, sst, nelems)
#define shmem_and_reduce(team, dest, source, nreduce)                           \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_REDUCE_BITWISE_TYPES, _and_reduce, dest) \
  (team, dest, source, nreduce)
#define shmem_or_reduce(team, dest, source, nreduce)                           \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_REDUCE_BITWISE_TYPES, _or_reduce, dest) \
  (team, dest, source, nreduce)
#define shmem_xor_reduce(team, dest, source, nreduce)                           \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_REDUCE_BITWISE_TYPES, _xor_reduce, dest) \
  (team, dest, source, nreduce)
#define shmem_max_reduce(team, dest, source, nreduce)                          \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_REDUCE_MINMAX_TYPES, _max_reduce, dest) \
  (team, dest, source, nreduce)
#define shmem_min_reduce(team, dest, source, nreduce)                          \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_REDUCE_MINMAX_TYPES, _min_reduce, dest) \
  (team, dest, source, nreduce)
#define shmem_sum_reduce(team, dest, source, nreduce)                         \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_REDUCE_ARITH_TYPES, _sum_reduce, dest) \
  (team, dest, source, nreduce)
#define shmem_prod_reduce(team, dest, source, nreduce)                         \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_GENERIC_REDUCE_ARITH_TYPES, _prod_reduce, dest) \
  (team, dest, source, nreduce)

/* shmem_sync(team) is the team sync; shmem_sync(PE_start, logPE_stride, PE_size, pSync) the
 * deprecated active-set one (the name inside its own macro is not expanded again). */
#define ETHX_SHMEM_FIRST_ARG(...) ETHX_SHMEM_FIRST_ARG_(__VA_ARGS__, 0)
#define ETHX_SHMEM_FIRST_ARG_(first, ...) first
/* clang-format off */
#define shmem_sync(...)                                          \
  _Generic((ETHX_SHMEM_FIRST_ARG(__VA_ARGS__)),                  \
           shmem_team_t: shmem_team_sync,                        \
           void*: shmem_team_sync,                               \
           default: shmem_sync)(__VA_ARGS__)
/* clang-format on */

/* Deprecated generic AMO names */
#define shmem_fadd(dest, value, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_AMO_DEPRECATED_TYPES, _fadd, dest)(dest, value, pe)
#define shmem_finc(dest, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_AMO_DEPRECATED_TYPES, _finc, dest)(dest, pe)
#define shmem_add(dest, value, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_AMO_DEPRECATED_TYPES, _add, dest)(dest, value, pe)
#define shmem_inc(dest, pe) ETHX_SHMEM_SELECT(ETHX_SHMEM_AMO_DEPRECATED_TYPES, _inc, dest)(dest, pe)
#define shmem_cswap(dest, cond, value, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_AMO_DEPRECATED_TYPES, _cswap, dest)(dest, cond, value, pe)
#define shmem_swap(dest, value, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_AMO_DEPRECATED_EXTENDED_TYPES, _swap, dest)(dest, value, pe)
#define shmem_fetch(source, pe) \
  ETHX_SHMEM_SELECT_CONST(ETHX_SHMEM_AMO_DEPRECATED_EXTENDED_TYPES, _fetch, source)(source, pe)
#define shmem_set(dest, value, pe) \
  ETHX_SHMEM_SELECT(ETHX_SHMEM_AMO_DEPRECATED_EXTENDED_TYPES, _set, dest)(dest, value, pe)

#endif /* C11 generics */

#ifdef __cplusplus
/* ---- C++: the generic names as overloads ---- */
#define ETHX_SHMEM_CXX_RMA(NAME, TYPE, A)                                                       \
  inline void shmem_put(TYPE* dest, const TYPE* source, size_t nelems, int pe) {                \
    shmem_##NAME##_put(dest, source, nelems, pe);                                               \
  }                                                                                             \
  inline void shmem_get(TYPE* dest, const TYPE* source, size_t nelems, int pe) {                \
    shmem_##NAME##_get(dest, source, nelems, pe);                                               \
  }                                                                                             \
  inline void shmem_put_nbi(TYPE* dest, const TYPE* source, size_t nelems, int pe) {            \
    shmem_##NAME##_put_nbi(dest, source, nelems, pe);                                           \
  }                                                                                             \
  inline void shmem_get_nbi(TYPE* dest, const TYPE* source, size_t nelems, int pe) {            \
    shmem_##NAME##_get_nbi(dest, source, nelems, pe);                                           \
  }                                                                                             \
  inline void shmem_p(TYPE* dest, TYPE value, int pe) {                                         \
    shmem_##NAME##_p(dest, value, pe);                                                          \
  }                                                                                             \
  inline TYPE shmem_g(const TYPE* source, int pe) {                                             \
    return shmem_##NAME##_g(source, pe);                                                        \
  }                                                                                             \
  inline void shmem_iput(TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst,          \
                         size_t nelems, int pe) {                                               \
    shmem_##NAME##_iput(dest, source, dst, sst, nelems, pe);                                    \
  }                                                                                             \
  inline void shmem_iget(TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst,          \
                         size_t nelems, int pe) {                                               \
    shmem_##NAME##_iget(dest, source, dst, sst, nelems, pe);                                    \
  }                                                                                             \
  inline int shmem_broadcast(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems,  \
                             int PE_root) {                                                     \
    return shmem_##NAME##_broadcast(team, dest, source, nelems, PE_root);                       \
  }                                                                                             \
  inline int shmem_collect(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems) {  \
    return shmem_##NAME##_collect(team, dest, source, nelems);                                  \
  }                                                                                             \
  inline int shmem_fcollect(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems) { \
    return shmem_##NAME##_fcollect(team, dest, source, nelems);                                 \
  }                                                                                             \
  inline int shmem_alltoall(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems) { \
    return shmem_##NAME##_alltoall(team, dest, source, nelems);                                 \
  }                                                                                             \
  inline int shmem_alltoalls(shmem_team_t team, TYPE* dest, const TYPE* source, ptrdiff_t dst,  \
                             ptrdiff_t sst, size_t nelems) {                                    \
    return shmem_##NAME##_alltoalls(team, dest, source, dst, sst, nelems);                      \
  }

#define ETHX_SHMEM_CXX_AMO_EXTENDED(NAME, TYPE, A)                                 \
  inline TYPE shmem_atomic_fetch(const TYPE* source, int pe) {                     \
    return shmem_##NAME##_atomic_fetch(source, pe);                                \
  }                                                                                \
  inline void shmem_atomic_set(TYPE* dest, TYPE value, int pe) {                   \
    shmem_##NAME##_atomic_set(dest, value, pe);                                    \
  }                                                                                \
  inline TYPE shmem_atomic_swap(TYPE* dest, TYPE value, int pe) {                  \
    return shmem_##NAME##_atomic_swap(dest, value, pe);                            \
  }                                                                                \
  inline void shmem_atomic_fetch_nbi(TYPE* fetch, const TYPE* source, int pe) {    \
    shmem_##NAME##_atomic_fetch_nbi(fetch, source, pe);                            \
  }                                                                                \
  inline void shmem_atomic_swap_nbi(TYPE* fetch, TYPE* dest, TYPE value, int pe) { \
    shmem_##NAME##_atomic_swap_nbi(fetch, dest, value, pe);                        \
  }

#define ETHX_SHMEM_CXX_AMO(NAME, TYPE, A)                                                   \
  inline TYPE shmem_atomic_compare_swap(TYPE* dest, TYPE cond, TYPE value, int pe) {        \
    return shmem_##NAME##_atomic_compare_swap(dest, cond, value, pe);                       \
  }                                                                                         \
  inline TYPE shmem_atomic_fetch_add(TYPE* dest, TYPE value, int pe) {                      \
    return shmem_##NAME##_atomic_fetch_add(dest, value, pe);                                \
  }                                                                                         \
  inline void shmem_atomic_add(TYPE* dest, TYPE value, int pe) {                            \
    shmem_##NAME##_atomic_add(dest, value, pe);                                             \
  }                                                                                         \
  inline TYPE shmem_atomic_fetch_inc(TYPE* dest, int pe) {                                  \
    return shmem_##NAME##_atomic_fetch_inc(dest, pe);                                       \
  }                                                                                         \
  inline void shmem_atomic_inc(TYPE* dest, int pe) {                                        \
    shmem_##NAME##_atomic_inc(dest, pe);                                                    \
  }                                                                                         \
  inline void shmem_atomic_compare_swap_nbi(TYPE* fetch, TYPE* dest, TYPE cond, TYPE value, \
                                            int pe) {                                       \
    shmem_##NAME##_atomic_compare_swap_nbi(fetch, dest, cond, value, pe);                   \
  }                                                                                         \
  inline void shmem_atomic_fetch_add_nbi(TYPE* fetch, TYPE* dest, TYPE value, int pe) {     \
    shmem_##NAME##_atomic_fetch_add_nbi(fetch, dest, value, pe);                            \
  }                                                                                         \
  inline void shmem_atomic_fetch_inc_nbi(TYPE* fetch, TYPE* dest, int pe) {                 \
    shmem_##NAME##_atomic_fetch_inc_nbi(fetch, dest, pe);                                   \
  }

/* OP is one bitwise operation: _and, _or or _xor. */
#define ETHX_SHMEM_CXX_AMO_BITWISE(NAME, TYPE, OP)                                        \
  inline TYPE shmem_atomic_fetch##OP(TYPE* dest, TYPE value, int pe) {                    \
    return shmem_##NAME##_atomic_fetch##OP(dest, value, pe);                              \
  }                                                                                       \
  inline void shmem_atomic##OP(TYPE* dest, TYPE value, int pe) {                          \
    shmem_##NAME##_atomic##OP(dest, value, pe);                                           \
  }                                                                                       \
  inline void shmem_atomic_fetch##OP##_nbi(TYPE* fetch, TYPE* dest, TYPE value, int pe) { \
    shmem_##NAME##_atomic_fetch##OP##_nbi(fetch, dest, value, pe);                        \
  }

#define ETHX_SHMEM_CXX_SYNC(NAME, TYPE, A)                            \
  inline void shmem_wait_until(TYPE* ivar, int cmp, TYPE cmp_value) { \
    shmem_##NAME##_wait_until(ivar, cmp, cmp_value);                  \
  }                                                                   \
  inline int shmem_test(TYPE* ivar, int cmp, TYPE cmp_value) {        \
    return shmem_##NAME##_test(ivar, cmp, cmp_value);                 \
  }

#define ETHX_SHMEM_CXX_REDUCE(NAME, TYPE, OP)                                      \
  inline int shmem##OP##_reduce(shmem_team_t team, TYPE* dest, const TYPE* source, \
                                size_t nreduce) {                                  \
    return shmem_##NAME##OP##_reduce(team, dest, source, nreduce);                 \
  }

#define ETHX_SHMEM_CXX_AMO_DEPRECATED(NAME, TYPE, A)                   \
  inline TYPE shmem_fadd(TYPE* dest, TYPE value, int pe) {             \
    return shmem_##NAME##_fadd(dest, value, pe);                       \
  }                                                                    \
  inline TYPE shmem_finc(TYPE* dest, int pe) {                         \
    return shmem_##NAME##_finc(dest, pe);                              \
  }                                                                    \
  inline void shmem_add(TYPE* dest, TYPE value, int pe) {              \
    shmem_##NAME##_add(dest, value, pe);                               \
  }                                                                    \
  inline void shmem_inc(TYPE* dest, int pe) {                          \
    shmem_##NAME##_inc(dest, pe);                                      \
  }                                                                    \
  inline TYPE shmem_cswap(TYPE* dest, TYPE cond, TYPE value, int pe) { \
    return shmem_##NAME##_cswap(dest, cond, value, pe);                \
  }
#define ETHX_SHMEM_CXX_AMO_DEPRECATED_EXTENDED(NAME, TYPE, A) \
  inline TYPE shmem_swap(TYPE* dest, TYPE value, int pe) {    \
    return shmem_##NAME##_swap(dest, value, pe);              \
  }                                                           \
  inline TYPE shmem_fetch(const TYPE* source, int pe) {       \
    return shmem_##NAME##_fetch(source, pe);                  \
  }                                                           \
  inline void shmem_set(TYPE* dest, TYPE value, int pe) {     \
    shmem_##NAME##_set(dest, value, pe);                      \
  }

ETHX_SHMEM_GENERIC_RMA_TYPES(ETHX_SHMEM_CXX_RMA, _)
ETHX_SHMEM_GENERIC_AMO_EXTENDED_TYPES(ETHX_SHMEM_CXX_AMO_EXTENDED, _)
ETHX_SHMEM_GENERIC_AMO_TYPES(ETHX_SHMEM_CXX_AMO, _)
ETHX_SHMEM_GENERIC_AMO_BITWISE_TYPES(ETHX_SHMEM_CXX_AMO_BITWISE, _and)
ETHX_SHMEM_GENERIC_AMO_BITWISE_TYPES(ETHX_SHMEM_CXX_AMO_BITWISE, _or)
ETHX_SHMEM_GENERIC_AMO_BITWISE_TYPES(ETHX_SHMEM_CXX_AMO_BITWISE, _xor)
/* shmem_wait_until(long *, int, long) is the C function itself; shmem_test needs long too. */
ETHX_SHMEM_GENERIC_SYNC_TYPES_BUT_LONG(ETHX_SHMEM_CXX_SYNC, _)
inline int shmem_test(long* ivar, int cmp, long cmp_value) {
  return shmem_long_test(ivar, cmp, cmp_value);
}
ETHX_SHMEM_GENERIC_REDUCE_BITWISE_TYPES(ETHX_SHMEM_CXX_REDUCE, _and)
ETHX_SHMEM_GENERIC_REDUCE_BITWISE_TYPES(ETHX_SHMEM_CXX_REDUCE, _or)
ETHX_SHMEM_GENERIC_REDUCE_BITWISE_TYPES(ETHX_SHMEM_CXX_REDUCE, _xor)
ETHX_SHMEM_GENERIC_REDUCE_MINMAX_TYPES(ETHX_SHMEM_CXX_REDUCE, _max)
ETHX_SHMEM_GENERIC_REDUCE_MINMAX_TYPES(ETHX_SHMEM_CXX_REDUCE, _min)
ETHX_SHMEM_GENERIC_REDUCE_MINMAX_TYPES(ETHX_SHMEM_CXX_REDUCE, _sum)
ETHX_SHMEM_GENERIC_REDUCE_MINMAX_TYPES(ETHX_SHMEM_CXX_REDUCE, _prod)
/* shmem_sync(int, int, int, long *) is the deprecated C function. */
inline int shmem_sync(shmem_team_t team) {
  return shmem_team_sync(team);
}
ETHX_SHMEM_AMO_DEPRECATED_TYPES(ETHX_SHMEM_CXX_AMO_DEPRECATED, _)
ETHX_SHMEM_AMO_DEPRECATED_EXTENDED_TYPES(ETHX_SHMEM_CXX_AMO_DEPRECATED_EXTENDED, _)
#endif /* __cplusplus */

/* NOLINTEND(bugprone-macro-parentheses) */

#endif /* SHMEM_H */
