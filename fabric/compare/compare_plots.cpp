#include "fabric/compare/compare_plots.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

namespace ethx {
namespace {

using nlohmann::json;

struct Series {
  std::string title;
  std::string data_file;
};

bool terminal_works(const std::string& terminal) {
  const std::string command =
      "gnuplot -e 'set terminal " + terminal + "' </dev/null >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

std::string file_safe(std::string text) {
  for (char& c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return text;
}

// One data file per (system, op) of `list`: "bytes value" lines sorted by size. Only systems
// whose name starts with `systems` and ops in `ops` (empty: all).
std::vector<Series> write_series(const CompareInputs& inputs, const char* list, const char* field,
                                 const std::filesystem::path& directory, const std::string& prefix,
                                 const std::string& systems = "",
                                 const std::vector<std::string>& ops = {}) {
  std::vector<Series> series;
  for (const json& system : inputs.systems) {
    if (!system.value("available", false) || !system.contains(list)) continue;
    if (system.value("system", std::string()).rfind(systems, 0) != 0) continue;
    std::map<std::string, std::map<std::uint64_t, double>> by_op;
    for (const json& row : system[list]) {
      by_op[row.value("op", std::string())][row.value("bytes", std::uint64_t{0})] =
          row.value(field, 0.0);
    }
    for (const auto& [op, points] : by_op) {
      if (!ops.empty() && std::find(ops.begin(), ops.end(), op) == ops.end()) continue;
      const std::string name = system.value("system", std::string()) + " " + op;
      const std::string file = prefix + "_" + file_safe(name) + ".dat";
      std::ofstream out(directory / file);
      for (const auto& [bytes, value] : points) {
        if (bytes > 0 && value > 0) out << bytes << " " << value << "\n";
      }
      series.push_back(Series{name, file});
    }
  }
  return series;
}

void plot_command(std::ofstream& script, const std::vector<Series>& series) {
  script << "plot ";
  for (std::size_t n = 0; n < series.size(); ++n) {
    script << (n ? ", \\\n     " : "") << "'" << series[n].data_file
           << "' using 1:2 with linespoints lw 2 title '" << series[n].title << "'";
  }
  script << "\n";
}

}  // namespace

std::string choose_gnuplot_terminal() {
  for (const char* terminal : {"pngcairo", "png", "svg"}) {
    if (terminal_works(terminal)) return terminal;
  }
  return "";
}

std::vector<std::string> draw_compare_plots(const CompareInputs& inputs,
                                            const std::filesystem::path& directory,
                                            std::string& error) {
  const std::string terminal = choose_gnuplot_terminal();
  if (terminal.empty()) {
    error = "gnuplot is not installed or has no png/svg terminal (apt-get install gnuplot-nox)";
    return {};
  }
  const std::string extension = terminal == "svg" ? ".svg" : ".png";
  const std::vector<Series> latency =
      write_series(inputs, "latency_us", "p50", directory, "latency");
  const std::vector<Series> bandwidth =
      write_series(inputs, "bandwidth_gbps", "gbps", directory, "bandwidth");
  // The OpenSHMEM pair alone: one binary over load/store and over RDMA (shmem_systems.hpp).
  // Puts and gets by size (p, g and fetch-add have one size: the tables have them).
  const std::vector<std::string> put_get = {"put", "get"};
  const std::vector<Series> shmem_latency =
      write_series(inputs, "latency_us", "p50", directory, "shmem_latency", "ethx-shmem-", put_get);
  const std::vector<Series> shmem_bandwidth = write_series(
      inputs, "bandwidth_gbps", "gbps", directory, "shmem_bandwidth", "ethx-shmem-", put_get);
  // Wire efficiency from the encoders.
  std::vector<Series> wire;
  const json rows = wire_rows(inputs.wire_sizes, inputs.frame_bytes_max, inputs.path_mtu_bytes);
  for (const auto& [key, title] : std::vector<std::pair<std::string, std::string>>{
           {"load_store_write", "load/store posted write"},
           {"roce_write", "RoCEv2 WRITE"},
           {"roce_read", "RoCEv2 READ responses"}}) {
    const std::string file = "wire_" + key + ".dat";
    std::ofstream out(directory / file);
    for (const json& row : rows) {
      out << row["bytes"] << " " << 100.0 * row[key]["efficiency"].get<double>() << "\n";
    }
    wire.push_back(Series{title, file});
  }

  // Modelled hardware latency, one line per (system, op) of the model.
  std::vector<Series> modelled;
  if (inputs.model.is_object() && inputs.model.contains("latency_ns")) {
    std::map<std::string, std::map<std::uint64_t, double>> lines;
    for (const json& row : inputs.model["latency_ns"]) {
      lines[row["system"].get<std::string>() + " " + row["op"].get<std::string>()]
           [row["bytes"].get<std::uint64_t>()] = row["ns"].get<double>();
    }
    for (const auto& [name, points] : lines) {
      const std::string file = "modelled_" + file_safe(name) + ".dat";
      std::ofstream out(directory / file);
      for (const auto& [bytes, ns] : points) out << bytes << " " << ns << "\n";
      modelled.push_back(Series{name + " (modelled)", file});
    }
  }

  std::vector<std::string> images;
  std::ofstream script(directory / "plots.gp");
  script << "# Redraw with: cd <this directory> && gnuplot plots.gp\n"
         << "set terminal " << terminal << " size 900,560\n"
         << "set logscale x 2\nset grid\nset key top left\nset xlabel 'transfer size (bytes)'\n";
  auto add_plot = [&](const std::string& name, const std::string& title, const std::string& ylabel,
                      bool log_y, const std::vector<Series>& series) {
    if (series.empty()) return;
    images.push_back(name + extension);
    script << "set output '" << images.back() << "'\n"
           << "set title '" << title << "'\nset ylabel '" << ylabel << "'\n"
           << (log_y ? "set logscale y\n" : "unset logscale y\n");
    plot_command(script, series);
  };
  add_plot("latency", "p50 latency vs transfer size (emulator wall clock)", "p50 latency (us)",
           true, latency);
  add_plot("bandwidth", "bandwidth vs transfer size (emulator wall clock)", "Gbit/s", true,
           bandwidth);
  script << "set key bottom right\n";  // the RDMA lines run along the top
  add_plot("shmem_latency",
           "one OpenSHMEM binary, same VMs: load/store vs RDMA backend (p50, wall clock)",
           "p50 latency (us)", true, shmem_latency);
  add_plot("shmem_bandwidth",
           "one OpenSHMEM binary, same VMs: load/store vs RDMA backend (nbi window + quiet)",
           "Gbit/s", true, shmem_bandwidth);
  script << "set key top left\n";
  add_plot("modelled_latency",
           "modelled hardware latency (load/store: ethx sim; RoCEv2: estimate, docs/compare.md)",
           "latency (ns)", true, modelled);
  add_plot("wire_efficiency", "wire efficiency vs payload (from the encoders)",
           "payload / wire bytes (%)", false, wire);
  script.close();
  const std::string command =
      "cd '" + directory.string() + "' && gnuplot plots.gp > gnuplot.log 2>&1";
  if (std::system(command.c_str()) != 0) {
    error = "gnuplot failed; see " + (directory / "gnuplot.log").string();
    return {};
  }
  for (const std::string& image : images) {
    std::error_code ignored;
    if (std::filesystem::file_size(directory / image, ignored) == 0 || ignored) {
      error = "gnuplot wrote no " + image + "; see " + (directory / "gnuplot.log").string();
      return {};
    }
  }
  return images;
}

}  // namespace ethx
