#include "fabric/cli/sim_options.hpp"

#include <boost/program_options.hpp>
#include <sstream>

namespace ethx {

namespace po = boost::program_options;

SimCommandLine parse_sim_command_line(int argc, const char* const* argv) {
  SimCommandLine line;
  std::uint64_t bytes = 0;
  std::size_t peers = 0;
  unsigned threads = 0;
  po::options_description description("ethx sim options");
  description.add_options()("help", "show this help")(
      "gpus", po::value(&line.options.gpus), "number of GPUs, 2-1024 (default: from the topology)")(
      "engine", po::value(&line.options.engine)->default_value("load-store"),
      "load-store | roce (the RoCEv2 engine behind the RDMA NIC model, [rnic])")(
      "workload", po::value(&line.options.workload)->default_value("all-to-all"),
      "all-to-all | allreduce-ring | incast | random | read-latency (= load-latency) | "
      "write-latency | message-rate")(
      "bytes", po::value(&bytes),
      "bytes per message (default 4096; latency and message-rate workloads 8)")(
      "peers", po::value(&peers),
      "message-rate: each GPU cycles its operations over the next N GPUs (default: all)")(
      "op", po::value(&line.options.op)->default_value("write"),
      "message-rate: write | read (RDMA WRITEs or READs; load/store stores or loads)")(
      "seed", po::value(&line.options.seed)->default_value(1), "seed of the random workload")(
      "topology", po::value(&line.options.topology)->default_value("single"),
      "single | leaf-spine")("repeat", po::value(&line.options.repeat)->default_value(1),
                             "run the workload R times")(
      "json", po::bool_switch(&line.options.json), "print one JSON object on stdout")(
      "threads", po::value(&threads),
      "1 | 2: with 2, the switches' events run on a second thread (load-store engine without "
      "[link] retry or flow_control); the results are the same (default: 2 on two or more "
      "cores)")("config", po::value(&line.options.config_path),
                "topology file (default: embedded)")(
      "link-down", po::value(&line.options.link_down),
      "GPU@TIME_NS[-UNTIL_NS]: GPU's switch port goes down at modelled time TIME_NS (and up "
      "at UNTIL_NS); repeatable")(
      "calibrate", po::value(&line.options.calibrate_path),
      "FILE: a report of `ethx bench [--engine roce] --quick --json`; fit the model's per-hop, "
      "per-operation and per-byte costs to a few of its figures, run the bench's experiments "
      "and print measured against predicted for every figure (only --config and --json go "
      "with it)");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, description), vm);
  std::ostringstream help;
  help << description;
  line.help_text = help.str();
  if (vm.count("help")) {
    line.help = true;
    return line;
  }
  po::notify(vm);
  if (vm.count("bytes")) line.options.bytes = bytes;
  if (vm.count("peers")) line.options.peers = peers;
  if (vm.count("threads")) line.options.threads = threads;
  return line;
}

}  // namespace ethx
