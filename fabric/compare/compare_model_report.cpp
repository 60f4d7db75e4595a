// The modelled-hardware and scale sections of the `ethx compare` report, from model_figures()
// and scale_figures() (compare_model.hpp). Pure, like the rest of the report.
#include <set>
#include <sstream>
#include <vector>

#include "fabric/compare/compare_report.hpp"
#include "fabric/compare/compare_systems.hpp"
#include "fabric/compare/compare_text.hpp"

namespace ethx {
namespace {

using nlohmann::json;

// The figure `field` of the row of `list` with this system, op and size; "–" if none.
std::string model_cell(const json& model, const char* list, const char* system, const char* op,
                       std::uint64_t bytes, const char* field) {
  if (!model.contains(list)) return "–";
  for (const json& row : model[list]) {
    if (row["system"] == system && row["op"] == op && row["bytes"] == bytes) {
      return sig3(row[field].get<double>());
    }
  }
  return "–";
}

std::set<std::uint64_t> model_sizes(const json& model) {
  std::set<std::uint64_t> sizes;
  if (!model.contains("latency_ns")) return sizes;
  for (const json& row : model["latency_ns"]) sizes.insert(row["bytes"].get<std::uint64_t>());
  return sizes;
}

// One row per size: the figure `field` of `list` for each (system, op) column.
struct Column {
  const char* system;
  const char* op;
};

void sized_rows(std::ostringstream& out, const json& model, const char* list, const char* field,
                const std::vector<Column>& columns) {
  for (std::uint64_t bytes : model_sizes(model)) {
    out << "| " << size_label(bytes);
    for (const Column& column : columns) {
      out << " | " << model_cell(model, list, column.system, column.op, bytes, field);
    }
    out << " |\n";
  }
}

void latency_table(std::ostringstream& out, const json& model) {
  out << "Modelled latency (ns, p50 of one operation at a time, 2 GPUs, idle single "
         "switch):\n\n| transfer | load/store load | load/store write | RoCEv2 READ | RoCEv2 "
         "WRITE |\n|---:|---:|---:|---:|---:|\n";
  sized_rows(out, model, "latency_ns", "ns",
             {{kSystemLoadStore, "load"},
              {kSystemLoadStore, "write"},
              {kSystemRoceEngine, "read"},
              {kSystemRoceEngine, "write"}});
}

void bandwidth_table(std::ostringstream& out, const json& model) {
  out << "\nModelled bandwidth (Gbit/s, one GPU streaming to another over one "
      << sig3(model["parameters"].value("link_rate_gbps", 0.0))
      << " Gbit/s link):\n\n| transfer | load/store write | load/store read | RoCEv2 WRITE | "
         "RoCEv2 READ |\n|---:|---:|---:|---:|---:|\n";
  sized_rows(out, model, "bandwidth_gbps", "gbps",
             {{kSystemLoadStore, "write"},
              {kSystemLoadStore, "read"},
              {kSystemRoceEngine, "write"},
              {kSystemRoceEngine, "read"}});
}

void message_rate_table(std::ostringstream& out, const json& model) {
  out << "\nModelled 8 B message rate (Mops/s per GPU, 2 GPUs, one peer):\n\n| system | op | "
         "Mops/s |\n|---|---|---:|\n";
  if (!model.contains("message_rate_mops")) return;
  for (const json& row : model["message_rate_mops"]) {
    out << "| " << row["system"].get<std::string>() << " | " << row["op"].get<std::string>()
        << " | " << sig3(row["mops"].get<double>()) << " |\n";
  }
}

void parameters_and_sources(std::ostringstream& out, const json& model) {
  out << "\nParameters: ";
  bool first = true;
  for (const auto& [name, value] : model["parameters"].items()) {
    out << (first ? "" : ", ") << "`" << name << "` = " << value.dump();
    first = false;
  }
  out << ".\n\nWhere each number comes from:\n\n";
  for (const json& source : model["sources"]) out << "- " << source.get<std::string>() << "\n";
}

// The scale row of this workload, GPU count and system, or null.
const json* scale_row(const json& rows, const std::string& workload, std::uint64_t gpus,
                      const char* system) {
  for (const json& row : rows) {
    if (row["workload"] == workload && row["gpus"] == gpus && row["system"] == system) return &row;
  }
  return nullptr;
}

// One table per workload: load/store against RoCEv2 at each GPU count, with the NIC's state.
void scale_table(std::ostringstream& out, const json& scale, const std::string& workload,
                 const char* field, const char* unit) {
  out << "\n`" << workload << "` (" << unit << "; RoCEv2 / load/store; RoCEv2's NIC):\n\n"
      << "| GPUs | load/store | RoCEv2 | ratio | failed ops | frames dropped | QPs per GPU | QPC "
         "miss rate | QP state per GPU |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const json& count : scale["gpu_counts"]) {
    const std::uint64_t gpus = count.get<std::uint64_t>();
    const json* ls = scale_row(scale["rows"], workload, gpus, kSystemLoadStore);
    const json* roce = scale_row(scale["rows"], workload, gpus, kSystemRoceEngine);
    if (ls == nullptr || roce == nullptr) continue;
    const double ours = (*ls)[field].get<double>();
    const double theirs = (*roce)[field].get<double>();
    out << "| " << gpus << " | " << sig3(ours) << " | " << sig3(theirs) << " | "
        << (ours > 0 ? sig3(theirs / ours) + "×" : std::string("–")) << " | " << (*ls)["ops_failed"]
        << " / " << (*roce)["ops_failed"] << " | " << (*ls)["drops"] << " / " << (*roce)["drops"]
        << " | " << (*roce)["qps_per_gpu"] << " | "
        << percent((*roce)["qpc_miss_rate"].get<double>()) << " | "
        << sig3((*roce)["connection_state_bytes_per_gpu"].get<double>() / 1024.0) << " KiB |\n";
  }
}

}  // namespace

std::string render_model_section(const json& model) {
  std::ostringstream out;
  latency_table(out, model);
  bandwidth_table(out, model);
  message_rate_table(out, model);
  parameters_and_sources(out, model);
  return out.str();
}

std::string render_scale_section(const json& model) {
  if (!model.is_object() || !model.contains("scale")) return "Not computed.\n";
  const json& scale = model["scale"];
  std::ostringstream out;
  out << "Modelled in `ethx sim`, one switch: each GPU's completion time for all-to-all (4 KiB to "
         "every other GPU) and incast (every GPU writes 4 KiB to GPU 0), and each GPU's 8 B "
         "message rate over every peer. RoCEv2 holds one RC QP per peer; its NIC caches "
      << model["parameters"].value("rnic_qpc_cache_entries", 0)
      << " QP contexts. RoCEv2's RC transport retransmits what the switch drops; load/store runs "
         "with its go-back-N on (`[reliability] mode = \"go-back-n\"`, `scale.toml` in this "
         "directory) so that both recover. Failed ops and dropped frames are load/store / "
         "RoCEv2. Each row's `command` in systems.json repeats it.\n";
  scale_table(out, scale, "all-to-all", "completion_us", "completion, µs");
  scale_table(out, scale, "incast", "completion_us", "completion, µs");
  scale_table(out, scale, "message-rate", "mops", "Mops/s per GPU");
  return out.str();
}

}  // namespace ethx
