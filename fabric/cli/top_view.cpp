#include "fabric/cli/top_view.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

namespace ethx {
namespace {

std::uint64_t counter(const nlohmann::json& port, const char* key) {
  const auto found = port.find(key);
  if (found == port.end() || !found->is_number_integer()) return 0;
  return found->is_number_unsigned() || found->get<std::int64_t>() >= 0
             ? found->get<std::uint64_t>()
             : 0;
}

// How much `key` grew; a counter that went down (the switch was restarted) starts again at 0.
std::uint64_t grew(const nlohmann::json& before, const nlohmann::json& after, const char* key) {
  const std::uint64_t old_value = counter(before, key);
  const std::uint64_t new_value = counter(after, key);
  return new_value >= old_value ? new_value - old_value : new_value;
}

void add_flow_rates(const nlohmann::json& before, const nlohmann::json& after, PortRates& rates) {
  const auto flow_after = after.find("flow_control");
  if (flow_after == after.end() || !flow_after->is_object()) return;
  static const nlohmann::json kNone = nlohmann::json::object();
  const auto flow_before = before.find("flow_control");
  const nlohmann::json& earlier = flow_before != before.end() ? *flow_before : kNone;
  rates.flow_control = true;
  rates.frames_held = grew(earlier, *flow_after, "frames_held");
  const nlohmann::json credit = flow_after->value("credit_bytes", kNone);
  rates.credit_bytes = std::min(counter(credit, "requests"), counter(credit, "responses"));
}

PortRates rates_of(const nlohmann::json& before, const nlohmann::json& after, double seconds) {
  PortRates rates;
  rates.port = after.value("port", 0u);
  const double per_s = seconds > 0 ? 1.0 / seconds : 0.0;
  rates.rx_frames_per_s = static_cast<double>(grew(before, after, "rx_frames")) * per_s;
  rates.tx_frames_per_s = static_cast<double>(grew(before, after, "tx_frames")) * per_s;
  rates.rx_gbps = static_cast<double>(grew(before, after, "rx_bytes")) * 8e-9 * per_s;
  rates.tx_gbps = static_cast<double>(grew(before, after, "tx_bytes")) * 8e-9 * per_s;
  rates.queued_bytes = counter(after, "queued_bytes");
  rates.queue_bytes_high_water = counter(after, "queue_bytes_high_water");
  rates.drops_queue_full = grew(before, after, "drops_queue_full");
  rates.drops_malformed = grew(before, after, "drops_malformed");
  rates.drops_link_down = grew(before, after, "drops_link_down");
  rates.drops_other = grew(before, after, "drops_unknown_destination") +
                      grew(before, after, "drops_hairpin") + grew(before, after, "drops_spoofed") +
                      grew(before, after, "faults_dropped");
  const nlohmann::json faults = after.value("faults", nlohmann::json::object());
  rates.link_up = faults.value("link", std::string("up")) == "up";
  const auto llr_after = after.find("link_retry");
  if (llr_after != after.end() && llr_after->is_object()) {
    static const nlohmann::json kNone = nlohmann::json::object();
    const auto llr_before = before.find("link_retry");
    const nlohmann::json& earlier = llr_before != before.end() ? *llr_before : kNone;
    rates.link_retry = true;
    rates.frames_replayed = grew(earlier, *llr_after, "frames_replayed");
    rates.naks_sent = grew(earlier, *llr_after, "naks_sent");
  }
  add_flow_rates(before, after, rates);
  return rates;
}

// A link-layer count (link-level retry, flow control), or "-" on a port without it.
std::string llr_count(bool link_retry, std::uint64_t count) {
  return link_retry ? std::to_string(count) : "-";
}

// The readings' "ports" arrays, by reference (json::value would copy them).
const nlohmann::json& ports_of(const nlohmann::json& stats) {
  static const nlohmann::json kNone = nlohmann::json::array();
  const auto found = stats.find("ports");
  return found != stats.end() && found->is_array() ? *found : kNone;
}

}  // namespace

std::vector<PortRates> port_rates(const nlohmann::json& before, const nlohmann::json& after,
                                  double seconds) {
  std::map<std::uint32_t, const nlohmann::json*> earlier;
  for (const nlohmann::json& port : ports_of(before)) earlier[port.value("port", 0u)] = &port;
  std::vector<PortRates> rows;
  for (const nlohmann::json& port : ports_of(after)) {
    const auto found = earlier.find(port.value("port", 0u));
    if (found != earlier.end()) rows.push_back(rates_of(*found->second, port, seconds));
  }
  return rows;
}

double seconds_between(const nlohmann::json& before, const nlohmann::json& after, double looked_s) {
  if (!before.contains("published_ns") || !after.contains("published_ns")) return looked_s;
  const auto from = before["published_ns"].get<std::int64_t>();
  const auto to = after["published_ns"].get<std::int64_t>();
  return to > from ? static_cast<double>(to - from) * 1e-9 : 0.0;
}

std::string format_top(const std::string& fabric, const std::vector<PortRates>& rows,
                       double seconds) {
  std::string page;
  char line[320];
  std::snprintf(line, sizeof line,
                "ethx top: '%s', %zu ports, rates over %.2f s (q quits)\n\n"
                "%-5s %4s %11s %11s %8s %8s %10s %10s %8s %8s %8s %8s %8s %8s %8s %8s\n",
                fabric.c_str(), rows.size(), seconds, "port", "link", "rx frm/s", "tx frm/s",
                "rx Gb/s", "tx Gb/s", "queue B", "queue max", "qfull", "bad", "linkdn", "other",
                "replay", "nak", "credit B", "held");
  page += line;
  PortRates total;
  std::uint64_t dropped = 0;
  for (const PortRates& r : rows) {
    std::snprintf(
        line, sizeof line,
        "%-5u %4s %11.0f %11.0f %8.3f %8.3f %10llu %10llu %8llu %8llu %8llu %8llu %8s %8s %8s "
        "%8s\n",
        r.port, r.link_up ? "up" : "DOWN", r.rx_frames_per_s, r.tx_frames_per_s, r.rx_gbps,
        r.tx_gbps, static_cast<unsigned long long>(r.queued_bytes),
        static_cast<unsigned long long>(r.queue_bytes_high_water),
        static_cast<unsigned long long>(r.drops_queue_full),
        static_cast<unsigned long long>(r.drops_malformed),
        static_cast<unsigned long long>(r.drops_link_down),
        static_cast<unsigned long long>(r.drops_other),
        llr_count(r.link_retry, r.frames_replayed).c_str(),
        llr_count(r.link_retry, r.naks_sent).c_str(),
        llr_count(r.flow_control, r.credit_bytes).c_str(),
        llr_count(r.flow_control, r.frames_held).c_str());
    page += line;
    total.rx_frames_per_s += r.rx_frames_per_s;
    total.tx_frames_per_s += r.tx_frames_per_s;
    total.rx_gbps += r.rx_gbps;
    total.tx_gbps += r.tx_gbps;
    dropped += r.drops_queue_full + r.drops_malformed + r.drops_link_down + r.drops_other;
  }
  std::snprintf(line, sizeof line, "%-5s %4s %11.0f %11.0f %8.3f %8.3f %10s %10s %8llu dropped\n",
                "all", "", total.rx_frames_per_s, total.tx_frames_per_s, total.rx_gbps,
                total.tx_gbps, "", "", static_cast<unsigned long long>(dropped));
  page += line;
  return page;
}

nlohmann::json top_json(const std::vector<PortRates>& rows, double seconds) {
  nlohmann::json ports = nlohmann::json::array();
  for (const PortRates& r : rows) {
    ports.push_back({{"port", r.port},
                     {"link", r.link_up ? "up" : "down"},
                     {"rx_frames_per_s", r.rx_frames_per_s},
                     {"tx_frames_per_s", r.tx_frames_per_s},
                     {"rx_gbps", r.rx_gbps},
                     {"tx_gbps", r.tx_gbps},
                     {"queued_bytes", r.queued_bytes},
                     {"queue_bytes_high_water", r.queue_bytes_high_water},
                     {"drops",
                      {{"queue_full", r.drops_queue_full},
                       {"malformed", r.drops_malformed},
                       {"link_down", r.drops_link_down},
                       {"other", r.drops_other}}}});
    if (r.link_retry) {
      ports.back()["link_retry"] = {{"frames_replayed", r.frames_replayed},
                                    {"naks_sent", r.naks_sent}};
    }
    if (r.flow_control) {
      ports.back()["flow_control"] = {{"credit_bytes", r.credit_bytes},
                                      {"frames_held", r.frames_held}};
    }
  }
  return {{"interval_s", seconds}, {"ports", ports}};
}

}  // namespace ethx
