/* shmem_init and friends: find this PE's GPU, lay out its memory, join the others. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "shmem_core.h"
#include "shmem_layout.h"

ethx_shmem_state ethx_shmem_g_state;

/* Defaults measured with tests/shmem/shmem_bench.c (docs/shmem.md): below these a put is
 * cheaper as posted window stores, a get as window loads. */
enum { kDefaultPutCopyMinBytes = 512, kDefaultGetCopyMinBytes = 64 };
enum { kDefaultYieldNs = 1000000 }; /* docs/shmem.md "Waiting" */
enum { kDefaultMaxSleepNs = 1000000 };

void ethx_shmem_fatal(const char* format, ...) {
  char message[512];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  if (ethx_shmem_g_state.initialized) {
    fprintf(stderr, "ethx-shmem: PE %d: %s\n", ethx_shmem_g_state.me, message);
  } else {
    fprintf(stderr, "ethx-shmem: %s\n", message);
  }
  fflush(NULL);
  _exit(1);
}

int ethx_shmem_initialized(void) {
  return ethx_shmem_g_state.initialized;
}
int ethx_shmem_me(void) {
  return ethx_shmem_g_state.me;
}
int ethx_shmem_npes(void) {
  return ethx_shmem_g_state.npes;
}

void ethx_shmem_require_init(const char* function) {
  if (!ethx_shmem_g_state.initialized) {
    ethx_shmem_fatal("%s called before shmem_init", function);
  }
}

void ethx_shmem_check_pe(int pe, const char* function) {
  if (pe < 0 || pe >= ethx_shmem_g_state.npes) {
    ethx_shmem_fatal("%s: PE %d is out of range (this job has PEs 0-%d)", function, pe,
                     ethx_shmem_g_state.npes - 1);
  }
}

/* A non-negative integer from the environment with an optional K/M/G suffix; `fallback` when
 * unset. Fatal, naming the variable, when it does not parse. */
uint64_t ethx_shmem_env_size(const char* name, uint64_t fallback) {
  const char* text = getenv(name);
  if (text == NULL || *text == '\0') return fallback;
  char* end = NULL;
  errno = 0;
  const unsigned long long value = strtoull(text, &end, 10);
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  if (*end == 'M' || *end == 'm') shift = 20;
  if (*end == 'G' || *end == 'g') shift = 30;
  if (shift != 0) ++end;
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-' ||
      value > (UINT64_MAX >> shift)) {
    ethx_shmem_fatal("%s=%s: not a size (bytes, or a number with K, M or G)", name, text);
  }
  return (uint64_t)value << shift;
}

static int env_int(const char* name, const char* hint) {
  const char* text = getenv(name);
  if (text == NULL || *text == '\0') {
    ethx_shmem_fatal("%s is not set: %s", name, hint);
  }
  char* end = NULL;
  const long value = strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value > INT32_MAX) {
    ethx_shmem_fatal("%s=%s: not a non-negative integer", name, text);
  }
  return (int)value;
}

static const char kLaunchHint[] =
    "start OpenSHMEM programs with `oshrun -np N PROGRAM` (docs/shmem.md)";

void ethx_shmem_plan_heap(const ethx_shmem_state* state, uint64_t limit_bytes,
                          uint64_t default_bytes, const char* what, uint64_t* heap_offset,
                          size_t* heap_bytes) {
  const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  const uint64_t offset = (state->data.offset + state->data.bytes + page - 1) / page * page;
  const uint64_t available = limit_bytes > offset ? limit_bytes - offset : 0;
  const uint64_t wanted = ethx_shmem_env_size(
      "SHMEM_SYMMETRIC_SIZE", default_bytes < available ? default_bytes : available);
  if (wanted > available) {
    ethx_shmem_fatal("SHMEM_SYMMETRIC_SIZE=%" PRIu64 " bytes exceeds what %s holds: %" PRIu64
                     " MiB minus %" PRIu64
                     " KiB for the library and the data segment leaves %" PRIu64 " bytes",
                     wanted, what, limit_bytes >> 20, offset >> 10, available);
  }
  *heap_offset = offset;
  *heap_bytes = (size_t)wanted;
}

/* ETHX_SHMEM_BACKEND: load-store (default) or rdma. */
static const ethx_shmem_backend* choose_backend(void) {
  const char* name = getenv("ETHX_SHMEM_BACKEND");
  if (name == NULL || *name == '\0' || strcmp(name, ethx_shmem_backend_load_store.name) == 0) {
    return &ethx_shmem_backend_load_store;
  }
  if (strcmp(name, ethx_shmem_backend_rdma.name) == 0) return &ethx_shmem_backend_rdma;
  ethx_shmem_fatal("ETHX_SHMEM_BACKEND=%s: not a backend (load-store or rdma)", name);
}

void shmem_init(void) {
  ethx_shmem_state* state = &ethx_shmem_g_state;
  if (state->initialized) return; /* 1.5: later calls have no effect */
  if (state->finalized) ethx_shmem_fatal("shmem_init after shmem_finalize");
  state->me = env_int("ETHX_GPU_ID", kLaunchHint);
  state->npes = env_int("ETHX_SHMEM_NPES", kLaunchHint);
  state->job = (uint32_t)env_int("ETHX_SHMEM_JOB", kLaunchHint);
  if (state->npes < 1 || state->me >= state->npes) {
    ethx_shmem_fatal("PE %d of %d: ETHX_GPU_ID must be below ETHX_SHMEM_NPES", state->me,
                     state->npes);
  }
  state->put_copy_min_bytes =
      ethx_shmem_env_size("ETHX_SHMEM_PUT_COPY_MIN", kDefaultPutCopyMinBytes);
  state->get_copy_min_bytes =
      ethx_shmem_env_size("ETHX_SHMEM_GET_COPY_MIN", kDefaultGetCopyMinBytes);
  state->yield_ns = (int64_t)ethx_shmem_env_size("ETHX_SHMEM_YIELD_NS", kDefaultYieldNs);
  state->max_sleep_ns = (long)ethx_shmem_env_size("ETHX_SHMEM_MAX_SLEEP_NS", kDefaultMaxSleepNs);
  if (state->max_sleep_ns < 1000) state->max_sleep_ns = 1000;
  if (state->max_sleep_ns > 999999999) state->max_sleep_ns = 999999999; /* a timespec's tv_nsec */
  prctl(PR_SET_TIMERSLACK, 1000UL); /* waits sleep 1 us, not 1 us + the default 50 us */
  state->initialized = 1;           /* from here fatal errors name the PE */
  state->thread_level = SHMEM_THREAD_SINGLE;
  state->backend = choose_backend();
  state->backend->init(state);
  /* Nobody writes a PE's globals or heap before that PE has moved or registered them. */
  ethx_shmem_world_barrier(1);
}

int shmem_init_thread(int requested, int* provided) {
  shmem_init();
  /* One thread drives the GPU's command registers: SINGLE and FUNNELED are what we give. */
  const int level = requested >= SHMEM_THREAD_FUNNELED ? SHMEM_THREAD_FUNNELED : requested;
  ethx_shmem_g_state.thread_level = level;
  if (provided != NULL) *provided = level;
  return 0;
}

void shmem_query_thread(int* provided) {
  ethx_shmem_require_init("shmem_query_thread");
  if (provided != NULL) *provided = ethx_shmem_g_state.thread_level;
}

void shmem_finalize(void) {
  ethx_shmem_state* state = &ethx_shmem_g_state;
  if (!state->initialized) return;
  ethx_shmem_world_barrier(1);
  state->backend->finalize(state);
  state->initialized = 0;
  state->finalized = 1;
}

int shmem_my_pe(void) {
  ethx_shmem_require_init("shmem_my_pe");
  return ethx_shmem_g_state.me;
}

int shmem_n_pes(void) {
  ethx_shmem_require_init("shmem_n_pes");
  return ethx_shmem_g_state.npes;
}

void shmem_info_get_version(int* major, int* minor) {
  *major = SHMEM_MAJOR_VERSION;
  *minor = SHMEM_MINOR_VERSION;
}

void shmem_info_get_name(char* name) {
  snprintf(name, SHMEM_MAX_NAME_LEN, "%s", SHMEM_VENDOR_STRING);
}

int shmem_pe_accessible(int pe) {
  ethx_shmem_require_init("shmem_pe_accessible");
  return pe >= 0 && pe < ethx_shmem_g_state.npes;
}

int shmem_addr_accessible(const void* addr, int pe) {
  ethx_shmem_require_init("shmem_addr_accessible");
  return shmem_pe_accessible(pe) && ethx_shmem_is_symmetric(addr, 1);
}
