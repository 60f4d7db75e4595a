/*
 * The command registers' lock: a POSIX record lock (fcntl F_SETLK on the whole file) on
 * <dir>/ethx-gpu-<BDF>.lock, <dir> the first of /run/lock, /run, /tmp, /dev/shm that exists
 * (ETHX_DEV_LOCK_DIR overrides it), retried with short sleeps until the timeout. F_GETLK then
 * names the holder's PID.
 *
 * Record locks belong to the process, not to a descriptor, and closing any descriptor of the
 * file drops them all. So this process opens each lock file once, shared by all its handles of
 * that GPU (a registry), and its handles take turns through a flag under a mutex before the
 * process takes the file lock: two handles (threads) of one process exclude each other too, and
 * closing one handle never drops another's lock. A forked child inherits the registry but no
 * record lock: fork handlers clear what it would otherwise take for held.
 *
 * A lock user (ethx_sdk_lock_user) is one party that takes the lock: a handle's, or the guest
 * tools' DeviceLock (qemu-device/guest-tools/gpu_ops.hpp).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sdk_internal.h"

struct ethx_sdk_lock_file {
  char path[ETHX_SDK_PATH_BYTES];
  int fd;
  int users;                  /* lock users attached */
  int held;                   /* a user of this process holds the lock */
  ethx_sdk_lock_user* holder; /* that user */
  ethx_sdk_lock_file* next;
};

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t registry_released = PTHREAD_COND_INITIALIZER;
static ethx_sdk_lock_file* registry = NULL;
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;

/* Around fork the registry is consistent (its mutex held by the forking thread). */
static void lock_registry_for_fork(void) {
  pthread_mutex_lock(&registry_mutex);
}
static void unlock_registry_after_fork(void) {
  pthread_mutex_unlock(&registry_mutex);
}

/* The child holds none of its parent's record locks, whatever the copied users say. */
static void forget_locks_in_child(void) {
  for (ethx_sdk_lock_file* entry = registry; entry != NULL; entry = entry->next) {
    if (entry->holder != NULL) entry->holder->held = 0;
    entry->held = 0;
    entry->holder = NULL;
  }
  pthread_mutex_unlock(&registry_mutex);
}

static void install_fork_handlers(void) {
  pthread_atfork(lock_registry_for_fork, unlock_registry_after_fork, forget_locks_in_child);
}

const char* ethx_sdk_lock_dir(void) {
  const char* dir = getenv("ETHX_DEV_LOCK_DIR");
  if (dir != NULL && dir[0] != '\0') return dir;
  static const char* const candidates[] = {"/run/lock", "/run", "/tmp", "/dev/shm"};
  for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; ++i) {
    struct stat info;
    if (stat(candidates[i], &info) == 0 && S_ISDIR(info.st_mode)) return candidates[i];
  }
  return "/tmp";
}

int ethx_sdk_lock_timeout_ms(void) {
  const char* text = getenv("ETHX_DEV_LOCK_TIMEOUT_MS");
  char* end = NULL;
  const long value = text != NULL ? strtol(text, &end, 10) : -1;
  if (text == NULL || end == text || *end != '\0' || value < 0 || value > 86400000) return 10000;
  return (int)value;
}

/* The registry entry for `path`, opened if new; registry_mutex held. */
static ethx_sdk_lock_file* find_or_open(const char* path, char* error, size_t error_bytes) {
  for (ethx_sdk_lock_file* entry = registry; entry != NULL; entry = entry->next) {
    if (strcmp(entry->path, path) == 0) return entry;
  }
  ethx_sdk_lock_file* entry = calloc(1, sizeof *entry);
  const int fd = entry != NULL ? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666) : -1;
  if (fd < 0) {
    ethx_sdk_report(error, error_bytes, "cannot open the GPU's lock file %s: %s", path,
                    entry != NULL ? strerror(errno) : "out of memory");
    free(entry);
    return NULL;
  }
  fchmod(fd, 0666); /* every user of the GPU may take it, whatever this process' umask */
  snprintf(entry->path, sizeof entry->path, "%s", path);
  entry->fd = fd;
  entry->next = registry;
  registry = entry;
  return entry;
}

int ethx_sdk_lock_user_open(ethx_sdk_lock_user* user, const char* dir, const char* bdf, char* error,
                            size_t error_bytes) {
  char path[ETHX_SDK_PATH_BYTES];
  snprintf(path, sizeof path, "%s/ethx-gpu-%s.lock", dir != NULL ? dir : ethx_sdk_lock_dir(), bdf);
  snprintf(user->bdf, sizeof user->bdf, "%s", bdf);
  user->held = 0;
  user->error = error;
  user->error_bytes = error_bytes;
  pthread_once(&fork_handlers_once, install_fork_handlers);
  pthread_mutex_lock(&registry_mutex);
  user->file = find_or_open(path, error, error_bytes);
  if (user->file != NULL) ++user->file->users;
  pthread_mutex_unlock(&registry_mutex);
  return user->file != NULL ? 0 : ETHX_DEV_ESYS;
}

void ethx_sdk_lock_user_close(ethx_sdk_lock_user* user) {
  ethx_sdk_lock_file* entry = user->file;
  if (entry == NULL) return;
  ethx_sdk_lock_user_give(user);
  user->file = NULL;
  pthread_mutex_lock(&registry_mutex);
  if (--entry->users == 0) {
    for (ethx_sdk_lock_file** link = &registry; *link != NULL; link = &(*link)->next) {
      if (*link == entry) {
        *link = entry->next;
        break;
      }
    }
    close(entry->fd);
    free(entry);
  }
  pthread_mutex_unlock(&registry_mutex);
}

static struct timespec realtime_deadline(int timeout_ms) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += timeout_ms / 1000;
  deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
  if (deadline.tv_nsec >= 1000000000) {
    deadline.tv_nsec -= 1000000000;
    ++deadline.tv_sec;
  }
  return deadline;
}

/* This process' turn: waits until no other user of it holds the lock. */
static int take_process_turn(ethx_sdk_lock_user* user, int timeout_ms) {
  ethx_sdk_lock_file* entry = user->file;
  const struct timespec deadline = realtime_deadline(timeout_ms);
  int waited = 0;
  pthread_mutex_lock(&registry_mutex);
  while (entry->held && waited != ETIMEDOUT) {
    waited = pthread_cond_timedwait(&registry_released, &registry_mutex, &deadline);
  }
  const int got = !entry->held;
  if (got) {
    entry->held = 1;
    entry->holder = user;
  }
  pthread_mutex_unlock(&registry_mutex);
  if (got) return 0;
  ethx_sdk_report(user->error, user->error_bytes,
                  "GPU %s: command registers held by another handle of this process (pid %ld) "
                  "for %d ms (ETHX_DEV_LOCK_TIMEOUT_MS)",
                  user->bdf, (long)getpid(), timeout_ms);
  return ETHX_DEV_ELOCK;
}

static void give_process_turn(ethx_sdk_lock_user* user) {
  pthread_mutex_lock(&registry_mutex);
  user->file->held = 0;
  user->file->holder = NULL;
  pthread_cond_broadcast(&registry_released);
  pthread_mutex_unlock(&registry_mutex);
}

/* The PID holding the file lock now, 0 if none (or unknown). */
static long holder_pid(int fd) {
  struct flock probe = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  if (fcntl(fd, F_GETLK, &probe) != 0 || probe.l_type == F_UNLCK) return 0;
  return (long)probe.l_pid;
}

/* The file lock, retried every 100 us to 2 ms until deadline_ns; timeout_ms names the wait. */
static int take_file_lock(ethx_sdk_lock_user* user, int64_t deadline_ns, int timeout_ms) {
  const int fd = user->file->fd;
  int64_t nap_ns = 100000;
  for (;;) {
    struct flock whole = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(fd, F_SETLK, &whole) == 0) return 0;
    if (errno != EACCES && errno != EAGAIN && errno != EINTR) {
      ethx_sdk_report(user->error, user->error_bytes, "GPU %s: cannot lock %s: %s", user->bdf,
                      user->file->path, strerror(errno));
      return ETHX_DEV_ESYS;
    }
    const int64_t left_ns = deadline_ns - ethx_sdk_now_ns();
    if (left_ns <= 0) break;
    ethx_sdk_sleep_ns(nap_ns < left_ns ? nap_ns : left_ns);
    if (nap_ns < 2000000) nap_ns *= 2;
  }
  const long pid = holder_pid(fd);
  if (pid > 0) {
    ethx_sdk_report(user->error, user->error_bytes,
                    "GPU %s: command registers held by pid %ld for %d ms "
                    "(ETHX_DEV_LOCK_TIMEOUT_MS)",
                    user->bdf, pid, timeout_ms);
  } else {
    ethx_sdk_report(user->error, user->error_bytes,
                    "GPU %s: command registers held (%s) for %d ms (ETHX_DEV_LOCK_TIMEOUT_MS)",
                    user->bdf, user->file->path, timeout_ms);
  }
  return ETHX_DEV_ELOCK;
}

int ethx_sdk_lock_user_take(ethx_sdk_lock_user* user, int timeout_ms) {
  if (user->file == NULL) return ETHX_DEV_EINVAL;
  if (user->held) return ETHX_GPU_OK;
  if (timeout_ms < 0) timeout_ms = ethx_sdk_lock_timeout_ms();
  const int64_t deadline_ns = ethx_sdk_now_ns() + (int64_t)timeout_ms * 1000000;
  int status = take_process_turn(user, timeout_ms);
  if (status != 0) return status;
  status = take_file_lock(user, deadline_ns, timeout_ms);
  if (status != 0) {
    give_process_turn(user);
    return status;
  }
  user->held = 1;
  return ETHX_GPU_OK;
}

void ethx_sdk_lock_user_give(ethx_sdk_lock_user* user) {
  if (user->file == NULL || !user->held) return;
  struct flock whole = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  fcntl(user->file->fd, F_SETLK, &whole);
  user->held = 0;
  give_process_turn(user);
}

int ethx_dev_lock(ethx_dev* dev, int timeout_ms) {
  if (dev == NULL) return ETHX_DEV_EINVAL;
  return ethx_sdk_lock_user_take(&dev->lock, timeout_ms);
}

void ethx_dev_unlock(ethx_dev* dev) {
  if (dev != NULL) ethx_sdk_lock_user_give(&dev->lock);
}

int ethx_sdk_command_begin(ethx_dev* dev, int* taken) {
  *taken = 0;
  if (dev->lock.held) return ETHX_GPU_OK;
  const int status = ethx_dev_lock(dev, -1);
  *taken = status == ETHX_GPU_OK;
  return status;
}

void ethx_sdk_command_end(ethx_dev* dev, int taken) {
  if (taken) ethx_dev_unlock(dev);
}
