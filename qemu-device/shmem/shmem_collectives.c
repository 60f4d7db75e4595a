/*
 * Collectives that move data: broadcast, collect, fcollect, alltoall, alltoalls; team-based
 * (typed, mem) and deprecated active-set (32, 64). Every PE pushes its part straight into
 * the other PEs' dest with the core's puts (stores or copies through the window), then the
 * set's barrier: one sync before (the previous collective is done with dest and the scratch),
 * one barrier after (quiet, then sync: every put is complete at its target). Pushing, not
 * pulling, because a store is posted while a load waits for its reply.
 *
 * pSync arrays are accepted and not used: the core's barrier has its own symmetric flags,
 * keyed by the set.
 */
#include "shmem_api.h"

/* The X-macros below take types and pieces of names, which cannot be parenthesised. */
/* NOLINTBEGIN(bugprone-macro-parentheses) */

static void ethx_coll_begin(const ethx_shmem_set* set) {
  ethx_shmem_barrier_set(set, 0);
}

static void ethx_coll_end(const ethx_shmem_set* set) {
  ethx_shmem_barrier_set(set, 1);
}

/* The set's index `step` places after `me` (round-robin, so that the PEs do not all write to
 * the same PE at once). */
static int ethx_coll_peer(const ethx_shmem_set* set, int me, int step) {
  return ethx_shmem_set_pe(set, (me + step) % set->size);
}

void ethx_api_broadcast(const ethx_shmem_set* set, void* dest, const void* source, size_t bytes,
                        int root, int update_root, const char* fn) {
  if (root < 0 || root >= set->size) {
    ethx_shmem_fatal("%s: PE_root %d is outside [0, %d)", fn, root, set->size);
  }
  ethx_coll_begin(set);
  int me = ethx_shmem_set_index(set);
  if (me == root && bytes != 0) {
    for (int step = 1; step < set->size; ++step) {
      ethx_shmem_put_bytes(dest, source, bytes, ethx_coll_peer(set, me, step));
    }
    if (update_root && dest != source) {
      ethx_shmem_put_bytes(dest, source, bytes, ethx_shmem_me());
    }
  }
  ethx_coll_end(set);
}

void ethx_api_fcollect(const ethx_shmem_set* set, void* dest, const void* source, size_t bytes) {
  ethx_coll_begin(set);
  int me = ethx_shmem_set_index(set);
  if (bytes != 0) {
    for (int step = 0; step < set->size; ++step) {
      ethx_shmem_put_bytes((char*)dest + (size_t)me * bytes, source, bytes,
                           ethx_coll_peer(set, me, step));
    }
  }
  ethx_coll_end(set);
}

/* The PEs' sizes differ: each first tells every PE its size (in the scratch), then each puts
 * its part at the sum of the sizes before it. */
void ethx_api_collect(const ethx_shmem_set* set, void* dest, const void* source, size_t bytes,
                      const char* fn) {
  /* volatile: the other PEs write it (through the device) between our two barriers. */
  volatile uint64_t* sizes = ethx_shmem_scratch();
  if (ethx_shmem_scratch_bytes() < (size_t)set->size * sizeof(uint64_t)) {
    ethx_shmem_fatal("%s: the collective scratch (%zu bytes) cannot hold %d sizes", fn,
                     ethx_shmem_scratch_bytes(), set->size);
  }
  ethx_coll_begin(set);
  int me = ethx_shmem_set_index(set);
  for (int step = 0; step < set->size; ++step) {
    ethx_shmem_put_value((void*)&sizes[me], bytes, sizeof(uint64_t), ethx_coll_peer(set, me, step));
  }
  ethx_shmem_barrier_set(set, 1);
  size_t offset = 0;
  for (int index = 0; index < me; ++index) {
    offset += (size_t)sizes[index];
  }
  if (bytes != 0) {
    for (int step = 0; step < set->size; ++step) {
      ethx_shmem_put_bytes((char*)dest + offset, source, bytes, ethx_coll_peer(set, me, step));
    }
  }
  ethx_coll_end(set);
}

/* Block j of source goes to block me of dest on the set's PE j. */
void ethx_api_alltoall(const ethx_shmem_set* set, void* dest, const void* source, size_t bytes) {
  ethx_coll_begin(set);
  int me = ethx_shmem_set_index(set);
  if (bytes != 0) {
    for (int step = 0; step < set->size; ++step) {
      int peer = (me + step) % set->size;
      ethx_shmem_put_bytes((char*)dest + (size_t)me * bytes,
                           (const char*)source + (size_t)peer * bytes, bytes,
                           ethx_shmem_set_pe(set, peer));
    }
  }
  ethx_coll_end(set);
}

/* As alltoall, element by element: block j starts at element j * nelems * sst of source and
 * lands at element me * nelems * dst of dest, its elements sst and dst apart. */
void ethx_api_alltoalls(const ethx_shmem_set* set, void* dest, const void* source, ptrdiff_t dst,
                        ptrdiff_t sst, size_t nelems, size_t elem_bytes, const char* fn) {
  if (dst < 1 || sst < 1) {
    ethx_shmem_fatal("%s: strides dst %td and sst %td must be at least 1", fn, dst, sst);
  }
  ethx_coll_begin(set);
  ptrdiff_t block = (ptrdiff_t)nelems * (ptrdiff_t)elem_bytes;
  int me = ethx_shmem_set_index(set);
  for (int step = 0; step < set->size; ++step) {
    int peer = (me + step) % set->size;
    ethx_api_iput((char*)dest + me * block * dst, (const char*)source + peer * block * sst, dst,
                  sst, nelems, elem_bytes, ethx_shmem_set_pe(set, peer), fn);
  }
  ethx_coll_end(set);
}

/* ---- team-based, elements of elem_bytes ---- */
static int ethx_team_broadcast(shmem_team_t team, void* dest, const void* source, size_t nelems,
                               size_t elem_bytes, int root, const char* fn) {
  ethx_shmem_set set = ethx_api_team_set(team, fn);
  ethx_api_broadcast(&set, dest, source, ethx_api_bytes(nelems, elem_bytes, fn), root, 1, fn);
  return 0;
}

static int ethx_team_collect(shmem_team_t team, void* dest, const void* source, size_t nelems,
                             size_t elem_bytes, const char* fn) {
  ethx_shmem_set set = ethx_api_team_set(team, fn);
  ethx_api_collect(&set, dest, source, ethx_api_bytes(nelems, elem_bytes, fn), fn);
  return 0;
}

static int ethx_team_fcollect(shmem_team_t team, void* dest, const void* source, size_t nelems,
                              size_t elem_bytes, const char* fn) {
  ethx_shmem_set set = ethx_api_team_set(team, fn);
  ethx_api_fcollect(&set, dest, source, ethx_api_bytes(nelems, elem_bytes, fn));
  return 0;
}

static int ethx_team_alltoall(shmem_team_t team, void* dest, const void* source, size_t nelems,
                              size_t elem_bytes, const char* fn) {
  ethx_shmem_set set = ethx_api_team_set(team, fn);
  ethx_api_alltoall(&set, dest, source, ethx_api_bytes(nelems, elem_bytes, fn));
  return 0;
}

static int ethx_team_alltoalls(shmem_team_t team, void* dest, const void* source, ptrdiff_t dst,
                               ptrdiff_t sst, size_t nelems, size_t elem_bytes, const char* fn) {
  ethx_shmem_set set = ethx_api_team_set(team, fn);
  (void)ethx_api_bytes(nelems, elem_bytes, fn);
  ethx_api_alltoalls(&set, dest, source, dst, sst, nelems, elem_bytes, fn);
  return 0;
}

#define ETHX_DEFINE_COLLECTIVES(NAME, TYPE, A)                                                    \
  int shmem_##NAME##_broadcast(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems,  \
                               int PE_root) {                                                     \
    ethx_shmem_require_init(__func__);                                                            \
    return ethx_team_broadcast(team, dest, source, nelems, sizeof(TYPE), PE_root, __func__);      \
  }                                                                                               \
  int shmem_##NAME##_collect(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems) {  \
    ethx_shmem_require_init(__func__);                                                            \
    return ethx_team_collect(team, dest, source, nelems, sizeof(TYPE), __func__);                 \
  }                                                                                               \
  int shmem_##NAME##_fcollect(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems) { \
    ethx_shmem_require_init(__func__);                                                            \
    return ethx_team_fcollect(team, dest, source, nelems, sizeof(TYPE), __func__);                \
  }                                                                                               \
  int shmem_##NAME##_alltoall(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems) { \
    ethx_shmem_require_init(__func__);                                                            \
    return ethx_team_alltoall(team, dest, source, nelems, sizeof(TYPE), __func__);                \
  }                                                                                               \
  int shmem_##NAME##_alltoalls(shmem_team_t team, TYPE* dest, const TYPE* source, ptrdiff_t dst,  \
                               ptrdiff_t sst, size_t nelems) {                                    \
    ethx_shmem_require_init(__func__);                                                            \
    return ethx_team_alltoalls(team, dest, source, dst, sst, nelems, sizeof(TYPE), __func__);     \
  }
ETHX_SHMEM_RMA_TYPES(ETHX_DEFINE_COLLECTIVES, _)

int shmem_broadcastmem(shmem_team_t team, void* dest, const void* source, size_t nelems,
                       int PE_root) {
  ethx_shmem_require_init(__func__);
  return ethx_team_broadcast(team, dest, source, nelems, 1, PE_root, __func__);
}

int shmem_collectmem(shmem_team_t team, void* dest, const void* source, size_t nelems) {
  ethx_shmem_require_init(__func__);
  return ethx_team_collect(team, dest, source, nelems, 1, __func__);
}

int shmem_fcollectmem(shmem_team_t team, void* dest, const void* source, size_t nelems) {
  ethx_shmem_require_init(__func__);
  return ethx_team_fcollect(team, dest, source, nelems, 1, __func__);
}

int shmem_alltoallmem(shmem_team_t team, void* dest, const void* source, size_t nelems) {
  ethx_shmem_require_init(__func__);
  return ethx_team_alltoall(team, dest, source, nelems, 1, __func__);
}

int shmem_alltoallsmem(shmem_team_t team, void* dest, const void* source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems) {
  ethx_shmem_require_init(__func__);
  return ethx_team_alltoalls(team, dest, source, dst, sst, nelems, 1, __func__);
}

/* ---- deprecated, active set; broadcast leaves the root's dest alone (1.4 semantics) ---- */
#define ETHX_DEFINE_COLLECTIVES_SIZED(BITS, BYTES, A)                                           \
  void shmem_broadcast##BITS(void* dest, const void* source, size_t nelems, int PE_root,        \
                             int PE_start, int logPE_stride, int PE_size, long* pSync) {        \
    ethx_shmem_require_init(__func__);                                                          \
    (void)pSync;                                                                                \
    ethx_shmem_set set = ethx_api_active_set(PE_start, logPE_stride, PE_size, __func__);        \
    ethx_api_broadcast(&set, dest, source, ethx_api_bytes(nelems, BYTES, __func__), PE_root, 0, \
                       __func__);                                                               \
  }                                                                                             \
  void shmem_collect##BITS(void* dest, const void* source, size_t nelems, int PE_start,         \
                           int logPE_stride, int PE_size, long* pSync) {                        \
    ethx_shmem_require_init(__func__);                                                          \
    (void)pSync;                                                                                \
    ethx_shmem_set set = ethx_api_active_set(PE_start, logPE_stride, PE_size, __func__);        \
    ethx_api_collect(&set, dest, source, ethx_api_bytes(nelems, BYTES, __func__), __func__);    \
  }                                                                                             \
  void shmem_fcollect##BITS(void* dest, const void* source, size_t nelems, int PE_start,        \
                            int logPE_stride, int PE_size, long* pSync) {                       \
    ethx_shmem_require_init(__func__);                                                          \
    (void)pSync;                                                                                \
    ethx_shmem_set set = ethx_api_active_set(PE_start, logPE_stride, PE_size, __func__);        \
    ethx_api_fcollect(&set, dest, source, ethx_api_bytes(nelems, BYTES, __func__));             \
  }                                                                                             \
  void shmem_alltoall##BITS(void* dest, const void* source, size_t nelems, int PE_start,        \
                            int logPE_stride, int PE_size, long* pSync) {                       \
    ethx_shmem_require_init(__func__);                                                          \
    (void)pSync;                                                                                \
    ethx_shmem_set set = ethx_api_active_set(PE_start, logPE_stride, PE_size, __func__);        \
    ethx_api_alltoall(&set, dest, source, ethx_api_bytes(nelems, BYTES, __func__));             \
  }                                                                                             \
  void shmem_alltoalls##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,      \
                             size_t nelems, int PE_start, int logPE_stride, int PE_size,        \
                             long* pSync) {                                                     \
    ethx_shmem_require_init(__func__);                                                          \
    (void)pSync;                                                                                \
    ethx_shmem_set set = ethx_api_active_set(PE_start, logPE_stride, PE_size, __func__);        \
    ethx_api_alltoalls(&set, dest, source, dst, sst, nelems, BYTES, __func__);                  \
  }
ETHX_SHMEM_COLLECTIVE_SIZES(ETHX_DEFINE_COLLECTIVES_SIZED, _)

/* NOLINTEND(bugprone-macro-parentheses) */
