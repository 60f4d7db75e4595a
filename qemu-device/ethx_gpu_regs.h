/*
 * The ethx-gpu device's register map, written once: PCI identity, BARs, control registers
 * (offset, width, access), STATUS and ERROR bits, the status codes of ATOMIC_STATUS and
 * COPY_STATUS, and the ATOMIC_CMD and COPY_CMD layouts. docs/register-map.md explains them.
 *
 * Plain C99 because every side of the device includes it: the QEMU device
 * (qemu-device/qemu/ethx_gpu.c, compiled inside QEMU's tree, where qemu-device/build-qemu.sh
 * symlinks this file next to it, hence its bare-name include there), the C API and GpuDevice
 * on the host (qemu-device/host/), and the guest tools (qemu-device/guest-tools/ethx_regs.hpp).
 * Change the map here and bump ETHX_REGISTER_MAP_VERSION when guests must tell the difference.
 */
#ifndef ETHX_GPU_REGS_H
#define ETHX_GPU_REGS_H

#include <stdint.h>

/* PCI identity: vendor 0x1234 is QEMU's experimental vendor (as edu uses). */
#define ETHX_GPU_VENDOR_ID 0x1234
#define ETHX_GPU_DEVICE_ID 0xe7e0

/* BARs. */
#define ETHX_GPU_CTRL_BAR 0   /* the control registers below (MMIO, 32-bit) */
#define ETHX_GPU_HBM_BAR 2    /* this GPU's own memory (RAM, 64-bit, prefetchable) */
#define ETHX_GPU_WINDOW_BAR 4 /* the remote window (MMIO, 64-bit, address-map translated) */
#define ETHX_GPU_CTRL_BAR_BYTES 4096

/* What IDENT and VERSION read. */
#define ETHX_IDENT 0x45544858u /* "ETHX" */
/* 2: fabric geometry, atomics, the copy engine, counters; 3: FLUSH. */
#define ETHX_REGISTER_MAP_VERSION 3u

/* Register access kinds (the fourth column of ETHX_GPU_REGISTERS). */
enum ethx_reg_access {
  ETHX_ACCESS_RO = 0,   /* read-only: a write latches BAD_REGISTER */
  ETHX_ACCESS_WO = 1,   /* write-only (doorbells): a read latches BAD_REGISTER */
  ETHX_ACCESS_RW = 2,   /* read-write */
  ETHX_ACCESS_RW1C = 3, /* read, write 1 to clear */
};

/*
 * The control registers (BAR 0), one line each: X(NAME, byte offset, width in bytes, access).
 * Expanded below into ETHX_REG_<NAME> (the offset) and ETHX_REG_<NAME>_WIDTH; a program that
 * needs a table of them (the guest tools, the unit test) expands it with its own X.
 */
#define ETHX_GPU_REGISTERS(X)                                                             \
  X(IDENT, 0x00, 4, RO)          /* ETHX_IDENT */                                         \
  X(VERSION, 0x04, 4, RO)        /* ETHX_REGISTER_MAP_VERSION */                          \
  X(GPU_ID, 0x08, 4, RO)         /* this GPU's id in the fabric */                        \
  X(STATUS, 0x0c, 4, RO)         /* ETHX_STATUS_* bits */                                 \
  X(ERROR, 0x10, 4, RW1C)        /* latched ETHX_ERROR_* bits */                          \
  X(FAULT_ADDR, 0x18, 8, RO)     /* address of the first access that latched an error */  \
  X(SCRATCH, 0x20, 8, RW)        /* free for guest tools (MMIO round-trip probes) */      \
  X(GPU_COUNT, 0x28, 4, RO)      /* GPUs in the fabric */                                 \
  X(APERTURE_MIB, 0x2c, 4, RO)   /* window bytes per GPU / 2^20 */                        \
  X(HBM_MIB, 0x30, 4, RO)        /* BAR 2 bytes / 2^20 */                                 \
  X(GUEST_READY, 0x34, 4, RW)    /* the guest's tools are up (tells `ethx up --vms`) */   \
  X(ATOMIC_ADDR, 0x40, 8, RW)    /* window address of the atomic */                       \
  X(ATOMIC_OPERAND, 0x48, 8, RW) /* addend (fetch-add), new value (swap, compare-swap) */ \
  X(ATOMIC_COMPARE, 0x50, 8, RW) /* expected value (compare-swap) */                      \
  X(ATOMIC_CMD, 0x58, 4, WO)     /* doorbell: ETHX_ATOMIC_CMD(op, width) */               \
  X(ATOMIC_RESULT, 0x60, 8, RO)  /* the old value (all-ones on error) */                  \
  X(ATOMIC_STATUS, 0x68, 4, RO)  /* a status code, ETHX_GPU_OK ... ETHX_GPU_INTERNAL */   \
  X(FLUSH, 0x70, 4, RO)          /* read: waits until posted stores are performed (v3) */ \
  X(COPY_SRC, 0x80, 8, RW)       /* copy engine: source window address */                 \
  X(COPY_DST, 0x88, 8, RW)       /* destination window address */                         \
  X(COPY_LEN, 0x90, 8, RW)       /* bytes */                                              \
  X(COPY_CMD, 0x98, 4, WO)       /* doorbell: ETHX_COPY_CMD_* bits */                     \
  X(COPY_STATUS, 0x9c, 4, RO)    /* ETHX_COPY_<state>, status code in bits 15:8 */        \
  X(CNT_LOADS, 0xc0, 8, RO)      /* counters: window loads issued */                      \
  X(CNT_STORES, 0xc8, 8, RO)     /* window stores issued */                               \
  X(CNT_ATOMICS, 0xd0, 8, RO)    /* atomics issued */                                     \
  X(CNT_ERRORS, 0xd8, 8, RO)     /* failed accesses and copies */                         \
  X(CNT_TIMEOUTS, 0xe0, 8, RO)   /* of which timeouts */                                  \
  X(CNT_SERVED, 0xe8, 8, RO)     /* remote requests this GPU's completer performed */     \
  X(CNT_COPIES, 0xf0, 8, RO)     /* copies completed */                                   \
  X(CNT_COPY_BYTES, 0xf8, 8, RO) /* bytes copied */

#define ETHX_REG_OFFSET_ENUMERATOR_(name, offset, width, access) ETHX_REG_##name = (offset),
#define ETHX_REG_WIDTH_ENUMERATOR_(name, offset, width, access) ETHX_REG_##name##_WIDTH = (width),
enum ethx_gpu_register { ETHX_GPU_REGISTERS(ETHX_REG_OFFSET_ENUMERATOR_) };
enum ethx_gpu_register_width { ETHX_GPU_REGISTERS(ETHX_REG_WIDTH_ENUMERATOR_) };

/* The counters CNT_LOADS .. CNT_COPY_BYTES: ETHX_GPU_COUNTER_COUNT 64-bit registers in a row. */
#define ETHX_GPU_COUNTER_COUNT 8
#define ETHX_REG_COUNTERS ETHX_REG_CNT_LOADS
#define ETHX_REG_COUNTERS_END (ETHX_REG_COUNTERS + 8 * ETHX_GPU_COUNTER_COUNT)

/* STATUS bits. */
#define ETHX_STATUS_FABRIC_UP (1u << 0) /* joined a fabric */
#define ETHX_STATUS_ERROR (1u << 1)     /* an error is latched in ERROR */
#define ETHX_STATUS_COPY_BUSY (1u << 2) /* the copy engine is running */

/*
 * Status codes: what one access, atomic or copy came to (ATOMIC_STATUS, COPY_STATUS bits
 * 15:8, and the int results of the C API, qemu-device/host/ethx_gpu_api.h). The meanings are
 * GpuDevice's (ethx::DeviceStatus, qemu-device/host/gpu_device.hpp), which produces them.
 */
enum ethx_gpu_status {
  ETHX_GPU_OK = 0,
  ETHX_GPU_OUT_OF_WINDOW = 1, /* no window at that address (or the access straddles two) */
  ETHX_GPU_NO_RIGHTS = 2,     /* the window does not allow this access */
  ETHX_GPU_TIMEOUT = 3,       /* no response within fabric.request_timeout_ns */
  ETHX_GPU_REMOTE_ERROR = 4,  /* the target refused (bounds, partition, rights, alignment) */
  ETHX_GPU_BAD_WIDTH = 5,     /* not 1, 2, 4 or 8 bytes (atomics: 4 or 8), or a bad opcode */
  ETHX_GPU_UNREACHABLE = 6,   /* not sent: the GPU is not in the fabric, is marked down after
                                 repeated timeouts, or the device is going away */
  ETHX_GPU_INTERNAL = 7,      /* an unexpected failure inside the host library (see its log) */
};
#define ETHX_GPU_STATUS_COUNT 8

/*
 * ERROR bits (RW1C). Bits 1..6 are 1 << the status code of the failed access; an internal
 * failure has no bit of its own and latches BAD_REGISTER.
 */
#define ETHX_ERROR_BAD_REGISTER (1u << 0) /* unknown register, write to RO, read of WO */
#define ETHX_ERROR_OUT_OF_WINDOW (1u << ETHX_GPU_OUT_OF_WINDOW)
#define ETHX_ERROR_NO_RIGHTS (1u << ETHX_GPU_NO_RIGHTS)
#define ETHX_ERROR_TIMEOUT (1u << ETHX_GPU_TIMEOUT)
#define ETHX_ERROR_REMOTE_ERROR (1u << ETHX_GPU_REMOTE_ERROR)
#define ETHX_ERROR_BAD_WIDTH (1u << ETHX_GPU_BAD_WIDTH)
#define ETHX_ERROR_UNREACHABLE (1u << ETHX_GPU_UNREACHABLE)
#define ETHX_ERROR_NO_FABRIC (1u << 7) /* window access or command without a fabric */
#define ETHX_ERROR_COPY_BUSY (1u << 8) /* COPY_CMD start while a copy runs */
#define ETHX_ERROR_BIT_COUNT 9

/* The ERROR bit a failed access with status code `status` latches. */
static inline uint32_t ethx_error_bit_of_status(int status) {
  return status >= ETHX_GPU_OUT_OF_WINDOW && status <= ETHX_GPU_UNREACHABLE
             ? 1u << status
             : ETHX_ERROR_BAD_REGISTER;
}

/* ATOMIC_CMD: bits 1:0 the opcode, bits 11:8 the width in bytes (4 or 8). */
enum ethx_gpu_atomic_op {
  ETHX_GPU_FETCH_ADD = 0,
  ETHX_GPU_SWAP = 1,
  ETHX_GPU_COMPARE_SWAP = 2,
};
#define ETHX_ATOMIC_CMD_OP_MASK 0x3u
#define ETHX_ATOMIC_CMD_WIDTH_SHIFT 8
#define ETHX_ATOMIC_CMD_WIDTH_MASK 0xfu
/* No casts, so C++ callers build with -Wold-style-cast: the masks are unsigned already. */
#define ETHX_ATOMIC_CMD(op, width)  \
  (((op)&ETHX_ATOMIC_CMD_OP_MASK) | \
   (((width)&ETHX_ATOMIC_CMD_WIDTH_MASK) << ETHX_ATOMIC_CMD_WIDTH_SHIFT))

/* COPY_CMD bits. */
#define ETHX_COPY_CMD_START (1u << 0)
#define ETHX_COPY_CMD_IRQ (1u << 1) /* raise MSI vector 0 on completion */

/* COPY_STATUS: bits 7:0 the copy engine's state, bits 15:8 the status code when it failed. */
enum ethx_gpu_copy_state {
  ETHX_COPY_IDLE = 0,
  ETHX_COPY_BUSY = 1,
  ETHX_COPY_DONE = 2,
  ETHX_COPY_FAILED = 3,
};
#define ETHX_COPY_STATUS_STATE_MASK 0xffu
#define ETHX_COPY_STATUS_CODE_SHIFT 8
#define ETHX_COPY_STATUS_CODE_MASK 0xffu /* after the shift */

#endif /* ETHX_GPU_REGS_H */
