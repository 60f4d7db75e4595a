/*
 * Collectives on SHMEM_TEAM_WORLD (OpenSHMEM 1.5): shmem_broadcastmem from every root,
 * shmem_fcollectmem, shmem_collectmem with a different size on every PE (one of them 0),
 * shmem_alltoallmem, and the typed sum/prod/max/min reductions (int, long, double) and
 * and/or/xor reductions (unsigned int, unsigned long) with results that must be exact: the
 * values are integers or exactly representable doubles, so no order of combining can round.
 * Every result buffer has a guard after it that must stay untouched; every call returns 0.
 */
#include "shmem_test.h"

enum { k_guard = 16, k_fill = 0x5c };

static unsigned seed_of(int pe, int what, size_t size) {
  return (unsigned)(pe * 7919 + what * 131 + (int)size);
}

/* One PE's block of a collective's result: the pattern that PE's seed makes. */
static void expect_block(st_check* c, const char* kind, int pe, const unsigned char* block,
                         size_t size, unsigned seed) {
  char what[64];
  snprintf(what, sizeof what, "%s %d", kind, pe);
  st_expect_pattern(c, what, block, size, seed);
}

static void check_broadcast(void) {
  static const size_t sizes[] = {1, 13, 4096};
  unsigned char* src = (unsigned char*)st_malloc(4096, "broadcast source");
  unsigned char* dest = (unsigned char*)st_malloc(4096 + k_guard, "broadcast dest");
  for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; ++z) {
    size_t size = sizes[z];
    st_check c;
    st_begin(&c, "shmem_broadcastmem %zu B from every root", size);
    for (int root = 0; root < st.npes; ++root) {
      st_fill(src, size, seed_of(st.me, 1, size));
      memset(dest, k_fill, size + k_guard);
      shmem_barrier_all();
      int rc = shmem_broadcastmem(SHMEM_TEAM_WORLD, dest, src, size, root);
      if (rc != 0) st_fail(&c, "root %d: returned %d", root, rc);
      expect_block(&c, "data of root", root, dest, size, seed_of(root, 1, size));
      st_expect_filled(&c, "guard", dest + size, k_guard, k_fill);
      shmem_barrier_all();
    }
    st_end(&c);
  }
  shmem_free(dest);
  shmem_free(src);
}

static void check_fcollect(void) {
  static const size_t sizes[] = {8, 24, 1000};
  size_t n = (size_t)st.npes;
  unsigned char* src = (unsigned char*)st_malloc(1000, "fcollect source");
  unsigned char* dest = (unsigned char*)st_malloc(n * 1000 + k_guard, "fcollect dest");
  for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; ++z) {
    size_t size = sizes[z];
    st_fill(src, size, seed_of(st.me, 2, size));
    memset(dest, k_fill, n * size + k_guard);
    shmem_barrier_all();
    int rc = shmem_fcollectmem(SHMEM_TEAM_WORLD, dest, src, size);
    st_check c;
    st_begin(&c, "shmem_fcollectmem %zu B per PE", size);
    st_expect_i64(&c, "return value", 0, rc);
    for (int pe = 0; pe < st.npes; ++pe) {
      expect_block(&c, "block of PE", pe, dest + (size_t)pe * size, size, seed_of(pe, 2, size));
    }
    st_expect_filled(&c, "guard", dest + n * size, k_guard, k_fill);
    st_end(&c);
    shmem_barrier_all();
  }
  shmem_free(dest);
  shmem_free(src);
}

/* PE i contributes size_of(i) bytes: different everywhere, 0 for PE 1. */
static size_t collect_size_of(int pe, int variant) {
  return pe == 1 ? 0 : (size_t)(3 + 5 * pe + 97 * variant);
}

static void check_collect(void) {
  for (int variant = 0; variant < 2; ++variant) {
    size_t total = 0, largest = 1;
    for (int pe = 0; pe < st.npes; ++pe) {
      size_t size = collect_size_of(pe, variant);
      total += size;
      if (size > largest) largest = size;
    }
    size_t mine = collect_size_of(st.me, variant);
    /* shmem_malloc takes the same size on every PE: room for the largest contribution. */
    unsigned char* src = (unsigned char*)st_malloc(largest, "collect source");
    unsigned char* dest = (unsigned char*)st_malloc(total + k_guard, "collect dest");
    st_fill(src, mine, seed_of(st.me, 3, (size_t)variant));
    memset(dest, k_fill, total + k_guard);
    shmem_barrier_all();
    int rc = shmem_collectmem(SHMEM_TEAM_WORLD, dest, src, mine);
    st_check c;
    st_begin(&c, "shmem_collectmem, %zu B in all, sizes 3 + 5i%s B (PE 1: 0 B)", total,
             variant ? " + 97" : "");
    st_expect_i64(&c, "return value", 0, rc);
    size_t offset = 0;
    for (int pe = 0; pe < st.npes; ++pe) {
      char what[64];
      snprintf(what, sizeof what, "PE %d's block at offset %zu", pe, offset);
      size_t size = collect_size_of(pe, variant);
      st_expect_pattern(&c, what, dest + offset, size, seed_of(pe, 3, (size_t)variant));
      offset += size;
    }
    st_expect_filled(&c, "guard", dest + total, k_guard, k_fill);
    st_end(&c);
    shmem_barrier_all();
    shmem_free(dest);
    shmem_free(src);
  }
}

static void check_alltoall(void) {
  static const size_t sizes[] = {8, 100, 4096};
  size_t n = (size_t)st.npes;
  unsigned char* src = (unsigned char*)st_malloc(n * 4096, "alltoall source");
  unsigned char* dest = (unsigned char*)st_malloc(n * 4096 + k_guard, "alltoall dest");
  for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; ++z) {
    size_t size = sizes[z];
    /* Block j goes to PE j: its pattern names the sender and the receiver. */
    for (int pe = 0; pe < st.npes; ++pe) {
      st_fill(src + (size_t)pe * size, size, seed_of(st.me, 4 + pe, size));
    }
    memset(dest, k_fill, n * size + k_guard);
    shmem_barrier_all();
    int rc = shmem_alltoallmem(SHMEM_TEAM_WORLD, dest, src, size);
    st_check c;
    st_begin(&c, "shmem_alltoallmem %zu B per pair", size);
    st_expect_i64(&c, "return value", 0, rc);
    for (int pe = 0; pe < st.npes; ++pe) {
      expect_block(&c, "block from PE", pe, dest + (size_t)pe * size, size,
                   seed_of(pe, 4 + st.me, size));
    }
    st_expect_filled(&c, "guard", dest + n * size, k_guard, k_fill);
    st_end(&c);
    shmem_barrier_all();
  }
  shmem_free(dest);
  shmem_free(src);
}

/* ---- reductions: element k of PE pe's source is value(pe, k) ---- */

static int v_int_sum(int pe, size_t k) {
  return (pe + 1) * (int)(k + 1) - 3 * pe;
}
static int v_int_prod(int pe, size_t k) {
  static const int factors[3] = {2, -1, 1};
  return pe < 60 ? factors[(pe + (int)k) % 3] : 1; /* at most 20 factors of 2 */
}
static int v_int_minmax(int pe, size_t k) {
  return (pe * 7 + (int)k * 13) % 101 - 50;
}
static long v_long_sum(int pe, size_t k) {
  return pe * 0x100000001L + (long)k;
}
static long v_long_minmax(int pe, size_t k) {
  return ((long)pe * 7 + (long)k * 13) % 101 * 0x10000000000L - 50 * 0x10000000000L;
}
static double v_double_sum(int pe, size_t k) {
  return pe * 0.5 + (double)k * 0.25 - 3.0;
}
static double v_double_prod(int pe, size_t k) {
  static const double factors[4] = {2.0, 0.5, 1.0, -1.0};
  return factors[(pe + (int)k) % 4];
}
static double v_double_minmax(int pe, size_t k) {
  return (pe * 7 + (int)k * 13) % 101 - 50.5;
}
static unsigned v_uint_and(int pe, size_t k) {
  return ~(1u << ((pe + (int)k) % 32));
}
static unsigned v_uint_or(int pe, size_t k) {
  return 1u << ((pe * 3 + (int)k) % 32);
}
static unsigned v_uint_xor(int pe, size_t k) {
  return (unsigned)(pe + 1) * 0x9e3779b9u ^ (unsigned)k;
}
static unsigned long v_ulong_and(int pe, size_t k) {
  return ~(1ul << ((pe + (int)k) % 64));
}
static unsigned long v_ulong_or(int pe, size_t k) {
  return 1ul << ((pe * 5 + (int)k) % 64);
}
static unsigned long v_ulong_xor(int pe, size_t k) {
  return (unsigned long)(pe + 1) * 0x9e3779b97f4a7c15ul ^ (unsigned long)k;
}

static const char* show_int(char* b, int v) {
  snprintf(b, 48, "%d", v);
  return b;
}
static const char* show_long(char* b, long v) {
  snprintf(b, 48, "%ld (%#lx)", v, v);
  return b;
}
static const char* show_double(char* b, double v) {
  snprintf(b, 48, "%.17g", v);
  return b;
}
static const char* show_uint(char* b, unsigned v) {
  snprintf(b, 48, "%#x", v);
  return b;
}
static const char* show_ulong(char* b, unsigned long v) {
  snprintf(b, 48, "%#lx", v);
  return b;
}

/* NOLINTBEGIN(bugprone-macro-parentheses): T is a type */
#define REDUCTION(T, TN, OP, VALUE, COMBINE)                                          \
  static void reduce_##TN##_##OP(size_t n) {                                          \
    T* src = (T*)st_malloc((n + 1) * sizeof(T), "reduce source");                     \
    T* dest = (T*)st_malloc((n + 1) * sizeof(T), "reduce dest");                      \
    for (size_t k = 0; k < n; ++k) {                                                  \
      src[k] = VALUE(st.me, k);                                                       \
      dest[k] = (T)0;                                                                 \
    }                                                                                 \
    dest[n] = (T)77;                                                                  \
    shmem_barrier_all();                                                              \
    int rc = shmem_##TN##_##OP##_reduce(SHMEM_TEAM_WORLD, dest, src, n);              \
    st_check c;                                                                       \
    st_begin(&c, "shmem_" #TN "_" #OP "_reduce of %zu elements", n);                  \
    st_expect_i64(&c, "return value", 0, rc);                                         \
    for (size_t k = 0; k < n; ++k) {                                                  \
      T acc = VALUE(0, k);                                                            \
      for (int pe = 1; pe < st.npes; ++pe) {                                          \
        T x = VALUE(pe, k);                                                           \
        acc = (T)(COMBINE);                                                           \
      }                                                                               \
      if (dest[k] != acc) {                                                           \
        char want_text[48], got_text[48];                                             \
        st_fail(&c, "element %zu: expected %s, got %s", k, show_##TN(want_text, acc), \
                show_##TN(got_text, dest[k]));                                        \
      }                                                                               \
    }                                                                                 \
    if (dest[n] != (T)77) st_fail(&c, "the element after dest was overwritten");      \
    for (size_t k = 0; k < n; ++k) {                                                  \
      if (src[k] != VALUE(st.me, k)) {                                                \
        st_fail(&c, "source element %zu changed", k);                                 \
        break;                                                                        \
      }                                                                               \
    }                                                                                 \
    st_end(&c);                                                                       \
    shmem_barrier_all();                                                              \
    shmem_free(dest);                                                                 \
    shmem_free(src);                                                                  \
  }

#define SUM (acc + x)
#define PROD (acc * x)
#define MAX (acc > x ? acc : x)
#define MIN (acc < x ? acc : x)
REDUCTION(int, int, sum, v_int_sum, SUM)
REDUCTION(int, int, prod, v_int_prod, PROD)
REDUCTION(int, int, max, v_int_minmax, MAX)
REDUCTION(int, int, min, v_int_minmax, MIN)
REDUCTION(long, long, sum, v_long_sum, SUM)
REDUCTION(long, long, max, v_long_minmax, MAX)
REDUCTION(long, long, min, v_long_minmax, MIN)
REDUCTION(double, double, sum, v_double_sum, SUM)
REDUCTION(double, double, prod, v_double_prod, PROD)
REDUCTION(double, double, max, v_double_minmax, MAX)
REDUCTION(double, double, min, v_double_minmax, MIN)
REDUCTION(unsigned int, uint, and, v_uint_and, (acc & x))
REDUCTION(unsigned int, uint, or, v_uint_or, (acc | x))
REDUCTION(unsigned int, uint, xor, v_uint_xor, (acc ^ x))
REDUCTION(unsigned long, ulong, and, v_ulong_and, (acc & x))
REDUCTION(unsigned long, ulong, or, v_ulong_or, (acc | x))
REDUCTION(unsigned long, ulong, xor, v_ulong_xor, (acc ^ x))
/* NOLINTEND(bugprone-macro-parentheses) */

/* dest and source may be the same array. */
static void check_reduce_in_place(void) {
  enum { n = 19 };
  long* buf = (long*)st_malloc(n * sizeof(long), "in-place reduce");
  for (size_t k = 0; k < n; ++k) buf[k] = v_long_sum(st.me, k);
  shmem_barrier_all();
  int rc = shmem_long_sum_reduce(SHMEM_TEAM_WORLD, buf, buf, n);
  st_check c;
  st_begin(&c, "shmem_long_sum_reduce in place (dest == source), %d elements", n);
  st_expect_i64(&c, "return value", 0, rc);
  for (size_t k = 0; k < n; ++k) {
    long want = 0;
    for (int pe = 0; pe < st.npes; ++pe) want += v_long_sum(pe, k);
    st_expect_i64(&c, "element", want, buf[k]);
  }
  st_end(&c);
  shmem_barrier_all();
  shmem_free(buf);
}

static void check_reductions(void) {
  static const size_t counts[] = {1, 37, 1000};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; ++i) {
    size_t n = counts[i];
    reduce_int_sum(n);
    reduce_int_prod(n);
    reduce_int_max(n);
    reduce_int_min(n);
    reduce_long_sum(n);
    reduce_long_max(n);
    reduce_long_min(n);
    reduce_double_sum(n);
    reduce_double_prod(n);
    reduce_double_max(n);
    reduce_double_min(n);
    reduce_uint_and(n);
    reduce_uint_or(n);
    reduce_uint_xor(n);
    reduce_ulong_and(n);
    reduce_ulong_or(n);
    reduce_ulong_xor(n);
  }
  check_reduce_in_place();
}

int main(int argc, char** argv) {
  st_args("coll_test", argc, argv);
  shmem_init();
  st_started();
  check_broadcast();
  check_fcollect();
  check_collect();
  check_alltoall();
  check_reductions();
  int status = st_finish();
  shmem_finalize();
  return status;
}
