/*
 * The C API the ethx-gpu QEMU device (qemu-device/qemu/ethx_gpu.c) links against: one handle
 * per emulated GPU, wrapping ethx::GpuDevice (qemu-device/host/gpu_device.hpp). Plain C so
 * QEMU's C code can include it; no C++ exception crosses it (every function catches and reports).
 *
 * Threads: ethx_gpu_load/store/atomic/flush may be called from any thread (vCPUs) concurrently;
 * loads, atomics and flushes block until the fabric answers or the engine's timeout fires, and a
 * store blocks while the queue of posted stores is full, so callers holding a lock others need
 * (QEMU's big lock) should drop it around them (or use ethx_gpu_try_store first). The copy callback
 * runs on the handle's own service thread, or on a thread waiting in ethx_gpu_load/atomic
 * (which drives the engine while it waits); it must not block.
 */
#ifndef ETHX_GPU_API_H
#define ETHX_GPU_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ethx_gpu ethx_gpu;

typedef struct ethx_gpu_options {
  const char* fabric; /* the running fabric's instance name, e.g. "up-default" */
  uint32_t gpu_id;
  uint32_t gpus;           /* 0: from the topology */
  const char* config_path; /* NULL or "": the embedded default topology */
  const char* transport;   /* "shm" (NULL), "afxdp" or "afpacket" */
  const char* netns_tag;   /* socket transports: the run's veth for this GPU, unless ... */
  const char* interface;   /* ... this interface (default: the config's gpu.interface) */
  const char* netns;       /* its network namespace (NULL, "": gpu.netns, else QEMU's own) */
} ethx_gpu_options;

/*
 * Status codes (the int results, ETHX_GPU_OK ... ETHX_GPU_INTERNAL) and atomic opcodes
 * (ETHX_GPU_FETCH_ADD, ETHX_GPU_SWAP, ETHX_GPU_COMPARE_SWAP) are the register map's, defined in
 * ethx_gpu_regs.h (qemu-device/): include it too. This header does not include it itself
 * because the two are included by different paths (from the repository root here, by bare
 * name inside QEMU's tree).
 */

typedef struct ethx_gpu_counters {
  uint64_t loads, stores, atomics, errors, timeouts, served_requests, copies, copy_bytes;
} ethx_gpu_counters;

/* Joins the fabric; NULL on failure with the reason in error[0..error_bytes). */
ethx_gpu* ethx_gpu_open(const ethx_gpu_options* options, char* error, size_t error_bytes);
void ethx_gpu_close(ethx_gpu* gpu);

/* A fresh shared mapping of this GPU's memory (for a RAM BAR); unmap with munmap. */
void* ethx_gpu_map_hbm(ethx_gpu* gpu, uint64_t* bytes);
uint64_t ethx_gpu_window_bytes(const ethx_gpu* gpu);
uint32_t ethx_gpu_gpu_count(const ethx_gpu* gpu);
uint64_t ethx_gpu_aperture_bytes(const ethx_gpu* gpu);

/* On failure *value is all-ones and *fault_addr the failing window address. */
int ethx_gpu_load(ethx_gpu* gpu, uint64_t window_addr, unsigned width, uint64_t* value,
                  uint64_t* fault_addr);
int ethx_gpu_store(ethx_gpu* gpu, uint64_t window_addr, unsigned width, uint64_t value,
                   uint64_t* fault_addr);
/*
 * A store that never waits: ETHX_GPU_QUEUE_FULL (nothing queued, nothing counted) when the
 * device's queue of posted stores is full, else what ethx_gpu_store returns. A caller holding
 * a lock others need tries this first and drops the lock only to wait in ethx_gpu_store.
 */
#define ETHX_GPU_QUEUE_FULL (-1)
int ethx_gpu_try_store(ethx_gpu* gpu, uint64_t window_addr, unsigned width, uint64_t value,
                       uint64_t* fault_addr);
int ethx_gpu_atomic(ethx_gpu* gpu, int op, uint64_t window_addr, unsigned width, uint64_t operand,
                    uint64_t compare, uint64_t* old_value, uint64_t* fault_addr);

/*
 * Waits until every store this GPU posted so far (from any thread) is performed at its target
 * (GpuDevice::flush_all: a fabric flush to each GPU written to). Blocks like a load: a caller
 * holding a lock others need drops it. On failure (TIMEOUT, UNREACHABLE, ...) *fault_addr is
 * the window address of the first failing GPU's memory.
 */
int ethx_gpu_flush(ethx_gpu* gpu, uint64_t* fault_addr);

typedef void (*ethx_gpu_copy_done)(void* opaque, int status, uint64_t fault_addr);
/* Starts a copy; 0 if started, -1 if one is already running. */
int ethx_gpu_copy(ethx_gpu* gpu, uint64_t src, uint64_t dst, uint64_t bytes,
                  ethx_gpu_copy_done done, void* opaque);

/*
 * Starts a copy and drives it on the calling thread for at most budget_ns (QEMU: the vCPU
 * writing COPY_CMD without the interrupt bit, with the big lock dropped: the guest will poll),
 * without waking the service thread to compete for the engine; a copy that outlasts the budget
 * is handed to the service thread. 0 if started, -1 if one is already running.
 */
int ethx_gpu_copy_driven(ethx_gpu* gpu, uint64_t src, uint64_t dst, uint64_t bytes,
                         ethx_gpu_copy_done done, void* opaque, int64_t budget_ns);

/*
 * Drives the running copy on the calling thread for at most budget_ns (QEMU: the vCPU reading
 * COPY_STATUS, with the big lock dropped), so it progresses without waiting for the service
 * thread. 1 if a copy is still running, 0 if not.
 */
int ethx_gpu_copy_poll(ethx_gpu* gpu, int64_t budget_ns);

/* The guest's tools are up: reported to whoever started the fabric (`ethx up --vms`). */
void ethx_gpu_guest_ready(ethx_gpu* gpu);

void ethx_gpu_get_counters(const ethx_gpu* gpu, ethx_gpu_counters* counters);
const char* ethx_gpu_status_name(int status);

#ifdef __cplusplus
}
#endif

#endif /* ETHX_GPU_API_H */
