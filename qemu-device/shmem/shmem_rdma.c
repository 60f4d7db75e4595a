/* The rdma backend's operations (shmem_backend.h; docs/shmem.md "The rdma backend"): RDMA
 * WRITE for puts and flag stores (inline when small), RDMA READ for gets, the verbs' 64-bit
 * fetch-add and compare-swap for atomics (compare-swap loops for the rest), every WR signalled
 * and counted so that quiet waits for them all. shmem_ptr has no pointer for other PEs. */
#include "shmem_rdma.h"
#include "shmem_core.h"
#include "shmem_layout.h"

#if defined(ETHX_SHMEM_HAVE_VERBS)
#include <byteswap.h>
#include <inttypes.h>
#include <string.h>

enum { kPollBatch = 16 };

static const char* opcode_name(unsigned opcode) {
  switch (opcode) {
    case IBV_WR_RDMA_WRITE:
      return "RDMA WRITE";
    case IBV_WR_RDMA_READ:
      return "RDMA READ";
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      return "atomic fetch-add";
    case IBV_WR_ATOMIC_CMP_AND_SWP:
      return "atomic compare-swap";
    default:
      return "work request";
  }
}

/* wr_id: the opcode (bits 48-55), 1 + the staging slot or 0 (bits 32-47), the PE (0-31). */
static uint64_t make_wr_id(unsigned opcode, unsigned slot, int pe) {
  return ((uint64_t)opcode << 48) | ((uint64_t)slot << 32) | (uint32_t)pe;
}

static void complete(const struct ibv_wc* wc) {
  ethx_rdma* rdma = &ethx_rdma_g;
  const int pe = (int)(uint32_t)wc->wr_id;
  const unsigned slot = (unsigned)(wc->wr_id >> 32) & 0xffffu;
  --rdma->posted[pe];
  --rdma->outstanding;
  if (slot != 0) rdma->slot_busy[slot - 1] = 0;
  if (wc->status != IBV_WC_SUCCESS && !ethx_shmem_g_state.exiting) {
    ethx_shmem_fatal("%s to PE %d failed: %s (work completion status %d, vendor error 0x%x)",
                     opcode_name((unsigned)(wc->wr_id >> 48) & 0xffu), pe,
                     ibv_wc_status_str(wc->status), (int)wc->status, wc->vendor_err);
  }
}

/* Takes what completed; returns how many. */
static int poll_completions(void) {
  struct ibv_wc wcs[kPollBatch];
  const int count = ibv_poll_cq(ethx_rdma_g.cq, kPollBatch, wcs);
  if (count < 0) ethx_shmem_fatal("%s: ibv_poll_cq failed", ethx_rdma_g.device);
  for (int i = 0; i < count; ++i) complete(&wcs[i]);
  return count;
}

/* One step of a wait on completions: poll, and if nothing came, spin, then yield (the
 * completions may need this vCPU: Soft-RoCE runs in the guest's kernel). */
static void progress(ethx_shmem_waiter* waiter) {
  if (poll_completions() > 0) {
    memset(waiter, 0, sizeof *waiter);
    return;
  }
  ethx_shmem_waiter_pause(waiter);
}

void ethx_rdma_wait(int pe) {
  ethx_shmem_waiter waiter;
  memset(&waiter, 0, sizeof waiter);
  const ethx_rdma* rdma = &ethx_rdma_g;
  while (pe < 0 ? rdma->outstanding > 0 : rdma->posted[pe] > 0) progress(&waiter);
}

void ethx_rdma_post(int pe, struct ibv_send_wr* wr, unsigned slot) {
  ethx_rdma* rdma = &ethx_rdma_g;
  ethx_shmem_waiter waiter;
  memset(&waiter, 0, sizeof waiter);
  while (rdma->posted[pe] >= rdma->send_depth) progress(&waiter);
  wr->wr_id = make_wr_id((unsigned)wr->opcode, slot, pe);
  wr->send_flags |= IBV_SEND_SIGNALED;
  wr->next = NULL;
  struct ibv_send_wr* bad = NULL;
  const int status = ibv_post_send(rdma->qps[pe], wr, &bad);
  if (status != 0) {
    ethx_shmem_fatal("ibv_post_send (%s) to PE %d: %s", opcode_name((unsigned)wr->opcode), pe,
                     strerror(status));
  }
  ++rdma->posted[pe];
  ++rdma->outstanding;
}

/* A free staging slot (waiting for one to complete if all are in flight): its index. */
static unsigned acquire_slot(void) {
  ethx_rdma* rdma = &ethx_rdma_g;
  ethx_shmem_waiter waiter;
  memset(&waiter, 0, sizeof waiter);
  for (;;) {
    for (unsigned i = 0; i < ETHX_RDMA_SLOTS; ++i) {
      const unsigned slot = (rdma->next_slot + i) % ETHX_RDMA_SLOTS;
      if (rdma->slot_busy[slot]) continue;
      rdma->slot_busy[slot] = 1;
      rdma->next_slot = slot + 1;
      return slot;
    }
    progress(&waiter);
  }
}

static uint8_t* slot_address(unsigned slot) {
  return ethx_shmem_g_state.memory + ETHX_SHMEM_STAGING_OFFSET +
         (size_t)slot * ETHX_RDMA_SLOT_BYTES;
}

static uint32_t library_lkey(void) {
  return ethx_rdma_g.mrs[ETHX_RDMA_SEGMENT_LIBRARY]->lkey;
}

/* The remote address and key of [offset, offset + bytes) on `pe`. */
static uint64_t remote_addr(int pe, uint64_t offset, size_t bytes, uint32_t* rkey) {
  const ethx_rdma_segment* segments = &ethx_rdma_g.peers[pe * ETHX_RDMA_SEGMENTS];
  for (int i = 0; i < ETHX_RDMA_SEGMENTS; ++i) {
    const ethx_rdma_segment* segment = &segments[i];
    if (offset < segment->offset || offset - segment->offset >= segment->bytes ||
        bytes > segment->bytes - (offset - segment->offset)) {
      continue;
    }
    *rkey = segment->rkey;
    return segment->addr + (offset - segment->offset);
  }
  ethx_shmem_fatal("symmetric offset 0x%" PRIx64
                   " (%zu bytes) is in no registered segment of "
                   "PE %d",
                   offset, bytes, pe);
}

/* The local key if [addr, addr + bytes) is in one of this PE's registered segments, else 0. */
static int local_key(const void* addr, size_t bytes, uint32_t* lkey) {
  const uintptr_t at = (uintptr_t)addr;
  for (int i = 0; i < ETHX_RDMA_SEGMENTS; ++i) {
    const struct ibv_mr* mr = ethx_rdma_g.mrs[i];
    if (mr == NULL) continue;
    const uintptr_t start = (uintptr_t)mr->addr;
    if (at < start || at - start >= mr->length || bytes > mr->length - (at - start)) continue;
    *lkey = mr->lkey;
    return 1;
  }
  return 0;
}

static void post_rdma(int pe, enum ibv_wr_opcode opcode, const void* local, size_t bytes,
                      uint32_t lkey, uint64_t remote, uint32_t rkey, unsigned flags,
                      unsigned slot) {
  struct ibv_sge sge = {(uint64_t)(uintptr_t)local, (uint32_t)bytes, lkey};
  struct ibv_send_wr wr;
  memset(&wr, 0, sizeof wr);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = opcode;
  wr.send_flags = flags;
  wr.wr.rdma.remote_addr = remote;
  wr.wr.rdma.rkey = rkey;
  ethx_rdma_post(pe, &wr, slot);
}

/* Small puts go inline (the device copies the source at post time); larger ones through
 * staging slots. Either way the source is reusable on return and the WRITEs complete later
 * (quiet waits for them). */
static void rdma_put(uint64_t dest_offset, const void* src, size_t bytes, int pe) {
  uint32_t rkey = 0;
  const uint64_t remote = remote_addr(pe, dest_offset, bytes, &rkey);
  if (bytes <= ethx_rdma_g.max_inline_bytes) {
    post_rdma(pe, IBV_WR_RDMA_WRITE, src, bytes, 0, remote, rkey, IBV_SEND_INLINE, 0);
    return;
  }
  for (size_t done = 0; done < bytes;) {
    const size_t chunk = bytes - done < ETHX_RDMA_SLOT_BYTES ? bytes - done : ETHX_RDMA_SLOT_BYTES;
    const unsigned slot = acquire_slot();
    memcpy(slot_address(slot), (const uint8_t*)src + done, chunk);
    post_rdma(pe, IBV_WR_RDMA_WRITE, slot_address(slot), chunk, library_lkey(), remote + done, rkey,
              0, slot + 1);
    done += chunk;
  }
}

/* READs into symmetric memory land in place; into private memory through staging slots, up to
 * all of them in flight, copied out when they have completed. */
static void rdma_get(void* dest, uint64_t src_offset, size_t bytes, int pe) {
  uint32_t rkey = 0;
  uint32_t lkey = 0;
  const uint64_t remote = remote_addr(pe, src_offset, bytes, &rkey);
  if (local_key(dest, bytes, &lkey)) {
    post_rdma(pe, IBV_WR_RDMA_READ, dest, bytes, lkey, remote, rkey, 0, 0);
    ethx_rdma_wait(pe);
    return;
  }
  unsigned slots[ETHX_RDMA_SLOTS];
  for (size_t done = 0; done < bytes;) {
    unsigned used = 0;
    size_t batch = 0;
    for (; used < ETHX_RDMA_SLOTS && done + batch < bytes; ++used) {
      const size_t left = bytes - done - batch;
      const size_t chunk = left < ETHX_RDMA_SLOT_BYTES ? left : ETHX_RDMA_SLOT_BYTES;
      slots[used] = acquire_slot();
      post_rdma(pe, IBV_WR_RDMA_READ, slot_address(slots[used]), chunk, library_lkey(),
                remote + done + batch, rkey, 0, slots[used] + 1);
      batch += chunk;
    }
    ethx_rdma_wait(pe); /* the READs completed in order, the slots are free and hold the data */
    for (unsigned i = 0; i < used; ++i) {
      const size_t chunk =
          bytes - done < ETHX_RDMA_SLOT_BYTES ? bytes - done : ETHX_RDMA_SLOT_BYTES;
      memcpy((uint8_t*)dest + done, slot_address(slots[i]), chunk);
      done += chunk;
    }
  }
}

static void rdma_put_value(uint64_t dest_offset, uint64_t value, unsigned width, int pe) {
  rdma_put(dest_offset, &value, width, pe); /* little-endian: the low bytes */
}

static uint64_t rdma_get_value(uint64_t src_offset, unsigned width, int pe) {
  uint64_t value = 0;
  rdma_get(&value, src_offset, width, pe);
  return value;
}

uint64_t ethx_rdma_atomic64(int pe, enum ibv_wr_opcode opcode, uint64_t addr, uint32_t rkey,
                            uint64_t compare_add, uint64_t swap) {
  ethx_rdma* rdma = &ethx_rdma_g;
  volatile uint64_t* result =
      (volatile uint64_t*)(ethx_shmem_g_state.memory + ETHX_RDMA_RESULT_OFFSET);
  struct ibv_sge sge = {(uint64_t)(uintptr_t)result, sizeof(uint64_t), library_lkey()};
  struct ibv_send_wr wr;
  memset(&wr, 0, sizeof wr);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = opcode;
  wr.wr.atomic.remote_addr = addr;
  wr.wr.atomic.rkey = rkey;
  wr.wr.atomic.compare_add = compare_add;
  wr.wr.atomic.swap = swap;
  ethx_rdma_post(pe, &wr, 0);
  ethx_rdma_wait(pe);
  return rdma->swap_results ? bswap_64(*result) : *result;
}

/* A 4-byte atomic: compare-swap loops on the naturally aligned 8-byte word that holds it
 * (verbs atomics are 64-bit only); the fetch-add of 0 that starts it is an atomic read. */
static uint64_t atomic32(enum ethx_shmem_atomic_op op, uint64_t addr, uint32_t rkey, unsigned shift,
                         uint32_t operand, uint32_t compare, int pe) {
  const uint64_t mask = (uint64_t)UINT32_MAX << shift;
  uint64_t old = ethx_rdma_atomic64(pe, IBV_WR_ATOMIC_FETCH_AND_ADD, addr, rkey, 0, 0);
  for (;;) {
    const uint32_t old32 = (uint32_t)(old >> shift);
    uint32_t new32 = operand;
    if (op == ETHX_ATOMIC_FETCH_ADD) new32 = old32 + operand;
    if (op == ETHX_ATOMIC_COMPARE_SWAP && old32 != compare) return old32;
    const uint64_t wanted = (old & ~mask) | ((uint64_t)new32 << shift);
    if (wanted == old) return old32;
    const uint64_t seen =
        ethx_rdma_atomic64(pe, IBV_WR_ATOMIC_CMP_AND_SWP, addr, rkey, old, wanted);
    if (seen == old) return old32;
    old = seen;
  }
}

static uint64_t rdma_atomic(enum ethx_shmem_atomic_op op, uint64_t offset, unsigned width,
                            uint64_t operand, uint64_t compare, int pe) {
  uint32_t rkey = 0;
  const uint64_t word_offset = offset & ~UINT64_C(7);
  const uint64_t addr = remote_addr(pe, word_offset, sizeof(uint64_t), &rkey);
  if (width == 4) {
    const unsigned shift = (unsigned)(offset - word_offset) * 8u; /* little-endian */
    return atomic32(op, addr, rkey, shift, (uint32_t)operand, (uint32_t)compare, pe);
  }
  if (op == ETHX_ATOMIC_FETCH_ADD) {
    return ethx_rdma_atomic64(pe, IBV_WR_ATOMIC_FETCH_AND_ADD, addr, rkey, operand, 0);
  }
  if (op == ETHX_ATOMIC_COMPARE_SWAP) {
    return ethx_rdma_atomic64(pe, IBV_WR_ATOMIC_CMP_AND_SWP, addr, rkey, compare, operand);
  }
  uint64_t old = ethx_rdma_atomic64(pe, IBV_WR_ATOMIC_FETCH_AND_ADD, addr, rkey, 0, 0);
  for (;;) { /* swap: verbs have none */
    const uint64_t seen =
        ethx_rdma_atomic64(pe, IBV_WR_ATOMIC_CMP_AND_SWP, addr, rkey, old, operand);
    if (seen == old) return old;
    old = seen;
  }
}

/* Every WR signalled: quiet is "nothing outstanding". A WRITE's completion means the target
 * acknowledged it (RC), so the data is there. */
static void rdma_quiet(void) {
  ethx_rdma_wait(-1);
}

/* WRITEs on one QP are delivered in order, but a READ or an atomic before them is not waited
 * for (that needs IBV_SEND_FENCE): fence is quiet, as in the load-store backend. */
static void rdma_fence(void) {
  rdma_quiet();
}

static void rdma_store_flag(int pe, uint64_t offset, uint64_t value) {
  rdma_put(offset, &value, sizeof value, pe);
}

static void* rdma_ptr(uint64_t offset, int pe) {
  (void)offset;
  (void)pe;
  return NULL; /* no load/store path to another PE's memory */
}

static void rdma_init(ethx_shmem_state* state) {
  ethx_rdma_setup(state);
}

static void rdma_finalize(ethx_shmem_state* state) {
  (void)state;
  ethx_rdma_teardown();
}

#else /* built without libibverbs */

static void rdma_init(ethx_shmem_state* state) {
  (void)state;
  ethx_shmem_fatal(
      "ETHX_SHMEM_BACKEND=rdma: this library was built without libibverbs "
      "(install libibverbs-dev and rebuild; docs/shmem.md)");
}

static void rdma_finalize(ethx_shmem_state* state) {
  (void)state;
}

#define rdma_put NULL
#define rdma_get NULL
#define rdma_put_value NULL
#define rdma_get_value NULL
#define rdma_atomic NULL
#define rdma_quiet NULL
#define rdma_fence NULL
#define rdma_store_flag NULL
#define rdma_ptr NULL
#endif

const ethx_shmem_backend ethx_shmem_backend_rdma = {
    .name = "rdma",
    .init = rdma_init,
    .finalize = rdma_finalize,
    .put = rdma_put,
    .get = rdma_get,
    .put_value = rdma_put_value,
    .get_value = rdma_get_value,
    .atomic = rdma_atomic,
    .quiet = rdma_quiet,
    .fence = rdma_fence,
    .store_flag = rdma_store_flag,
    .ptr = rdma_ptr,
};
