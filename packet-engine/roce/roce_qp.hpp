// A reliable-connected (RC) queue pair of the RoCEv2 engine: the requester (send queue, PSNs,
// ACK/NAK handling, go-back-N retransmission on NAK and on timeout) and the responder
// (expected PSN, duplicate detection, RNR, memory checks, READ/atomic responses) of one
// connection. Sans-I/O: it is handed `now`, puts frames into Effects and reports its next
// deadline; RoceNode owns it and dispatches frames to it. Behaviour follows IBA vol. 1
// chapter 9.7 and is summarised in docs/roce.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "packet-engine/effects.hpp"
#include "packet-engine/fifo.hpp"
#include "packet-engine/roce/roce_counters.hpp"
#include "packet-engine/roce/roce_cq.hpp"
#include "packet-engine/roce/roce_memory.hpp"
#include "packet-engine/roce/roce_verbs.hpp"
#include "packet-engine/roce/roce_wire.hpp"

namespace ethx::roce {

// What every QP of a node shares: its addresses, its registered memory and its counters.
struct NodeContext {
  MacAddr mac;
  std::uint32_t ip = 0;    // host order
  std::uint8_t dscp = 26;  // AF31, the class RoCE deployments commonly use for RDMA traffic
  std::uint8_t ecn = 2;    // ECT(0): ECN-capable, as DCQCN needs
  std::uint8_t ttl = 64;
  std::uint16_t pkey = kDefaultPkey;
  std::uint16_t next_ip_id = 0;
  Icrc icrc = Icrc::kCheck;  // kSkip: packets leave with a zero ICRC and none is checked
  MemoryTable memory;
  // A request's payload on its way into a frame: one buffer for every QP of the node (a
  // buffer per QP cost a simulation of a million QPs a gigabyte).
  std::vector<std::byte> scratch;
  RoceCounters counters;
};

enum class QpState : std::uint8_t {
  kReset,  // created, not connected
  kRts,    // connected: ready to send and receive (INIT/RTR/RTS collapsed)
  kError,  // a fatal error happened; every WR completes with kWrFlushError
};
const char* to_string(QpState state);

enum class PostResult : std::uint8_t {
  kOk,
  kQpNotReady,  // the QP is not connected
  kQueueFull,   // max_send_wr / max_recv_wr reached
  kTooManySge,  // more than max_sge elements
};

class QueuePair {
 public:
  QueuePair(QpNum qpn, const QpConfig& config, NodeContext& node, CompletionQueue& send_cq,
            CompletionQueue& recv_cq);
  QueuePair(const QueuePair&) = delete;
  QueuePair& operator=(const QueuePair&) = delete;

  // Connects to the peer and moves to RTS. False if the QP is not in kReset.
  bool connect(const QpRemote& remote);

  // Queues a WR; nothing is sent until doorbell(). A QP in kError accepts it and flushes it.
  PostResult post_send(const SendWr& wr);
  PostResult post_recv(const RecvWr& wr);
  // Makes every WR posted so far visible to the "NIC" and transmits what the window allows.
  void doorbell(TimeNs now, Effects& effects);

  // A decoded packet whose BTH destination QP is this QP.
  void on_packet(const PacketView& packet, TimeNs now, Effects& effects);
  // Timers: ACK timeout and RNR wait.
  void poll(TimeNs now, Effects& effects);
  // When poll() must be called next, if anything is pending.
  std::optional<TimeNs> deadline() const;

  QpNum qpn() const { return qpn_; }
  QpState state() const { return state_; }
  const QpRemote& remote() const { return remote_; }
  const QpConfig& config() const { return config_; }
  // Bytes of connection state this QP holds now (the QPC plus its queues), for benchmarks
  // that show how per-connection state grows with the number of QPs.
  std::size_t state_bytes() const;
  std::size_t inflight_wqes() const { return inflight_.size(); }
  std::uint32_t expected_psn() const { return epsn_; }
  std::uint32_t next_psn() const { return next_psn_; }

 private:
  struct SendWqe {
    SendWr wr;
    std::uint32_t first_psn = 0;
    std::uint32_t packets = 1;       // PSNs this WR uses (READ: one per response packet)
    std::uint64_t bytes = 0;         // message length
    std::uint32_t done_packets = 0;  // READ: response packets received
    std::int64_t retried_at = -1;    // done_packets when a lost response was last re-requested
    bool complete = false;
    WcStatus status = WcStatus::kSuccess;
  };
  struct AtomicReplay {
    std::uint32_t psn = 0;
    std::uint64_t original = 0;
    bool valid = false;
  };
  enum class InMessage : std::uint8_t { kNone, kSend, kWrite };

  // ---- requester ----
  bool reads_or_atomic(const SendWqe& wqe) const;
  std::uint32_t last_psn(const SendWqe& wqe) const;
  std::uint32_t resume_psn(const SendWqe& wqe) const;
  SendWqe* find_wqe(std::uint32_t psn);
  std::uint32_t packets_for(const SendWr& wr, std::uint64_t bytes) const;
  bool start_next_wqe(TimeNs now);
  void pump(TimeNs now, Effects& effects);
  void emit_request(const SendWqe& wqe, std::uint32_t index, Effects& effects);
  void retransmit_from(std::uint32_t psn);
  void progress(TimeNs now);
  void ack_through(std::uint32_t psn, TimeNs now);
  void on_ack(const PacketView& packet, TimeNs now, Effects& effects);
  void on_read_response(const PacketView& packet, TimeNs now, Effects& effects);
  void on_atomic_ack(const PacketView& packet, TimeNs now, Effects& effects);
  void retire();
  void fail_wqe(SendWqe& wqe, WcStatus status);
  void enter_error();
  void complete_send(const SendWqe& wqe);
  void complete(CompletionQueue& cq, const WorkCompletion& completion);

  // ---- responder ----
  void on_request(const PacketView& packet, TimeNs now, Effects& effects);
  void on_duplicate(const PacketView& packet, Effects& effects);
  bool check_sequence(Opcode opcode) const;
  void do_send(const PacketView& packet, Effects& effects);
  void do_write(const PacketView& packet, Effects& effects);
  void do_read(const PacketView& packet, std::uint32_t psn, bool duplicate, Effects& effects);
  void do_atomic(const PacketView& packet, Effects& effects);
  bool remote_check(std::uint32_t rkey, std::uint64_t addr, std::uint64_t length,
                    std::uint32_t right, std::span<std::byte>& out);
  void send_ack(std::uint32_t psn, std::uint8_t syndrome, Effects& effects);
  void send_nak(std::uint32_t psn, NakCode code, Effects& effects);  // and enter kError

  // ---- shared ----
  PacketFields fields(Opcode opcode, std::uint32_t psn) const;
  void emit(const PacketFields& fields, std::span<const std::byte> payload, Effects& effects);
  // Copies between a scatter/gather list (at byte `offset`) and `data`; kSuccess or the local
  // error. Never touches memory outside registered regions.
  WcStatus scatter(const std::vector<Sge>& sg_list, std::uint64_t offset,
                   std::span<const std::byte> data) const;
  WcStatus gather(const std::vector<Sge>& sg_list, std::uint64_t offset,
                  std::span<std::byte> out) const;

  QpNum qpn_;
  QpConfig config_;
  NodeContext& node_;
  CompletionQueue& send_cq_;
  CompletionQueue& recv_cq_;
  QpState state_ = QpState::kReset;
  QpRemote remote_;

  // Requester state.
  // Fifo, not std::deque: a deque allocates 576 B when constructed, and a 1024-GPU simulation
  // holds a million QPs (docs/simulator.md, "The RoCE engine").
  static constexpr std::size_t kQueueFirstCapacity = 2;
  Fifo<SendWr, kQueueFirstCapacity> posted_;     // posted, doorbell not yet rung
  Fifo<SendWr, kQueueFirstCapacity> pending_;    // doorbell rung, not started (window full)
  Fifo<SendWqe, kQueueFirstCapacity> inflight_;  // started, in PSN order, not yet retired
  std::uint32_t next_psn_ = 0;                   // PSN of the next new WR's first packet
  std::uint32_t send_psn_ = 0;   // next PSN to transmit (behind next_psn_ while resending)
  std::uint32_t high_psn_ = 0;   // one past the highest PSN ever transmitted
  std::uint32_t acked_psn_ = 0;  // last PSN known to be acknowledged
  std::uint32_t inflight_reads_ = 0;
  TimeNs last_progress_ns_ = 0;
  std::uint8_t retries_left_ = 0;
  std::uint8_t rnr_retries_left_ = 0;
  std::optional<TimeNs> rnr_resume_ns_;
  std::uint32_t rnr_psn_ = 0;

  // Responder state.
  std::uint32_t epsn_ = 0;  // next expected request PSN
  std::uint32_t msn_ = 0;   // messages completed (carried in every AETH)
  bool nak_sent_ = false;   // one NAK per sequence error (IBA 9.7.5.1.2)
  InMessage in_message_ = InMessage::kNone;
  std::uint64_t write_va_ = 0;  // next byte of the current multi-packet WRITE
  std::uint32_t write_rkey_ = 0;
  std::uint64_t write_remaining_ = 0;
  std::uint64_t write_total_ = 0;
  std::uint64_t recv_offset_ = 0;  // bytes of the current SEND placed so far
  Fifo<RecvWr, kQueueFirstCapacity> recv_queue_;
  std::vector<AtomicReplay> atomic_replay_;  // allocated by the first atomic
  std::size_t atomic_replay_next_ = 0;
};

}  // namespace ethx::roce
