#include "fabric/sim/sim_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string_view>

namespace ethx::sim {

double SimReport::bandwidth_gbps() const {
  if (makespan_ps == 0) return 0.0;
  // bits per ps = Tbit/s; x1000 = Gbit/s.
  return static_cast<double>(payload_bytes) * 8.0 * 1000.0 / static_cast<double>(makespan_ps);
}

double SimReport::message_rate_mops() const {
  if (makespan_ps == 0 || gpus == 0) return 0.0;
  // ops per ps x 1e6 = ops per us = Mops.
  return static_cast<double>(ops_ok) * 1e6 / static_cast<double>(makespan_ps) /
         static_cast<double>(gpus);
}

namespace {

// Nearest rank, 1-based, of percentile p among `count` values (count > 0).
std::size_t nearest_rank(std::size_t count, double p) {
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(count)));
  if (rank == 0) rank = 1;
  if (rank > count) rank = count;
  return rank;
}

}  // namespace

std::uint64_t percentile(const std::vector<std::uint64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  return sorted[nearest_rank(sorted.size(), p) - 1];
}

std::uint64_t select_percentile(std::vector<std::uint64_t>& values, double p) {
  if (values.empty()) return 0;
  const auto nth = values.begin() + static_cast<std::ptrdiff_t>(nearest_rank(values.size(), p) - 1);
  std::nth_element(values.begin(), nth, values.end());
  return *nth;
}

namespace {

double ns(std::uint64_t ps) {
  return static_cast<double>(ps) / 1000.0;
}

unsigned long long u(std::uint64_t value) {
  return static_cast<unsigned long long>(value);
}

__attribute__((format(printf, 2, 3))) void add(std::string& text, const char* format, ...) {
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  text += line;
}

nlohmann::ordered_json optional_ns(const std::optional<std::uint64_t>& ps) {
  if (!ps) return nullptr;
  return ns(*ps);
}

nlohmann::ordered_json link_faults_json(const std::vector<LinkFault>& faults) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const LinkFault& fault : faults) {
    nlohmann::ordered_json up = nullptr;
    if (fault.up_ns) up = *fault.up_ns;
    out.push_back({{"gpu", fault.gpu}, {"down_ns", fault.down_ns}, {"up_ns", up}});
  }
  return out;
}

nlohmann::ordered_json liveness_json(const LivenessReport& l) {
  return {{"peers_marked_down", l.peers_marked_down},
          {"peers_marked_up", l.peers_marked_up},
          {"ops_fast_failed", l.ops_fast_failed},
          {"posted_writes_dropped", l.posted_writes_dropped},
          {"probes_sent", l.probes_sent},
          {"probes_answered", l.probes_answered},
          {"first_down_ns", optional_ns(l.first_down_ps)},
          {"first_up_ns", optional_ns(l.first_up_ps)}};
}

nlohmann::ordered_json link_retry_json(const LinkRetryCounters& c) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  c.for_each([&out](const char* name, std::uint64_t value) {
    // Training is the emulator's; the simulator's hops never train.
    if (std::string_view(name).starts_with("trainings_")) return;
    out[name] = value;
  });
  return out;
}

nlohmann::ordered_json flow_control_json(const std::string& mode, const FlowControlCounters& c) {
  return {{"mode", mode},
          {"frames_held", c.frames_held},
          {"credit_updates_sent", c.credit_updates_sent},
          {"credit_updates_received", c.credit_updates_received},
          {"pause_frames_sent", c.pause_frames_sent},
          {"pause_frames_received", c.pause_frames_received},
          {"buffer_overruns", c.buffer_overruns},
          {"malformed", c.malformed}};
}

nlohmann::ordered_json nic_json(const std::optional<NicReport>& nic) {
  if (!nic) return nullptr;
  const RnicCounters& c = nic->counters;
  const auto rate = [](std::uint64_t misses, std::uint64_t hits) {
    return misses + hits == 0 ? 0.0
                              : static_cast<double>(misses) / static_cast<double>(misses + hits);
  };
  return {{"doorbells", c.doorbells},
          {"wqe_fetches", c.wqe_fetches},
          {"dma_reads", c.dma_reads},
          {"dma_writes", c.dma_writes},
          {"cqes", c.cqes},
          {"packets", c.packets},
          {"qpc_hits", c.qpc_hits},
          {"qpc_misses", c.qpc_misses},
          {"qpc_miss_rate", rate(c.qpc_misses, c.qpc_hits)},
          {"mpt_hits", c.mpt_hits},
          {"mpt_misses", c.mpt_misses},
          {"mtt_hits", c.mtt_hits},
          {"mtt_misses", c.mtt_misses},
          {"pcie_bytes", c.pcie_bytes_to_nic + c.pcie_bytes_to_host},
          {"pcie_bytes_to_nic", c.pcie_bytes_to_nic},
          {"pcie_bytes_to_host", c.pcie_bytes_to_host},
          {"unit_busy_ns", ns(c.unit_busy_ps)},
          {"qps", nic->qps},
          {"max_qps_per_gpu", nic->max_qps_per_gpu},
          {"connection_state_bytes_per_gpu", nic->connection_state_bytes_per_gpu}};
}

// " (first at 12.345 ns)", or nothing when it never happened.
std::string first_at(const std::optional<std::uint64_t>& ps) {
  if (!ps) return "";
  char text[64];
  std::snprintf(text, sizeof text, " (first at %.3f ns)", ns(*ps));
  return text;
}

void add_faults_and_liveness(std::string& text, const SimReport& r) {
  for (const LinkFault& fault : r.link_faults) {
    add(text, "%-22s GPU %u at %llu ns", "link down", static_cast<unsigned>(fault.gpu),
        u(fault.down_ns));
    if (fault.up_ns) add(text, ", up at %llu ns", u(*fault.up_ns));
    add(text, "\n");
  }
  const LivenessReport& l = r.liveness;
  add(text, "%-22s %llu peers marked down%s, %llu up%s\n", "peer liveness", u(l.peers_marked_down),
      first_at(l.first_down_ps).c_str(), u(l.peers_marked_up), first_at(l.first_up_ps).c_str());
  add(text, "%-22s %llu ops fast-failed, %llu posted writes dropped, %llu probes (%llu answered)\n",
      "", u(l.ops_fast_failed), u(l.posted_writes_dropped), u(l.probes_sent), u(l.probes_answered));
}

void add_nic(std::string& text, const NicReport& nic) {
  const RnicCounters& c = nic.counters;
  add(text, "%-22s %llu doorbells, %llu WQE fetches, %llu DMA reads, %llu DMA writes, %llu CQEs\n",
      "RDMA NICs", u(c.doorbells), u(c.wqe_fetches), u(c.dma_reads), u(c.dma_writes), u(c.cqes));
  add(text, "%-22s QPC %llu hits %llu misses, MPT %llu / %llu, MTT %llu / %llu, PCIe %llu B\n", "",
      u(c.qpc_hits), u(c.qpc_misses), u(c.mpt_hits), u(c.mpt_misses), u(c.mtt_hits),
      u(c.mtt_misses), u(c.pcie_bytes_to_nic + c.pcie_bytes_to_host));
  add(text, "%-22s %llu QPs (at most %llu per GPU), %llu B of QP state per GPU\n", "connections",
      u(nic.qps), u(nic.max_qps_per_gpu), u(nic.connection_state_bytes_per_gpu));
}

}  // namespace

nlohmann::ordered_json to_json(const SimReport& r) {
  nlohmann::ordered_json switches = nlohmann::ordered_json::array();
  for (const SwitchReport& s : r.switches) {
    switches.push_back({{"name", s.name},
                        {"ports", s.ports},
                        {"rx_frames", s.rx_frames},
                        {"tx_frames", s.tx_frames},
                        {"max_queue_bytes", s.max_queue_bytes},
                        {"drops", s.drops},
                        {"drops_queue_full", s.drops_queue_full}});
  }
  nlohmann::ordered_json out;
  out["gpus"] = r.gpus;
  out["engine"] = r.engine;
  out["topology"] = r.topology;
  out["workload"] = r.workload;
  out["peers"] = r.peers == 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.peers);
  out["op"] = r.op.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.op);
  out["bytes"] = r.bytes;
  out["seed"] = r.seed;
  out["repeat"] = r.repeat;
  out["model"] = {{"link_rate_gbps", r.link_rate_gbps},
                  {"propagation_ns", r.propagation_ns},
                  {"forwarding_latency_ns", r.forwarding_latency_ns},
                  {"egress_queue_bytes", r.egress_queue_bytes},
                  {"issue_ns", r.issue_ns},
                  {"completer_ns", r.completer_ns},
                  {"nic_latency_ns", r.nic_latency_ns}};
  out["link_down"] = link_faults_json(r.link_faults);
  out["complete"] = r.complete;
  out["ops_ok"] = r.ops_ok;
  out["ops_failed"] = r.ops_failed;
  out["timeouts"] = r.timeouts;
  out["unreachable"] = r.unreachable;
  out["latency_ns"] = {
      {"p50", ns(r.latency_p50_ps)}, {"p99", ns(r.latency_p99_ps)}, {"max", ns(r.latency_max_ps)}};
  out["makespan_ns"] = ns(r.makespan_ps);
  out["payload_bytes"] = r.payload_bytes;
  out["bandwidth_gbps"] = r.bandwidth_gbps();
  out["message_rate_mops"] = r.message_rate_mops();
  out["frames_delivered"] = r.frames_delivered;
  out["link_frames"] = r.link_frames;
  out["link_wire_bytes"] = r.link_wire_bytes;
  out["events"] = r.events;
  out["drops"] = r.drops;
  out["drops_queue_full"] = r.drops_queue_full;
  out["drops_link_down"] = r.drops_link_down;
  out["liveness"] = liveness_json(r.liveness);
  std::uint64_t deepest = 0;
  for (const SwitchReport& s : r.switches) deepest = std::max(deepest, s.max_queue_bytes);
  out["max_queue_bytes"] = deepest;
  out["switches"] = std::move(switches);
  out["nic"] = nic_json(r.nic);
  // Only with [link] retry = "llr", so reports of runs without it keep their bytes.
  if (r.link_retry) out["link_retry"] = link_retry_json(*r.link_retry);
  // Likewise only with [link] flow_control on.
  if (r.flow_control) out["flow_control"] = flow_control_json(r.flow_control_mode, *r.flow_control);
  return out;
}

std::string format_table(const SimReport& r) {
  std::string text;
  add(text,
      "ethx sim: %llu GPUs, %s engine, %s, %s, %llu B, seed %llu, repeat %llu (modelled time)\n\n",
      u(r.gpus), r.engine.c_str(), r.topology.c_str(), r.workload.c_str(), u(r.bytes), u(r.seed),
      u(r.repeat));
  add(text, "%-22s %llu ok, %llu failed (%llu timeouts, %llu unreachable)%s\n", "operations",
      u(r.ops_ok), u(r.ops_failed), u(r.timeouts), u(r.unreachable),
      r.complete ? "" : ", WORKLOAD INCOMPLETE");
  add(text, "%-22s p50 %.3f  p99 %.3f  max %.3f\n", "latency ns", ns(r.latency_p50_ps),
      ns(r.latency_p99_ps), ns(r.latency_max_ps));
  add(text, "%-22s %.3f\n", "makespan ns", ns(r.makespan_ps));
  add(text, "%-22s %llu B, %.2f Gbit/s aggregate\n", "payload", u(r.payload_bytes),
      r.bandwidth_gbps());
  add(text, "%-22s %.3f Mops per GPU\n", "message rate", r.message_rate_mops());
  add(text, "%-22s %llu to GPUs, %llu link transmissions, %llu wire bytes\n", "frames",
      u(r.frames_delivered), u(r.link_frames), u(r.link_wire_bytes));
  add(text, "%-22s %llu (queue full %llu, link down %llu)\n", "switch drops", u(r.drops),
      u(r.drops_queue_full), u(r.drops_link_down));
  if (r.nic) {
    add_nic(text, *r.nic);
  } else {
    add_faults_and_liveness(text, r);
  }
  if (r.link_retry) {
    const LinkRetryCounters& c = *r.link_retry;
    add(text,
        "%-22s %llu replayed (%llu NAKs, %llu timeouts), %llu bad FCS, %llu out of sequence\n",
        "link-level retry", u(c.frames_replayed), u(c.naks_sent), u(c.replays_timeout),
        u(c.drops_bad_fcs), u(c.drops_out_of_sequence));
  }
  if (r.flow_control) {
    const FlowControlCounters& c = *r.flow_control;
    add(text, "%-22s %s: %llu times held, %llu credit updates, %llu pause frames, %llu overruns\n",
        "flow control", r.flow_control_mode.c_str(), u(c.frames_held), u(c.credit_updates_sent),
        u(c.pause_frames_sent), u(c.buffer_overruns));
  }
  add(text, "%-22s %llu\n", "events", u(r.events));
  add(text, "\n%-10s %6s %14s %14s %14s %10s\n", "switch", "ports", "rx frames", "tx frames",
      "max queue B", "drops");
  for (const SwitchReport& s : r.switches) {
    add(text, "%-10s %6llu %14llu %14llu %14llu %10llu\n", s.name.c_str(), u(s.ports),
        u(s.rx_frames), u(s.tx_frames), u(s.max_queue_bytes), u(s.drops));
  }
  add(text,
      "\nmodel: link %.1f Gbit/s, propagation %llu ns, switch %llu ns, queue %llu B, issue %llu "
      "ns, completer %llu ns/txn, NIC %llu ns per crossing\n",
      r.link_rate_gbps, u(r.propagation_ns), u(r.forwarding_latency_ns), u(r.egress_queue_bytes),
      u(r.issue_ns), u(r.completer_ns), u(r.nic_latency_ns));
  return text;
}

}  // namespace ethx::sim
