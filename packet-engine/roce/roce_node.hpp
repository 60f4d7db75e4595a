// A RoCEv2 "NIC" for the comparison with load/store: registered memory, completion queues and
// many reliable-connected queue pairs behind one MAC/IP address, driven sans-I/O. Frames come
// in through on_frame(), timers through poll(); frames to send and the next deadline go out
// through Effects. The verbs-like calls (post_send, post_recv, ring_doorbell, poll_cq) are what
// an application or a benchmark uses; docs/roce.md describes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "packet-engine/effects.hpp"
#include "packet-engine/roce/roce_counters.hpp"
#include "packet-engine/roce/roce_cq.hpp"
#include "packet-engine/roce/roce_memory.hpp"
#include "packet-engine/roce/roce_qp.hpp"
#include "packet-engine/roce/roce_verbs.hpp"

namespace ethx::roce {

struct RoceNodeConfig {
  MacAddr mac;
  std::uint32_t ip = 0;  // host order
  std::uint8_t dscp = 26;
  std::uint8_t ecn = 2;
  std::uint8_t ttl = 64;
  std::uint16_t pkey = kDefaultPkey;
  // Compute the ICRC of every packet sent and check it on every packet received. The simulator
  // turns it off with [sim] crc = false, as it leaves load/store frames' CRC out: its packets
  // cannot be corrupted, and the CRC cost a tenth of a 512-GPU all-to-all. The ICRC's 4 bytes
  // stay in the packet (zero), so sizes and timing do not change.
  bool icrc = true;
};

class RoceNode {
 public:
  explicit RoceNode(const RoceNodeConfig& config);
  RoceNode(const RoceNode&) = delete;
  RoceNode& operator=(const RoceNode&) = delete;

  // ---- resources ----
  MemoryRegion register_memory(std::span<std::byte> bytes, std::uint32_t access,
                               std::optional<std::uint64_t> iova = std::nullopt);
  bool deregister_memory(std::uint32_t lkey);
  CqId create_cq(std::size_t capacity);
  // nullopt if a CQ named in `config` does not exist or the path MTU is not one of 256, 512,
  // 1024, 2048 and 4096 bytes.
  std::optional<QpNum> create_qp(const QpConfig& config);
  bool connect_qp(QpNum qpn, const QpRemote& remote);
  bool destroy_qp(QpNum qpn);

  // ---- verbs ----
  // Queue a WR; nothing is transmitted until ring_doorbell() (batching: post N, ring once).
  PostResult post_send(QpNum qpn, const SendWr& wr);
  PostResult post_recv(QpNum qpn, const RecvWr& wr);
  // False if there is no such QP.
  bool ring_doorbell(QpNum qpn, TimeNs now, Effects& effects);
  // Moves up to out.size() completions of `cq` into `out`; returns how many.
  std::size_t poll_cq(CqId cq, std::span<WorkCompletion> out);

  // ---- sans-I/O drive ----
  // One received frame: validated, counted, and handed to its QP. Never throws on bad input.
  void on_frame(std::span<const std::byte> frame, TimeNs now, Effects& effects);
  // Fires the timers that are due (found in a heap of QP deadlines, not by scanning every QP:
  // a GPU of a 1024-GPU fabric has 1023 of them) and asks to be polled again at the earliest.
  void poll(TimeNs now, Effects& effects);

  // ---- inspection ----
  const RoceCounters& counters() const { return context_.counters; }
  const QueuePair* qp(QpNum qpn) const;
  std::size_t qp_count() const { return qps_.size(); }
  // Connection state of one QP in bytes, including its share of the node's QP table.
  std::size_t qp_state_bytes(QpNum qpn) const;
  std::size_t total_qp_state_bytes() const;
  MacAddr mac() const { return context_.mac; }
  std::uint32_t ip() const { return context_.ip; }

 private:
  struct QpEntry {
    std::unique_ptr<QueuePair> qp;
    // The deadline this QP has in timers_, if any (a later one there is stale).
    std::optional<TimeNs> scheduled;
  };
  struct Timer {
    TimeNs at;
    QpNum qpn;
    // Earliest first, then the lower QP number: a fixed order for QPs due together.
    bool operator>(const Timer& other) const {
      return at != other.at ? at > other.at : qpn > other.qpn;
    }
  };

  QpEntry* find_entry(QpNum qpn);
  QueuePair* find(QpNum qpn);
  // Asks for a wake-up at the QP's deadline and files it in timers_ if it is earlier than the
  // one filed.
  void request_wake(QpEntry& entry, Effects& effects);

  NodeContext context_;
  std::vector<std::unique_ptr<CompletionQueue>> cqs_;
  std::unordered_map<QpNum, QpEntry> qps_;
  std::vector<Timer> timers_;  // min-heap (std::greater) of QP deadlines
  QpNum next_qpn_ = 0x11;      // QP 0 and 1 are the management QPs (SMI, GSI) on real devices
};

}  // namespace ethx::roce
