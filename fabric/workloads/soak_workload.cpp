#include "fabric/workloads/soak_workload.hpp"

#include <cstring>
#include <random>

namespace ethx {
namespace {

// Words of each peer's slice the mix touches: small, so loads often hit recent stores.
constexpr std::size_t kWordsPerPeer = 2048;
constexpr std::size_t kSweepChunkWords = 128;  // 1 KiB reads for the final sweep
constexpr std::size_t kBacklogHighWater = 64;

std::uint64_t to_u64(std::span<const std::byte> bytes) {
  std::uint64_t value = 0;
  std::memcpy(&value, bytes.data(), sizeof value);
  return value;
}

}  // namespace

SoakWorkload::SoakWorkload(NodeRuntime& node, const BenchWorkloads& bench)
    : node_(node), bench_(bench) {}

std::uint64_t SoakWorkload::word_offset(std::size_t word) const {
  const BenchLayout& layout = bench_.layout();
  return layout.all_to_all_offset + layout.all_to_all_slice_bytes * node_.self() + 8 * word;
}

std::uint64_t SoakWorkload::counter_offset() const {
  return bench_.layout().counters_offset + 8ull * node_.self();
}

bool SoakWorkload::translate(GpuId peer, std::uint64_t remote_offset, Access access, GpuId& dst,
                             std::uint64_t& address) {
  const std::uint64_t window_addr = bench_.window_address(peer, remote_offset);
  if (!node_.address_map().translate(window_addr, 8, access, segments_).ok() ||
      segments_.size() != 1) {
    return false;
  }
  dst = segments_.front().dst_gpu;
  address = segments_.front().remote_addr;
  return true;
}

void SoakWorkload::issue_store(GpuId peer, std::size_t word, std::uint64_t value, SoakRun& run) {
  GpuId dst = 0;
  std::uint64_t address = 0;
  ++run.ops;
  ++run.stores;
  if (!translate(peer, word_offset(word), Access::kWrite, dst, address)) {
    ++run.errors;
    return;
  }
  std::byte bytes[8];
  std::memcpy(bytes, &value, 8);
  node_.endpoint().requester().write_posted(dst, address, bytes, monotonic_now_ns(),
                                            node_.effects());
  PeerModel& model = peers_[peer];
  model.value[word] = value;
  model.state[word] = WordState::kUnconfirmed;
}

void SoakWorkload::issue_load(GpuId peer, std::size_t word, SoakRun& run) {
  GpuId dst = 0;
  std::uint64_t address = 0;
  ++run.ops;
  ++run.loads;
  if (!translate(peer, word_offset(word), Access::kRead, dst, address)) {
    ++run.errors;
    return;
  }
  PeerModel& model = peers_[peer];
  Pending pending{Pending::Kind::kLoad, model.value[word],
                  model.state[word] == WordState::kUnconfirmed};
  model.state[word] = WordState::kConfirmed;
  const OpId id =
      node_.endpoint().requester().read(dst, address, 8, monotonic_now_ns(), node_.effects());
  pending_.emplace(id, pending);
}

void SoakWorkload::issue_atomic(GpuId peer, SoakRun& run) {
  GpuId dst = 0;
  std::uint64_t address = 0;
  ++run.ops;
  ++run.atomics;
  if (!translate(peer, counter_offset(), Access::kAtomic, dst, address)) {
    ++run.errors;
    return;
  }
  const OpId id = node_.endpoint().requester().atomic(dst, address, AtomicOp::kFetchAdd, 8, 1, 0,
                                                      monotonic_now_ns(), node_.effects());
  pending_.emplace(id, Pending{Pending::Kind::kAtomic, peers_[peer].counter_next++, false});
}

void SoakWorkload::settle(const Completion& completion, SoakRun& run) {
  const auto found = pending_.find(completion.id);
  if (found == pending_.end()) return;  // a flush or sweep read: its waiter handles it
  const Pending pending = found->second;
  pending_.erase(found);
  if (!completion.ok()) {
    ++(completion.status == wire::Status::kTimeout ? run.timeouts : run.errors);
    return;
  }
  const std::uint64_t got =
      pending.kind == Pending::Kind::kLoad ? to_u64(completion.data) : completion.old_value;
  if (got != pending.expected) {
    ++run.mismatches;
    return;
  }
  run.verified_ops += pending.confirms_store ? 2 : 1;
}

std::optional<Completion> SoakWorkload::wait_one(SoakRun& run) {
  Completion completion = node_.wait_for_completion();
  if (completion.ok()) return completion;
  ++(completion.status == wire::Status::kTimeout ? run.timeouts : run.errors);
  return std::nullopt;
}

void SoakWorkload::reset_counters(SoakRun& run) {
  const std::size_t gpus = peers_.size();
  for (std::size_t p = 0; p < gpus; ++p) {
    const auto peer = static_cast<GpuId>(p);
    if (peer == node_.self()) continue;
    GpuId dst = 0;
    std::uint64_t address = 0;
    if (!translate(peer, counter_offset(), Access::kAtomic, dst, address)) {
      ++run.errors;
      continue;
    }
    node_.endpoint().requester().atomic(dst, address, AtomicOp::kSwap, 8, 0, 0, monotonic_now_ns(),
                                        node_.effects());
    wait_one(run);
  }
}

void SoakWorkload::sweep(SoakRun& run) {
  Requester& requester = node_.endpoint().requester();
  for (std::size_t p = 0; p < peers_.size(); ++p) {
    const auto peer = static_cast<GpuId>(p);
    if (peer == node_.self()) continue;
    PeerModel& model = peers_[peer];
    for (std::size_t first = 0; first < kWordsPerPeer; first += kSweepChunkWords) {
      const std::uint64_t window_addr = bench_.window_address(peer, word_offset(first));
      if (!node_.address_map()
               .translate(window_addr, 8 * kSweepChunkWords, Access::kRead, segments_)
               .ok() ||
          segments_.size() != 1) {
        ++run.errors;
        continue;
      }
      requester.read(segments_.front().dst_gpu, segments_.front().remote_addr, 8 * kSweepChunkWords,
                     monotonic_now_ns(), node_.effects());
      const std::optional<Completion> chunk = wait_one(run);
      if (!chunk) continue;
      for (std::size_t w = 0; w < kSweepChunkWords; ++w) {
        const std::size_t word = first + w;
        if (model.state[word] == WordState::kUnknown) continue;
        const std::uint64_t got = to_u64(std::span(chunk->data).subspan(8 * w, 8));
        if (got != model.value[word]) {
          ++run.mismatches;
        } else if (model.state[word] == WordState::kUnconfirmed) {
          ++run.verified_ops;  // the last store to this word, read back at last
        }
      }
    }
    // The counter must hold exactly the number of fetch-adds issued to it.
    GpuId dst = 0;
    std::uint64_t address = 0;
    if (!translate(peer, counter_offset(), Access::kRead, dst, address)) continue;
    requester.read(dst, address, 8, monotonic_now_ns(), node_.effects());
    if (const std::optional<Completion> counter = wait_one(run)) {
      ++(to_u64(counter->data) == model.counter_next ? run.verified_ops : run.mismatches);
    }
  }
}

SoakRun SoakWorkload::run(std::uint64_t ops, std::uint64_t seed, std::uint32_t outstanding) {
  SoakRun run;
  const std::size_t gpus = node_.endpoint().config().gpu_macs.size();
  peers_.assign(gpus, PeerModel{std::vector<std::uint64_t>(kWordsPerPeer, 0),
                                std::vector<WordState>(kWordsPerPeer, WordState::kUnknown), 0});
  pending_.clear();
  if (gpus < 2) return run;
  reset_counters(run);

  Requester& requester = node_.endpoint().requester();
  std::mt19937_64 random(seed * 1'000'003 + node_.self());
  std::uniform_int_distribution<std::size_t> pick_peer(1, gpus - 1);
  std::uniform_int_distribution<std::size_t> pick_word(0, kWordsPerPeer - 1);
  std::uniform_int_distribution<int> pick_kind(0, 99);
  std::uint64_t issued = 0;
  run.start_ns = monotonic_now_ns();
  while (issued < ops || !pending_.empty()) {
    while (issued < ops && pending_.size() < outstanding && requester.free_tags() > 0) {
      const auto peer = static_cast<GpuId>((node_.self() + pick_peer(random)) % gpus);
      const std::size_t word = pick_word(random);
      const int kind = pick_kind(random);
      ++issued;
      // 45% stores, 45% loads (of words stored before; else a store), 10% fetch-adds.
      if (kind < 10) {
        issue_atomic(peer, run);
      } else if (kind < 55 && peers_[peer].state[word] != WordState::kUnknown) {
        issue_load(peer, word, run);
      } else {
        issue_store(peer, word, random() | 1, run);
        // A slow or lossy peer holds the writer back here instead of queueing without bound.
        if (run.stores % 16 == 0) node_.wait_for_backlog_below(kBacklogHighWater);
      }
    }
    node_.transmit();
    while (auto completion = requester.take_completion()) settle(*completion, run);
    const bool window_full = pending_.size() >= outstanding || requester.free_tags() == 0;
    if (!pending_.empty() && (issued == ops || window_full)) node_.wait_for_any_completion();
  }
  run.end_ns = monotonic_now_ns();
  // Every posted store has been performed once a flush to its destination completes.
  for (std::size_t p = 0; p < gpus; ++p) {
    if (p == node_.self()) continue;
    requester.flush(static_cast<GpuId>(p), monotonic_now_ns(), node_.effects());
    wait_one(run);
  }
  sweep(run);
  return run;
}

}  // namespace ethx
