#include "fabric/compare/compare_model.hpp"

#include <algorithm>

#include "fabric/bench/compare_wire.hpp"
#include "fabric/compare/compare_systems.hpp"
#include "fabric/sim/sim_command.hpp"
#include "packet-engine/roce/roce_wire.hpp"

namespace ethx {
namespace {

using nlohmann::json;

struct LinkModel {
  double rate_gbps;
  double propagation_ns;
  double switch_ns;
  double nic_ns;
  double completer_ns;
  double serialization_ns(std::size_t wire_bytes) const {
    return static_cast<double>(wire_bytes) * 8.0 / rate_gbps;
  }
  // timing-model.md: NIC tx + rx, two links (GPU -> switch -> GPU), one switch.
  double one_way_ns(std::size_t wire_bytes) const {
    return 2 * nic_ns + 2 * serialization_ns(wire_bytes) + 2 * propagation_ns + switch_ns;
  }
};

// The payload frames of a RoCE message: the first crosses the whole path, the rest follow it
// back to back (store-and-forward pipelining adds one serialization each).
double roce_data_ns(const LinkModel& link, std::size_t payload, std::size_t mtu, bool read) {
  const std::size_t packets = std::max<std::size_t>(1, (payload + mtu - 1) / mtu);
  const std::size_t first_payload = std::min(payload, mtu);
  const roce::Opcode first =
      packets == 1 ? (read ? roce::Opcode::kReadResponseOnly : roce::Opcode::kWriteOnly)
                   : (read ? roce::Opcode::kReadResponseFirst : roce::Opcode::kWriteFirst);
  const std::size_t first_wire = roce::wire_bytes(roce::frame_bytes(first, first_payload));
  const roce::Opcode middle = read ? roce::Opcode::kReadResponseMiddle : roce::Opcode::kWriteMiddle;
  const std::size_t middle_wire = roce::wire_bytes(roce::frame_bytes(middle, mtu));
  return link.one_way_ns(first_wire) +
         static_cast<double>(packets - 1) * link.serialization_ns(middle_wire);
}

LinkModel link_model(const TopologyConfig& config) {
  return LinkModel{config.link_rate_gbps, static_cast<double>(config.link_propagation_ns),
                   static_cast<double>(config.switch_forwarding_latency_ns),
                   static_cast<double>(config.sim_nic_latency_ns),
                   static_cast<double>(config.sim_completer_ns)};
}

json model_parameters(const TopologyConfig& config, std::uint32_t path_mtu_bytes) {
  return {{"link_rate_gbps", config.link_rate_gbps},
          {"link_propagation_ns", config.link_propagation_ns},
          {"switch_forwarding_latency_ns", config.switch_forwarding_latency_ns},
          {"nic_latency_ns", config.sim_nic_latency_ns},
          {"completer_ns", config.sim_completer_ns},
          {"issue_ns", config.sim_issue_ns},
          {"roce_doorbell_ns", kModelDoorbellNs},
          {"roce_path_mtu_bytes", path_mtu_bytes}};
}

json model_sources() {
  return {
      // One literal per source, some split over lines: the adjacent pieces are meant to join.
      // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
      "link rate, propagation, switch forwarding, NIC and completer latencies: the topology "
      "config's [link], [switch] and [sim] values (docs/timing-model.md explains each one, "
      "docs/sources.md gives its public source)",
      "load/store latency: `ethx sim --workload load-latency --gpus 2 --bytes N` (the real "
      "requester/completer/switch code in modelled time, docs/simulator.md), p50",
      "load/store bandwidth: link rate x posted-write wire efficiency (wire::posted_write_cost)",
      "RoCEv2 estimate: doorbell (" + std::to_string(kModelDoorbellNs) +
          " ns, the midpoint of the ~200-800 ns reported for an RDMA NIC's MMIO doorbell, "
          "docs/sources.md) + one way of the first request packet + back-to-back serialization "
          "of the others + completer + one way of the ACK (WRITE) or of the READ responses; "
          "one_way = 2 x NIC + 2 x serialization + 2 x propagation + switch, as in "
          "docs/timing-model.md",
      "RoCEv2 estimate assumes the WQE arrives with the doorbell (inline) and QPC/MTT cache "
      "hits; each cache miss is reported to cost ~1 us more, one PCIe round trip "
      "(docs/sources.md)",
      "RoCEv2 bandwidth: link rate x RoCE WRITE/READ-response wire efficiency (the engine's "
      "frame_bytes/wire_bytes); message rate: the lower of the link-bound packet rate and one "
      "doorbell per batch"};
}

json figure_row(const char* system, const char* op, std::uint32_t bytes, const char* field,
                double value) {
  return {{"system", system}, {"op", op}, {"bytes", bytes}, {field, value}};
}

// Per size: the load/store load (ethx sim, when asked to run it), then the RoCEv2 WRITE and
// READ estimates.
json latency_rows(const TopologyConfig& config, const LinkModel& link,
                  const std::vector<std::uint32_t>& sizes, std::uint32_t path_mtu_bytes,
                  bool run_simulator) {
  const double ack_ns =
      link.one_way_ns(roce::wire_bytes(roce::frame_bytes(roce::Opcode::kAcknowledge, 0)));
  const double request_ns =
      link.one_way_ns(roce::wire_bytes(roce::frame_bytes(roce::Opcode::kReadRequest, 0)));
  const double doorbell = static_cast<double>(kModelDoorbellNs);
  json latency = json::array();
  for (std::uint32_t size : sizes) {
    if (run_simulator) {
      const sim::SimReport report = sim::simulate(config, sim::TopologyKind::kSingle,
                                                  sim::WorkloadKind::kLoadLatency, size, 1, 1);
      latency.push_back(figure_row(kSystemLoadStore, "load", size, "ns",
                                   static_cast<double>(report.latency_p50_ps) / 1e3));
    }
    latency.push_back(figure_row(
        kSystemRoceEngine, "write", size, "ns",
        doorbell + roce_data_ns(link, size, path_mtu_bytes, false) + link.completer_ns + ack_ns));
    latency.push_back(figure_row(kSystemRoceEngine, "read", size, "ns",
                                 doorbell + request_ns + link.completer_ns +
                                     roce_data_ns(link, size, path_mtu_bytes, true)));
  }
  return latency;
}

// Serialization-bound: the link rate times each system's wire efficiency at the size.
json bandwidth_rows(const TopologyConfig& config, const LinkModel& link,
                    const std::vector<std::uint32_t>& sizes, std::uint32_t path_mtu_bytes) {
  json bandwidth = json::array();
  for (std::uint32_t size : sizes) {
    bandwidth.push_back(figure_row(
        kSystemLoadStore, "write", size, "gbps",
        link.rate_gbps * load_store_write_cost(size, config.frame_bytes_max).efficiency));
    bandwidth.push_back(
        figure_row(kSystemRoceEngine, "write", size, "gbps",
                   link.rate_gbps * roce_write_cost(size, path_mtu_bytes).efficiency));
    bandwidth.push_back(
        figure_row(kSystemRoceEngine, "read", size, "gbps",
                   link.rate_gbps * roce_read_cost(size, path_mtu_bytes).efficiency));
  }
  return bandwidth;
}

// 8 B messages: RoCEv2 WRITEs bound by the link and by one doorbell per batch; load/store
// posted stores bound by the link and by the issue time.
json message_rate_rows(const TopologyConfig& config, const LinkModel& link,
                       const std::vector<std::uint32_t>& batches, std::uint32_t path_mtu_bytes) {
  const std::uint32_t small = 8;
  json rate = json::array();
  const double link_roce_mops =
      link.rate_gbps * 1e3 / 8.0 /
      static_cast<double>(roce_write_cost(small, path_mtu_bytes).wire_bytes);
  for (std::uint32_t batch : batches) {
    const double doorbell_mops = 1e3 * batch / static_cast<double>(kModelDoorbellNs);
    rate.push_back({{"system", kSystemRoceEngine},
                    {"op", "write"},
                    {"bytes", small},
                    {"batch", batch},
                    {"mops", std::min(link_roce_mops, doorbell_mops)}});
  }
  const double link_store_mops =
      link.rate_gbps * 1e3 / 8.0 /
      static_cast<double>(load_store_write_cost(small, config.frame_bytes_max).wire_bytes);
  rate.push_back({{"system", kSystemLoadStore},
                  {"op", "write"},
                  {"bytes", small},
                  {"batch", 1},
                  {"mops", std::min(link_store_mops, 1e3 / static_cast<double>(std::max<TimeNs>(
                                                               1, config.sim_issue_ns)))}});
  return rate;
}

}  // namespace

json model_figures(const TopologyConfig& config, const std::vector<std::uint32_t>& sizes,
                   const std::vector<std::uint32_t>& batches, std::uint32_t path_mtu_bytes,
                   bool run_simulator) {
  const LinkModel link = link_model(config);
  json model;
  model["parameters"] = model_parameters(config, path_mtu_bytes);
  model["sources"] = model_sources();
  model["latency_ns"] = latency_rows(config, link, sizes, path_mtu_bytes, run_simulator);
  model["bandwidth_gbps"] = bandwidth_rows(config, link, sizes, path_mtu_bytes);
  model["message_rate_mops"] = message_rate_rows(config, link, batches, path_mtu_bytes);
  return model;
}

}  // namespace ethx
