// RoCEv2 RC queue pairs end to end: two RoceNodes joined by an in-memory wire with a fake
// clock. WRITE, READ, SEND/RECV and atomics with data verification; RNR; go-back-N on a
// sequence NAK and on timeout; duplicates; loss, duplication and reordering; remote access
// violations NAKed, counted and leaving memory untouched; doorbell batching; many QPs; PSN
// wraparound; and structure-aware fuzzing of a live responder.
#include "packet-engine/roce/roce_node.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <span>
#include <tuple>
#include <vector>

namespace ethx::roce {
namespace {

using Bytes = std::vector<std::byte>;

Bytes pattern(std::size_t count, unsigned seed) {
  Bytes out(count);
  for (std::size_t i = 0; i < count; ++i) {
    out[i] = static_cast<std::byte>((i * 131 + seed * 7 + (i >> 8)) & 0xFF);
  }
  return out;
}

enum class Fate { kDeliver, kDrop, kDuplicate, kDelay };

// Two nodes, one QP pair, and a wire that delivers each frame after `latency_ns` unless the
// fault hook says otherwise. Time only moves to the next delivery or timer.
class Wire {
 public:
  static constexpr TimeNs kLatencyNs = 1'000;
  static constexpr TimeNs kDelayNs = 7'000;  // reordered frames arrive this much later

  // `icrc_a`, `icrc_b`: whether each node computes and checks ICRCs (RoceNodeConfig::icrc).
  explicit Wire(bool icrc_a = true, bool icrc_b = true)
      : a_(RoceNodeConfig{
            .mac = MacAddr{{0x02, 0, 0, 0, 0, 0x0A}}, .ip = 0x0A000001, .icrc = icrc_a}),
        b_(RoceNodeConfig{
            .mac = MacAddr{{0x02, 0, 0, 0, 0, 0x0B}}, .ip = 0x0A000002, .icrc = icrc_b}) {
    a_cq_ = a_.create_cq(1 << 16);
    b_cq_ = b_.create_cq(1 << 16);
  }

  // Creates and connects one QP on each node; returns {qp on a, qp on b}.
  std::pair<QpNum, QpNum> connect(QpConfig config = {}, std::uint32_t psn_a = 100,
                                  std::uint32_t psn_b = 5000) {
    config.send_cq = config.recv_cq = a_cq_;
    config.initial_psn = psn_a;
    const QpNum qa = *a_.create_qp(config);
    config.send_cq = config.recv_cq = b_cq_;
    config.initial_psn = psn_b;
    const QpNum qb = *b_.create_qp(config);
    EXPECT_TRUE(a_.connect_qp(qa, QpRemote{b_.mac(), b_.ip(), qb, psn_b}));
    EXPECT_TRUE(b_.connect_qp(qb, QpRemote{a_.mac(), a_.ip(), qa, psn_a}));
    return {qa, qb};
  }

  RoceNode& a() { return a_; }
  RoceNode& b() { return b_; }
  CqId a_cq() const { return a_cq_; }
  CqId b_cq() const { return b_cq_; }
  TimeNs now() const { return now_; }
  std::uint64_t delivered() const { return delivered_; }
  // Decides each frame's fate; `from_a` tells the direction.
  std::function<Fate(const Bytes&, bool from_a)> fault;
  // Sees every frame put on the wire (before faults).
  std::function<void(const Bytes&, bool from_a)> tap;

  void doorbell(QpNum qpn_on_a) {
    Effects effects;
    a_.ring_doorbell(qpn_on_a, now_, effects);
    take(effects, true);
  }
  void doorbell_b(QpNum qpn_on_b) {
    Effects effects;
    b_.ring_doorbell(qpn_on_b, now_, effects);
    take(effects, false);
  }
  void inject(const Bytes& frame, bool to_b) {
    queue_.emplace(std::make_pair(now_ + kLatencyNs, seq_++), Pending{frame, to_b});
  }

  // Runs until nothing is in flight and no timer is armed, or `max_events` events.
  void run(std::size_t max_events = 1'000'000) {
    for (std::size_t event = 0; event < max_events; ++event) {
      refresh_wakes();
      const bool have_frame = !queue_.empty();
      const std::optional<TimeNs> wake = earliest_wake();
      if (!have_frame && !wake) return;
      if (have_frame && (!wake || queue_.begin()->first.first <= *wake)) {
        auto node = queue_.extract(queue_.begin());
        now_ = std::max(now_, node.key().first);
        Effects effects;
        RoceNode& target = node.mapped().from_a ? b_ : a_;
        target.on_frame(node.mapped().frame, now_, effects);
        ++delivered_;
        take(effects, !node.mapped().from_a);
      } else {
        now_ = std::max(now_, *wake);
        Effects effects;
        RoceNode& target = wake_a_ && *wake_a_ == *wake ? a_ : b_;
        target.poll(now_, effects);
        take(effects, &target == &a_);
      }
    }
    ADD_FAILURE() << "the wire did not go idle";
  }

  std::vector<WorkCompletion> completions(bool on_a) {
    std::vector<WorkCompletion> out(4096);
    out.resize((on_a ? a_ : b_).poll_cq(on_a ? a_cq_ : b_cq_, out));
    return out;
  }

 private:
  struct Pending {
    Bytes frame;
    bool from_a = false;
  };

  void take(Effects& effects, bool from_a) {
    for (auto& frame : effects.send) {
      if (tap) tap(frame, from_a);
      const Fate fate = fault ? fault(frame, from_a) : Fate::kDeliver;
      if (fate == Fate::kDrop) continue;
      const TimeNs at = now_ + kLatencyNs + (fate == Fate::kDelay ? kDelayNs : 0);
      queue_.emplace(std::make_pair(at, seq_++), Pending{frame, from_a});
      if (fate == Fate::kDuplicate)
        queue_.emplace(std::make_pair(at + 1, seq_++), Pending{frame, from_a});
    }
    effects.clear();
  }

  void refresh_wakes() {
    Effects ea;
    a_.poll(now_, ea);
    wake_a_ = ea.wake_at;
    take(ea, true);
    Effects eb;
    b_.poll(now_, eb);
    wake_b_ = eb.wake_at;
    take(eb, false);
  }
  std::optional<TimeNs> earliest_wake() const {
    if (wake_a_ && wake_b_) return std::min(*wake_a_, *wake_b_);
    return wake_a_ ? wake_a_ : wake_b_;
  }

  RoceNode a_;
  RoceNode b_;
  CqId a_cq_ = 0;
  CqId b_cq_ = 0;
  TimeNs now_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t delivered_ = 0;
  std::map<std::pair<TimeNs, std::uint64_t>, Pending> queue_;
  std::optional<TimeNs> wake_a_;
  std::optional<TimeNs> wake_b_;
};

QpConfig fast_config() {
  QpConfig config;
  config.ack_timeout_ns = 100'000;  // 100 us on the fake clock
  config.min_rnr_timer_code = 1;    // 10 us
  return config;
}

constexpr std::uint32_t kAllRemote =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

struct Buffers {
  Bytes local;
  Bytes remote;
  MemoryRegion local_mr;
  MemoryRegion remote_mr;
};

Buffers make_buffers(Wire& wire, std::size_t bytes, std::uint32_t remote_access = kAllRemote) {
  Buffers buffers;
  buffers.local.resize(bytes);
  buffers.remote.resize(bytes);
  buffers.local_mr = wire.a().register_memory(buffers.local, kAccessLocalWrite);
  buffers.remote_mr = wire.b().register_memory(buffers.remote, remote_access);
  return buffers;
}

SendWr write_wr(std::uint64_t id, const MemoryRegion& local, std::size_t offset, std::size_t bytes,
                const MemoryRegion& remote, std::size_t remote_offset) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = WrOpcode::kRdmaWrite;
  wr.sg_list = {Sge{local.addr + offset, static_cast<std::uint32_t>(bytes), local.lkey}};
  wr.remote_addr = remote.addr + remote_offset;
  wr.rkey = remote.rkey;
  return wr;
}

SendWr read_wr(std::uint64_t id, const MemoryRegion& local, std::size_t offset, std::size_t bytes,
               const MemoryRegion& remote, std::size_t remote_offset) {
  SendWr wr = write_wr(id, local, offset, bytes, remote, remote_offset);
  wr.opcode = WrOpcode::kRdmaRead;
  return wr;
}

SendWr atomic_wr(std::uint64_t id, WrOpcode opcode, const MemoryRegion& local, std::size_t offset,
                 const MemoryRegion& remote, std::size_t remote_offset, std::uint64_t compare_add,
                 std::uint64_t swap = 0) {
  SendWr wr = write_wr(id, local, offset, 8, remote, remote_offset);
  wr.opcode = opcode;
  wr.compare_add = compare_add;
  wr.swap = swap;
  return wr;
}

std::uint64_t u64_at(const Bytes& bytes, std::size_t offset) {
  std::uint64_t value = 0;
  std::memcpy(&value, bytes.data() + offset, 8);
  return value;
}
void set_u64(Bytes& bytes, std::size_t offset, std::uint64_t value) {
  std::memcpy(bytes.data() + offset, &value, 8);
}

TEST(RoceQp, WriteThenReadBackAcrossManyPackets) {
  Wire wire;
  const auto [qa, qb] = wire.connect(fast_config());
  Buffers buf = make_buffers(wire, 64 * 1024);
  const Bytes data = pattern(10'000, 1);  // 10 packets at the 1024 B path MTU
  std::copy(data.begin(), data.end(), buf.local.begin());
  ASSERT_EQ(wire.a().post_send(qa, write_wr(1, buf.local_mr, 0, data.size(), buf.remote_mr, 100)),
            PostResult::kOk);
  wire.doorbell(qa);
  wire.run();
  EXPECT_TRUE(std::equal(data.begin(), data.end(), buf.remote.begin() + 100));
  EXPECT_EQ(buf.remote[99], std::byte{0});
  EXPECT_EQ(buf.remote[100 + data.size()], std::byte{0});

  ASSERT_EQ(
      wire.a().post_send(qa, read_wr(2, buf.local_mr, 20'000, data.size(), buf.remote_mr, 100)),
      PostResult::kOk);
  wire.doorbell(qa);
  wire.run();
  EXPECT_TRUE(std::equal(data.begin(), data.end(), buf.local.begin() + 20'000));

  const auto wcs = wire.completions(true);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].wr_id, 1u);
  EXPECT_EQ(wcs[0].opcode, WcOpcode::kRdmaWrite);
  EXPECT_EQ(wcs[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wcs[1].wr_id, 2u);
  EXPECT_EQ(wcs[1].opcode, WcOpcode::kRdmaRead);
  EXPECT_EQ(wcs[1].status, WcStatus::kSuccess);
  EXPECT_EQ(wcs[1].byte_len, data.size());
  EXPECT_EQ(wire.a().counters().request_packets, 10u + 1u);  // 10 WRITE packets, 1 READ request
  EXPECT_EQ(wire.a().counters().retransmitted_packets, 0u);
  EXPECT_EQ(wire.b().counters().requests_executed, 2u);
  EXPECT_TRUE(wire.completions(false).empty());  // one-sided: nothing on the target's CQ
}

TEST(RoceQp, WithoutIcrcPacketsCarryZeroesAndACheckingPeerDropsThem) {
  // Both ends off (the simulator's [sim] crc = false): the WRITE lands, its ICRC bytes are 0.
  Wire both_off(false, false);
  std::vector<Bytes> seen;
  both_off.tap = [&seen](const Bytes& frame, bool) { seen.push_back(frame); };
  auto [qa, qb] = both_off.connect(fast_config());
  Buffers buf = make_buffers(both_off, 4096);
  const Bytes data = pattern(100, 3);
  std::copy(data.begin(), data.end(), buf.local.begin());
  ASSERT_EQ(both_off.a().post_send(qa, write_wr(1, buf.local_mr, 0, data.size(), buf.remote_mr, 0)),
            PostResult::kOk);
  both_off.doorbell(qa);
  both_off.run();
  EXPECT_TRUE(std::equal(data.begin(), data.end(), buf.remote.begin()));
  ASSERT_FALSE(seen.empty());
  for (const Bytes& frame : seen) {
    EXPECT_TRUE(
        std::all_of(frame.end() - 4, frame.end(), [](std::byte b) { return b == std::byte{0}; }));
  }
  // A peer that checks ICRCs drops such packets as bad, and nothing is written.
  Wire checking(false, true);
  std::tie(qa, qb) = checking.connect(fast_config());
  Buffers other = make_buffers(checking, 4096);
  std::copy(data.begin(), data.end(), other.local.begin());
  ASSERT_EQ(
      checking.a().post_send(qa, write_wr(1, other.local_mr, 0, data.size(), other.remote_mr, 0)),
      PostResult::kOk);
  checking.doorbell(qa);
  checking.run();
  EXPECT_GT(checking.b().counters().decode_errors[static_cast<std::size_t>(DecodeError::kBadIcrc)],
            0u);
  EXPECT_EQ(checking.b().counters().requests_executed, 0u);
  EXPECT_EQ(other.remote[0], std::byte{0});
}

TEST(RoceQp, SegmentationFollowsThePathMtu) {
  for (std::uint32_t mtu : {256u, 512u, 1024u, 2048u, 4096u}) {
    SCOPED_TRACE(mtu);
    Wire wire;
    QpConfig config = fast_config();
    config.path_mtu_bytes = mtu;
    const auto [qa, qb] = wire.connect(config);
    Buffers buf = make_buffers(wire, 64 * 1024);
    const Bytes data = pattern(10'000, mtu);
    std::copy(data.begin(), data.end(), buf.local.begin());
    std::size_t largest_payload = 0;
    std::size_t requests = 0;
    std::size_t responses = 0;
    wire.tap = [&](const Bytes& frame, bool from_a) {
      PacketView v;
      ASSERT_EQ(decode_packet(frame, v), DecodeError::kOk);
      largest_payload = std::max(largest_payload, v.payload.size());
      if (from_a) ++requests;
      if (is_read_response(v.opcode)) ++responses;
    };
    wire.a().post_send(qa, write_wr(1, buf.local_mr, 0, data.size(), buf.remote_mr, 0));
    wire.a().post_send(qa, read_wr(2, buf.local_mr, 20'000, data.size(), buf.remote_mr, 0));
    wire.doorbell(qa);
    wire.run();
    const std::size_t packets = (data.size() + mtu - 1) / mtu;
    EXPECT_EQ(largest_payload, mtu);
    EXPECT_EQ(requests, packets + 1);  // the WRITE's packets and one READ request
    EXPECT_EQ(responses, packets);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), buf.remote.begin()));
    EXPECT_TRUE(std::equal(data.begin(), data.end(), buf.local.begin() + 20'000));
    EXPECT_EQ(wire.completions(true).size(), 2u);
  }
  Wire wire;
  QpConfig config;
  for (std::uint32_t bad : {0u, 128u, 1000u, 8192u}) {
    config.path_mtu_bytes = bad;
    EXPECT_FALSE(wire.a().create_qp(config).has_value()) << bad;
  }
}

TEST(RoceQp, SendRecvWithScatterListsAndImmediate) {
  Wire wire;
  const auto [qa, qb] = wire.connect(fast_config());
  Bytes src(8192);
  Bytes dst(8192);
  const MemoryRegion src_mr = wire.a().register_memory(src, 0);
  const MemoryRegion dst_mr = wire.b().register_memory(dst, kAccessLocalWrite);
  const std::size_t sizes[] = {0, 1, 1024, 3000};
  std::size_t offset = 0;
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    const Bytes data = pattern(sizes[i], 10 + static_cast<unsigned>(i));
    std::copy(data.begin(), data.end(), src.begin() + offset);
    // The receive buffer is two scatter elements, so messages straddle them.
    RecvWr recv{.wr_id = 100 + i,
                .sg_list = {Sge{dst_mr.addr + offset, 100, dst_mr.lkey},
                            Sge{dst_mr.addr + offset + 100, 3000, dst_mr.lkey}}};
    ASSERT_EQ(wire.b().post_recv(qb, recv), PostResult::kOk);
    SendWr send{
        .wr_id = i,
        .opcode = i == 3 ? WrOpcode::kSendWithImm : WrOpcode::kSend,
        .sg_list = {Sge{src_mr.addr + offset, static_cast<std::uint32_t>(sizes[i]), src_mr.lkey}},
        .imm_data = 0xCAFE0000u + static_cast<std::uint32_t>(i)};
    ASSERT_EQ(wire.a().post_send(qa, send), PostResult::kOk);
    offset += 3100;
    if (offset + 3100 > dst.size()) offset = 0;
  }
  wire.doorbell(qa);
  wire.run();
  const auto recvs = wire.completions(false);
  ASSERT_EQ(recvs.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(recvs[i].wr_id, 100 + i);
    EXPECT_EQ(recvs[i].status, WcStatus::kSuccess);
    EXPECT_EQ(recvs[i].opcode, WcOpcode::kRecv);
    EXPECT_EQ(recvs[i].byte_len, sizes[i]);
    EXPECT_EQ(recvs[i].with_imm, i == 3);
    if (i == 3) {
      EXPECT_EQ(recvs[i].imm_data, 0xCAFE0003u);
    }
  }
  // The last two messages landed at offsets 0 and 3100 last: check their bytes.
  const Bytes third = pattern(1024, 12);
  const Bytes fourth = pattern(3000, 13);
  EXPECT_TRUE(std::equal(third.begin(), third.end(), dst.begin()));
  EXPECT_TRUE(std::equal(fourth.begin(), fourth.end(), dst.begin() + 3100));
  EXPECT_EQ(wire.completions(true).size(), 4u);
}

TEST(RoceQp, AtomicsFetchAddAndCompareSwap) {
  Wire wire;
  const auto [qa, qb] = wire.connect(fast_config());
  Buffers buf = make_buffers(wire, 64);
  set_u64(buf.remote, 8, 1000);
  set_u64(buf.remote, 16, 7);
  wire.a().post_send(qa,
                     atomic_wr(1, WrOpcode::kAtomicFetchAdd, buf.local_mr, 0, buf.remote_mr, 8, 5));
  wire.a().post_send(
      qa, atomic_wr(2, WrOpcode::kAtomicCompareSwap, buf.local_mr, 8, buf.remote_mr, 16, 7, 99));
  wire.a().post_send(
      qa, atomic_wr(3, WrOpcode::kAtomicCompareSwap, buf.local_mr, 16, buf.remote_mr, 16, 7, 55));
  wire.doorbell(qa);
  wire.run();
  EXPECT_EQ(u64_at(buf.remote, 8), 1005u);
  EXPECT_EQ(u64_at(buf.local, 0), 1000u);  // FETCH_ADD returns the old value
  EXPECT_EQ(u64_at(buf.local, 8), 7u);     // the swap happened: old value 7
  EXPECT_EQ(u64_at(buf.local, 16), 99u);   // the second compare failed: old value 99
  EXPECT_EQ(u64_at(buf.remote, 16), 99u);
  const auto wcs = wire.completions(true);
  ASSERT_EQ(wcs.size(), 3u);
  EXPECT_EQ(wcs[0].opcode, WcOpcode::kFetchAdd);
  EXPECT_EQ(wcs[1].opcode, WcOpcode::kCompareSwap);
  for (const auto& wc : wcs) EXPECT_EQ(wc.status, WcStatus::kSuccess);
}

TEST(RoceQp, ReceiverNotReadyIsRetriedAfterTheRnrTimer) {
  Wire wire;
  const auto [qa, qb] = wire.connect(fast_config());
  Bytes src = pattern(2000, 3);
  Bytes dst(2000);
  const MemoryRegion src_mr = wire.a().register_memory(src, 0);
  const MemoryRegion dst_mr = wire.b().register_memory(dst, kAccessLocalWrite);
  wire.a().post_send(qa, SendWr{.wr_id = 9, .sg_list = {Sge{src_mr.addr, 2000, src_mr.lkey}}});
  // Post the receive only when the first RNR NAK leaves B.
  bool posted = false;
  wire.tap = [&](const Bytes& frame, bool from_a) {
    if (!from_a && !posted) {
      PacketView v;
      if (decode_packet(frame, v) == DecodeError::kOk && v.aeth &&
          syndrome_kind(v.aeth->syndrome.value()) == AethKind::kRnrNak) {
        posted = true;
        wire.b().post_recv(qb,
                           RecvWr{.wr_id = 77, .sg_list = {Sge{dst_mr.addr, 2000, dst_mr.lkey}}});
      }
    }
  };
  wire.doorbell(qa);
  wire.run();
  EXPECT_TRUE(posted);
  EXPECT_EQ(wire.b().counters().rnr_naks_sent, 1u);
  EXPECT_EQ(wire.a().counters().rnr_naks_received, 1u);
  EXPECT_EQ(dst, src);
  const auto recvs = wire.completions(false);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(recvs[0].byte_len, 2000u);
  const auto sends = wire.completions(true);
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_EQ(sends[0].status, WcStatus::kSuccess);
  EXPECT_GE(wire.now(), rnr_timer_ns(1));  // the resend waited for the advertised timer
}

TEST(RoceQp, OneLostPacketTriggersOneSequenceNakAndGoBackN) {
  Wire wire;
  const auto [qa, qb] = wire.connect(fast_config());
  Buffers buf = make_buffers(wire, 16 * 1024);
  const Bytes data = pattern(10 * 1024, 4);
  std::copy(data.begin(), data.end(), buf.local.begin());
  int request_index = 0;
  wire.fault = [&](const Bytes&, bool from_a) {
    if (!from_a) return Fate::kDeliver;
    return request_index++ == 2 ? Fate::kDrop : Fate::kDeliver;  // the third packet, once
  };
  wire.a().post_send(qa, write_wr(1, buf.local_mr, 0, data.size(), buf.remote_mr, 0));
  wire.doorbell(qa);
  wire.run();
  EXPECT_TRUE(std::equal(data.begin(), data.end(), buf.remote.begin()));
  EXPECT_EQ(wire.b().counters().seq_naks_sent, 1u);    // one NAK per sequence error
  EXPECT_EQ(wire.b().counters().out_of_sequence, 7u);  // packets 4..10 dropped
  EXPECT_EQ(wire.a().counters().seq_naks_received, 1u);
  EXPECT_EQ(wire.a().counters().retransmitted_packets, 8u);  // go back to packet 3: 3..10
  EXPECT_EQ(wire.a().counters().timeouts, 0u);
  const auto wcs = wire.completions(true);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kSuccess);
}

TEST(RoceQp, ALostLastPacketIsResentOnTimeout) {
  Wire wire;
  const auto [qa, qb] = wire.connect(fast_config());
  Buffers buf = make_buffers(wire, 4096);
  const Bytes data = pattern(512, 5);
  std::copy(data.begin(), data.end(), buf.local.begin());
  int requests = 0;
  wire.fault = [&](const Bytes&, bool from_a) {
    return from_a && requests++ == 0 ? Fate::kDrop : Fate::kDeliver;
  };
  wire.a().post_send(qa, write_wr(1, buf.local_mr, 0, data.size(), buf.remote_mr, 0));
  wire.doorbell(qa);
  wire.run();
  EXPECT_TRUE(std::equal(data.begin(), data.end(), buf.remote.begin()));
  EXPECT_EQ(wire.a().counters().timeouts, 1u);
  EXPECT_EQ(wire.a().counters().retransmitted_packets, 1u);
  EXPECT_GE(wire.now(), fast_config().ack_timeout_ns);
  ASSERT_EQ(wire.completions(true).size(), 1u);
}

TEST(RoceQp, DuplicateWriteIsAcknowledgedNotPerformedAgain) {
  Wire wire;
  const auto [qa, qb] = wire.connect(fast_config());
  Buffers buf = make_buffers(wire, 4096);
  const Bytes first = pattern(64, 1);
  std::copy(first.begin(), first.end(), buf.local.begin());
  Bytes captured;
  wire.tap = [&](const Bytes& frame, bool from_a) {
    if (from_a && captured.empty()) captured = frame;
  };
  wire.a().post_send(qa, write_wr(1, buf.local_mr, 0, 64, buf.remote_mr, 0));
  wire.doorbell(qa);
  wire.run();
  ASSERT_FALSE(captured.empty());
  // The target overwrites the bytes locally; a replayed WRITE must not put the old ones back.
  std::fill(buf.remote.begin(), buf.remote.begin() + 64, std::byte{0xEE});
  wire.inject(captured, true);
  wire.run();
  EXPECT_EQ(buf.remote[0], std::byte{0xEE});
  EXPECT_EQ(wire.b().counters().duplicate_requests, 1u);
  EXPECT_EQ(wire.b().counters().acks_sent, 2u);        // the original and the duplicate
  EXPECT_EQ(wire.a().counters().stale_responses, 1u);  // the second ACK acknowledges nothing new
}

TEST(RoceQp, DuplicateAtomicIsAnsweredFromTheCacheNotExecutedTwice) {
  Wire wire;
  const auto [qa, qb] = wire.connect(fast_config());
  Buffers buf = make_buffers(wire, 64);
  set_u64(buf.remote, 0, 40);
  // Lose the first ATOMIC ACKNOWLEDGE: the requester times out and resends the FETCH_ADD; the
  // responder must answer from its saved result, not add again.
  int responses = 0;
  wire.fault = [&](const Bytes&, bool from_a) {
    return !from_a && responses++ == 0 ? Fate::kDrop : Fate::kDeliver;
  };
  wire.a().post_send(qa,
                     atomic_wr(1, WrOpcode::kAtomicFetchAdd, buf.local_mr, 0, buf.remote_mr, 0, 2));
  wire.doorbell(qa);
  wire.run();
  EXPECT_EQ(u64_at(buf.remote, 0), 42u);
  EXPECT_EQ(u64_at(buf.local, 0), 40u);
  EXPECT_EQ(wire.b().counters().duplicate_atomics, 1u);
  EXPECT_EQ(wire.a().counters().timeouts, 1u);
  const auto wcs = wire.completions(true);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kSuccess);
}

TEST(RoceQp, DuplicateReadIsExecutedAgain) {
  Wire wire;
  const auto [qa, qb] = wire.connect(fast_config());
  Buffers buf = make_buffers(wire, 8192);
  const Bytes data = pattern(3000, 8);
  std::copy(data.begin(), data.end(), buf.remote.begin());
  int responses = 0;
  wire.fault = [&](const Bytes&, bool from_a) {
    return !from_a && responses++ == 1 ? Fate::kDrop : Fate::kDeliver;  // the MIDDLE response
  };
  wire.a().post_send(qa, read_wr(1, buf.local_mr, 0, data.size(), buf.remote_mr, 0));
  wire.doorbell(qa);
  wire.run();
  EXPECT_TRUE(std::equal(data.begin(), data.end(), buf.local.begin()));
  EXPECT_EQ(wire.b().counters().duplicate_reads, 1u);   // re-requested from the gap
  EXPECT_EQ(wire.a().counters().implicit_retries, 1u);  // the LAST showed the gap
  EXPECT_EQ(wire.a().counters().timeouts, 0u);
  ASSERT_EQ(wire.completions(true).size(), 1u);
}

TEST(RoceQp, WrongRkeyReadAndWriteAreNakedCountedAndTouchNothing) {
  struct Case {
    const char* name;
    WrOpcode opcode;
    std::uint32_t remote_access;
    bool wrong_key;
    std::size_t remote_offset;
    std::uint64_t RoceCounters::*counter;
  };
  const Case cases[] = {
      {"write bad rkey", WrOpcode::kRdmaWrite, kAllRemote, true, 0, &RoceCounters::access_bad_rkey},
      {"read bad rkey", WrOpcode::kRdmaRead, kAllRemote, true, 0, &RoceCounters::access_bad_rkey},
      {"write out of range", WrOpcode::kRdmaWrite, kAllRemote, false, 4000,
       &RoceCounters::access_out_of_range},
      {"read out of range", WrOpcode::kRdmaRead, kAllRemote, false, 4000,
       &RoceCounters::access_out_of_range},
      {"write to read-only", WrOpcode::kRdmaWrite, kAccessRemoteRead, false, 0,
       &RoceCounters::access_no_rights},
      {"read from write-only", WrOpcode::kRdmaRead, kAccessRemoteWrite, false, 0,
       &RoceCounters::access_no_rights},
      {"atomic without the right", WrOpcode::kAtomicFetchAdd, kAccessRemoteWrite, false, 0,
       &RoceCounters::access_no_rights},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Wire wire;
    const auto [qa, qb] = wire.connect(fast_config());
    Buffers buf = make_buffers(wire, 4096, c.remote_access);
    const Bytes fill = pattern(4096, 77);
    std::copy(fill.begin(), fill.end(), buf.remote.begin());
    const Bytes remote_before = buf.remote;
    std::fill(buf.local.begin(), buf.local.end(), std::byte{0x5A});
    const Bytes local_before = buf.local;
    SendWr wr = c.opcode == WrOpcode::kAtomicFetchAdd
                    ? atomic_wr(1, c.opcode, buf.local_mr, 0, buf.remote_mr, 0, 1)
                    : write_wr(1, buf.local_mr, 0, 200, buf.remote_mr, c.remote_offset);
    wr.opcode = c.opcode;
    if (c.wrong_key) wr.rkey ^= 0x100;  // another region index: not registered
    wire.a().post_send(qa, wr);
    // A second WR behind it must be flushed, not executed, once the QP is in error.
    wire.a().post_send(qa, write_wr(2, buf.local_mr, 0, 8, buf.remote_mr, 0));
    wire.doorbell(qa);
    wire.run();
    EXPECT_EQ(buf.remote, remote_before);  // memory untouched
    if (c.opcode != WrOpcode::kRdmaWrite) {
      EXPECT_EQ(buf.local, local_before);  // nothing came back into the local buffer
    }
    EXPECT_EQ(wire.b().counters().access_naks_sent, 1u);
    EXPECT_EQ(wire.b().counters().*c.counter, 1u);
    EXPECT_EQ(wire.b().counters().requests_executed, 0u);
    EXPECT_EQ(wire.a().counters().error_naks_received, 1u);
    const auto wcs = wire.completions(true);
    ASSERT_EQ(wcs.size(), 2u);
    EXPECT_EQ(wcs[0].wr_id, 1u);
    EXPECT_EQ(wcs[0].status, WcStatus::kRemoteAccessError) << to_string(wcs[0].status);
    EXPECT_EQ(wcs[1].wr_id, 2u);
    EXPECT_EQ(wcs[1].status, WcStatus::kWrFlushError);
    EXPECT_EQ(wire.a().qp(qa)->state(), QpState::kError);
    EXPECT_EQ(wire.b().qp(qb)->state(), QpState::kError);
  }
}

TEST(RoceQp, UnalignedAtomicIsAnInvalidRequest) {
  Wire wire;
  const auto [qa, qb] = wire.connect(fast_config());
  Buffers buf = make_buffers(wire, 64);
  const Bytes before = buf.remote;
  wire.a().post_send(qa,
                     atomic_wr(1, WrOpcode::kAtomicFetchAdd, buf.local_mr, 0, buf.remote_mr, 4, 1));
  wire.doorbell(qa);
  wire.run();
  EXPECT_EQ(buf.remote, before);
  EXPECT_EQ(wire.b().counters().invalid_naks_sent, 1u);
  const auto wcs = wire.completions(true);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kRemoteInvalidRequest);
}

TEST(RoceQp, BadLocalKeyCompletesWithALocalProtectionError) {
  Wire wire;
  const auto [qa, qb] = wire.connect(fast_config());
  Buffers buf = make_buffers(wire, 64);
  SendWr wr = write_wr(1, buf.local_mr, 0, 8, buf.remote_mr, 0);
  wr.sg_list[0].lkey = buf.local_mr.rkey;  // an rkey is not an lkey
  wire.a().post_send(qa, wr);
  wire.doorbell(qa);
  wire.run();
  const auto wcs = wire.completions(true);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kLocalProtectionError);
  EXPECT_EQ(wire.a().counters().request_packets, 0u);  // nothing went on the wire
}

TEST(RoceQp, NoResponseAtAllEndsInRetryExceeded) {
  Wire wire;
  QpConfig config = fast_config();
  config.retry_count = 3;
  const auto [qa, qb] = wire.connect(config);
  Buffers buf = make_buffers(wire, 64);
  wire.fault = [](const Bytes&, bool from_a) { return from_a ? Fate::kDrop : Fate::kDeliver; };
  wire.a().post_send(qa, write_wr(1, buf.local_mr, 0, 8, buf.remote_mr, 0));
  wire.doorbell(qa);
  wire.run();
  EXPECT_EQ(wire.a().counters().timeouts, 4u);  // the first try and 3 retries
  EXPECT_EQ(wire.a().counters().retransmitted_packets, 3u);
  const auto wcs = wire.completions(true);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kRetryExceeded);
  EXPECT_EQ(wire.now(), 4 * config.ack_timeout_ns);
}

TEST(RoceQp, DoorbellBatchingEmitsEverythingPostedOnOneRing) {
  Wire wire;
  const auto [qa, qb] = wire.connect(fast_config());
  Buffers buf = make_buffers(wire, 32 * 64);
  std::size_t frames_on_wire = 0;
  wire.tap = [&](const Bytes&, bool from_a) { frames_on_wire += from_a ? 1 : 0; };
  for (std::uint64_t i = 0; i < 32; ++i) {
    SendWr wr = write_wr(i, buf.local_mr, i * 64, 64, buf.remote_mr, i * 64);
    wr.signaled = i == 31;  // selective signaling: one completion for the batch
    ASSERT_EQ(wire.a().post_send(qa, wr), PostResult::kOk);
  }
  EXPECT_EQ(frames_on_wire, 0u);  // posting alone sends nothing
  Effects effects;
  wire.a().ring_doorbell(qa, 0, effects);
  EXPECT_EQ(effects.send.size(), 32u);  // one doorbell, 32 WRITE_ONLY packets
  EXPECT_EQ(wire.a().counters().doorbells, 1u);
  EXPECT_EQ(wire.a().counters().wqes_posted, 32u);
  for (auto& frame : effects.send) wire.inject(frame, true);
  wire.run();
  const auto wcs = wire.completions(true);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].wr_id, 31u);
  EXPECT_EQ(wire.a().counters().send_completions, 32u);
}

TEST(RoceQp, ManyQueuePairsEachKeepTheirOwnStateAndData) {
  Wire wire;
  constexpr std::size_t kQps = 64;
  Buffers buf = make_buffers(wire, kQps * 256);
  std::vector<std::pair<QpNum, QpNum>> pairs;
  for (std::size_t i = 0; i < kQps; ++i) {
    pairs.push_back(wire.connect(fast_config(), static_cast<std::uint32_t>(i * 1000),
                                 static_cast<std::uint32_t>(i * 3000)));
    const Bytes data = pattern(256, static_cast<unsigned>(i));
    std::copy(data.begin(), data.end(), buf.local.begin() + i * 256);
  }
  const std::size_t idle_bytes = wire.a().total_qp_state_bytes();
  const std::size_t one_qp_bytes = wire.a().qp_state_bytes(pairs[0].first);
  EXPECT_GT(one_qp_bytes, sizeof(QueuePair));
  EXPECT_GE(idle_bytes, kQps * one_qp_bytes);  // state grows linearly with connections
  for (std::size_t i = 0; i < kQps; ++i) {
    wire.a().post_send(pairs[i].first,
                       write_wr(i, buf.local_mr, i * 256, 256, buf.remote_mr, i * 256));
  }
  EXPECT_GT(wire.a().qp_state_bytes(pairs[0].first), one_qp_bytes);  // a queued WR costs bytes
  for (const auto& pair : pairs) wire.doorbell(pair.first);
  wire.run();
  EXPECT_EQ(buf.remote, buf.local);
  EXPECT_EQ(wire.completions(true).size(), kQps);
  EXPECT_EQ(wire.a().qp_count(), kQps);
}

TEST(RoceQp, PsnWrapsAroundTwentyFourBits) {
  Wire wire;
  const auto [qa, qb] = wire.connect(fast_config(), 0xFFFFF8, 0xFFFFFE);
  Buffers buf = make_buffers(wire, 64 * 1024);
  const Bytes data = pattern(40 * 1024, 6);
  std::copy(data.begin(), data.end(), buf.local.begin());
  Bytes a_target(64);
  Bytes b_source = pattern(24, 9);
  const MemoryRegion b_source_mr = wire.b().register_memory(b_source, 0);
  const MemoryRegion a_target_mr = wire.a().register_memory(a_target, kAccessRemoteWrite);
  wire.a().post_send(qa, write_wr(1, buf.local_mr, 0, data.size(), buf.remote_mr, 0));
  wire.a().post_send(qa, read_wr(2, buf.local_mr, 41 * 1024, 20 * 1024, buf.remote_mr, 0));
  wire.doorbell(qa);
  // B's request PSNs wrap too: 0xFFFFFE, 0xFFFFFF, 0.
  wire.b().post_send(qb, write_wr(3, b_source_mr, 0, 8, a_target_mr, 0));
  wire.b().post_send(qb, write_wr(4, b_source_mr, 8, 8, a_target_mr, 8));
  wire.b().post_send(qb, write_wr(5, b_source_mr, 16, 8, a_target_mr, 16));
  wire.doorbell_b(qb);
  wire.run();
  EXPECT_TRUE(std::equal(b_source.begin(), b_source.end(), a_target.begin()));
  EXPECT_EQ(wire.a().qp(qa)->expected_psn(), 1u);
  EXPECT_EQ(wire.completions(false).size(), 3u);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), buf.remote.begin()));
  EXPECT_TRUE(std::equal(data.begin(), data.begin() + 20 * 1024, buf.local.begin() + 41 * 1024));
  EXPECT_EQ(wire.a().qp(qa)->next_psn(), psn_add(0xFFFFF8, 40 + 20));
  EXPECT_EQ(wire.b().qp(qb)->expected_psn(), psn_add(0xFFFFF8, 60));
  const auto wcs = wire.completions(true);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[1].status, WcStatus::kSuccess);
}

TEST(RoceQp, ThePsnWindowBoundsUnacknowledgedPackets) {
  Wire wire;
  QpConfig config = fast_config();
  config.max_inflight_packets = 8;
  config.ack_every_packets = 4;
  const auto [qa, qb] = wire.connect(config);
  Buffers buf = make_buffers(wire, 64 * 1024);
  const Bytes data = pattern(64 * 1024, 12);
  std::copy(data.begin(), data.end(), buf.local.begin());
  std::uint32_t acked = psn_add(100, -1);  // the QP's initial PSN is 100
  std::int32_t widest = 0;
  std::mt19937 rng(3);
  wire.tap = [&](const Bytes& frame, bool from_a) {
    PacketView v;
    ASSERT_EQ(decode_packet(frame, v), DecodeError::kOk);
    if (from_a) {
      widest = std::max(widest, psn_diff(v.psn, acked));
    } else if (v.aeth) {
      // An ACK acknowledges its PSN; a sequence NAK everything before its PSN.
      const std::uint32_t through =
          syndrome_kind(v.aeth->syndrome.value()) == AethKind::kAck ? v.psn : psn_add(v.psn, -1);
      if (psn_diff(through, acked) > 0) acked = through;
    }
  };
  wire.fault = [&](const Bytes&, bool) { return rng() % 100 < 5 ? Fate::kDrop : Fate::kDeliver; };
  for (std::uint64_t i = 0; i < 4; ++i) {
    wire.a().post_send(qa, write_wr(i, buf.local_mr, i * 16384, 16384, buf.remote_mr, i * 16384));
  }
  wire.doorbell(qa);
  wire.run();
  EXPECT_EQ(buf.remote, buf.local);
  // The tap sees each ACK when B sends it, no later than A: A's own view lags (or never gets a
  // lost ACK), so A's distance is at least the one measured here. The window is reached and
  // never exceeded.
  EXPECT_EQ(widest, 8);
  EXPECT_EQ(wire.completions(true).size(), 4u);
}

// Loss, duplication and reordering in both directions on a mixed workload; go-back-N and the
// duplicate rules must deliver every byte exactly once and every atomic exactly once.
TEST(RoceQp, LossDuplicationAndReorderingAreRecovered) {
  for (unsigned seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    Wire wire;
    QpConfig config = fast_config();
    config.retry_count = 7;
    const auto [qa, qb] = wire.connect(config);
    constexpr std::size_t kBytes = 256 * 1024;
    Buffers buf = make_buffers(wire, kBytes);
    Bytes recv_area(64 * 1024);
    const MemoryRegion recv_mr = wire.b().register_memory(recv_area, kAccessLocalWrite);
    const Bytes data = pattern(kBytes, seed);
    std::copy(data.begin(), data.end(), buf.local.begin());
    std::mt19937 rng(seed);
    wire.fault = [&](const Bytes&, bool) {
      const auto roll = rng() % 100;
      if (roll < 8) return Fate::kDrop;
      if (roll < 13) return Fate::kDuplicate;
      if (roll < 23) return Fate::kDelay;
      return Fate::kDeliver;
    };
    // 8 WRITEs of 8 KiB into the first half, READ them back into the second half, 16 SENDs,
    // and 20 FETCH_ADDs on one counter.
    std::uint64_t id = 0;
    for (std::size_t i = 0; i < 8; ++i) {
      wire.a().post_send(qa, write_wr(id++, buf.local_mr, i * 8192, 8192, buf.remote_mr, i * 8192));
    }
    for (std::size_t i = 0; i < 8; ++i) {
      wire.a().post_send(
          qa, read_wr(id++, buf.local_mr, 128 * 1024 + i * 8192, 8192, buf.remote_mr, i * 8192));
    }
    for (std::size_t i = 0; i < 16; ++i) {
      wire.b().post_recv(
          qb, RecvWr{.wr_id = i, .sg_list = {Sge{recv_mr.addr + i * 4096, 4096, recv_mr.lkey}}});
      wire.a().post_send(
          qa, SendWr{.wr_id = id++,
                     .sg_list = {Sge{buf.local_mr.addr + i * 3000, 3000, buf.local_mr.lkey}}});
    }
    set_u64(buf.remote, 200 * 1024, 0);
    for (std::size_t i = 0; i < 20; ++i) {
      wire.a().post_send(qa, atomic_wr(id++, WrOpcode::kAtomicFetchAdd, buf.local_mr,
                                       250 * 1024 + i * 8, buf.remote_mr, 200 * 1024, i + 1));
    }
    wire.doorbell(qa);
    wire.run();
    EXPECT_TRUE(std::equal(data.begin(), data.begin() + 64 * 1024, buf.remote.begin()));
    EXPECT_TRUE(std::equal(data.begin(), data.begin() + 64 * 1024, buf.local.begin() + 128 * 1024));
    for (std::size_t i = 0; i < 16; ++i) {
      ASSERT_TRUE(std::equal(data.begin() + i * 3000, data.begin() + i * 3000 + 3000,
                             recv_area.begin() + i * 4096))
          << "send " << i;
    }
    EXPECT_EQ(u64_at(buf.remote, 200 * 1024), 20u * 21u / 2u);  // each FETCH_ADD exactly once
    // The old values seen are distinct partial sums: no atomic was executed twice.
    std::vector<std::uint64_t> olds;
    for (std::size_t i = 0; i < 20; ++i) olds.push_back(u64_at(buf.local, 250 * 1024 + i * 8));
    EXPECT_EQ(olds[0], 0u);
    for (std::size_t i = 1; i < 20; ++i) EXPECT_EQ(olds[i], olds[i - 1] + i);
    const auto wcs = wire.completions(true);
    ASSERT_EQ(wcs.size(), id);
    for (std::size_t i = 0; i < wcs.size(); ++i) {
      EXPECT_EQ(wcs[i].wr_id, i);  // completions in posting order
      EXPECT_EQ(wcs[i].status, WcStatus::kSuccess) << to_string(wcs[i].status);
    }
    const auto recvs = wire.completions(false);
    ASSERT_EQ(recvs.size(), 16u);
    for (const auto& wc : recvs) EXPECT_EQ(wc.byte_len, 3000u);
    EXPECT_GT(wire.a().counters().retransmitted_packets, 0u);
    EXPECT_GT(wire.b().counters().duplicate_requests + wire.b().counters().duplicate_reads, 0u);
    EXPECT_GT(wire.b().counters().out_of_sequence, 0u);
  }
}

// Frames from a real exchange with their BTH and extended headers randomised (and the IPv4
// checksum and ICRC recomputed, so they pass the decoder) are thrown at a live responder: it
// must count and survive them, and no byte outside the registered region may change.
TEST(RoceQpFuzz, RandomisedValidFramesNeverEscapeRegisteredMemory) {
  Wire wire;
  const auto [qa, qb] = wire.connect(fast_config());
  Bytes arena(3 * 4096);
  const std::span<std::byte> region(arena.data() + 4096, 4096);  // guard pages either side
  const MemoryRegion mr = wire.b().register_memory(region, kAllRemote);
  Bytes local(4096);
  const MemoryRegion local_mr = wire.a().register_memory(local, kAccessLocalWrite);
  std::vector<Bytes> seeds;
  wire.tap = [&](const Bytes& frame, bool from_a) {
    if (from_a) seeds.push_back(frame);
  };
  wire.a().post_send(qa, write_wr(1, local_mr, 0, 3000, mr, 0));
  wire.a().post_send(qa, read_wr(2, local_mr, 0, 100, mr, 0));
  wire.a().post_send(qa, atomic_wr(3, WrOpcode::kAtomicCompareSwap, local_mr, 0, mr, 8, 0, 1));
  wire.doorbell(qa);
  wire.run();
  ASSERT_GE(seeds.size(), 4u);
  wire.tap = nullptr;
  const Bytes guard_before(arena.begin(), arena.begin() + 4096);
  const Bytes guard_after(arena.begin() + 8192, arena.end());
  std::mt19937 rng(5);
  for (int i = 0; i < 20'000; ++i) {
    Bytes frame = seeds[rng() % seeds.size()];
    const std::size_t ip_total =
        (std::to_integer<std::size_t>(frame[16]) << 8) | std::to_integer<std::size_t>(frame[17]);
    // Randomise opcode, PSN, RETH/AtomicETH fields; keep the QP number half the time.
    frame[42] = static_cast<std::byte>(rng() % 0x15);
    for (std::size_t at : {51u, 52u, 53u}) frame[at] = static_cast<std::byte>(rng());
    if (rng() % 2) {
      for (std::size_t at : {47u, 48u, 49u}) frame[at] = static_cast<std::byte>(rng());
    }
    for (std::size_t at = 54; at < std::min<std::size_t>(82, 14 + ip_total - 4); ++at) {
      if (rng() % 3 == 0) frame[at] = static_cast<std::byte>(rng());
    }
    // Recompute the ICRC so the frame reaches the queue pair.
    const std::uint32_t crc = icrc(std::span<const std::byte>(frame).subspan(14, ip_total - 4));
    for (std::size_t b = 0; b < 4; ++b)
      frame[14 + ip_total - 4 + b] = static_cast<std::byte>(crc >> (8 * b));
    Effects effects;
    wire.b().on_frame(frame, wire.now(), effects);
  }
  EXPECT_EQ(Bytes(arena.begin(), arena.begin() + 4096), guard_before);
  EXPECT_EQ(Bytes(arena.begin() + 8192, arena.end()), guard_after);
  const RoceCounters& c = wire.b().counters();
  // Most went to a QP and were judged there (or were dropped as unknown / invalid).
  EXPECT_GT(c.unknown_qp + c.out_of_sequence + c.dropped_in_error + c.invalid_naks_sent +
                c.access_naks_sent + c.duplicate_requests + c.duplicate_reads,
            0u);
}

}  // namespace
}  // namespace ethx::roce
