// ethx-guest bench and alltoall: microbenchmarks through the window, the copy engine and the
// atomic command, every transferred value checked (docs/guest-image.md).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "qemu-device/guest-tools/guest_commands.hpp"

namespace ethx::guest {
namespace {

using nlohmann::json;

constexpr std::uint64_t kMiB = 1u << 20;
// Memory the guest tools use in every GPU (window offsets inside each GPU's memory):
// [32, 40) MiB bench slots, [40, 41) MiB alltoall barrier words, [48, ...) MiB alltoall data.
constexpr std::uint64_t kBenchBase = 8 * kMiB;  // 32 MiB of slots: 4 MiB each up to 8 GPUs
constexpr std::uint64_t kBenchEnd = 40 * kMiB;
constexpr std::uint64_t kBarrierBase = 40 * kMiB;
constexpr std::uint64_t kBarrierWords = kMiB / 8;
constexpr std::uint64_t kAlltoallBase = 48 * kMiB;

struct Tally {
  std::uint64_t verified = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t errors = 0;
  // Of the errors: a peer that did not answer in time, and one the device already knows is
  // down (UNREACHABLE at once, docs/register-map.md).
  std::uint64_t timeouts = 0;
  std::uint64_t unreachable = 0;
  std::uint32_t error_bits = 0;
  std::uint64_t fault_addr = 0;

  void check(std::uint64_t actual, std::uint64_t expected) {
    if (actual == expected) {
      ++verified;
    } else {
      ++mismatches;
    }
  }
  void add(const ErrorState& error) {
    if (error.bits == 0) return;
    if (error_bits == 0) fault_addr = error.fault_addr;
    ++errors;
    if ((error.bits & kErrorTimeout) != 0) ++timeouts;
    if ((error.bits & kErrorUnreachable) != 0) ++unreachable;
    error_bits |= error.bits;
  }
  json to_json() const {
    return {{"verified_ops", verified},   {"mismatches", mismatches},
            {"errors", errors},           {"timeouts", timeouts},
            {"unreachable", unreachable}, {"error_names", error_names(error_bits)},
            {"fault_addr", fault_addr}};
  }
  // Prints the result and exits with 1 if anything did not verify.
  json finish(json result, const std::string& what) const {
    result.update(to_json());
    if (mismatches != 0 || errors != 0) {
      throw CommandFailed(what + ": " + std::to_string(mismatches) + " mismatches, " +
                              std::to_string(errors) + " errors (" + std::to_string(timeouts) +
                              " timeout, " + std::to_string(unreachable) + " unreachable)",
                          result);
    }
    return result;
  }
};

double gbps(std::uint64_t bytes, std::uint64_t ns) {
  return ns == 0 ? 0.0 : static_cast<double>(bytes) * 8.0 / static_cast<double>(ns);
}

json latency(std::vector<std::uint64_t> ns) {
  if (ns.empty()) return json::object();
  std::sort(ns.begin(), ns.end());
  const auto at = [&](double q) {
    return ns[static_cast<std::size_t>(q * static_cast<double>(ns.size() - 1))];
  };
  return {
      {"p50_ns", at(0.50)}, {"p99_ns", at(0.99)}, {"min_ns", ns.front()}, {"max_ns", ns.back()}};
}

template <typename Access>
std::vector<std::uint64_t> timed(std::size_t samples, Access access) {
  std::vector<std::uint64_t> ns(samples);
  for (std::size_t i = 0; i < samples; ++i) {
    const std::uint64_t start = now_ns();
    access(i);
    ns[i] = now_ns() - start;
  }
  return ns;
}

// 8-byte word `index` of a RAM BAR region at `offset` (memcpy: plain RAM, no MMIO rules).
std::uint64_t ram_word(BarAccess& bar, std::uint64_t offset, std::uint64_t index) {
  if (std::uint8_t* ram = bar.ram()) {
    std::uint64_t word;
    std::memcpy(&word, ram + offset + 8 * index, 8);
    return word;
  }
  return bar.read(offset + 8 * index, 8);
}

std::filesystem::path lock_dir(const RunOptions& options) {
  return options.lock_dir.empty() ? default_lock_dir() : options.lock_dir;
}

// The bench region of GPU `self` in every GPU: slots of 32 MiB / GPU_COUNT (a power of two, at
// most 4 MiB), slot `self` belonging to the bench run on GPU `self`.
std::uint64_t bench_slot_bytes(std::uint32_t gpu_count) {
  std::uint64_t slot = 4 * kMiB;
  while (slot > 4096 && slot * gpu_count > kBenchEnd - kBenchBase) slot /= 2;
  return slot;
}

// (c) The copy engine, peer -> local: the peer's slot is filled by one local -> peer copy of a
// pattern, then each size is copied back several times (the local destination zeroed before
// each copy and compared through BAR 2): latency p50/p99 per size, bandwidth from the p50.
struct CopyBench {
  const DeviceLock& lock;
  BarAccess& hbm;
  std::uint64_t region;      // the local slot in BAR 2
  std::uint64_t local_base;  // ... and in the window
  std::uint64_t peer_base;   // the peer's slot in the window
  std::chrono::nanoseconds timeout;
  Tally& tally;
  std::vector<std::uint64_t> expected{};

  void fill_local(std::uint64_t bytes, const std::uint64_t* words) {
    std::uint8_t* ram = hbm.ram();
    for (std::uint64_t i = 0; ram == nullptr && i < bytes / 8; ++i) {
      hbm.write(region + 8 * i, 8, words ? words[i] : 0);
    }
    if (ram == nullptr) return;
    if (words != nullptr) {
      std::memcpy(ram + region, words, bytes);
    } else {
      std::memset(ram + region, 0, bytes);
    }
  }

  json fill_peer(std::uint64_t bytes, std::uint64_t seed) {
    expected.resize(bytes / 8);
    for (std::uint64_t i = 0; i < expected.size(); ++i) expected[i] = pattern_word(seed, i);
    fill_local(bytes, expected.data());
    const CopyResult fill = run_copy(lock, local_base, peer_base, bytes, timeout);
    json entry = {{"bytes", bytes},
                  {"ns", fill.ns},
                  {"gbps", gbps(bytes, fill.ns)},
                  {"done", fill.state == kCopyDone}};
    if (fill.state != kCopyDone) {
      ++tally.errors;
      entry["code_name"] = status_code_name(fill.code);
    }
    return entry;
  }

  // One copy of `bytes` back from the peer, verified; its time, or nullopt if it failed.
  std::optional<std::uint64_t> copy_back(std::uint64_t bytes, json& entry) {
    fill_local(bytes, nullptr);
    const CopyResult copied = run_copy(lock, peer_base, local_base, bytes, timeout);
    if (copied.state != kCopyDone) {
      ++tally.errors;
      entry["code_name"] = status_code_name(copied.code);
      return std::nullopt;
    }
    std::uint8_t* ram = hbm.ram();
    if (ram != nullptr && std::memcmp(ram + region, expected.data(), bytes) == 0) {
      tally.verified += bytes / 8;
    } else {
      for (std::uint64_t i = 0; i < bytes / 8; ++i)
        tally.check(ram_word(hbm, region, i), expected[i]);
    }
    return copied.ns;
  }

  json measure(std::uint64_t max_bytes, bool quick) {
    json copies = json::array();
    const std::pair<std::uint64_t, std::size_t> sizes[] = {
        {4096, quick ? 8 : 16}, {65536, quick ? 4 : 8}, {kMiB, quick ? 2 : 4}, {4 * kMiB, 2}};
    for (const auto& [bytes, samples] : sizes) {
      if (bytes > max_bytes) break;
      json entry = {{"bytes", bytes}};
      std::vector<std::uint64_t> ns;
      for (std::size_t i = 0; i < samples; ++i) {
        const std::optional<std::uint64_t> took = copy_back(bytes, entry);
        if (!took) break;
        ns.push_back(*took);
      }
      entry["done"] = ns.size() == samples;
      entry["samples"] = ns.size();
      entry.update(latency(ns));
      entry["gbps"] = gbps(bytes, entry.value("p50_ns", std::uint64_t{0}));
      copies.push_back(entry);
    }
    return copies;
  }
};

// Where run_bench works: its GPU and peer, and its slot in every GPU's bench region.
struct BenchPlan {
  std::uint32_t self = 0;
  std::uint32_t peer = 0;
  std::uint32_t gpu_count = 0;
  std::uint64_t slot_bytes = 0;
  std::uint64_t region = 0;      // the slot in BAR 2 (this GPU's HBM)
  std::uint64_t peer_base = 0;   // the peer's slot in the window
  std::uint64_t local_base = 0;  // this GPU's slot in the window
  bool quick = false;
  std::uint64_t seed = 0;
};

BenchPlan plan_bench(const GuestCommand& command, GpuFunction& gpu) {
  const Geometry geometry = read_geometry(gpu, true);
  BenchPlan plan;
  plan.self = geometry.gpu_id;
  plan.gpu_count = geometry.gpu_count;
  if (plan.self >= plan.gpu_count) {
    throw CommandError("GPU_ID " + std::to_string(plan.self) + " is not below GPU_COUNT " +
                       std::to_string(plan.gpu_count));
  }
  plan.peer =
      command.peer.value_or(plan.gpu_count > 1 ? (plan.self + 1) % plan.gpu_count : plan.self);
  if (plan.peer >= plan.gpu_count) {
    throw CommandError("--peer " + std::to_string(plan.peer) + ": the fabric has " +
                       std::to_string(plan.gpu_count) + " GPUs");
  }
  plan.slot_bytes = bench_slot_bytes(plan.gpu_count);
  plan.region = kBenchBase + plan.self * plan.slot_bytes;
  const std::size_t hbm_bytes = gpu.bar(kHbmBar).size();
  if (kBenchEnd > geometry.aperture_bytes() || plan.region + plan.slot_bytes > hbm_bytes ||
      plan.slot_bytes * plan.gpu_count > kBenchEnd - kBenchBase) {
    throw CommandError("bench needs 40 MiB of GPU memory (HBM " + std::to_string(hbm_bytes) +
                       " bytes, aperture " + std::to_string(geometry.aperture_mib) + " MiB)");
  }
  plan.peer_base = geometry.window_addr(plan.peer, plan.region);
  plan.local_base = geometry.window_addr(plan.self, plan.region);
  plan.quick = command.quick;
  // A fresh seed per run: data left by an earlier run cannot pass as this run's.
  plan.seed = now_ns() ^ (std::uint64_t{plan.self} << 48);
  return plan;
}

struct LatencySamples {
  std::size_t samples = 0;
  std::vector<std::uint64_t> window_ns;
  std::vector<std::uint64_t> hbm_ns;
  std::vector<std::uint64_t> mmio_ns;
};

// (a) Latency: 8-byte window loads of a pattern stored first; local HBM; BAR 0 SCRATCH.
LatencySamples measure_latency(GpuFunction& gpu, const BenchPlan& plan, Tally& tally) {
  BarAccess& window = gpu.bar(kWindowBar);
  BarAccess& hbm = gpu.bar(kHbmBar);
  const std::uint64_t seed = plan.seed;
  LatencySamples latency;
  latency.samples = std::min<std::uint64_t>(plan.quick ? 256 : 2048, plan.slot_bytes / 16);
  for (std::size_t i = 0; i < latency.samples; ++i) {
    window.write(plan.peer_base + 8 * i, 8, pattern_word(seed + 1, i));
  }
  latency.window_ns = timed(latency.samples, [&](std::size_t i) {
    tally.check(window.read(plan.peer_base + 8 * i, 8), pattern_word(seed + 1, i));
  });
  for (std::size_t i = 0; i < latency.samples; ++i) {
    hbm.write(plan.region + 8 * i, 8, pattern_word(seed + 2, i));
  }
  latency.hbm_ns = timed(latency.samples, [&](std::size_t i) {
    tally.check(hbm.read(plan.region + 8 * i, 8), pattern_word(seed + 2, i));
  });
  gpu.write(kScratch, seed);
  latency.mmio_ns =
      timed(latency.samples, [&](std::size_t) { tally.check(gpu.read(kScratch), seed); });
  tally.add(take_error(gpu));
  return latency;
}

json latency_report(const std::string& bdf, const BenchPlan& plan, const LatencySamples& measured) {
  const json mmio = latency(measured.mmio_ns);
  return {{"bdf", bdf},
          {"gpu_id", plan.self},
          {"peer", plan.peer},
          {"gpu_count", plan.gpu_count},
          {"quick", plan.quick},
          {"region",
           {{"peer_addr", plan.peer_base},
            {"local_addr", plan.local_base},
            {"slot_bytes", plan.slot_bytes}}},
          {"latency",
           {{"samples", measured.samples},
            {"window_load", latency(measured.window_ns)},
            {"local_hbm_load", latency(measured.hbm_ns)},
            {"mmio_read", mmio}}},
          {"mmio_trap_ns", mmio.value("p50_ns", std::uint64_t{0})}};
}

struct StoreResult {
  std::uint64_t bytes = 0;
  std::uint64_t ns = 0;
  std::uint64_t words_checked = 0;
};

// (b) Store bandwidth: 8-byte stores; the load of the last word completes after all of them
// (one destination: performed in order, a read sees earlier writes).
StoreResult measure_stores(GpuFunction& gpu, const BenchPlan& plan, Tally& tally) {
  BarAccess& window = gpu.bar(kWindowBar);
  const std::uint64_t seed = plan.seed + 3;
  StoreResult store;
  store.bytes =
      std::min<std::uint64_t>(plan.quick ? std::uint64_t{256} * 1024 : kMiB, plan.slot_bytes / 2);
  const std::uint64_t words = store.bytes / 8;
  const std::uint64_t start = now_ns();
  for (std::uint64_t i = 0; i < words; ++i) {
    window.write(plan.peer_base + 8 * i, 8, pattern_word(seed, i));
  }
  tally.check(window.read(plan.peer_base + store.bytes - 8, 8), pattern_word(seed, words - 1));
  store.ns = now_ns() - start;
  const std::uint64_t stride = plan.quick ? 8 : 1;
  for (std::uint64_t i = 0; i < words; i += stride, ++store.words_checked) {
    tally.check(window.read(plan.peer_base + 8 * i, 8), pattern_word(seed, i));
  }
  tally.add(take_error(gpu));
  return store;
}

struct AtomicRate {
  std::uint64_t ops = 0;
  std::uint64_t ns = 0;
  std::uint64_t final_count = 0;
  std::uint32_t status = 0;
};

// (d) Atomic rate: fetch-add 1 on a peer counter; every old value is the count so far.
AtomicRate measure_atomics(GpuFunction& gpu, const DeviceLock& lock, const BenchPlan& plan,
                           Tally& tally) {
  AtomicRate rate;
  rate.ops = plan.quick ? 256 : 4096;
  const std::uint64_t counter = plan.peer_base + plan.slot_bytes - 8;
  rate.status = run_atomic(lock, AtomicOp::kSwap, counter, 8, 0).status;
  const std::uint64_t start = now_ns();
  for (std::uint64_t i = 0; i < rate.ops && rate.status == 0; ++i) {
    const AtomicResult added = run_atomic(lock, AtomicOp::kFetchAdd, counter, 8, 1);
    rate.status = added.status;
    if (added.status == 0) tally.check(added.old_value, i);
  }
  rate.ns = now_ns() - start;
  if (rate.status != 0) ++tally.errors;
  rate.final_count = gpu.bar(kWindowBar).read(counter, 8);
  tally.check(rate.final_count, rate.ops);
  tally.add(take_error(gpu));
  return rate;
}

// clang-tidy 14 reports nlohmann::json's throwing default constructor through the implicit
// special members; nothing here is noexcept.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct CopyResults {
  json fill;    // the one local -> peer copy that fills the peer's slot
  json copies;  // per size, the copies back
};

// (c) The copy engine (CopyBench): the peer's slot filled, then copied back size by size.
CopyResults measure_copies(GpuFunction& gpu, const DeviceLock& lock, const BenchPlan& plan,
                           std::chrono::nanoseconds timeout, Tally& tally) {
  CopyBench copy_bench{lock,           gpu.bar(kHbmBar), plan.region, plan.local_base,
                       plan.peer_base, timeout,          tally};
  const std::uint64_t copy_max =
      std::min<std::uint64_t>(plan.quick ? kMiB : 4 * kMiB, plan.slot_bytes);
  CopyResults copy;
  copy.fill = copy_bench.fill_peer(copy_max, plan.seed + 4);
  copy.copies =
      copy.fill.value("done", false) ? copy_bench.measure(copy_max, plan.quick) : json::array();
  tally.add(take_error(gpu));
  return copy;
}

json bandwidth_report(const StoreResult& store, const AtomicRate& atomic, const CopyResults& copy) {
  const double ops_per_s =
      atomic.ns == 0 ? 0.0 : static_cast<double>(atomic.ops) * 1e9 / static_cast<double>(atomic.ns);
  return {{"store",
           {{"bytes", store.bytes},
            {"ns", store.ns},
            {"gbps", gbps(store.bytes, store.ns)},
            {"words_checked", store.words_checked}}},
          {"copy", copy.copies},
          {"copy_fill", copy.fill},
          {"atomic",
           {{"ops", atomic.ops},
            {"ns", atomic.ns},
            {"ops_per_s", ops_per_s},
            {"final", atomic.final_count},
            {"status_name", status_code_name(atomic.status)}}}};
}

}  // namespace

json run_bench(const GuestCommand& command, GpuFunction& gpu, const RunOptions& options) {
  const BenchPlan plan = plan_bench(command, gpu);
  DeviceLock lock(gpu, lock_dir(options));  // atomics and copies use the register set
  take_error(gpu);
  Tally tally;
  json result = latency_report(gpu.bdf(), plan, measure_latency(gpu, plan, tally));
  // The host interleaves these short runs with its own baseline rounds (ethx bench --vms).
  if (command.latency_only) return tally.finish(std::move(result), "bench --latency-only");
  const StoreResult store = measure_stores(gpu, plan, tally);
  const AtomicRate atomic = measure_atomics(gpu, lock, plan, tally);
  const CopyResults copy = measure_copies(gpu, lock, plan, options.copy_timeout, tally);
  result.update(bandwidth_report(store, atomic, copy));
  return tally.finish(std::move(result), "bench");
}

std::uint64_t alltoall_seed(std::uint64_t salt, std::uint64_t src, std::uint64_t dst) {
  return pattern_word(salt, (src << 32) | dst);
}

namespace {

// One arrival of every local GPU (fetch-add 1 on the barrier word), then window loads of the
// word until it reaches the end of this generation: (old / G + 1) * G. Returns the wait.
std::uint64_t barrier(GpuList& gpus, std::uint64_t addr, std::uint32_t total,
                      std::chrono::nanoseconds timeout, const RunOptions& options) {
  std::uint64_t target = 0;
  for (auto& gpu : gpus) {
    AtomicResult arrival;
    {
      const DeviceLock lock(*gpu, lock_dir(options));
      arrival = run_atomic(lock, AtomicOp::kFetchAdd, addr, 8, 1);
    }
    if (arrival.status != 0) {
      throw CommandError("alltoall barrier: fetch-add at " + hex(addr) + " on " + gpu->bdf() +
                         " failed (" + status_code_name(arrival.status) + ")");
    }
    target = std::max(target, (arrival.old_value / total + 1) * total);
  }
  BarAccess& window = gpus.front()->bar(kWindowBar);
  const std::uint64_t start = now_ns();
  auto backoff = std::chrono::microseconds(1);
  for (;;) {
    const std::uint64_t count = window.read(addr, 8);
    if (count == ~std::uint64_t{0}) {
      const ErrorState error = take_error(*gpus.front());
      if (error.bits != 0) {
        throw CommandError("alltoall barrier: load of " + hex(addr) + " failed (ERROR " +
                           hex(error.bits) + ")");
      }
    }
    if (count >= target) return now_ns() - start;
    if (now_ns() - start > static_cast<std::uint64_t>(timeout.count())) {
      throw CommandError("alltoall barrier at " + hex(addr) + " timed out after " +
                         std::to_string(timeout.count() / 1'000'000'000) + " s: counter " +
                         std::to_string(count) + ", waiting for " + std::to_string(target) + " (" +
                         std::to_string(total) +
                         " GPUs; did every VM start alltoall with the same --salt and "
                         "--gpus-total?)");
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min<std::chrono::microseconds>(backoff * 2, std::chrono::milliseconds(1));
  }
}

// What every alltoall phase needs: the sizes, the GPUs taking part, the barrier.
struct AlltoallPlan {
  std::uint64_t bytes_per_peer = 0;
  std::uint64_t salt = 0;
  std::uint32_t total = 0;           // GPUs taking part, in all VMs
  std::vector<Geometry> geometries;  // of the local GPUs
  std::uint64_t barrier_addr = 0;
  std::chrono::nanoseconds timeout{};  // each barrier
  // Window address of byte `offset` of GPU `target`'s memory (the same in every GPU).
  std::uint64_t window_addr(std::uint64_t target, std::uint64_t offset) const {
    return geometries.front().window_addr(target, offset);
  }
};

// Checks every local GPU against the plan, clearing the errors earlier commands left.
AlltoallPlan prepare_alltoall(const GuestCommand& command, GpuList& gpus,
                              const RunOptions& options) {
  AlltoallPlan plan;
  plan.bytes_per_peer = *command.bytes_per_peer;
  plan.salt = *command.salt;
  for (auto& gpu : gpus) plan.geometries.push_back(read_geometry(*gpu, true));
  const Geometry& first = plan.geometries.front();
  plan.total = command.gpus_total.value_or(first.gpu_count);
  if (plan.total > first.gpu_count) {
    throw CommandError("--gpus-total " + std::to_string(plan.total) + ": the fabric has " +
                       std::to_string(first.gpu_count) + " GPUs");
  }
  const std::uint64_t n = plan.bytes_per_peer;
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    if (plan.geometries[k].gpu_id >= plan.total) {
      throw CommandError("local GPU " + std::to_string(plan.geometries[k].gpu_id) +
                         " is not among the " + std::to_string(plan.total) + " GPUs taking part");
    }
    if (kAlltoallBase + plan.total * n >
        std::min(gpus[k]->bar(kHbmBar).size(), static_cast<std::size_t>(first.aperture_bytes()))) {
      throw CommandError("alltoall needs 48 MiB + " + std::to_string(plan.total) + " x " +
                         std::to_string(n) + " bytes of GPU memory; HBM has " +
                         std::to_string(gpus[k]->bar(kHbmBar).size()));
    }
    take_error(*gpus[k]);
  }
  plan.barrier_addr = first.window_addr(0, kBarrierBase + 8 * (plan.salt % kBarrierWords));
  plan.timeout = command.timeout_s ? std::chrono::seconds(*command.timeout_s)
                                   : std::chrono::nanoseconds(options.barrier_timeout);
  return plan;
}

struct WritePhase {
  std::uint64_t bytes_written = 0;
  std::uint64_t ns = 0;
};

// Phase 1: every local GPU writes its pattern into every other GPU; a load of the last word
// written to each destination returns after all the stores before it (per-destination
// order), so the data is in place before this GPU arrives at the barrier.
WritePhase write_to_every_peer(GpuList& gpus, const AlltoallPlan& plan, Tally& tally) {
  const std::uint64_t n = plan.bytes_per_peer;
  const std::uint64_t words = n / 8;
  WritePhase phase;
  const std::uint64_t start = now_ns();
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    const std::uint64_t src = plan.geometries[k].gpu_id;
    BarAccess& window = gpus[k]->bar(kWindowBar);
    for (std::uint64_t dst = 0; dst < plan.total; ++dst) {
      if (dst == src) continue;
      const std::uint64_t base = plan.window_addr(dst, kAlltoallBase + src * n);
      const std::uint64_t seed = alltoall_seed(plan.salt, src, dst);
      for (std::uint64_t i = 0; i < words; ++i)
        window.write(base + 8 * i, 8, pattern_word(seed, i));
      phase.bytes_written += n;
    }
    for (std::uint64_t dst = 0; dst < plan.total; ++dst) {
      if (dst == src) continue;
      const std::uint64_t last = plan.window_addr(dst, kAlltoallBase + src * n + n - 8);
      tally.check(window.read(last, 8),
                  pattern_word(alltoall_seed(plan.salt, src, dst), words - 1));
    }
    tally.add(take_error(*gpus[k]));
  }
  phase.ns = now_ns() - start;
  return phase;
}

// Phase 2: what every other GPU wrote into this VM's GPUs, read through the local HBM BAR;
// returns the bytes checked.
std::uint64_t verify_from_every_peer(GpuList& gpus, const AlltoallPlan& plan, Tally& tally) {
  const std::uint64_t n = plan.bytes_per_peer;
  std::uint64_t bytes_verified = 0;
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    const std::uint64_t dst = plan.geometries[k].gpu_id;
    BarAccess& hbm = gpus[k]->bar(kHbmBar);
    for (std::uint64_t src = 0; src < plan.total; ++src) {
      if (src == dst) continue;
      const std::uint64_t seed = alltoall_seed(plan.salt, src, dst);
      for (std::uint64_t i = 0; i < n / 8; ++i) {
        tally.check(ram_word(hbm, kAlltoallBase + src * n, i), pattern_word(seed, i));
      }
      bytes_verified += n;
    }
  }
  return bytes_verified;
}

json alltoall_report(const AlltoallPlan& plan, const WritePhase& written,
                     const json& barrier_waits_ns, std::uint64_t bytes_verified) {
  json local_ids = json::array();
  for (const Geometry& geometry : plan.geometries) local_ids.push_back(geometry.gpu_id);
  return {{"gpus_total", plan.total},
          {"local_gpus", local_ids},
          {"bytes_per_peer", plan.bytes_per_peer},
          {"salt", plan.salt},
          {"barrier_addr", plan.barrier_addr},
          {"bytes_written", written.bytes_written},
          {"write_ns", written.ns},
          {"gbps", gbps(written.bytes_written, written.ns)},
          {"barrier_wait_ns", barrier_waits_ns},
          {"bytes_verified", bytes_verified}};
}

}  // namespace

json run_alltoall(const GuestCommand& command, GpuList& gpus, const RunOptions& options) {
  const AlltoallPlan plan = prepare_alltoall(command, gpus, options);
  Tally tally;
  const WritePhase written = write_to_every_peer(gpus, plan, tally);
  json waits = json::array();
  waits.push_back(barrier(gpus, plan.barrier_addr, plan.total, plan.timeout, options));
  const std::uint64_t bytes_verified = verify_from_every_peer(gpus, plan, tally);
  // Exit barrier: nobody leaves (and perhaps starts the next round) while others still read.
  waits.push_back(barrier(gpus, plan.barrier_addr, plan.total, plan.timeout, options));
  for (auto& gpu : gpus) tally.add(take_error(*gpu));
  return tally.finish(alltoall_report(plan, written, waits, bytes_verified), "alltoall");
}

}  // namespace ethx::guest
