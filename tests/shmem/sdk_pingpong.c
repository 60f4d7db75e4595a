/*
 * sdk_pingpong: a ping-pong between two GPUs of the fabric, in two VMs, with nothing but the
 * device SDK (<ethx/gpu.h>, -lethx-gpu). The example of docs/programs.md.
 *
 *   sudo build/bin/ethx up --vms 2 --gpus-per-vm 2
 *   sudo build/bin/ethx run --all-vms --per-gpu -- ./sdk_pingpong 2 [ROUND_TRIPS]
 *
 * `ethx run --per-gpu` starts one copy per GPU with ETHX_GPU_ID set. GPU 0 throws the ball,
 * the GPU named on the command line (the first GPU of the other VM) sends it back, every other
 * copy exits at once. Each side has an 8-byte mailbox in its own memory (HBM, BAR 2); the
 * other side writes into it with a store through its window (BAR 4), then flushes (waits
 * until the store is performed), and the owner waits for the value with plain loads of its
 * own memory: spinning briefly, then yielding the CPU (several copies share a vCPU).
 *
 * A value is kind (8 bits) | session (32 bits) | count (24 bits). GPU 0 starts a session with
 * HELLO(session), repeated until the peer answers ACK(session): the peer may start later, and
 * a mailbox may still hold a value of an earlier run, which has another session. Then round
 * trip i is BALL(session, i) one way and REPLY(session, i) back; GPU 0 checks every reply and
 * prints the round-trip time's p50. Exit status 0 if every value was the expected one.
 */
#define _POSIX_C_SOURCE 200809L /* NOLINT(bugprone-reserved-identifier): clock_gettime */

#include <ethx/gpu.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { k_mailbox_offset = 0x10000 }; /* 64 KiB into each GPU's memory */
enum { k_hello = 0x48, k_ack = 0x41, k_ball = 0x42, k_reply = 0x52 };
static const int64_t k_give_up_ns = 30000000000;  /* no answer for 30 s: the peer is not there */
static const int64_t k_hello_again_ns = 20000000; /* repeat HELLO every 20 ms until the ACK */

typedef struct side {
  ethx_dev* dev;
  uint32_t me;
  uint32_t peer;
  volatile uint64_t* mailbox; /* in this GPU's own memory */
} side;

static uint64_t message(unsigned kind, uint32_t session, uint32_t count) {
  return (uint64_t)kind << 56 | (uint64_t)session << 24 | (count & 0xffffffu);
}
static unsigned kind_of(uint64_t v) {
  return (unsigned)(v >> 56);
}
static uint32_t session_of(uint64_t v) {
  return (uint32_t)(v >> 24);
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* One 8-byte store into the peer's mailbox through the window, then flush: the store is
 * performed at the peer (or the flush says why not). */
static int send_value(side* s, uint64_t value) {
  uint64_t addr = ethx_dev_window_addr(s->dev, s->peer, k_mailbox_offset);
  int status = ethx_dev_store64(s->dev, addr, value);
  if (status == ETHX_GPU_OK) status = ethx_dev_flush(s->dev);
  if (status != ETHX_GPU_OK) {
    fprintf(stderr, "sdk_pingpong: GPU %u: store to GPU %u failed: %s (%s)\n", s->me, s->peer,
            ethx_dev_status_name(status), ethx_dev_last_error(s->dev));
  }
  return status == ETHX_GPU_OK;
}

/* Waits until the own mailbox changes from `seen`, up to `timeout_ns`; returns the new value,
 * or `seen` on timeout. */
static uint64_t wait_change(const side* s, uint64_t seen, int64_t timeout_ns) {
  int64_t deadline = now_ns() + timeout_ns;
  for (unsigned spins = 0;; ++spins) {
    uint64_t v = *s->mailbox;
    if (v != seen) return v;
    if (spins >= 1000) { /* spin ~a few µs, then let the other copies on this vCPU run */
      sched_yield();
      if (now_ns() > deadline) return seen;
    }
  }
}

/* GPU 0: HELLO until ACK, then the round trips. Returns the number of wrong replies, or -1
 * if the ping-pong could not go on (said why). */
static int ping(side* s, int rounds, int64_t* rtt_ns) {
  uint32_t session = (uint32_t)(now_ns() ^ (int64_t)getpid() << 16) | 1u;
  uint64_t ack = message(k_ack, session, 0);
  int64_t give_up = now_ns() + k_give_up_ns;
  uint64_t seen = *s->mailbox;
  while (seen != ack) {
    if (now_ns() > give_up) {
      fprintf(stderr,
              "sdk_pingpong: GPU %u: no answer from GPU %u within 30 s (is it running?"
              " ethx run --all-vms --per-gpu)\n",
              s->me, s->peer);
      return -1;
    }
    if (!send_value(s, message(k_hello, session, 0))) return -1;
    seen = wait_change(s, seen, k_hello_again_ns);
  }
  int wrong = 0;
  for (int i = 1; i <= rounds; ++i) {
    uint64_t expect = message(k_reply, session, (uint32_t)i);
    int64_t start = now_ns();
    if (!send_value(s, message(k_ball, session, (uint32_t)i))) return -1;
    uint64_t got = wait_change(s, seen, k_give_up_ns);
    rtt_ns[i - 1] = now_ns() - start;
    if (got != expect) {
      fprintf(stderr, "sdk_pingpong: GPU %u: round trip %d: expected %#llx, got %#llx\n", s->me, i,
              (unsigned long long)expect, (unsigned long long)got);
      if (got == seen) return -1; /* no reply within 30 s: said above */
      ++wrong;
    }
    seen = got;
  }
  return wrong;
}

/* The peer: ACK a HELLO (a new session replaces an old one), answer each BALL. */
static int pong(side* s, int rounds) {
  uint64_t seen = 0x0; /* whatever the mailbox holds first counts as new */
  uint32_t session = 0;
  int answered = 0, have_session = 0;
  while (answered < rounds) {
    uint64_t v = wait_change(s, seen, k_give_up_ns);
    if (v == seen) {
      fprintf(stderr, "sdk_pingpong: GPU %u: nothing from GPU %u for 30 s (answered %d of %d)\n",
              s->me, s->peer, answered, rounds);
      return 1;
    }
    seen = v;
    if (kind_of(v) == k_hello && (!have_session || session_of(v) != session)) {
      session = session_of(v);
      have_session = 1;
      answered = 0;
      if (!send_value(s, message(k_ack, session, 0))) return 1;
    } else if (have_session && v == message(k_ball, session, (uint32_t)answered + 1)) {
      if (!send_value(s, message(k_reply, session, (uint32_t)++answered))) return 1;
    }
    /* Anything else is a repeated HELLO of this session or a value of an earlier run. */
  }
  printf("sdk_pingpong: GPU %u: answered %d balls from GPU %u\n", s->me, answered, s->peer);
  return 0;
}

static int compare_i64(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

static int run(side* s, int rounds) {
  if (s->me != 0) return pong(s, rounds);
  int64_t* rtt = (int64_t*)calloc((size_t)rounds, sizeof(int64_t));
  int wrong = ping(s, rounds, rtt);
  if (wrong == 0) {
    qsort(rtt, (size_t)rounds, sizeof(int64_t), compare_i64);
    int64_t p50_ns = rtt[(rounds - 1) / 2];
    int64_t p99_ns = rtt[(rounds - 1) * 99 / 100];
    printf(
        "sdk_pingpong: GPU %u <-> GPU %u: %d round trips, every reply verified; "
        "round trip p50 %.1f us, p99 %.1f us, min %.1f us\n",
        s->me, s->peer, rounds, (double)p50_ns / 1e3, (double)p99_ns / 1e3, (double)rtt[0] / 1e3);
  } else if (wrong > 0) {
    fprintf(stderr, "sdk_pingpong: GPU %u <-> GPU %u: %d of %d replies wrong\n", s->me, s->peer,
            wrong, rounds);
  }
  free(rtt);
  return wrong == 0 ? 0 : 1;
}

/* Opens this copy's GPU and maps its mailbox; 0 with a message if it cannot. The GPU named
 * on the command line must exist and not be GPU 0. */
static int open_side(side* s, uint32_t me, uint32_t other, uint32_t named_peer) {
  char error[256] = "";
  s->me = me;
  s->peer = other;
  s->dev = ethx_dev_open_gpu(me, error, sizeof error);
  if (s->dev == NULL) {
    fprintf(stderr, "sdk_pingpong: cannot open GPU %u: %s\n", me, error);
    return 0;
  }
  ethx_dev_info info;
  uint64_t hbm_bytes = 0;
  unsigned char* hbm = (unsigned char*)ethx_dev_hbm(s->dev, &hbm_bytes);
  if (ethx_dev_get_info(s->dev, &info) != ETHX_GPU_OK || hbm == NULL ||
      hbm_bytes < k_mailbox_offset + 8) {
    fprintf(stderr, "sdk_pingpong: GPU %u: cannot map its memory: %s\n", me,
            ethx_dev_last_error(s->dev));
    return 0;
  }
  if (named_peer == 0 || named_peer >= info.gpu_count) {
    fprintf(stderr, "sdk_pingpong: peer GPU %u: must be 1 ... %u (the fabric has %u GPUs)\n",
            named_peer, info.gpu_count - 1, info.gpu_count);
    return 0;
  }
  s->mailbox = (volatile uint64_t*)(hbm + k_mailbox_offset);
  return 1;
}

int main(int argc, char** argv) {
  const char* gpu_id = getenv("ETHX_GPU_ID");
  if (argc < 2 || gpu_id == NULL) {
    fprintf(stderr,
            "usage: ETHX_GPU_ID=<this GPU> sdk_pingpong PEER_GPU [ROUND_TRIPS]\n"
            "  (ethx run --all-vms --per-gpu -- ./sdk_pingpong 2 sets ETHX_GPU_ID)\n");
    return 2;
  }
  uint32_t peer = (uint32_t)strtoul(argv[1], NULL, 10);
  int rounds = argc > 2 ? atoi(argv[2]) : 100;
  if (rounds < 1 || rounds > 0xffffff) rounds = 100;
  uint32_t me = (uint32_t)strtoul(gpu_id, NULL, 10);
  if (me != 0 && me != peer) {
    printf("sdk_pingpong: GPU %u: not in this ping-pong (GPU 0 and GPU %u)\n", me, peer);
    return 0;
  }
  side s;
  memset(&s, 0, sizeof s);
  if (!open_side(&s, me, me == 0 ? peer : 0, peer)) {
    ethx_dev_close(s.dev);
    return 1;
  }
  int status = run(&s, rounds);
  ethx_dev_close(s.dev);
  return status;
}
