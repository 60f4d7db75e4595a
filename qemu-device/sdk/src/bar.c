/* One PCI BAR mapped into this process through sysfs resourceN. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sdk_internal.h"

int ethx_sdk_map_bar(const char* sysfs_dir, unsigned index, ethx_sdk_bar* bar, char* error,
                     size_t error_bytes) {
  char path[ETHX_SDK_PATH_BYTES];
  snprintf(path, sizeof path, "%s/resource%u", sysfs_dir, index);
  /* O_SYNC: sysfs maps the BAR uncached only when asked to. */
  const int fd = open(path, O_RDWR | O_SYNC | O_CLOEXEC);
  if (fd < 0) {
    const int absent = errno == ENOENT;
    ethx_sdk_report(error, error_bytes, "cannot open %s: %s%s", path, strerror(errno),
                    absent && index != ETHX_GPU_CTRL_BAR ? " (register map version 2 needed)" : "");
    return absent ? ETHX_DEV_ENODEV : ETHX_DEV_ESYS;
  }
  struct stat info;
  if (fstat(fd, &info) != 0 || info.st_size <= 0) {
    close(fd);
    ethx_sdk_report(error, error_bytes, "%s is empty (BAR %u not assigned?)", path, index);
    return ETHX_DEV_ENODEV;
  }
  void* base = mmap(NULL, (size_t)info.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int mmap_errno = errno;
  close(fd); /* the mapping stays valid */
  if (base == MAP_FAILED) {
    ethx_sdk_report(error, error_bytes, "cannot mmap %s: %s", path, strerror(mmap_errno));
    return ETHX_DEV_ESYS;
  }
  bar->base = base;
  bar->bytes = (uint64_t)info.st_size;
  return 0;
}

void ethx_sdk_unmap_bar(ethx_sdk_bar* bar) {
  if (bar->base != NULL) munmap((void*)(uintptr_t)bar->base, (size_t)bar->bytes);
  bar->base = NULL;
  bar->bytes = 0;
}
