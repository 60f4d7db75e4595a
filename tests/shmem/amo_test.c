/*
 * Atomics, 32- and 64-bit: contended fetch_inc / fetch_add on one counter on PE 0 and on each
 * PE's own and neighbour's counter (every returned old value distinct, the values a valid
 * serial order, the final value exact, the words beside the counter untouched),
 * compare_swap (an election, a compare-swap increment loop, full-width comparison), swap,
 * fetch, set, the bitwise fetch_and/or/xor and the non-fetching add/inc/or.
 *
 * Old values are gathered with puts onto the PE that owns the counter, which checks them.
 *
 * Options: -K N atomics per PE and counter (default 200).
 */
#include "shmem_test.h"

static int g_k = 200;
static uint64_t* g_gather; /* symmetric: npes x 2K old values */

static uint64_t width_mask(unsigned width) {
  return width == 8 ? ~0ull : 0xffffffffull;
}

/* ---- contended fetching adds ---- */

typedef uint64_t (*amo_fn)(void* counter, uint64_t addend, int pe);

static uint64_t long_finc(void* c, uint64_t a, int pe) {
  (void)a;
  return (uint64_t)shmem_long_atomic_fetch_inc((long*)c, pe);
}
static uint64_t int_fadd(void* c, uint64_t a, int pe) {
  return (uint32_t)shmem_int_atomic_fetch_add((int*)c, (int)a, pe);
}
static uint64_t uint64_finc(void* c, uint64_t a, int pe) {
  (void)a;
  return shmem_uint64_atomic_fetch_inc((uint64_t*)c, pe);
}
static uint64_t uint_fadd(void* c, uint64_t a, int pe) {
  return shmem_uint_atomic_fetch_add((unsigned int*)c, (unsigned int)a, pe);
}
static uint64_t longlong_fadd(void* c, uint64_t a, int pe) {
  return (uint64_t)shmem_longlong_atomic_fetch_add((long long*)c, (long long)a, pe);
}
static uint64_t int32_finc(void* c, uint64_t a, int pe) {
  (void)a;
  return (uint32_t)shmem_int32_atomic_fetch_inc((int32_t*)c, pe);
}

typedef struct amo_case {
  const char* name;
  amo_fn op;
  unsigned width;
  uint64_t init; /* chosen to carry across bit 32 (64-bit) or wrap (32-bit) */
  int inc;       /* addend 1, else PE-dependent */
} amo_case;

static uint64_t addend_of(const amo_case* c, int pe) {
  return c->inc ? 1 : (uint64_t)(pe % 5) + 1;
}

typedef struct old_value {
  uint64_t rel; /* old - init, modulo 2^width */
  uint64_t addend;
  int pe;
} old_value;

static int compare_old(const void* a, const void* b) {
  uint64_t x = ((const old_value*)a)->rel, y = ((const old_value*)b)->rel;
  return (x > y) - (x < y);
}

static uint64_t load_width(const void* p, unsigned width) {
  return width == 8 ? *(const uint64_t*)p : *(const uint32_t*)p;
}

/*
 * Owner side: the old values of `contributors` PEs (slot i from PE pes[i]) sorted must be a
 * chain init, init + a0, init + a0 + a1, ... ending in the counter's final value.
 */
static void check_chain(st_check* c, const amo_case* ac, const unsigned char* area, const int* pes,
                        int contributors) {
  uint64_t mask = width_mask(ac->width);
  size_t total = (size_t)contributors * (size_t)g_k;
  old_value* olds = (old_value*)malloc(total * sizeof(old_value));
  for (int i = 0; i < contributors; ++i) {
    for (int k = 0; k < g_k; ++k) {
      old_value* o = &olds[(size_t)i * g_k + k];
      o->rel = (g_gather[(size_t)i * g_k + k] - ac->init) & mask;
      o->addend = addend_of(ac, pes[i]);
      o->pe = pes[i];
    }
  }
  qsort(olds, total, sizeof(old_value), compare_old);
  uint64_t expect_rel = 0;
  for (size_t j = 0; j < total; ++j) {
    if (j > 0 && olds[j].rel == olds[j - 1].rel) {
      st_fail(c, "old value %#llx returned twice (to PE %d and PE %d)",
              (unsigned long long)((olds[j].rel + ac->init) & mask), olds[j - 1].pe, olds[j].pe);
      break;
    }
    if (olds[j].rel != expect_rel) {
      st_fail(
          c,
          "old values do not form a serial order: after %zu operations expected %#llx, got %#llx",
          j, (unsigned long long)((expect_rel + ac->init) & mask),
          (unsigned long long)((olds[j].rel + ac->init) & mask));
      break;
    }
    expect_rel = (expect_rel + olds[j].addend) & mask;
  }
  free(olds);
  uint64_t final = load_width(area + ac->width, ac->width);
  st_expect_u64(c, "final value", (ac->init + expect_rel) & mask, final);
  uint64_t guard = 0x5a5a5a5a5a5a5a5aull & mask;
  st_expect_u64(c, "the word before the counter", guard, load_width(area, ac->width));
  st_expect_u64(c, "the word after the counter", guard,
                load_width(area + (size_t)2 * ac->width, ac->width));
}

/*
 * on_pe0: every PE does K ops on PE 0's counter. Otherwise every PE does K on its own counter
 * and K on its right neighbour's (interleaved): each counter has a local and a remote user.
 */
static void run_contended(const amo_case* ac, int on_pe0) {
  unsigned char* area = (unsigned char*)st_malloc(3 * sizeof(uint64_t), "counter");
  uint64_t mask = width_mask(ac->width);
  uint64_t guard = 0x5a5a5a5a5a5a5a5aull & mask;
  memcpy(area, &guard, ac->width);
  memcpy(area + (size_t)2 * ac->width, &guard, ac->width);
  memcpy(area + ac->width, &ac->init, ac->width); /* little-endian: the low bytes */
  uint64_t* mine = (uint64_t*)malloc(2 * (size_t)g_k * sizeof(uint64_t));
  int targets[2] = {on_pe0 ? 0 : st.me, st_right()};
  int ntargets = on_pe0 ? 1 : 2;
  shmem_barrier_all();
  for (int k = 0; k < g_k; ++k) {
    for (int j = 0; j < ntargets; ++j) {
      mine[(size_t)j * g_k + k] = ac->op(area + ac->width, addend_of(ac, st.me), targets[j]);
    }
  }
  for (int j = 0; j < ntargets; ++j) {
    size_t slot = on_pe0 ? (size_t)st.me : (targets[j] == st.me ? 0 : 1);
    shmem_putmem(g_gather + slot * g_k, mine + (size_t)j * g_k, (size_t)g_k * sizeof(uint64_t),
                 targets[j]);
  }
  shmem_barrier_all();
  if (!on_pe0 || st.me == 0) {
    int* pes_all = (int*)malloc((size_t)st.npes * sizeof(int));
    int pes_pair[2] = {st.me, st_left()};
    int contributors = on_pe0 ? st.npes : 2;
    for (int i = 0; i < st.npes; ++i) pes_all[i] = i;
    st_check c;
    if (on_pe0) {
      st_begin(&c, "%s: %d PEs x %d on PE 0", ac->name, st.npes, g_k);
    } else {
      st_begin(&c, "%s: %d by PE %d itself and %d by PE %d on PE %d", ac->name, g_k, st.me, g_k,
               st_left(), st.me);
    }
    check_chain(&c, ac, area, on_pe0 ? pes_all : pes_pair, contributors);
    st_end(&c);
    free(pes_all);
  }
  free(mine);
  shmem_barrier_all();
  shmem_free(area);
}

static void check_contended(void) {
  const amo_case on_pe0[] = {
      {"shmem_long_atomic_fetch_inc", long_finc, 8, (1ull << 32) - 300, 1},
      {"shmem_int_atomic_fetch_add", int_fadd, 4, 1000, 0},
      {"shmem_uint_atomic_fetch_add (wrapping)", uint_fadd, 4, 0xffffff00u, 0},
  };
  const amo_case pairwise[] = {
      {"shmem_uint64_atomic_fetch_inc", uint64_finc, 8, (1ull << 32) - 100, 1},
      {"shmem_longlong_atomic_fetch_add", longlong_fadd, 8, 1ull << 40, 0},
      {"shmem_int32_atomic_fetch_inc", int32_finc, 4, 7, 1},
  };
  for (size_t i = 0; i < sizeof on_pe0 / sizeof on_pe0[0]; ++i) run_contended(&on_pe0[i], 1);
  for (size_t i = 0; i < sizeof pairwise / sizeof pairwise[0]; ++i) {
    run_contended(&pairwise[i], 0);
  }
}

/* ---- non-fetching add / inc ---- */

static void check_add_inc(void) {
  long* counter = (long*)st_malloc(sizeof(long), "add counter");
  int* icounter = (int*)st_malloc(sizeof(int), "inc counter");
  *counter = 0;
  *icounter = 0;
  int n = g_k / 4;
  shmem_barrier_all();
  for (int k = 0; k < n; ++k) {
    shmem_long_atomic_add(counter, st.me + 1, 0);
    shmem_long_atomic_inc(counter, 0);
    shmem_int_atomic_inc(icounter, st_right());
  }
  shmem_barrier_all();
  long sum = 0;
  for (int pe = 0; pe < st.npes; ++pe) sum += pe + 2;
  st_check c;
  st_begin(&c, "shmem_long_atomic_add/inc, shmem_int_atomic_inc (%d each)", n);
  if (st.me == 0) st_expect_i64(&c, "PE 0's counter", sum * n, *counter);
  st_expect_i64(&c, "counter incremented by the left neighbour", n, *icounter);
  st_expect_i64(&c, "shmem_long_atomic_fetch of PE 0's counter", sum * n,
                shmem_long_atomic_fetch(counter, 0));
  st_end(&c);
  shmem_barrier_all();
  shmem_free(icounter);
  shmem_free(counter);
}

/* ---- fetch, set, swap ---- */

static long tag_of(int pe, int round) {
  return 0x100000000L * (round + 1) + 1000L * pe + 17;
}

static void check_fetch_set(void) {
  long* word = (long*)st_malloc(sizeof(long), "set word");
  uint32_t* word32 = (uint32_t*)st_malloc(sizeof(uint32_t), "set word");
  st_check c;
  st_begin(&c, "atomic_set by PE %d, atomic_fetch by PE %d (long, uint32)", st_left(), st_right());
  for (int round = 0; round < 3; ++round) {
    shmem_barrier_all();
    shmem_long_atomic_set(word, tag_of(st.me, round), st_right());
    shmem_uint32_atomic_set(word32, 0xfffff000u + (uint32_t)(st.me * 16 + round), st_right());
    shmem_barrier_all();
    st_expect_i64(&c, "local long after the left neighbour's set", tag_of(st_left(), round), *word);
    st_expect_u64(&c, "local uint32 after the left neighbour's set",
                  0xfffff000u + (uint32_t)(st_left() * 16 + round), *word32);
    st_expect_i64(&c, "shmem_long_atomic_fetch from the right neighbour", tag_of(st.me, round),
                  shmem_long_atomic_fetch(word, st_right()));
    st_expect_u64(&c, "shmem_uint32_atomic_fetch from the right neighbour",
                  0xfffff000u + (uint32_t)(st.me * 16 + round),
                  shmem_uint32_atomic_fetch(word32, st_right()));
  }
  st_end(&c);
  shmem_barrier_all();
  shmem_free(word32);
  shmem_free(word);
}

/* Every PE swaps R distinct values into one word on PE 0: the old values plus the final
 * value are exactly the initial value plus everything swapped in. */
static void check_swap(void) {
  enum { rounds = 5 };
  long* word = (long*)st_malloc(sizeof(long), "swap word");
  int* word32 = (int*)st_malloc(sizeof(int), "swap word");
  *word = -1;
  *word32 = -1;
  shmem_barrier_all();
  uint64_t olds[2 * rounds];
  for (int r = 0; r < rounds; ++r) {
    olds[r] = (uint64_t)shmem_long_atomic_swap(word, tag_of(st.me, r), 0);
    olds[rounds + r] = (uint32_t)shmem_int_atomic_swap(word32, 1000 * r + st.me, 0);
  }
  shmem_putmem(g_gather + (size_t)st.me * 2 * rounds, olds, sizeof olds, 0);
  shmem_barrier_all();
  if (st.me == 0) {
    size_t n = (size_t)st.npes * rounds + 1;
    uint64_t* got = (uint64_t*)malloc(2 * n * sizeof(uint64_t));
    uint64_t* want = got + n;
    st_check c;
    st_begin(&c, "shmem_long_atomic_swap / shmem_int_atomic_swap: %d PEs x %d on PE 0", st.npes,
             rounds);
    for (int width = 8; width >= 4; width -= 4) {
      size_t j = 0;
      for (int pe = 0; pe < st.npes; ++pe) {
        for (int r = 0; r < rounds; ++r) {
          got[j] = g_gather[(size_t)pe * 2 * rounds + (width == 8 ? 0 : rounds) + r];
          want[j++] = width == 8 ? (uint64_t)tag_of(pe, r) : (uint32_t)(1000 * r + pe);
        }
      }
      got[j] = width == 8 ? (uint64_t)*word : (uint32_t)*word32;
      want[j] = width == 8 ? ~0ull : 0xffffffffull;
      qsort(got, n, sizeof(uint64_t), st_compare_u64);
      qsort(want, n, sizeof(uint64_t), st_compare_u64);
      for (size_t i = 0; i < n; ++i) {
        if (got[i] != want[i]) {
          st_fail(&c,
                  "%d-bit: old values + final value differ from the values swapped in: "
                  "sorted element %zu expected %#llx, got %#llx",
                  width * 8, i, (unsigned long long)want[i], (unsigned long long)got[i]);
          break;
        }
      }
    }
    st_end(&c);
    free(got);
  }
  shmem_barrier_all();
  shmem_free(word32);
  shmem_free(word);
}

/* ---- compare-swap ---- */

/* Every PE tries to swap its number into -1 on PE 0: exactly one wins, all agree on it. */
static void check_election(void) {
  long* word = (long*)st_malloc(sizeof(long), "election word");
  *word = -1;
  shmem_barrier_all();
  uint64_t old = (uint64_t)shmem_long_atomic_compare_swap(word, -1, st.me, 0);
  shmem_putmem(g_gather + st.me, &old, sizeof old, 0);
  shmem_barrier_all();
  if (st.me == 0) {
    st_check c;
    st_begin(&c, "shmem_long_atomic_compare_swap election among %d PEs", st.npes);
    long long* olds = (long long*)malloc((size_t)st.npes * sizeof(long long));
    for (int pe = 0; pe < st.npes; ++pe) olds[pe] = (long long)g_gather[pe];
    st_expect_election(&c, olds, st.npes, *word);
    free(olds);
    st_end(&c);
  }
  shmem_barrier_all();
  shmem_free(word);
}

/* A counter incremented only by compare-swap: the successful old values are 0 ... n*M-1. */
static void check_cswap_loop(void) {
  int m = g_k / 4;
  int* counter = (int*)st_malloc(sizeof(int), "cswap counter");
  *counter = 0;
  shmem_barrier_all();
  uint64_t* wins = (uint64_t*)malloc((size_t)m * sizeof(uint64_t));
  for (int k = 0; k < m; ++k) {
    int seen = shmem_int_atomic_fetch(counter, 0);
    for (;;) {
      int old = shmem_int_atomic_compare_swap(counter, seen, seen + 1, 0);
      if (old == seen) break;
      seen = old;
    }
    wins[k] = (uint64_t)seen;
  }
  shmem_putmem(g_gather + (size_t)st.me * m, wins, (size_t)m * sizeof(uint64_t), 0);
  shmem_barrier_all();
  if (st.me == 0) {
    size_t n = (size_t)st.npes * m;
    st_check c;
    st_begin(&c, "shmem_int_atomic_compare_swap increments: %d PEs x %d on PE 0", st.npes, m);
    st_expect_serial_increments(&c, "successful compare-swaps", g_gather, n);
    st_expect_i64(&c, "final value", (long long)n, *counter);
    st_end(&c);
  }
  free(wins);
  shmem_barrier_all();
  shmem_free(counter);
}

/* Compare-swap compares the whole word: a value equal only in its low 32 bits is not equal. */
static void check_cswap_exact(void) {
  int64_t* w64 = (int64_t*)st_malloc(sizeof(int64_t), "cswap word");
  uint32_t* w32 = (uint32_t*)st_malloc(sizeof(uint32_t), "cswap word");
  *w64 = 0x100000005LL;
  *w32 = 0xffffffffu;
  shmem_barrier_all();
  int t = st_right();
  st_check c;
  st_begin(&c, "compare_swap on PE %d: full-width compare, old value returned", t);
  st_expect_i64(&c, "int64 cswap(5 -> 9) on 0x100000005 returns", 0x100000005LL,
                shmem_int64_atomic_compare_swap(w64, 5, 9, t));
  st_expect_i64(&c, "... and leaves", 0x100000005LL, shmem_int64_atomic_fetch(w64, t));
  st_expect_i64(&c, "int64 cswap(0x100000005 -> -2) returns", 0x100000005LL,
                shmem_int64_atomic_compare_swap(w64, 0x100000005LL, -2, t));
  st_expect_i64(&c, "... and stores", -2, shmem_int64_atomic_fetch(w64, t));
  st_expect_u64(&c, "uint32 cswap(0xfffffffe -> 1) returns", 0xffffffffu,
                shmem_uint32_atomic_compare_swap(w32, 0xfffffffeu, 1, t));
  st_expect_u64(&c, "uint32 cswap(0xffffffff -> 0x80000001) returns", 0xffffffffu,
                shmem_uint32_atomic_compare_swap(w32, 0xffffffffu, 0x80000001u, t));
  st_expect_u64(&c, "... and stores", 0x80000001u, shmem_uint32_atomic_fetch(w32, t));
  st_end(&c);
  shmem_barrier_all();
  shmem_free(w32);
  shmem_free(w64);
}

/* ---- bitwise ---- */

static int popcount64(uint64_t x) {
  int n = 0;
  for (; x; x &= x - 1) ++n;
  return n;
}

/*
 * PE i (i < bits) flips bit i of one word on PE 0 with a fetching or/and/xor. Each old value
 * must show the bits flipped before it: sorted by how many, each is a subset of the next,
 * and no PE sees its own bit flipped already.
 */
static void check_bitwise_chain(st_check* c, const char* what, uint64_t init, uint64_t final,
                                int participants) {
  uint64_t all = participants >= 64 ? ~0ull : (1ull << participants) - 1;
  int seen_count[65] = {0};
  for (int pe = 0; pe < participants; ++pe) {
    uint64_t flipped = g_gather[pe] ^ init;
    if (flipped & (1ull << pe)) {
      st_fail(c, "%s: PE %d's old value %#llx already has its own bit %d flipped", what, pe,
              (unsigned long long)g_gather[pe], pe);
    }
    if (flipped & ~all) {
      st_fail(c, "%s: PE %d's old value %#llx changed bits no PE flips", what, pe,
              (unsigned long long)g_gather[pe]);
    }
    int n = popcount64(flipped);
    if (seen_count[n]++) {
      st_fail(c, "%s: two old values with %d bits flipped: no serial order", what, n);
    }
    for (int other = 0; other < participants; ++other) {
      uint64_t f2 = g_gather[other] ^ init;
      if (popcount64(f2) > n && (flipped & ~f2)) {
        st_fail(c, "%s: old values %#llx (PE %d) and %#llx (PE %d) are not nested", what,
                (unsigned long long)g_gather[pe], pe, (unsigned long long)g_gather[other], other);
      }
    }
  }
  st_expect_u64(c, "final value", init ^ all, final);
}

static void check_bitwise(void) {
  uint64_t* w_or = (uint64_t*)st_malloc(sizeof(uint64_t), "or word");
  unsigned int* w_and = (unsigned int*)st_malloc(sizeof(unsigned int), "and word");
  unsigned long* w_xor = (unsigned long*)st_malloc(sizeof(unsigned long), "xor word");
  uint32_t* w_or32 = (uint32_t*)st_malloc(sizeof(uint32_t), "or word");
  const uint64_t or_init = 0x8000000000000000ull;
  const uint64_t and_init = 0xffffffffull;
  const uint64_t xor_init = 0x0f0f0f0f0f0f0f0full;
  *w_or = or_init;
  *w_and = (unsigned int)and_init;
  *w_xor = xor_init;
  *w_or32 = 0x10000000u;
  int p64 = st.npes < 63 ? st.npes : 63; /* or: bit 63 is part of the initial value */
  int p32 = st.npes < 28 ? st.npes : 28;
  shmem_barrier_all();
  uint64_t olds[3] = {0, 0, 0};
  if (st.me < p64) olds[0] = shmem_uint64_atomic_fetch_or(w_or, 1ull << st.me, 0);
  if (st.me < p32) olds[1] = shmem_uint_atomic_fetch_and(w_and, ~(1u << st.me), 0);
  if (st.me < p64) olds[2] = shmem_ulong_atomic_fetch_xor(w_xor, 1ul << st.me, 0);
  if (st.me < p32) shmem_uint32_atomic_or(w_or32, 1u << st.me, st_right());
  const char* names[3] = {"shmem_uint64_atomic_fetch_or", "shmem_uint_atomic_fetch_and",
                          "shmem_ulong_atomic_fetch_xor"};
  const uint64_t inits[3] = {or_init, and_init, xor_init};
  for (int op = 0; op < 3; ++op) {
    shmem_putmem(g_gather + st.me, &olds[op], sizeof(uint64_t), 0);
    shmem_barrier_all();
    if (st.me == 0) {
      st_check c;
      int participants = op == 1 ? p32 : p64;
      st_begin(&c, "%s: %d PEs flip one bit each on PE 0", names[op], participants);
      uint64_t final = op == 0 ? *w_or : op == 1 ? *w_and : *w_xor;
      check_bitwise_chain(&c, names[op], inits[op], final, participants);
      st_end(&c);
    }
    shmem_barrier_all();
  }
  st_check c;
  st_begin(&c, "shmem_uint32_atomic_or from PE %d", st_left());
  uint32_t want = 0x10000000u | (st_left() < p32 ? 1u << st_left() : 0u);
  st_expect_u64(&c, "local word", want, *w_or32);
  st_end(&c);
  shmem_barrier_all();
  shmem_free(w_or32);
  shmem_free(w_xor);
  shmem_free(w_and);
  shmem_free(w_or);
}

int main(int argc, char** argv) {
  argc = st_args("amo_test", argc, argv);
  for (int i = 1; i + 1 < argc; ++i) {
    if (strcmp(argv[i], "-K") == 0) g_k = atoi(argv[++i]);
  }
  if (g_k < 8) g_k = 8; /* check_swap gathers 10 values per PE into 2K slots */
  int provided = -1;
  int rc = shmem_init_thread(SHMEM_THREAD_FUNNELED, &provided);
  st_started();
  st_check c;
  st_begin(&c, "shmem_init_thread(SHMEM_THREAD_FUNNELED)");
  st_expect_i64(&c, "return value", 0, rc);
  if (provided < SHMEM_THREAD_FUNNELED) {
    st_fail(&c, "provided %d, below SHMEM_THREAD_FUNNELED (%d)", provided, SHMEM_THREAD_FUNNELED);
  }
  st_end(&c);
  g_gather = (uint64_t*)st_malloc((size_t)st.npes * 2 * (size_t)g_k * sizeof(uint64_t), "gather");
  check_contended();
  check_add_inc();
  check_fetch_set();
  check_swap();
  check_election();
  check_cswap_loop();
  check_cswap_exact();
  check_bitwise();
  shmem_free(g_gather);
  int status = st_finish();
  shmem_finalize();
  return status;
}
