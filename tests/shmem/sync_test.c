/*
 * Ordering and synchronisation:
 * - message passing in a ring: PE i puts data, then shmem_fence (or shmem_quiet), then a flag
 *   to PE i+1, which waits for the flag with shmem_long_wait_until and must never see data
 *   of an earlier message; five ways to send the data and the flag, many messages each;
 * - shmem_barrier_all and shmem_quiet + shmem_sync_all: afterwards every PE sees every other
 *   PE's puts and atomics;
 * - shmem_<T>_test and wait_until with every comparison, signed and unsigned.
 *
 * Options: --iters N messages per way of sending (default 60).
 */
#include "shmem_test.h" /* first: it sets _POSIX_C_SOURCE */

#include <sched.h>

enum { k_longs = 32, k_bytes = 512 };

static int g_iters = 60;

typedef struct mailbox {
  long data[k_longs];
  unsigned char bytes[k_bytes];
  long flag; /* the sequence number of the last message */
  long ack;  /* the last sequence number the right neighbour has read */
} mailbox;

static mailbox* g_box; /* symmetric */

static long value_of(long seq, int sender, int k) {
  return seq * 1000003L + k * 7L + sender;
}
static unsigned seed_of(long seq, int sender) {
  return (unsigned)(seq * 31 + sender);
}

enum method {
  k_put_fence_p,         /* long_put + putmem, fence, long_p */
  k_nbi_fence_set,       /* putmem_nbi, fence, atomic_set */
  k_put_quiet_p,         /* long_put + putmem, quiet, long_p */
  k_p_fence_add,         /* one long_p per element, fence, atomic_add 1 */
  k_ptr_store_fence_set, /* stores through shmem_ptr, fence, atomic_set */
  k_method_count
};

static const char* method_name(int m) {
  static const char* names[k_method_count] = {
      "long_put + putmem, fence, long_p flag", "putmem_nbi, fence, atomic_set flag",
      "long_put + putmem, quiet, long_p flag", "long_p per element, fence, atomic_add flag",
      "stores through shmem_ptr, fence, atomic_set flag"};
  return names[m];
}

/* Sends message `seq` to the right neighbour. */
static void send_message(int method, long seq, long* longs, unsigned char* bytes) {
  int t = st_right();
  for (int k = 0; k < k_longs; ++k) longs[k] = value_of(seq, st.me, k);
  st_fill(bytes, k_bytes, seed_of(seq, st.me));
  switch (method) {
    case k_put_fence_p:
    case k_put_quiet_p:
      shmem_long_put(g_box->data, longs, k_longs, t);
      shmem_putmem(g_box->bytes, bytes, k_bytes, t);
      if (method == k_put_fence_p) shmem_fence();
      if (method == k_put_quiet_p) shmem_quiet();
      shmem_long_p(&g_box->flag, seq, t);
      return;
    case k_nbi_fence_set:
      shmem_putmem_nbi(g_box->data, longs, sizeof g_box->data, t);
      shmem_putmem_nbi(g_box->bytes, bytes, k_bytes, t);
      shmem_fence();
      shmem_long_atomic_set(&g_box->flag, seq, t);
      return;
    case k_p_fence_add:
      for (int k = 0; k < k_longs; ++k) shmem_long_p(&g_box->data[k], longs[k], t);
      shmem_putmem(g_box->bytes, bytes, k_bytes, t);
      shmem_fence();
      shmem_long_atomic_add(&g_box->flag, 1, t); /* the flag holds seq - 1 */
      return;
    default: {
      mailbox* remote = (mailbox*)shmem_ptr(g_box, t); /* checked non-NULL */
      for (int k = 0; k < k_longs; ++k) ((volatile long*)remote->data)[k] = longs[k];
      memcpy(remote->bytes, bytes, k_bytes);
      shmem_fence();
      shmem_long_atomic_set(&g_box->flag, seq, t);
      return;
    }
  }
}

/* Checks message `seq` from the left neighbour, naming data of an older message as stale. */
static void check_message(st_check* c, long seq) {
  int from = st_left();
  if (g_box->flag != seq) {
    st_fail(c, "message %ld: flag expected %ld, got %ld", seq, seq, g_box->flag);
  }
  for (int k = 0; k < k_longs; ++k) {
    long got = g_box->data[k];
    long want = value_of(seq, from, k);
    if (got == want) continue;
    long older = (got - k * 7L - from) / 1000003L;
    if (older < seq && value_of(older, from, k) == got) {
      st_fail(c, "message %ld: stale data: element %d holds message %ld's value %ld", seq, k, older,
              got);
    } else {
      st_fail(c, "message %ld: element %d: expected %ld, got %ld", seq, k, want, got);
    }
    return;
  }
  size_t bad = st_pattern_mismatch(g_box->bytes, k_bytes, seed_of(seq, from));
  if (bad < k_bytes) {
    st_fail(c, "message %ld: byte %zu: expected 0x%02x, got 0x%02x%s", seq, bad,
            st_pattern(seed_of(seq, from), bad), g_box->bytes[bad],
            g_box->bytes[bad] == st_pattern(seed_of(seq - 1, from), bad) ? " (stale)" : "");
  }
}

/* 1 if shmem_ptr gives every PE a pointer to its right neighbour's mailbox (decided
 * together, so that no PE waits for a message its neighbour will not send). */
static int ptr_usable_everywhere(void) {
  int* nulls = (int*)st_malloc(sizeof(int), "null count");
  *nulls = 0;
  shmem_barrier_all();
  if (shmem_ptr(g_box, st_right()) == NULL) shmem_int_atomic_inc(nulls, 0);
  shmem_barrier_all();
  int count = shmem_int_atomic_fetch(nulls, 0);
  shmem_barrier_all();
  shmem_free(nulls);
  return count == 0;
}

static void check_message_passing(void) {
  long longs[k_longs];
  unsigned char bytes[k_bytes];
  long seq = 0;
  for (int m = 0; m < k_method_count; ++m) {
    st_check c;
    st_begin(&c, "message passing to PE %d, %d messages: %s", st_right(), g_iters, method_name(m));
    if (m == k_ptr_store_fence_set && !ptr_usable_everywhere()) {
      if (st.allow_null_ptr) {
        strcat(c.name, " (skipped: shmem_ptr is NULL, --allow-null-ptr)");
      } else {
        st_fail(&c, "shmem_ptr(mailbox, PE) returned NULL on some PE");
      }
      st_end(&c);
      continue;
    }
    shmem_barrier_all();
    for (int it = 0; it < g_iters; ++it) {
      ++seq;
      /* The right neighbour has read the previous message before it is overwritten. */
      shmem_long_wait_until(&g_box->ack, SHMEM_CMP_GE, seq - 1);
      send_message(m, seq, longs, bytes);
      shmem_long_wait_until(&g_box->flag, SHMEM_CMP_GE, seq);
      check_message(&c, seq);
      shmem_long_p(&g_box->ack, seq, st_left());
    }
    st_end(&c);
  }
  shmem_barrier_all();
}

/* After a barrier (or quiet + sync_all) every PE's puts and atomics are visible everywhere. */
static void check_barrier_visibility(int use_sync_all) {
  enum { rounds = 8, block = 256 };
  long* slots = (long*)st_malloc((size_t)st.npes * sizeof(long), "slots");
  unsigned char* blocks = (unsigned char*)st_malloc((size_t)st.npes * block, "blocks");
  long* sum = (long*)st_malloc(sizeof(long), "sum");
  unsigned char mine[block];
  *sum = 0;
  long per_round = 0;
  for (int pe = 0; pe < st.npes; ++pe) per_round += pe + 1;
  st_check c;
  st_begin(&c, "%s: every PE's puts and atomic adds are seen by every PE, %d rounds",
           use_sync_all ? "shmem_quiet + shmem_sync_all" : "shmem_barrier_all", rounds);
  shmem_barrier_all();
  for (int r = 0; r < rounds; ++r) {
    st_fill(mine, block, seed_of(r, st.me) + 7);
    for (int i = 0; i < st.npes; ++i) {
      int pe = (st.me + i) % st.npes;
      shmem_long_p(&slots[st.me], value_of(r, st.me, 0), pe);
      shmem_putmem(blocks + (size_t)st.me * block, mine, block, pe);
      shmem_long_atomic_add(sum, st.me + 1, pe);
    }
    if (use_sync_all) {
      shmem_quiet();
      shmem_sync_all();
    } else {
      shmem_barrier_all();
    }
    for (int pe = 0; pe < st.npes; ++pe) {
      if (slots[pe] != value_of(r, pe, 0)) {
        st_fail(&c, "round %d: PE %d's put: expected %ld, got %ld", r, pe, value_of(r, pe, 0),
                slots[pe]);
      }
      size_t bad = st_pattern_mismatch(blocks + (size_t)pe * block, block, seed_of(r, pe) + 7);
      if (bad < block) st_fail(&c, "round %d: PE %d's putmem: byte %zu differs", r, pe, bad);
    }
    if (*sum != per_round * (r + 1)) {
      st_fail(&c, "round %d: sum of atomic adds: expected %ld, got %ld", r, per_round * (r + 1),
              *sum);
    }
    shmem_barrier_all(); /* everyone has checked before the next round's puts */
  }
  st_end(&c);
  shmem_free(sum);
  shmem_free(blocks);
  shmem_free(slots);
}

/* shmem_<T>_test on local values: every comparison, signed and unsigned. */
static void check_test_local(void) {
  long* l = (long*)st_malloc(sizeof(long), "test ivar");
  int* i = (int*)st_malloc(sizeof(int), "test ivar");
  uint64_t* u = (uint64_t*)st_malloc(sizeof(uint64_t), "test ivar");
  *l = 5;
  *i = -3;
  *u = 0xfffffffffffffff0ull;
  st_check c;
  st_begin(&c, "shmem_long/int/uint64_test: every comparison on local values");
  struct {
    const char* what;
    int got;
    int want;
  } cases[] = {
      {"long 5 EQ 5", shmem_long_test(l, SHMEM_CMP_EQ, 5), 1},
      {"long 5 EQ 4", shmem_long_test(l, SHMEM_CMP_EQ, 4), 0},
      {"long 5 NE 5", shmem_long_test(l, SHMEM_CMP_NE, 5), 0},
      {"long 5 NE 6", shmem_long_test(l, SHMEM_CMP_NE, 6), 1},
      {"long 5 GT 4", shmem_long_test(l, SHMEM_CMP_GT, 4), 1},
      {"long 5 GT 5", shmem_long_test(l, SHMEM_CMP_GT, 5), 0},
      {"long 5 GE 5", shmem_long_test(l, SHMEM_CMP_GE, 5), 1},
      {"long 5 GE 6", shmem_long_test(l, SHMEM_CMP_GE, 6), 0},
      {"long 5 LT 6", shmem_long_test(l, SHMEM_CMP_LT, 6), 1},
      {"long 5 LT 5", shmem_long_test(l, SHMEM_CMP_LT, 5), 0},
      {"long 5 LE 5", shmem_long_test(l, SHMEM_CMP_LE, 5), 1},
      {"long 5 LE 4", shmem_long_test(l, SHMEM_CMP_LE, 4), 0},
      {"int -3 GT -4 (signed)", shmem_int_test(i, SHMEM_CMP_GT, -4), 1},
      {"int -3 LT 0 (signed)", shmem_int_test(i, SHMEM_CMP_LT, 0), 1},
      {"int -3 GE 1 (signed)", shmem_int_test(i, SHMEM_CMP_GE, 1), 0},
      {"uint64 0xfff...f0 GT 5 (unsigned)", shmem_uint64_test(u, SHMEM_CMP_GT, 5), 1},
      {"uint64 0xfff...f0 LT 5 (unsigned)", shmem_uint64_test(u, SHMEM_CMP_LT, 5), 0},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    if ((cases[k].got != 0) != cases[k].want) {
      st_fail(&c, "%s: expected %d, got %d", cases[k].what, cases[k].want, cases[k].got);
    }
  }
  st_end(&c);
  shmem_barrier_all();
  shmem_free(u);
  shmem_free(i);
  shmem_free(l);
}

/* shmem_long_test polls a flag the left neighbour sets; wait_until with each comparison. */
static void check_test_and_wait_remote(void) {
  long* flag = (long*)st_malloc(sizeof(long), "flag");
  int* ivar = (int*)st_malloc(sizeof(int), "ivar");
  *flag = 0;
  *ivar = 0;
  shmem_barrier_all();
  st_check c;
  st_begin(&c, "shmem_long_test / shmem_int_wait_until on values PE %d sets", st_left());
  if (shmem_long_test(flag, SHMEM_CMP_EQ, 1)) st_fail(&c, "test saw the flag before it was set");
  shmem_barrier_all();
  shmem_long_p(flag, 1, st_right());
  long polls = 0;
  while (!shmem_long_test(flag, SHMEM_CMP_EQ, 1)) {
    ++polls;
    sched_yield();
  }
  shmem_barrier_all();
  shmem_int_p(ivar, 10, st_right());
  shmem_int_wait_until(ivar, SHMEM_CMP_NE, 0);
  shmem_int_wait_until(ivar, SHMEM_CMP_GT, 9);
  shmem_int_wait_until(ivar, SHMEM_CMP_GE, 10);
  shmem_int_wait_until(ivar, SHMEM_CMP_EQ, 10);
  st_expect_i64(&c, "value after wait_until(EQ, 10)", 10, *ivar);
  shmem_barrier_all();
  shmem_int_p(ivar, -5, st_right());
  shmem_int_wait_until(ivar, SHMEM_CMP_LT, 0);
  shmem_int_wait_until(ivar, SHMEM_CMP_LE, -5);
  st_expect_i64(&c, "value after wait_until(LT, 0)", -5, *ivar);
  st_end(&c);
  if (!st.quiet)
    printf("sync_test PE %d/%d: (shmem_long_test polled %ld times)\n", st.me, st.npes, polls);
  shmem_barrier_all();
  shmem_free(ivar);
  shmem_free(flag);
}

int main(int argc, char** argv) {
  argc = st_args("sync_test", argc, argv);
  for (int i = 1; i + 1 < argc; ++i) {
    if (strcmp(argv[i], "--iters") == 0) g_iters = atoi(argv[++i]);
  }
  if (g_iters < 1) g_iters = 1;
  shmem_init();
  st_started();
  g_box = (mailbox*)st_malloc(sizeof(mailbox), "mailbox");
  memset(g_box, 0, sizeof *g_box);
  check_message_passing();
  check_barrier_visibility(0);
  check_barrier_visibility(1);
  check_test_local();
  check_test_and_wait_remote();
  shmem_free(g_box);
  int status = st_finish();
  shmem_finalize();
  return status;
}
