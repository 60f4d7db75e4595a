/*
 * Compile-only: shmem.h in C99 (-std=c99 -Wall -Wextra -Werror -pedantic), where there are no
 * type-generic interfaces: the typed names, the sized ones and the deprecated functions
 * (shmem_wait_until and shmem_sync are plain functions here); and the deprecated <mpp/shmem.h>.
 * Never run.
 */
#include <mpp/shmem.h>
#include <shmem.h>

#if defined(shmem_put) || defined(shmem_wait_until) || defined(shmem_sync)
#error "the type-generic interfaces are C11 only"
#endif

int ethx_shmem_header_c99_check(int pe);
int ethx_shmem_header_c99_check(int pe) {
  static long psync[SHMEM_REDUCE_SYNC_SIZE];
  static int iwork[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
  static double _Complex zwork[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
  long l[4] = {0};
  int i[4] = {0};
  double _Complex z[4] = {0};
  unsigned short u = 0;
  int errors = 0;
  shmem_long_put(l, l, 4, pe);
  shmem_put64(l, l, 4, pe);
  shmem_putmem(l, l, sizeof l, pe);
  shmem_iget32(i, i, 1, 2, 2, pe);
  l[0] = shmem_long_g(l, pe);
  i[0] = shmem_int_atomic_fetch_inc(i, pe);
  i[1] = shmem_int_finc(i, pe);
  l[1] = shmem_long_swap(l, 3, pe);
  shmem_ushort_wait_until(&u, _SHMEM_CMP_EQ, 0);
  shmem_wait_until(l, SHMEM_CMP_NE, 1);
  shmem_sync(0, 0, shmem_n_pes(), psync);
  shmem_barrier(0, 0, shmem_n_pes(), psync);
  errors += shmem_int_sum_reduce(SHMEM_TEAM_WORLD, i, i, 4);
  errors += shmem_complexd_prod_reduce(SHMEM_TEAM_WORLD, z, z, 4);
  shmem_int_max_to_all(i, i, 4, 0, 0, shmem_n_pes(), iwork, psync);
  shmem_complexd_sum_to_all(z, z, 4, 0, 0, shmem_n_pes(), zwork, psync);
  shmem_broadcast64(l, l, 4, 0, 0, 0, shmem_n_pes(), psync);
  errors += shmem_team_my_pe(SHMEM_TEAM_WORLD) < 0;
  shmem_set_lock(l);
  shmem_clear_lock(l);
  return errors + _my_pe() + _num_pes();
}
