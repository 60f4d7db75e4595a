/*
 * RMA: shmem_putmem/getmem at 1 B ... 1 MiB between every pair of PEs (itself included),
 * typed put/get/p/g and their _nbi forms, strided iput/iget, nbi + quiet, the C11 generic
 * names. Every byte is checked against a pattern that names its sender, and the bytes around
 * each transfer must stay untouched.
 *
 * Pairs: in round r PE i sends to PE (i + r) % n, so every PE works in every round and all
 * n x n pairs are covered in n rounds.
 *
 * Options: --max-size BYTES leaves out the larger putmem/getmem sizes (default: up to 1 MiB).
 */
#include "shmem_test.h"

static const size_t k_sizes[] = {1, 7, 8, 64, 4096, 65536, 1u << 20};
static int g_size_count = sizeof k_sizes / sizeof k_sizes[0]; /* --max-size drops the largest */
enum { k_guard = 16, k_fill = 0xa5 };
#define MAX_SIZE ((size_t)1 << 20)
#define BUFFER_SIZE (MAX_SIZE + (size_t)2 * k_guard)

static int target_of(int round) {
  return (st.me + round) % st.npes;
}
static int sender_of(int round) {
  return (st.me - round + st.npes) % st.npes;
}
static unsigned seed_of(int sender, int round, int size_index) {
  return (unsigned)(sender * 1000003 + round * 131 + size_index * 7 + 1);
}
/* Odd sizes land at an odd offset: putmem/getmem take any alignment. */
static size_t offset_of(size_t size) {
  return size % 8 ? k_guard + 3 : k_guard;
}

static void check_putmem(unsigned char* dest, unsigned char* src) {
  for (int z = 0; z < g_size_count; ++z) {
    size_t size = k_sizes[z];
    size_t off = offset_of(size);
    for (int r = 0; r < st.npes; ++r) {
      memset(dest, k_fill, BUFFER_SIZE);
      shmem_barrier_all();
      st_fill(src, size, seed_of(st.me, r, z));
      shmem_putmem(dest + off, src, size, target_of(r));
      shmem_barrier_all();
      st_check c;
      st_begin(&c, "putmem %zu B from PE %d", size, sender_of(r));
      st_expect_pattern(&c, "data", dest + off, size, seed_of(sender_of(r), r, z));
      st_expect_filled(&c, "guard before", dest, off, k_fill);
      st_expect_filled(&c, "guard after", dest + off + size, k_guard, k_fill);
      st_end(&c);
    }
  }
}

static void check_getmem(unsigned char* sym_src, unsigned char* dest, unsigned char* expect) {
  st_fill(sym_src, MAX_SIZE + k_guard, seed_of(st.me, 0, 99));
  shmem_barrier_all();
  for (int r = 0; r < st.npes; ++r) {
    int t = target_of(r);
    st_fill(expect, MAX_SIZE + k_guard, seed_of(t, 0, 99));
    for (int z = 0; z < g_size_count; ++z) {
      size_t size = k_sizes[z];
      size_t off = offset_of(size);
      size_t src_off = size % 8 ? 5 : 0;
      memset(dest, k_fill, BUFFER_SIZE);
      shmem_getmem(dest + off, sym_src + src_off, size, t);
      st_check c;
      st_begin(&c, "getmem %zu B from PE %d", size, t);
      st_expect_bytes(&c, "data", expect + src_off, dest + off, size);
      st_expect_filled(&c, "guard before", dest, off, k_fill);
      st_expect_filled(&c, "guard after", dest + off + size, k_guard, k_fill);
      st_end(&c);
    }
  }
  shmem_barrier_all();
}

/*
 * Typed RMA for one type: put (half blocking, half _nbi) and p into every PE, then get
 * (blocking and _nbi + quiet) and g from every PE. Values are small integers (exact in
 * float and double), negative for odd elements of signed types.
 */
#define NT 9
/* NOLINTBEGIN(bugprone-macro-parentheses): T is a type */
#define TYPED_RMA(T, TN, SIGNED)                                                                 \
  static T value_##TN(int pe, int k) {                                                           \
    long v = (long)(pe % 30) * 3 + k + 1;                                                        \
    return (T)((SIGNED) && (k & 1) ? -v : v);                                                    \
  }                                                                                              \
  static void check_typed_##TN(void) {                                                           \
    T* sym = (T*)st_malloc(sizeof(T) * 2 * (NT + 1), #TN " buffers");                            \
    T* dest = sym;                                                                               \
    T* src = sym + NT + 1;                                                                       \
    T local[NT];                                                                                 \
    for (int k = 0; k < NT; ++k) src[k] = value_##TN(st.me, k);                                  \
    st_check put, get;                                                                           \
    st_begin(&put, "shmem_" #TN "_put/put_nbi/p into every PE");                                 \
    st_begin(&get, "shmem_" #TN "_get/get_nbi/g from every PE");                                 \
    for (int r = 0; r < st.npes; ++r) {                                                          \
      int t = target_of(r), s = sender_of(r);                                                    \
      memset(dest, 0, (NT + 1) * sizeof(T));                                                     \
      shmem_barrier_all();                                                                       \
      shmem_##TN##_put(dest, src, NT / 2, t);                                                    \
      shmem_##TN##_put_nbi(dest + NT / 2, src + NT / 2, NT - NT / 2, t);                         \
      shmem_##TN##_p(dest + NT, value_##TN(st.me, 20), t);                                       \
      shmem_barrier_all();                                                                       \
      for (int k = 0; k <= NT; ++k) {                                                            \
        T want = value_##TN(s, k == NT ? 20 : k);                                                \
        if (dest[k] != want) {                                                                   \
          st_fail(&put, "element %d from PE %d: expected %.17g, got %.17g", k, s, (double)want,  \
                  (double)dest[k]);                                                              \
        }                                                                                        \
      }                                                                                          \
      memset(local, 0, sizeof local);                                                            \
      shmem_##TN##_get(local, src, NT / 2, t);                                                   \
      shmem_##TN##_get_nbi(local + NT / 2, src + NT / 2, NT - NT / 2, t);                        \
      shmem_quiet();                                                                             \
      for (int k = 0; k < NT; ++k) {                                                             \
        T g = shmem_##TN##_g(src + k, t);                                                        \
        if (local[k] != value_##TN(t, k) || g != value_##TN(t, k)) {                             \
          st_fail(&get, "element %d of PE %d: expected %.17g, got %.17g (get), %.17g (g)", k, t, \
                  (double)value_##TN(t, k), (double)local[k], (double)g);                        \
        }                                                                                        \
      }                                                                                          \
    }                                                                                            \
    st_end(&put);                                                                                \
    st_end(&get);                                                                                \
    shmem_barrier_all();                                                                         \
    shmem_free(sym);                                                                             \
  }

TYPED_RMA(char, char, 0)
TYPED_RMA(short, short, 1)
TYPED_RMA(int, int, 1)
TYPED_RMA(long, long, 1)
TYPED_RMA(long long, longlong, 1)
TYPED_RMA(unsigned int, uint, 0)
TYPED_RMA(unsigned long, ulong, 0)
TYPED_RMA(int8_t, int8, 1)
TYPED_RMA(uint16_t, uint16, 0)
TYPED_RMA(int64_t, int64, 1)
TYPED_RMA(size_t, size, 0)
TYPED_RMA(float, float, 1)
TYPED_RMA(double, double, 1)
/* NOLINTEND(bugprone-macro-parentheses) */

/* iput: dest[0, 3, 6, ...] = src[0, 2, 4, ...] on the right neighbour; the rest untouched. */
static void check_iput(void) {
  enum { n = 5, dst = 3, sst = 2 };
  int* idest = (int*)st_malloc(sizeof(int) * dst * n, "iput dest");
  double* ddest = (double*)st_malloc(sizeof(double) * dst * n, "iput dest");
  int isrc[sst * n];
  double dsrc[sst * n];
  for (int k = 0; k < sst * n; ++k) {
    isrc[k] = st.me * 100 + k;
    dsrc[k] = st.me * 100 + k + 0.25;
  }
  for (int k = 0; k < dst * n; ++k) {
    idest[k] = -1;
    ddest[k] = -1.0;
  }
  shmem_barrier_all();
  shmem_int_iput(idest, isrc, dst, sst, n, st_right());
  shmem_double_iput(ddest, dsrc, dst, sst, n, st_right());
  shmem_barrier_all();
  st_check c;
  st_begin(&c, "shmem_int_iput/double_iput (stride 3 <- 2) from PE %d", st_left());
  for (int k = 0; k < dst * n; ++k) {
    int strided = k % dst == 0;
    int want = strided ? st_left() * 100 + (k / dst) * sst : -1;
    int index = (k / dst) * sst; /* the source element strided to k */
    double dwant = strided ? st_left() * 100 + index + 0.25 : -1.0;
    if (idest[k] != want) st_fail(&c, "int element %d: expected %d, got %d", k, want, idest[k]);
    if (ddest[k] != dwant) {
      st_fail(&c, "double element %d: expected %g, got %g", k, dwant, ddest[k]);
    }
  }
  st_end(&c);
  shmem_barrier_all();
  shmem_free(ddest);
  shmem_free(idest);
}

/* iget: local[0, 2, 4, ...] = right neighbour's src[0, 3, 6, ...]. */
static void check_iget(void) {
  enum { n = 6, dst = 2, sst = 3 };
  long* lsrc = (long*)st_malloc(sizeof(long) * sst * n, "iget src");
  int32_t* wsrc = (int32_t*)st_malloc(sizeof(int32_t) * sst * n, "iget src");
  for (int k = 0; k < sst * n; ++k) {
    lsrc[k] = 1000L * st.me + k;
    wsrc[k] = -1000 * st.me - k;
  }
  shmem_barrier_all();
  long local[dst * n];
  int32_t wlocal[dst * n];
  for (int k = 0; k < dst * n; ++k) {
    local[k] = -7;
    wlocal[k] = 7;
  }
  int t = st_right();
  shmem_long_iget(local, lsrc, dst, sst, n, t);
  shmem_iget32(wlocal, wsrc, dst, sst, n, t);
  st_check c;
  st_begin(&c, "shmem_long_iget/iget32 (stride 2 <- 3) from PE %d", t);
  for (int k = 0; k < dst * n; ++k) {
    int strided = k % dst == 0;
    long want = strided ? 1000L * t + (long)(k / dst) * sst : -7;
    int32_t wwant = strided ? -1000 * t - (k / dst) * sst : 7;
    if (local[k] != want) st_fail(&c, "long element %d: expected %ld, got %ld", k, want, local[k]);
    if (wlocal[k] != wwant) {
      st_fail(&c, "int32 element %d: expected %d, got %d", k, (int)wwant, (int)wlocal[k]);
    }
  }
  st_end(&c);
  shmem_barrier_all();
  shmem_free(wsrc);
  shmem_free(lsrc);
}

/*
 * Put without a barrier: putmem_nbi and int_put_nbi, shmem_quiet, then a flag; the receiver
 * waits for the flag and must find the data. Every iteration has its own slot, so nothing is
 * overwritten while the receiver reads it.
 */
static void check_nbi_quiet(void) {
  enum { iters = 20, bytes = 4096, ints = 16 };
  unsigned char* slots = (unsigned char*)st_malloc((size_t)iters * bytes, "nbi slots");
  int* islots = (int*)st_malloc(sizeof(int) * iters * ints, "nbi int slots");
  long* flag = (long*)st_malloc(sizeof(long), "nbi flag");
  *flag = 0;
  unsigned char src[bytes];
  int isrc[ints];
  shmem_barrier_all();
  st_check c;
  st_begin(&c, "putmem_nbi/int_put_nbi + quiet + flag, %d times to PE %d", iters, st_right());
  for (int it = 1; it <= iters; ++it) {
    st_fill(src, bytes, seed_of(st.me, it, 50));
    for (int k = 0; k < ints; ++k) isrc[k] = st.me * 10000 + it * 100 + k;
    shmem_putmem_nbi(slots + (size_t)(it - 1) * bytes, src, bytes, st_right());
    shmem_int_put_nbi(islots + (size_t)(it - 1) * ints, isrc, ints, st_right());
    shmem_quiet();
    shmem_long_p(flag, it, st_right());
    shmem_long_wait_until(flag, SHMEM_CMP_GE, it);
    st_expect_pattern(&c, "putmem_nbi data", slots + (size_t)(it - 1) * bytes, bytes,
                      seed_of(st_left(), it, 50));
    for (int k = 0; k < ints; ++k) {
      int want = st_left() * 10000 + it * 100 + k;
      int got = islots[(it - 1) * ints + k];
      if (got != want) st_fail(&c, "iteration %d int %d: expected %d, got %d", it, k, want, got);
    }
  }
  st_end(&c);
  shmem_barrier_all();
  shmem_free(flag);
  shmem_free(islots);
  shmem_free(slots);
}

/* Several getmem_nbi in flight, then shmem_quiet: all of them have arrived. */
static void check_get_nbi(void) {
  enum { parts = 8, part = 512 };
  unsigned char* src = (unsigned char*)st_malloc((size_t)parts * part, "get_nbi src");
  st_fill(src, (size_t)parts * part, seed_of(st.me, 0, 60));
  shmem_barrier_all();
  unsigned char got[parts * part];
  unsigned char want[parts * part];
  memset(got, 0, sizeof got);
  int t = target_of(st.npes > 2 ? 2 : 1);
  /* Backwards, so a library that completed them in order would still be checked. */
  for (int p = parts - 1; p >= 0; --p) {
    shmem_getmem_nbi(got + (size_t)p * part, src + (size_t)p * part, part, t);
  }
  shmem_quiet();
  st_fill(want, sizeof want, seed_of(t, 0, 60));
  st_check c;
  st_begin(&c, "%d getmem_nbi of %d B from PE %d + quiet", parts, part, t);
  st_expect_bytes(&c, "data", want, got, sizeof got);
  st_end(&c);
  shmem_barrier_all();
  shmem_free(src);
}

/* The C11 type-generic names pick the typed routine by the pointer type. */
static void check_generic(void) {
  long* dest = (long*)st_malloc(4 * sizeof(long), "generic dest");
  double* ddest = (double*)st_malloc(sizeof(double), "generic dest");
  long src[3] = {st.me * 3L + 1, st.me * 3L + 2, st.me * 3L + 3};
  dest[3] = 0;
  shmem_barrier_all();
  shmem_put(dest, src, 3, st_right());
  shmem_p(ddest, st.me + 0.5, st_right());
  shmem_barrier_all();
  long got[3] = {0, 0, 0};
  shmem_get(got, dest, 3, st.me);
  long g = shmem_g(dest + 2, st_right());
  st_check c;
  st_begin(&c, "C11 generic shmem_put/p/get/g");
  for (int k = 0; k < 3; ++k) st_expect_i64(&c, "shmem_put data", st_left() * 3L + 1 + k, got[k]);
  st_expect_double(&c, "shmem_p double", st_left() + 0.5, *ddest);
  st_expect_i64(&c, "shmem_g from the right neighbour", st.me * 3L + 3, g);
  st_end(&c);
  shmem_barrier_all();
  shmem_free(ddest);
  shmem_free(dest);
}

int main(int argc, char** argv) {
  argc = st_args("rma_test", argc, argv);
  for (int i = 1; i + 1 < argc; ++i) {
    if (strcmp(argv[i], "--max-size") != 0) continue;
    size_t max_size = (size_t)strtoull(argv[++i], NULL, 0);
    while (g_size_count > 1 && k_sizes[g_size_count - 1] > max_size) --g_size_count;
  }
  shmem_init();
  st_started();
  unsigned char* sym = (unsigned char*)st_malloc(BUFFER_SIZE, "putmem dest");
  unsigned char* src = (unsigned char*)malloc(BUFFER_SIZE);
  unsigned char* expect = (unsigned char*)malloc(BUFFER_SIZE);
  if (src == NULL || expect == NULL) {
    fprintf(stderr, "rma_test PE %d: out of memory\n", st.me);
    shmem_global_exit(1);
  }
  check_putmem(sym, src);
  check_getmem(sym, src, expect);
  check_typed_char();
  check_typed_short();
  check_typed_int();
  check_typed_long();
  check_typed_longlong();
  check_typed_uint();
  check_typed_ulong();
  check_typed_int8();
  check_typed_uint16();
  check_typed_int64();
  check_typed_size();
  check_typed_float();
  check_typed_double();
  check_iput();
  check_iget();
  check_nbi_quiet();
  check_get_nbi();
  check_generic();
  free(expect);
  free(src);
  shmem_free(sym);
  int status = st_finish();
  shmem_finalize();
  return status;
}
