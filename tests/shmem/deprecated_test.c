/*
 * The deprecated names OpenSHMEM 1.5 still requires, as old programs use them: start_pes
 * (twice: the second call has no effect; no shmem_finalize, the library finalizes at exit),
 * _my_pe, _num_pes, shmalloc, shmemalign, shfree, shmem_int_fadd/finc/cswap/swap,
 * shmem_long_finc/add/inc, the active-set shmem_barrier on the odd and the even PEs,
 * shmem_broadcast32/64 (the root's dest untouched, as the active-set form specifies),
 * shmem_collect32/64, shmem_fcollect32/64 and shmem_int_sum_to_all, shmem_long_max_to_all,
 * shmem_double_sum_to_all, shmem_int_and_to_all with pWrk and pSync (over every PE and over
 * the even PEs).
 */
#include "shmem_test.h"

/* Deprecated on purpose: a library may mark these names deprecated. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

enum { k_incs = 50, k_reduce = 10 };
#define WRK_SIZE                                                       \
  (k_reduce / 2 + 1 > SHMEM_REDUCE_MIN_WRKDATA_SIZE ? k_reduce / 2 + 1 \
                                                    : SHMEM_REDUCE_MIN_WRKDATA_SIZE)

static long g_psync_barrier[SHMEM_BARRIER_SYNC_SIZE];
static long g_psync_bcast[SHMEM_BCAST_SYNC_SIZE];
static long g_psync_collect[SHMEM_COLLECT_SYNC_SIZE];
static long g_psync_reduce[SHMEM_REDUCE_SYNC_SIZE];
static int g_wrk_int[WRK_SIZE];
static long g_wrk_long[WRK_SIZE];
static double g_wrk_double[WRK_SIZE];

static uint64_t g_gather[4096]; /* old values on PE 0 */

static void init_psync(long* psync, int count) {
  for (int i = 0; i < count; ++i) psync[i] = SHMEM_SYNC_VALUE;
}

static void check_setup(void) {
  st_check c;
  st_begin(&c, "start_pes(0) twice, _my_pe, _num_pes");
  st_expect_i64(&c, "_my_pe() vs shmem_my_pe()", shmem_my_pe(), _my_pe());
  st_expect_i64(&c, "_num_pes() vs shmem_n_pes()", shmem_n_pes(), _num_pes());
  st_end(&c);
}

static void check_shmalloc(void) {
  long* block = (long*)shmalloc(16 * sizeof(long));
  long* aligned = (long*)shmemalign(4096, 256);
  st_check c;
  st_begin(&c, "shmalloc / shmemalign(4096) / shfree, with puts from PE %d", st_left());
  if (block == NULL || aligned == NULL) {
    st_fail(&c, "returned NULL: shmalloc %p, shmemalign %p", (void*)block, (void*)aligned);
    st_end(&c);
    shmem_global_exit(1);
  }
  if ((uintptr_t)aligned % 4096 != 0) st_fail(&c, "shmemalign(4096) gave %p", (void*)aligned);
  shmem_barrier_all();
  shmem_long_p(&block[15], 100L + st.me, st_right());
  shmem_long_p(&aligned[31], 200L + st.me, st_right());
  shmem_barrier_all();
  st_expect_i64(&c, "shmalloc'd block", 100L + st_left(), block[15]);
  st_expect_i64(&c, "shmemalign'd block", 200L + st_left(), aligned[31]);
  st_end(&c);
  shmem_barrier_all();
  shfree(aligned);
  shfree(block);
}

/* shmem_int_finc on PE 0: the old values are exactly 0 ... n*K-1. */
static void check_finc(void) {
  static int counter;
  static long counter64;
  counter = 0;
  counter64 = 0;
  shmem_barrier_all();
  uint64_t olds[k_incs];
  for (int k = 0; k < k_incs; ++k) {
    olds[k] = (uint64_t)shmem_int_finc(&counter, 0);
    shmem_long_finc(&counter64, st_right());
  }
  int gather = st.npes * k_incs <= 4096;
  if (gather) shmem_putmem(&g_gather[(size_t)st.me * k_incs], olds, sizeof olds, 0);
  shmem_barrier_all();
  st_check c;
  st_begin(&c, "shmem_int_finc (%d PEs x %d on PE 0), shmem_long_finc", st.npes, k_incs);
  if (st.me == 0) {
    size_t n = (size_t)st.npes * k_incs;
    st_expect_i64(&c, "PE 0's counter", (long long)n, counter);
    if (gather) st_expect_serial_increments(&c, "shmem_int_finc", g_gather, n);
  }
  st_expect_i64(&c, "counter incremented by the left neighbour", k_incs, counter64);
  st_end(&c);
  shmem_barrier_all();
}

static void check_fadd_add_inc(void) {
  static int fadd_counter;
  static long add_counter;
  fadd_counter = 0;
  add_counter = 0;
  shmem_barrier_all();
  int first = shmem_int_fadd(&fadd_counter, st.me + 1, st_right());
  for (int k = 0; k < k_incs; ++k) {
    shmem_long_add(&add_counter, st.me + 1, 0);
    shmem_long_inc(&add_counter, 0);
  }
  shmem_barrier_all();
  long per_round = 0;
  for (int pe = 0; pe < st.npes; ++pe) per_round += pe + 2;
  st_check c;
  st_begin(&c, "shmem_int_fadd, shmem_long_add, shmem_long_inc");
  st_expect_i64(&c, "shmem_int_fadd's old value (only this PE adds there)", 0, first);
  st_expect_i64(&c, "fadd counter after the left neighbour's add", st_left() + 1, fadd_counter);
  if (st.me == 0) st_expect_i64(&c, "PE 0's add/inc counter", per_round * k_incs, add_counter);
  st_end(&c);
  shmem_barrier_all();
}

/* shmem_int_cswap election, then shmem_int_swap: olds + final = initial + all swapped in. */
static void check_cswap_swap(void) {
  static int winner;
  static int slot;
  winner = -1;
  slot = -1;
  shmem_barrier_all();
  uint64_t olds[2];
  olds[0] = (uint64_t)(uint32_t)shmem_int_cswap(&winner, -1, st.me, 0);
  olds[1] = (uint64_t)(uint32_t)shmem_int_swap(&slot, 500 + st.me, 0);
  shmem_putmem(&g_gather[(size_t)2 * st.me], olds, sizeof olds, 0);
  shmem_barrier_all();
  if (st.me == 0) {
    st_check c;
    st_begin(&c, "shmem_int_cswap election, shmem_int_swap chain (%d PEs on PE 0)", st.npes);
    long long* olds_cswap = (long long*)malloc((size_t)st.npes * sizeof(long long));
    for (int pe = 0; pe < st.npes; ++pe) {
      olds_cswap[pe] = (int)(uint32_t)g_gather[(size_t)2 * pe];
    }
    st_expect_election(&c, olds_cswap, st.npes, winner);
    free(olds_cswap);
    /* Every value 500 + pe and the initial -1 appear exactly once among olds + final. */
    int* seen = (int*)calloc((size_t)st.npes + 1, sizeof(int));
    for (int pe = 0; pe <= st.npes; ++pe) {
      int v = pe < st.npes ? (int)(uint32_t)g_gather[(size_t)2 * pe + 1] : slot;
      int index = v == -1 ? st.npes : v - 500;
      if (index < 0 || index > st.npes || seen[index]++) {
        st_fail(&c, "swap: value %d is unexpected or seen twice", v);
      }
    }
    free(seen);
    st_end(&c);
  }
  shmem_barrier_all();
}

/* Even PEs and odd PEs each synchronise with the active-set barrier (stride 2). */
static void check_active_set_barrier(void) {
  enum { rounds = 5 };
  static long slots[1024];
  int start = st.me % 2;
  int size = (st.npes - start + 1) / 2;
  st_check c;
  st_begin(&c, "shmem_barrier on the %s PEs (start %d, log stride 1, size %d), %d rounds",
           start ? "odd" : "even", start, size, rounds);
  shmem_barrier_all();
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < size && i < 1024; ++i) {
      shmem_long_p(&slots[st.me / 2], 1000L * r + st.me, start + 2 * i);
    }
    shmem_barrier(start, 1, size, g_psync_barrier);
    for (int i = 0; i < size && i < 1024; ++i) {
      int pe = start + 2 * i;
      if (slots[i] != 1000L * r + pe) {
        st_fail(&c, "round %d: PE %d's put: expected %ld, got %ld", r, pe, 1000L * r + pe,
                slots[i]);
      }
    }
    shmem_barrier(start, 1, size, g_psync_barrier);
  }
  st_end(&c);
  shmem_barrier_all();
}

static void check_broadcast(void) {
  static long dest64[5];
  static long src64[5];
  static int32_t dest32[7];
  static int32_t src32[7];
  int root = 1 % st.npes;
  for (int k = 0; k < 5; ++k) {
    src64[k] = 0x100000000L * (st.me + 1) + k;
    dest64[k] = -1;
  }
  for (int k = 0; k < 7; ++k) {
    src32[k] = -(st.me * 10 + k);
    dest32[k] = 99;
  }
  shmem_barrier_all();
  shmem_broadcast64(dest64, src64, 5, root, 0, 0, st.npes, g_psync_bcast);
  shmem_barrier_all();
  int start = st.me % 2;
  int size = (st.npes - start + 1) / 2;
  /* The odd (or even) PEs, root index 0 of the set: its first PE. */
  shmem_broadcast32(dest32, src32, 7, 0, start, 1, size, g_psync_bcast);
  shmem_barrier_all();
  st_check c;
  st_begin(&c, "shmem_broadcast64 (root PE %d) and shmem_broadcast32 (root PE %d, stride 2)", root,
           start);
  for (int k = 0; k < 5; ++k) {
    long want = st.me == root ? -1 : 0x100000000L * (root + 1) + k;
    st_expect_i64(&c, st.me == root ? "root's dest64 (not written)" : "dest64", want, dest64[k]);
  }
  for (int k = 0; k < 7; ++k) {
    int32_t want = st.me == start ? 99 : -(start * 10 + k);
    st_expect_i64(&c, st.me == start ? "root's dest32 (not written)" : "dest32", want, dest32[k]);
  }
  st_end(&c);
}

/* collect: PE i gives i % 3 + 1 elements; fcollect: 3 each. */
static void check_collect(void) {
  static int64_t dest64[3 * 1024];
  static int32_t dest32[3 * 1024];
  static int64_t fdest64[3 * 1024];
  static int32_t fdest32[3 * 1024];
  static int64_t src64[3];
  static int32_t src32[3];
  int mine = st.me % 3 + 1;
  for (int k = 0; k < 3; ++k) {
    src64[k] = 0x7000000000L + st.me * 10L + k;
    src32[k] = -(st.me * 10 + k);
  }
  if (st.npes > 1024) return; /* the static arrays hold 1024 PEs' elements */
  shmem_barrier_all();
  shmem_collect64(dest64, src64, (size_t)mine, 0, 0, st.npes, g_psync_collect);
  shmem_barrier_all();
  shmem_collect32(dest32, src32, (size_t)mine, 0, 0, st.npes, g_psync_collect);
  shmem_barrier_all();
  shmem_fcollect64(fdest64, src64, 3, 0, 0, st.npes, g_psync_collect);
  shmem_barrier_all();
  shmem_fcollect32(fdest32, src32, 3, 0, 0, st.npes, g_psync_collect);
  shmem_barrier_all();
  st_check c;
  st_begin(&c, "shmem_collect64/32 (i %% 3 + 1 elements from PE i), shmem_fcollect64/32");
  int at = 0;
  for (int pe = 0; pe < st.npes; ++pe) {
    for (int k = 0; k < pe % 3 + 1; ++k, ++at) {
      st_expect_i64(&c, "collect64", 0x7000000000L + pe * 10L + k, dest64[at]);
      st_expect_i64(&c, "collect32", -(pe * 10 + k), dest32[at]);
    }
    for (int k = 0; k < 3; ++k) {
      st_expect_i64(&c, "fcollect64", 0x7000000000L + pe * 10L + k, fdest64[pe * 3 + k]);
      st_expect_i64(&c, "fcollect32", -(pe * 10 + k), fdest32[pe * 3 + k]);
    }
  }
  st_end(&c);
}

static void check_to_all(void) {
  static int isrc[k_reduce], idest[k_reduce], iand[k_reduce], ieven[k_reduce];
  static long lsrc[k_reduce], ldest[k_reduce];
  static double dsrc[k_reduce], ddest[k_reduce];
  for (int k = 0; k < k_reduce; ++k) {
    isrc[k] = st.me * 3 - k;
    lsrc[k] = (long)((st.me * 7 + k * 5) % 11) * 0x10000000000L;
    dsrc[k] = st.me * 0.25 + k;
  }
  shmem_barrier_all();
  shmem_int_sum_to_all(idest, isrc, k_reduce, 0, 0, st.npes, g_wrk_int, g_psync_reduce);
  shmem_barrier_all();
  shmem_long_max_to_all(ldest, lsrc, k_reduce, 0, 0, st.npes, g_wrk_long, g_psync_reduce);
  shmem_barrier_all();
  shmem_double_sum_to_all(ddest, dsrc, k_reduce, 0, 0, st.npes, g_wrk_double, g_psync_reduce);
  shmem_barrier_all();
  shmem_int_and_to_all(iand, isrc, k_reduce, 0, 0, st.npes, g_wrk_int, g_psync_reduce);
  shmem_barrier_all();
  int start = st.me % 2;
  int size = (st.npes - start + 1) / 2;
  shmem_int_sum_to_all(ieven, isrc, k_reduce, start, 1, size, g_wrk_int, g_psync_reduce);
  shmem_barrier_all();
  st_check c;
  st_begin(&c, "shmem_int_sum/and, long_max, double_sum _to_all; int_sum_to_all on the %s PEs",
           start ? "odd" : "even");
  for (int k = 0; k < k_reduce; ++k) {
    int sum = 0, and_all = -1, set_sum = 0;
    long max = lsrc[k];
    double dsum = 0;
    for (int pe = 0; pe < st.npes; ++pe) {
      sum += pe * 3 - k;
      and_all &= pe * 3 - k;
      long v = (long)((pe * 7 + k * 5) % 11) * 0x10000000000L;
      if (v > max) max = v;
      dsum += pe * 0.25 + k;
      if (pe % 2 == start) set_sum += pe * 3 - k;
    }
    st_expect_i64(&c, "int_sum_to_all", sum, idest[k]);
    st_expect_i64(&c, "int_and_to_all", and_all, iand[k]);
    st_expect_i64(&c, "long_max_to_all", max, ldest[k]);
    st_expect_double(&c, "double_sum_to_all", dsum, ddest[k]);
    st_expect_i64(&c, "int_sum_to_all over the active set", set_sum, ieven[k]);
  }
  st_end(&c);
}

int main(int argc, char** argv) {
  st_args("deprecated_test", argc, argv);
  init_psync(g_psync_barrier, SHMEM_BARRIER_SYNC_SIZE);
  init_psync(g_psync_bcast, SHMEM_BCAST_SYNC_SIZE);
  init_psync(g_psync_collect, SHMEM_COLLECT_SYNC_SIZE);
  init_psync(g_psync_reduce, SHMEM_REDUCE_SYNC_SIZE);
  start_pes(0);
  start_pes(0); /* no effect */
  st_started();
  shmem_barrier_all(); /* every PE's pSync is initialised */
  check_setup();
  check_shmalloc();
  check_finc();
  check_fadd_add_inc();
  check_cswap_swap();
  check_active_set_barrier();
  check_broadcast();
  check_collect();
  check_to_all();
  shmem_barrier_all();
  /* No shmem_finalize: after start_pes the library finalizes at exit. */
  return st_finish();
}
