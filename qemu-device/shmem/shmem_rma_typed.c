/*
 * RMA: shmem_<T>_put/get/p/g/iput/iget and their _nbi forms for the standard RMA types,
 * shmem_put<BITS>/get<BITS>/iput<BITS>/iget<BITS>, shmem_putmem/getmem, all on the core's
 * byte and element calls.
 *
 * The _nbi forms complete before they return (a put has left source, a get has arrived):
 * the spec allows it, and a later shmem_quiet completes the puts at their targets exactly as
 * for the blocking forms.
 */
#include "shmem_api.h"

/* The X-macros below take types and pieces of names, which cannot be parenthesised. */
/* NOLINTBEGIN(bugprone-macro-parentheses) */

void ethx_api_put(void* dest, const void* source, size_t nelems, size_t elem_bytes, int pe,
                  const char* fn) {
  ethx_shmem_check_pe(pe, fn);
  size_t bytes = ethx_api_bytes(nelems, elem_bytes, fn);
  if (bytes != 0) {
    ethx_shmem_put_bytes(dest, source, bytes, pe);
  }
}

void ethx_api_get(void* dest, const void* source, size_t nelems, size_t elem_bytes, int pe,
                  const char* fn) {
  ethx_shmem_check_pe(pe, fn);
  size_t bytes = ethx_api_bytes(nelems, elem_bytes, fn);
  if (bytes != 0) {
    ethx_shmem_get_bytes(dest, source, bytes, pe);
  }
}

/* Elements of up to 8 bytes are one store or load of the window (the core's element calls);
 * long double and 128-bit elements are byte copies. */
static void ethx_rma_put_element(void* dest, const void* value, size_t bytes, int pe) {
  if (bytes <= sizeof(uint64_t)) {
    ethx_shmem_put_value(dest, ethx_api_load_bits(value, bytes), (unsigned)bytes, pe);
  } else {
    ethx_shmem_put_bytes(dest, value, bytes, pe);
  }
}

static void ethx_rma_get_element(void* value, const void* source, size_t bytes, int pe) {
  if (bytes <= sizeof(uint64_t)) {
    ethx_api_store_bits(value, ethx_shmem_get_value(source, (unsigned)bytes, pe), bytes);
  } else {
    ethx_shmem_get_bytes(value, source, bytes, pe);
  }
}

void ethx_api_p(void* dest, const void* value, size_t bytes, int pe, const char* fn) {
  ethx_shmem_check_pe(pe, fn);
  ethx_rma_put_element(dest, value, bytes, pe);
}

void ethx_api_g(void* value, const void* source, size_t bytes, int pe, const char* fn) {
  ethx_shmem_check_pe(pe, fn);
  ethx_rma_get_element(value, source, bytes, pe);
}

/* Byte offset of element i at a stride of `stride` elements. */
static ptrdiff_t ethx_rma_offset(size_t i, ptrdiff_t stride, size_t elem_bytes) {
  return (ptrdiff_t)i * stride * (ptrdiff_t)elem_bytes;
}

void ethx_api_iput(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                   size_t elem_bytes, int pe, const char* fn) {
  ethx_shmem_check_pe(pe, fn);
  if (dst == 1 && sst == 1) {
    ethx_api_put(dest, source, nelems, elem_bytes, pe, fn);
    return;
  }
  for (size_t i = 0; i < nelems; ++i) {
    ethx_rma_put_element((char*)dest + ethx_rma_offset(i, dst, elem_bytes),
                         (const char*)source + ethx_rma_offset(i, sst, elem_bytes), elem_bytes, pe);
  }
}

void ethx_api_iget(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                   size_t elem_bytes, int pe, const char* fn) {
  ethx_shmem_check_pe(pe, fn);
  if (dst == 1 && sst == 1) {
    ethx_api_get(dest, source, nelems, elem_bytes, pe, fn);
    return;
  }
  for (size_t i = 0; i < nelems; ++i) {
    ethx_rma_get_element((char*)dest + ethx_rma_offset(i, dst, elem_bytes),
                         (const char*)source + ethx_rma_offset(i, sst, elem_bytes), elem_bytes, pe);
  }
}

/* ---- typed: one definition per operation, for every type of ETHX_SHMEM_RMA_TYPES ---- */
#define ETHX_DEFINE_RMA(NAME, TYPE, A)                                                   \
  void shmem_##NAME##_put(TYPE* dest, const TYPE* source, size_t nelems, int pe) {       \
    ethx_shmem_require_init(__func__);                                                   \
    ethx_api_put(dest, source, nelems, sizeof(TYPE), pe, __func__);                      \
  }                                                                                      \
  void shmem_##NAME##_get(TYPE* dest, const TYPE* source, size_t nelems, int pe) {       \
    ethx_shmem_require_init(__func__);                                                   \
    ethx_api_get(dest, source, nelems, sizeof(TYPE), pe, __func__);                      \
  }                                                                                      \
  void shmem_##NAME##_put_nbi(TYPE* dest, const TYPE* source, size_t nelems, int pe) {   \
    ethx_shmem_require_init(__func__);                                                   \
    ethx_api_put(dest, source, nelems, sizeof(TYPE), pe, __func__);                      \
  }                                                                                      \
  void shmem_##NAME##_get_nbi(TYPE* dest, const TYPE* source, size_t nelems, int pe) {   \
    ethx_shmem_require_init(__func__);                                                   \
    ethx_api_get(dest, source, nelems, sizeof(TYPE), pe, __func__);                      \
  }                                                                                      \
  void shmem_##NAME##_p(TYPE* dest, TYPE value, int pe) {                                \
    ethx_shmem_require_init(__func__);                                                   \
    ethx_api_p(dest, &value, sizeof(TYPE), pe, __func__);                                \
  }                                                                                      \
  TYPE shmem_##NAME##_g(const TYPE* source, int pe) {                                    \
    ethx_shmem_require_init(__func__);                                                   \
    TYPE value;                                                                          \
    ethx_api_g(&value, source, sizeof(TYPE), pe, __func__);                              \
    return value;                                                                        \
  }                                                                                      \
  void shmem_##NAME##_iput(TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst, \
                           size_t nelems, int pe) {                                      \
    ethx_shmem_require_init(__func__);                                                   \
    ethx_api_iput(dest, source, dst, sst, nelems, sizeof(TYPE), pe, __func__);           \
  }                                                                                      \
  void shmem_##NAME##_iget(TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst, \
                           size_t nelems, int pe) {                                      \
    ethx_shmem_require_init(__func__);                                                   \
    ethx_api_iget(dest, source, dst, sst, nelems, sizeof(TYPE), pe, __func__);           \
  }

ETHX_SHMEM_RMA_TYPES(ETHX_DEFINE_RMA, _)

/* ---- sized: elements of BYTES bytes ---- */
#define ETHX_DEFINE_RMA_SIZED(BITS, BYTES, A)                                         \
  void shmem_put##BITS(void* dest, const void* source, size_t nelems, int pe) {       \
    ethx_shmem_require_init(__func__);                                                \
    ethx_api_put(dest, source, nelems, BYTES, pe, __func__);                          \
  }                                                                                   \
  void shmem_get##BITS(void* dest, const void* source, size_t nelems, int pe) {       \
    ethx_shmem_require_init(__func__);                                                \
    ethx_api_get(dest, source, nelems, BYTES, pe, __func__);                          \
  }                                                                                   \
  void shmem_put##BITS##_nbi(void* dest, const void* source, size_t nelems, int pe) { \
    ethx_shmem_require_init(__func__);                                                \
    ethx_api_put(dest, source, nelems, BYTES, pe, __func__);                          \
  }                                                                                   \
  void shmem_get##BITS##_nbi(void* dest, const void* source, size_t nelems, int pe) { \
    ethx_shmem_require_init(__func__);                                                \
    ethx_api_get(dest, source, nelems, BYTES, pe, __func__);                          \
  }                                                                                   \
  void shmem_iput##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, \
                        size_t nelems, int pe) {                                      \
    ethx_shmem_require_init(__func__);                                                \
    ethx_api_iput(dest, source, dst, sst, nelems, BYTES, pe, __func__);               \
  }                                                                                   \
  void shmem_iget##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, \
                        size_t nelems, int pe) {                                      \
    ethx_shmem_require_init(__func__);                                                \
    ethx_api_iget(dest, source, dst, sst, nelems, BYTES, pe, __func__);               \
  }

ETHX_SHMEM_RMA_SIZES(ETHX_DEFINE_RMA_SIZED, _)

void shmem_putmem(void* dest, const void* source, size_t nelems, int pe) {
  ethx_shmem_require_init(__func__);
  ethx_api_put(dest, source, nelems, 1, pe, __func__);
}

void shmem_getmem(void* dest, const void* source, size_t nelems, int pe) {
  ethx_shmem_require_init(__func__);
  ethx_api_get(dest, source, nelems, 1, pe, __func__);
}

void shmem_putmem_nbi(void* dest, const void* source, size_t nelems, int pe) {
  ethx_shmem_require_init(__func__);
  ethx_api_put(dest, source, nelems, 1, pe, __func__);
}

void shmem_getmem_nbi(void* dest, const void* source, size_t nelems, int pe) {
  ethx_shmem_require_init(__func__);
  ethx_api_get(dest, source, nelems, 1, pe, __func__);
}

/* NOLINTEND(bugprone-macro-parentheses) */
