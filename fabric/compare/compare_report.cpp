#include "fabric/compare/compare_report.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include "fabric/bench/compare_wire.hpp"
#include "fabric/compare/compare_systems.hpp"
#include "fabric/compare/compare_text.hpp"
#include "packet-engine/roce/roce_wire.hpp"

namespace ethx {
namespace {

using nlohmann::json;

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
    if (!system_available(system) || !system.contains(list)) continue;
    for (const json& row : system[list]) sizes.insert(row.value("bytes", std::uint64_t{0}));
  }
  return sizes;
}

void latency_table(std::ostringstream& out, const CompareInputs& inputs) {
  std::vector<std::pair<const json*, std::string>> columns;
  for (const json& system : inputs.systems) {
    if (!system_available(system)) continue;
    for (const std::string& op : ops_of(system["latency_us"])) columns.emplace_back(&system, op);
  }
  out << "| transfer |";
  for (const auto& [system, op] : columns) out << " " << system_name(*system) << " " << op << " |";
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
    if (!system_available(system)) continue;
    for (const std::string& op : ops_of(system["bandwidth_gbps"])) {
      columns.emplace_back(&system, op);
    }
  }
  out << "| transfer |";
  for (const auto& [system, op] : columns) out << " " << system_name(*system) << " " << op << " |";
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
    if (!system_available(system) || !system.contains("message_rate_mops")) continue;
    for (const json& row : system["message_rate_mops"]) {
      out << "| " << system_name(system) << " | " << row.value("op", std::string()) << " | "
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

void systems_table(std::ostringstream& out, const CompareInputs& inputs) {
  out << "| system | transport | status | verified | notes |\n|---|---|---|---|---|\n";
  for (const json& system : inputs.systems) {
    std::string notes;
    for (const json& note : system.value("notes", json::array())) {
      notes += (notes.empty() ? "" : "; ") + note.get<std::string>();
    }
    out << "| " << system_name(system) << " | " << system.value("transport", std::string()) << " | "
        << (system_available(system) ? "measured"
                                     : "unavailable: " + system.value("reason", std::string()))
        << " | " << (system.value("verified", false) ? "yes" : "no") << " | " << notes << " |\n";
  }
}

// Only when the RoCE engine was measured with many queue pairs: the section and its table.
void many_qps_section(std::ostringstream& out, const CompareInputs& inputs) {
  const json* roce = find_available_system(inputs.systems, kSystemRoceEngine);
  if (roce == nullptr || !roce->contains("many_qps")) return;
  out << "\n## RoCE engine: many queue pairs\n\n| QPs | state B total | state B per QP | WRs "
         "per doorbell | 8 B WRITE Mops/s |\n|---:|---:|---:|---:|---:|\n";
  for (const json& row : (*roce)["many_qps"]) {
    out << "| " << row["qps"] << " | " << row["state_bytes_total"] << " | "
        << row["state_bytes_per_qp"] << " | " << row["batch"] << " | "
        << sig3(row["message_rate_mops"].get<double>()) << " |\n";
  }
}

void all_to_all_table(std::ostringstream& out, const CompareInputs& inputs) {
  out << "| system | Gbit/s |\n|---|---:|\n";
  for (const json& system : inputs.systems) {
    if (system_available(system) && system.contains("all_to_all_gbps")) {
      out << "| " << system_name(system) << " | " << sig3(system["all_to_all_gbps"].get<double>())
          << " |\n";
    }
  }
}

// Where the wire figures come from, their table, and the often-quoted 64 B figure explained.
void wire_section(std::ostringstream& out, const CompareInputs& inputs) {
  out << "Computed from the encoders (load/store `wire::posted_write_cost` with frames of at "
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

std::string render_compare_report(const CompareInputs& inputs) {
  std::ostringstream out;
  out << "# ethx compare: load/store vs RoCEv2\n\n"
      << "Same host, same `ethx-switch`, same transport (`" << inputs.transport << "`), "
      << inputs.gpus << " GPUs. Produced by `" << inputs.command << "` in "
      << fixed_decimals(inputs.wall_seconds, 1) << " s. Emulator figures are wall clock of this "
      << "machine (software endpoints and switch), not hardware; modelled hardware figures "
         "are in their own section. See docs/compare.md.\n\n";
  out << "## Systems\n\n";
  systems_table(out, inputs);
  out << "\n## Latency (emulator wall clock, µs, p50 / p99)\n\n";
  latency_table(out, inputs);
  out << "\n## Bandwidth (emulator wall clock, Gbit/s)\n\n";
  bandwidth_table(out, inputs);
  out << "\n## Message rate (emulator wall clock)\n\n";
  message_rate_table(out, inputs);
  many_qps_section(out, inputs);
  out << "\n## All-to-all (emulator wall clock, aggregate Gbit/s)\n\n";
  all_to_all_table(out, inputs);
  out << "\n## Header bytes and wire efficiency per transfer\n\n";
  wire_section(out, inputs);
  out << "\n## Modelled hardware\n\n";
  if (inputs.model.is_null()) {
    out << "Not computed.\n";
  } else {
    out << render_model_section(inputs.model);
  }
  out << "\n## Scale (modelled)\n\n" << render_scale_section(inputs.model);
  out << "\n## Plots\n\n";
  if (inputs.plots.empty()) out << "No plots: " << inputs.plot_error << "\n";
  for (const std::string& plot : inputs.plots) out << "![" << plot << "](" << plot << ")\n\n";
  out << "\n## Conclusions\n\n";
  for (const std::string& sentence : compare_conclusions(inputs)) out << "- " << sentence << "\n";
  return out.str();
}

}  // namespace ethx
