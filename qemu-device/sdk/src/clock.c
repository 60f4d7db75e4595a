/* Monotonic time and short sleeps, for lock retries and copy polling. */
#include <errno.h>
#include <time.h>

#include "sdk_internal.h"

int64_t ethx_sdk_now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

void ethx_sdk_sleep_ns(int64_t ns) {
  struct timespec left = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}
