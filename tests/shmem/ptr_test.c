/*
 * shmem_ptr and the rest of the setup and memory API:
 * - shmem_ptr gives a usable pointer for every PE (itself included): stores of 1, 2, 4 and 8
 *   bytes and a memcpy through it are seen by the owner after a barrier, loads through it read
 *   the owner's values (on this fabric it must never be NULL; --allow-null-ptr for other
 *   libraries);
 * - shmem_addr_accessible: 1 for symmetric objects on every PE, 0 for the stack and malloc;
 *   shmem_pe_accessible: 1 for every PE, 0 outside 0 ... n-1;
 * - shmem_calloc zeroes, shmem_align aligns, both usable as targets;
 * - shmem_info_get_version matches the header, shmem_info_get_name is a string.
 */
#include "shmem_test.h"

enum { k_area = 512 };

typedef struct area {
  uint64_t u64[4];
  uint32_t u32[4];
  uint16_t u16[4];
  uint8_t u8[8];
  unsigned char copied[k_area];
  long owner_id; /* written by the owner: read through the pointer */
} area;

static void store_through(area* remote, int round) {
  volatile area* v = (volatile area*)remote;
  for (int k = 0; k < 4; ++k) {
    v->u64[k] = 0x0102030405060708ull * (uint64_t)(st.me + 1) + (uint64_t)(round * 4 + k);
    v->u32[k] = 0xa0000000u + (uint32_t)(st.me * 256 + round * 4 + k);
    v->u16[k] = (uint16_t)(0xb000 + st.me * 16 + k);
  }
  for (int k = 0; k < 8; ++k) v->u8[k] = (uint8_t)(st.me * 8 + k + round);
  unsigned char bytes[k_area];
  st_fill(bytes, k_area, (unsigned)(st.me * 100 + round));
  memcpy(remote->copied, bytes, k_area);
}

static void expect_stores_from(st_check* c, const area* a, int from, int round) {
  for (int k = 0; k < 4; ++k) {
    st_expect_u64(c, "8-byte store",
                  0x0102030405060708ull * (uint64_t)(from + 1) + (uint64_t)(round * 4 + k),
                  a->u64[k]);
    st_expect_u64(c, "4-byte store", 0xa0000000u + (uint32_t)(from * 256 + round * 4 + k),
                  a->u32[k]);
    st_expect_u64(c, "2-byte store", (uint16_t)(0xb000 + from * 16 + k), a->u16[k]);
  }
  for (int k = 0; k < 8; ++k)
    st_expect_u64(c, "1-byte store", (uint8_t)(from * 8 + k + round), a->u8[k]);
  st_expect_pattern(c, "memcpy through the pointer", a->copied, k_area,
                    (unsigned)(from * 100 + round));
}

/* Round r: PE i stores into PE (i + r) % n through shmem_ptr; every pair, itself included. */
static void check_ptr_every_pe(void) {
  area* a = (area*)st_malloc(sizeof(area), "ptr area");
  memset(a, 0, sizeof *a);
  a->owner_id = 0x0d0e0000L + st.me;
  for (int r = 0; r < st.npes; ++r) {
    int t = (st.me + r) % st.npes;
    int from = (st.me - r + st.npes) % st.npes;
    shmem_barrier_all();
    area* remote = (area*)shmem_ptr(a, t);
    st_check c;
    st_begin(&c, "shmem_ptr to PE %d: stores of 1/2/4/8 B and memcpy; loads", t);
    if (remote != NULL) {
      store_through(remote, r);
      st_expect_i64(&c, "owner_id loaded through the pointer", 0x0d0e0000L + t,
                    ((volatile area*)remote)->owner_id);
    } else if (st.allow_null_ptr) {
      strcat(c.name, " (skipped: NULL, --allow-null-ptr)");
    } else {
      st_fail(&c, "shmem_ptr(heap object, %d) returned NULL", t);
    }
    shmem_barrier_all();
    st_end(&c);
    st_check own;
    st_begin(&own, "stores through shmem_ptr by PE %d arrived here", from);
    if (remote == NULL && st.allow_null_ptr) {
      strcat(own.name, " (skipped: NULL, --allow-null-ptr)");
    } else {
      expect_stores_from(&own, a, from, r);
    }
    st_end(&own);
  }
  shmem_barrier_all();
  shmem_free(a);
}

static void check_accessible(void) {
  long* heap = (long*)st_malloc(4 * sizeof(long), "accessible object");
  long on_stack = 0;
  long* private_heap = (long*)malloc(sizeof(long));
  st_check c;
  st_begin(&c, "shmem_addr_accessible / shmem_pe_accessible");
  for (int pe = 0; pe < st.npes; ++pe) {
    if (shmem_addr_accessible(heap, pe) != 1) {
      st_fail(&c, "shmem_malloc'd object: not accessible on PE %d", pe);
    }
    if (shmem_addr_accessible(&heap[3], pe) != 1) {
      st_fail(&c, "the last element of a shmem_malloc'd object: not accessible on PE %d", pe);
    }
    if (shmem_addr_accessible(&on_stack, pe) != 0) {
      st_fail(&c, "a stack variable: accessible on PE %d, expected 0", pe);
    }
    if (shmem_addr_accessible(private_heap, pe) != 0) {
      st_fail(&c, "a malloc'd object: accessible on PE %d, expected 0", pe);
    }
    if (shmem_pe_accessible(pe) != 1) st_fail(&c, "shmem_pe_accessible(%d) is not 1", pe);
  }
  st_end(&c);
  st_check out;
  st_begin(&out, "shmem_pe_accessible of PEs outside 0 ... %d", st.npes - 1);
  st_expect_i64(&out, "shmem_pe_accessible(n_pes)", 0, shmem_pe_accessible(st.npes));
  st_expect_i64(&out, "shmem_pe_accessible(-1)", 0, shmem_pe_accessible(-1));
  st_end(&out);
  free(private_heap);
  shmem_barrier_all();
  shmem_free(heap);
}

static void check_calloc_align(void) {
  enum { count = 1000 };
  /* Dirty a block, free it, and calloc the same size: it must come back zeroed. */
  unsigned char* dirty = (unsigned char*)st_malloc(count * sizeof(long), "dirty block");
  memset(dirty, 0xee, count * sizeof(long));
  shmem_free(dirty);
  long* zeroed = (long*)shmem_calloc(count, sizeof(long));
  void* aligned4k = shmem_align(4096, 1000);
  void* aligned64 = shmem_align(64, 24);
  st_check c;
  st_begin(&c, "shmem_calloc zeroes, shmem_align(4096) / (64) align; put into them");
  if (zeroed == NULL || aligned4k == NULL || aligned64 == NULL) {
    st_fail(&c, "returned NULL: calloc %p, align(4096) %p, align(64) %p", (void*)zeroed, aligned4k,
            aligned64);
    st_end(&c);
    shmem_global_exit(1);
  }
  for (int k = 0; k < count; ++k) {
    if (zeroed[k] != 0) {
      st_fail(&c, "shmem_calloc element %d: expected 0, got %ld", k, zeroed[k]);
      break;
    }
  }
  if ((uintptr_t)aligned4k % 4096 != 0) st_fail(&c, "shmem_align(4096) gave %p", aligned4k);
  if ((uintptr_t)aligned64 % 64 != 0) st_fail(&c, "shmem_align(64) gave %p", aligned64);
  shmem_barrier_all();
  shmem_long_p(&zeroed[count - 1], st.me + 1, st_right());
  shmem_int_p((int*)aligned4k + 249, st.me + 2, st_right());
  shmem_long_p((long*)aligned64 + 2, st.me + 3, st_right());
  shmem_barrier_all();
  st_expect_i64(&c, "put into calloc'd block", st_left() + 1, zeroed[count - 1]);
  st_expect_i64(&c, "put into align(4096) block", st_left() + 2, ((int*)aligned4k)[249]);
  st_expect_i64(&c, "put into align(64) block", st_left() + 3, ((long*)aligned64)[2]);
  st_end(&c);
  shmem_barrier_all();
  shmem_free(aligned64);
  shmem_free(aligned4k);
  shmem_free(zeroed);
}

static void check_info(void) {
  int major = -1, minor = -1;
  shmem_info_get_version(&major, &minor);
  char name[SHMEM_MAX_NAME_LEN + 1];
  memset(name, 'x', sizeof name);
  shmem_info_get_name(name);
  st_check c;
  st_begin(&c, "shmem_info_get_version / shmem_info_get_name");
  st_expect_i64(&c, "major version (SHMEM_MAJOR_VERSION)", SHMEM_MAJOR_VERSION, major);
  st_expect_i64(&c, "minor version (SHMEM_MINOR_VERSION)", SHMEM_MINOR_VERSION, minor);
#ifndef ST_COMPAT14
  if (major != 1 || minor < 5) st_fail(&c, "version %d.%d, expected 1.5 or later", major, minor);
#endif
  if (memchr(name, '\0', SHMEM_MAX_NAME_LEN) == NULL) {
    st_fail(&c, "the name is not NUL-terminated within SHMEM_MAX_NAME_LEN (%d)",
            SHMEM_MAX_NAME_LEN);
  } else if (name[0] == '\0') {
    st_fail(&c, "the name is empty");
  } else if (!st.quiet) {
    printf("ptr_test PE %d/%d: library \"%s\", OpenSHMEM %d.%d\n", st.me, st.npes, name, major,
           minor);
  }
  st_end(&c);
}

int main(int argc, char** argv) {
  st_args("ptr_test", argc, argv);
  shmem_init();
  st_started();
  check_info();
  check_ptr_every_pe();
  check_accessible();
  check_calloc_align();
  int status = st_finish();
  shmem_finalize();
  return status;
}
