// ethx: the command users run: bench, up, status, down, run, guest, config, sim, ...
#include <boost/program_options.hpp>
#include <iostream>
#include <optional>

#include "address-map/config_error.hpp"
#include "fabric/bench/bench_coordinator.hpp"
#include "fabric/bench/soak_command.hpp"
#include "fabric/cli/capture_command.hpp"
#include "fabric/cli/fault_command.hpp"
#include "fabric/cli/oshrun_command.hpp"
#include "fabric/cli/restart_switch_command.hpp"
#include "fabric/cli/run_command.hpp"
#include "fabric/cli/sim_options.hpp"
#include "fabric/cli/status_command.hpp"
#include "fabric/cli/top_command.hpp"
#include "fabric/cli/up_command.hpp"
#include "fabric/compare/compare_command.hpp"
#include "fabric/compare/softroce_suite.hpp"
#include "fabric/config/config_overlay.hpp"
#include "fabric/config/topology_config.hpp"
#include "fabric/platform/huge_page_heap.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/sim/sim_command.hpp"

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: ethx <command> [options]\n"
    "commands:\n"
    "  bench    start a fabric, run the load/store microbenchmarks, stop it\n"
    "  compare  load/store vs the RoCEv2 engine (and Soft-RoCE) on one fabric: a report\n"
    "  up       start a fabric that keeps running (docs/operations.md)\n"
    "  status   show a running fabric's processes and per-port counters\n"
    "  down     stop a running fabric and remove everything it made\n"
    "  fault    change the faults a switch port of a running fabric injects\n"
    "  capture  record what a switch port of a running fabric receives and sends (pcap)\n"
    "  top      live per-port rates, queues and drops of a running fabric's switch\n"
    "  restart-switch  replace a running fabric's switch process; the nodes continue\n"
    "  run      run a program in the VMs of a running fabric (docs/programs.md)\n"
    "  oshrun   run an OpenSHMEM program, one PE per GPU (build/bin/oshrun; docs/shmem.md)\n"
    "  guest    run an ethx-guest command in a VM of a running fabric\n"
    "  config   print the embedded default topology (TOML) or check a file\n"
    "  sim      run a workload on a simulated fabric in modelled time (docs/simulator.md)\n"
    "  soak     long verified run with injected loss and corruption (docs/reliability.md)\n"
    "  softroce perftest between two VMs' Soft-RoCE on the switch, engine interop (softroce.md)\n"
    "run `ethx <command> --help` for its options\n";

// Parses a subcommand's options; false when --help was asked for (and printed).
bool parse_options(int argc, char** argv, const po::options_description& description,
                   po::variables_map& vm) {
  po::store(po::parse_command_line(argc, argv, description), vm);
  if (vm.count("help")) {
    std::cout << description << "\n";
    return false;
  }
  po::notify(vm);
  return true;
}

int bench(int argc, char** argv) {
  ethx::BenchOptions options;
  po::options_description description("ethx bench options");
  description.add_options()("help", "show this help")(
      "gpus", po::value(&options.gpus), "number of GPUs (default: from the topology, 8)")(
      "transport", po::value(&options.transport)->default_value("shm"),
      "shm | afxdp | afpacket | auto")("config", po::value(&options.config_path),
                                       "topology file (default: embedded)")(
      "json", po::bool_switch(&options.json), "print one JSON object on stdout")(
      "quick", po::bool_switch(&options.quick), "smaller runs (CI smoke test)")(
      "quiet", po::bool_switch(&options.quiet), "no progress messages on stderr")(
      "engine", po::value(&options.engine)->default_value("load-store"),
      "load-store | roce: the RoCEv2 engine on the same fabric (docs/roce.md)")(
      "fabric", po::value(&options.fabric),
      "run on the fabric `ethx up --name NAME` started (its GPUs and transport)")(
      "vms", po::value(&options.vms)->implicit_value(0),
      "run the suite inside VMs: those `ethx up --vms` started, else N (default 2) temporary "
      "ones (docs/vms.md)")("gpus-per-vm", po::value(&options.gpus_per_vm)->default_value(4),
                            "ethx-gpu devices per VM (temporary VMs)")(
      "reliability", po::value<std::string>(),
      "off | go-back-n: overrides the topology's [reliability] mode (docs/reliability.md)");
  po::variables_map vm;
  if (!parse_options(argc, argv, description, vm)) return 0;
  if (vm.count("reliability") && !options.fabric.empty() && !options.with_vms) {
    std::cerr << "ethx bench: --fabric uses the running fabric's config; drop --reliability\n";
    return 2;
  }
  options.with_vms = vm.count("vms") != 0;
  if (options.engine != "load-store" && options.engine != "roce") {
    std::cerr << "ethx bench: --engine: must be \"load-store\" or \"roce\"\n";
    return 2;
  }
  // VMs default to the fastest transport this machine allows (AF_XDP, else shared memory).
  if (options.with_vms && vm["transport"].defaulted()) options.transport = "auto";
  if (!options.fabric.empty() && !options.with_vms &&
      (vm.count("gpus") || !vm["transport"].defaulted() || vm.count("config"))) {
    std::cerr << "ethx bench: --fabric uses the running fabric's GPUs, transport and config; "
                 "drop --gpus, --transport and --config\n";
    return 2;
  }
  std::optional<ethx::ScopedConfigOverlay> overlay;
  if (vm.count("reliability")) {
    ethx::ConfigOverlay changes;
    changes.reliability_mode = vm["reliability"].as<std::string>();
    if (!ethx::parse_reliability_mode(*changes.reliability_mode)) {
      std::cerr << "ethx bench: --reliability: must be \"off\" or \"go-back-n\"\n";
      return 2;
    }
    overlay.emplace(options.config_path, changes, "bench");
    options.config_path = overlay->path();
  }
  return ethx::run_bench(options);
}

int compare(int argc, char** argv) {
  ethx::CompareOptions options;
  po::options_description description("ethx compare options");
  description.add_options()("help", "show this help")(
      "gpus", po::value(&options.gpus), "number of GPUs (default: 4 with --quick, else 8)")(
      "transport", po::value(&options.transport)->default_value("shm"),
      "shm | afxdp | afpacket | auto")("config", po::value(&options.config_path),
                                       "topology file (default: embedded)")(
      "out", po::value(&options.out_dir)->default_value(options.out_dir),
      "report directory (report.md, plots, data)")("quick", po::bool_switch(&options.quick),
                                                   "pinned small sizes and counts (CI)")(
      "quiet", po::bool_switch(&options.quiet), "no progress messages on stderr");
  po::variables_map vm;
  if (!parse_options(argc, argv, description, vm)) return 0;
  if (options.out_dir.empty()) {
    std::cerr << "ethx compare: --out: must name a directory\n";
    return 2;
  }
  return ethx::run_compare(options);
}

int soak(int argc, char** argv) {
  ethx::SoakOptions options;
  po::options_description description("ethx soak options");
  description.add_options()("help", "show this help")(
      "gpus", po::value(&options.gpus), "number of GPUs (default: from the topology, 8)")(
      "transport", po::value(&options.transport)->default_value("shm"),
      "shm | afxdp | afpacket | auto")("config", po::value(&options.config_path),
                                       "topology file (default: embedded)")(
      "ops", po::value(&options.ops)->default_value(options.ops),
      "operations in the faulted run, over all GPUs")(
      "baseline-ops", po::value(&options.baseline_ops),
      "operations in each run without faults (default: min(ops, 2000000))")(
      "loss", po::value(&options.loss_rate)->default_value(options.loss_rate),
      "probability that the switch drops a frame, every port")(
      "corrupt", po::value(&options.corrupt_rate)->default_value(options.corrupt_rate),
      "probability that the switch flips a bit of a frame")(
      "reorder", po::value(&options.reorder_rate)->default_value(options.reorder_rate),
      "probability that a frame overtakes the one before it")(
      "reliability", po::value(&options.reliability)->default_value(options.reliability),
      "off | go-back-n (off shows what the faults do unprotected)")(
      "link-retry", po::value(&options.link_retry),
      "none | llr: link-level retry on every hop (default: as the config has it)")(
      "flow-control", po::value(&options.flow_control),
      "none | cbfc | pfc: flow control per traffic class on every hop, with --link-retry llr "
      "(default: as the config has it)")(
      "fault-direction", po::value(&options.fault_direction)->default_value("rx"),
      "rx | tx | both: faults on what each switch port receives, sends, or both")(
      "seed", po::value(&options.seed)->default_value(1), "workload and fault seed")(
      "fabric", po::value(&options.fabric),
      "one run on the fabric `ethx up --name NAME` started, as it is configured")(
      "no-baselines", po::bool_switch(&options.skip_baselines),
      "only the faulted run (no fault-free runs to compare with)")(
      "json", po::bool_switch(&options.json), "print one JSON object on stdout")(
      "quiet", po::bool_switch(&options.quiet), "no progress messages on stderr");
  po::variables_map vm;
  if (!parse_options(argc, argv, description, vm)) return 0;
  return ethx::run_soak(options);
}

int up(int argc, char** argv) {
  ethx::UpOptions options;
  po::options_description description("ethx up options");
  description.add_options()("help", "show this help")(
      "name", po::value(&options.name)->default_value("default"), "the fabric's name")(
      "gpus", po::value(&options.gpus), "number of GPUs (default: from the topology, 8)")(
      "transport", po::value(&options.transport)->default_value("shm"),
      "shm | afxdp | afpacket | auto")("config", po::value(&options.config_path),
                                       "topology file (default: embedded)")(
      "quiet", po::bool_switch(&options.quiet), "no progress messages on stderr")(
      "vms", po::value(&options.vms)->implicit_value(2),
      "GPUs 0.. live in this many QEMU VMs (alone: 2; docs/vms.md)")(
      "gpus-per-vm", po::value(&options.gpus_per_vm)->default_value(4), "ethx-gpu devices per VM")(
      "vm-append", po::value(&options.vm_append), "extra guest kernel command line")(
      "guest-nics", po::bool_switch(&options.guest_nics),
      "each VM gets a NIC on the switch and Soft-RoCE (RDMA image; docs/softroce.md)");
  po::variables_map vm;
  if (!parse_options(argc, argv, description, vm)) return 0;
  if (options.vms > 0 && vm["transport"].defaulted()) options.transport = "auto";
  return ethx::run_up(options);
}

int down(int argc, char** argv) {
  ethx::DownOptions options;
  po::options_description description("ethx down options");
  description.add_options()("help", "show this help")(
      "name", po::value(&options.name)->default_value("default"), "the fabric's name")(
      "all", po::bool_switch(&options.all), "every fabric that is up")(
      "quiet", po::bool_switch(&options.quiet), "print nothing");
  po::variables_map vm;
  if (!parse_options(argc, argv, description, vm)) return 0;
  return ethx::run_down(options);
}

int guest(int argc, char** argv) {
  ethx::GuestOptions options;
  po::options_description description("ethx guest options (then the ethx-guest command)");
  description.add_options()("help", "show this help")(
      "name", po::value(&options.name)->default_value("default"), "the fabric's name")(
      "vm", po::value(&options.vm)->default_value(0), "which VM")(
      "timeout-s", po::value<std::int64_t>()->default_value(120), "give up after this long")(
      "command", po::value(&options.arguments),
      "ethx-guest arguments, e.g. `list` or `status --gpu 1`");
  po::positional_options_description positional;
  positional.add("command", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(description).positional(positional).run(),
            vm);
  if (vm.count("help") || !vm.count("command")) {
    std::cout << "usage: ethx guest [--name N] [--vm K] -- <ethx-guest arguments>\n"
              << description << "\n";
    return vm.count("help") ? 0 : 2;
  }
  po::notify(vm);
  options.timeout_ms = vm["timeout-s"].as<std::int64_t>() * 1000;
  return ethx::run_guest(options);
}

// `ethx run`: its own parser (fabric/cli/run_command.hpp): the program's arguments are not
// ethx's options.
int run(int argc, char** argv) {
  const ethx::RunOptions options =
      ethx::parse_run_options(std::vector<std::string>(argv + 1, argv + argc));
  if (options.help) {
    std::cout << ethx::run_help();
    return 0;
  }
  return ethx::run_in_vms(options);
}

// `ethx oshrun` (build/bin/oshrun): its own parser, like `ethx run`.
int oshrun(int argc, char** argv) {
  const ethx::OshrunOptions options =
      ethx::parse_oshrun_options(std::vector<std::string>(argv + 1, argv + argc));
  if (options.help) {
    std::cout << ethx::oshrun_help();
    return 0;
  }
  return ethx::run_oshrun(options);
}

int status(int argc, char** argv) {
  ethx::StatusOptions options;
  po::options_description description("ethx status options");
  description.add_options()("help", "show this help")(
      "name", po::value(&options.name)->default_value("default"), "the fabric's name")(
      "json", po::bool_switch(&options.json), "print one JSON object on stdout");
  po::variables_map vm;
  if (!parse_options(argc, argv, description, vm)) return 0;
  return ethx::run_status(options);
}

// Copies an option the user gave into `target` (left empty otherwise).
template <class T>
void take(const po::variables_map& vm, const char* name, std::optional<T>& target) {
  if (vm.count(name)) target = vm[name].as<T>();
}

int fault(int argc, char** argv) {
  ethx::FaultOptions options;
  po::options_description description(
      "ethx fault options (only what is given changes; docs/operations.md)");
  description.add_options()("help", "show this help")(
      "name", po::value(&options.name)->default_value("default"), "the fabric's name")(
      "port", po::value<long long>(), "the switch port (= GPU id) whose received frames suffer")(
      "drop", po::value<double>(), "probability a frame is lost, 0-1")(
      "corrupt", po::value<double>(), "probability one bit of a frame flips, 0-1")(
      "reorder", po::value<double>(), "probability a frame overtakes the one before it, 0-1")(
      "delay-spike-rate", po::value<double>(),
      "probability a frame stalls the port's ingress link, 0-1")(
      "delay-spike-us", po::value<double>(), "how long a stall lasts, microseconds")(
      "link", po::value<std::string>(), "up | down")("clear", po::bool_switch(&options.clear),
                                                     "first reset the port: no faults, link up")(
      "json", po::bool_switch(&options.json), "print the switch's answer as JSON")(
      "timeout-ms", po::value(&options.timeout_ms)->default_value(5000),
      "give up if the switch has not answered by then");
  po::variables_map vm;
  if (!parse_options(argc, argv, description, vm)) return 0;
  take(vm, "port", options.port);
  take(vm, "drop", options.drop);
  take(vm, "corrupt", options.corrupt);
  take(vm, "reorder", options.reorder);
  take(vm, "delay-spike-rate", options.delay_spike_rate);
  take(vm, "delay-spike-us", options.delay_spike_us);
  take(vm, "link", options.link);
  return ethx::run_fault(options);
}

int capture(int argc, char** argv) {
  ethx::CaptureOptions options;
  po::options_description description(
      "ethx capture options (a pcap of what one switch port receives and sends; "
      "docs/wireshark.md)");
  description.add_options()("help", "show this help")(
      "name", po::value(&options.name)->default_value("default"), "the fabric's name")(
      "port", po::value<long long>(), "the switch port (= GPU id) to record")(
      "write,w", po::value(&options.path), "the pcap file (default: ethx-NAME-portP.pcap)")(
      "count", po::value(&options.count)->default_value(0), "stop after K frames (0: no limit)")(
      "duration-s", po::value(&options.duration_s)->default_value(0),
      "stop after S seconds (0: no limit; Ctrl-C stops it too)")(
      "json", po::bool_switch(&options.json), "print the result as JSON")(
      "timeout-ms", po::value(&options.timeout_ms)->default_value(5000),
      "give up if the switch has not answered a request by then");
  po::variables_map vm;
  if (!parse_options(argc, argv, description, vm)) return 0;
  take(vm, "port", options.port);
  return ethx::run_capture(options);
}

int top(int argc, char** argv) {
  ethx::TopOptions options;
  po::options_description description(
      "ethx top options (live per-port view of a running fabric's switch; q quits)");
  description.add_options()("help", "show this help")(
      "name", po::value(&options.name)->default_value("default"), "the fabric's name")(
      "interval-s", po::value(&options.interval_s)->default_value(1.0), "seconds per refresh")(
      "iterations", po::value(&options.iterations)->default_value(0),
      "stop after K refreshes (0: until q)")("json", po::bool_switch(&options.json),
                                             "one JSON object per refresh instead of a screen");
  po::variables_map vm;
  if (!parse_options(argc, argv, description, vm)) return 0;
  return ethx::run_top(options);
}

int restart_switch(int argc, char** argv) {
  ethx::RestartSwitchOptions options;
  po::options_description description("ethx restart-switch options");
  description.add_options()("help", "show this help")(
      "name", po::value(&options.name)->default_value("default"), "the fabric's name")(
      "quiet", po::bool_switch(&options.quiet), "print nothing on success");
  po::variables_map vm;
  if (!parse_options(argc, argv, description, vm)) return 0;
  return ethx::run_restart_switch(options);
}

int sim(int argc, char** argv) {
  const ethx::SimCommandLine line = ethx::parse_sim_command_line(argc, argv);
  if (line.help) {
    std::cout << line.help_text << "\n";
    return 0;
  }
  return ethx::sim::run_sim_command(line.options);
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

// `ethx softroce`: run_softroce_suite alone; exit 0 when available and verified, 3 when a
// prerequisite is missing (the reason is printed), 1 otherwise.
int softroce(int argc, char** argv) {
  ethx::SoftRoceOptions options;
  bool json = false;
  po::options_description description("ethx softroce options");
  description.add_options()("help", "show this help")("quick", po::bool_switch(&options.quick),
                                                      "fewer sizes and iterations (a few minutes)")(
      "json", po::bool_switch(&json), "print the report as JSON on stdout")(
      "transport", po::value(&options.transport)->default_value("auto"),
      "the GPU ports' transport: auto | afxdp | afpacket")(
      "fabric", po::value(&options.fabric)->default_value("default"),
      "use this fabric if it is up with --vms --guest-nics, else boot two VMs")(
      "time-budget", po::value(&options.time_budget_s)->default_value(600),
      "seconds after which remaining perftest runs are skipped")(
      "no-interop", "skip the RoCEv2 engine <-> rdma_rxe check");
  po::variables_map vm;
  if (!parse_options(argc, argv, description, vm)) return 0;
  options.interop = vm.count("no-interop") == 0;
  options.quiet = json;
  const nlohmann::json report = ethx::run_softroce_suite(options);
  if (json) {
    std::cout << report.dump(2) << "\n";
  } else if (!report["available"].get<bool>()) {
    std::cout << "soft-roce: not available: " << report["reason"].get<std::string>() << "\n";
  } else {
    for (const auto& row : report["latency_us"]) std::cout << "latency   " << row.dump() << "\n";
    for (const auto& row : report["bandwidth_gbps"])
      std::cout << "bandwidth " << row.dump() << "\n";
    for (const auto& row : report["message_rate_mops"])
      std::cout << "msg rate  " << row.dump() << "\n";
    for (const auto& note : report["notes"])
      std::cout << "note: " << note.get<std::string>() << "\n";
    std::cout << "verified: " << (report["verified"].get<bool>() ? "yes" : "NO") << "\n";
    // The load/store benches of the same two VMs (details.same_vms_load_store).
    const nlohmann::json details = report.value("details", nlohmann::json::object());
    if (details.contains("same_vms_load_store")) {
      const nlohmann::json& same = details["same_vms_load_store"];
      if (!same.value("available", false)) {
        std::cout << "same-VM load/store: not available: " << same.value("reason", std::string())
                  << "\n";
      } else {
        for (const auto& row : same["latency_us"])
          std::cout << "same-VM load/store latency   " << row.dump() << "\n";
        for (const auto& row : same["bandwidth_gbps"])
          std::cout << "same-VM load/store bandwidth " << row.dump() << "\n";
        std::cout << "same-VM load/store verified: "
                  << (same.value("verified", false) ? "yes" : "NO") << "\n";
      }
    }
  }
  if (!report["available"].get<bool>()) return 3;
  return report["verified"].get<bool>() ? 0 : 1;
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
    if (command == "compare") return compare(argc - 1, argv + 1);
    if (command == "sim") {
      // Huge pages make the simulator faster (docs/simulator.md, "Round 6"); this returns
      // only if they were asked for already, turned off, or the exec failed.
      if (const std::string why = ethx::reexec_with_huge_page_heap(argv); !why.empty()) {
        std::cerr << "ethx sim: running with 4 KiB pages (" << why << ")\n";
      }
      return sim(argc - 1, argv + 1);
    }
    if (command == "soak") return soak(argc - 1, argv + 1);
    if (command == "up") return up(argc - 1, argv + 1);
    if (command == "down") return down(argc - 1, argv + 1);
    if (command == "status") return status(argc - 1, argv + 1);
    if (command == "guest") return guest(argc - 1, argv + 1);
    if (command == "run") return run(argc - 1, argv + 1);
    if (command == "oshrun") return oshrun(argc - 1, argv + 1);
    if (command == "fault") return fault(argc - 1, argv + 1);
    if (command == "capture") return capture(argc - 1, argv + 1);
    if (command == "top") return top(argc - 1, argv + 1);
    if (command == "restart-switch") return restart_switch(argc - 1, argv + 1);
    if (command == "softroce") return softroce(argc - 1, argv + 1);
    std::cerr << "ethx: unknown command \"" << command << "\"\n" << kUsage;
    return 2;
  } catch (const ethx::Interrupted&) {
    // A watched process exited (process_watcher.hpp): one line naming it, status 1.
    if (const std::string reason = ethx::stop_reason(); !reason.empty()) {
      std::cerr << "ethx " << command << ": " << reason << "\n";
      return 1;
    }
    std::cerr << "ethx " << command << ": interrupted; everything it started was stopped\n";
    return 130;
  } catch (const ethx::ConfigError& error) {
    std::cerr << "ethx: config error: " << error.what() << "\n";
    return 2;
  } catch (const po::error& error) {
    std::cerr << "ethx " << command << ": " << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {
    // After a watched process exited, other errors are its consequences: name the cause.
    const std::string reason = ethx::stop_reason();
    std::cerr << "ethx " << command << ": " << (reason.empty() ? error.what() : reason) << "\n";
    return 1;
  }
}
