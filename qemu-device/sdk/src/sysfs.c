/* Finding the ethx GPUs through sysfs, without a kernel driver bound to them. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdk_internal.h"

const char* ethx_sdk_sysfs_root(void) {
  const char* root = getenv("ETHX_SYSFS_PCI_DEVICES");
  return root != NULL && root[0] != '\0' ? root : "/sys/bus/pci/devices";
}

/* sysfs id files hold one hex number ("0x1234\n"); a missing or odd file is no match. */
static int read_hex_file(const char* path, unsigned long* value) {
  FILE* file = fopen(path, "re");
  if (file == NULL) return 0;
  char text[32];
  const int ok = fscanf(file, "%31s", text) == 1;
  fclose(file);
  if (!ok) return 0;
  char* end = NULL;
  *value = strtoul(text, &end, 16);
  return end != text && *end == '\0';
}

static int is_ethx_gpu(const char* root, const char* name) {
  char path[ETHX_SDK_PATH_BYTES];
  unsigned long vendor = 0;
  unsigned long device = 0;
  snprintf(path, sizeof path, "%s/%s/vendor", root, name);
  if (!read_hex_file(path, &vendor) || vendor != ETHX_GPU_VENDOR_ID) return 0;
  snprintf(path, sizeof path, "%s/%s/device", root, name);
  return read_hex_file(path, &device) && device == ETHX_GPU_DEVICE_ID;
}

static int by_name(const void* a, const void* b) {
  return strcmp(((const ethx_sdk_bdf*)a)->name, ((const ethx_sdk_bdf*)b)->name);
}

/* Adds `name` (shorter than a BDF slot) to the growing array; 0 when out of memory. */
static int append(ethx_sdk_bdf** list, int* count, int* capacity, const char* name) {
  if (*count == *capacity) {
    const int grown = *capacity == 0 ? 8 : *capacity * 2;
    ethx_sdk_bdf* bigger = realloc(*list, (size_t)grown * sizeof **list);
    if (bigger == NULL) return 0;
    *list = bigger;
    *capacity = grown;
  }
  memcpy((*list)[*count].name, name, strlen(name) + 1);
  ++*count;
  return 1;
}

ethx_sdk_bdf* ethx_sdk_find_gpus(int* count, char* error, size_t error_bytes) {
  return ethx_sdk_find_gpus_in(ethx_sdk_sysfs_root(), count, error, error_bytes);
}

ethx_sdk_bdf* ethx_sdk_find_gpus_in(const char* root, int* count, char* error, size_t error_bytes) {
  DIR* dir = opendir(root);
  *count = 0;
  if (dir == NULL) {
    ethx_sdk_report(error, error_bytes, "cannot list %s: %s (is sysfs mounted?)", root,
                    strerror(errno));
    *count = ETHX_DEV_ESYS;
    return NULL;
  }
  ethx_sdk_bdf* list = NULL;
  int capacity = 0;
  for (struct dirent* entry = readdir(dir); entry != NULL; entry = readdir(dir)) {
    if (entry->d_name[0] == '.' || strlen(entry->d_name) >= sizeof list->name) continue;
    if (!is_ethx_gpu(root, entry->d_name)) continue;
    if (!append(&list, count, &capacity, entry->d_name)) {
      ethx_sdk_report(error, error_bytes, "out of memory listing %s", root);
      free(list);
      closedir(dir);
      *count = ETHX_DEV_ESYS;
      return NULL;
    }
  }
  closedir(dir);
  if (list != NULL) qsort(list, (size_t)*count, sizeof *list, by_name);
  return list;
}

/* With no driver bound, nothing guarantees that the function decodes memory accesses: the
 * firmware usually enabled it, else sysfs' enable file does (pci_enable_device). */
int ethx_sdk_enable_memory(const char* sysfs_dir, const char* bdf, char* error,
                           size_t error_bytes) {
  enum { kCommandOffset = 4, kMemorySpaceBit = 0x02 };
  char path[ETHX_SDK_PATH_BYTES];
  snprintf(path, sizeof path, "%s/config", sysfs_dir);
  FILE* config = fopen(path, "rbe");
  if (config != NULL) {
    int command = EOF;
    if (fseek(config, kCommandOffset, SEEK_SET) == 0) command = fgetc(config);
    fclose(config);
    if (command != EOF && (command & kMemorySpaceBit) != 0) return 0;
  }
  snprintf(path, sizeof path, "%s/enable", sysfs_dir);
  FILE* enable = fopen(path, "we");
  const int written = enable != NULL && fputs("1", enable) >= 0;
  const int closed = enable != NULL && fclose(enable) == 0;
  if (!written || !closed) {
    ethx_sdk_report(error, error_bytes, "cannot enable memory decoding of %s through %s: %s", bdf,
                    path, strerror(errno));
    return ETHX_DEV_ESYS;
  }
  return 0;
}
