// The markdown of `ethx compare`: latency, bandwidth and message-rate tables by transfer size
// for every system, header bytes and wire efficiency from the encoders, emulator wall-clock
// and modelled hardware figures, and conclusions whose sentences are built from those numbers.
// Pure: the same inputs give the same text, so it is unit-tested without a fabric.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ethx {

// clang-tidy 14 reports nlohmann::json's throwing default constructor through the implicit
// special members; nothing here is noexcept.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct CompareInputs {
  std::vector<nlohmann::json> systems;  // the common schema (compare_systems.hpp)
  nlohmann::json model;                 // model_figures(), or null when not computed
  std::vector<std::uint32_t> wire_sizes;
  std::size_t frame_bytes_max = 1792;
  std::uint32_t path_mtu_bytes = 1024;
  std::size_t gpus = 0;
  std::string transport;
  std::string command;             // how the report was produced
  std::vector<std::string> plots;  // image files in the report directory
  std::string plot_error;          // why there are no plots, if there are none
  double wall_seconds = 0;
};

struct SizedLatency {
  double p50_us = 0;
  double p99_us = 0;
};

// Look-ups in a system object; nullopt when the system has no such figure.
std::optional<SizedLatency> find_latency(const nlohmann::json& system, const std::string& op,
                                         std::uint64_t bytes);
std::optional<double> find_bandwidth(const nlohmann::json& system, const std::string& op,
                                     std::uint64_t bytes);
std::optional<double> find_message_rate(const nlohmann::json& system, std::uint64_t batch);

// The wire table: per size, load/store posted write and RoCEv2 WRITE and READ costs.
nlohmann::json wire_rows(const std::vector<std::uint32_t>& sizes, std::size_t frame_bytes_max,
                         std::uint32_t path_mtu_bytes);

// Sentences computed from the measured (and modelled) numbers; one per finding.
std::vector<std::string> compare_conclusions(const CompareInputs& inputs);

// The modelled-hardware section and the scale section (compare_model_report.cpp).
std::string render_model_section(const nlohmann::json& model);
std::string render_scale_section(const nlohmann::json& model);

std::string render_compare_report(const CompareInputs& inputs);

}  // namespace ethx
