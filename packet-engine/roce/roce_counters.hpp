// Counters of a RoCEv2 node: every dropped frame, NAK, retransmission and access violation is
// counted here, so loss and misuse are visible rather than silent (docs/roce.md lists them).
#pragma once

#include <array>
#include <cstdint>

#include "packet-engine/roce/roce_wire.hpp"

namespace ethx::roce {

struct RoceCounters {
  // Receive path.
  std::uint64_t frames_rx = 0;
  std::uint64_t frames_tx = 0;
  std::uint64_t bytes_tx = 0;                                    // frame bytes handed to effects
  std::array<std::uint64_t, kDecodeErrorCount> decode_errors{};  // indexed by DecodeError
  std::uint64_t not_for_us = 0;        // destination MAC or IP is not this node's
  std::uint64_t bad_pkey = 0;          // P_Key does not match
  std::uint64_t unknown_qp = 0;        // no connected QP with the BTH destination QP number
  std::uint64_t wrong_peer = 0;        // source IP is not the QP's connected peer
  std::uint64_t dropped_in_error = 0;  // packets for a QP in the error state

  // Requester.
  std::uint64_t doorbells = 0;
  std::uint64_t wqes_posted = 0;
  std::uint64_t request_packets = 0;        // first transmissions
  std::uint64_t retransmitted_packets = 0;  // go-back-N resends
  std::uint64_t timeouts = 0;               // ACK timer expiries
  std::uint64_t seq_naks_received = 0;
  std::uint64_t rnr_naks_received = 0;
  std::uint64_t error_naks_received = 0;  // access, invalid request, operational
  std::uint64_t implicit_retries = 0;     // lost READ/atomic responses detected by a later ACK
  std::uint64_t stale_responses = 0;      // duplicate or unexpected ACKs and responses
  std::uint64_t send_completions = 0;
  std::uint64_t error_completions = 0;  // send and receive completions with status != ok

  // Responder.
  std::uint64_t requests_executed = 0;  // messages performed (SEND, WRITE, READ, atomic)
  std::uint64_t acks_sent = 0;
  std::uint64_t seq_naks_sent = 0;
  std::uint64_t rnr_naks_sent = 0;
  std::uint64_t access_naks_sent = 0;         // NAK remote access error
  std::uint64_t invalid_naks_sent = 0;        // NAK invalid request
  std::uint64_t operational_naks_sent = 0;    // NAK remote operational error
  std::uint64_t out_of_sequence = 0;          // request packets ahead of the expected PSN (dropped)
  std::uint64_t duplicate_requests = 0;       // SEND/WRITE duplicates: acknowledged, not performed
  std::uint64_t duplicate_reads = 0;          // READ duplicates: executed again (IBA 9.7.5.1.4)
  std::uint64_t duplicate_atomics = 0;        // answered from the saved-result cache
  std::uint64_t duplicate_atomic_misses = 0;  // duplicate atomic no longer in the cache: dropped
  // Remote access violations (each also NAKed): the key, the range or the right was wrong.
  std::uint64_t access_bad_rkey = 0;
  std::uint64_t access_out_of_range = 0;
  std::uint64_t access_no_rights = 0;
  std::uint64_t cq_overflows = 0;  // completions lost because a CQ was full
};

}  // namespace ethx::roce
