/*
 * What shmem.h must refuse: built with -std=c11 -fsyntax-only -Werror once per ETHX_CASE_*,
 * each of which must fail with the error its ctest names (tests/shmem/shmem_tests.cmake).
 * ETHX_CASE_NONE must compile: it proves the failures come from the case, not the file.
 */
#include <shmem.h>

int ethx_shmem_header_rejects(float* f, long long* ll, long* l);
int ethx_shmem_header_rejects(float* f, long long* ll, long* l) {
  int result = 0;
  (void)f;
  (void)ll;
  (void)l;
#if defined(ETHX_CASE_FLOAT_FETCH_ADD)
  /* float is an extended AMO type (fetch, set, swap), not a standard one. */
  result += (int)shmem_atomic_fetch_add(f, 1.0f, 0);
#elif defined(ETHX_CASE_LONGLONG_FETCH_AND)
  /* long long is not a bitwise AMO type. */
  result += (int)shmem_atomic_fetch_and(ll, 1LL, 0);
#elif defined(ETHX_CASE_CONTEXTS)
  /* Contexts are not provided. */
  shmem_ctx_t ctx;
  result += shmem_ctx_create(0, &ctx);
#elif defined(ETHX_CASE_PUT_SIGNAL)
  /* Signals are not provided. */
  shmem_put_signal(l, l, 1, (uint64_t*)l, 1, SHMEM_SIGNAL_SET, 0);
#elif defined(ETHX_CASE_WAIT_UNTIL_ALL)
  shmem_wait_until_all(l, 1, NULL, SHMEM_CMP_EQ, 0);
#elif defined(ETHX_CASE_TEAM_SPLIT)
  shmem_team_t team;
  result += shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 1, NULL, 0, &team);
#elif defined(ETHX_CASE_NONE)
  result += (int)shmem_atomic_fetch_add(l, 1L, 0);
#else
#error "define one ETHX_CASE_*"
#endif
  return result;
}
