/*
 * Teams and active sets. SHMEM_TEAM_WORLD is the only team (no split); the deprecated
 * active-set routines name their set as (PE_start, logPE_stride, PE_size), which is the core's
 * ethx_shmem_set (start, 1 << logPE_stride, size).
 */
#include "shmem_api.h"

struct ethx_shmem_team {
  int id;
};

/* SHMEM_TEAM_WORLD is its address. */
struct ethx_shmem_team ethx_shmem_team_world = {0};

ethx_shmem_set ethx_api_team_set(shmem_team_t team, const char* fn) {
  if (team == SHMEM_TEAM_INVALID) {
    ethx_shmem_fatal("%s: team is SHMEM_TEAM_INVALID", fn);
  }
  if (team != SHMEM_TEAM_WORLD) {
    ethx_shmem_fatal("%s: team %p is not a team (SHMEM_TEAM_WORLD is the only one)", fn,
                     (void*)team);
  }
  return ethx_shmem_world();
}

ethx_shmem_set ethx_api_active_set(int PE_start, int logPE_stride, int PE_size, const char* fn) {
  int npes = ethx_shmem_npes();
  if (PE_size < 1 || PE_size > npes) {
    ethx_shmem_fatal("%s: PE_size %d is outside [1, %d]", fn, PE_size, npes);
  }
  /* 30: a stride of 1 << 31 is not an int. */
  if (logPE_stride < 0 || logPE_stride > 30) {
    ethx_shmem_fatal("%s: logPE_stride %d is outside [0, 30]", fn, logPE_stride);
  }
  if (PE_start < 0 || PE_start >= npes) {
    ethx_shmem_fatal("%s: PE_start %d is outside [0, %d)", fn, PE_start, npes);
  }
  long long last = PE_start + ((long long)(PE_size - 1) << logPE_stride);
  if (last >= npes) {
    ethx_shmem_fatal(
        "%s: the active set (PE_start %d, logPE_stride %d, PE_size %d) ends at PE "
        "%lld; there are %d PEs",
        fn, PE_start, logPE_stride, PE_size, last, npes);
  }
  ethx_shmem_set set = {PE_start, 1 << logPE_stride, PE_size};
  if (ethx_shmem_set_index(&set) < 0) {
    ethx_shmem_fatal(
        "%s: PE %d is not in the active set (PE_start %d, logPE_stride %d, "
        "PE_size %d): only its members may call it",
        fn, ethx_shmem_me(), PE_start, logPE_stride, PE_size);
  }
  return set;
}

int shmem_team_my_pe(shmem_team_t team) {
  ethx_shmem_require_init(__func__);
  if (team == SHMEM_TEAM_INVALID) {
    return -1; /* the spec's answer */
  }
  ethx_shmem_set set = ethx_api_team_set(team, __func__);
  return ethx_shmem_set_index(&set);
}

int shmem_team_n_pes(shmem_team_t team) {
  ethx_shmem_require_init(__func__);
  if (team == SHMEM_TEAM_INVALID) {
    return -1; /* the spec's answer */
  }
  return ethx_api_team_set(team, __func__).size;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team) {
  ethx_shmem_require_init(__func__);
  if (src_team == SHMEM_TEAM_INVALID || dest_team == SHMEM_TEAM_INVALID) {
    return -1;
  }
  ethx_shmem_set src = ethx_api_team_set(src_team, __func__);
  ethx_shmem_set dest = ethx_api_team_set(dest_team, __func__);
  if (src_pe < 0 || src_pe >= src.size) {
    return -1;
  }
  int pe = ethx_shmem_set_pe(&src, src_pe);
  if (pe < dest.start || (pe - dest.start) % dest.stride != 0 ||
      (pe - dest.start) / dest.stride >= dest.size) {
    return -1;
  }
  return (pe - dest.start) / dest.stride;
}

int shmem_team_sync(shmem_team_t team) {
  ethx_shmem_require_init(__func__);
  ethx_shmem_set set = ethx_api_team_set(team, __func__);
  ethx_shmem_barrier_set(&set, 0);
  return 0;
}
