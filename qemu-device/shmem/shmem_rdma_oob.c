/* The rdma backend's out-of-band channel: TCP to PE 0 at ETHX_SHMEM_OOB=host:port (oshrun
 * sets it: VM 0's guest NIC address and a port derived from the job). PE 0 listens, every
 * other PE connects (retrying while PE 0 is not listening yet), sends its record, and gets
 * every PE's back. Only shmem_init uses it; RDMA traffic never does. */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "shmem_core.h"
#include "shmem_layout.h"
#include "shmem_rdma.h"

enum { kDefaultTimeoutS = 120, kRetryMs = 20 };

typedef struct oob {
  const char* address; /* ETHX_SHMEM_OOB as given */
  int64_t deadline_ns;
  int me;
  int npes;
  int* fds; /* PE 0: a connection per PE (index: PE; its own -1); others: fds[0] to PE 0 */
} oob;

static oob g_oob = {NULL, 0, 0, 0, NULL};

static int64_t now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static int remaining_ms(void) {
  const int64_t left = g_oob.deadline_ns - now_ns();
  return left <= 0 ? 0 : (int)(left / 1000000 + 1);
}

size_t ethx_rdma_record_bytes(int npes) {
  return sizeof(ethx_rdma_record) + (size_t)npes * sizeof(uint32_t);
}

static struct addrinfo* resolve(const char* address) {
  char host[256];
  const char* colon = strrchr(address, ':');
  if (colon == NULL || colon == address || (size_t)(colon - address) >= sizeof host ||
      colon[1] == '\0') {
    ethx_shmem_fatal("ETHX_SHMEM_OOB=%s: not host:port (oshrun --backend rdma sets it)", address);
  }
  memcpy(host, address, (size_t)(colon - address));
  host[colon - address] = '\0';
  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* result = NULL;
  const int status = getaddrinfo(host, colon + 1, &hints, &result);
  if (status != 0) ethx_shmem_fatal("ETHX_SHMEM_OOB=%s: %s", address, gai_strerror(status));
  return result;
}

/* Waits for `events` on fd until the deadline; fatal naming `what` when it passes. */
static void wait_fd(int fd, short events, const char* what) {
  struct pollfd entry = {fd, events, 0};
  for (;;) {
    const int ready = poll(&entry, 1, remaining_ms());
    if (ready > 0) return;
    if (ready < 0 && errno == EINTR) continue;
    ethx_shmem_fatal(
        "shmem_init (rdma): %s: no answer within the out-of-band timeout "
        "(ETHX_SHMEM_OOB=%s, ETHX_SHMEM_OOB_TIMEOUT_S)",
        what, g_oob.address);
  }
}

static void write_all(int fd, const void* data, size_t bytes, const char* what) {
  const char* at = data;
  while (bytes > 0) {
    wait_fd(fd, POLLOUT, what);
    const ssize_t done = send(fd, at, bytes, MSG_NOSIGNAL);
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) ethx_shmem_fatal("shmem_init (rdma): %s: %s", what, strerror(errno));
    at += done;
    bytes -= (size_t)done;
  }
}

/* Returns 0 if the peer closed the connection before `bytes` arrived. */
static int read_all(int fd, void* data, size_t bytes, const char* what) {
  char* at = data;
  while (bytes > 0) {
    wait_fd(fd, POLLIN, what);
    const ssize_t done = recv(fd, at, bytes, 0);
    if (done < 0 && errno == EINTR) continue;
    if (done < 0) ethx_shmem_fatal("shmem_init (rdma): %s: %s", what, strerror(errno));
    if (done == 0) return 0;
    at += done;
    bytes -= (size_t)done;
  }
  return 1;
}

static void no_delay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static int listen_at(const struct addrinfo* where) {
  const int fd = socket(where->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (fd < 0) ethx_shmem_fatal("shmem_init (rdma): socket: %s", strerror(errno));
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, where->ai_addr, where->ai_addrlen) != 0 || listen(fd, g_oob.npes) != 0) {
    ethx_shmem_fatal(
        "ETHX_SHMEM_OOB=%s: PE 0 cannot listen there: %s (it must be an address of "
        "PE 0's machine: VM 0's guest NIC under oshrun)",
        g_oob.address, strerror(errno));
  }
  return fd;
}

/* Connects to PE 0, retrying while it is not listening yet (PEs start in any order). */
static int connect_to_root(const struct addrinfo* where) {
  for (;;) {
    const int fd = socket(where->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) ethx_shmem_fatal("shmem_init (rdma): socket: %s", strerror(errno));
    if (connect(fd, where->ai_addr, where->ai_addrlen) == 0) return fd;
    const int error = errno;
    close(fd);
    if (remaining_ms() == 0) {
      ethx_shmem_fatal(
          "shmem_init (rdma): cannot reach PE 0 at ETHX_SHMEM_OOB=%s: %s (is PE 0 "
          "running? ETHX_SHMEM_OOB_TIMEOUT_S)",
          g_oob.address, strerror(error));
    }
    const struct timespec pause = {0, kRetryMs * 1000000L};
    nanosleep(&pause, NULL);
  }
}

/* PE 0 takes one connection and its record into the table; 0 if it was not a PE of this job
 * (a stale PE of another run that found the port): it is dropped, PE 0 waits on. */
static int accept_record(int listen_fd, char* table, size_t record_bytes, uint32_t job) {
  struct pollfd entry = {listen_fd, POLLIN, 0};
  if (poll(&entry, 1, remaining_ms()) == 0) {
    char missing[256] = "";
    size_t used = 0;
    for (int pe = 1; pe < g_oob.npes && used + 16 < sizeof missing; ++pe) {
      if (g_oob.fds[pe] < 0) used += (size_t)snprintf(missing + used, 16, " %d", pe);
    }
    ethx_shmem_fatal(
        "shmem_init (rdma): PE 0 waited at ETHX_SHMEM_OOB=%s for the other PEs "
        "(ETHX_SHMEM_OOB_TIMEOUT_S); never heard from PE%s",
        g_oob.address, missing);
  }
  const int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0) return 0;
  ethx_rdma_record header;
  if (!read_all(fd, &header, sizeof header, "reading a PE's record")) {
    close(fd);
    return 0;
  }
  const int pe = (int)header.pe;
  if (header.magic != ETHX_RDMA_MAGIC || header.job != job || header.npes != (uint32_t)g_oob.npes ||
      pe <= 0 || pe >= g_oob.npes || g_oob.fds[pe] >= 0) {
    fprintf(stderr,
            "ethx-shmem: PE 0: dropped an out-of-band connection that is not a PE of "
            "this job (pe %u of %u, job %u)\n",
            header.pe, header.npes, header.job);
    close(fd);
    return 0;
  }
  char* slot = table + (size_t)pe * record_bytes;
  memcpy(slot, &header, sizeof header);
  if (!read_all(fd, slot + sizeof header, record_bytes - sizeof header, "reading a PE's QPs")) {
    ethx_shmem_fatal("shmem_init (rdma): PE %d closed the out-of-band connection", pe);
  }
  no_delay(fd);
  g_oob.fds[pe] = fd;
  return 1;
}

static void check_table(const char* table, size_t record_bytes, uint32_t job) {
  for (int pe = 0; pe < g_oob.npes; ++pe) {
    const ethx_rdma_record* record = (const void*)(table + (size_t)pe * record_bytes);
    if (record->magic != ETHX_RDMA_MAGIC || record->job != job || record->pe != (uint32_t)pe) {
      ethx_shmem_fatal("shmem_init (rdma): PE 0 sent a bad record for PE %d", pe);
    }
  }
}

void ethx_rdma_exchange(void* table, int me, int npes, uint32_t job) {
  g_oob.address = getenv("ETHX_SHMEM_OOB");
  if (g_oob.address == NULL || *g_oob.address == '\0') {
    ethx_shmem_fatal(
        "ETHX_SHMEM_BACKEND=rdma needs ETHX_SHMEM_OOB=host:port, where PE 0 "
        "listens for the queue-pair exchange (start with `oshrun --backend rdma`)");
  }
  const int timeout_s = (int)ethx_shmem_env_size("ETHX_SHMEM_OOB_TIMEOUT_S", kDefaultTimeoutS);
  g_oob.deadline_ns = now_ns() + (int64_t)timeout_s * 1000000000;
  g_oob.me = me;
  g_oob.npes = npes;
  g_oob.fds = malloc((size_t)npes * sizeof *g_oob.fds);
  if (g_oob.fds == NULL) ethx_shmem_fatal("out of memory");
  for (int pe = 0; pe < npes; ++pe) g_oob.fds[pe] = -1;
  const size_t record_bytes = ethx_rdma_record_bytes(npes);
  char* slots = table;
  struct addrinfo* where = resolve(g_oob.address);
  if (me == 0) {
    const int listen_fd = npes > 1 ? listen_at(where) : -1;
    for (int heard = 1; heard < npes;) heard += accept_record(listen_fd, slots, record_bytes, job);
    if (listen_fd >= 0) close(listen_fd);
    for (int pe = 1; pe < npes; ++pe) {
      write_all(g_oob.fds[pe], slots, record_bytes * (size_t)npes, "sending the table");
    }
  } else {
    g_oob.fds[0] = connect_to_root(where);
    no_delay(g_oob.fds[0]);
    write_all(g_oob.fds[0], slots + (size_t)me * record_bytes, record_bytes, "sending the record");
    if (!read_all(g_oob.fds[0], slots, record_bytes * (size_t)npes, "waiting for PE 0's table")) {
      ethx_shmem_fatal("shmem_init (rdma): PE 0 closed the out-of-band connection");
    }
  }
  freeaddrinfo(where);
  check_table(slots, record_bytes, job);
}

void ethx_rdma_oob_barrier(void) {
  char byte = 1;
  if (g_oob.me != 0) {
    write_all(g_oob.fds[0], &byte, 1, "telling PE 0 the QPs are ready");
    if (!read_all(g_oob.fds[0], &byte, 1, "waiting for every PE's QPs")) {
      ethx_shmem_fatal("shmem_init (rdma): PE 0 closed the out-of-band connection");
    }
    return;
  }
  for (int pe = 1; pe < g_oob.npes; ++pe) {
    if (!read_all(g_oob.fds[pe], &byte, 1, "waiting for every PE's QPs")) {
      ethx_shmem_fatal("shmem_init (rdma): PE %d closed the out-of-band connection", pe);
    }
  }
  for (int pe = 1; pe < g_oob.npes; ++pe) {
    write_all(g_oob.fds[pe], &byte, 1, "telling the PEs every QP is ready");
  }
}

void ethx_rdma_oob_close(void) {
  for (int pe = 0; pe < g_oob.npes; ++pe) {
    if (g_oob.fds[pe] >= 0) close(g_oob.fds[pe]);
  }
  free(g_oob.fds);
  g_oob.fds = NULL;
}
