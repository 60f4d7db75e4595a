#include "switch/runtime/fault_change.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace ethx {
namespace {

void check_rate(const char* field, const std::optional<double>& rate) {
  // Written so that NaN fails too.
  if (rate && !(*rate >= 0.0 && *rate <= 1.0)) {
    throw std::invalid_argument(std::string(field) + ": must be between 0 and 1 (got " +
                                format_number(*rate) + ")");
  }
}

template <class T>
std::optional<T> field(const nlohmann::json& value, const char* key) {
  if (!value.contains(key)) return std::nullopt;
  try {
    return value.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(std::string(key) + ": has the wrong type (" + value.at(key).dump() +
                                ")");
  }
}

}  // namespace

std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", value);
  return text;
}

bool FaultChange::empty() const {
  return !clear && !drop_rate && !corrupt_rate && !reorder_rate && !delay_spike_rate &&
         !delay_spike_ns && !link_down;
}

void FaultChange::validate(std::size_t port_count) const {
  if (port >= port_count) {
    throw std::invalid_argument("port: " + std::to_string(port) +
                                " is not a port of this switch (" + std::to_string(port_count) +
                                " ports: 0.." + std::to_string(port_count - 1) + ")");
  }
  check_rate("drop_rate", drop_rate);
  check_rate("corrupt_rate", corrupt_rate);
  check_rate("reorder_rate", reorder_rate);
  check_rate("delay_spike_rate", delay_spike_rate);
  if (delay_spike_ns && *delay_spike_ns > kMaxDelaySpikeNs) {
    throw std::invalid_argument("delay_spike_us: must be at most " +
                                std::to_string(kMaxDelaySpikeNs / 1000) + " (got " +
                                std::to_string(*delay_spike_ns / 1000) + ")");
  }
}

PortFaults FaultChange::applied_to(const PortFaults& current) const {
  PortFaults faults = clear ? PortFaults{} : current;
  if (drop_rate) faults.drop_rate = *drop_rate;
  if (corrupt_rate) faults.corrupt_rate = *corrupt_rate;
  if (reorder_rate) faults.reorder_rate = *reorder_rate;
  if (delay_spike_rate) faults.delay_spike_rate = *delay_spike_rate;
  if (delay_spike_ns) faults.delay_spike_ns = *delay_spike_ns;
  if (link_down) faults.link_down = *link_down;
  return faults;
}

nlohmann::json FaultChange::to_json() const {
  nlohmann::json value = {{"port", port}};
  if (clear) value["clear"] = true;
  if (drop_rate) value["drop_rate"] = *drop_rate;
  if (corrupt_rate) value["corrupt_rate"] = *corrupt_rate;
  if (reorder_rate) value["reorder_rate"] = *reorder_rate;
  if (delay_spike_rate) value["delay_spike_rate"] = *delay_spike_rate;
  if (delay_spike_ns) value["delay_spike_ns"] = *delay_spike_ns;
  if (link_down) value["link"] = *link_down ? "down" : "up";
  return value;
}

FaultChange FaultChange::from_json(const nlohmann::json& value) {
  if (!value.is_object()) throw std::invalid_argument("a fault change must be a JSON object");
  static const char* const kKeys[] = {"port",           "clear",        "drop_rate",
                                      "corrupt_rate",   "reorder_rate", "delay_spike_rate",
                                      "delay_spike_ns", "link"};
  for (auto entry = value.begin(); entry != value.end(); ++entry) {
    const std::string& key = entry.key();
    if (std::find_if(std::begin(kKeys), std::end(kKeys),
                     [&key](const char* known) { return key == known; }) == std::end(kKeys)) {
      throw std::invalid_argument(key + ": is not a fault field");
    }
  }
  FaultChange change;
  const std::optional<PortId> port = field<PortId>(value, "port");
  if (!port) throw std::invalid_argument("port: is required");
  change.port = *port;
  change.clear = field<bool>(value, "clear").value_or(false);
  change.drop_rate = field<double>(value, "drop_rate");
  change.corrupt_rate = field<double>(value, "corrupt_rate");
  change.reorder_rate = field<double>(value, "reorder_rate");
  change.delay_spike_rate = field<double>(value, "delay_spike_rate");
  change.delay_spike_ns = field<TimeNs>(value, "delay_spike_ns");
  if (const std::optional<std::string> link = field<std::string>(value, "link")) {
    if (*link != "up" && *link != "down") {
      throw std::invalid_argument("link: must be \"up\" or \"down\" (got \"" + *link + "\")");
    }
    change.link_down = *link == "down";
  }
  return change;
}

nlohmann::json port_faults_json(const PortFaults& faults, bool link_up) {
  return {{"drop_rate", faults.drop_rate},
          {"corrupt_rate", faults.corrupt_rate},
          {"reorder_rate", faults.reorder_rate},
          {"delay_spike_rate", faults.delay_spike_rate},
          {"delay_spike_us", static_cast<double>(faults.delay_spike_ns) / 1000.0},
          {"link", link_up ? "up" : "down"}};
}

std::string describe_port_faults(const nlohmann::json& faults) {
  std::string text;
  auto add = [&text](const std::string& item) { text += (text.empty() ? "" : ", ") + item; };
  const std::pair<const char*, const char*> rates[] = {
      {"drop_rate", "drop"}, {"corrupt_rate", "corrupt"}, {"reorder_rate", "reorder"}};
  for (const auto& [key, label] : rates) {
    const double rate = faults.value(key, 0.0);
    if (rate > 0) add(std::string(label) + " " + format_number(rate));
  }
  const double spike_rate = faults.value("delay_spike_rate", 0.0);
  const double spike_us = faults.value("delay_spike_us", 0.0);
  if (spike_rate > 0 && spike_us > 0) {
    add("delay " + format_number(spike_rate) + " x " + format_number(spike_us) + " us");
  }
  if (faults.value("link", std::string("up")) == "down") add("link down");
  return text.empty() ? "none" : text;
}

}  // namespace ethx
