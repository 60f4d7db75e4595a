#include "fabric/compare/compare_report.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>
#include <tuple>

#include "fabric/bench/compare_wire.hpp"
#include "fabric/compare/compare_systems.hpp"
#include "fabric/compare/shmem_systems.hpp"
#include "packet-engine/roce/roce_wire.hpp"

namespace ethx {
namespace {

using nlohmann::json;

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// Three significant digits at most, never scientific notation: 0.0123, 1.23, 123.
std::string sig3(double value) {
  const double magnitude = std::abs(value);
  if (magnitude >= 100) return fixed(value, 0);
  if (magnitude >= 10) return fixed(value, 1);
  if (magnitude >= 1) return fixed(value, 2);
  if (magnitude >= 0.1) return fixed(value, 3);
  return fixed(value, 4);
}

std::string size_label(std::uint64_t bytes) {
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes / 1024) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string percent(double fraction) {
  return fixed(100.0 * fraction, 1) + " %";
}

bool available(const json& system) {
  return system.value("available", false);
}

std::string name_of(const json& system) {
  return system.value("system", std::string("unnamed"));
}

const json* find_system(const CompareInputs& inputs, const std::string& name) {
  for (const json& system : inputs.systems) {
    if (name_of(system) == name && available(system)) return &system;
  }
  return nullptr;
}

// The distinct ops of a list (latency_us or bandwidth_gbps), in first-seen order.
std::vector<std::string> ops_of(const json& list) {
  std::vector<std::string> ops;
  if (!list.is_array()) return ops;
  for (const json& row : list) {
    const std::string op = row.value("op", std::string());
    if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
  }
  return ops;
}

std::set<std::uint64_t> sizes_of(const std::vector<json>& systems, const char* list) {
  std::set<std::uint64_t> sizes;
  for (const json& system : systems) {
    if (!available(system) || !system.contains(list)) continue;
    for (const json& row : system[list]) sizes.insert(row.value("bytes", std::uint64_t{0}));
  }
  return sizes;
}

// "load/store 3.2× lower" / "... 1.5× higher": how `ours` (named `who`) compares with
// `theirs`.
std::string ratio_words(const std::string& who, double ours, double theirs, const char* less,
                        const char* more) {
  if (ours <= 0 || theirs <= 0) return "not comparable";
  const double ratio = ours < theirs ? theirs / ours : ours / theirs;
  return who + " " + sig3(ratio) + "× " + (ours < theirs ? less : more);
}

void latency_table(std::ostringstream& out, const CompareInputs& inputs) {
  std::vector<std::pair<const json*, std::string>> columns;
  for (const json& system : inputs.systems) {
    if (!available(system)) continue;
    for (const std::string& op : ops_of(system["latency_us"])) columns.emplace_back(&system, op);
  }
  out << "| transfer |";
  for (const auto& [system, op] : columns) out << " " << name_of(*system) << " " << op << " |";
  out << "\n|---:|";
  for (std::size_t n = 0; n < columns.size(); ++n) out << "---:|";
  out << "\n";
  for (std::uint64_t bytes : sizes_of(inputs.systems, "latency_us")) {
    out << "| " << size_label(bytes) << " |";
    for (const auto& [system, op] : columns) {
      const auto found = find_latency(*system, op, bytes);
      out << " " << (found ? sig3(found->p50_us) + " / " + sig3(found->p99_us) : "–") << " |";
    }
    out << "\n";
  }
}

void bandwidth_table(std::ostringstream& out, const CompareInputs& inputs) {
  std::vector<std::pair<const json*, std::string>> columns;
  for (const json& system : inputs.systems) {
    if (!available(system)) continue;
    for (const std::string& op : ops_of(system["bandwidth_gbps"])) {
      columns.emplace_back(&system, op);
    }
  }
  out << "| transfer |";
  for (const auto& [system, op] : columns) out << " " << name_of(*system) << " " << op << " |";
  out << "\n|---:|";
  for (std::size_t n = 0; n < columns.size(); ++n) out << "---:|";
  out << "\n";
  for (std::uint64_t bytes : sizes_of(inputs.systems, "bandwidth_gbps")) {
    out << "| " << size_label(bytes) << " |";
    for (const auto& [system, op] : columns) {
      const auto found = find_bandwidth(*system, op, bytes);
      out << " " << (found ? sig3(*found) : "–") << " |";
    }
    out << "\n";
  }
}

void message_rate_table(std::ostringstream& out, const CompareInputs& inputs) {
  out << "| system | op | bytes | WRs per doorbell | Mops/s |\n|---|---|---:|---:|---:|\n";
  for (const json& system : inputs.systems) {
    if (!available(system) || !system.contains("message_rate_mops")) continue;
    for (const json& row : system["message_rate_mops"]) {
      out << "| " << name_of(system) << " | " << row.value("op", std::string()) << " | "
          << row.value("bytes", 0) << " | " << row.value("batch", 1) << " | "
          << sig3(row.value("mops", 0.0)) << " |\n";
    }
  }
}

void wire_table(std::ostringstream& out, const CompareInputs& inputs) {
  out << "| payload | load/store frames | load/store header B | load/store wire B | "
         "load/store efficiency | RoCEv2 WRITE packets | RoCEv2 WRITE header B | RoCEv2 WRITE "
         "wire B | RoCEv2 WRITE efficiency | RoCEv2 READ response efficiency |\n"
         "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  const json rows = wire_rows(inputs.wire_sizes, inputs.frame_bytes_max, inputs.path_mtu_bytes);
  for (const json& row : rows) {
    const json& ls = row["load_store_write"];
    const json& write = row["roce_write"];
    out << "| " << size_label(row["bytes"].get<std::uint64_t>()) << " | " << ls["packets"] << " | "
        << ls["header_bytes"] << " | " << ls["wire_bytes"] << " | "
        << percent(ls["efficiency"].get<double>()) << " | " << write["packets"] << " | "
        << write["header_bytes"] << " | " << write["wire_bytes"] << " | "
        << percent(write["efficiency"].get<double>()) << " | "
        << percent(row["roce_read"]["efficiency"].get<double>()) << " |\n";
  }
}

void model_tables(std::ostringstream& out, const CompareInputs& inputs) {
  const json& model = inputs.model;
  out << "Modelled latency (ns, idle single switch):\n\n| transfer | load/store load (ethx sim) | "
         "RoCEv2 WRITE (estimate) | RoCEv2 READ (estimate) |\n|---:|---:|---:|---:|\n";
  std::set<std::uint64_t> sizes;
  for (const json& row : model["latency_ns"]) sizes.insert(row["bytes"].get<std::uint64_t>());
  auto lookup = [&](const char* list, const char* system, const char* op, std::uint64_t bytes,
                    const char* field) -> std::string {
    for (const json& row : model[list]) {
      if (row["system"] == system && row["op"] == op && row["bytes"] == bytes) {
        return sig3(row[field].get<double>());
      }
    }
    return "–";
  };
  for (std::uint64_t bytes : sizes) {
    out << "| " << size_label(bytes) << " | "
        << lookup("latency_ns", kSystemLoadStore, "load", bytes, "ns") << " | "
        << lookup("latency_ns", kSystemRoceEngine, "write", bytes, "ns") << " | "
        << lookup("latency_ns", kSystemRoceEngine, "read", bytes, "ns") << " |\n";
  }
  out << "\nModelled bandwidth (Gbit/s, one " << sig3(model["parameters"]["link_rate_gbps"])
      << " Gbit/s link, serialization-bound):\n\n| transfer | load/store posted write | RoCEv2 "
         "WRITE | RoCEv2 READ |\n|---:|---:|---:|---:|\n";
  for (std::uint64_t bytes : sizes) {
    out << "| " << size_label(bytes) << " | "
        << lookup("bandwidth_gbps", kSystemLoadStore, "write", bytes, "gbps") << " | "
        << lookup("bandwidth_gbps", kSystemRoceEngine, "write", bytes, "gbps") << " | "
        << lookup("bandwidth_gbps", kSystemRoceEngine, "read", bytes, "gbps") << " |\n";
  }
  out << "\nModelled 8 B message rate:\n\n| system | WRs per doorbell | Mops/s "
         "|\n|---|---:|---:|\n";
  for (const json& row : model["message_rate_mops"]) {
    out << "| " << row["system"].get<std::string>() << " | " << row["batch"] << " | "
        << sig3(row["mops"].get<double>()) << " |\n";
  }
  out << "\nParameters: ";
  bool first = true;
  for (const auto& [name, value] : model["parameters"].items()) {
    out << (first ? "" : ", ") << "`" << name << "` = " << value.dump();
    first = false;
  }
  out << ".\n\nWhere each number comes from:\n\n";
  for (const json& source : model["sources"]) out << "- " << source.get<std::string>() << "\n";
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

// The OpenSHMEM pair: one binary over load/store and over RDMA in the same VMs (latency of
// 8 B and of the largest common size, bandwidth at the largest common size, the fetch-add).
void shmem_conclusions(const CompareInputs& inputs, std::vector<std::string>& out) {
  const json* ls = find_system(inputs, kSystemShmemLoadStore);
  const json* rdma = find_system(inputs, kSystemShmemRdma);
  if (ls == nullptr || rdma == nullptr) return;
  const std::string who = "load/store";
  for (const char* op : {"get", "put", "fetch-add"}) {
    std::vector<std::uint64_t> common;
    for (const json& row : (*ls)["latency_us"]) {
      const auto bytes = row.value("bytes", std::uint64_t{0});
      if (row.value("op", std::string()) == op && find_latency(*rdma, op, bytes)) {
        common.push_back(bytes);
      }
    }
    std::sort(common.begin(), common.end());
    for (std::size_t n = 0; n < common.size(); n += std::max<std::size_t>(common.size() - 1, 1)) {
      const SizedLatency ours = *find_latency(*ls, op, common[n]);
      const SizedLatency theirs = *find_latency(*rdma, op, common[n]);
      out.push_back("The same OpenSHMEM binary in the same VMs: " + std::string(op) + " of " +
                    size_label(common[n]) + " took " + sig3(ours.p50_us) + " µs p50 (p99 " +
                    sig3(ours.p99_us) + ") over load/store vs " + sig3(theirs.p50_us) +
                    " µs (p99 " + sig3(theirs.p99_us) + ") over RDMA (" +
                    ratio_words(who, ours.p50_us, theirs.p50_us, "lower", "higher") + ").");
    }
  }
  for (const char* op : {"put", "get"}) {
    std::optional<std::uint64_t> largest;
    for (const json& row : (*ls)["bandwidth_gbps"]) {
      const auto bytes = row.value("bytes", std::uint64_t{0});
      if (row.value("op", std::string()) == op && find_bandwidth(*rdma, op, bytes) &&
          (!largest || bytes > *largest)) {
        largest = bytes;
      }
    }
    if (!largest) continue;
    const double ours = *find_bandwidth(*ls, op, *largest);
    const double theirs = *find_bandwidth(*rdma, op, *largest);
    out.push_back("The same OpenSHMEM binary in the same VMs: " + std::string(op) + "s of " +
                  size_label(*largest) + " moved " + sig3(ours) + " Gbit/s over load/store vs " +
                  sig3(theirs) + " Gbit/s over RDMA (" +
                  ratio_words(who, ours, theirs, "lower", "higher") + ").");
  }
}

}  // namespace

std::optional<SizedLatency> find_latency(const json& system, const std::string& op,
                                         std::uint64_t bytes) {
  if (!system.contains("latency_us")) return std::nullopt;
  for (const json& row : system["latency_us"]) {
    if (row.value("op", std::string()) == op && row.value("bytes", std::uint64_t{0}) == bytes) {
      return SizedLatency{row.value("p50", 0.0), row.value("p99", 0.0)};
    }
  }
  return std::nullopt;
}

std::optional<double> find_bandwidth(const json& system, const std::string& op,
                                     std::uint64_t bytes) {
  if (!system.contains("bandwidth_gbps")) return std::nullopt;
  for (const json& row : system["bandwidth_gbps"]) {
    if (row.value("op", std::string()) == op && row.value("bytes", std::uint64_t{0}) == bytes) {
      return row.value("gbps", 0.0);
    }
  }
  return std::nullopt;
}

std::optional<double> find_message_rate(const json& system, std::uint64_t batch) {
  if (!system.contains("message_rate_mops")) return std::nullopt;
  for (const json& row : system["message_rate_mops"]) {
    if (row.value("batch", std::uint64_t{1}) == batch) return row.value("mops", 0.0);
  }
  return std::nullopt;
}

json wire_rows(const std::vector<std::uint32_t>& sizes, std::size_t frame_bytes_max,
               std::uint32_t path_mtu_bytes) {
  json rows = json::array();
  for (std::uint32_t size : sizes) {
    rows.push_back(
        {{"bytes", size},
         {"load_store_write", wire_cost_json(load_store_write_cost(size, frame_bytes_max))},
         {"roce_write", wire_cost_json(roce_write_cost(size, path_mtu_bytes))},
         {"roce_read", wire_cost_json(roce_read_cost(size, path_mtu_bytes))}});
  }
  return rows;
}

std::vector<std::string> compare_conclusions(const CompareInputs& inputs) {
  std::vector<std::string> out;
  const json* ls = find_system(inputs, kSystemLoadStore);
  // Latency: load/store loads against every other system's one-sided ops, smallest and
  // largest common size.
  if (ls != nullptr) {
    for (const json& other : inputs.systems) {
      if (!available(other) || name_of(other) == kSystemLoadStore ||
          name_of(other) == kSystemLoadStoreVm) {
        continue;
      }
      for (const char* op : {"write", "read"}) {
        std::vector<std::uint64_t> common;
        for (const json& row : other["latency_us"]) {
          const auto bytes = row.value("bytes", std::uint64_t{0});
          if (row.value("op", std::string()) == op && find_latency(*ls, "load", bytes)) {
            common.push_back(bytes);
          }
        }
        if (common.empty()) continue;
        std::sort(common.begin(), common.end());
        std::vector<std::uint64_t> picks{common.front()};
        if (common.back() != common.front()) picks.push_back(common.back());
        for (std::uint64_t bytes : picks) {
          const SizedLatency load = *find_latency(*ls, "load", bytes);
          const SizedLatency theirs = *find_latency(other, op, bytes);
          out.push_back("For " + size_label(bytes) + ", the load/store load p50 was " +
                        sig3(load.p50_us) + " µs vs " + sig3(theirs.p50_us) + " µs for " +
                        name_of(other) + " " + op + " (" +
                        ratio_words("load/store", load.p50_us, theirs.p50_us, "lower", "higher") +
                        "); p99 " + sig3(load.p99_us) + " µs vs " + sig3(theirs.p99_us) + " µs.");
        }
      }
    }
  }
  // Bandwidth at the largest size both measured.
  if (ls != nullptr) {
    for (const json& other : inputs.systems) {
      if (!available(other) || name_of(other) == kSystemLoadStore ||
          name_of(other) == kSystemLoadStoreVm) {
        continue;
      }
      for (const char* op : {"write", "read"}) {
        std::optional<std::uint64_t> largest;
        for (const json& row : other["bandwidth_gbps"]) {
          const auto bytes = row.value("bytes", std::uint64_t{0});
          if (row.value("op", std::string()) == op && find_bandwidth(*ls, op, bytes) &&
              (!largest || bytes > *largest)) {
            largest = bytes;
          }
        }
        if (!largest) continue;
        const double ours = *find_bandwidth(*ls, op, *largest);
        const double theirs = *find_bandwidth(other, op, *largest);
        out.push_back("At " + size_label(*largest) + " per transfer, load/store " +
                      (std::string(op) == "write" ? "posted stores" : "loads") + " moved " +
                      sig3(ours) + " Gbit/s vs " + sig3(theirs) + " Gbit/s for " + name_of(other) +
                      " " + op + " (" + ratio_words("load/store", ours, theirs, "lower", "higher") +
                      ") in this emulator.");
      }
    }
  }
  // Soft-RoCE against load/store in the same two VMs: the like-for-like pair (both pay the
  // guest, TCG and QEMU; see docs/compare.md).
  const json* vm_ls = find_system(inputs, kSystemLoadStoreVm);
  const json* soft = find_system(inputs, kSystemSoftRoce);
  if (vm_ls != nullptr && soft != nullptr) {
    const std::string who = "same-VM load/store";
    if (const auto load = find_latency(*vm_ls, "load", 8)) {
      for (const char* op : {"read", "write"}) {
        const auto theirs = find_latency(*soft, op, 8);
        if (!theirs) continue;
        out.push_back("In the same 2 VMs, an 8 B load through the ethx-gpu window took " +
                      sig3(load->p50_us) + " µs p50 (p99 " + sig3(load->p99_us) + ") vs " +
                      sig3(theirs->p50_us) + " µs (p99 " + sig3(theirs->p99_us) +
                      ") for a Soft-RoCE 8 B " + op + " (" +
                      ratio_words(who, load->p50_us, theirs->p50_us, "lower", "higher") + ").");
      }
    }
    // Bandwidth: each side's largest measured transfer (the sizes are named: they differ).
    const auto largest = [](const json& system, const char* op) -> std::optional<std::uint64_t> {
      std::optional<std::uint64_t> found;
      for (const json& row : system["bandwidth_gbps"]) {
        const auto bytes = row.value("bytes", std::uint64_t{0});
        if (row.value("op", std::string()) == op && (!found || bytes > *found)) found = bytes;
      }
      return found;
    };
    for (const auto& [ours_op, their_op, what] :
         std::vector<std::tuple<const char*, const char*, const char*>>{
             {"store", "write", "posted 8 B stores"}, {"copy", "read", "the copy engine"}}) {
      // The largest size both measured; else each side's largest (both sizes are named).
      std::optional<std::uint64_t> ours_size, their_size;
      for (const json& row : (*vm_ls)["bandwidth_gbps"]) {
        const auto bytes = row.value("bytes", std::uint64_t{0});
        if (row.value("op", std::string()) == ours_op && find_bandwidth(*soft, their_op, bytes) &&
            (!ours_size || bytes > *ours_size)) {
          ours_size = their_size = bytes;
        }
      }
      if (!ours_size) {
        ours_size = largest(*vm_ls, ours_op);
        their_size = largest(*soft, their_op);
      }
      if (!ours_size || !their_size) continue;
      const double ours = *find_bandwidth(*vm_ls, ours_op, *ours_size);
      const double theirs = *find_bandwidth(*soft, their_op, *their_size);
      out.push_back("In the same 2 VMs, " + std::string(what) + " moved " + sig3(ours) +
                    " Gbit/s (" + size_label(*ours_size) + ") vs " + sig3(theirs) +
                    " Gbit/s for Soft-RoCE " + their_op + " (" + size_label(*their_size) + ") (" +
                    ratio_words(who, ours, theirs, "lower", "higher") + ").");
    }
  }
  shmem_conclusions(inputs, out);
  // Wire efficiency, from the encoders.
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
  // Doorbell batching and connection state of the RoCE engine.
  if (const json* roce = find_system(inputs, kSystemRoceEngine)) {
    std::vector<std::uint64_t> batches;
    for (const json& row : (*roce)["message_rate_mops"]) {
      batches.push_back(row.value("batch", std::uint64_t{1}));
    }
    std::sort(batches.begin(), batches.end());
    if (batches.size() >= 2) {
      const double one = *find_message_rate(*roce, batches.front());
      const double many = *find_message_rate(*roce, batches.back());
      std::string sentence = "Posting " + std::to_string(batches.back()) +
                             " WRITEs per doorbell instead of " + std::to_string(batches.front()) +
                             " changed the RoCE engine's 8 B message rate from " + sig3(one) +
                             " to " + sig3(many) + " Mops/s (" +
                             ratio_words("batched", many, one, "lower", "higher") + ")";
      if (ls != nullptr) {
        if (const auto stores = find_message_rate(*ls, 1)) {
          sentence += "; load/store posted 8 B stores ran at " + sig3(*stores) + " Mops/s";
        }
      }
      out.push_back(sentence + ".");
    }
    const json& many_qps = roce->value("many_qps", json::array());
    if (many_qps.size() >= 2) {
      const json& first = many_qps.front();
      const json& last = many_qps.back();
      out.push_back(
          "Connection state grew from " +
          std::to_string(first["state_bytes_total"].get<std::uint64_t>()) + " B with " +
          std::to_string(first["qps"].get<std::uint64_t>()) + " QP to " +
          std::to_string(last["state_bytes_total"].get<std::uint64_t>()) + " B with " +
          std::to_string(last["qps"].get<std::uint64_t>()) + " QPs (" +
          std::to_string(last["state_bytes_per_qp"].get<std::uint64_t>()) +
          " B per QP); the 8 B message rate went from " +
          sig3(first["message_rate_mops"].get<double>()) + " to " +
          sig3(last["message_rate_mops"].get<double>()) +
          " Mops/s. Load/store keeps no per-peer connection state beyond its link sequence "
          "numbers.");
    }
  }
  // The hardware model.
  if (!inputs.model.is_null()) {
    const auto load = model_value(inputs.model, "latency_ns", kSystemLoadStore, "load", 8, "ns");
    const auto read = model_value(inputs.model, "latency_ns", kSystemRoceEngine, "read", 8, "ns");
    if (load && read) {
      out.push_back("In the hardware model, an 8 B load takes " + sig3(*load) + " ns (ethx sim) " +
                    "vs an estimated " + sig3(*read) + " ns for a RoCEv2 READ (" +
                    ratio_words("load/store", *load, *read, "lower", "higher") + "), of which " +
                    inputs.model["parameters"]["roce_doorbell_ns"].dump() +
                    " ns is the MMIO doorbell.");
    }
  }
  for (const json& system : inputs.systems) {
    if (!available(system)) {
      out.push_back(name_of(system) + " was not measured: " +
                    system.value("reason", std::string("no reason given")) + ".");
    } else if (!system.value("verified", false)) {
      out.push_back(name_of(system) +
                    "'s figures are NOT verified: its data checks failed or "
                    "did not run.");
    }
  }
  return out;
}

std::string render_compare_report(const CompareInputs& inputs) {
  std::ostringstream out;
  out << "# ethx compare: load/store vs RoCEv2\n\n"
      << "Same host, same `ethx-switch`, same transport (`" << inputs.transport << "`), "
      << inputs.gpus << " GPUs. Produced by `" << inputs.command << "` in "
      << fixed(inputs.wall_seconds, 1) << " s. Emulator figures are wall clock of this "
      << "machine (software endpoints and switch), not hardware; modelled hardware figures "
         "are in their own section. See docs/compare.md.\n\n";
  out << "## Systems\n\n| system | transport | status | verified | notes "
         "|\n|---|---|---|---|---|\n";
  for (const json& system : inputs.systems) {
    std::string notes;
    for (const json& note : system.value("notes", json::array())) {
      notes += (notes.empty() ? "" : "; ") + note.get<std::string>();
    }
    out << "| " << name_of(system) << " | " << system.value("transport", std::string()) << " | "
        << (available(system) ? "measured"
                              : "unavailable: " + system.value("reason", std::string()))
        << " | " << (system.value("verified", false) ? "yes" : "no") << " | " << notes << " |\n";
  }
  out << "\n## Latency (emulator wall clock, µs, p50 / p99)\n\n";
  latency_table(out, inputs);
  out << "\n## Bandwidth (emulator wall clock, Gbit/s)\n\n";
  bandwidth_table(out, inputs);
  out << "\n## Message rate (emulator wall clock)\n\n";
  message_rate_table(out, inputs);
  if (const json* roce = find_system(inputs, kSystemRoceEngine);
      roce != nullptr && roce->contains("many_qps")) {
    out << "\n## RoCE engine: many queue pairs\n\n| QPs | state B total | state B per QP | WRs "
           "per doorbell | 8 B WRITE Mops/s |\n|---:|---:|---:|---:|---:|\n";
    for (const json& row : (*roce)["many_qps"]) {
      out << "| " << row["qps"] << " | " << row["state_bytes_total"] << " | "
          << row["state_bytes_per_qp"] << " | " << row["batch"] << " | "
          << sig3(row["message_rate_mops"].get<double>()) << " |\n";
    }
  }
  out << "\n## All-to-all (emulator wall clock, aggregate Gbit/s)\n\n| system | Gbit/s "
         "|\n|---|---:|\n";
  for (const json& system : inputs.systems) {
    if (available(system) && system.contains("all_to_all_gbps")) {
      out << "| " << name_of(system) << " | " << sig3(system["all_to_all_gbps"].get<double>())
          << " |\n";
    }
  }
  out << "\n## Header bytes and wire efficiency per transfer\n\n"
      << "Computed from the encoders (load/store `wire::posted_write_cost` with frames of at "
         "most "
      << inputs.frame_bytes_max
      << " B; RoCEv2 `roce::frame_bytes` + `roce::wire_bytes`: Ethernet 14 + IPv4 20 + UDP 8 + "
         "BTH 12 + RETH 16 (first/only WRITE packet) + ICRC 4, and preamble 8 + FCS 4 + gap 12 "
         "on the wire; path MTU "
      << inputs.path_mtu_bytes
      << " B). Wire bytes count everything the link serializes in the data direction.\n\n";
  wire_table(out, inputs);
  // The often-quoted ~44 % for 64 B RoCEv2 (82 B per packet) is a packet without RETH: SEND
  // Only, or a WRITE Middle/Last. Shown next to the WRITE Only figure so both are explained.
  const std::size_t send_wire = roce::wire_bytes(roce::frame_bytes(roce::Opcode::kSendOnly, 64));
  out << "\nA 64 B RoCEv2 packet without RETH (SEND Only, WRITE Middle/Last) costs "
      << send_wire - 64
      << " B of overhead on the wire: " << percent(64.0 / static_cast<double>(send_wire))
      << " efficient (the ~44 % usually quoted); a WRITE Only carries the 16 B RETH as well.\n";
  out << "\n## Modelled hardware\n\n";
  if (inputs.model.is_null()) {
    out << "Not computed.\n";
  } else {
    model_tables(out, inputs);
  }
  out << "\n## Plots\n\n";
  if (inputs.plots.empty()) out << "No plots: " << inputs.plot_error << "\n";
  for (const std::string& plot : inputs.plots) out << "![" << plot << "](" << plot << ")\n\n";
  out << "\n## Conclusions\n\n";
  for (const std::string& sentence : compare_conclusions(inputs)) out << "- " << sentence << "\n";
  return out.str();
}

}  // namespace ethx
