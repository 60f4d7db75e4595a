/*
 * C11 callers of shmem.h's type-generic names, for shmem_api_test.cpp (C++ sees only the
 * overloads): each function makes one generic call, and the test checks from the core double's
 * log and the data which typed routine it reached.
 */
#include "shmem_api_c11_calls.h"

#include <shmem.h>

void ethx_c11_put_long(long* dest, const long* source, size_t nelems, int pe) {
  shmem_put(dest, source, nelems, pe);
}

void ethx_c11_p_short(short* dest, short value, int pe) {
  shmem_p(dest, value, pe);
}

double ethx_c11_g_double(const double* source, int pe) {
  return shmem_g(source, pe);
}

void ethx_c11_iget_int8(int8_t* dest, const int8_t* source, ptrdiff_t dst, ptrdiff_t sst,
                        size_t nelems, int pe) {
  shmem_iget(dest, source, dst, sst, nelems, pe);
}

unsigned ethx_c11_atomic_fetch_inc_uint(unsigned* dest, int pe) {
  return shmem_atomic_fetch_inc(dest, pe);
}

int64_t ethx_c11_atomic_fetch_xor_int64(int64_t* dest, int64_t value, int pe) {
  return shmem_atomic_fetch_xor(dest, value, pe);
}

float ethx_c11_atomic_swap_float(float* dest, float value, int pe) {
  return shmem_atomic_swap(dest, value, pe);
}

long ethx_c11_fadd_long(long* dest, long value, int pe) {
  return shmem_fadd(dest, value, pe);
}

int ethx_c11_test_ushort(unsigned short* ivar, int cmp, unsigned short value) {
  return shmem_test(ivar, cmp, value);
}

void ethx_c11_wait_until_long(long* ivar, int cmp, long value) {
  shmem_wait_until(ivar, cmp, value);
}

int ethx_c11_sum_reduce_double(double* dest, const double* source, size_t nreduce) {
  return shmem_sum_reduce(SHMEM_TEAM_WORLD, dest, source, nreduce);
}

int ethx_c11_sync_team(void) {
  return shmem_sync(SHMEM_TEAM_WORLD);
}

void ethx_c11_sync_active_set(int PE_start, int logPE_stride, int PE_size, long* pSync) {
  shmem_sync(PE_start, logPE_stride, PE_size, pSync);
}
