// Go-back-N reliability (packet-engine/reliable_links.hpp) through whole endpoints, over a
// simulated wire with a clock of its own that loses, corrupts, duplicates and reorders frames
// on demand, and receivers that can be paused behind a bounded receive ring.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "packet-engine/endpoint.hpp"
#include "packet-engine/engine_config.hpp"
#include "packet-engine/mac_addr.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {
namespace {

using Bytes = std::vector<std::byte>;

constexpr std::size_t kMemoryBytes = 256 * 1024;
constexpr TimeNs kWireLatencyNs = 2'000;
constexpr TimeNs kRetransmitTimeoutNs = 200'000;

struct WireFaults {
  double drop_rate = 0;
  double corrupt_rate = 0;
  double duplicate_rate = 0;
  double reorder_rate = 0;  // the frame is delayed by up to 4 wire latencies
};

// A decision about one frame, from a test that wants a specific frame lost.
using FrameFilter = std::function<bool(GpuId from, GpuId to, const wire::FrameView& frame)>;

class LossyFabric {
 public:
  LossyFabric(std::size_t gpus, const std::function<void(EngineConfig&)>& tweak, WireFaults faults,
              std::uint64_t seed = 7)
      : faults_(faults), rng_(seed) {
    std::vector<MacAddr> macs;
    for (std::size_t i = 0; i < gpus; ++i) {
      macs.push_back(default_mac_for_gpu(static_cast<GpuId>(i)));
    }
    for (std::size_t i = 0; i < gpus; ++i) {
      EngineConfig config;
      config.self = static_cast<GpuId>(i);
      config.self_mac = macs[i];
      config.gpu_macs = macs;
      config.request_timeout_ns = 1'000'000'000;  // reliability, not timeouts, must recover
      config.reliability.enabled = true;
      config.reliability.retransmit_timeout_ns = kRetransmitTimeoutNs;
      config.reliability.retransmit_timeout_max_ns = 4 * kRetransmitTimeoutNs;
      if (tweak) tweak(config);
      memories_.push_back(std::make_unique<Bytes>(kMemoryBytes));
      endpoints_.push_back(std::make_unique<Endpoint>(config, *memories_.back()));
    }
    wake_at_.assign(gpus, std::nullopt);
    completions_.resize(gpus);
    paused_.assign(gpus, false);
    inbox_.resize(gpus);
  }

  Endpoint& gpu(GpuId id) { return *endpoints_[id]; }
  Bytes& memory(GpuId id) { return *memories_[id]; }
  TimeNs now() const { return now_ns_; }
  std::deque<Completion>& completions(GpuId id) { return completions_[id]; }
  void set_filter(FrameFilter filter) { filter_ = std::move(filter); }
  std::uint64_t frames_lost_on_wire() const { return lost_; }
  std::uint64_t ring_overflows() const { return ring_overflows_; }

  // A paused receiver takes nothing off its receive ring; frames beyond `capacity` are lost
  // as a real ring would lose them.
  void pause(GpuId id, std::size_t capacity) {
    paused_[id] = true;
    ring_capacity_ = capacity;
  }
  void resume(GpuId id) { paused_[id] = false; }
  std::size_t ring_depth(GpuId id) const { return inbox_[id].size(); }

  // Lets the endpoint act on whatever the test just asked of it: frames the calls already
  // finished (a full frame leaves at once) go on the wire, then the endpoint polls.
  void kick(GpuId id, Effects& issued) {
    for (wire::Frame& frame : issued.send) put_on_wire(id, std::move(frame));
    issued.clear();
    step(id);
  }

  // Runs the event loop until `done` or `limit_ns` of simulated time; true if done.
  bool run_until(const std::function<bool()>& done, TimeNs limit_ns = 2'000'000'000) {
    const TimeNs end = now_ns_ + limit_ns;
    while (!done()) {
      std::optional<TimeNs> next;
      if (!wire_.empty()) next = wire_.begin()->first.first;
      for (std::size_t g = 0; g < wake_at_.size(); ++g) {
        if (!paused_[g] && !inbox_[g].empty()) next = now_ns_;
        if (wake_at_[g] && (!next || *wake_at_[g] < *next)) next = *wake_at_[g];
      }
      if (!next || *next > end) return done();
      now_ns_ = std::max(now_ns_, *next);
      while (!wire_.empty() && wire_.begin()->first.first <= now_ns_) {
        auto [to, frame] = std::move(wire_.begin()->second);
        wire_.erase(wire_.begin());
        if (inbox_[to].size() >= ring_capacity_) {
          ++ring_overflows_;
          continue;
        }
        inbox_[to].push_back(std::move(frame));
      }
      for (std::size_t g = 0; g < endpoints_.size(); ++g) {
        const auto id = static_cast<GpuId>(g);
        const bool has_input = !paused_[g] && !inbox_[g].empty();
        if (has_input || (wake_at_[g] && *wake_at_[g] <= now_ns_)) step(id);
      }
    }
    return true;
  }

  // Runs every event up to `at_ns`, then lets the clock reach it even if nothing happens.
  void idle_until(TimeNs at_ns) {
    if (at_ns > now_ns_) run_until([] { return false; }, at_ns - now_ns_);
    now_ns_ = std::max(now_ns_, at_ns);
  }

  bool run_until_completions(GpuId id, std::size_t count) {
    return run_until([&] { return completions_[id].size() >= count; });
  }

 private:
  void step(GpuId id) {
    Endpoint& endpoint = *endpoints_[id];
    effects_.clear();
    if (!paused_[id]) {
      while (!inbox_[id].empty()) {
        endpoint.on_frame(inbox_[id].front(), now_ns_, effects_);
        inbox_[id].pop_front();
      }
    }
    endpoint.poll(now_ns_, effects_);
    while (auto completion = endpoint.requester().take_completion()) {
      completions_[id].push_back(std::move(*completion));
    }
    wake_at_[id] = effects_.wake_at;
    for (wire::Frame& frame : effects_.send) put_on_wire(id, std::move(frame));
    effects_.clear();
  }

  void put_on_wire(GpuId from, wire::Frame frame) {
    wire::FrameView view;
    if (wire::decode_frame(frame, view) != wire::DecodeError::kOk) {
      ADD_FAILURE() << "an endpoint sent a frame that does not decode";
      return;
    }
    const GpuId to = view.dst_gpu;
    if (filter_ && !filter_(from, to, view)) {
      ++lost_;
      return;
    }
    std::uniform_real_distribution<double> chance(0.0, 1.0);
    if (chance(rng_) < faults_.drop_rate) {
      ++lost_;
      return;
    }
    if (chance(rng_) < faults_.corrupt_rate) {
      std::uniform_int_distribution<std::size_t> bit(0, frame.size() * 8 - 1);
      const std::size_t flip = bit(rng_);
      frame[flip / 8] ^= static_cast<std::byte>(1u << (flip % 8));
    }
    TimeNs at = now_ns_ + kWireLatencyNs;
    if (chance(rng_) < faults_.reorder_rate) {
      at += std::uniform_int_distribution<TimeNs>(1, 4 * kWireLatencyNs)(rng_);
    }
    if (chance(rng_) < faults_.duplicate_rate) {
      wire_.emplace(std::make_pair(at + 1, order_++), std::make_pair(to, frame));
    }
    wire_.emplace(std::make_pair(at, order_++), std::make_pair(to, std::move(frame)));
  }

  WireFaults faults_;
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<Bytes>> memories_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::vector<std::optional<TimeNs>> wake_at_;
  std::vector<std::deque<Completion>> completions_;
  std::vector<bool> paused_;
  std::vector<std::deque<wire::Frame>> inbox_;
  std::size_t ring_capacity_ = 1'000'000;
  std::map<std::pair<TimeNs, std::uint64_t>, std::pair<GpuId, wire::Frame>> wire_;
  std::uint64_t order_ = 0;
  FrameFilter filter_;
  Effects effects_;
  TimeNs now_ns_ = 0;
  std::uint64_t lost_ = 0;
  std::uint64_t ring_overflows_ = 0;
};

Bytes pattern(std::size_t count, unsigned seed) {
  Bytes out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<std::byte>((i * 31 + seed) & 0xFF);
  return out;
}

std::uint64_t host_u64(const Bytes& memory, std::size_t offset) {
  std::uint64_t value;
  std::memcpy(&value, memory.data() + offset, 8);
  return value;
}

bool is_data_frame(const wire::FrameView& frame) {
  return (frame.flags & wire::kFlagSeq) != 0;
}

TEST(ReliableLinks, LosslessTrafficIsSequencedAndNeedsNoRetransmission) {
  LossyFabric fabric(2, {}, {});
  Effects effects;
  const Bytes data = pattern(8192, 1);
  fabric.gpu(0).requester().write(1, 4096, data, fabric.now(), effects);
  fabric.gpu(0).requester().read(1, 4096, 8192, fabric.now(), effects);
  fabric.kick(0, effects);
  ASSERT_TRUE(fabric.run_until_completions(0, 2));
  for (const Completion& completion : fabric.completions(0)) ASSERT_TRUE(completion.ok());
  EXPECT_EQ(fabric.completions(0)[1].data, data);
  const LinkCounters& sender = fabric.gpu(0).links().counters();
  const LinkCounters& receiver = fabric.gpu(1).links().counters();
  EXPECT_GT(sender.frames_sequenced, 0u);
  EXPECT_EQ(receiver.frames_in_order, sender.frames_sequenced);
  EXPECT_EQ(sender.retransmitted_on_nak + sender.retransmitted_on_timer, 0u);
  EXPECT_EQ(receiver.duplicates_dropped + receiver.gaps_dropped, 0u);
  // Everything is acknowledged in the end: nothing left to resend.
  ASSERT_TRUE(fabric.run_until([&] { return fabric.gpu(0).links().frames_unacked() == 0; }));
}

TEST(ReliableLinks, AGapIsRepairedByANakBeforeTheTimerFires) {
  LossyFabric fabric(2, {}, {});
  int data_frames_seen = 0;
  fabric.set_filter([&](GpuId from, GpuId, const wire::FrameView& frame) {
    if (from != 0 || !is_data_frame(frame)) return true;
    return ++data_frames_seen != 2;  // lose the second data frame from GPU 0, once
  });
  Effects effects;
  const Bytes data = pattern(3 * 1500, 2);
  const TimeNs start = fabric.now();
  // Three writes in separate frames (each fills most of a frame), then a read back.
  for (int i = 0; i < 3; ++i) {
    fabric.gpu(0).requester().write(1, 1500 * i, std::span(data).subspan(1500 * i, 1500),
                                    fabric.now(), effects);
    fabric.kick(0, effects);
  }
  ASSERT_TRUE(fabric.run_until_completions(0, 3));
  for (const Completion& completion : fabric.completions(0)) EXPECT_TRUE(completion.ok());
  EXPECT_EQ(Bytes(fabric.memory(1).begin(), fabric.memory(1).begin() + 4500), data);
  const LinkCounters& sender = fabric.gpu(0).links().counters();
  EXPECT_EQ(fabric.gpu(1).links().counters().naks_sent, 1u);
  EXPECT_EQ(sender.naks_received, 1u);
  EXPECT_GE(sender.retransmitted_on_nak, 1u);
  EXPECT_EQ(sender.retransmit_timeouts, 0u);
  EXPECT_LT(fabric.now() - start, kRetransmitTimeoutNs) << "recovery waited for the timer";
}

TEST(ReliableLinks, ALostLastFrameIsResentWhenTheTimerExpires) {
  LossyFabric fabric(2, {}, {});
  bool dropped = false;
  fabric.set_filter([&](GpuId from, GpuId, const wire::FrameView& frame) {
    if (from != 0 || !is_data_frame(frame) || dropped) return true;
    dropped = true;  // the only frame: no later frame can reveal the gap
    return false;
  });
  Effects effects;
  fabric.gpu(0).requester().atomic(1, 64, AtomicOp::kFetchAdd, 8, 5, 0, fabric.now(), effects);
  fabric.kick(0, effects);
  ASSERT_TRUE(fabric.run_until_completions(0, 1));
  EXPECT_TRUE(fabric.completions(0)[0].ok());
  EXPECT_EQ(host_u64(fabric.memory(1), 64), 5u);
  EXPECT_EQ(fabric.gpu(0).links().counters().retransmit_timeouts, 1u);
  EXPECT_GE(fabric.now(), kRetransmitTimeoutNs);
}

TEST(ReliableLinks, ATimerThatFiresOnASlowReceiverResendsOnlyAProbe) {
  LossyFabric fabric(2, {}, {});
  fabric.pause(1, 1000);  // nothing is lost: GPU 1 just does not read for a while
  Effects effects;
  const Bytes data = pattern(1024, 5);
  for (int i = 0; i < 20; ++i) {
    fabric.gpu(0).requester().write_posted(1, 1024 * i, data, fabric.now(), effects);
    fabric.kick(0, effects);
  }
  fabric.run_until([] { return false; }, 3 * kRetransmitTimeoutNs);
  const LinkCounters& sender = fabric.gpu(0).links().counters();
  ASSERT_GE(sender.retransmit_timeouts, 1u);
  fabric.resume(1);
  ASSERT_TRUE(fabric.run_until([&] { return fabric.gpu(0).links().frames_unacked() == 0; }));
  // One probe per expiry, not the whole window each time.
  EXPECT_EQ(sender.retransmitted_on_timer, sender.retransmit_timeouts);
  EXPECT_EQ(fabric.gpu(1).links().counters().duplicates_dropped, sender.retransmit_timeouts);
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(std::equal(data.begin(), data.end(), fabric.memory(1).begin() + 1024 * i)) << i;
  }
}

TEST(ReliableLinks, EachPeersTimerFiresOnItsOwnDeadlineAmongMany) {
  // GPU 0's first frames to GPUs 2 and 3 are lost, its frame to GPU 1 is not: two timers fire
  // (each once), GPU 1's, cleared by its ACK, never does.
  LossyFabric fabric(4, {}, {});
  std::map<GpuId, int> lost;
  fabric.set_filter([&](GpuId from, GpuId to, const wire::FrameView& frame) {
    if (from != 0 || to == 1 || !is_data_frame(frame)) return true;
    return ++lost[to] > 1;
  });
  Effects effects;
  for (GpuId peer : {GpuId{1}, GpuId{2}, GpuId{3}}) {
    fabric.gpu(0).requester().atomic(peer, 64, AtomicOp::kFetchAdd, 8, peer, 0, fabric.now(),
                                     effects);
    fabric.kick(0, effects);
  }
  ASSERT_TRUE(fabric.run_until_completions(0, 3));
  for (const Completion& completion : fabric.completions(0)) EXPECT_TRUE(completion.ok());
  for (GpuId peer : {GpuId{1}, GpuId{2}, GpuId{3}})
    EXPECT_EQ(host_u64(fabric.memory(peer), 64), peer);
  EXPECT_EQ(fabric.gpu(0).links().counters().retransmit_timeouts, 2u);
  EXPECT_GE(fabric.now(), kRetransmitTimeoutNs);
  EXPECT_LT(fabric.now(), 2 * kRetransmitTimeoutNs) << "a timer fired late";
}

TEST(ReliableLinks, ATimerMovedLaterByAcksDoesNotFireAtItsOldTime) {
  // A write every quarter of the timeout for three timeouts: each ACK moves the timer later,
  // so it never expires although the first deadline passed long ago.
  LossyFabric fabric(2, {}, {});
  Effects effects;
  const Bytes data = pattern(64, 9);
  for (TimeNs i = 0; i < 12; ++i) {
    fabric.gpu(0).requester().write_posted(1, 64 * i, data, fabric.now(), effects);
    fabric.kick(0, effects);
    fabric.idle_until((i + 1) * kRetransmitTimeoutNs / 4);
  }
  ASSERT_TRUE(fabric.run_until([&] { return fabric.gpu(0).links().frames_unacked() == 0; }));
  EXPECT_GE(fabric.now(), 3 * kRetransmitTimeoutNs);
  EXPECT_EQ(fabric.gpu(0).links().counters().retransmit_timeouts, 0u);
}

TEST(ReliableLinks, DuplicatedFramesNeverPerformAnAtomicTwice) {
  WireFaults faults;
  faults.duplicate_rate = 1.0;  // every frame arrives twice
  LossyFabric fabric(2, {}, faults);
  Effects effects;
  constexpr int kAdds = 200;
  for (int i = 0; i < kAdds; ++i) {
    fabric.gpu(0).requester().atomic(1, 128, AtomicOp::kFetchAdd, 8, 3, 0, fabric.now(), effects);
    if (i % 16 == 15) fabric.kick(0, effects);
  }
  fabric.kick(0, effects);
  ASSERT_TRUE(fabric.run_until_completions(0, kAdds));
  std::vector<std::uint64_t> old_values;
  for (const Completion& completion : fabric.completions(0)) {
    ASSERT_TRUE(completion.ok());
    old_values.push_back(completion.old_value);
  }
  EXPECT_EQ(host_u64(fabric.memory(1), 128), 3u * kAdds);
  std::sort(old_values.begin(), old_values.end());
  for (int i = 0; i < kAdds; ++i) EXPECT_EQ(old_values[i], 3u * i) << "each add seen once";
  EXPECT_GT(fabric.gpu(1).links().counters().duplicates_dropped, 0u);
  EXPECT_EQ(fabric.gpu(1).completer().counters().atomics, static_cast<std::uint64_t>(kAdds));
}

// Every GPU writes its own slice of every other GPU, adds to a shared counter on each, reads
// everything back and checks it, over a wire that loses, corrupts, duplicates and reorders.
TEST(ReliableLinks, RandomLossCorruptionDuplicationAndReorderingLoseNothing) {
  WireFaults faults;
  faults.drop_rate = 0.05;
  faults.corrupt_rate = 0.02;
  faults.duplicate_rate = 0.02;
  faults.reorder_rate = 0.05;
  constexpr std::size_t kGpus = 4;
  constexpr std::size_t kSliceBytes = 4096;
  constexpr int kRounds = 6;
  LossyFabric fabric(kGpus, {}, faults, 1234);
  Effects effects;
  std::vector<std::size_t> expected_completions(kGpus, 0);
  for (int round = 0; round < kRounds; ++round) {
    for (GpuId src = 0; src < kGpus; ++src) {
      for (GpuId dst = 0; dst < kGpus; ++dst) {
        if (dst == src) continue;
        const Bytes data = pattern(kSliceBytes, src * 16 + dst + round * 64);
        // Posted writes then a flush: the flush completes only after every write landed.
        fabric.gpu(src).requester().write_posted(dst, src * kSliceBytes, data, fabric.now(),
                                                 effects);
        fabric.gpu(src).requester().atomic(dst, 64 * 1024, AtomicOp::kFetchAdd, 8, 1, 0,
                                           fabric.now(), effects);
        fabric.gpu(src).requester().flush(dst, fabric.now(), effects);
        expected_completions[src] += 2;
      }
      fabric.kick(src, effects);
    }
    ASSERT_TRUE(fabric.run_until([&] {
      for (GpuId g = 0; g < kGpus; ++g) {
        if (fabric.completions(g).size() < expected_completions[g]) return false;
      }
      return true;
    })) << "round "
        << round;
    for (GpuId dst = 0; dst < kGpus; ++dst) {
      for (GpuId src = 0; src < kGpus; ++src) {
        if (src == dst) continue;
        const Bytes expected = pattern(kSliceBytes, src * 16 + dst + round * 64);
        const Bytes& memory = fabric.memory(dst);
        ASSERT_TRUE(std::equal(expected.begin(), expected.end(),
                               memory.begin() + static_cast<std::ptrdiff_t>(src * kSliceBytes)))
            << "round " << round << " GPU " << src << " -> " << dst;
      }
      EXPECT_EQ(host_u64(fabric.memory(dst), 64 * 1024),
                static_cast<std::uint64_t>((kGpus - 1) * (round + 1)));
    }
  }
  for (GpuId g = 0; g < kGpus; ++g) {
    for (const Completion& completion : fabric.completions(g)) {
      ASSERT_TRUE(completion.ok()) << wire::to_string(completion.status);
    }
  }
  std::uint64_t repaired = 0, malformed = 0;
  for (GpuId g = 0; g < kGpus; ++g) {
    const LinkCounters& links = fabric.gpu(g).links().counters();
    repaired += links.retransmitted_on_nak + links.retransmitted_on_timer;
    malformed += fabric.gpu(g).counters().malformed;
  }
  EXPECT_GT(fabric.frames_lost_on_wire(), 0u);
  EXPECT_GT(repaired, 0u);
  EXPECT_GT(malformed, 0u) << "corrupted frames are caught by the CRC";
}

// A receiver that stops reading: with credits its senders stop at the window and nothing
// overflows its ring; without reliability the same traffic overflows it.
std::pair<std::uint64_t, std::uint64_t> stream_into_paused_receiver(bool reliable) {
  constexpr std::size_t kRingFrames = 48;
  LossyFabric fabric(3,
                     [&](EngineConfig& config) {
                       config.reliability.enabled = reliable;
                       config.reliability.window_frames = 16;
                     },
                     {});
  fabric.pause(2, kRingFrames);
  Effects effects;
  const Bytes data = pattern(1024, 9);
  for (GpuId src : {GpuId{0}, GpuId{1}}) {
    for (int i = 0; i < 100; ++i) {
      fabric.gpu(src).requester().write_posted(2, 1024 * i, data, fabric.now(), effects);
      fabric.kick(src, effects);  // one frame each: no write combining across them
    }
  }
  fabric.run_until([&] { return false; }, 5 * kWireLatencyNs);
  const std::uint64_t held = fabric.gpu(0).links().counters().frames_held;
  EXPECT_LE(fabric.ring_depth(2), kRingFrames);
  fabric.resume(2);
  if (reliable) {
    EXPECT_GT(held, 0u) << "the window should have closed";
    EXPECT_LE(fabric.gpu(0).links().frames_unacked(), 16u);
    EXPECT_TRUE(fabric.run_until([&] {
      return fabric.gpu(0).links().frames_waiting() + fabric.gpu(1).links().frames_waiting() +
                 fabric.gpu(0).links().frames_unacked() + fabric.gpu(1).links().frames_unacked() ==
             0;
    }));
    const Bytes& memory = fabric.memory(2);
    for (int i = 0; i < 100; ++i) {
      EXPECT_TRUE(std::equal(data.begin(), data.end(), memory.begin() + 1024 * i)) << i;
    }
  } else {
    fabric.run_until([&] { return false; }, 10 * kWireLatencyNs);
  }
  return {fabric.ring_overflows(), held};
}

TEST(ReliableLinks, CreditsTurnASlowReceiverIntoBackPressureInsteadOfDrops) {
  const auto [overflows_reliable, held] = stream_into_paused_receiver(true);
  EXPECT_EQ(overflows_reliable, 0u);
  EXPECT_GT(held, 0u);
  const auto [overflows_unreliable, held_unreliable] = stream_into_paused_receiver(false);
  EXPECT_GT(overflows_unreliable, 0u) << "the contrast case should overflow the ring";
  EXPECT_EQ(held_unreliable, 0u);
}

TEST(ReliableLinks, EachGpuChoosesForItsOwnSendingLink) {
  // GPU 0 sequences, GPU 1 does not; both directions work and only GPU 0's frames are acked.
  LossyFabric fabric(2, [](EngineConfig& config) { config.reliability.enabled = config.self == 0; },
                     {});
  Effects effects;
  const Bytes data = pattern(2000, 3);
  fabric.gpu(0).requester().write(1, 0, data, fabric.now(), effects);
  fabric.gpu(1).requester().write(0, 0, data, fabric.now(), effects);
  fabric.kick(0, effects);
  fabric.kick(1, effects);
  ASSERT_TRUE(fabric.run_until([&] {
    return fabric.completions(0).size() == 1 && fabric.completions(1).size() == 1 &&
           fabric.gpu(0).links().frames_unacked() == 0;
  }));
  EXPECT_TRUE(fabric.completions(0)[0].ok());
  EXPECT_TRUE(fabric.completions(1)[0].ok());
  EXPECT_GT(fabric.gpu(0).links().counters().frames_sequenced, 0u);
  EXPECT_EQ(fabric.gpu(1).links().counters().frames_sequenced, 0u);
  EXPECT_GT(fabric.gpu(1).links().counters().frames_in_order, 0u);
  EXPECT_EQ(fabric.gpu(0).links().counters().frames_in_order, 0u);
}

wire::Frame control_frame(GpuId from, GpuId to, std::uint8_t flags, std::uint32_t seq,
                          std::uint32_t ack, bool with_txn) {
  wire::FrameBuilder builder(wire::kDefaultFrameBytesMax);
  builder.start(
      wire::FrameAddress{default_mac_for_gpu(to), default_mac_for_gpu(from), from, to, 0});
  if (with_txn) builder.append(wire::TxnFields{wire::Opcode::kFlushReq, {}, 1, 0, 0}, 0);
  return builder.finish(flags, seq, ack, 8);
}

TEST(ReliableLinks, ForgedAcksAndUnknownPeersChangeNothing) {
  LossyFabric fabric(2, {}, {});
  Effects effects;
  fabric.gpu(0).requester().write(1, 0, pattern(64, 4), fabric.now(), effects);
  fabric.gpu(0).poll(fabric.now(), effects);  // sent, and never delivered: we hold it here
  ASSERT_EQ(fabric.gpu(0).links().frames_unacked(), 1u);
  // An ACK for a frame GPU 0 never sent must not release the one it did send.
  fabric.gpu(0).on_frame(control_frame(1, 0, wire::kFlagAck, 0, 999, false), fabric.now(), effects);
  EXPECT_EQ(fabric.gpu(0).links().counters().bad_acks, 1u);
  EXPECT_EQ(fabric.gpu(0).links().frames_unacked(), 1u);
  // A sequenced frame claiming a source outside the fabric is dropped and counted.
  wire::Frame stranger = control_frame(9, 0, wire::kFlagSeq, 1, 0, true);
  fabric.gpu(0).on_frame(stranger, fabric.now(), effects);
  EXPECT_EQ(fabric.gpu(0).links().counters().unknown_peer, 1u);
  EXPECT_EQ(fabric.gpu(0).completer().counters().flushes, 0u);
}

}  // namespace
}  // namespace ethx
