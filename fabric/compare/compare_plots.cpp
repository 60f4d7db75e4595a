#include "fabric/compare/compare_plots.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "fabric/compare/compare_systems.hpp"

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

// The wire efficiency lines, from the encoders.
std::vector<Series> write_wire_series(const CompareInputs& inputs,
                                      const std::filesystem::path& directory) {
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
  return wire;
}

// Modelled hardware latency, one line per (system, op) of the model.
std::vector<Series> write_modelled_series(const CompareInputs& inputs,
                                          const std::filesystem::path& directory) {
  std::vector<Series> modelled;
  if (!inputs.model.is_object() || !inputs.model.contains("latency_ns")) return modelled;
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
  return modelled;
}

// The modelled scale section: one line per (workload, system) of `workloads`, "gpus value".
std::vector<Series> write_scale_series(const CompareInputs& inputs,
                                       const std::vector<std::string>& workloads, const char* field,
                                       const std::filesystem::path& directory) {
  std::vector<Series> lines;
  if (!inputs.model.is_object() || !inputs.model.contains("scale")) return lines;
  for (const std::string& workload : workloads) {
    for (const char* system : {kSystemLoadStore, kSystemRoceEngine}) {
      const std::string file = "scale_" + file_safe(workload + "_" + system) + ".dat";
      std::ofstream out(directory / file);
      for (const json& row : inputs.model["scale"]["rows"]) {
        if (row["workload"] == workload && row["system"] == system) {
          out << row["gpus"] << " " << row[field].get<double>() << "\n";
        }
      }
      lines.push_back(Series{workload + " " + system, file});
    }
  }
  return lines;
}

// The lines of every plot, their data files written into the report directory.
struct PlotSeries {
  std::vector<Series> latency, bandwidth, shmem_latency, shmem_bandwidth, modelled, wire;
  std::vector<Series> scale_completion, scale_rate;
};

PlotSeries write_plot_data(const CompareInputs& inputs, const std::filesystem::path& directory) {
  PlotSeries series;
  series.latency = write_series(inputs, "latency_us", "p50", directory, "latency");
  series.bandwidth = write_series(inputs, "bandwidth_gbps", "gbps", directory, "bandwidth");
  // The OpenSHMEM pair alone: one binary over load/store and over RDMA (shmem_systems.hpp).
  // Puts and gets by size (p, g and fetch-add have one size: the tables have them).
  const std::vector<std::string> put_get = {"put", "get"};
  series.shmem_latency =
      write_series(inputs, "latency_us", "p50", directory, "shmem_latency", "ethx-shmem-", put_get);
  series.shmem_bandwidth = write_series(inputs, "bandwidth_gbps", "gbps", directory,
                                        "shmem_bandwidth", "ethx-shmem-", put_get);
  series.wire = write_wire_series(inputs, directory);
  series.modelled = write_modelled_series(inputs, directory);
  series.scale_completion =
      write_scale_series(inputs, {"all-to-all", "incast"}, "completion_us", directory);
  series.scale_rate = write_scale_series(inputs, {"message-rate"}, "mops", directory);
  return series;
}

// plots.gp, one image per plot that has lines; records the image names.
class PlotScript {
 public:
  PlotScript(const std::filesystem::path& directory, const std::string& terminal)
      : script_(directory / "plots.gp"), extension_(terminal == "svg" ? ".svg" : ".png") {
    script_ << "# Redraw with: cd <this directory> && gnuplot plots.gp\n"
            << "set terminal " << terminal << " size 900,560\n"
            << "set logscale x 2\nset grid\nset key top left\nset xlabel 'transfer size (bytes)'\n";
  }

  void add(const std::string& name, const std::string& title, const std::string& ylabel, bool log_y,
           const std::vector<Series>& series) {
    if (series.empty()) return;
    images_.push_back(name + extension_);
    script_ << "set output '" << images_.back() << "'\n"
            << "set title '" << title << "'\nset ylabel '" << ylabel << "'\n"
            << (log_y ? "set logscale y\n" : "unset logscale y\n");
    plot_command(script_, series);
  }

  void line(const std::string& text) { script_ << text << "\n"; }

  // Closes the script; the images it will draw.
  std::vector<std::string> finish() {
    script_.close();
    return images_;
  }

 private:
  std::ofstream script_;
  std::string extension_;
  std::vector<std::string> images_;
};

std::vector<std::string> write_plot_script(const PlotSeries& series,
                                           const std::filesystem::path& directory,
                                           const std::string& terminal) {
  PlotScript script(directory, terminal);
  script.add("latency", "p50 latency vs transfer size (emulator wall clock)", "p50 latency (us)",
             true, series.latency);
  script.add("bandwidth", "bandwidth vs transfer size (emulator wall clock)", "Gbit/s", true,
             series.bandwidth);
  script.line("set key bottom right");  // the RDMA lines run along the top
  script.add("shmem_latency",
             "one OpenSHMEM binary, same VMs: load/store vs RDMA backend (p50, wall clock)",
             "p50 latency (us)", true, series.shmem_latency);
  script.add("shmem_bandwidth",
             "one OpenSHMEM binary, same VMs: load/store vs RDMA backend (nbi window + quiet)",
             "Gbit/s", true, series.shmem_bandwidth);
  script.line("set key top left");
  script.add("modelled_latency",
             "modelled hardware latency (ethx sim: load/store, RoCEv2 behind the NIC model)",
             "latency (ns)", true, series.modelled);
  script.add("wire_efficiency", "wire efficiency vs payload (from the encoders)",
             "payload / wire bytes (%)", false, series.wire);
  script.line("set xlabel 'GPUs'");
  script.add("scale_completion",
             "modelled completion time vs GPUs (ethx sim, 4 KiB per message, one switch)",
             "completion (us)", true, series.scale_completion);
  script.line("set key top right");
  script.add("scale_message_rate",
             "modelled 8 B message rate per GPU, every peer (ethx sim; RoCEv2: one QP per peer)",
             "Mops/s per GPU", true, series.scale_rate);
  return script.finish();
}

// Runs plots.gp; empty if gnuplot failed or left an image empty.
std::string run_gnuplot(const std::filesystem::path& directory,
                        const std::vector<std::string>& images) {
  const std::string command =
      "cd '" + directory.string() + "' && gnuplot plots.gp > gnuplot.log 2>&1";
  if (std::system(command.c_str()) != 0) {
    return "gnuplot failed; see " + (directory / "gnuplot.log").string();
  }
  for (const std::string& image : images) {
    std::error_code ignored;
    if (std::filesystem::file_size(directory / image, ignored) == 0 || ignored) {
      return "gnuplot wrote no " + image + "; see " + (directory / "gnuplot.log").string();
    }
  }
  return "";
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
  const PlotSeries series = write_plot_data(inputs, directory);
  std::vector<std::string> images = write_plot_script(series, directory, terminal);
  if (std::string failure = run_gnuplot(directory, images); !failure.empty()) {
    error = failure;
    return {};
  }
  return images;
}

}  // namespace ethx
