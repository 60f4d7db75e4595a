/*
 * shmem_bench: OpenSHMEM microbenchmarks, run with oshrun (every PE runs it, PE 0 measures
 * against one peer while the others wait in a barrier, except for the collective parts):
 *
 *   put / get latency by size (putmem + quiet, getmem), p50 and p99
 *   put / get bandwidth by size (a window of putmem_nbi / getmem_nbi, then quiet)
 *   shmem_long_p (+ quiet, and the issue alone), shmem_long_g latency
 *   a plain 8-byte load through shmem_ptr (the window load), alternated with shmem_long_g so
 *     that long_g_to_window_load_p50 compares them under the same conditions
 *   shmem_long_atomic_fetch_add latency and rate; every PE's fetch-adds on PE 0 at once
 *   shmem_barrier_all latency (every PE), shmem_alltoallmem time by block size (every PE)
 *
 * PE 0 prints one JSON object on stdout (README.md lists the keys); --table prints a table
 * instead, --table --json both (the JSON object last, on one line). The data moved is checked
 * at the end: a mismatch is counted in "mismatches" and makes the exit status 1.
 *
 * Options: --iters N (samples per latency point, default 100), --max-size BYTES (default 1 MiB),
 * --quick (20 samples, 64 KiB), --peer PE (default the last PE), --table, --json.
 */
#include "shmem_test.h"

typedef struct options {
  int iters;
  size_t max_size;
  int quick;
  int peer;
  int table;
  int json;
} options;

typedef struct stats {
  double p50_ns;
  double p99_ns;
  int samples;
} stats;

enum { k_max_points = 16 };

typedef struct series {
  size_t sizes[k_max_points];
  stats latency[k_max_points];
  double gbps[k_max_points];
  int count;
} series;

typedef struct results {
  series put, get, alltoall;
  stats long_p, long_p_issue, long_g, window_load, fetch_add, barrier;
  int have_window_load;
  double fetch_add_rate_mops;
  double fetch_add_all_rate_mops;
  long mismatches;
} results;

static options g_opt = {100, (size_t)1 << 20, 0, -1, 0, 0};
static unsigned char* g_sym; /* max_size bytes, symmetric */
static long* g_counter;      /* symmetric */
static long* g_word;         /* symmetric, read by g and the window load */

static int compare_i64(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

static stats summarize(int64_t* samples, int n) {
  qsort(samples, (size_t)n, sizeof(int64_t), compare_i64);
  int p50 = (n - 1) * 50 / 100; /* nearest rank */
  int p99 = (n - 1) * 99 / 100;
  stats s = {(double)samples[p50], (double)samples[p99], n};
  return s;
}

/* Fewer samples for large transfers: the same bytes as `iters` samples of 4 KiB, at least 5. */
static int samples_for(size_t size) {
  long n = size <= 4096 ? g_opt.iters : (long)((size_t)g_opt.iters * 4096 / size);
  return n < 5 ? 5 : (int)n;
}

/* ---- PE 0 against the peer ---- */

/* A latency point ends early, after 3 samples at least, once it has taken this long: a slow
 * path (a large get made of window loads) must not stretch the run to minutes. */
static int64_t point_budget_ns(void) {
  return g_opt.quick ? 500000000 : 2000000000;
}

static stats rma_latency(size_t size, int is_put, unsigned char* local) {
  int n = samples_for(size);
  int64_t* t = (int64_t*)malloc((size_t)n * sizeof(int64_t));
  int64_t began = st_now_ns();
  for (int i = -2; i < n; ++i) { /* two warm-up rounds */
    if (i >= 3 && st_now_ns() - began > point_budget_ns()) {
      n = i;
      break;
    }
    int64_t start = st_now_ns();
    if (is_put) {
      shmem_putmem(g_sym, local, size, g_opt.peer);
      shmem_quiet();
    } else {
      shmem_getmem(local, g_sym, size, g_opt.peer);
    }
    if (i >= 0) t[i] = st_now_ns() - start;
  }
  stats s = summarize(t, n);
  free(t);
  return s;
}

/* A window of nonblocking transfers of `size`, then quiet; the median of three windows. A
 * window is 8 MiB (1 MiB with --quick), 4 ... 4096 transfers, and no more than a tenth of the
 * point's time budget at the measured latency. */
static double rma_bandwidth_gbps(size_t size, int is_put, unsigned char* local,
                                 const stats* latency) {
  size_t window_bytes = g_opt.quick ? (size_t)1 << 20 : (size_t)8 << 20;
  size_t count = window_bytes / size;
  double affordable = (double)point_budget_ns() / 10 / (latency->p50_ns > 1 ? latency->p50_ns : 1);
  if ((double)count > affordable) count = (size_t)affordable;
  if (count < 4) count = 4;
  if (count > 4096) count = 4096;
  double rates[3];
  for (int rep = 0; rep < 3; ++rep) {
    int64_t start = st_now_ns();
    for (size_t i = 0; i < count; ++i) {
      if (is_put) {
        shmem_putmem_nbi(g_sym, local, size, g_opt.peer);
      } else {
        shmem_getmem_nbi(local, g_sym, size, g_opt.peer);
      }
    }
    shmem_quiet();
    int64_t elapsed = st_now_ns() - start;
    rates[rep] = (double)(count * size) * 8.0 / (double)(elapsed > 0 ? elapsed : 1);
  }
  double lo = rates[0] < rates[1] ? rates[0] : rates[1];
  double hi = rates[0] < rates[1] ? rates[1] : rates[0];
  return rates[2] < lo ? lo : rates[2] > hi ? hi : rates[2];
}

/* The transfer sizes, 8 B ... 1 MiB, up to --max-size: the same list on every PE. */
static const size_t k_sizes[] = {8, 64, 512, 4096, 32768, 65536, 262144, 1048576};
static int size_count(void) {
  int n = 0;
  while (n < (int)(sizeof k_sizes / sizeof k_sizes[0]) && k_sizes[n] <= g_opt.max_size) ++n;
  return n;
}

static void measure_rma(results* r, unsigned char* local) {
  r->put.count = r->get.count = size_count();
  for (int i = 0; i < r->put.count; ++i) {
    size_t size = k_sizes[i];
    r->put.sizes[i] = r->get.sizes[i] = size;
    st_fill(local, size, 1);
    r->put.latency[i] = rma_latency(size, 1, local);
    r->get.latency[i] = rma_latency(size, 0, local);
    r->put.gbps[i] = rma_bandwidth_gbps(size, 1, local, &r->put.latency[i]);
    r->get.gbps[i] = rma_bandwidth_gbps(size, 0, local, &r->get.latency[i]);
  }
}

static void measure_p_g(results* r) {
  int n = g_opt.iters * 2;
  int64_t* t = (int64_t*)malloc(3 * (size_t)n * sizeof(int64_t));
  int64_t *quiet = t, *issue = t + n, *g = t + (size_t)2 * n;
  for (int i = 0; i < n; ++i) {
    int64_t start = st_now_ns();
    shmem_long_p(g_counter, i, g_opt.peer);
    int64_t issued = st_now_ns();
    shmem_quiet();
    quiet[i] = st_now_ns() - start;
    issue[i] = issued - start;
  }
  r->long_p = summarize(quiet, n);
  r->long_p_issue = summarize(issue, n);
  volatile long* window = (volatile long*)shmem_ptr(g_word, g_opt.peer);
  r->have_window_load = window != NULL;
  int64_t* w = quiet; /* reused */
  long sink = 0;
  for (int i = -2; i < n; ++i) { /* alternate: the same conditions for both */
    int64_t start = st_now_ns();
    sink += shmem_long_g(g_word, g_opt.peer);
    int64_t mid = st_now_ns();
    if (window != NULL) sink += *window;
    int64_t end = st_now_ns();
    if (i >= 0) {
      g[i] = mid - start;
      w[i] = end - mid;
    }
  }
  long expect = 0x5eed0000L + g_opt.peer;
  if (sink != expect * (n + 2) * (window != NULL ? 2 : 1)) ++r->mismatches;
  r->long_g = summarize(g, n);
  if (window != NULL) r->window_load = summarize(w, n);
  free(t);
}

static void measure_fetch_add(results* r) {
  int n = g_opt.iters * 2;
  int64_t* t = (int64_t*)malloc((size_t)n * sizeof(int64_t));
  long before = shmem_long_atomic_fetch(g_counter, g_opt.peer);
  int64_t all_start = st_now_ns();
  for (int i = 0; i < n; ++i) {
    int64_t start = st_now_ns();
    long old = shmem_long_atomic_fetch_add(g_counter, 3, g_opt.peer);
    t[i] = st_now_ns() - start;
    if (old != before + 3L * i) ++r->mismatches;
  }
  int64_t elapsed = st_now_ns() - all_start;
  r->fetch_add_rate_mops = n * 1e3 / (double)(elapsed > 0 ? elapsed : 1);
  r->fetch_add = summarize(t, n);
  free(t);
}

/* ---- every PE ---- */

/* Every PE does K fetch-adds on PE 0's counter at once: ops per second over all of them. */
static void measure_fetch_add_all(results* r) {
  int k = g_opt.iters;
  if (st.me == 0) *g_counter = 0;
  shmem_barrier_all();
  int64_t start = st_now_ns();
  for (int i = 0; i < k; ++i) shmem_long_atomic_fetch_add(g_counter, 1, 0);
  shmem_barrier_all();
  int64_t elapsed = st_now_ns() - start;
  if (st.me == 0) {
    r->fetch_add_all_rate_mops = (double)st.npes * k * 1e3 / (double)(elapsed > 0 ? elapsed : 1);
    if (*g_counter != (long)st.npes * k) ++r->mismatches;
  }
}

static void measure_barrier(results* r) {
  int n = g_opt.iters * 2;
  int64_t* t = (int64_t*)malloc((size_t)n * sizeof(int64_t));
  for (int i = 0; i < 3; ++i) shmem_barrier_all();
  for (int i = 0; i < n; ++i) {
    int64_t start = st_now_ns();
    shmem_barrier_all();
    t[i] = st_now_ns() - start;
  }
  r->barrier = summarize(t, n);
  free(t);
}

static void measure_alltoall(results* r) {
  size_t npes = (size_t)st.npes;
  size_t largest = g_opt.max_size / npes < 32768 ? g_opt.max_size / npes : 32768;
  unsigned char* src = (unsigned char*)st_malloc(npes * largest, "alltoall source");
  unsigned char* dest = (unsigned char*)st_malloc(npes * largest, "alltoall dest");
  int n = g_opt.iters / 5 < 5 ? 5 : g_opt.iters / 5;
  int64_t* t = (int64_t*)malloc((size_t)n * sizeof(int64_t));
  for (size_t size = 8; size <= largest && r->alltoall.count < k_max_points; size *= 8) {
    for (size_t pe = 0; pe < npes; ++pe)
      memset(src + pe * size, (int)((size_t)st.me * 16 + pe), size);
    for (int i = -1; i < n; ++i) {
      shmem_barrier_all();
      int64_t start = st_now_ns();
      shmem_alltoallmem(SHMEM_TEAM_WORLD, dest, src, size);
      if (i >= 0) t[i] = st_now_ns() - start;
    }
    for (size_t pe = 0; pe < npes; ++pe) {
      if (dest[pe * size] != (unsigned char)(pe * 16 + (size_t)st.me)) ++r->mismatches;
    }
    int i = r->alltoall.count++;
    r->alltoall.sizes[i] = size;
    r->alltoall.latency[i] = summarize(t, n);
    r->alltoall.gbps[i] = (double)(npes * npes * size) * 8.0 / r->alltoall.latency[i].p50_ns;
  }
  free(t);
  shmem_barrier_all();
  shmem_free(dest);
  shmem_free(src);
}

/* The largest put lands on the peer intact; a get brings back what the peer wrote. */
static void verify_rma(results* r, unsigned char* local) {
  size_t size = k_sizes[size_count() - 1]; /* computed alike on every PE */
  long* bad = (long*)st_malloc(sizeof(long), "mismatch count");
  *bad = 0;
  shmem_barrier_all();
  if (st.me == 0) {
    st_fill(local, size, 3);
    shmem_putmem(g_sym, local, size, g_opt.peer);
  }
  shmem_barrier_all();
  if (st.me == g_opt.peer) {
    if (st_pattern_mismatch(g_sym, size, 3) < size) shmem_long_atomic_inc(bad, 0);
    st_fill(g_sym, size, 2);
  }
  shmem_barrier_all();
  if (st.me == 0) {
    shmem_getmem(local, g_sym, size, g_opt.peer);
    if (st_pattern_mismatch(local, size, 2) < size) ++r->mismatches;
    r->mismatches += *bad;
  }
  shmem_barrier_all();
  shmem_free(bad);
}

/* ---- output ---- */

static void json_stats(const char* key, const stats* s, const char* after) {
  printf("\"%s\": {\"p50\": %.0f, \"p99\": %.0f, \"samples\": %d}%s", key, s->p50_ns, s->p99_ns,
         s->samples, after);
}

static void json_series(const char* latency_key, const char* gbps_key, const series* s) {
  printf("\"%s\": {", latency_key);
  for (int i = 0; i < s->count; ++i) {
    char size[32];
    snprintf(size, sizeof size, "%zu", s->sizes[i]);
    json_stats(size, &s->latency[i], i + 1 < s->count ? ", " : "");
  }
  printf("}, \"%s\": {", gbps_key);
  for (int i = 0; i < s->count; ++i) {
    printf("\"%zu\": %.4f%s", s->sizes[i], s->gbps[i], i + 1 < s->count ? ", " : "");
  }
  printf("}, ");
}

static int log2_ceil(int n) {
  int rounds = 0;
  while ((1 << rounds) < n) ++rounds;
  return rounds;
}

static void print_json(const results* r) {
  char name[SHMEM_MAX_NAME_LEN + 1] = "";
  shmem_info_get_name(name);
  int major = 0, minor = 0;
  shmem_info_get_version(&major, &minor);
  printf("{\"benchmark\": \"shmem_bench\", \"library\": \"%s\", \"openshmem\": \"%d.%d\", ", name,
         major, minor);
  printf("\"npes\": %d, \"peer\": %d, \"iters\": %d, \"max_size_bytes\": %zu, \"quick\": %s, ",
         st.npes, g_opt.peer, g_opt.iters, g_opt.max_size, g_opt.quick ? "true" : "false");
  json_series("put_latency_ns", "put_bandwidth_gbps", &r->put);
  json_series("get_latency_ns", "get_bandwidth_gbps", &r->get);
  json_stats("long_p_latency_ns", &r->long_p, ", ");
  json_stats("long_p_issue_ns", &r->long_p_issue, ", ");
  json_stats("long_g_latency_ns", &r->long_g, ", ");
  if (r->have_window_load) {
    json_stats("window_load_latency_ns", &r->window_load, ", ");
    printf("\"long_g_to_window_load_p50\": %.3f, ", r->long_g.p50_ns / r->window_load.p50_ns);
  } else {
    printf("\"window_load_latency_ns\": null, \"long_g_to_window_load_p50\": null, ");
  }
  json_stats("fetch_add_latency_ns", &r->fetch_add, ", ");
  printf("\"fetch_add_rate_mops\": %.4f, \"fetch_add_all_pes_rate_mops\": %.4f, ",
         r->fetch_add_rate_mops, r->fetch_add_all_rate_mops);
  json_stats("barrier_all_latency_ns", &r->barrier, ", ");
  printf("\"barrier_log2_npes\": %d, ", log2_ceil(st.npes));
  json_series("alltoall_latency_ns", "alltoall_gbps", &r->alltoall);
  printf("\"mismatches\": %ld}\n", r->mismatches);
}

static void table_row(const char* what, const stats* s, const char* extra) {
  printf("%-34s %12.1f %12.1f %8d  %s\n", what, s->p50_ns / 1e3, s->p99_ns / 1e3, s->samples,
         extra);
}

static void table_series(const char* what, const series* s, const char* rate_unit) {
  for (int i = 0; i < s->count; ++i) {
    char label[64], extra[64];
    snprintf(label, sizeof label, "%s %zu B", what, s->sizes[i]);
    snprintf(extra, sizeof extra, "%.4f %s", s->gbps[i], rate_unit);
    table_row(label, &s->latency[i], extra);
  }
}

static void print_table(const results* r) {
  printf("shmem_bench: %d PEs, PE 0 -> PE %d (%d samples per point)\n", st.npes, g_opt.peer,
         g_opt.iters);
  printf("%-34s %12s %12s %8s  %s\n", "", "p50 (us)", "p99 (us)", "samples", "rate");
  table_series("putmem + quiet", &r->put, "Gbit/s (nbi window)");
  table_series("getmem", &r->get, "Gbit/s (nbi window)");
  table_row("shmem_long_p + quiet", &r->long_p, "");
  table_row("shmem_long_p (issue)", &r->long_p_issue, "");
  table_row("shmem_long_g", &r->long_g, "");
  if (r->have_window_load) {
    char ratio[64];
    snprintf(ratio, sizeof ratio, "long_g p50 / window load p50 = %.3f",
             r->long_g.p50_ns / r->window_load.p50_ns);
    table_row("window load (shmem_ptr, 8 B)", &r->window_load, ratio);
  } else {
    printf("%-34s shmem_ptr returned NULL\n", "window load (shmem_ptr, 8 B)");
  }
  char rate[64];
  snprintf(rate, sizeof rate, "%.4f Mops/s; all PEs on PE 0: %.4f Mops/s", r->fetch_add_rate_mops,
           r->fetch_add_all_rate_mops);
  table_row("shmem_long_atomic_fetch_add", &r->fetch_add, rate);
  char rounds[64];
  snprintf(rounds, sizeof rounds, "%d PEs, ceil(log2) = %d", st.npes, log2_ceil(st.npes));
  table_row("shmem_barrier_all", &r->barrier, rounds);
  table_series("shmem_alltoallmem", &r->alltoall, "Gbit/s (all pairs)");
  printf("mismatches: %ld\n", r->mismatches);
}

/* ---- main ---- */

static int parse_options(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    int has_value = i + 1 < argc;
    if (strcmp(a, "--iters") == 0 && has_value) {
      g_opt.iters = atoi(argv[++i]);
    } else if (strcmp(a, "--max-size") == 0 && has_value) {
      g_opt.max_size = (size_t)strtoull(argv[++i], NULL, 0);
    } else if (strcmp(a, "--peer") == 0 && has_value) {
      g_opt.peer = atoi(argv[++i]);
    } else if (strcmp(a, "--quick") == 0) {
      g_opt.quick = 1;
    } else if (strcmp(a, "--table") == 0) {
      g_opt.table = 1;
    } else if (strcmp(a, "--json") == 0) {
      g_opt.json = 1;
    } else {
      fprintf(stderr,
              "shmem_bench: unknown option %s\nusage: shmem_bench [--iters N] [--max-size BYTES] "
              "[--quick] [--peer PE] [--table [--json]]\n",
              a);
      return 0;
    }
  }
  if (g_opt.quick) {
    g_opt.iters = g_opt.iters < 20 ? g_opt.iters : 20;
    g_opt.max_size = g_opt.max_size < 65536 ? g_opt.max_size : 65536;
  }
  if (g_opt.iters < 1) g_opt.iters = 1;
  if (g_opt.max_size < 8) g_opt.max_size = 8;
  return 1;
}

int main(int argc, char** argv) {
  argc = st_args("shmem_bench", argc, argv);
  if (!parse_options(argc, argv)) return 2;
  shmem_init();
  st_started();
  if (g_opt.peer < 0) g_opt.peer = st.npes - 1;
  if (g_opt.peer == 0 || g_opt.peer >= st.npes) {
    if (st.me == 0)
      fprintf(stderr, "shmem_bench: --peer %d: must be 1 ... %d\n", g_opt.peer, st.npes - 1);
    shmem_finalize();
    return 2;
  }
  g_sym = (unsigned char*)st_malloc(g_opt.max_size, "transfer buffer");
  g_counter = (long*)st_malloc(sizeof(long), "counter");
  g_word = (long*)st_malloc(sizeof(long), "word");
  unsigned char* local = (unsigned char*)malloc(g_opt.max_size);
  *g_word = 0x5eed0000L + st.me;
  *g_counter = 0;
  results r;
  memset(&r, 0, sizeof r);
  shmem_barrier_all();
  if (st.me == 0) {
    measure_rma(&r, local);
    measure_p_g(&r);
    measure_fetch_add(&r);
  }
  shmem_barrier_all();
  measure_fetch_add_all(&r);
  measure_barrier(&r);
  measure_alltoall(&r);
  verify_rma(&r, local);
  if (st.me == 0) {
    if (g_opt.table) print_table(&r);
    if (!g_opt.table || g_opt.json) print_json(&r);
    fflush(stdout);
    if (r.mismatches)
      fprintf(stderr, "shmem_bench: %ld mismatches in the data moved\n", r.mismatches);
  }
  int status = st.me == 0 && r.mismatches ? 1 : 0;
  free(local);
  shmem_free(g_word);
  shmem_free(g_counter);
  shmem_free(g_sym);
  shmem_finalize();
  return status;
}
