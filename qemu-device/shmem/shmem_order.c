/* Ordering and synchronisation: quiet and fence through the GPU's FLUSH register, the
 * dissemination barrier, global exit, and adaptive waiting. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "shmem_core.h"
#include "shmem_layout.h"

/* Flag values carry the job id in their high half: a stale flag of an earlier job on this
 * GPU never satisfies a wait of this one. */
static uint64_t tagged(uint32_t value) {
  return ((uint64_t)ethx_shmem_g_state.job << 32) | value;
}

static volatile uint64_t* local_control_word(uint64_t offset) {
  return (volatile uint64_t*)(ethx_shmem_g_state.hbm + offset);
}

/* Another PE called shmem_global_exit: end with its status. */
static void check_global_exit(void) {
  const uint64_t word = *local_control_word(ETHX_SHMEM_GLOBAL_EXIT_OFFSET);
  if ((word >> 32) == ethx_shmem_g_state.job && (uint32_t)word != 0) {
    _exit((int)(uint32_t)word - 1);
  }
}

void ethx_shmem_waiter_pause(ethx_shmem_waiter* waiter) {
  enum { kSpinRounds = 64, kYieldRounds = 256, kMaxSleepNs = 100000 };
  const unsigned round = waiter->rounds++;
  if (round < kSpinRounds) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    return;
  }
  if ((round & 63u) == 0) check_global_exit();
  if (round < kYieldRounds) {
    sched_yield(); /* other PEs of this VM share its vCPU */
    return;
  }
  const unsigned steps = round - kYieldRounds;
  long sleep_ns = 1000L << (steps < 7 ? steps : 7);
  if (sleep_ns > kMaxSleepNs) sleep_ns = kMaxSleepNs;
  const struct timespec pause = {0, sleep_ns};
  nanosleep(&pause, NULL);
}

void ethx_shmem_quiet_all(void) {
  ethx_shmem_check_device("shmem_quiet", ethx_dev_flush(ethx_shmem_g_state.dev));
}

/* Stores to one PE already arrive in order (go-back-N per pair, docs/reliability.md), but a
 * copy-engine put and a store are issued by different parts of the device: fence is quiet. */
void ethx_shmem_fence_all(void) { ethx_shmem_quiet_all(); }

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
 * alike; two different sets that a PE uses concurrently must not collide (docs/shmem.md). */
static unsigned set_slot(const ethx_shmem_set* set) {
  if (set->start == 0 && set->stride == 1 && set->size == ethx_shmem_g_state.npes) return 0;
  const uint64_t key = ((uint64_t)(uint32_t)set->start * 2654435761u) ^
                       ((uint64_t)(uint32_t)set->stride << 20) ^ (uint64_t)(uint32_t)set->size;
  return 1u + (unsigned)(key % (ETHX_SHMEM_SET_SLOTS - 1));
}

static uint64_t flag_offset(unsigned slot, unsigned round) {
  return ((uint64_t)slot * ETHX_SHMEM_MAX_ROUNDS + round) * sizeof(uint64_t);
}

/* Round r: tell the member 2^r ahead, wait for the member 2^r behind. Flags only grow (the
 * epoch of the set's barriers), so a fast member's next barrier never erases this one. */
void ethx_shmem_barrier_set(const ethx_shmem_set* set, int with_quiet) {
  if (with_quiet) ethx_shmem_quiet_all();
  const int index = ethx_shmem_set_index(set);
  if (index < 0) ethx_shmem_fatal("barrier: PE is not a member of its active set");
  const unsigned slot = set_slot(set);
  const uint32_t epoch = (uint32_t)++ethx_shmem_g_state.set_epoch[slot];
  const uint64_t mine = tagged(epoch);
  unsigned round = 0;
  for (int distance = 1; distance < set->size; distance *= 2, ++round) {
    const int partner = ethx_shmem_set_pe(set, (index + distance) % set->size);
    const uint64_t offset = flag_offset(slot, round);
    *(volatile uint64_t*)ethx_shmem_window_ptr(partner, offset) = mine;
    ethx_shmem_waiter waiter = {0};
    for (;;) {
      const uint64_t seen = *local_control_word(offset);
      if ((seen >> 32) == ethx_shmem_g_state.job && (uint32_t)seen >= epoch) break;
      ethx_shmem_waiter_pause(&waiter);
    }
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

/* Tells every PE (they check while they wait), then leaves. */
void shmem_global_exit(int status) {
  ethx_shmem_require_init("shmem_global_exit");
  const uint64_t word = tagged((uint32_t)status + 1);
  for (int pe = 0; pe < ethx_shmem_g_state.npes; ++pe) {
    if (pe == ethx_shmem_g_state.me) continue;
    *(volatile uint64_t*)ethx_shmem_window_ptr(pe, ETHX_SHMEM_GLOBAL_EXIT_OFFSET) = word;
  }
  ethx_dev_flush(ethx_shmem_g_state.dev);
  exit(status);
}

void* ethx_shmem_scratch(void) { return ethx_shmem_g_state.hbm + ETHX_SHMEM_SCRATCH_OFFSET; }
size_t ethx_shmem_scratch_bytes(void) { return ETHX_SHMEM_SCRATCH_BYTES; }
