/*
 * The rdma backend (shmem_backend.h), internal: libibverbs RC queue pairs, one per peer and
 * one to the own PE (so local atomics go through the NIC too and stay atomic with remote
 * ones). docs/shmem.md "The rdma backend" describes it.
 *
 * Symmetric memory of a PE, in three registered segments:
 *   library  [0, ETHX_SHMEM_DATA_OFFSET)      control, staging, scratch \  one mmap'd region,
 *   heap     [heap offset, + heap bytes)      the symmetric heap         /  the same offsets
 *   data     [ETHX_SHMEM_DATA_OFFSET, + data) the program's data segment, registered in place
 * A peer's object at symmetric offset o is at (its segment's base + o - segment offset) with
 * the segment's rkey, both learnt at shmem_init through the out-of-band exchange.
 */
#ifndef ETHX_SHMEM_RDMA_H
#define ETHX_SHMEM_RDMA_H

#include <stddef.h>
#include <stdint.h>

#include "shmem_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  ETHX_RDMA_SEGMENTS = 3, /* library, data, heap */
  ETHX_RDMA_SEGMENT_LIBRARY = 0,
  ETHX_RDMA_SEGMENT_DATA = 1,
  ETHX_RDMA_SEGMENT_HEAP = 2,
};

/* Where one segment of a PE is: its symmetric offset and size (the same on every PE), its
 * address in that PE and the key that reaches it. */
typedef struct ethx_rdma_segment {
  uint64_t offset;
  uint64_t bytes;
  uint64_t addr;
  uint32_t rkey;
  uint32_t reserved;
} ethx_rdma_segment;
_Static_assert(sizeof(ethx_rdma_segment) == 32, "wire layout");

/* What one PE tells the others at shmem_init (ETHX_SHMEM_OOB), followed on the wire by
 * npes 32-bit QP numbers: the QP it created for each PE, itself included. Host byte order: all
 * PEs run the same binary on the same kind of machine. */
typedef struct ethx_rdma_record {
  uint32_t magic; /* ETHX_RDMA_MAGIC */
  uint32_t job;   /* ETHX_SHMEM_JOB: a stale PE of another job is told apart */
  uint32_t pe;
  uint32_t npes;
  uint8_t gid[16];     /* RoCE: the port's RoCE v2 GID; InfiniBand: unused */
  uint32_t lid;        /* InfiniBand: the port's LID */
  uint32_t link_layer; /* IBV_LINK_LAYER_* */
  uint32_t psn;        /* first packet sequence number of this PE's QPs */
  uint32_t mtu;        /* enum ibv_mtu of the port */
  uint32_t rd_atomic;  /* outstanding RDMA READs/atomics this PE's QPs accept */
  uint32_t reserved;
  ethx_rdma_segment segments[ETHX_RDMA_SEGMENTS];
} ethx_rdma_record;
_Static_assert(sizeof(ethx_rdma_record) == 56 + 32 * ETHX_RDMA_SEGMENTS, "wire layout");

#define ETHX_RDMA_MAGIC 0x45524d41u /* "ERMA" */

/* The out-of-band exchange (shmem_rdma_oob.c), over TCP to PE 0 at ETHX_SHMEM_OOB=host:port:
 * every PE sends its record (and npes QP numbers) to PE 0, PE 0 sends back all npes of them.
 * `table` holds npes slots of ethx_rdma_record_bytes(npes), the own one filled in. Fatal,
 * naming the peer and what went wrong, on failure or after ETHX_SHMEM_OOB_TIMEOUT_S. */
size_t ethx_rdma_record_bytes(int npes);
void ethx_rdma_exchange(void* table, int me, int npes, uint32_t job);
/* After every PE's QPs are ready to receive: the same star, one byte each way, so nobody
 * sends to a QP its owner has not connected yet. */
void ethx_rdma_oob_barrier(void);
/* Closes the out-of-band sockets (the exchange keeps them open for the barrier). */
void ethx_rdma_oob_close(void);

#if defined(ETHX_SHMEM_HAVE_VERBS)
#include <infiniband/verbs.h>

/* The staging buffer of the library segment, cut into slots: puts of more than the QP's
 * inline size copy the source into a slot (so the put returns at once, the source reusable)
 * and the slot is free again when its WRITE completes; gets into private memory READ into
 * slots. The last slot holds the results of atomics and the endianness probe. */
#define ETHX_RDMA_SLOT_BYTES (64u << 10)
#define ETHX_RDMA_SLOTS (ETHX_SHMEM_STAGING_BYTES / ETHX_RDMA_SLOT_BYTES - 1u)
#define ETHX_RDMA_RESULT_OFFSET (ETHX_SHMEM_STAGING_OFFSET + ETHX_RDMA_SLOTS * ETHX_RDMA_SLOT_BYTES)

typedef struct ethx_rdma {
  struct ibv_context* context;
  struct ibv_pd* pd;
  struct ibv_cq* cq;
  struct ibv_qp** qps;                    /* by PE, the own one included */
  struct ibv_mr* mrs[ETHX_RDMA_SEGMENTS]; /* this PE's segments (NULL: empty) */
  ethx_rdma_segment* peers;               /* npes x ETHX_RDMA_SEGMENTS */
  uint8_t port;
  int gid_index;             /* -1: InfiniBand, no GRH */
  uint32_t max_inline_bytes; /* what the QPs took (0: the device has none) */
  uint32_t send_depth;       /* WRs one QP may have outstanding */
  uint32_t* posted;          /* by PE: WRs posted, not yet completed */
  uint64_t outstanding;      /* all of them */
  int swap_results;          /* fetched values arrive big-endian (mlx5, x86) */
  uint8_t slot_busy[ETHX_RDMA_SLOTS];
  unsigned next_slot;
  char device[64];
} ethx_rdma;

extern ethx_rdma ethx_rdma_g;

/* shmem_rdma_setup.c: device, memory, QPs, the exchange; fatal on failure. */
void ethx_rdma_setup(struct ethx_shmem_state* state);
void ethx_rdma_teardown(void);
/* shmem_rdma.c: a signalled WR on PE pe's QP (waits while that QP is full); slot: 1 + the
 * staging slot it uses, freed when it completes, or 0. */
void ethx_rdma_post(int pe, struct ibv_send_wr* wr, unsigned slot);
/* Waits until every WR posted to `pe` (every PE: -1) has completed. */
void ethx_rdma_wait(int pe);
/* A 64-bit fetch-add or compare-swap on `pe` at remote (addr, rkey): the old value. */
uint64_t ethx_rdma_atomic64(int pe, enum ibv_wr_opcode opcode, uint64_t addr, uint32_t rkey,
                            uint64_t compare_add, uint64_t swap);
#endif

#ifdef __cplusplus
}
#endif

#endif /* ETHX_SHMEM_RDMA_H */
