#include "fabric/workloads/bench_workloads.hpp"

#include <algorithm>
#include <random>

#include "fabric/workloads/memory_pattern.hpp"

namespace ethx {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
// A writer stops issuing while this many frames wait for the transmit ring.
constexpr std::size_t kBacklogHighWater = 64;
// Echo and load waits give up after this long (a lost echo frame is counted, not waited for).
constexpr std::int64_t kEchoTimeoutNs = 1'000'000'000;

double seconds_between(TimeNs start, TimeNs end) {
  return end > start ? static_cast<double>(end - start) * 1e-9 : 0.0;
}

}  // namespace

BenchLayout BenchLayout::for_memory(std::uint64_t hbm_bytes, std::size_t gpu_count) {
  if (hbm_bytes < 8 * kMiB) {
    throw ConfigError("fabric.hbm_bytes: the benchmarks need at least 8 MiB per GPU (got " +
                      std::to_string(hbm_bytes) + ")");
  }
  BenchLayout layout;
  layout.pattern_offset = 0;
  layout.pattern_bytes = kMiB;
  layout.counters_offset = kMiB;  // gpu_count <= 1024 counters of 8 B fit in the next MiB
  layout.store_offset = 2 * kMiB;
  layout.store_bytes = std::min<std::uint64_t>(16 * kMiB, hbm_bytes / 2 - 2 * kMiB);
  layout.all_to_all_offset = hbm_bytes / 2;
  layout.all_to_all_slice_bytes = (hbm_bytes / 2) / gpu_count / 4096 * 4096;
  return layout;
}

double ThroughputRun::gbps() const {
  const double seconds = seconds_between(start_ns, end_ns);
  return seconds > 0 ? static_cast<double>(payload_bytes) * 8.0 / seconds / 1e9 : 0.0;
}

double ThroughputRun::ops_per_second() const {
  const double seconds = seconds_between(start_ns, end_ns);
  return seconds > 0 ? static_cast<double>(ops) / seconds : 0.0;
}

BenchWorkloads::BenchWorkloads(NodeRuntime& node, const BenchLayout& layout)
    : node_(node), layout_(layout) {}

void BenchWorkloads::fill_local_pattern(std::span<std::byte> local_memory) {
  fill_pattern(local_memory.subspan(layout_.pattern_offset, layout_.pattern_bytes), node_.self(),
               layout_.pattern_offset, kPatternSalt);
}

std::uint64_t BenchWorkloads::window_address(GpuId peer, std::uint64_t remote_offset) const {
  for (const Window& window : node_.address_map().windows()) {
    if (window.dst_gpu == peer && remote_offset >= window.remote_base &&
        remote_offset - window.remote_base < window.size_bytes) {
      return window.window_offset + (remote_offset - window.remote_base);
    }
  }
  throw ConfigError("the benchmarks need a window onto byte " + std::to_string(remote_offset) +
                    " of GPU " + std::to_string(peer) + "; the window table has none");
}

void BenchWorkloads::issue_read(std::uint64_t window_addr, std::uint32_t bytes,
                                std::vector<OpId>& ops) {
  const TranslateResult result =
      node_.address_map().translate(window_addr, bytes, Access::kRead, segments_);
  if (!result.ok()) {
    // An error completion stands in for the access, exactly like a guest's faulting load.
    ops.push_back(0);
    return;
  }
  const TimeNs now = monotonic_now_ns();
  for (const Segment& segment : segments_) {
    ops.push_back(node_.endpoint().requester().read(segment.dst_gpu, segment.remote_addr,
                                                    segment.length, now, node_.effects()));
  }
}

bool BenchWorkloads::issue_posted_write(std::uint64_t window_addr,
                                        std::span<const std::byte> data) {
  const TranslateResult result =
      node_.address_map().translate(window_addr, data.size(), Access::kWrite, segments_);
  if (!result.ok()) return false;
  const TimeNs now = monotonic_now_ns();
  std::size_t done = 0;
  for (const Segment& segment : segments_) {
    node_.endpoint().requester().write_posted(segment.dst_gpu, segment.remote_addr,
                                              data.subspan(done, segment.length), now,
                                              node_.effects());
    done += segment.length;
  }
  return true;
}

void BenchWorkloads::throttle() {
  node_.wait_for_backlog_below(kBacklogHighWater);
}

void BenchWorkloads::sample_echo(GpuId peer, LatencyRun& run) {
  const std::uint64_t sequence = ++echo_sequence_;
  const TimeNs start = monotonic_now_ns();
  node_.send_echo(peer, sequence);
  if (!node_.wait_echo(sequence, kEchoTimeoutNs)) {
    ++run.errors;
    return;
  }
  run.samples_ns.push_back(monotonic_now_ns() - start);
}

void BenchWorkloads::sample_load(GpuId peer, std::uint64_t offset, std::uint32_t bytes,
                                 LatencyRun& run) {
  const std::uint64_t window_addr = window_address(peer, offset);
  std::vector<OpId> ops;
  std::vector<std::byte> data(bytes);
  const TimeNs start = monotonic_now_ns();
  issue_read(window_addr, bytes, ops);
  bool ok = ops.front() != 0;
  std::size_t filled = 0;
  for (std::size_t n = 0; ok && n < ops.size(); ++n) {
    Completion completion = node_.wait_for_completion();
    ok = completion.ok();
    if (ok) {
      std::copy(completion.data.begin(), completion.data.end(),
                data.begin() + static_cast<std::ptrdiff_t>(filled));
      filled += completion.data.size();
    }
  }
  const TimeNs end = monotonic_now_ns();
  if (!ok) {
    ++run.errors;
    return;
  }
  run.samples_ns.push_back(end - start);
  ++run.verified_ops;
  run.mismatches += pattern_mismatches(data, peer, offset, kPatternSalt) > 0 ? 1 : 0;
}

std::uint64_t BenchWorkloads::random_pattern_offset(std::mt19937_64& random,
                                                    std::uint32_t bytes) const {
  const std::uint64_t slots = layout_.pattern_bytes / bytes;
  return layout_.pattern_offset + (random() % slots) * bytes;
}

LatencyRun BenchWorkloads::echo_latency(GpuId peer, std::uint32_t count) {
  LatencyRun run;
  run.samples_ns.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) sample_echo(peer, run);
  return run;
}

LatencyRun BenchWorkloads::load_latency(GpuId peer, std::uint32_t count, std::uint32_t bytes,
                                        std::uint64_t seed) {
  LatencyRun run;
  run.samples_ns.reserve(count);
  std::mt19937_64 random(seed);
  for (std::uint32_t i = 0; i < count; ++i) {
    sample_load(peer, random_pattern_offset(random, bytes), bytes, run);
  }
  return run;
}

std::pair<LatencyRun, LatencyRun> BenchWorkloads::echo_and_load_latency(GpuId peer,
                                                                        std::uint32_t count,
                                                                        std::uint32_t bytes,
                                                                        std::uint64_t seed) {
  // One echo and one load per iteration, their order alternating, so both see the same
  // scheduling regime of this noisy 2-core machine.
  LatencyRun echo, load;
  echo.samples_ns.reserve(count);
  load.samples_ns.reserve(count);
  std::mt19937_64 random(seed);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint64_t offset = random_pattern_offset(random, bytes);
    if (i % 2 == 0) {
      sample_echo(peer, echo);
      sample_load(peer, offset, bytes, load);
    } else {
      sample_load(peer, offset, bytes, load);
      sample_echo(peer, echo);
    }
  }
  return {std::move(echo), std::move(load)};
}

ThroughputRun BenchWorkloads::store_bandwidth(GpuId peer, std::uint32_t size_bytes,
                                              std::uint64_t total_bytes, std::uint64_t salt) {
  ThroughputRun run;
  const std::uint64_t region = std::min(total_bytes, layout_.store_bytes) / size_bytes * size_bytes;
  std::vector<std::byte> data(size_bytes);
  run.start_ns = monotonic_now_ns();
  for (std::uint64_t sent = 0; sent < total_bytes; sent += size_bytes) {
    const std::uint64_t offset = layout_.store_offset + sent % region;
    fill_pattern(data, peer, offset, salt);
    if (!issue_posted_write(window_address(peer, offset), data)) ++run.errors;
    ++run.ops;
    run.payload_bytes += size_bytes;
    if (run.ops % 16 == 0) throttle();
  }
  node_.endpoint().requester().flush(peer, monotonic_now_ns(), node_.effects());
  const Completion flushed = node_.wait_for_completion();
  run.end_ns = monotonic_now_ns();
  if (!flushed.ok()) ++run.errors;
  verify_remote(peer, layout_.store_offset, std::min(region, total_bytes), salt, run);
  // Each store whose bytes were read back and matched counts as one verified operation.
  run.verified_ops = run.mismatches == 0 ? std::min(region, total_bytes) / size_bytes : 0;
  return run;
}

void BenchWorkloads::verify_remote(GpuId peer, std::uint64_t offset, std::uint64_t bytes,
                                   std::uint64_t salt, ThroughputRun& run) {
  constexpr std::uint32_t kChunk = 1024;
  std::vector<OpId> ops;
  for (std::uint64_t done = 0; done < bytes; done += kChunk) {
    const auto chunk = static_cast<std::uint32_t>(std::min<std::uint64_t>(kChunk, bytes - done));
    ops.clear();
    issue_read(window_address(peer, offset + done), chunk, ops);
    if (ops.size() != 1 || ops.front() == 0) {
      ++run.errors;
      continue;
    }
    const Completion completion = node_.wait_for_completion();
    if (!completion.ok()) {
      ++run.errors;
      continue;
    }
    const auto bad = pattern_mismatches(completion.data, peer, offset + done, salt);
    run.mismatches += bad > 0 ? 1 : 0;
  }
}

ThroughputRun BenchWorkloads::read_bandwidth(GpuId peer, std::uint32_t size_bytes,
                                             std::uint64_t total_bytes, std::uint32_t outstanding) {
  ThroughputRun run;
  Requester& requester = node_.endpoint().requester();
  const std::uint64_t slots = layout_.pattern_bytes / size_bytes;
  const std::uint64_t total_ops = total_bytes / size_bytes;
  std::unordered_map<OpId, std::uint64_t> offset_of;
  std::vector<OpId> ops;
  std::uint64_t issued = 0;
  run.start_ns = monotonic_now_ns();
  while (run.ops < total_ops) {
    while (issued < total_ops && offset_of.size() < outstanding &&
           requester.free_tags() >= requester.tags_needed(size_bytes)) {
      const std::uint64_t offset = layout_.pattern_offset + (issued % slots) * size_bytes;
      ops.clear();
      issue_read(window_address(peer, offset), size_bytes, ops);
      ++issued;
      if (ops.size() != 1 || ops.front() == 0) {
        ++run.errors;
        ++run.ops;
        continue;
      }
      offset_of[ops.front()] = offset;
    }
    node_.transmit();
    while (auto completion = requester.take_completion()) {
      auto found = offset_of.find(completion->id);
      if (found == offset_of.end()) continue;
      const std::uint64_t offset = found->second;
      offset_of.erase(found);
      ++run.ops;
      if (!completion->ok()) {
        ++run.errors;
        continue;
      }
      run.payload_bytes += completion->data.size();
      ++run.verified_ops;
      run.mismatches += pattern_mismatches(completion->data, peer, offset, kPatternSalt) > 0;
    }
    if (!offset_of.empty() && (issued == total_ops || offset_of.size() >= outstanding)) {
      node_.wait_for_any_completion();
    }
  }
  run.end_ns = monotonic_now_ns();
  return run;
}

ThroughputRun BenchWorkloads::atomic_rate(GpuId peer, std::uint32_t count,
                                          std::uint32_t outstanding) {
  ThroughputRun run;
  Requester& requester = node_.endpoint().requester();
  const std::uint64_t counter = layout_.counters_offset + 8ull * node_.self();
  // Start from a known value so the returned old values can be checked exactly.
  const std::uint64_t start_value = 0;
  requester.atomic(peer, counter, AtomicOp::kSwap, 8, start_value, 0, monotonic_now_ns(),
                   node_.effects());
  if (!node_.wait_for_completion().ok()) ++run.errors;

  std::vector<std::uint8_t> seen(count, 0);
  std::uint32_t issued = 0;
  std::uint32_t in_flight = 0;
  run.start_ns = monotonic_now_ns();
  while (run.ops < count) {
    while (issued < count && in_flight < outstanding && requester.free_tags() > 0) {
      requester.atomic(peer, counter, AtomicOp::kFetchAdd, 8, 1, 0, monotonic_now_ns(),
                       node_.effects());
      ++issued;
      ++in_flight;
    }
    node_.transmit();
    while (auto completion = requester.take_completion()) {
      --in_flight;
      ++run.ops;
      if (!completion->ok()) {
        ++run.errors;
        continue;
      }
      // Every old value in [0, count) must come back exactly once.
      const std::uint64_t old_value = completion->old_value - start_value;
      if (old_value >= count || seen[old_value]++ != 0) ++run.mismatches;
      ++run.verified_ops;
    }
    // Issue again as soon as anything came back; wait only while all slots are busy.
    if (in_flight > 0 && (issued == count || in_flight >= outstanding)) {
      node_.wait_for_any_completion();
    }
  }
  run.end_ns = monotonic_now_ns();
  run.payload_bytes = 8ull * count;
  // The counter must now read start + count.
  std::vector<OpId> ops;
  issue_read(window_address(peer, counter), 8, ops);
  const Completion final_value = node_.wait_for_completion();
  std::uint64_t value = 0;
  if (final_value.ok()) {
    std::memcpy(&value, final_value.data.data(), 8);
  } else {
    ++run.errors;
  }
  if (value != start_value + count) ++run.mismatches;
  return run;
}

ThroughputRun BenchWorkloads::all_to_all_store(std::uint64_t bytes_per_peer, std::uint64_t salt) {
  ThroughputRun run;
  constexpr std::uint32_t kStoreBytes = 1024;
  const std::size_t gpus = node_.endpoint().config().gpu_macs.size();
  const std::uint64_t bytes = std::min(bytes_per_peer, layout_.all_to_all_slice_bytes);
  const std::uint64_t my_slice =
      layout_.all_to_all_offset + layout_.all_to_all_slice_bytes * node_.self();
  std::vector<std::byte> data(kStoreBytes);
  run.start_ns = monotonic_now_ns();
  // Interleave destinations so every link carries traffic at once.
  for (std::uint64_t done = 0; done < bytes; done += kStoreBytes) {
    for (std::size_t step = 1; step < gpus; ++step) {
      const auto peer = static_cast<GpuId>((node_.self() + step) % gpus);
      const std::uint64_t offset = my_slice + done;
      const std::size_t piece = std::min<std::uint64_t>(kStoreBytes, bytes - done);
      fill_pattern(std::span(data).first(piece), peer, offset, salt);
      if (!issue_posted_write(window_address(peer, offset), std::span(data).first(piece))) {
        ++run.errors;
      }
      ++run.ops;
      run.payload_bytes += piece;
      if (run.ops % 16 == 0) throttle();
    }
  }
  for (std::size_t step = 1; step < gpus; ++step) {
    const auto peer = static_cast<GpuId>((node_.self() + step) % gpus);
    node_.endpoint().requester().flush(peer, monotonic_now_ns(), node_.effects());
  }
  for (std::size_t step = 1; step < gpus; ++step) {
    if (!node_.wait_for_completion().ok()) ++run.errors;
  }
  run.end_ns = monotonic_now_ns();
  return run;
}

ThroughputRun BenchWorkloads::all_to_all_verify(std::uint64_t bytes_per_peer, std::uint64_t salt) {
  ThroughputRun run;
  const std::size_t gpus = node_.endpoint().config().gpu_macs.size();
  const std::uint64_t bytes = std::min(bytes_per_peer, layout_.all_to_all_slice_bytes);
  const std::uint64_t my_slice =
      layout_.all_to_all_offset + layout_.all_to_all_slice_bytes * node_.self();
  run.start_ns = monotonic_now_ns();
  for (std::size_t step = 1; step < gpus; ++step) {
    const auto peer = static_cast<GpuId>((node_.self() + step) % gpus);
    const std::uint64_t before = run.mismatches;
    verify_remote(peer, my_slice, bytes, salt, run);
    run.verified_ops += (run.mismatches == before) ? (bytes + 1023) / 1024 : 0;
  }
  run.end_ns = monotonic_now_ns();
  return run;
}

}  // namespace ethx
