// ethx: the command users run. `ethx bench` for now; later issues add up/down/status/sim.
#include <boost/program_options.hpp>
#include <iostream>

#include "address-map/config_error.hpp"
#include "fabric/bench_coordinator.hpp"
#include "fabric/process_signals.hpp"
#include "fabric/topology_config.hpp"

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: ethx <command> [options]\n"
    "commands:\n"
    "  bench    start a fabric, run the load/store microbenchmarks, stop it\n"
    "  config   print the embedded default topology (TOML) or check a file\n"
    "run `ethx <command> --help` for its options\n";

int bench(int argc, char** argv) {
  ethx::BenchOptions options;
  po::options_description description("ethx bench options");
  description.add_options()("help", "show this help")(
      "gpus", po::value(&options.gpus), "number of GPUs (default: from the topology, 8)")(
      "transport", po::value(&options.transport)->default_value("shm"), "shm | auto")(
      "config", po::value(&options.config_path), "topology file (default: embedded)")(
      "json", po::bool_switch(&options.json), "print one JSON object on stdout")(
      "quick", po::bool_switch(&options.quick), "smaller runs (CI smoke test)")(
      "quiet", po::bool_switch(&options.quiet), "no progress messages on stderr");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, description), vm);
  if (vm.count("help")) {
    std::cout << description << "\n";
    return 0;
  }
  po::notify(vm);
  return ethx::run_bench(options);
}

int config(int argc, char** argv) {
  if (argc < 2) {
    std::cout << ethx::default_topology_toml();
    return 0;
  }
  const ethx::TopologyConfig topology = ethx::load_topology(argv[1]);
  std::cout << argv[1] << ": valid, " << topology.gpu_count << " GPUs, "
            << topology.windows().size() << " windows\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  try {
    if (command == "bench") return bench(argc - 1, argv + 1);
    if (command == "config") return config(argc - 1, argv + 1);
    std::cerr << "ethx: unknown command \"" << command << "\"\n" << kUsage;
    return 2;
  } catch (const ethx::Interrupted&) {
    std::cerr << "ethx " << command << ": interrupted; everything it started was stopped\n";
    return 130;
  } catch (const ethx::ConfigError& error) {
    std::cerr << "ethx: config error: " << error.what() << "\n";
    return 2;
  } catch (const po::error& error) {
    std::cerr << "ethx " << command << ": " << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "ethx " << command << ": " << error.what() << "\n";
    return 1;
  }
}
