// The conclusions of `ethx compare` (compare_report.hpp): one finding per sentence, each built
// from the measured (and modelled) numbers. One function per kind of finding, each from the
// systems it compares to its sentences; compare_conclusions() lists them in report order.
#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include "fabric/bench/compare_wire.hpp"
#include "fabric/compare/compare_report.hpp"
#include "fabric/compare/compare_systems.hpp"
#include "fabric/compare/compare_text.hpp"
#include "fabric/compare/shmem_systems.hpp"

namespace ethx {
namespace {

using nlohmann::json;
using Sentences = std::vector<std::string>;

void append(Sentences& out, Sentences more) {
  out.insert(out.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
}

// The sizes at which `rows_of` measured `op` latency and `other` measured `other_op`, sorted
// (in the order of `rows_of`'s rows before sorting, duplicates kept).
std::vector<std::uint64_t> common_latency_sizes(const json& rows_of, const std::string& op,
                                                const json& other, const std::string& other_op) {
  std::vector<std::uint64_t> common;
  for (const json& row : rows_of["latency_us"]) {
    const auto bytes = row.value("bytes", std::uint64_t{0});
    if (row.value("op", std::string()) == op && find_latency(other, other_op, bytes)) {
      common.push_back(bytes);
    }
  }
  std::sort(common.begin(), common.end());
  return common;
}

// The largest size at which `a` measured `a_op` bandwidth and `b` measured `b_op`.
std::optional<std::uint64_t> largest_common_bandwidth_size(const json& a, const std::string& a_op,
                                                           const json& b, const std::string& b_op) {
  std::optional<std::uint64_t> largest;
  for (const json& row : a["bandwidth_gbps"]) {
    const auto bytes = row.value("bytes", std::uint64_t{0});
    if (row.value("op", std::string()) == a_op && find_bandwidth(b, b_op, bytes) &&
        (!largest || bytes > *largest)) {
      largest = bytes;
    }
  }
  return largest;
}

// The largest size at which `system` measured `op` bandwidth.
std::optional<std::uint64_t> largest_bandwidth_size(const json& system, const std::string& op) {
  std::optional<std::uint64_t> found;
  for (const json& row : system["bandwidth_gbps"]) {
    const auto bytes = row.value("bytes", std::uint64_t{0});
    if (row.value("op", std::string()) == op && (!found || bytes > *found)) found = bytes;
  }
  return found;
}

// The systems the host processes' load/store is held against: every other measured one but
// the same-VM load/store, whose guest pays TCG and QEMU (it has its own comparison).
std::vector<const json*> load_store_rivals(const std::vector<json>& systems) {
  std::vector<const json*> rivals;
  for (const json& other : systems) {
    if (system_available(other) && system_name(other) != kSystemLoadStore &&
        system_name(other) != kSystemLoadStoreVm) {
      rivals.push_back(&other);
    }
  }
  return rivals;
}

// Latency: load/store loads against every rival's one-sided ops, smallest and largest common
// size.
Sentences load_latency_conclusions(const json& ls, const std::vector<json>& systems) {
  Sentences out;
  for (const json* other : load_store_rivals(systems)) {
    for (const char* op : {"write", "read"}) {
      const std::vector<std::uint64_t> common = common_latency_sizes(*other, op, ls, "load");
      if (common.empty()) continue;
      std::vector<std::uint64_t> picks{common.front()};
      if (common.back() != common.front()) picks.push_back(common.back());
      for (std::uint64_t bytes : picks) {
        const SizedLatency load = *find_latency(ls, "load", bytes);
        const SizedLatency theirs = *find_latency(*other, op, bytes);
        out.push_back("For " + size_label(bytes) + ", the load/store load p50 was " +
                      sig3(load.p50_us) + " µs vs " + sig3(theirs.p50_us) + " µs for " +
                      system_name(*other) + " " + op + " (" +
                      ratio_words("load/store", load.p50_us, theirs.p50_us, "lower", "higher") +
                      "); p99 " + sig3(load.p99_us) + " µs vs " + sig3(theirs.p99_us) + " µs.");
      }
    }
  }
  return out;
}

// Bandwidth at the largest size both measured.
Sentences bandwidth_conclusions(const json& ls, const std::vector<json>& systems) {
  Sentences out;
  for (const json* other : load_store_rivals(systems)) {
    for (const char* op : {"write", "read"}) {
      const std::optional<std::uint64_t> largest =
          largest_common_bandwidth_size(*other, op, ls, op);
      if (!largest) continue;
      const double ours = *find_bandwidth(ls, op, *largest);
      const double theirs = *find_bandwidth(*other, op, *largest);
      out.push_back(
          "At " + size_label(*largest) + " per transfer, load/store " +
          (std::string(op) == "write" ? "posted stores" : "loads") + " moved " + sig3(ours) +
          " Gbit/s vs " + sig3(theirs) + " Gbit/s for " + system_name(*other) + " " + op + " (" +
          ratio_words("load/store", ours, theirs, "lower", "higher") + ") in this emulator.");
    }
  }
  return out;
}

constexpr const char* kSameVmWho = "same-VM load/store";

Sentences same_vm_latency_conclusions(const json& vm_ls, const json& soft) {
  Sentences out;
  const auto load = find_latency(vm_ls, "load", 8);
  if (!load) return out;
  for (const char* op : {"read", "write"}) {
    const auto theirs = find_latency(soft, op, 8);
    if (!theirs) continue;
    out.push_back("In the same 2 VMs, an 8 B load through the ethx-gpu window took " +
                  sig3(load->p50_us) + " µs p50 (p99 " + sig3(load->p99_us) + ") vs " +
                  sig3(theirs->p50_us) + " µs (p99 " + sig3(theirs->p99_us) +
                  ") for a Soft-RoCE 8 B " + op + " (" +
                  ratio_words(kSameVmWho, load->p50_us, theirs->p50_us, "lower", "higher") + ").");
  }
  return out;
}

// Bandwidth at the largest size both measured; else each side's largest measured transfer
// (the sizes are named: they differ).
Sentences same_vm_bandwidth_conclusions(const json& vm_ls, const json& soft) {
  Sentences out;
  for (const auto& [ours_op, their_op, what] :
       std::vector<std::tuple<const char*, const char*, const char*>>{
           {"store", "write", "posted 8 B stores"}, {"copy", "read", "the copy engine"}}) {
    std::optional<std::uint64_t> ours_size =
        largest_common_bandwidth_size(vm_ls, ours_op, soft, their_op);
    std::optional<std::uint64_t> their_size = ours_size;
    if (!ours_size) {
      ours_size = largest_bandwidth_size(vm_ls, ours_op);
      their_size = largest_bandwidth_size(soft, their_op);
    }
    if (!ours_size || !their_size) continue;
    const double ours = *find_bandwidth(vm_ls, ours_op, *ours_size);
    const double theirs = *find_bandwidth(soft, their_op, *their_size);
    out.push_back("In the same 2 VMs, " + std::string(what) + " moved " + sig3(ours) + " Gbit/s (" +
                  size_label(*ours_size) + ") vs " + sig3(theirs) + " Gbit/s for Soft-RoCE " +
                  their_op + " (" + size_label(*their_size) + ") (" +
                  ratio_words(kSameVmWho, ours, theirs, "lower", "higher") + ").");
  }
  return out;
}

// Soft-RoCE against load/store in the same two VMs: the like-for-like pair (both pay the
// guest, TCG and QEMU; see docs/compare.md).
Sentences same_vm_conclusions(const std::vector<json>& systems) {
  const json* vm_ls = find_available_system(systems, kSystemLoadStoreVm);
  const json* soft = find_available_system(systems, kSystemSoftRoce);
  if (vm_ls == nullptr || soft == nullptr) return {};
  Sentences out = same_vm_latency_conclusions(*vm_ls, *soft);
  append(out, same_vm_bandwidth_conclusions(*vm_ls, *soft));
  return out;
}

constexpr const char* kShmemPair = "The same OpenSHMEM binary in the same VMs: ";

// Latency of the smallest and the largest common size of each op.
Sentences shmem_latency_conclusions(const json& ls, const json& rdma) {
  Sentences out;
  for (const char* op : {"get", "put", "fetch-add"}) {
    const std::vector<std::uint64_t> common = common_latency_sizes(ls, op, rdma, op);
    for (std::size_t n = 0; n < common.size(); n += std::max<std::size_t>(common.size() - 1, 1)) {
      const SizedLatency ours = *find_latency(ls, op, common[n]);
      const SizedLatency theirs = *find_latency(rdma, op, common[n]);
      out.push_back(
          kShmemPair + std::string(op) + " of " + size_label(common[n]) + " took " +
          sig3(ours.p50_us) + " µs p50 (p99 " + sig3(ours.p99_us) + ") over load/store vs " +
          sig3(theirs.p50_us) + " µs (p99 " + sig3(theirs.p99_us) + ") over RDMA (" +
          ratio_words("load/store", ours.p50_us, theirs.p50_us, "lower", "higher") + ").");
    }
  }
  return out;
}

// Bandwidth at the largest common size of puts and of gets.
Sentences shmem_bandwidth_conclusions(const json& ls, const json& rdma) {
  Sentences out;
  for (const char* op : {"put", "get"}) {
    const std::optional<std::uint64_t> largest = largest_common_bandwidth_size(ls, op, rdma, op);
    if (!largest) continue;
    const double ours = *find_bandwidth(ls, op, *largest);
    const double theirs = *find_bandwidth(rdma, op, *largest);
    out.push_back(kShmemPair + std::string(op) + "s of " + size_label(*largest) + " moved " +
                  sig3(ours) + " Gbit/s over load/store vs " + sig3(theirs) +
                  " Gbit/s over RDMA (" +
                  ratio_words("load/store", ours, theirs, "lower", "higher") + ").");
  }
  return out;
}

// The OpenSHMEM pair: one binary over load/store and over RDMA in the same VMs (latency of
// 8 B and of the largest common size, bandwidth at the largest common size, the fetch-add).
Sentences shmem_conclusions(const std::vector<json>& systems) {
  const json* ls = find_available_system(systems, kSystemShmemLoadStore);
  const json* rdma = find_available_system(systems, kSystemShmemRdma);
  if (ls == nullptr || rdma == nullptr) return {};
  Sentences out = shmem_latency_conclusions(*ls, *rdma);
  append(out, shmem_bandwidth_conclusions(*ls, *rdma));
  return out;
}

// Wire efficiency, from the encoders: the first size and 64 B.
Sentences wire_conclusions(const CompareInputs& inputs) {
  Sentences out;
  for (std::uint32_t bytes : inputs.wire_sizes) {
    if (bytes != 64 && bytes != inputs.wire_sizes.front()) continue;
    const TransferWireCost ours = load_store_write_cost(bytes, inputs.frame_bytes_max);
    const TransferWireCost theirs = roce_write_cost(bytes, inputs.path_mtu_bytes);
    out.push_back("On the wire, a write of " + size_label(bytes) + " is " +
                  percent(ours.efficiency) + " efficient for load/store (" +
                  std::to_string(ours.wire_bytes - bytes) + " B of overhead) vs " +
                  percent(theirs.efficiency) + " for a RoCEv2 WRITE (" +
                  std::to_string(theirs.wire_bytes - bytes) + " B of overhead, plus a " +
                  std::to_string(theirs.reverse_wire_bytes) + " B ACK back).");
  }
  return out;
}

// Doorbell batching of the RoCE engine: its fewest against its most WRs per doorbell, next to
// load/store's posted 8 B stores when those were measured (`ls` may be null).
Sentences doorbell_batching_conclusions(const json& roce, const json* ls) {
  std::vector<std::uint64_t> batches;
  for (const json& row : roce["message_rate_mops"]) {
    batches.push_back(row.value("batch", std::uint64_t{1}));
  }
  std::sort(batches.begin(), batches.end());
  if (batches.size() < 2) return {};
  const double one = *find_message_rate(roce, batches.front());
  const double many = *find_message_rate(roce, batches.back());
  std::string sentence = "Posting " + std::to_string(batches.back()) +
                         " WRITEs per doorbell instead of " + std::to_string(batches.front()) +
                         " changed the RoCE engine's 8 B message rate from " + sig3(one) + " to " +
                         sig3(many) + " Mops/s (" +
                         ratio_words("batched", many, one, "lower", "higher") + ")";
  if (ls != nullptr) {
    if (const auto stores = find_message_rate(*ls, 1)) {
      sentence += "; load/store posted 8 B stores ran at " + sig3(*stores) + " Mops/s";
    }
  }
  return {sentence + "."};
}

// Connection state of the RoCE engine: its fewest against its most queue pairs.
Sentences connection_state_conclusions(const json& roce) {
  const json& many_qps = roce.value("many_qps", json::array());
  if (many_qps.size() < 2) return {};
  const json& first = many_qps.front();
  const json& last = many_qps.back();
  return {"Connection state grew from " +
          std::to_string(first["state_bytes_total"].get<std::uint64_t>()) + " B with " +
          std::to_string(first["qps"].get<std::uint64_t>()) + " QP to " +
          std::to_string(last["state_bytes_total"].get<std::uint64_t>()) + " B with " +
          std::to_string(last["qps"].get<std::uint64_t>()) + " QPs (" +
          std::to_string(last["state_bytes_per_qp"].get<std::uint64_t>()) +
          " B per QP); the 8 B message rate went from " +
          sig3(first["message_rate_mops"].get<double>()) + " to " +
          sig3(last["message_rate_mops"].get<double>()) +
          " Mops/s. Load/store keeps no per-peer connection state beyond its link sequence "
          "numbers."};
}

std::optional<double> model_value(const json& model, const char* list, const char* system,
                                  const char* op, std::uint64_t bytes, const char* field) {
  if (!model.is_object() || !model.contains(list)) return std::nullopt;
  for (const json& row : model[list]) {
    if (row["system"] == system && row["op"] == op && row["bytes"] == bytes) {
      return row[field].get<double>();
    }
  }
  return std::nullopt;
}

// The hardware model: an 8 B load against an 8 B RoCEv2 READ, both in ethx sim.
Sentences model_conclusions(const json& model) {
  if (model.is_null()) return {};
  const auto load = model_value(model, "latency_ns", kSystemLoadStore, "load", 8, "ns");
  const auto read = model_value(model, "latency_ns", kSystemRoceEngine, "read", 8, "ns");
  if (!load || !read) return {};
  return {"In the hardware model (ethx sim), an 8 B load takes " + sig3(*load) + " ns vs " +
          sig3(*read) + " ns for a RoCEv2 READ (" +
          ratio_words("load/store", *load, *read, "lower", "higher") + "); the READ pays the " +
          model["parameters"].value("rnic_doorbell_ns", json(0)).dump() +
          " ns MMIO doorbell and the NIC's PCIe round trips that a load does not."};
}

// The scale rows of one workload and system, by GPU count.
std::vector<const json*> scale_rows(const json& model, const char* workload, const char* system) {
  std::vector<const json*> rows;
  if (!model.is_object() || !model.contains("scale")) return rows;
  for (const json& row : model["scale"]["rows"]) {
    if (row["workload"] == workload && row["system"] == system) rows.push_back(&row);
  }
  return rows;
}

// The last (largest GPU count) load/store and RoCEv2 rows of a scale workload, if both ran.
std::optional<std::pair<const json*, const json*>> largest_pair(const json& model,
                                                                const char* workload) {
  const auto ls = scale_rows(model, workload, kSystemLoadStore);
  const auto roce = scale_rows(model, workload, kSystemRoceEngine);
  if (ls.empty() || ls.size() != roce.size()) return std::nullopt;
  return std::make_pair(ls.back(), roce.back());
}

Sentences all_to_all_conclusion(const json& model) {
  const auto pair = largest_pair(model, "all-to-all");
  if (!pair) return {};
  const json& ls = *pair->first;
  const json& roce = *pair->second;
  const double ours = ls["completion_us"].get<double>();
  const double theirs = roce["completion_us"].get<double>();
  return {"At " + ls["gpus"].dump() + " GPUs, a 4 KiB all-to-all completes in " + sig3(ours) +
          " µs over load/store vs " + sig3(theirs) + " µs over RoCEv2 (" +
          ratio_words("load/store", ours, theirs, "faster", "slower") +
          "); RoCEv2's NIC misses its QP-context cache on " +
          percent(roce["qpc_miss_rate"].get<double>()) + " of lookups and each GPU holds " +
          sig3(roce["connection_state_bytes_per_gpu"].get<double>() / 1024.0) +
          " KiB of QP state."};
}

Sentences incast_conclusion(const json& model) {
  const auto pair = largest_pair(model, "incast");
  if (!pair) return {};
  auto outcome = [](const json& row) {
    return sig3(row["completion_us"].get<double>()) + " µs with " + row["ops_failed"].dump() +
           " failed ops and " + row["drops"].dump() + " frames dropped";
  };
  return {"Incast at " + pair->first->at("gpus").dump() +
          " GPUs (4 KiB each into GPU 0): load/store finished in " + outcome(*pair->first) +
          " at full queues, RoCEv2 in " + outcome(*pair->second) + "."};
}

// How the 8 B message rate over every peer moved from the smallest to the largest count.
Sentences message_rate_conclusion(const json& model) {
  const auto ls = scale_rows(model, "message-rate", kSystemLoadStore);
  const auto roce = scale_rows(model, "message-rate", kSystemRoceEngine);
  if (ls.size() < 2 || roce.size() < 2) return {};
  auto words = [](const json& first, const json& last) {
    return sig3(first["mops"].get<double>()) + " Mops/s at " + first["gpus"].dump() + " GPUs to " +
           sig3(last["mops"].get<double>()) + " at " + last["gpus"].dump();
  };
  return {"With 8 B writes to every peer, RoCEv2's message rate per GPU goes from " +
          words(*roce.front(), *roce.back()) + " (QPC miss rate " +
          percent((*roce.back())["qpc_miss_rate"].get<double>()) + "); load/store's from " +
          words(*ls.front(), *ls.back()) + "."};
}

// Systems that were not measured, or whose figures were not verified, and why.
Sentences status_conclusions(const std::vector<json>& systems) {
  Sentences out;
  for (const json& system : systems) {
    if (!system_available(system)) {
      out.push_back(system_name(system) + " was not measured: " +
                    system.value("reason", std::string("no reason given")) + ".");
    } else if (!system.value("verified", false)) {
      out.push_back(system_name(system) +
                    "'s figures are NOT verified: its data checks failed or "
                    "did not run.");
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> compare_conclusions(const CompareInputs& inputs) {
  Sentences out;
  const json* ls = find_available_system(inputs.systems, kSystemLoadStore);
  if (ls != nullptr) {
    append(out, load_latency_conclusions(*ls, inputs.systems));
    append(out, bandwidth_conclusions(*ls, inputs.systems));
  }
  append(out, same_vm_conclusions(inputs.systems));
  append(out, shmem_conclusions(inputs.systems));
  append(out, wire_conclusions(inputs));
  if (const json* roce = find_available_system(inputs.systems, kSystemRoceEngine)) {
    append(out, doorbell_batching_conclusions(*roce, ls));
    append(out, connection_state_conclusions(*roce));
  }
  append(out, model_conclusions(inputs.model));
  append(out, all_to_all_conclusion(inputs.model));
  append(out, incast_conclusion(inputs.model));
  append(out, message_rate_conclusion(inputs.model));
  append(out, status_conclusions(inputs.systems));
  return out;
}

}  // namespace ethx
