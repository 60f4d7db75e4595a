/* Finding, opening and describing a GPU: the handle's life. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdk_internal.h"

int ethx_dev_count(void) {
  int count = 0;
  free(ethx_sdk_find_gpus(&count, NULL, 0));
  return count;
}

/* Reads what the registers say about the GPU and the fabric into dev->info. */
static void read_geometry(ethx_dev* dev) {
  ethx_dev_info* info = &dev->info;
  snprintf(info->bdf, sizeof info->bdf, "%s", dev->bdf);
  info->gpu_id = (uint32_t)ETHX_SDK_READ(dev, GPU_ID);
  info->register_map_version = (uint32_t)ETHX_SDK_READ(dev, VERSION);
  info->status = (uint32_t)ETHX_SDK_READ(dev, STATUS);
  if (info->register_map_version < 2) return; /* the rest would latch BAD_REGISTER */
  info->gpu_count = (uint32_t)ETHX_SDK_READ(dev, GPU_COUNT);
  info->aperture_bytes = ETHX_SDK_READ(dev, APERTURE_MIB) << 20;
  info->hbm_bytes = ETHX_SDK_READ(dev, HBM_MIB) << 20;
}

/* What ethx_dev_open needs beyond an ethx device: map 2, a fabric, the window. */
static int check_fabric(ethx_dev* dev, char* error, size_t error_bytes) {
  const ethx_dev_info* info = &dev->info;
  if (info->register_map_version < 2) {
    ethx_sdk_report(error, error_bytes,
                    "GPU %s speaks register map version %u; this library needs version 2 or "
                    "later (rebuild QEMU: qemu-device/build-qemu.sh)",
                    dev->bdf, info->register_map_version);
    return ETHX_DEV_EVERSION;
  }
  if ((info->status & ETHX_STATUS_FABRIC_UP) == 0 || info->gpu_count == 0 ||
      info->aperture_bytes == 0) {
    ethx_sdk_report(error, error_bytes,
                    "GPU %s (gpu id %u) has not joined a fabric (STATUS.FABRIC_UP is 0; start "
                    "QEMU with -device ethx-gpu,...,fabric=NAME after `ethx up`)",
                    dev->bdf, info->gpu_id);
    return ETHX_DEV_ENODEV;
  }
  const int mapped = ethx_sdk_map_window(dev);
  if (mapped != 0) ethx_sdk_report(error, error_bytes, "%s", dev->last_error);
  return mapped;
}

int ethx_sdk_map_window(ethx_dev* dev) {
  if (dev->window.base != NULL) return 0;
  char error[ETHX_SDK_ERROR_BYTES];
  const int mapped =
      ethx_sdk_map_bar(dev->sysfs_dir, ETHX_GPU_WINDOW_BAR, &dev->window, error, sizeof error);
  if (mapped != 0) return ethx_sdk_fail(dev, mapped, "GPU %s: %s", dev->bdf, error);
  dev->info.window_bytes = dev->window.bytes;
  return 0;
}

/* Maps BAR 0 and, unless raw, checks that it is an ethx GPU's. */
static int map_registers(ethx_dev* dev, enum ethx_sdk_open_mode mode, char* error,
                         size_t error_bytes) {
  int status = ethx_sdk_enable_memory(dev->sysfs_dir, dev->bdf, error, error_bytes);
  if (status == 0) {
    status = ethx_sdk_map_bar(dev->sysfs_dir, ETHX_GPU_CTRL_BAR, &dev->regs, error, error_bytes);
  }
  if (status != 0) return status;
  if (dev->regs.bytes < ETHX_GPU_CTRL_BAR_BYTES) {
    ethx_sdk_report(error, error_bytes, "GPU %s: BAR 0 has %llu bytes, not %d", dev->bdf,
                    (unsigned long long)dev->regs.bytes, ETHX_GPU_CTRL_BAR_BYTES);
    return ETHX_DEV_ENODEV;
  }
  if (mode == ETHX_SDK_OPEN_RAW) return 0;
  const uint32_t ident = (uint32_t)ETHX_SDK_READ(dev, IDENT);
  if (ident != ETHX_IDENT) {
    ethx_sdk_report(error, error_bytes, "GPU %s: IDENT reads 0x%08x, not 0x%08x (\"ETHX\")",
                    dev->bdf, ident, ETHX_IDENT);
    return ETHX_DEV_ENODEV;
  }
  return 0;
}

/* A zeroed handle for GPU `bdf`, or NULL (out of memory, said in error). */
static ethx_dev* new_handle(const char* bdf, char* error, size_t error_bytes) {
  ethx_dev* dev = calloc(1, sizeof *dev);
  if (dev == NULL) {
    ethx_sdk_report(error, error_bytes, "out of memory opening GPU %s", bdf);
    return NULL;
  }
  snprintf(dev->bdf, sizeof dev->bdf, "%s", bdf);
  return dev;
}

/* Attaches the handle to its GPU's lock in lock_dir (NULL: the default); its failures are
 * described in the handle's last_error from then on. */
static int attach_lock(ethx_dev* dev, const char* lock_dir, char* error, size_t error_bytes) {
  const int status = ethx_sdk_lock_user_open(&dev->lock, lock_dir, dev->bdf, error, error_bytes);
  dev->lock.error = dev->last_error;
  dev->lock.error_bytes = sizeof dev->last_error;
  return status;
}

ethx_dev* ethx_sdk_open_at(const char* function_dir, const char* bdf, enum ethx_sdk_open_mode mode,
                           char* error, size_t error_bytes) {
  ethx_dev* dev = new_handle(bdf, error, error_bytes);
  if (dev == NULL) return NULL;
  snprintf(dev->sysfs_dir, sizeof dev->sysfs_dir, "%s", function_dir);
  int status = map_registers(dev, mode, error, error_bytes);
  if (status == 0) {
    read_geometry(dev);
    if (mode == ETHX_SDK_OPEN_FABRIC) status = check_fabric(dev, error, error_bytes);
  }
  /* A raw handle only reads and maps (the lock is for command registers): no lock file. */
  if (status == 0 && mode == ETHX_SDK_OPEN_FABRIC)
    status = attach_lock(dev, NULL, error, error_bytes);
  if (status != 0) {
    ethx_dev_close(dev);
    return NULL;
  }
  return dev;
}

ethx_dev* ethx_sdk_open_io(const ethx_sdk_io* io, const char* bdf, uint64_t window_bytes,
                           const char* lock_dir, char* error, size_t error_bytes) {
  ethx_dev* dev = new_handle(bdf, error, error_bytes);
  if (dev == NULL) return NULL;
  dev->io = *io;
  dev->regs.bytes = ETHX_GPU_CTRL_BAR_BYTES;
  read_geometry(dev);
  dev->info.window_bytes = window_bytes;
  if (attach_lock(dev, lock_dir, error, error_bytes) != 0) {
    ethx_dev_close(dev);
    return NULL;
  }
  return dev;
}

/* Opens <sysfs root>/<bdf>. */
static ethx_dev* open_in_sysfs(const char* bdf, enum ethx_sdk_open_mode mode, char* error,
                               size_t error_bytes) {
  char dir[ETHX_SDK_PATH_BYTES];
  snprintf(dir, sizeof dir, "%s/%s", ethx_sdk_sysfs_root(), bdf);
  return ethx_sdk_open_at(dir, bdf, mode, error, error_bytes);
}

ethx_dev* ethx_dev_open(int index, char* error, size_t error_bytes) {
  int count = 0;
  ethx_sdk_bdf* gpus = ethx_sdk_find_gpus(&count, error, error_bytes);
  ethx_dev* dev = NULL;
  if (count == 0) {
    ethx_sdk_report(error, error_bytes,
                    "no ethx GPU in this VM (no PCI function %04x:%04x under %s)",
                    ETHX_GPU_VENDOR_ID, ETHX_GPU_DEVICE_ID, ethx_sdk_sysfs_root());
  } else if (count > 0 && (index < 0 || index >= count)) {
    ethx_sdk_report(error, error_bytes, "GPU index %d: this VM has %d ethx GPU%s (0-%d)", index,
                    count, count == 1 ? "" : "s", count - 1);
  } else if (count > 0) {
    dev = open_in_sysfs(gpus[index].name, ETHX_SDK_OPEN_FABRIC, error, error_bytes);
  }
  free(gpus);
  return dev;
}

/* GPU_ID of the GPU at `bdf`, or -1 if it cannot be read (not mapped, not ethx). */
static int64_t gpu_id_at(const char* bdf) {
  ethx_dev* dev = open_in_sysfs(bdf, ETHX_SDK_OPEN_RAW, NULL, 0);
  const int64_t id = dev != NULL ? (int64_t)dev->info.gpu_id : -1;
  ethx_dev_close(dev);
  return id;
}

ethx_dev* ethx_dev_open_gpu(uint32_t gpu_id, char* error, size_t error_bytes) {
  int count = 0;
  ethx_sdk_bdf* gpus = ethx_sdk_find_gpus(&count, error, error_bytes);
  char seen[256] = "";
  size_t used = 0;
  for (int i = 0; i < count; ++i) {
    const int64_t id = gpu_id_at(gpus[i].name);
    if (id == (int64_t)gpu_id) {
      ethx_dev* dev = open_in_sysfs(gpus[i].name, ETHX_SDK_OPEN_FABRIC, error, error_bytes);
      free(gpus);
      return dev;
    }
    if (used < sizeof seen) {
      used += (size_t)snprintf(seen + used, sizeof seen - used, "%s%s = %lld", i ? ", " : "",
                               gpus[i].name, (long long)id);
    }
  }
  if (count >= 0) {
    ethx_sdk_report(error, error_bytes, "no GPU with fabric id %u in this VM (%s%s)", gpu_id,
                    count == 0 ? "no ethx GPU under " : "its GPUs: ",
                    count == 0 ? ethx_sdk_sysfs_root() : seen);
  }
  free(gpus);
  return NULL;
}

void ethx_dev_close(ethx_dev* dev) {
  if (dev == NULL) return;
  ethx_sdk_lock_user_close(&dev->lock);
  ethx_sdk_unmap_bar(&dev->window);
  ethx_sdk_unmap_bar(&dev->hbm);
  ethx_sdk_unmap_bar(&dev->regs);
  free(dev);
}

int ethx_dev_get_info(const ethx_dev* dev, ethx_dev_info* info) {
  if (dev == NULL || info == NULL) return ETHX_DEV_EINVAL;
  *info = dev->info;
  info->status = (uint32_t)ethx_sdk_reg_read(dev, ETHX_REG_STATUS, ETHX_REG_STATUS_WIDTH);
  return ETHX_GPU_OK;
}

void* ethx_dev_hbm(ethx_dev* dev, uint64_t* bytes) {
  if (dev == NULL) return NULL;
  if (dev->hbm.base == NULL) {
    char error[ETHX_SDK_ERROR_BYTES];
    if (ethx_sdk_map_bar(dev->sysfs_dir, ETHX_GPU_HBM_BAR, &dev->hbm, error, sizeof error) != 0) {
      ethx_sdk_fail(dev, ETHX_DEV_ESYS, "GPU %s: %s", dev->bdf, error);
      return NULL;
    }
  }
  if (bytes != NULL) *bytes = dev->hbm.bytes;
  return (void*)(uintptr_t)dev->hbm.base;
}

volatile void* ethx_dev_window(ethx_dev* dev, uint64_t* bytes) {
  if (dev == NULL) return NULL;
  if (bytes != NULL) *bytes = dev->window.bytes;
  return dev->window.base;
}

uint64_t ethx_dev_window_addr(const ethx_dev* dev, uint32_t gpu_id, uint64_t offset) {
  return (uint64_t)gpu_id * dev->info.aperture_bytes + offset;
}
