// Micro-benchmarks of the sans-I/O cores without any I/O: what the engine itself costs per
// operation, so wall-clock figures of the runtimes can be split into engine and transport.
#include <benchmark/benchmark.h>

#include <vector>

#include "packet-engine/endpoint.hpp"
#include "switch/core/switch_core.hpp"

namespace ethx {
namespace {

EngineConfig config_for(GpuId self) {
  EngineConfig config;
  config.self = self;
  config.self_mac = default_mac_for_gpu(self);
  config.gpu_macs = {default_mac_for_gpu(0), default_mac_for_gpu(1)};
  return config;
}

// One 8 B remote load, request to completion, frames handed over directly.
void BM_LoadRoundTrip(benchmark::State& state) {
  std::vector<std::byte> memory0(1 << 20), memory1(1 << 20);
  Endpoint gpu0(config_for(0), memory0), gpu1(config_for(1), memory1);
  Effects to_gpu1, to_gpu0;
  TimeNs now = 0;
  for (auto _ : state) {
    to_gpu1.clear();
    to_gpu0.clear();
    gpu0.requester().read(1, (now * 8) % 4096, 8, now, to_gpu1);
    gpu0.poll(now, to_gpu1);
    for (auto& frame : to_gpu1.send) gpu1.on_frame(frame, now, to_gpu0);
    gpu1.poll(now, to_gpu0);
    to_gpu1.clear();
    for (auto& frame : to_gpu0.send) gpu0.on_frame(frame, now, to_gpu1);
    auto completion = gpu0.requester().take_completion();
    if (!completion || !completion->ok()) state.SkipWithError("load failed");
    ++now;
  }
}
BENCHMARK(BM_LoadRoundTrip);

// Encoding and validating one frame carrying `range(0)` payload bytes.
void BM_EncodeDecode(benchmark::State& state) {
  const auto payload = static_cast<std::size_t>(state.range(0));
  std::vector<std::byte> data(payload, std::byte{0x5a});
  wire::FrameBuilder builder(wire::kDefaultFrameBytesMax);
  for (auto _ : state) {
    builder.start({default_mac_for_gpu(1), default_mac_for_gpu(0), 0, 1, 0});
    auto area = builder.append(
        {wire::Opcode::kWritePosted, wire::Status::kOk, 0, static_cast<std::uint16_t>(payload), 0},
        payload);
    std::copy(data.begin(), data.end(), area.begin());
    const wire::Frame frame = builder.finish();
    wire::FrameView view;
    benchmark::DoNotOptimize(wire::decode_frame(frame, view));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * payload));
}
BENCHMARK(BM_EncodeDecode)->Arg(64)->Arg(1024)->Arg(1728);

// The switch core forwarding one 64 B-payload fabric frame (validated, queued, dequeued).
void BM_SwitchForward(benchmark::State& state) {
  SwitchConfig config;
  config.ports.resize(32);
  for (PortId port = 0; port < 32; ++port) {
    config.static_routes.emplace_back(default_mac_for_gpu(static_cast<GpuId>(port)), port);
  }
  SwitchCore core(config);
  wire::FrameBuilder builder(wire::kDefaultFrameBytesMax);
  builder.start({default_mac_for_gpu(1), default_mac_for_gpu(0), 0, 1, 0});
  builder.append({wire::Opcode::kWritePosted, wire::Status::kOk, 0, 64, 0}, 64);
  const wire::Frame frame = builder.finish();
  std::vector<PortId> touched;
  for (auto _ : state) {
    touched.clear();
    core.on_frame(0, frame, 0, touched);
    core.pop(1);
  }
}
BENCHMARK(BM_SwitchForward);

}  // namespace
}  // namespace ethx
