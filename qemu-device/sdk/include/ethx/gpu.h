/*
 * <ethx/gpu.h>: the device SDK for programs inside an ethx VM (`-lethx-gpu`, pkg-config
 * ethx-gpu). One ethx_dev is one ethx-gpu PCI function of this VM, reached through sysfs with
 * no kernel driver: its registers (BAR 0), its own memory (BAR 2, "HBM") and the remote window
 * (BAR 4), where GPU g's memory starts at window address g x aperture.
 *
 * Plain C (C99 and C++ callers alike). Results are int status codes: the register map's
 * ETHX_GPU_OK ... ETHX_GPU_INTERNAL (ethx_gpu_regs.h, included below) for what the device
 * reports, and negative ETHX_DEV_E* for what went wrong in this library; ethx_dev_last_error()
 * then says why in one line. docs/programs.md shows a complete program.
 *
 * The command registers (atomics, copy engine) are one set per GPU: processes sharing a GPU
 * serialise their use with a lock file in the guest (a POSIX record lock on
 * /run/lock/ethx-gpu-<BDF>.lock). A call that needs them takes the lock for itself unless the
 * process holds it (ethx_dev_lock), and gives up after the lock timeout naming the holder's PID.
 * Environment: ETHX_DEV_LOCK_TIMEOUT_MS (the default timeout), ETHX_DEV_LOCK_DIR (where the lock
 * files are), ETHX_SYSFS_PCI_DEVICES (instead of /sys/bus/pci/devices: tests).
 *
 * Threads: one ethx_dev per thread, or serialise calls on one handle yourself.
 */
#ifndef ETHX_GPU_H
#define ETHX_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "ethx_gpu_regs.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ETHX_SDK_VERSION 1

/* This library's own failures (negative, apart from the register map's status codes). */
enum ethx_dev_error {
  ETHX_DEV_ENODEV = -1,    /* no such GPU in this VM, or it has not joined a fabric */
  ETHX_DEV_ELOCK = -2,     /* the command registers' lock stayed held past the timeout */
  ETHX_DEV_EBUSY = -3,     /* the copy engine is busy (a copy of another process) */
  ETHX_DEV_EINVAL = -4,    /* a bad argument: width, alignment, address, length */
  ETHX_DEV_ESYS = -5,      /* a system call failed (open, mmap, ...): errno says which */
  ETHX_DEV_ETIMEDOUT = -6, /* a copy or flush did not finish within its timeout */
  ETHX_DEV_EVERSION = -7,  /* the device's register map is too old for this call */
};

typedef struct ethx_dev ethx_dev;

typedef struct ethx_dev_info {
  char bdf[16];                  /* PCI address in this VM, "0000:00:02.0" */
  uint32_t gpu_id;               /* this GPU's id in the fabric */
  uint32_t gpu_count;            /* GPUs in the fabric */
  uint32_t register_map_version; /* ETHX_REGISTER_MAP_VERSION of the device */
  uint32_t status;               /* ETHX_STATUS_* bits */
  uint64_t aperture_bytes;       /* window bytes per GPU */
  uint64_t hbm_bytes;            /* this GPU's memory (BAR 2) */
  uint64_t window_bytes;         /* the whole window (BAR 4) */
} ethx_dev_info;

typedef struct ethx_dev_counters {
  uint64_t loads, stores, atomics, errors, timeouts, served_requests, copies, copy_bytes;
} ethx_dev_counters;

/* What the device latched (ERROR, FAULT_ADDR), read and cleared by ethx_dev_take_error. */
typedef struct ethx_dev_fault {
  uint32_t error_bits; /* ETHX_ERROR_* */
  uint64_t fault_addr; /* window address (or register offset) of the first failed access */
} ethx_dev_fault;

/* ---- finding and opening GPUs ---- */

/* The ethx GPUs of this VM (PCI functions 0x1234:0xe7e0), or a negative ETHX_DEV_E*. */
int ethx_dev_count(void);
/* Opens the index-th GPU of this VM (BDF order). NULL on failure: the reason in error. */
ethx_dev* ethx_dev_open(int index, char* error, size_t error_bytes);
/* Opens the GPU whose fabric id is gpu_id. */
ethx_dev* ethx_dev_open_gpu(uint32_t gpu_id, char* error, size_t error_bytes);
/* Unmaps, releases a lock this handle holds, frees. NULL is fine. */
void ethx_dev_close(ethx_dev* dev);

int ethx_dev_get_info(const ethx_dev* dev, ethx_dev_info* info);
/* One line about the last failure on this handle ("" if none). */
const char* ethx_dev_last_error(const ethx_dev* dev);
/* "ok", "timeout", "lock held", ... for any status this SDK returns. */
const char* ethx_dev_status_name(int status);

/* ---- memory ---- */

/* BAR 2, this GPU's memory, mapped read-write (plain loads and stores; remote GPUs reach the
 * same bytes through their windows). NULL if it cannot be mapped. */
void* ethx_dev_hbm(ethx_dev* dev, uint64_t* bytes);
/* BAR 4, the remote window: every 1/2/4/8-byte access is one fabric load or store. */
volatile void* ethx_dev_window(ethx_dev* dev, uint64_t* bytes);
/* The window address of byte `offset` of GPU `gpu_id`'s memory. */
uint64_t ethx_dev_window_addr(const ethx_dev* dev, uint32_t gpu_id, uint64_t offset);

/* ---- window loads and stores (one access each; the address naturally aligned) ----
 * A load that failed returns the device's all-ones and its status (TIMEOUT, UNREACHABLE, ...),
 * the error left latched for ethx_dev_take_error. A store is posted: it returns ETHX_GPU_OK
 * once the device has taken it; a remote failure shows in the next ethx_dev_flush. */
int ethx_dev_load8(ethx_dev* dev, uint64_t window_addr, uint8_t* value);
int ethx_dev_load16(ethx_dev* dev, uint64_t window_addr, uint16_t* value);
int ethx_dev_load32(ethx_dev* dev, uint64_t window_addr, uint32_t* value);
int ethx_dev_load64(ethx_dev* dev, uint64_t window_addr, uint64_t* value);
int ethx_dev_store8(ethx_dev* dev, uint64_t window_addr, uint8_t value);
int ethx_dev_store16(ethx_dev* dev, uint64_t window_addr, uint16_t value);
int ethx_dev_store32(ethx_dev* dev, uint64_t window_addr, uint32_t value);
int ethx_dev_store64(ethx_dev* dev, uint64_t window_addr, uint64_t value);

/* Waits until every store this GPU posted so far is performed at its target (FLUSH, register
 * map 3): the status of the flush, or a store's failure latched since the last flush. */
int ethx_dev_flush(ethx_dev* dev);

/* ---- atomics through the command interface (width 4 or 8, naturally aligned) ----
 * op: ETHX_GPU_FETCH_ADD, ETHX_GPU_SWAP, ETHX_GPU_COMPARE_SWAP. *old_value gets the value
 * before (all-ones on failure). Atomic with every other fabric atomic on that memory,
 * including this GPU's own (use the window address of this GPU for local ones). */
int ethx_dev_atomic(ethx_dev* dev, int op, uint64_t window_addr, unsigned width, uint64_t operand,
                    uint64_t compare, uint64_t* old_value);

/* ---- the copy engine (window address to window address, polled) ---- */
/* Copies and waits (timeout_ns 0: the default, 30 s). */
int ethx_dev_copy(ethx_dev* dev, uint64_t src, uint64_t dst, uint64_t bytes, int64_t timeout_ns);
/* Starts a copy; the caller must hold the lock (ethx_dev_lock) until it has polled it done. */
int ethx_dev_copy_start(ethx_dev* dev, uint64_t src, uint64_t dst, uint64_t bytes);
/* 1 while the copy runs; 0 when it finished, with its status in *status. */
int ethx_dev_copy_poll(ethx_dev* dev, int* status);

/* ---- the command registers' lock ---- */
/* Holds the lock for this handle until ethx_dev_unlock (timeout_ms < 0: the default, 10 s,
 * or ETHX_DEV_LOCK_TIMEOUT_MS). ETHX_DEV_ELOCK names the holder in ethx_dev_last_error. */
int ethx_dev_lock(ethx_dev* dev, int timeout_ms);
void ethx_dev_unlock(ethx_dev* dev);

/* ---- errors and counters ---- */
/* Reads and clears the latched error: ETHX_GPU_OK if none, else the status of the first
 * latched failure, details in *fault (may be NULL). */
int ethx_dev_take_error(ethx_dev* dev, ethx_dev_fault* fault);
int ethx_dev_get_counters(ethx_dev* dev, ethx_dev_counters* counters);

/* Raw register access (BAR 0; 4- or 8-byte registers by the register map). */
uint64_t ethx_dev_read_reg(ethx_dev* dev, unsigned offset, unsigned width);
void ethx_dev_write_reg(ethx_dev* dev, unsigned offset, unsigned width, uint64_t value);

#ifdef __cplusplus
}
#endif

#endif /* ETHX_GPU_H */
