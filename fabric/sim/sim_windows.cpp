// SimFabric's two-partition run: the GPUs' events and the switches' events in windows of
// modelled time (sim_window_plan.hpp), on one thread or two.
//
// Each window, each partition first takes the frames the other sent it in the window before
// (in the order they were sent), then runs its own events up to the window's end. Both
// partitions do exactly this whatever the thread count, and the plan is worked out from what
// both reported, so one thread and two give the same report. With two, the switches'
// partition runs on a second thread, and the two meet between windows (sim_window_meeting.hpp),
// where the last to arrive plans the next window.
#include <sched.h>

#include <atomic>
#include <exception>
#include <thread>

#include "fabric/sim/sim_fabric.hpp"
#include "fabric/sim/sim_window_meeting.hpp"
#include "fabric/sim/sim_window_plan.hpp"

namespace ethx::sim {
namespace {

// Cores further apart than this (a one-line round trip) run the windows on one thread: on
// this machine near is 50-63 ns, far 315-356 ns, and far made two threads slower than one.
constexpr double kFarCoresRoundTripNs = 150.0;

WindowSummary summarize_queue(const SimPartition& part) {
  WindowSummary summary;
  summary.next_ps = part.queue.empty() ? kNoEventPs : part.queue.top().at;
  const auto& sent = part.outbox[part.window & 1];
  summary.sent_next_ps = part.outbox_next_ps;
  summary.queued = part.queue.size();
  summary.sent = sent.size();
  summary.timers = part.timers_pending;
  return summary;
}

// A new thread often starts on its creator's CPU, and the scheduler moves it only some
// milliseconds later: the distance would then be measured between a CPU and itself. So the
// second thread answers from any other CPU it may run on, then gets its whole set back, so
// that the scheduler stays free to place both threads.
void answer_from_another_cpu(CoreDistance& distance, int first_cpu) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  bool moved = false;
  if (first_cpu >= 0 && ::sched_getaffinity(0, sizeof allowed, &allowed) == 0 &&
      CPU_COUNT(&allowed) >= 2) {
    cpu_set_t others = allowed;
    CPU_CLR(first_cpu, &others);
    moved = ::sched_setaffinity(0, sizeof others, &others) == 0;
  }
  distance.answer();
  if (moved) ::sched_setaffinity(0, sizeof allowed, &allowed);
}

}  // namespace

WindowSummary SimFabric::summarize(std::size_t side) const {
  const SimPartition& part = partitions_[side];
  WindowSummary summary = summarize_queue(part);
  if (independent_gpus_) {
    summary.gpus_left = part.tally.gpus - part.tally.gpus_done;
  } else if (side == 0) {  // every GPU runs here, and nothing else calls the workload
    summary.gpus_left = workload_->done() ? 0 : 1;
  }
  summary.down = part.tally.peers_down + (side == 1 ? links_down_ : 0);
  return summary;
}

std::size_t SimFabric::gpus_beside_switches(TopologyKind kind) const {
  // Balance: with a part g of the GPUs beside the switches, each thread should have half the
  // work. A frame costs a GPU more the more peers it has (its per-peer state misses the caches),
  // so g falls with the GPU count. Measured on the all-to-all on one switch, as the g at which
  // neither thread waits for the other much (docs/simulator.md, "Round 9"): 10/32 at 32 GPUs,
  // 8/32 at 256, 6/32 to 8/32 at 1024. On leaf-spine a frame crosses up to three switches and
  // the switches' partition is the busier one already.
  if (kind != TopologyKind::kSingle) return 0;
  const std::size_t gpus = config_.gpu_count;
  const std::size_t per_32 = gpus <= 64 ? 10 : gpus <= 512 ? 8 : 6;
  return gpus * per_32 / 32;
}

TimePs SimFabric::min_crossing_ps(NodeKind from) const {
  TimePs min_ps = kNoEventPs;
  for (const Link& link : links_) {
    if (link.from.kind != from || link.to.kind == from) continue;
    // serialization_ps(0) is the shortest frame's: every frame is padded to 60 bytes at least.
    min_ps = std::min(min_ps, serialization_ps(0, link.rate_gbps) + link.delay_ps);
  }
  return min_ps;
}

void SimFabric::take_crossing(SimPartition& into, std::vector<CrossingFrame>& inbox) {
  for (CrossingFrame& crossing : inbox) {
    const std::uint32_t slot = into.take_slot();
    into.slots[slot].swap(crossing.frame);
    if (links_[crossing.link].to.kind == NodeKind::kSwitch) {
      if (slot >= into.ingress_reads.size()) into.ingress_reads.resize(into.slots.size());
      into.ingress_reads[slot] = crossing.read;
    }
    arrive(into, crossing.link, slot, crossing.at_ps);
  }
  inbox.clear();
}

void SimFabric::run_window(SimPartition& part, TimePs end_ps) {
  part.window_end_ps = end_ps;
  part.outbox_next_ps = kNoEventPs;
  EventQueue& queue = part.queue;
  while (!queue.empty() && queue.top().at < end_ps) {
    const Event event = queue.pop();
    if (!queue.empty()) prefetch(part, queue.top());
    part.now = event.at;
    ++part.events;
    dispatch(part, event);
  }
}

void SimFabric::run_windows(unsigned threads) {
  const Lookahead lookahead{min_crossing_ps(NodeKind::kGpu), min_crossing_ps(NodeKind::kSwitch)};
  std::array<WindowSummary, 2> summaries;  // [0] the GPUs', [1] the switches'
  const auto summarize_side = [&](std::size_t side) { summaries[side] = summarize(side); };
  summarize_side(0);
  summarize_side(1);
  WindowPlan plan = plan_window(summaries[0], summaries[1], lookahead);
  // One window of one side: the other's frames from the window before, then its own events.
  const auto run_side = [&](std::size_t side) {
    SimPartition& part = partitions_[side];
    SimPartition& other = partitions_[1 - side];
    take_crossing(part, other.outbox[(part.window + 1) & 1]);
    run_window(part, plan.end_ps);
  };
  const auto finish_side = [&](std::size_t side, bool failed) {
    summarize_side(side);
    summaries[side].failed = failed;
    ++partitions_[side].window;
  };
  const auto run_on_one_thread = [&] {
    while (!plan.stop) {
      for (std::size_t side : {0, 1}) {
        run_side(side);
        finish_side(side, false);
      }
      plan = plan_window(summaries[0], summaries[1], lookahead);
    }
  };
  if (threads < 2) {
    run_on_one_thread();
    return;
  }
  // Two threads only if their cores are near: far apart, every crossing frame and every meeting
  // pays the distance, and one thread is faster (docs/simulator.md, "Round 9").
  CoreDistance distance;
  std::atomic<int> verdict{0};  // 1: two threads, 2: one
  std::array<std::exception_ptr, 2> errors;
  WindowMeeting meeting;
  const auto plan_next = [&] { plan = plan_window(summaries[0], summaries[1], lookahead); };
  const auto side_loop = [&](std::size_t side) {
    while (!plan.stop) {
      try {
        run_side(side);
      } catch (...) {
        errors[side] = std::current_exception();
      }
      finish_side(side, errors[side] != nullptr);
      meeting.arrive_and_wait(plan_next);
    }
  };
  const int first_cpu = ::sched_getcpu();
  std::thread switches([&] {
    answer_from_another_cpu(distance, first_cpu);
    int decided = 0;
    while ((decided = verdict.load(std::memory_order_acquire)) == 0) __builtin_ia32_pause();
    if (decided == 1) side_loop(1);
  });
  cores_round_trip_ns_ = distance.measure_ns();
  const bool two = ignore_core_distance_ || cores_round_trip_ns_ < kFarCoresRoundTripNs;
  verdict.store(two ? 1 : 2, std::memory_order_release);
  if (two) {
    threads_used_ = 2;
    side_loop(0);
  } else {
    run_on_one_thread();
  }
  switches.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace ethx::sim
