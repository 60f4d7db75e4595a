/*
 * Global and static variables are symmetric (OpenSHMEM 1.5, "Symmetric Data Objects"):
 * initialised ones (.data) and zero ones (.bss), file-scope and function-scope, as targets of
 * put/get/p/g and atomics and through shmem_ptr. Also: their initial values survive
 * shmem_init, a value written before shmem_init is kept, a pointer into the data segment stays
 * valid, a plain local store to a global is seen by other PEs after a barrier, and
 * shmem_addr_accessible says yes for them on every PE.
 */
#include "shmem_test.h"

/* .data: initialised, non-zero. */
long g_data[8] = {11, 12, 13, 14, 15, 16, 17, 18};
int g_data_int = -77;
static double s_data_double = 2.5;
static unsigned char s_data_bytes[13] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
struct record {
  int id;
  short parts[3];
  double weight;
};
struct record g_record = {42, {1, 2, 3}, 0.75};
/* A pointer into the data segment, itself in the data segment. */
long* g_data_ptr = &g_data[5];

/* .bss: zero at start. */
long g_bss[8];
static int s_bss_int;
static long s_counter;
static uint32_t s_counter32;
static char s_big_bss[300 * 1024]; /* spans many pages */
static uint64_t s_olds[4096];      /* old values gathered on PE 0 */
unsigned long g_written_before_init;

enum { k_incs = 50 };
#define BEFORE_INIT 0xfeedfacecafeul

static long* function_static(void) {
  static long counts[4] = {100, 200, 300, 400};
  return counts;
}

static void check_initial_values(void) {
  st_check c;
  st_begin(&c, "initial values of .data and .bss globals after shmem_init");
  for (int k = 0; k < 8; ++k) st_expect_i64(&c, "g_data[k]", 11 + k, g_data[k]);
  st_expect_i64(&c, "g_data_int", -77, g_data_int);
  st_expect_double(&c, "s_data_double", 2.5, s_data_double);
  for (int k = 0; k < 13; ++k) st_expect_i64(&c, "s_data_bytes[k]", k + 1, s_data_bytes[k]);
  st_expect_i64(&c, "g_record.id", 42, g_record.id);
  st_expect_i64(&c, "g_record.parts[2]", 3, g_record.parts[2]);
  st_expect_double(&c, "g_record.weight", 0.75, g_record.weight);
  st_expect_i64(&c, "function-scope static counts[3]", 400, function_static()[3]);
  for (int k = 0; k < 8; ++k) st_expect_i64(&c, "g_bss[k]", 0, g_bss[k]);
  st_expect_i64(&c, "s_bss_int", 0, s_bss_int);
  for (size_t k = 0; k < sizeof s_big_bss; k += 4093) {
    st_expect_i64(&c, "s_big_bss[k]", 0, s_big_bss[k]);
  }
  st_expect_u64(&c, "a global written before shmem_init", BEFORE_INIT, g_written_before_init);
  if (g_data_ptr != &g_data[5]) st_fail(&c, "g_data_ptr no longer points at g_data[5]");
  st_expect_i64(&c, "*g_data_ptr", 16, *g_data_ptr);
  *g_data_ptr = 1616; /* through the pointer, read back by name */
  st_expect_i64(&c, "g_data[5] after a store through g_data_ptr", 1616, g_data[5]);
  g_data[5] = 16;
  st_end(&c);
}

/* Puts and p into the right neighbour's globals; checked by it, from the left one. */
static void check_put_into_globals(void) {
  shmem_barrier_all();
  long longs[8];
  for (int k = 0; k < 8; ++k) longs[k] = st.me * 1000L + k;
  unsigned char bytes[13];
  st_fill(bytes, sizeof bytes, (unsigned)st.me + 5);
  struct record rec = {st.me, {(short)st.me, 7, 8}, st.me + 0.125};
  int t = st_right();
  shmem_long_put(g_bss, longs, 8, t);
  shmem_int_p(&s_bss_int, -st.me - 1, t);
  shmem_double_p(&s_data_double, st.me * 2.0 + 0.5, t);
  shmem_putmem(s_data_bytes, bytes, sizeof bytes, t);
  shmem_putmem(&g_record, &rec, sizeof rec, t);
  shmem_putmem(&s_big_bss[sizeof s_big_bss - 100], bytes, sizeof bytes, t);
  shmem_barrier_all();
  int from = st_left();
  st_check c;
  st_begin(&c, "put/p into .bss and .data globals from PE %d", from);
  for (int k = 0; k < 8; ++k) st_expect_i64(&c, "g_bss[k]", from * 1000L + k, g_bss[k]);
  st_expect_i64(&c, "s_bss_int", -from - 1, s_bss_int);
  st_expect_double(&c, "s_data_double", from * 2.0 + 0.5, s_data_double);
  st_expect_pattern(&c, "s_data_bytes", s_data_bytes, sizeof s_data_bytes, (unsigned)from + 5);
  st_expect_pattern(&c, "the end of s_big_bss", &s_big_bss[sizeof s_big_bss - 100], 13,
                    (unsigned)from + 5);
  st_expect_i64(&c, "g_record.id", from, g_record.id);
  st_expect_i64(&c, "g_record.parts[0]", from, g_record.parts[0]);
  st_expect_double(&c, "g_record.weight", from + 0.125, g_record.weight);
  st_end(&c);
}

/* Plain local stores to globals, then a barrier: the right neighbour's get/g sees them. */
static void check_local_stores_seen_remotely(void) {
  shmem_barrier_all();
  for (int k = 0; k < 8; ++k) g_data[k] = st.me * 100L + k;
  g_data_int = 5000 + st.me;
  function_static()[1] = 7000L + st.me;
  st_fill(s_big_bss, 4096, (unsigned)st.me + 77);
  shmem_barrier_all();
  int t = st_right();
  long got[8];
  shmem_long_get(got, g_data, 8, t);
  unsigned char page[4096];
  shmem_getmem(page, s_big_bss, sizeof page, t);
  st_check c;
  st_begin(&c, "local stores to globals on PE %d seen by get/g after a barrier", t);
  for (int k = 0; k < 8; ++k)
    st_expect_i64(&c, "shmem_long_get of g_data[k]", t * 100L + k, got[k]);
  st_expect_i64(&c, "shmem_int_g of g_data_int", 5000 + t, shmem_int_g(&g_data_int, t));
  st_expect_i64(&c, "shmem_long_g of the function static", 7000L + t,
                shmem_long_g(&function_static()[1], t));
  st_expect_pattern(&c, "shmem_getmem of s_big_bss's first page", page, sizeof page,
                    (unsigned)t + 77);
  st_end(&c);
}

/* Atomics on static counters: PE 0's from every PE, each PE's from its left neighbour. */
static void check_atomics_on_statics(void) {
  s_counter = 0;
  s_counter32 = 0xffffffe0u;
  function_static()[0] = 0;
  shmem_barrier_all();
  uint64_t olds[k_incs];
  for (int k = 0; k < k_incs; ++k) {
    olds[k] = (uint64_t)shmem_long_atomic_fetch_inc(&s_counter, 0);
    shmem_uint_atomic_add(&s_counter32, 3, st_right());
    shmem_long_atomic_add(&function_static()[0], st.me + 1, st_right());
  }
  int gather = st.npes * k_incs <= 4096;
  if (gather) shmem_putmem(&s_olds[(size_t)st.me * k_incs], olds, sizeof olds, 0);
  shmem_barrier_all();
  st_check c;
  st_begin(&c, "atomics on static variables (fetch_inc on PE 0, add from PE %d)", st_left());
  if (st.me == 0) {
    st_expect_i64(&c, "PE 0's s_counter", (long long)st.npes * k_incs, s_counter);
    if (gather) {
      st_expect_serial_increments(&c, "fetch_inc", s_olds, (size_t)st.npes * k_incs);
    }
  }
  st_expect_u64(&c, "s_counter32 (wrapped)", (uint32_t)(0xffffffe0u + 3u * k_incs), s_counter32);
  st_expect_i64(&c, "function static counts[0]", (st_left() + 1L) * k_incs, function_static()[0]);
  st_end(&c);
}

/* shmem_ptr to globals: stores through it reach the owner; loads through it read its value. */
static void check_ptr_to_globals(void) {
  shmem_barrier_all();
  g_data_int = 9000 + st.me;
  int t = st_right();
  long* remote_bss = (long*)shmem_ptr(&g_bss[7], t);
  int* remote_int = (int*)shmem_ptr(&g_data_int, t);
  shmem_barrier_all();
  st_check c;
  st_begin(&c, "shmem_ptr to PE %d's globals: store to g_bss[7], load of g_data_int", t);
  if (remote_bss == NULL || remote_int == NULL) {
    if (st.allow_null_ptr) {
      strcat(c.name, " (skipped: NULL, --allow-null-ptr)");
    } else {
      st_fail(&c, "shmem_ptr returned NULL for a global on PE %d", t);
    }
  } else {
    *(volatile long*)remote_bss = 0x5157a71cL + st.me;
    st_expect_i64(&c, "load through the pointer", 9000 + t, *(volatile int*)remote_int);
  }
  shmem_barrier_all();
  if (remote_bss != NULL && remote_int != NULL) {
    st_expect_i64(&c, "own g_bss[7] after the left neighbour's store", 0x5157a71cL + st_left(),
                  g_bss[7]);
  }
  st_end(&c);
}

static void check_accessible(void) {
  st_check c;
  st_begin(&c, "shmem_addr_accessible of globals and statics on every PE");
  for (int pe = 0; pe < st.npes; ++pe) {
    const void* objects[] = {g_data,           &s_data_double,
                             &g_record,        g_bss,
                             &s_counter,       &s_big_bss[sizeof s_big_bss - 1],
                             function_static()};
    for (size_t i = 0; i < sizeof objects / sizeof objects[0]; ++i) {
      if (shmem_addr_accessible(objects[i], pe) != 1) {
        st_fail(&c, "object %zu is not accessible on PE %d", i, pe);
      }
    }
  }
  st_end(&c);
}

int main(int argc, char** argv) {
  st_args("static_test", argc, argv);
  g_written_before_init = BEFORE_INIT;
  shmem_init();
  st_started();
  check_initial_values();
  check_put_into_globals();
  check_local_stores_seen_remotely();
  check_atomics_on_statics();
  check_ptr_to_globals();
  check_accessible();
  shmem_barrier_all();
  int status = st_finish();
  shmem_finalize();
  return status;
}
