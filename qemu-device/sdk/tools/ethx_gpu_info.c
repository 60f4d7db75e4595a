/*
 * ethx-gpu-info: the ethx GPUs of this VM, one line each, through libethx-gpu. A C program
 * linked by the C compiler alone (the SDK needs no C++ runtime); also a first check in a VM.
 */
#include <stdio.h>

#include "ethx/gpu.h"

static int print_gpu(int index) {
  char error[256];
  ethx_dev* dev = ethx_dev_open(index, error, sizeof error);
  if (dev == NULL) {
    fprintf(stderr, "ethx-gpu-info: GPU %d: %s\n", index, error);
    return 1;
  }
  ethx_dev_info info;
  ethx_dev_get_info(dev, &info);
  printf(
      "%d %s gpu_id=%u gpus=%u map=%u status=0x%x aperture_mib=%llu hbm_mib=%llu "
      "window_mib=%llu\n",
      index, info.bdf, info.gpu_id, info.gpu_count, info.register_map_version, info.status,
      (unsigned long long)(info.aperture_bytes >> 20), (unsigned long long)(info.hbm_bytes >> 20),
      (unsigned long long)(info.window_bytes >> 20));
  ethx_dev_close(dev);
  return 0;
}

int main(void) {
  const int count = ethx_dev_count();
  if (count < 0) {
    fprintf(stderr, "ethx-gpu-info: cannot list the PCI devices: %s\n",
            ethx_dev_status_name(count));
    return 1;
  }
  int failed = 0;
  for (int index = 0; index < count; ++index) failed |= print_gpu(index);
  if (count == 0) printf("no ethx GPU in this VM\n");
  return failed;
}
