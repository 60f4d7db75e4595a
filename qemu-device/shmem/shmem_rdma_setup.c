/* The rdma backend's setup: the RDMA device and port, the GID, the registered memory, one RC
 * QP per PE (the own one included), the out-of-band exchange and the connections. Everything
 * the device decides is asked of it (ibv_query_device, ibv_query_port, ibv_query_gid_ex, the
 * QP's inline size), nothing is assumed of rxe: docs/shmem.md lists what is checked. */
#define _GNU_SOURCE
#include "shmem_rdma.h"

#if defined(ETHX_SHMEM_HAVE_VERBS)
#include <byteswap.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "shmem_core.h"
#include "shmem_layout.h"

ethx_rdma ethx_rdma_g;

enum {
  kDefaultHeapBytes = 16 << 20, /* pinned RAM: several PEs share a VM */
  kMaxSendDepth = 128,
  kMaxRdAtomic = 16,
  kDefaultTimeout = 16, /* 4.096 us x 2^16 = 268 ms per retry: emulated networks are slow */
  kRetryCount = 7,
  kMinRnrTimer = 12,
  kHopLimit = 64,
};

static const char kNoDeviceHint[] =
    "RDMA needs a NIC with an RDMA device in every VM: boot them with guest NICs "
    "(`oshrun --backend rdma` does; or `ethx up --vms N --guest-nics --transport afpacket`, "
    "which boots the RDMA guest image with Soft-RoCE's rxe0)";

static uint32_t env_u32(const char* name, uint32_t fallback) {
  return (uint32_t)ethx_shmem_env_size(name, fallback);
}

static int port_is_active(struct ibv_context* context, uint8_t port) {
  struct ibv_port_attr attr;
  return ibv_query_port(context, port, &attr) == 0 && attr.state == IBV_PORT_ACTIVE;
}

/* ETHX_SHMEM_RDMA_DEVICE names the device; otherwise the first with its port active. */
static void open_device(ethx_rdma* rdma) {
  int count = 0;
  struct ibv_device** devices = ibv_get_device_list(&count);
  if (devices == NULL || count == 0) {
    ethx_shmem_fatal("ETHX_SHMEM_BACKEND=rdma: ibv_get_device_list found no RDMA device%s%s. %s",
                     devices == NULL ? ": " : "", devices == NULL ? strerror(errno) : "",
                     kNoDeviceHint);
  }
  const char* wanted = getenv("ETHX_SHMEM_RDMA_DEVICE");
  rdma->port = (uint8_t)env_u32("ETHX_SHMEM_RDMA_PORT", 1);
  for (int i = 0; i < count && rdma->context == NULL; ++i) {
    const char* name = ibv_get_device_name(devices[i]);
    if (wanted != NULL && *wanted != '\0' && strcmp(name, wanted) != 0) continue;
    struct ibv_context* context = ibv_open_device(devices[i]);
    if (context == NULL) continue;
    if (!port_is_active(context, rdma->port)) {
      ibv_close_device(context);
      continue;
    }
    rdma->context = context;
    snprintf(rdma->device, sizeof rdma->device, "%s", name);
  }
  if (rdma->context == NULL) {
    ethx_shmem_fatal(
        "ETHX_SHMEM_BACKEND=rdma: ibv_get_device_list found %d device%s (first: %s) "
        "but none %s%s with port %u active (ETHX_SHMEM_RDMA_DEVICE, "
        "ETHX_SHMEM_RDMA_PORT). %s",
        count, count == 1 ? "" : "s", ibv_get_device_name(devices[0]),
        wanted != NULL ? "named " : "", wanted != NULL ? wanted : "", rdma->port, kNoDeviceHint);
  }
  ibv_free_device_list(devices);
}

static int ipv4_mapped(const uint8_t gid[16]) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return memcmp(gid, prefix, sizeof prefix) == 0;
}

/* RoCE: the first RoCE v2 GID holding an IPv4 address (routable over UDP/IP, which is what
 * rxe and RoCE NICs on an IPv4 network have); ETHX_SHMEM_RDMA_GID_INDEX overrides. */
static int choose_gid(const ethx_rdma* rdma, int table_length, uint8_t gid[16]) {
  struct ibv_gid_entry entry;
  const char* forced = getenv("ETHX_SHMEM_RDMA_GID_INDEX");
  if (forced != NULL && *forced != '\0') {
    const int index = (int)env_u32("ETHX_SHMEM_RDMA_GID_INDEX", 0);
    if (ibv_query_gid_ex(rdma->context, rdma->port, (uint32_t)index, &entry, 0) != 0) {
      ethx_shmem_fatal("ETHX_SHMEM_RDMA_GID_INDEX=%d: %s port %u has no such GID", index,
                       rdma->device, rdma->port);
    }
    memcpy(gid, entry.gid.raw, 16);
    return index;
  }
  for (int index = 0; index < table_length; ++index) {
    if (ibv_query_gid_ex(rdma->context, rdma->port, (uint32_t)index, &entry, 0) != 0) continue;
    if (entry.gid_type != IBV_GID_TYPE_ROCE_V2 || !ipv4_mapped(entry.gid.raw)) continue;
    memcpy(gid, entry.gid.raw, 16);
    return index;
  }
  ethx_shmem_fatal(
      "%s port %u: no RoCE v2 GID with an IPv4 address among its %d GIDs "
      "(ibv_query_gid_ex): give its netdev an IPv4 address, or pick a GID with "
      "ETHX_SHMEM_RDMA_GID_INDEX",
      rdma->device, rdma->port, table_length);
}

/* The device's and port's limits, the GID, and this PE's part of the record. */
static void describe_port(ethx_rdma* rdma, ethx_rdma_record* record) {
  struct ibv_device_attr device;
  struct ibv_port_attr port;
  if (ibv_query_device(rdma->context, &device) != 0 ||
      ibv_query_port(rdma->context, rdma->port, &port) != 0) {
    ethx_shmem_fatal("%s: ibv_query_device/port: %s", rdma->device, strerror(errno));
  }
  if (device.atomic_cap == IBV_ATOMIC_NONE || device.max_qp_rd_atom < 1 ||
      device.max_qp_init_rd_atom < 1) {
    ethx_shmem_fatal(
        "%s has no RDMA atomics (atomic_cap %d, max_qp_rd_atom %d): OpenSHMEM's "
        "atomics need them",
        rdma->device, (int)device.atomic_cap, device.max_qp_rd_atom);
  }
  int rd_atomic = device.max_qp_rd_atom < device.max_qp_init_rd_atom ? device.max_qp_rd_atom
                                                                     : device.max_qp_init_rd_atom;
  record->rd_atomic = (uint32_t)(rd_atomic < kMaxRdAtomic ? rd_atomic : kMaxRdAtomic);
  rdma->send_depth =
      (uint32_t)(device.max_qp_wr < kMaxSendDepth ? device.max_qp_wr : kMaxSendDepth);
  record->link_layer = port.link_layer;
  record->lid = port.lid;
  record->mtu = (uint32_t)port.active_mtu;
  rdma->gid_index = -1;
  if (port.link_layer == IBV_LINK_LAYER_ETHERNET) {
    rdma->gid_index = choose_gid(rdma, port.gid_tbl_len, record->gid);
  }
  const int max_cqe = device.max_cqe;
  const int npes = ethx_shmem_g_state.npes;
  const long wanted_cqe = (long)npes * (long)rdma->send_depth + 16;
  rdma->cq =
      ibv_create_cq(rdma->context, wanted_cqe < max_cqe ? (int)wanted_cqe : max_cqe, NULL, NULL, 0);
  if (rdma->cq == NULL) ethx_shmem_fatal("%s: ibv_create_cq: %s", rdma->device, strerror(errno));
}

/* An RC QP taking as much inline data as the device gives (up to 256 bytes): the device says
 * by failing the larger requests or by lowering cap.max_inline_data. */
static struct ibv_qp* create_qp(ethx_rdma* rdma) {
  for (uint32_t inline_bytes = 256;; inline_bytes /= 2) {
    struct ibv_qp_init_attr init;
    memset(&init, 0, sizeof init);
    init.send_cq = rdma->cq;
    init.recv_cq = rdma->cq;
    init.qp_type = IBV_QPT_RC;
    init.sq_sig_all = 0;
    init.cap.max_send_wr = rdma->send_depth;
    init.cap.max_recv_wr = 1;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    init.cap.max_inline_data = inline_bytes;
    struct ibv_qp* qp = ibv_create_qp(rdma->pd, &init);
    if (qp != NULL) {
      rdma->max_inline_bytes = init.cap.max_inline_data;
      if (init.cap.max_send_wr < rdma->send_depth) rdma->send_depth = init.cap.max_send_wr;
      return qp;
    }
    if (inline_bytes == 0) {
      ethx_shmem_fatal("%s: ibv_create_qp (RC): %s", rdma->device, strerror(errno));
    }
    if (inline_bytes < 8) inline_bytes = 1; /* the next try asks for none */
  }
}

static void modify_qp(struct ibv_qp* qp, struct ibv_qp_attr* attr, int mask, const char* state,
                      int pe) {
  const int status = ibv_modify_qp(qp, attr, mask);
  if (status != 0) {
    ethx_shmem_fatal("ibv_modify_qp to %s for the QP to PE %d: %s", state, pe, strerror(status));
  }
}

static void qp_to_init(const ethx_rdma* rdma, struct ibv_qp* qp, int pe) {
  struct ibv_qp_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = rdma->port;
  attr.qp_access_flags =
      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "INIT",
            pe);
}

/* RTR then RTS, towards `peer`'s QP for this PE. */
static void qp_connect(const ethx_rdma* rdma, struct ibv_qp* qp, const ethx_rdma_record* mine,
                       const ethx_rdma_record* peer, uint32_t peer_qpn, int pe) {
  struct ibv_qp_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = (enum ibv_mtu)(mine->mtu < peer->mtu ? mine->mtu : peer->mtu);
  attr.dest_qp_num = peer_qpn;
  attr.rq_psn = peer->psn;
  attr.max_dest_rd_atomic = (uint8_t)mine->rd_atomic;
  attr.min_rnr_timer = kMinRnrTimer;
  attr.ah_attr.port_num = rdma->port;
  if (rdma->gid_index >= 0) {
    attr.ah_attr.is_global = 1;
    memcpy(attr.ah_attr.grh.dgid.raw, peer->gid, 16);
    attr.ah_attr.grh.sgid_index = (uint8_t)rdma->gid_index;
    attr.ah_attr.grh.hop_limit = kHopLimit;
  } else {
    attr.ah_attr.dlid = (uint16_t)peer->lid;
  }
  modify_qp(qp, &attr,
            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
            "RTR", pe);
  memset(&attr, 0, sizeof attr);
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = (uint8_t)env_u32("ETHX_SHMEM_RDMA_TIMEOUT", kDefaultTimeout);
  attr.retry_cnt = kRetryCount;
  attr.rnr_retry = kRetryCount;
  attr.sq_psn = mine->psn;
  attr.max_rd_atomic =
      (uint8_t)(mine->rd_atomic < peer->rd_atomic ? mine->rd_atomic : peer->rd_atomic);
  modify_qp(qp, &attr,
            IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                IBV_QP_MAX_QP_RD_ATOMIC,
            "RTS", pe);
}

static struct ibv_mr* register_memory(ethx_rdma* rdma, void* addr, size_t bytes, const char* what) {
  if (bytes == 0) return NULL;
  struct ibv_mr* mr = ibv_reg_mr(rdma->pd, addr, bytes,
                                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  if (mr == NULL) {
    ethx_shmem_fatal(
        "%s: ibv_reg_mr of %s (%zu KiB): %s (registered memory is pinned: the "
        "locked-memory limit, `ulimit -l`, and RAM bound it)",
        rdma->device, what, bytes >> 10, strerror(errno));
  }
  return mr;
}

/* The library's memory and the heap in one mapping at their symmetric offsets, the data
 * segment where it is (made writable throughout: RELRO pages cannot be registered). */
static void map_memory(ethx_shmem_state* state, ethx_rdma* rdma) {
  const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  const uint64_t ram_bytes = (uint64_t)sysconf(_SC_PHYS_PAGES) * page;
  state->data.offset = ETHX_SHMEM_DATA_OFFSET;
  ethx_shmem_find_data_segment(&state->data.base, &state->data.bytes);
  uint64_t heap_offset = 0;
  size_t heap_bytes = 0;
  ethx_shmem_plan_heap(state, ram_bytes, kDefaultHeapBytes, "this machine's memory (RAM)",
                       &heap_offset, &heap_bytes);
  const uint64_t region_bytes = (heap_offset + heap_bytes + page - 1) / page * page;
  void* region = mmap(NULL, region_bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (region == MAP_FAILED) {
    ethx_shmem_fatal("mapping %" PRIu64 " MiB of symmetric memory: %s", region_bytes >> 20,
                     strerror(errno));
  }
  state->memory = region;
  state->memory_bytes = region_bytes;
  ethx_shmem_heap_init(heap_offset, heap_bytes);
  rdma->mrs[ETHX_RDMA_SEGMENT_LIBRARY] =
      register_memory(rdma, region, ETHX_SHMEM_DATA_OFFSET, "the library's memory");
  rdma->mrs[ETHX_RDMA_SEGMENT_HEAP] = register_memory(
      rdma, state->memory + heap_offset, region_bytes - heap_offset, "the symmetric heap");
  if (state->data.bytes > 0 &&
      mprotect((void*)state->data.base, state->data.bytes, PROT_READ | PROT_WRITE) != 0) {
    ethx_shmem_fatal("making the data segment writable for registration: %s", strerror(errno));
  }
  rdma->mrs[ETHX_RDMA_SEGMENT_DATA] =
      register_memory(rdma, (void*)state->data.base, state->data.bytes, "the data segment");
}

static void describe_segments(const ethx_shmem_state* state, const ethx_rdma* rdma,
                              ethx_rdma_record* record) {
  const uint64_t offsets[ETHX_RDMA_SEGMENTS] = {0, state->data.offset, state->heap.offset};
  for (int i = 0; i < ETHX_RDMA_SEGMENTS; ++i) {
    const struct ibv_mr* mr = rdma->mrs[i];
    ethx_rdma_segment* segment = &record->segments[i];
    segment->offset = offsets[i];
    segment->bytes = mr != NULL ? mr->length : 0;
    segment->addr = mr != NULL ? (uint64_t)(uintptr_t)mr->addr : 0;
    segment->rkey = mr != NULL ? mr->rkey : 0;
  }
}

static uint32_t random_psn(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  const uint64_t mix = ((uint64_t)now.tv_nsec * 2654435761u) ^ ((uint64_t)getpid() << 7);
  return (uint32_t)(mix & 0xffffffu);
}

/* Every PE's segments, after checking they have the same sizes as this PE's: the same
 * program with the same SHMEM_SYMMETRIC_SIZE everywhere. */
static void learn_peers(ethx_rdma* rdma, const char* table, size_t record_bytes, int me, int npes) {
  static const char* const kNames[ETHX_RDMA_SEGMENTS] = {"library", "data segment", "heap"};
  const ethx_rdma_record* mine = (const void*)(table + (size_t)me * record_bytes);
  rdma->peers = calloc((size_t)npes * ETHX_RDMA_SEGMENTS, sizeof *rdma->peers);
  if (rdma->peers == NULL) ethx_shmem_fatal("out of memory");
  for (int pe = 0; pe < npes; ++pe) {
    const ethx_rdma_record* record = (const void*)(table + (size_t)pe * record_bytes);
    for (int i = 0; i < ETHX_RDMA_SEGMENTS; ++i) {
      if (record->segments[i].bytes != mine->segments[i].bytes ||
          record->segments[i].offset != mine->segments[i].offset) {
        ethx_shmem_fatal("PE %d's %s has %" PRIu64 " bytes at offset %" PRIu64
                         ", this PE's %" PRIu64 " at %" PRIu64
                         ": every PE must run the same program with the same "
                         "SHMEM_SYMMETRIC_SIZE",
                         pe, kNames[i], record->segments[i].bytes, record->segments[i].offset,
                         mine->segments[i].bytes, mine->segments[i].offset);
      }
      rdma->peers[pe * ETHX_RDMA_SEGMENTS + i] = record->segments[i];
    }
  }
}

/* A fetch-add through the own QP on a known word: the value must change in host order, and
 * the fetched value comes back in host order or, on devices that answer big-endian (mlx5 on
 * little-endian hosts), byte-swapped; anything else is a device these atomics cannot use. */
static void probe_atomics(ethx_rdma* rdma, ethx_shmem_state* state) {
  const uint64_t pattern = UINT64_C(0x0102030405060708);
  volatile uint64_t* word = (volatile uint64_t*)(state->memory + ETHX_RDMA_RESULT_OFFSET + 64);
  *word = pattern;
  const ethx_rdma_segment* own = &rdma->peers[state->me * ETHX_RDMA_SEGMENTS];
  const uint64_t old =
      ethx_rdma_atomic64(state->me, IBV_WR_ATOMIC_FETCH_AND_ADD,
                         own->addr + ETHX_RDMA_RESULT_OFFSET + 64, own->rkey, 1, 0);
  if (*word != pattern + 1 || (old != pattern && old != bswap_64(pattern))) {
    ethx_shmem_fatal("%s: a fetch-add of 1 on 0x%016" PRIx64
                     " through the own QP left 0x%016" PRIx64 " and returned 0x%016" PRIx64
                     ": atomics are unusable",
                     rdma->device, pattern, *word, old);
  }
  rdma->swap_results = old != pattern;
}

void ethx_rdma_setup(ethx_shmem_state* state) {
  ethx_rdma* rdma = &ethx_rdma_g;
  const int npes = state->npes;
  const size_t record_bytes = ethx_rdma_record_bytes(npes);
  char* table = calloc((size_t)npes, record_bytes);
  rdma->qps = calloc((size_t)npes, sizeof *rdma->qps);
  rdma->posted = calloc((size_t)npes, sizeof *rdma->posted);
  if (table == NULL || rdma->qps == NULL || rdma->posted == NULL) ethx_shmem_fatal("out of memory");
  ethx_rdma_record* mine = (void*)(table + (size_t)state->me * record_bytes);
  open_device(rdma);
  rdma->pd = ibv_alloc_pd(rdma->context);
  if (rdma->pd == NULL) ethx_shmem_fatal("%s: ibv_alloc_pd: %s", rdma->device, strerror(errno));
  describe_port(rdma, mine);
  map_memory(state, rdma);
  uint32_t* qpns = (uint32_t*)(mine + 1);
  for (int pe = 0; pe < npes; ++pe) {
    rdma->qps[pe] = create_qp(rdma);
    qp_to_init(rdma, rdma->qps[pe], pe);
    qpns[pe] = rdma->qps[pe]->qp_num;
  }
  mine->magic = ETHX_RDMA_MAGIC;
  mine->job = state->job;
  mine->pe = (uint32_t)state->me;
  mine->npes = (uint32_t)npes;
  mine->psn = random_psn();
  describe_segments(state, rdma, mine);
  ethx_rdma_exchange(table, state->me, npes, state->job);
  learn_peers(rdma, table, record_bytes, state->me, npes);
  for (int pe = 0; pe < npes; ++pe) {
    const ethx_rdma_record* peer = (const void*)(table + (size_t)pe * record_bytes);
    qp_connect(rdma, rdma->qps[pe], mine, peer, ((const uint32_t*)(peer + 1))[state->me], pe);
  }
  free(table);
  probe_atomics(rdma, state);
  ethx_rdma_oob_barrier(); /* every QP of the job is ready to receive */
}

/* After shmem_finalize's barrier: this PE's WRs have completed (a peer's last barrier flag
 * has been acknowledged), then the out-of-band barrier, so nobody destroys a QP a peer still
 * waits on. The memory stays mapped: the program's pointers into it stay valid. */
void ethx_rdma_teardown(void) {
  ethx_rdma* rdma = &ethx_rdma_g;
  ethx_rdma_wait(-1);
  ethx_rdma_oob_barrier();
  ethx_rdma_oob_close();
  for (int pe = 0; pe < ethx_shmem_g_state.npes; ++pe) ibv_destroy_qp(rdma->qps[pe]);
  for (int i = 0; i < ETHX_RDMA_SEGMENTS; ++i) {
    if (rdma->mrs[i] != NULL) ibv_dereg_mr(rdma->mrs[i]);
  }
  ibv_destroy_cq(rdma->cq);
  ibv_dealloc_pd(rdma->pd);
  ibv_close_device(rdma->context);
}
#endif /* ETHX_SHMEM_HAVE_VERBS */
