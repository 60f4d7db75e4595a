// How `ethx compare` writes numbers, sizes and systems, shared by the report's tables
// (compare_report.cpp) and its conclusions (compare_conclusions.cpp) so that a figure reads
// the same in both. Pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ethx {

// `value` with exactly `decimals` digits after the point.
std::string fixed_decimals(double value, int decimals);

// Three significant digits at most, never scientific notation: 0.0123, 1.23, 123.
std::string sig3(double value);

// "64 B", "4 KiB" (whole KiB only).
std::string size_label(std::uint64_t bytes);

// 0.395 -> "39.5 %".
std::string percent(double fraction);

// "load/store 3.2× lower" / "... 1.5× higher": how `ours` (named `who`) compares with
// `theirs`; "not comparable" when either is not positive.
std::string ratio_words(const std::string& who, double ours, double theirs, const char* less,
                        const char* more);

bool system_available(const nlohmann::json& system);
std::string system_name(const nlohmann::json& system);

// The first available system named `name`, or null.
const nlohmann::json* find_available_system(const std::vector<nlohmann::json>& systems,
                                            const std::string& name);

}  // namespace ethx
