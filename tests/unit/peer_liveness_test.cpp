// Peer liveness in the requester (a dead GPU fails fast with kUnreachable, a probe or any frame
// brings it back) and incarnations on the links (a restarted GPU is not taken for duplicates).
// Endpoints are joined by a FIFO wire the test drives with its own clock; a "dead" GPU's
// frames vanish, and a restarted one is a fresh Endpoint with a new incarnation.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "fabric/node/peer_health_publisher.hpp"
#include "packet-engine/effects.hpp"
#include "packet-engine/endpoint.hpp"
#include "packet-engine/engine_config.hpp"
#include "packet-engine/mac_addr.hpp"
#include "packet-engine/requester.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {
namespace {

using Bytes = std::vector<std::byte>;
using wire::Status;

constexpr std::size_t kMemoryBytes = 4096;
constexpr TimeNs kTimeoutNs = 1'000'000;
constexpr TimeNs kProbeIntervalNs = 50'000'000;
constexpr std::uint32_t kDownAfter = 3;

class Net {
 public:
  explicit Net(std::size_t gpus, bool reliable = false) : reliable_(reliable) {
    for (std::size_t i = 0; i < gpus; ++i)
      macs_.push_back(default_mac_for_gpu(static_cast<GpuId>(i)));
    for (std::size_t i = 0; i < gpus; ++i) {
      memories_.push_back(std::make_unique<Bytes>(kMemoryBytes));
      endpoints_.emplace_back();
      start(static_cast<GpuId>(i), 100 + static_cast<std::uint32_t>(i));
    }
    wake_at_.resize(gpus);
  }

  // (Re)starts `gpu`'s engine from scratch, as a new process would.
  void start(GpuId gpu, std::uint32_t incarnation) {
    EngineConfig config;
    config.self = gpu;
    config.self_mac = macs_[gpu];
    config.gpu_macs = macs_;
    config.request_timeout_ns = kTimeoutNs;
    config.reliability.enabled = reliable_;
    config.liveness.down_after_timeouts = kDownAfter;
    config.liveness.timeout_window_ns = 100 * kTimeoutNs;
    config.liveness.probe_interval_ns = kProbeIntervalNs;
    config.incarnation = incarnation;
    endpoints_[gpu] = std::make_unique<Endpoint>(config, *memories_[gpu]);
    dead_.erase(gpu);
  }
  void kill(GpuId gpu) { dead_.insert(gpu); }

  Endpoint& endpoint(GpuId gpu) { return *endpoints_[gpu]; }
  Requester& requester(GpuId gpu) { return endpoint(gpu).requester(); }
  TimeNs now() const { return now_; }
  std::optional<TimeNs> wake_at(GpuId gpu) const { return wake_at_[gpu]; }
  std::size_t frames_to(GpuId gpu) const {
    const auto found = sent_to_.find(gpu);
    return found == sent_to_.end() ? 0 : found->second;
  }

  // Issues one operation through `call` and puts what it sends on the wire.
  template <class Call>
  OpId issue(GpuId from, Call&& call) {
    Effects effects;
    const OpId id = call(requester(from), now_, effects);
    collect(effects);
    return id;
  }
  OpId read(GpuId from, GpuId dst) {
    return issue(
        from, [dst](Requester& r, TimeNs now, Effects& e) { return r.read(dst, 64, 8, now, e); });
  }

  // Polls every live GPU at `when` and delivers until the wire is quiet.
  void advance_to(TimeNs when) {
    now_ = when;
    for (std::size_t g = 0; g < endpoints_.size(); ++g) {
      if (dead_.count(static_cast<GpuId>(g)) != 0) continue;
      Effects effects;
      endpoint(static_cast<GpuId>(g)).poll(now_, effects);
      wake_at_[g] = effects.wake_at;
      collect(effects);
    }
    deliver_all();
  }

  std::optional<Completion> completion(GpuId from, OpId id) {
    while (auto next = requester(from).take_completion()) done_[from].emplace(next->id, *next);
    auto found = done_[from].find(id);
    if (found == done_[from].end()) return std::nullopt;
    return found->second;
  }

  // Reads from `from` to `dst` until `count` of them have timed out, one at a time.
  void time_out_reads(GpuId from, GpuId dst, std::uint32_t count) {
    for (std::uint32_t i = 0; i < count; ++i) {
      const OpId id = read(from, dst);
      advance_to(now_ + kTimeoutNs + 1);
      const auto done = completion(from, id);
      ASSERT_TRUE(done.has_value());
      ASSERT_EQ(done->status, Status::kTimeout);
    }
  }

 private:
  void collect(Effects& effects) {
    for (wire::Frame& frame : effects.send) {
      wire::FrameView view;
      ASSERT_EQ(wire::decode_frame(frame, view), wire::DecodeError::kOk);
      ++sent_to_[view.dst_gpu];
      wire_.emplace_back(view.dst_gpu, std::move(frame));
    }
    effects.clear();
  }
  void deliver_all() {
    while (!wire_.empty()) {
      auto [to, frame] = std::move(wire_.front());
      wire_.pop_front();
      if (dead_.count(to) != 0) continue;
      Effects effects;
      endpoint(to).on_frame(frame, now_, effects);
      endpoint(to).poll(now_, effects);
      wake_at_[to] = effects.wake_at;
      collect(effects);
    }
  }

  bool reliable_;
  std::vector<MacAddr> macs_;
  std::vector<std::unique_ptr<Bytes>> memories_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::vector<std::optional<TimeNs>> wake_at_;
  std::set<GpuId> dead_;
  std::deque<std::pair<GpuId, wire::Frame>> wire_;
  std::map<GpuId, std::size_t> sent_to_;
  std::map<GpuId, std::map<OpId, Completion>> done_;
  TimeNs now_ = 1'000;
};

TEST(PeerLiveness, KConsecutiveTimeoutsMarkAPeerDown) {
  Net net(3);
  net.kill(1);
  net.time_out_reads(0, 1, kDownAfter - 1);
  EXPECT_FALSE(net.requester(0).peer_down(1));
  net.time_out_reads(0, 1, 1);
  EXPECT_TRUE(net.requester(0).peer_down(1));
  EXPECT_EQ(net.requester(0).down_peers(), std::vector<GpuId>{1});
  EXPECT_EQ(net.requester(0).counters().peers_marked_down, 1u);
  EXPECT_FALSE(net.requester(0).peer_down(2));
  EXPECT_FALSE(net.requester(2).peer_down(1));  // only the GPU that timed out knows
}

TEST(PeerLiveness, OpsToADownPeerCompleteAtOnceWithUnreachable) {
  Net net(3);
  net.kill(1);
  net.time_out_reads(0, 1, kDownAfter);
  ASSERT_TRUE(net.requester(0).peer_down(1));
  const std::size_t frames_before = net.frames_to(1);
  const Bytes data(8, std::byte{0x5A});
  for (int i = 0; i < 1000; ++i) {
    Effects effects;
    Requester& requester = net.requester(0);
    OpId id = 0;
    switch (i % 4) {
      case 0:
        id = requester.read(1, 64, 8, net.now(), effects);
        break;
      case 1:
        id = requester.write(1, 64, data, net.now(), effects);
        break;
      case 2:
        id = requester.atomic(1, 64, AtomicOp::kFetchAdd, 8, 1, 0, net.now(), effects);
        break;
      default:
        id = requester.flush(1, net.now(), effects);
        break;
    }
    ASSERT_TRUE(effects.send.empty());
    const auto done = net.completion(0, id);
    ASSERT_TRUE(done.has_value()) << i;
    EXPECT_EQ(done->status, Status::kUnreachable);
    EXPECT_EQ(done->completed_ns, done->issued_ns);
  }
  Effects effects;
  EXPECT_FALSE(net.requester(0).write_posted(1, 64, data, net.now(), effects));
  EXPECT_TRUE(effects.send.empty());
  EXPECT_EQ(net.frames_to(1), frames_before);
  EXPECT_EQ(net.requester(0).counters().ops_fast_failed, 1000u);
  EXPECT_EQ(net.requester(0).counters().posted_writes_dropped, 1u);

  // GPU 2 is served as before.
  const OpId live = net.read(0, 2);
  net.advance_to(net.now() + 1);
  const auto done = net.completion(0, live);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->status, Status::kOk);
}

TEST(PeerLiveness, AnyFrameFromThePeerBringsItBackUp) {
  Net net(2);
  net.kill(1);
  const std::uint64_t transitions_before = net.requester(0).liveness_transitions();
  net.time_out_reads(0, 1, kDownAfter);
  ASSERT_TRUE(net.requester(0).peer_down(1));
  // The one number a runtime polls changes with each transition (sim_fabric.cpp).
  EXPECT_EQ(net.requester(0).liveness_transitions(), transitions_before + 1);
  net.start(1, 999);  // a new process for GPU 1, which speaks first
  const OpId from_peer = net.read(1, 0);
  net.advance_to(net.now() + 1);
  ASSERT_TRUE(net.completion(1, from_peer).has_value());
  EXPECT_FALSE(net.requester(0).peer_down(1));
  EXPECT_TRUE(net.requester(0).down_peers().empty());
  EXPECT_EQ(net.requester(0).counters().peers_marked_up, 1u);
  EXPECT_EQ(net.requester(0).liveness_transitions(), transitions_before + 2);
  const OpId id = net.read(0, 1);
  net.advance_to(net.now() + 1);
  const auto done = net.completion(0, id);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->status, Status::kOk);
}

TEST(PeerLiveness, ADownPeerIsProbedEveryIntervalAndTheAnswerBringsItUp) {
  Net net(2);
  net.kill(1);
  net.time_out_reads(0, 1, kDownAfter);
  const TimeNs down_at = net.now();
  const std::size_t frames_before = net.frames_to(1);
  net.advance_to(down_at + kProbeIntervalNs - 1);
  EXPECT_EQ(net.frames_to(1), frames_before);  // too early
  ASSERT_TRUE(net.wake_at(0).has_value());
  EXPECT_EQ(*net.wake_at(0), down_at + kProbeIntervalNs);
  net.advance_to(down_at + kProbeIntervalNs);
  EXPECT_EQ(net.frames_to(1), frames_before + 1);  // one probe, lost: GPU 1 is still dead
  EXPECT_EQ(net.requester(0).counters().probes_sent, 1u);
  EXPECT_TRUE(net.requester(0).peer_down(1));

  net.start(1, 555);  // back, but silent: only the next probe can tell
  net.advance_to(down_at + 2 * kProbeIntervalNs - 1);
  EXPECT_TRUE(net.requester(0).peer_down(1));
  net.advance_to(down_at + 2 * kProbeIntervalNs);
  EXPECT_FALSE(net.requester(0).peer_down(1));
  EXPECT_EQ(net.requester(0).counters().probes_sent, 2u);
  EXPECT_EQ(net.requester(0).counters().probes_answered, 1u);
  EXPECT_EQ(net.requester(0).counters().stale_responses, 0u);
  // Up again: no more probes.
  const std::size_t frames_up = net.frames_to(1);
  net.advance_to(down_at + 5 * kProbeIntervalNs);
  EXPECT_EQ(net.frames_to(1), frames_up);
}

TEST(PeerLiveness, TimeoutsSeparatedByAnAnswerOrOutsideTheWindowDoNotAddUp) {
  Net net(2);
  net.kill(1);
  net.time_out_reads(0, 1, kDownAfter - 1);
  net.start(1, 100 + 1);  // the same incarnation: it was only unreachable for a while
  const OpId answered = net.read(0, 1);
  net.advance_to(net.now() + 1);
  ASSERT_EQ(net.completion(0, answered)->status, Status::kOk);
  net.kill(1);
  net.time_out_reads(0, 1, kDownAfter - 1);
  EXPECT_FALSE(net.requester(0).peer_down(1));
  // Past the window (100 request timeouts) the run starts over.
  net.advance_to(net.now() + 200 * kTimeoutNs);
  net.time_out_reads(0, 1, kDownAfter - 1);
  EXPECT_FALSE(net.requester(0).peer_down(1));
  EXPECT_EQ(net.requester(0).counters().peers_marked_down, 0u);
}

// Both GPUs have sent each other sequenced frames, so each expects sequence numbers far
// past 1 when GPU 1 restarts and numbers its frames from 1 again.
void exchange_traffic(Net& net) {
  for (int i = 0; i < 20; ++i) {
    const OpId a = net.read(0, 1);
    const OpId b = net.read(1, 0);
    net.advance_to(net.now() + 1);
    ASSERT_EQ(net.completion(0, a)->status, Status::kOk);
    ASSERT_EQ(net.completion(1, b)->status, Status::kOk);
  }
}

// What `ethx status` reads: the board follows the requester's down set (across a bitmap word:
// GPU 64) and counters, and a peer back up clears its bit.
TEST(PeerHealthBoard, ThePublisherMirrorsTheRequestersDownPeers) {
  Net net(66);
  PeerHealthBoard board;
  PeerHealthPublisher publisher(board);
  publisher.publish(net.requester(0));
  EXPECT_TRUE(down_peers_of(board).empty());
  for (const GpuId dead : {GpuId{1}, GpuId{64}}) {
    net.kill(dead);
    net.time_out_reads(0, dead, kDownAfter);
  }
  Effects effects;
  net.requester(0).read(64, 0, 8, net.now(), effects);  // fails at once
  publisher.publish(net.requester(0));
  EXPECT_EQ(down_peers_of(board), (std::vector<GpuId>{1, 64}));
  EXPECT_EQ(board.peers_marked_down.load(), 2u);
  EXPECT_EQ(board.ops_fast_failed.load(), 1u);

  net.start(64, 777);
  const OpId from_peer = net.read(64, 0);  // any frame from GPU 64 brings it back up
  net.advance_to(net.now() + 1);
  ASSERT_TRUE(net.completion(64, from_peer).has_value());
  publisher.publish(net.requester(0));
  EXPECT_EQ(down_peers_of(board), std::vector<GpuId>{1});
  EXPECT_EQ(board.peers_marked_up.load(), 1u);
}

TEST(PeerIncarnation, ARestartedPeersFirstFramesAreDelivered) {
  Net net(2, /*reliable=*/true);
  exchange_traffic(net);
  net.kill(1);
  net.start(1, 4242);
  const OpId first = net.read(1, 0);
  net.advance_to(net.now() + 1);
  const auto done = net.completion(1, first);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->status, Status::kOk);
  EXPECT_EQ(net.endpoint(0).links().counters().peer_restarts, 1u);
  EXPECT_EQ(net.endpoint(0).links().counters().duplicates_dropped, 0u);
  // The other direction starts over too.
  const OpId back = net.read(0, 1);
  net.advance_to(net.now() + 1);
  ASSERT_TRUE(net.completion(0, back).has_value());
  EXPECT_EQ(net.completion(0, back)->status, Status::kOk);
  EXPECT_EQ(net.endpoint(1).links().counters().gaps_dropped, 0u);
}

TEST(PeerIncarnation, WhenTheSurvivorSpeaksFirstTheRestartedPeersNakResetsThePair) {
  Net net(2, /*reliable=*/true);
  exchange_traffic(net);
  net.kill(1);
  net.start(1, 4242);
  // GPU 0's request carries a sequence number the new GPU 1 never saw: it is dropped as a gap,
  // and the NAK, carrying the new incarnation, resets GPU 0's side of the pair.
  const OpId lost = net.read(0, 1);
  net.advance_to(net.now() + 1);
  EXPECT_EQ(net.endpoint(0).links().counters().peer_restarts, 1u);
  net.advance_to(net.now() + kTimeoutNs + 1);
  ASSERT_TRUE(net.completion(0, lost).has_value());
  EXPECT_EQ(net.completion(0, lost)->status, Status::kTimeout);
  const OpId next = net.read(0, 1);
  net.advance_to(net.now() + 1);
  ASSERT_TRUE(net.completion(0, next).has_value());
  EXPECT_EQ(net.completion(0, next)->status, Status::kOk);
}

TEST(PeerIncarnation, TheFrameHeaderCarriesTheSendersIncarnation) {
  Net net(2);
  wire::FrameView view;
  Effects effects;
  net.requester(0).read(1, 0, 8, net.now(), effects);
  net.endpoint(0).poll(net.now(), effects);
  ASSERT_EQ(effects.send.size(), 1u);
  ASSERT_EQ(wire::decode_frame(effects.send[0], view), wire::DecodeError::kOk);
  EXPECT_EQ(view.incarnation, 100u);
}

}  // namespace
}  // namespace ethx
