// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// ethx's own XDP program, loaded through libxdp on every interface an ethx AF_XDP socket
// binds (docs/afxdp.md). It replaces libxdp's default program, which takes every frame on
// the queue (neighbour discovery and ARP included):
//   node mode (default): redirect only ethx frames (EtherType 0x88B5 fabric, 0x88B6 echo) and,
//     with ETHX_XDP_FLAG_ROCE, RoCEv2 (IPv4/UDP port 4791) to the AF_XDP socket of the
//     receiving queue; XDP_PASS everything else to the kernel.
//   switch-port mode (ETHX_XDP_FLAG_SWITCH_PORT): redirect every frame, because a switch
//     forwards ARP, IP and RoCE frames too.
// A frame longer than the socket's chunk allows (ethx_config[ETHX_XDP_CFG_MAX_FRAME]) would be
// dropped silently by the copy into the UMEM; it is passed to the kernel and counted instead.
// User space sets ethx_config after attaching and reads ethx_stats (per CPU) for counters.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define ETHX_ETH_P_FABRIC 0x88B5
#define ETHX_ETH_P_ECHO 0x88B6
#define ETHX_ROCEV2_UDP_PORT 4791

// Keys of ethx_config (keep in sync with fabric/transport/net/afxdp_program.hpp).
#define ETHX_XDP_CFG_FLAGS 0
#define ETHX_XDP_CFG_MAX_FRAME 1
#define ETHX_XDP_CFG_COUNT 2
#define ETHX_XDP_FLAG_SWITCH_PORT 0x1
#define ETHX_XDP_FLAG_ROCE 0x2

// Keys of ethx_stats.
#define ETHX_XDP_STAT_REDIRECTED 0
#define ETHX_XDP_STAT_PASSED 1
#define ETHX_XDP_STAT_OVERSIZE 2
#define ETHX_XDP_STAT_COUNT 3

struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, 64);
  __type(key, __u32);
  __type(value, __u32);
} ethx_xsks SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, ETHX_XDP_CFG_COUNT);
  __type(key, __u32);
  __type(value, __u32);
} ethx_config SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, ETHX_XDP_STAT_COUNT);
  __type(key, __u32);
  __type(value, __u64);
} ethx_stats SEC(".maps");

static __always_inline __u32 config_value(__u32 key) {
  __u32* value = bpf_map_lookup_elem(&ethx_config, &key);
  return value ? *value : 0;
}

static __always_inline void count(__u32 key) {
  __u64* value = bpf_map_lookup_elem(&ethx_stats, &key);
  if (value) *value += 1;
}

// Whether the frame is RoCEv2: IPv4 (no VLAN), UDP, destination port 4791.
static __always_inline int is_rocev2(void* data, void* data_end) {
  struct ethhdr* eth = data;
  struct iphdr* ip = (void*)(eth + 1);
  if ((void*)(ip + 1) > data_end) return 0;
  if (ip->protocol != IPPROTO_UDP || ip->ihl < 5) return 0;
  struct udphdr* udp = (void*)ip + ip->ihl * 4;
  if ((void*)(udp + 1) > data_end) return 0;
  return udp->dest == bpf_htons(ETHX_ROCEV2_UDP_PORT);
}

SEC("xdp")
int ethx_xdp(struct xdp_md* ctx) {
  void* data = (void*)(long)ctx->data;
  void* data_end = (void*)(long)ctx->data_end;
  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > data_end) {
    count(ETHX_XDP_STAT_PASSED);
    return XDP_PASS;
  }

  const __u32 flags = config_value(ETHX_XDP_CFG_FLAGS);
  int take = 0;
  if (flags & ETHX_XDP_FLAG_SWITCH_PORT) {
    take = 1;
  } else {
    const __u16 proto = bpf_ntohs(eth->h_proto);
    take = proto == ETHX_ETH_P_FABRIC || proto == ETHX_ETH_P_ECHO ||
           ((flags & ETHX_XDP_FLAG_ROCE) && proto == ETH_P_IP && is_rocev2(data, data_end));
  }
  if (!take) {
    count(ETHX_XDP_STAT_PASSED);
    return XDP_PASS;
  }

  const __u32 max_frame = config_value(ETHX_XDP_CFG_MAX_FRAME);
  if (max_frame != 0 && (__u64)(data_end - data) > max_frame) {
    count(ETHX_XDP_STAT_OVERSIZE);
    return XDP_PASS;
  }
  count(ETHX_XDP_STAT_REDIRECTED);
  // No socket bound to this queue (yet): the frame goes to the kernel instead of vanishing.
  return bpf_redirect_map(&ethx_xsks, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual BSD/GPL";
