// ethx-rxe-peer: the guest side of the interop check between ethx's RoCEv2 engine (on the host)
// and Soft-RoCE (rdma_rxe) in a guest (docs/softroce.md). Built by build-guest-image.sh --rdma
// against libibverbs from Debian's packages; runs in the guest's initramfs.
//
//   ethx-rxe-peer start --remote-ip A.B.C.D --remote-qpn Q --remote-psn P [--size N]
//                       [--psn P] [--mtu 1024] [--timeout S]
//     Registers N bytes (default 65536) filled with the guest pattern, creates an RC QP on the
//     first RDMA device, connects it to the engine's QP (RESET → INIT → RTR → RTS with the
//     engine's QPN, PSN and IPv4-mapped GID), prints one JSON line with this side's qpn, psn,
//     gid, gid_index, rkey, addr, size, and stays alive in the background (the registered
//     memory must outlive the command) until `finish` or the timeout (default 300 s).
//   ethx-rxe-peer finish --seed S --written N [--timeout S]
//     Tells the background process to check its memory: bytes [0, N) must hold the engine's
//     pattern for seed S, bytes [N, size) still the guest pattern. Prints one JSON line with
//     the verdict and the device's hw_counters; exit status 0 only when every byte matched.
//
// The patterns (both sides compute them; fabric/compare/softroce_interop.cpp has the host's copy):
//   guest pattern:  byte i = (i * 7 + 0x5a) & 0xff
//   engine pattern: byte i = (i * 13 + seed * 101 + 0x33) & 0xff   (seed < 2^24)
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATE_DIR "/tmp"
#define FINISH_FILE STATE_DIR "/ethx-rxe-peer.finish"
#define RESULT_FILE STATE_DIR "/ethx-rxe-peer.result"

static unsigned char guest_byte(size_t i) {
  return (unsigned char)((i * 7 + 0x5a) & 0xff);
}
static unsigned char engine_byte(size_t i, unsigned long seed) {
  return (unsigned char)((i * 13 + seed * 101 + 0x33) & 0xff);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int die(const char* what) {
  fprintf(stderr, "ethx-rxe-peer: %s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
  return 1;
}

static const char* arg_value(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

// The GID table entry of type "RoCE v2" holding an IPv4-mapped address (::ffff:a.b.c.d).
static int roce_v2_ipv4_gid(struct ibv_context* context, const char* device, union ibv_gid* gid) {
  for (int index = 0; index < 16; ++index) {
    char path[256], type[32] = "";
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/1/gid_attrs/types/%d", device,
             index);
    FILE* file = fopen(path, "r");
    if (file == NULL) continue;
    if (fgets(type, sizeof type, file) == NULL) type[0] = '\0';
    fclose(file);
    if (strncmp(type, "RoCE v2", 7) != 0) continue;
    if (ibv_query_gid(context, 1, index, gid) != 0) continue;
    static const unsigned char prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(gid->raw, prefix, sizeof prefix) == 0) return index;
  }
  return -1;
}

static void gid_text(const union ibv_gid* gid, char* out, size_t size) {
  inet_ntop(AF_INET6, gid->raw, out, (socklen_t)size);
}

static void write_file_atomically(const char* path, const char* text) {
  char temporary[256];
  snprintf(temporary, sizeof temporary, "%s.tmp", path);
  FILE* file = fopen(temporary, "w");
  if (file == NULL) return;
  fputs(text, file);
  fclose(file);
  rename(temporary, path);
}

static void append_counters(char* out, size_t size, const char* device) {
  char path[256];
  snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/1/hw_counters", device);
  DIR* dir = opendir(path);
  size_t used = strlen(out);
  used += (size_t)snprintf(out + used, size - used, "\"hw_counters\":{");
  int first = 1;
  if (dir != NULL) {
    struct dirent* entry;
    while ((entry = readdir(dir)) != NULL && used + 96 < size) {
      if (entry->d_name[0] == '.') continue;
      char file_path[512], value[64] = "";
      snprintf(file_path, sizeof file_path, "%s/%s", path, entry->d_name);
      FILE* file = fopen(file_path, "r");
      if (file == NULL) continue;
      if (fgets(value, sizeof value, file) == NULL) value[0] = '\0';
      fclose(file);
      used += (size_t)snprintf(out + used, size - used, "%s\"%s\":%lu", first ? "" : ",",
                               entry->d_name, strtoul(value, NULL, 10));
      first = 0;
    }
    closedir(dir);
  }
  snprintf(out + used, size - used, "}");
}

static int modify(struct ibv_qp* qp, struct ibv_qp_attr* attr, int mask, const char* what) {
  const int error = ibv_modify_qp(qp, attr, mask);
  if (error != 0) {
    errno = error;
    return die(what);
  }
  return 0;
}

// What `start` was told about the engine's QP, and this side's PSN and path MTU.
struct connection {
  uint32_t remote_ip;  // network order
  uint32_t remote_qpn;
  uint32_t remote_psn;
  uint32_t psn;
  int mtu_bytes;
};

// Every verbs resource of the background process, created in this order and destroyed in the
// reverse one; the registered memory is `buffer`.
struct verbs {
  struct ibv_device** list;
  const char* device;
  struct ibv_context* context;
  union ibv_gid gid;
  int gid_index;
  struct ibv_pd* pd;
  unsigned char* buffer;
  size_t size;
  struct ibv_mr* mr;
  struct ibv_cq* cq;
  struct ibv_qp* qp;
};

// The first RDMA device and its RoCE v2 GID with an IPv4 address; errors go to `report_fd`.
static int open_device(int report_fd, struct verbs* v) {
  int devices = 0;
  v->list = ibv_get_device_list(&devices);
  if (v->list == NULL || devices == 0) {
    dprintf(report_fd, "ERROR no RDMA device (is rdma_rxe loaded and rxe0 added?)\n");
    return 1;
  }
  v->device = ibv_get_device_name(v->list[0]);
  v->context = ibv_open_device(v->list[0]);
  if (v->context == NULL) {
    dprintf(report_fd, "ERROR ibv_open_device %s: %s\n", v->device, strerror(errno));
    return 1;
  }
  v->gid_index = roce_v2_ipv4_gid(v->context, v->device, &v->gid);
  if (v->gid_index < 0) {
    dprintf(report_fd, "ERROR %s has no RoCE v2 GID with an IPv4 address (eth0 address?)\n",
            v->device);
    return 1;
  }
  return 0;
}

// `size` bytes filled with the guest pattern and registered for remote access, a CQ and an
// RC QP (still in RESET).
static int create_resources(int report_fd, struct verbs* v, size_t size) {
  v->pd = ibv_alloc_pd(v->context);
  v->buffer = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  v->size = size;
  if (v->pd == NULL || v->buffer == NULL) {
    dprintf(report_fd, "ERROR ibv_alloc_pd or memory: %s\n", strerror(errno));
    return 1;
  }
  for (size_t i = 0; i < size; ++i) v->buffer[i] = guest_byte(i);
  v->mr = ibv_reg_mr(v->pd, v->buffer, size,
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  v->cq = ibv_create_cq(v->context, 16, NULL, NULL, 0);
  if (v->mr == NULL || v->cq == NULL) {
    dprintf(report_fd, "ERROR ibv_reg_mr or ibv_create_cq: %s\n", strerror(errno));
    return 1;
  }
  struct ibv_qp_init_attr init = {0};
  init.send_cq = v->cq;
  init.recv_cq = v->cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 4;
  init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  v->qp = ibv_create_qp(v->pd, &init);
  if (v->qp == NULL) {
    dprintf(report_fd, "ERROR ibv_create_qp: %s\n", strerror(errno));
    return 1;
  }
  return 0;
}

static enum ibv_mtu path_mtu(int mtu_bytes) {
  switch (mtu_bytes) {
    case 256:
      return IBV_MTU_256;
    case 512:
      return IBV_MTU_512;
    case 2048:
      return IBV_MTU_2048;
    case 4096:
      return IBV_MTU_4096;
    default:
      return IBV_MTU_1024;
  }
}

// RTR: the engine's QPN and PSN, reached through its IPv4-mapped GID.
static int qp_to_rtr(struct ibv_qp* qp, const struct connection* peer, int gid_index) {
  struct ibv_qp_attr attr = {0};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = path_mtu(peer->mtu_bytes);
  attr.dest_qp_num = peer->remote_qpn;
  attr.rq_psn = peer->remote_psn;
  attr.max_dest_rd_atomic = 4;
  attr.min_rnr_timer = 12;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.port_num = 1;
  attr.ah_attr.grh.hop_limit = 64;
  attr.ah_attr.grh.sgid_index = (uint8_t)gid_index;
  memset(attr.ah_attr.grh.dgid.raw, 0, 10);
  attr.ah_attr.grh.dgid.raw[10] = 0xff;
  attr.ah_attr.grh.dgid.raw[11] = 0xff;
  memcpy(&attr.ah_attr.grh.dgid.raw[12], &peer->remote_ip, 4);  // network order already
  return modify(qp, &attr,
                IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                "RTR");
}

// RESET → INIT → RTR → RTS, connected to the engine's QP.
static int connect_qp(int report_fd, const struct verbs* v, const struct connection* peer) {
  struct ibv_qp_attr attr = {0};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = 1;
  attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (modify(v->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
             "INIT")) {
    dprintf(report_fd, "ERROR modify QP to INIT\n");
    return 1;
  }
  if (qp_to_rtr(v->qp, peer, v->gid_index)) {
    dprintf(report_fd, "ERROR modify QP to RTR (is the engine's address reachable?)\n");
    return 1;
  }
  memset(&attr, 0, sizeof attr);
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = peer->psn;
  attr.timeout = 14;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.max_rd_atomic = 4;
  if (modify(v->qp, &attr,
             IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                 IBV_QP_MAX_QP_RD_ATOMIC,
             "RTS")) {
    dprintf(report_fd, "ERROR modify QP to RTS\n");
    return 1;
  }
  return 0;
}

// The one JSON line `start` prints: what the engine needs to reach this QP and its memory.
static void report_ready(int report_fd, const struct verbs* v, const struct connection* peer) {
  char gid_string[64];
  gid_text(&v->gid, gid_string, sizeof gid_string);
  dprintf(report_fd,
          "{\"device\":\"%s\",\"qpn\":%u,\"psn\":%u,\"gid\":\"%s\",\"gid_index\":%d,"
          "\"rkey\":%u,\"addr\":%llu,\"size\":%zu,\"mtu\":%d}\n",
          v->device, v->qp->qp_num, peer->psn, gid_string, v->gid_index, v->mr->rkey,
          (unsigned long long)(uintptr_t)v->buffer, v->size, peer->mtu_bytes);
}

// What `finish` asked for: the engine's seed and how many bytes it wrote.
struct finish_request {
  int asked;  // 0: none came before the timeout
  unsigned long seed;
  size_t written;
};

// Polls for the request file of `finish` (the guest has no other channel to us).
static struct finish_request await_finish(double timeout_s) {
  struct finish_request request = {0, 0, 0};
  const double deadline = now_s() + timeout_s;
  while (now_s() < deadline) {
    FILE* file = fopen(FINISH_FILE, "r");
    if (file != NULL) {
      request.asked = fscanf(file, "%lu %zu", &request.seed, &request.written) == 2;
      fclose(file);
      unlink(FINISH_FILE);
      if (request.asked) break;
    }
    nap_ms(10);
  }
  return request;
}

struct memory_check {
  size_t engine_ok;  // bytes [0, written) holding the engine's pattern
  size_t guest_ok;   // bytes [written, size) still holding the guest pattern
  size_t first_bad;  // (size_t)-1: none
};

static struct memory_check check_memory(const unsigned char* buffer, size_t size,
                                        const struct finish_request* request) {
  struct memory_check check = {0, 0, (size_t)-1};
  for (size_t i = 0; i < size; ++i) {
    const unsigned char want = i < request->written ? engine_byte(i, request->seed) : guest_byte(i);
    if (buffer[i] == want) {
      if (i < request->written)
        ++check.engine_ok;
      else
        ++check.guest_ok;
    } else if (check.first_bad == (size_t)-1) {
      check.first_bad = i;
    }
  }
  return check;
}

// The JSON line `finish` prints: the verdict, then the device's hw_counters.
static void write_verdict(const struct verbs* v, const struct finish_request* request,
                          const struct memory_check* check) {
  static char result[8192];
  const int verified =
      check->engine_ok == request->written && check->guest_ok == v->size - request->written;
  snprintf(result, sizeof result,
           "{\"verified\":%s,\"size\":%zu,\"written\":%zu,\"seed\":%lu,\"engine_bytes_ok\":%zu,"
           "\"guest_bytes_ok\":%zu,\"first_bad\":%lld,\"qpn\":%u,",
           verified ? "true" : "false", v->size, request->written, request->seed, check->engine_ok,
           check->guest_ok, check->first_bad == (size_t)-1 ? -1LL : (long long)check->first_bad,
           v->qp->qp_num);
  append_counters(result, sizeof result - 4, v->device);
  strcat(result, "}\n");
  write_file_atomically(RESULT_FILE, result);
}

static void release(struct verbs* v) {
  ibv_destroy_qp(v->qp);
  ibv_destroy_cq(v->cq);
  ibv_dereg_mr(v->mr);
  ibv_dealloc_pd(v->pd);
  ibv_close_device(v->context);
  ibv_free_device_list(v->list);
}

// The background process: owns every verbs resource; reports on `report_fd`, then serves
// `finish` through the files in STATE_DIR. (On an error the process exits: the kernel frees
// what was created.)
static int serve(int report_fd, size_t size, const struct connection* peer, double timeout_s) {
  struct verbs v;
  memset(&v, 0, sizeof v);
  if (open_device(report_fd, &v) || create_resources(report_fd, &v, size) ||
      connect_qp(report_fd, &v, peer)) {
    return 1;
  }
  report_ready(report_fd, &v, peer);
  close(report_fd);

  struct finish_request request = await_finish(timeout_s);
  if (!request.asked) return 1;
  if (request.written > size) request.written = size;
  const struct memory_check check = check_memory(v.buffer, size, &request);
  write_verdict(&v, &request, &check);
  release(&v);
  return 0;
}

static int start(int argc, char** argv) {
  const char* ip_text = arg_value(argc, argv, "--remote-ip", NULL);
  const char* qpn_text = arg_value(argc, argv, "--remote-qpn", NULL);
  const char* psn_text = arg_value(argc, argv, "--remote-psn", NULL);
  if (ip_text == NULL || qpn_text == NULL || psn_text == NULL) {
    fprintf(stderr, "ethx-rxe-peer start: --remote-ip, --remote-qpn and --remote-psn are needed\n");
    return 2;
  }
  struct in_addr ip;
  if (inet_pton(AF_INET, ip_text, &ip) != 1) {
    fprintf(stderr, "ethx-rxe-peer start: --remote-ip %s is not an IPv4 address\n", ip_text);
    return 2;
  }
  const size_t size = strtoul(arg_value(argc, argv, "--size", "65536"), NULL, 0);
  struct connection peer;
  peer.remote_ip = ip.s_addr;
  peer.remote_qpn = (uint32_t)strtoul(qpn_text, NULL, 0) & 0xffffff;
  peer.remote_psn = (uint32_t)strtoul(psn_text, NULL, 0) & 0xffffff;
  peer.psn = (uint32_t)strtoul(arg_value(argc, argv, "--psn", "0x2468"), NULL, 0) & 0xffffff;
  peer.mtu_bytes = atoi(arg_value(argc, argv, "--mtu", "1024"));
  const double timeout = atof(arg_value(argc, argv, "--timeout", "300"));
  if (size == 0 || size > (64u << 20)) {
    fprintf(stderr, "ethx-rxe-peer start: --size must be 1 .. 64 MiB\n");
    return 2;
  }
  unlink(FINISH_FILE);
  unlink(RESULT_FILE);
  int fds[2];
  if (pipe(fds) != 0) return die("pipe");
  const pid_t pid = fork();
  if (pid < 0) return die("fork");
  if (pid == 0) {
    close(fds[0]);
    setsid();
    // Never write into the agent's serial line: it belongs to the command that started us.
    const int null_fd = open("/dev/null", O_RDWR);
    dup2(null_fd, 0);
    dup2(null_fd, 1);
    dup2(null_fd, 2);
    _exit(serve(fds[1], size, &peer, timeout));
  }
  close(fds[1]);
  char report[1024];
  size_t used = 0;
  ssize_t got;
  while (used + 1 < sizeof report &&
         (got = read(fds[0], report + used, sizeof report - 1 - used)) > 0) {
    used += (size_t)got;
    if (memchr(report, '\n', used) != NULL) break;
  }
  report[used] = '\0';
  close(fds[0]);
  if (strncmp(report, "{", 1) != 0) {
    fprintf(stderr, "ethx-rxe-peer: %s", used ? report : "the background process died\n");
    return 1;
  }
  fputs(report, stdout);
  return 0;
}

static int finish(int argc, char** argv) {
  const char* seed = arg_value(argc, argv, "--seed", NULL);
  const char* written = arg_value(argc, argv, "--written", NULL);
  if (seed == NULL || written == NULL) {
    fprintf(stderr, "ethx-rxe-peer finish: --seed and --written are needed\n");
    return 2;
  }
  char request[128];
  snprintf(request, sizeof request, "%s %s\n", seed, written);
  write_file_atomically(FINISH_FILE, request);
  const double deadline = now_s() + atof(arg_value(argc, argv, "--timeout", "30"));
  while (now_s() < deadline) {
    FILE* file = fopen(RESULT_FILE, "r");
    if (file != NULL) {
      static char result[8192];
      const size_t got = fread(result, 1, sizeof result - 1, file);
      fclose(file);
      result[got] = '\0';
      unlink(RESULT_FILE);
      fputs(result, stdout);
      return strstr(result, "\"verified\":true") != NULL ? 0 : 1;
    }
    nap_ms(10);
  }
  unlink(FINISH_FILE);
  fprintf(stderr,
          "ethx-rxe-peer finish: no answer from the background process (not started, "
          "or it timed out)\n");
  return 1;
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "start") == 0) return start(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "finish") == 0) return finish(argc, argv);
  fprintf(stderr, "usage: ethx-rxe-peer start|finish ... (see the comment in rxe_peer.c)\n");
  return 2;
}
