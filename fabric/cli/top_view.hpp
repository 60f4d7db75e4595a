// What `ethx top` shows, computed from two readings of the switch's counters (the stats file
// ethx-switch rewrites every 250 ms, switch/runtime/switch_stats.hpp): per port, frame and byte
// rates in each direction, the egress queue now and its high-water mark, drops by reason and
// link-level retry's replays and NAKs since the previous reading. Pure functions: the command
// (top_command.cpp) reads, waits and draws.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ethx {

struct PortRates {
  std::uint32_t port = 0;
  double rx_frames_per_s = 0;
  double tx_frames_per_s = 0;
  double rx_gbps = 0;
  double tx_gbps = 0;
  std::uint64_t queued_bytes = 0;  // the egress queue at the reading (0 from an older switch)
  std::uint64_t queue_bytes_high_water = 0;
  // Frames dropped between the two readings, by reason.
  std::uint64_t drops_queue_full = 0;
  std::uint64_t drops_malformed = 0;  // bad frames, injected corruption included
  std::uint64_t drops_link_down = 0;
  std::uint64_t drops_other = 0;  // unknown destination, hairpin, spoofed, injected loss
  bool link_up = true;
  // Link-level retry on the port's hop ([link] retry = "llr"), between the two readings: frames
  // the port sent again, and NAKs it sent (frames from the GPU it lost or found damaged).
  bool link_retry = false;
  std::uint64_t frames_replayed = 0;
  std::uint64_t naks_sent = 0;
  // Flow control on the port's hop ([link] flow_control): the smaller of the two classes'
  // credit toward the GPU at the reading (PFC: the class buffer), and how often the port had
  // frames waiting for credit or a pause between the readings.
  bool flow_control = false;
  std::uint64_t credit_bytes = 0;
  std::uint64_t frames_held = 0;
};

// Rates between two readings `seconds` apart (each the stats file's JSON); ports missing from
// either are left out. A counter that went down (a restarted switch) counts from zero.
std::vector<PortRates> port_rates(const nlohmann::json& before, const nlohmann::json& after,
                                  double seconds);
// The time between two readings, from the switch's `published_ns` (the switch rewrites the file
// at most every 250 ms, so when `ethx top` looked is off by up to that); `looked_s` when a
// reading has none. 0 when the switch has not republished (it publishes only while busy).
double seconds_between(const nlohmann::json& before, const nlohmann::json& after, double looked_s);
// The terminal page: a heading line, then one row per port and a total.
std::string format_top(const std::string& fabric, const std::vector<PortRates>& rows,
                       double seconds);
nlohmann::json top_json(const std::vector<PortRates>& rows, double seconds);

}  // namespace ethx
