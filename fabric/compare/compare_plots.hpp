// The plots of `ethx compare`, drawn by gnuplot (Debian gnuplot-nox): p50 latency and
// bandwidth against transfer size, one line per system and operation, the modelled hardware
// latency, and wire efficiency against transfer size. Data files and the gnuplot script stay in the
// report directory so a reader can redraw them.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fabric/compare/compare_report.hpp"

namespace ethx {

// The gnuplot terminal to use: "pngcairo", "png" or "svg" (the first this gnuplot has), or
// empty if gnuplot cannot run.
std::string choose_gnuplot_terminal();

// Writes the data files and plots.gp into `directory` and runs gnuplot. Returns the image
// file names (relative to `directory`); on failure none, and `error` says why.
std::vector<std::string> draw_compare_plots(const CompareInputs& inputs,
                                            const std::filesystem::path& directory,
                                            std::string& error);

}  // namespace ethx
