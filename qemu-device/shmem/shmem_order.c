/* Ordering and synchronisation: quiet and fence (the backend's), the dissemination barrier,
 * global exit, and adaptive waiting. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "shmem_core.h"
#include "shmem_layout.h"

/* A flag: the job (16 bits), the set's tag (16 bits), the set's barrier epoch (32 bits). A
 * stale flag of an earlier job on this GPU never satisfies a wait of this one, and a flag of
 * another set that hashed onto the same slot is recognised instead of taken for ours. */
static uint64_t flag_value(uint32_t set_tag, uint32_t epoch) {
  return ((uint64_t)(ethx_shmem_g_state.job & 0xffffu) << 48) |
         ((uint64_t)(set_tag & 0xffffu) << 32) | epoch;
}

static uint64_t tagged(uint32_t value) {
  return ((uint64_t)ethx_shmem_g_state.job << 32) | value;
}

static volatile uint64_t* local_control_word(uint64_t offset) {
  return (volatile uint64_t*)(ethx_shmem_g_state.memory + offset);
}

/* Another PE called shmem_global_exit: end with its status. */
static void check_global_exit(void) {
  const uint64_t word = *local_control_word(ETHX_SHMEM_GLOBAL_EXIT_OFFSET);
  if ((word >> 32) == ethx_shmem_g_state.job && (uint32_t)word != 0) {
    _exit((int)(uint32_t)word - 1);
  }
}

static int64_t monotonic_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* Spinning first: the answer is usually one fabric round trip (tens of microseconds) away,
 * and a guest's nanosleep costs 125-250 us under TCG (docs/shmem.md). Yielding next: other PEs
 * of this VM share its one vCPU. Sleeping last, so a long wait leaves the host's cores to the
 * switch and the devices; the sleep is 1 us with 1 us timer slack (shmem_init sets it), which
 * the guest rounds up to its timer's resolution. */
void ethx_shmem_waiter_pause(ethx_shmem_waiter* waiter) {
  enum { kSpinRounds = 64 };
  const unsigned round = waiter->rounds++;
  if (round < kSpinRounds) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    return;
  }
  if ((round & 63u) == 0) check_global_exit();
  const int64_t now_ns = monotonic_ns();
  if (round == kSpinRounds) waiter->yield_until_ns = now_ns + ethx_shmem_g_state.yield_ns;
  if (now_ns < waiter->yield_until_ns) {
    sched_yield();
    return;
  }
  if (waiter->sleep_ns == 0) waiter->sleep_ns = 1000;
  const struct timespec pause = {0, waiter->sleep_ns};
  nanosleep(&pause, NULL);
  waiter->sleep_ns = waiter->sleep_ns * 2 > ethx_shmem_g_state.max_sleep_ns
                         ? ethx_shmem_g_state.max_sleep_ns
                         : waiter->sleep_ns * 2;
}

void ethx_shmem_quiet_all(void) {
  ethx_shmem_g_state.backend->quiet();
}

void ethx_shmem_fence_all(void) {
  ethx_shmem_g_state.backend->fence();
}

void shmem_quiet(void) {
  ethx_shmem_require_init("shmem_quiet");
  ethx_shmem_quiet_all();
}

void shmem_fence(void) {
  ethx_shmem_require_init("shmem_fence");
  ethx_shmem_fence_all();
}

ethx_shmem_set ethx_shmem_world(void) {
  const ethx_shmem_set world = {0, 1, ethx_shmem_g_state.npes};
  return world;
}

int ethx_shmem_set_index(const ethx_shmem_set* set) {
  const int distance = ethx_shmem_g_state.me - set->start;
  if (distance < 0 || distance % set->stride != 0 || distance / set->stride >= set->size) {
    return -1;
  }
  return distance / set->stride;
}

int ethx_shmem_set_pe(const ethx_shmem_set* set, int index) {
  return set->start + index * set->stride;
}

/* Active sets share ETHX_SHMEM_SET_SLOTS flag rows, chosen by a hash every member computes
 * alike (the world has row 0); the set's 16-bit tag in each flag tells sets on one row apart. */
static uint32_t set_key(const ethx_shmem_set* set) {
  uint32_t key = 2166136261u; /* FNV-1a over the three numbers */
  const int fields[3] = {set->start, set->stride, set->size};
  for (int i = 0; i < 3; ++i) key = (key ^ (uint32_t)fields[i]) * 16777619u;
  return key;
}

static unsigned set_slot(const ethx_shmem_set* set, uint32_t key) {
  if (set->start == 0 && set->stride == 1 && set->size == ethx_shmem_g_state.npes) return 0;
  return 1u + key % (ETHX_SHMEM_SET_SLOTS - 1);
}

/* The next barrier epoch of this set: counted per set, as every member counts it. */
static uint32_t next_epoch(const ethx_shmem_set* set) {
  ethx_shmem_state* state = &ethx_shmem_g_state;
  for (unsigned i = 0; i < state->set_count; ++i) {
    if (state->sets[i].start == set->start && state->sets[i].stride == set->stride &&
        state->sets[i].size == set->size) {
      return ++state->sets[i].epoch;
    }
  }
  if (state->set_count == ETHX_SHMEM_MAX_SETS) {
    ethx_shmem_fatal("more than %u different active sets synchronised", ETHX_SHMEM_MAX_SETS);
  }
  state->sets[state->set_count].start = set->start;
  state->sets[state->set_count].stride = set->stride;
  state->sets[state->set_count].size = set->size;
  state->sets[state->set_count].epoch = 1;
  return state->sets[state->set_count++].epoch;
}

static uint64_t flag_offset(unsigned slot, unsigned round) {
  return ((uint64_t)slot * ETHX_SHMEM_MAX_ROUNDS + round) * sizeof(uint64_t);
}

/* Waits until the flag at `offset` carries this set's `epoch` or a later one. A flag another
 * set left on this row (it used the row before) is not ours: wait on. Two sets on one row
 * synchronising at the same time could overwrite each other's flags: the hash makes that
 * unlikely, and docs/shmem.md says so. */
static void wait_for_flag(uint64_t offset, uint32_t set_tag, uint32_t epoch) {
  const uint64_t ours = flag_value(set_tag, 0) >> 32;
  ethx_shmem_waiter waiter = {0};
  for (;;) {
    const uint64_t seen = *local_control_word(offset);
    if ((seen >> 32) == ours && (uint32_t)seen >= epoch) return;
    ethx_shmem_waiter_pause(&waiter);
  }
}

/* Round r: tell the member 2^r ahead, wait for the member 2^r behind. A set's flags only grow
 * (its epoch), so a fast member's next barrier never erases this one. */
void ethx_shmem_barrier_set(const ethx_shmem_set* set, int with_quiet) {
  if (with_quiet) ethx_shmem_quiet_all();
  const int index = ethx_shmem_set_index(set);
  if (index < 0) ethx_shmem_fatal("barrier: PE is not a member of its active set");
  const uint32_t key = set_key(set);
  const unsigned slot = set_slot(set, key);
  const uint32_t tag = key & 0xffffu;
  const uint32_t epoch = next_epoch(set);
  unsigned round = 0;
  for (int distance = 1; distance < set->size; distance *= 2, ++round) {
    const int partner = ethx_shmem_set_pe(set, (index + distance) % set->size);
    const uint64_t offset = flag_offset(slot, round);
    ethx_shmem_g_state.backend->store_flag(partner, offset, flag_value(tag, epoch));
    wait_for_flag(offset, tag, epoch);
  }
}

void ethx_shmem_world_barrier(int with_quiet) {
  const ethx_shmem_set world = ethx_shmem_world();
  ethx_shmem_barrier_set(&world, with_quiet);
}

void shmem_barrier_all(void) {
  ethx_shmem_require_init("shmem_barrier_all");
  ethx_shmem_world_barrier(1);
}

void shmem_sync_all(void) {
  ethx_shmem_require_init("shmem_sync_all");
  ethx_shmem_world_barrier(0);
}

/* Tells every PE (they check while they wait), then leaves. A PE that is already gone does
 * not stop the others being told: the backend ignores failures once `exiting` is set. */
void shmem_global_exit(int status) {
  ethx_shmem_require_init("shmem_global_exit");
  ethx_shmem_state* state = &ethx_shmem_g_state;
  const uint64_t word = tagged((uint32_t)status + 1);
  state->exiting = 1;
  for (int pe = 0; pe < state->npes; ++pe) {
    if (pe == state->me) continue;
    state->backend->store_flag(pe, ETHX_SHMEM_GLOBAL_EXIT_OFFSET, word);
  }
  state->backend->quiet();
  exit(status);
}

void* ethx_shmem_scratch(void) {
  return ethx_shmem_g_state.memory + ETHX_SHMEM_SCRATCH_OFFSET;
}
size_t ethx_shmem_scratch_bytes(void) {
  return ETHX_SHMEM_SCRATCH_BYTES;
}
