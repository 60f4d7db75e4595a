/*
 * libethx-gpu's insides, shared by its files (not installed): the handle, sysfs discovery,
 * BAR mappings, single register accesses, the lock registry, errors. Every function here is
 * hidden from the shared library by ethx-gpu.map; the guest tools (qemu-device/guest-tools)
 * link the static library and use a few of them.
 */
#ifndef ETHX_SDK_INTERNAL_H
#define ETHX_SDK_INTERNAL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "ethx/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ETHX_SDK_ERROR_BYTES 320
#define ETHX_SDK_PATH_BYTES 512

/* One BAR mapped through sysfs resourceN. */
typedef struct ethx_sdk_bar {
  volatile uint8_t* base; /* NULL while unmapped */
  uint64_t bytes;
} ethx_sdk_bar;

/* A lock file this process has open, shared by its users of one GPU's lock (lock.c). */
typedef struct ethx_sdk_lock_file ethx_sdk_lock_file;

/* Register access other than through a mapping of BAR 0: the guest tools run this library's
 * register sequences on their own BarAccess (device models, in their unit tests). */
typedef struct ethx_sdk_io {
  uint64_t (*read)(void* context, uint64_t offset, unsigned width);
  void (*write)(void* context, uint64_t offset, unsigned width, uint64_t value);
  void* context;
} ethx_sdk_io;

/* One party that takes a GPU's lock: a handle, or the guest tools' DeviceLock. */
typedef struct ethx_sdk_lock_user {
  ethx_sdk_lock_file* file; /* NULL: not attached */
  int held;                 /* this user holds the lock */
  char bdf[16];
  char* error; /* where a failure is described */
  size_t error_bytes;
} ethx_sdk_lock_user;

struct ethx_dev {
  char bdf[16];
  char sysfs_dir[ETHX_SDK_PATH_BYTES];
  ethx_sdk_bar regs;       /* BAR 0 (only its size when io is used) */
  ethx_sdk_io io;          /* io.read NULL: the registers are regs.base */
  ethx_sdk_bar hbm;        /* BAR 2, mapped on first use */
  ethx_sdk_bar window;     /* BAR 4 */
  ethx_dev_info info;      /* read at open (status refreshed by ethx_dev_get_info) */
  ethx_sdk_lock_user lock; /* held: this handle holds the command registers (ethx_dev_lock) */
  int copy_started;        /* this handle started the copy COPY_STATUS shows, not yet seen end */
  char last_error[ETHX_SDK_ERROR_BYTES];
};

/* ---- sysfs (sysfs.c) ---- */
/* ETHX_SYSFS_PCI_DEVICES, or /sys/bus/pci/devices. */
const char* ethx_sdk_sysfs_root(void);
/* The ethx GPUs' BDFs under the sysfs root, sorted: a malloc'ed array of count entries (NULL
 * when none), or NULL with a negative *count and the reason in error. */
typedef struct ethx_sdk_bdf {
  char name[16];
} ethx_sdk_bdf;
ethx_sdk_bdf* ethx_sdk_find_gpus(int* count, char* error, size_t error_bytes);
/* The same under another sysfs root (the guest tools take theirs as an argument). */
ethx_sdk_bdf* ethx_sdk_find_gpus_in(const char* root, int* count, char* error, size_t error_bytes);
/* Makes the function decode memory (the config space's command register, else sysfs enable):
 * 0, or ETHX_DEV_ESYS with the reason in error. */
int ethx_sdk_enable_memory(const char* sysfs_dir, const char* bdf, char* error, size_t error_bytes);

/* ---- BARs (bar.c) ---- */
/* Maps <sysfs_dir>/resource<index> read-write (uncached): 0, ETHX_DEV_ENODEV if the BAR is
 * absent or empty, ETHX_DEV_ESYS if open or mmap failed; the reason in error. */
int ethx_sdk_map_bar(const char* sysfs_dir, unsigned index, ethx_sdk_bar* bar, char* error,
                     size_t error_bytes);
void ethx_sdk_unmap_bar(ethx_sdk_bar* bar);

/* ---- single accesses (regs.c) ---- */
/* 1 if `width` is 1, 2, 4 or 8 and [offset, offset + width) is aligned and inside `bytes`. */
int ethx_sdk_access_ok(uint64_t bytes, uint64_t offset, unsigned width);
/* Exactly one volatile access of `width` bytes (checked by the caller). */
uint64_t ethx_sdk_mmio_read(volatile uint8_t* base, uint64_t offset, unsigned width);
void ethx_sdk_mmio_write(volatile uint8_t* base, uint64_t offset, unsigned width, uint64_t value);
/* One register access of the handle (through io if it has one; checked by the caller). */
uint64_t ethx_sdk_reg_read(const ethx_dev* dev, uint64_t offset, unsigned width);
void ethx_sdk_reg_write(ethx_dev* dev, uint64_t offset, unsigned width, uint64_t value);
/* A register by its ethx_gpu_regs.h name: ETHX_SDK_READ(dev, ERROR). */
#define ETHX_SDK_READ(dev, NAME) ethx_sdk_reg_read((dev), ETHX_REG_##NAME, ETHX_REG_##NAME##_WIDTH)
#define ETHX_SDK_WRITE(dev, NAME, value) \
  ethx_sdk_reg_write((dev), ETHX_REG_##NAME, ETHX_REG_##NAME##_WIDTH, (value))
/* All-ones of `width` bytes. */
uint64_t ethx_sdk_all_ones(unsigned width);

/* ---- the handle (device.c) ---- */
enum ethx_sdk_open_mode {
  ETHX_SDK_OPEN_RAW, /* BAR 0 mapped, nothing checked, no lock: the guest tools show any device */
  ETHX_SDK_OPEN_FABRIC, /* IDENT, register map 2 or later, a joined fabric; BAR 4 mapped */
};
/* Opens the PCI function in `function_dir` (<sysfs root>/<bdf>). */
ethx_dev* ethx_sdk_open_at(const char* function_dir, const char* bdf, enum ethx_sdk_open_mode mode,
                           char* error, size_t error_bytes);
/* A handle whose registers are `io` (no BAR mapped; window loads and stores refused) over a
 * window of `window_bytes`, its lock in `lock_dir` (NULL: the default). Geometry is read through
 * io; nothing is checked (the guest tools check what each command needs). */
ethx_dev* ethx_sdk_open_io(const ethx_sdk_io* io, const char* bdf, uint64_t window_bytes,
                           const char* lock_dir, char* error, size_t error_bytes);
/* Maps BAR 4 if it is not: 0, or a status with the reason in ethx_dev_last_error. */
int ethx_sdk_map_window(ethx_dev* dev);

/* ---- errors (errors.c) ---- */
/* Records a one-line reason on the handle and returns `code`. */
int ethx_sdk_fail(ethx_dev* dev, int code, const char* format, ...)
    __attribute__((format(printf, 3, 4)));
/* snprintf into a caller's error buffer (NULL or 0 bytes: nothing). */
void ethx_sdk_report(char* error, size_t error_bytes, const char* format, ...)
    __attribute__((format(printf, 3, 4)));
/* The status a set of ERROR bits stands for: the lowest failed-access bit (1..6) as its code,
 * NO_FABRIC as UNREACHABLE, BAD_REGISTER as INTERNAL, COPY_BUSY as ETHX_DEV_EBUSY; OK if 0. */
int ethx_sdk_status_of_error_bits(uint32_t bits);

/* ---- lock (lock.c) ---- */
/* Attaches `user` to GPU `bdf`'s lock file in `dir` (NULL: ethx_sdk_lock_dir()), opened once
 * per process: 0, or ETHX_DEV_ESYS with the reason in error. Failures of take are described
 * in the same buffer. */
int ethx_sdk_lock_user_open(ethx_sdk_lock_user* user, const char* dir, const char* bdf, char* error,
                            size_t error_bytes);
/* Gives the lock back if held, detaches. */
void ethx_sdk_lock_user_close(ethx_sdk_lock_user* user);
/* Takes the lock within timeout_ms (< 0: ethx_sdk_lock_timeout_ms()): OK, ETHX_DEV_ELOCK
 * naming the holder, ETHX_DEV_ESYS. */
int ethx_sdk_lock_user_take(ethx_sdk_lock_user* user, int timeout_ms);
void ethx_sdk_lock_user_give(ethx_sdk_lock_user* user);
/* ETHX_DEV_LOCK_DIR, else the first of /run/lock, /run, /tmp, /dev/shm that exists. */
const char* ethx_sdk_lock_dir(void);
/* The default timeout: ETHX_DEV_LOCK_TIMEOUT_MS, else 10 s. */
int ethx_sdk_lock_timeout_ms(void);
/* For one command: takes the lock unless the handle holds it. *taken says whether to give it
 * back (ethx_sdk_command_end). */
int ethx_sdk_command_begin(ethx_dev* dev, int* taken);
void ethx_sdk_command_end(ethx_dev* dev, int taken);

/* ---- time (clock.c) ---- */
int64_t ethx_sdk_now_ns(void); /* CLOCK_MONOTONIC */
void ethx_sdk_sleep_ns(int64_t ns);

#ifdef __cplusplus
}
#endif

#endif /* ETHX_SDK_INTERNAL_H */
