#include "fabric/workloads/roce_bench_workloads.hpp"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "fabric/workloads/memory_pattern.hpp"

namespace ethx {
namespace {

// The scratch buffer's lower half holds WRITE sources and READ sinks of the timed loops; the
// upper half is where verification READs land, so checking never disturbs a source.
constexpr std::size_t kVerifyChunkBytes = std::size_t{64} * 1024;
constexpr std::size_t kCompletionBatch = 256;
constexpr std::uint32_t kAllToAllWriteBytes = 4096;
constexpr std::uint32_t kAllToAllOutstanding = 32;

std::size_t half_scratch(NodeRuntime& node) {
  return node.roce().scratch().size() / 2;
}

void check_bytes(std::uint32_t bytes, std::size_t limit) {
  if (bytes == 0 || bytes % 8 != 0 || bytes > limit) {
    throw std::invalid_argument("bytes: " + std::to_string(bytes) +
                                " must be a non-zero multiple of 8 up to " + std::to_string(limit));
  }
}

}  // namespace

RoceBenchWorkloads::RoceBenchWorkloads(NodeRuntime& node, const BenchLayout& layout)
    : node_(node), layout_(layout), polled_(kCompletionBatch) {}

roce::SendWr RoceBenchWorkloads::make_wr(RoceOp op, std::uint64_t wr_id, std::uint64_t local_offset,
                                         std::uint32_t bytes, std::uint64_t remote_offset,
                                         std::uint32_t rkey) const {
  roce::SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = op == RoceOp::kWrite ? roce::WrOpcode::kRdmaWrite : roce::WrOpcode::kRdmaRead;
  wr.sg_list.push_back(
      roce::Sge{node_.roce().scratch_addr() + local_offset, bytes, node_.roce().scratch_lkey()});
  wr.remote_addr = remote_offset;  // the peer registered its HBM with iova 0
  wr.rkey = rkey;
  return wr;
}

void RoceBenchWorkloads::wait_completions(std::vector<roce::WorkCompletion>& out) {
  RoceHost& roce = node_.roce();
  out.resize(kCompletionBatch);
  node_.transmit();
  for (;;) {
    const std::size_t got = roce.node().poll_cq(roce.cq(), out);
    if (got > 0) {
      out.resize(got);
      return;
    }
    node_.check_stop();
    // Returns when frames arrive (the ACKs and READ responses that complete WRs) or at the
    // engine's next timer; a lost ACK ends in a retransmission or a kRetryExceeded completion.
    node_.pump(50'000'000);
  }
}

void RoceBenchWorkloads::count_error(const roce::WorkCompletion& completion,
                                     std::uint64_t& errors) {
  ++errors;
  if (first_error_.empty()) first_error_ = roce::to_string(completion.status);
}

void RoceBenchWorkloads::post_or_count(roce::QpNum qpn, const roce::SendWr& wr,
                                       ThroughputRun& run) {
  if (node_.roce().node().post_send(qpn, wr) != roce::PostResult::kOk) ++run.errors;
}

void RoceBenchWorkloads::ring(roce::QpNum qpn) {
  RoceHost& roce = node_.roce();
  roce.node().ring_doorbell(qpn, monotonic_now_ns(), roce.effects());
  node_.transmit();
}

std::uint64_t RoceBenchWorkloads::write_region(std::uint64_t total_bytes,
                                               std::uint32_t bytes) const {
  return std::max<std::uint64_t>(bytes, std::min(total_bytes, layout_.store_bytes) / bytes * bytes);
}

void RoceBenchWorkloads::verify_remote(GpuId peer, std::uint64_t offset, std::uint64_t bytes,
                                       std::uint64_t salt, ThroughputRun& run) {
  const RoceConnection& connection = node_.roce().connections(peer).front();
  const std::size_t sink = half_scratch(node_);
  for (std::uint64_t done = 0; done < bytes; done += kVerifyChunkBytes) {
    const auto chunk =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(kVerifyChunkBytes, bytes - done));
    const roce::SendWr wr =
        make_wr(RoceOp::kRead, done, sink, chunk, offset + done, connection.remote_rkey);
    if (node_.roce().node().post_send(connection.qpn, wr) != roce::PostResult::kOk) {
      ++run.errors;
      continue;
    }
    ring(connection.qpn);
    wait_completions(polled_);
    if (!polled_.front().ok()) {
      count_error(polled_.front(), run.errors);
      continue;
    }
    const auto data = node_.roce().scratch().subspan(sink, chunk);
    run.mismatches += pattern_mismatches(data, peer, offset + done, salt) > 0 ? 1 : 0;
  }
}

LatencyRun RoceBenchWorkloads::latency(GpuId peer, RoceOp op, std::uint32_t bytes,
                                       std::uint32_t count, std::uint64_t seed) {
  check_bytes(bytes, half_scratch(node_));
  const RoceConnection& connection = node_.roce().connections(peer).front();
  LatencyRun run;
  run.samples_ns.reserve(count);
  std::mt19937_64 random(seed);
  const std::uint64_t slots = layout_.store_bytes / bytes;
  const std::uint64_t pattern_slots = layout_.pattern_bytes / bytes;
  const auto source = node_.roce().scratch().first(bytes);
  for (std::uint32_t i = 0; i < count; ++i) {
    // WRITEs land in distinct slots of the store area (each holds its own pattern, so the
    // final read-back shows a misplaced WRITE); READs pick random pattern words.
    const std::uint64_t offset = op == RoceOp::kWrite
                                     ? layout_.store_offset + (i % slots) * bytes
                                     : layout_.pattern_offset + (random() % pattern_slots) * bytes;
    if (op == RoceOp::kWrite) fill_pattern(source, peer, offset, seed);
    const roce::SendWr wr = make_wr(op, i, 0, bytes, offset, connection.remote_rkey);
    const TimeNs start = monotonic_now_ns();
    if (node_.roce().node().post_send(connection.qpn, wr) != roce::PostResult::kOk) {
      ++run.errors;
      break;
    }
    ring(connection.qpn);
    wait_completions(polled_);
    const TimeNs end = monotonic_now_ns();
    if (!polled_.front().ok()) {
      count_error(polled_.front(), run.errors);
      break;  // an RC QP in the error state flushes everything after
    }
    run.samples_ns.push_back(end - start);
    if (op == RoceOp::kRead) {
      ++run.verified_ops;
      run.mismatches += pattern_mismatches(source, peer, offset, kPatternSalt) > 0 ? 1 : 0;
    }
  }
  if (op == RoceOp::kWrite && !run.samples_ns.empty()) {
    ThroughputRun check;
    const std::uint64_t written = std::min<std::uint64_t>(run.samples_ns.size(), slots) * bytes;
    verify_remote(peer, layout_.store_offset, written, seed, check);
    run.mismatches += check.mismatches;
    run.errors += check.errors;
    run.verified_ops = check.mismatches + check.errors == 0 ? run.samples_ns.size() : 0;
  }
  return run;
}

ThroughputRun RoceBenchWorkloads::bandwidth(GpuId peer, RoceOp op, std::uint32_t bytes,
                                            std::uint64_t total_bytes, std::uint32_t outstanding,
                                            std::uint64_t salt) {
  check_bytes(bytes, half_scratch(node_));
  const RoceConnection& connection = node_.roce().connections(peer).front();
  const std::size_t depth = std::clamp<std::size_t>(outstanding, 1, half_scratch(node_) / bytes);
  const std::uint64_t region = write_region(total_bytes, bytes);
  const std::uint64_t pattern_slots = std::max<std::uint64_t>(1, layout_.pattern_bytes / bytes);
  const std::uint64_t total_ops = std::max<std::uint64_t>(1, total_bytes / bytes);
  std::vector<std::size_t> free_slots;
  for (std::size_t slot = depth; slot-- > 0;) free_slots.push_back(slot);
  std::unordered_map<std::uint64_t, Outstanding> inflight;
  ThroughputRun run;
  std::uint64_t issued = 0;
  run.start_ns = monotonic_now_ns();
  while (run.ops < total_ops) {
    bool posted = false;
    while (issued < total_ops && !free_slots.empty()) {
      const std::size_t slot = free_slots.back();
      free_slots.pop_back();
      const std::uint64_t offset = op == RoceOp::kWrite
                                       ? layout_.store_offset + (issued * bytes) % region
                                       : layout_.pattern_offset + (issued % pattern_slots) * bytes;
      const std::uint64_t local = slot * bytes;
      if (op == RoceOp::kWrite) {
        fill_pattern(node_.roce().scratch().subspan(local, bytes), peer, offset, salt);
      }
      post_or_count(connection.qpn,
                    make_wr(op, issued, local, bytes, offset, connection.remote_rkey), run);
      inflight[issued] = Outstanding{offset, slot, bytes};
      ++issued;
      posted = true;
    }
    if (posted) ring(connection.qpn);  // one doorbell for everything posted this round
    wait_completions(polled_);
    for (const roce::WorkCompletion& completion : polled_) {
      const auto found = inflight.find(completion.wr_id);
      if (found == inflight.end()) continue;
      const Outstanding done = found->second;
      inflight.erase(found);
      free_slots.push_back(done.scratch_slot);
      ++run.ops;
      if (!completion.ok()) {
        count_error(completion, run.errors);
        continue;
      }
      run.payload_bytes += done.bytes;
      if (op == RoceOp::kRead) {
        const auto data = node_.roce().scratch().subspan(done.scratch_slot * bytes, bytes);
        run.mismatches += pattern_mismatches(data, peer, done.remote_offset, kPatternSalt) > 0;
        ++run.verified_ops;
      }
    }
    if (run.errors > 0 && inflight.empty() && issued == total_ops) break;
  }
  run.end_ns = monotonic_now_ns();
  if (op == RoceOp::kWrite) {
    const std::uint64_t before = run.mismatches + run.errors;
    const std::uint64_t checked = std::min(region, total_ops * bytes);
    verify_remote(peer, layout_.store_offset, checked, salt, run);
    run.verified_ops = run.mismatches + run.errors == before ? checked / bytes : 0;
  }
  return run;
}

ThroughputRun RoceBenchWorkloads::message_rate(GpuId peer, const RoceRateParams& params) {
  check_bytes(params.bytes, half_scratch(node_));
  if (params.batch == 0) throw std::invalid_argument("batch: must be at least 1");
  const std::vector<RoceConnection>& connections = node_.roce().connections(peer);
  const std::uint32_t bytes = params.bytes;
  // Every slot has its own source bytes, filled before the clock starts: the loop measures
  // posting, doorbells and the wire, not pattern generation.
  const std::uint64_t slots =
      std::max<std::uint64_t>(1, std::min<std::uint64_t>({params.count, layout_.store_bytes / bytes,
                                                          half_scratch(node_) / bytes}));
  for (std::uint64_t slot = 0; slot < slots; ++slot) {
    fill_pattern(node_.roce().scratch().subspan(slot * bytes, bytes), peer,
                 layout_.store_offset + slot * bytes, params.salt);
  }
  const std::uint64_t outstanding = std::max<std::uint64_t>(params.outstanding, params.batch);
  ThroughputRun run;
  std::uint64_t issued = 0;
  std::uint64_t inflight = 0;
  std::size_t next_qp = 0;
  run.start_ns = monotonic_now_ns();
  while (run.ops < params.count) {
    // Post whole batches only, then one doorbell per batch (per QP, as a NIC's doorbell is).
    while (issued < params.count) {
      const std::uint64_t n = std::min<std::uint64_t>(params.batch, params.count - issued);
      if (inflight + n > outstanding) break;
      const roce::QpNum qpn = connections[next_qp].qpn;
      const std::uint32_t rkey = connections[next_qp].remote_rkey;
      next_qp = (next_qp + 1) % connections.size();
      for (std::uint64_t k = 0; k < n; ++k, ++issued) {
        const std::uint64_t slot = issued % slots;
        post_or_count(qpn,
                      make_wr(RoceOp::kWrite, issued, slot * bytes, bytes,
                              layout_.store_offset + slot * bytes, rkey),
                      run);
      }
      inflight += n;
      ring(qpn);
    }
    wait_completions(polled_);
    for (const roce::WorkCompletion& completion : polled_) {
      --inflight;
      ++run.ops;
      if (!completion.ok()) {
        count_error(completion, run.errors);
      } else {
        run.payload_bytes += bytes;
      }
    }
    if (run.errors > 0 && inflight == 0) break;
  }
  run.end_ns = monotonic_now_ns();
  const std::uint64_t before = run.mismatches + run.errors;
  verify_remote(peer, layout_.store_offset, slots * bytes, params.salt, run);
  run.verified_ops = run.mismatches + run.errors == before ? run.ops : 0;
  return run;
}

ThroughputRun RoceBenchWorkloads::all_to_all_write(std::uint64_t bytes_per_peer,
                                                   std::uint64_t salt) {
  const std::size_t gpus = node_.endpoint().config().gpu_macs.size();
  const std::uint64_t bytes = std::min(bytes_per_peer, layout_.all_to_all_slice_bytes);
  const std::uint64_t my_slice =
      layout_.all_to_all_offset + layout_.all_to_all_slice_bytes * node_.self();
  std::vector<std::size_t> free_slots;
  for (std::size_t slot = kAllToAllOutstanding; slot-- > 0;) free_slots.push_back(slot);
  ThroughputRun run;
  std::uint64_t next_id = 0;
  std::size_t inflight = 0;
  std::unordered_map<std::uint64_t, std::size_t> slot_of;
  auto drain = [&] {
    wait_completions(polled_);
    for (const roce::WorkCompletion& completion : polled_) {
      --inflight;
      free_slots.push_back(slot_of[completion.wr_id]);
      slot_of.erase(completion.wr_id);
      if (!completion.ok()) count_error(completion, run.errors);
    }
  };
  run.start_ns = monotonic_now_ns();
  // Destinations interleaved, as in the load/store all-to-all, so every link is busy at once.
  for (std::uint64_t done = 0; done < bytes; done += kAllToAllWriteBytes) {
    const auto piece =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(kAllToAllWriteBytes, bytes - done));
    for (std::size_t step = 1; step < gpus; ++step) {
      const auto peer = static_cast<GpuId>((node_.self() + step) % gpus);
      while (free_slots.empty()) drain();
      const std::size_t slot = free_slots.back();
      free_slots.pop_back();
      const std::uint64_t offset = my_slice + done;
      const std::uint64_t local = slot * kAllToAllWriteBytes;
      fill_pattern(node_.roce().scratch().subspan(local, piece), peer, offset, salt);
      const RoceConnection& connection = node_.roce().connections(peer).front();
      slot_of[next_id] = slot;
      post_or_count(
          connection.qpn,
          make_wr(RoceOp::kWrite, next_id++, local, piece, offset, connection.remote_rkey), run);
      ++inflight;
      ring(connection.qpn);
      ++run.ops;
      run.payload_bytes += piece;
    }
  }
  while (inflight > 0) drain();
  run.end_ns = monotonic_now_ns();
  return run;
}

ThroughputRun RoceBenchWorkloads::all_to_all_verify(std::uint64_t bytes_per_peer,
                                                    std::uint64_t salt) {
  const std::size_t gpus = node_.endpoint().config().gpu_macs.size();
  const std::uint64_t bytes = std::min(bytes_per_peer, layout_.all_to_all_slice_bytes);
  const std::uint64_t my_slice =
      layout_.all_to_all_offset + layout_.all_to_all_slice_bytes * node_.self();
  ThroughputRun run;
  run.start_ns = monotonic_now_ns();
  for (std::size_t step = 1; step < gpus; ++step) {
    const auto peer = static_cast<GpuId>((node_.self() + step) % gpus);
    const std::uint64_t before = run.mismatches + run.errors;
    verify_remote(peer, my_slice, bytes, salt, run);
    run.verified_ops += run.mismatches + run.errors == before
                            ? (bytes + kAllToAllWriteBytes - 1) / kAllToAllWriteBytes
                            : 0;
  }
  run.end_ns = monotonic_now_ns();
  return run;
}

BadRkeyProbe RoceBenchWorkloads::bad_rkey_probe(GpuId peer, std::uint32_t bytes) {
  check_bytes(bytes, half_scratch(node_));
  const std::vector<RoceConnection>& connections = node_.roce().connections(peer);
  if (connections.size() < 3) {
    throw std::invalid_argument("peer: bad_rkey_probe needs 3 connected QPs to GPU " +
                                std::to_string(peer));
  }
  BadRkeyProbe probe;
  const std::uint64_t target = layout_.pattern_offset;
  auto one = [&](const RoceConnection& connection, RoceOp op, std::uint32_t rkey) {
    if (op == RoceOp::kWrite) {
      // Data that differs from the pattern everywhere, so a write that got through shows.
      fill_pattern(node_.roce().scratch().first(bytes), peer, target, kPatternSalt + 1);
    }
    node_.roce().node().post_send(connection.qpn, make_wr(op, 0, 0, bytes, target, rkey));
    ring(connection.qpn);
    wait_completions(polled_);
    return polled_.front().status;
  };
  // A key the peer never issued: keys are (index << 8) | a fixed tag (roce_memory.cpp), and
  // this changes the tag.
  probe.read_status = one(connections[0], RoceOp::kRead, connections[0].remote_rkey ^ 0xA5);
  probe.write_status = one(connections[1], RoceOp::kWrite, connections[1].remote_rkey ^ 0xA5);
  if (one(connections[2], RoceOp::kRead, connections[2].remote_rkey) != roce::WcStatus::kSuccess) {
    ++probe.errors;
  } else {
    probe.target_mismatches =
        pattern_mismatches(node_.roce().scratch().first(bytes), peer, target, kPatternSalt);
  }
  return probe;
}

}  // namespace ethx
