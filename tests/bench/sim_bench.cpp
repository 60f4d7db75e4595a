// Micro-benchmarks of the simulator's event engine (docs/simulator.md, "Speed"): the event
// queue alone (the calendar, and the 4-ary heap it replaced as a baseline), and the whole
// engine on a small fabric, in events per second.
//
//   build/bin/ethx_sim_bench                       # all of them
//   build/bin/ethx_sim_bench --benchmark_filter=EventQueue
#include <benchmark/benchmark.h>

#include <cstdint>

#include "fabric/config/topology_config.hpp"
#include "fabric/sim/sim_command.hpp"
#include "fabric/sim/sim_event_heap.hpp"
#include "fabric/sim/sim_event_queue.hpp"

namespace ethx::sim {
namespace {

// A fixed linear congruential generator: the same schedule every run.
std::uint64_t next_random(std::uint64_t& state) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return state >> 24;
}

// The hold model: a queue of range(0) events, each pop followed by one push at the popped
// time plus a delay; delays up to range(1) ps (the simulator's span: frames on an 800G link
// and through a 250 ns switch are 20-300 ns ahead).
void BM_EventQueueHold(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const auto span_ps = static_cast<std::uint64_t>(state.range(1));
  EventQueue queue;
  std::uint64_t random = 1;
  for (std::size_t i = 0; i < size; ++i) {
    queue.push(next_random(random) % span_ps, 1, static_cast<std::uint32_t>(i));
  }
  for (auto _ : state) {
    const Event event = queue.pop();
    queue.push(event.at + next_random(random) % span_ps, event.kind, event.target);
  }
  benchmark::DoNotOptimize(queue.top());
  state.SetItemsProcessed(state.iterations());  // events: one pop and one push each
}
// 1 K, 5 K and 8 K events pending: all-to-all on 256 GPUs, on 1024 GPUs and on 1024 GPUs
// leaf-spine hold 1.3 K, 5.2 K and 8.5 K on average.
BENCHMARK(BM_EventQueueHold)
    ->Args({1 << 10, 300'000})
    ->Args({5 << 10, 300'000})
    ->Args({8 << 10, 300'000});

// The same hold model on the 4-ary heap alone, which was the whole event queue before the
// calendar (it still keeps the far events): the baseline, measured in the same run.
void BM_EventHeapHold(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const auto span_ps = static_cast<std::uint64_t>(state.range(1));
  EventHeap heap;
  std::uint64_t random = 1;
  std::uint64_t seq = 0;
  const auto push = [&](TimePs at, std::uint32_t target) {
    Event event;
    event.at = at;
    event.seq = seq++;
    event.kind = 1;
    event.target = target & kMaxEventTarget;
    heap.push(event);
  };
  for (std::size_t i = 0; i < size; ++i) {
    push(next_random(random) % span_ps, static_cast<std::uint32_t>(i));
  }
  for (auto _ : state) {
    const Event event = heap.pop();
    push(event.at + next_random(random) % span_ps, event.target);
  }
  benchmark::DoNotOptimize(heap.top());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EventHeapHold)
    ->Args({1 << 10, 300'000})
    ->Args({5 << 10, 300'000})
    ->Args({8 << 10, 300'000});

// Many events at the same picosecond: order falls to the insertion sequence.
void BM_EventQueueTies(benchmark::State& state) {
  EventQueue queue;
  std::uint64_t random = 7;
  for (std::uint32_t i = 0; i < 4096; ++i) queue.push(next_random(random) % 8, 1, i);
  for (auto _ : state) {
    const Event event = queue.pop();
    queue.push(event.at + next_random(random) % 8, event.kind, event.target);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EventQueueTies);

// The whole engine: `ethx sim --gpus N --workload all-to-all`, events per second of CPU.
void BM_SimAllToAll(benchmark::State& state) {
  TopologyConfig config = load_topology("");
  config.resize(static_cast<std::size_t>(state.range(0)));
  std::uint64_t events = 0;
  for (auto _ : state) {
    const SimReport report =
        simulate(config, TopologyKind::kSingle, WorkloadKind::kAllToAll, 4096, 1, 1);
    events += report.events;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(events));
  state.counters["events_per_run"] =
      static_cast<double>(events) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_SimAllToAll)->Arg(32)->Arg(128)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ethx::sim
