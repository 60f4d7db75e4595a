/* C11 callers of shmem.h's type-generic names (shmem_api_c11_calls.c). */
#ifndef ETHX_SHMEM_API_C11_CALLS_H
#define ETHX_SHMEM_API_C11_CALLS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void ethx_c11_put_long(long* dest, const long* source, size_t nelems, int pe);
void ethx_c11_p_short(short* dest, short value, int pe);
double ethx_c11_g_double(const double* source, int pe);
void ethx_c11_iget_int8(int8_t* dest, const int8_t* source, ptrdiff_t dst, ptrdiff_t sst,
                        size_t nelems, int pe);
unsigned ethx_c11_atomic_fetch_inc_uint(unsigned* dest, int pe);
int64_t ethx_c11_atomic_fetch_xor_int64(int64_t* dest, int64_t value, int pe);
float ethx_c11_atomic_swap_float(float* dest, float value, int pe);
long ethx_c11_fadd_long(long* dest, long value, int pe);
int ethx_c11_test_ushort(unsigned short* ivar, int cmp, unsigned short value);
void ethx_c11_wait_until_long(long* ivar, int cmp, long value);
int ethx_c11_sum_reduce_double(double* dest, const double* source, size_t nreduce);
int ethx_c11_sync_team(void);
void ethx_c11_sync_active_set(int PE_start, int logPE_stride, int PE_size, long* pSync);

#ifdef __cplusplus
}
#endif

#endif /* ETHX_SHMEM_API_C11_CALLS_H */
