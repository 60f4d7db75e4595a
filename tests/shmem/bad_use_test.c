/*
 * Misuse of the library, one kind per run (the argument); the harness judges the exit status
 * and stderr (README.md):
 *
 *   malloc-too-big   shmem_malloc/calloc/align of more than SHMEM_SYMMETRIC_SIZE (1 TiB if it
 *                    is not set) must return NULL on every PE, and the heap must still work.
 *                    Exit 0 when it does.
 *   pe-out-of-range  shmem_int_p to PE n_pes,
 *   pe-negative      shmem_int_p to PE -1,
 *   before-init      shmem_my_pe, then shmem_putmem, before shmem_init,
 *   before-init-put  shmem_putmem before shmem_init:
 *                    each must end the program with a non-zero status and a message on
 *                    stderr naming the call. If the call returns, this program says so and
 *                    exits with status 3: "the library accepted the misuse".
 *
 * Status 2: unknown argument.
 */
#include "shmem_test.h"

#include <ctype.h>

enum { k_accepted = 3, k_usage = 2 };

static int x_target; /* a symmetric int */

/* SHMEM_SYMMETRIC_SIZE as the spec writes it: a number, optionally K, M, G or T (powers of
 * 1024). 0 if unset or unreadable. */
static size_t symmetric_size(void) {
  const char* text = getenv("SHMEM_SYMMETRIC_SIZE");
  if (text == NULL) return 0;
  char* end = NULL;
  double value = strtod(text, &end);
  if (end == text || value <= 0) return 0;
  const char* units = "KMGT";
  const char* unit = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
  double scale = 1;
  for (const char* u = units; unit != NULL && u <= unit; ++u) scale *= 1024;
  return (size_t)(value * scale);
}

static int malloc_too_big(void) {
  shmem_init();
  st_started();
  size_t heap = symmetric_size();
  size_t request = heap > 0 ? heap + 1 : (size_t)1 << 40;
  const char* env = getenv("SHMEM_SYMMETRIC_SIZE");
  void* p = shmem_malloc(request);
  void* q = shmem_calloc(request / 8 + 1, 8);
  void* r = shmem_align(4096, request);
  st_check c;
  st_begin(&c, "shmem_malloc/calloc/align(%zu B) beyond the heap (SHMEM_SYMMETRIC_SIZE=%s)",
           request, env ? env : "unset");
  if (p != NULL) st_fail(&c, "shmem_malloc returned %p, expected NULL", p);
  if (q != NULL) st_fail(&c, "shmem_calloc returned %p, expected NULL", q);
  if (r != NULL) st_fail(&c, "shmem_align returned %p, expected NULL", r);
  st_end(&c);
  /* The failed requests took nothing: a small block still works. */
  int* small = (int*)shmem_malloc(64);
  st_begin(&c, "shmem_malloc(64) after the failed requests, put from PE %d", st_left());
  if (small == NULL) {
    st_fail(&c, "returned NULL");
  } else {
    shmem_barrier_all();
    shmem_int_p(&small[15], 4000 + st.me, st_right());
    shmem_barrier_all();
    st_expect_i64(&c, "value", 4000 + st_left(), small[15]);
    shmem_free(small);
  }
  st_end(&c);
  int status = st_finish();
  shmem_finalize();
  return status;
}

/* negative: PE -1, else PE n_pes. */
static int pe_out_of_range(int negative) {
  shmem_init();
  st_started();
  int pe = negative ? -1 : st.npes;
  fprintf(stderr, "bad_use_test PE %d/%d: calling shmem_int_p to PE %d\n", st.me, st.npes, pe);
  shmem_int_p(&x_target, 1, pe);
  shmem_quiet();
  fprintf(stderr,
          "bad_use_test PE %d/%d: FAIL shmem_int_p to PE %d (n_pes %d) returned instead of "
          "ending the program\n",
          st.me, st.npes, pe, st.npes);
  return k_accepted;
}

static int before_init(int with_my_pe) {
  if (with_my_pe) {
    int me = shmem_my_pe();
    fprintf(stderr, "bad_use_test: FAIL shmem_my_pe before shmem_init returned %d\n", me);
  }
  int value = 1;
  shmem_putmem(&x_target, &value, sizeof value, 0);
  fprintf(stderr, "bad_use_test: FAIL shmem_putmem before shmem_init returned\n");
  return k_accepted;
}

int main(int argc, char** argv) {
  argc = st_args("bad_use_test", argc, argv);
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "malloc-too-big") == 0) return malloc_too_big();
  if (strcmp(mode, "pe-out-of-range") == 0) return pe_out_of_range(0);
  if (strcmp(mode, "pe-negative") == 0) return pe_out_of_range(1);
  if (strcmp(mode, "before-init") == 0) return before_init(1);
  if (strcmp(mode, "before-init-put") == 0) return before_init(0);
  fprintf(stderr,
          "usage: bad_use_test MODE\n"
          "  MODE: malloc-too-big | pe-out-of-range | pe-negative | before-init | "
          "before-init-put\n");
  return k_usage;
}
