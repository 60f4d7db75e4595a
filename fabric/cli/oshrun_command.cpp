#include "fabric/cli/oshrun_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <iostream>
#include <random>
#include <sstream>

#include "fabric/cli/run_command.hpp"
#include "fabric/control/run_state.hpp"
#include "fabric/platform/child_process.hpp"
#include "qemu-device/agent-protocol/agent_protocol.hpp"

namespace ethx {

namespace po = boost::program_options;

namespace {

constexpr const char* kOshrunUsage =
    "usage: oshrun -np N [--gpus-per-vm G] [--timeout-s S] [--name F] [--env NAME=VALUE]...\n"
    "              PROGRAM [ARGS...]\n"
    "Runs an OpenSHMEM program built with oshcc as N PEs, PE k on GPU k: in the VMs of the\n"
    "fabric F (`ethx up --vms`, default `default`) if it has N GPUs, else in ceil(N/G) VMs it\n"
    "boots for the job and removes afterwards (docs/shmem.md).\n";

po::options_description oshrun_option_descriptions(OshrunOptions& options) {
  po::options_description description("oshrun options");
  description.add_options()("help", "show this help")("np,n", po::value(&options.pes),
                                                      "number of PEs (one per GPU)")(
      "gpus-per-vm", po::value(&options.gpus_per_vm)->default_value(4),
      "GPUs per VM when oshrun boots the VMs")("timeout-s",
                                               po::value(&options.timeout_s)->default_value(0),
                                               "stop every PE after this long (0: no limit)")(
      "name", po::value(&options.name)->default_value("default"),
      "use this fabric if it is up with enough GPUs")(
      "transport", po::value(&options.transport)->default_value("shm"),
      "transport of the VMs oshrun boots (shm, afxdp, afpacket)")(
      "env", po::value(&options.env)->composing(), "NAME=VALUE for the PEs; repeatable");
  return description;
}

// Open MPI and others spell it `-np 4`; boost wants `--np 4`.
std::vector<std::string> normalise(const std::vector<std::string>& args) {
  std::vector<std::string> out = args;
  std::replace(out.begin(), out.end(), std::string("-np"), std::string("--np"));
  return out;
}

// Where the options end: `--`, or the first word that is not an option or an option's value.
std::size_t program_start(const std::vector<std::string>& args, bool& has_separator) {
  has_separator = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      has_separator = true;
      return i;
    }
    if (arg.empty() || arg[0] != '-') return i;
    if (arg.find('=') == std::string::npos && arg != "--help") ++i;  // every option has a value
  }
  return args.size();
}

struct BootedFabric {
  std::string name;
  bool booted = false;
};

// The fabric to run in: the named one if it is up with VMs holding at least `pes` GPUs.
bool fabric_has_gpus(const std::string& name, std::size_t pes) {
  const std::optional<RunState> state = RunDirectory(name).load();
  return state && state->vms > 0 && state->vms * state->gpus_per_vm >= pes;
}

int run_ethx(const std::vector<std::string>& arguments) {
  std::vector<std::string> argv = {executable_directory() + "/ethx"};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  ChildProcess child = ChildProcess::spawn(argv);
  while (!child.wait_exit(1000)) {
  }
  return child.exit_status();
}

std::optional<BootedFabric> choose_fabric(const OshrunOptions& options) {
  if (fabric_has_gpus(options.name, options.pes)) return BootedFabric{options.name, false};
  const std::size_t vms = (options.pes + options.gpus_per_vm - 1) / options.gpus_per_vm;
  BootedFabric fabric{"oshrun-" + std::to_string(::getpid()), true};
  std::cerr << "oshrun: booting " << vms << " VM" << (vms == 1 ? "" : "s") << " x "
            << options.gpus_per_vm << " GPUs for " << options.pes << " PEs (fabric '" << fabric.name
            << "')\n";
  const int status =
      run_ethx({"up", "--name", fabric.name, "--vms", std::to_string(vms), "--gpus-per-vm",
                std::to_string(options.gpus_per_vm), "--transport", options.transport, "--quiet"});
  if (status != 0) {
    std::cerr << "oshrun: `ethx up --name " << fabric.name << "` failed (status " << status
              << "); nothing was run\n";
    run_ethx({"down", "--name", fabric.name, "--quiet"});
    return std::nullopt;
  }
  return fabric;
}

// A job id that differs between runs: PEs tag their synchronisation flags with it, so flags
// an earlier job left in a GPU's memory never satisfy this job's waits.
std::uint32_t new_job_id() {
  std::random_device device;
  return device() & 0x7fffffffu;
}

}  // namespace

std::string oshrun_help() {
  OshrunOptions options;
  std::ostringstream text;
  text << kOshrunUsage << oshrun_option_descriptions(options) << "\n";
  return text.str();
}

OshrunOptions parse_oshrun_options(const std::vector<std::string>& raw_args) {
  const std::vector<std::string> args = normalise(raw_args);
  OshrunOptions options;
  bool has_separator = false;
  const std::size_t start = program_start(args, has_separator);
  const std::vector<std::string> option_args(args.begin(),
                                             args.begin() + static_cast<std::ptrdiff_t>(start));
  options.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(start + (has_separator ? 1 : 0)),
                      args.end());
  const po::options_description description = oshrun_option_descriptions(options);
  po::variables_map vm;
  po::store(po::command_line_parser(option_args).options(description).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    options.help = true;
    return options;
  }
  if (options.pes == 0) throw po::error("-np: give the number of PEs, 1 or more");
  if (options.gpus_per_vm == 0) throw po::error("--gpus-per-vm: must be 1 or more");
  if (options.timeout_s < 0) throw po::error("--timeout-s: must be 0 (none) or more seconds");
  for (const std::string& entry : options.env) {
    if (!agent::valid_environment_entry(entry)) {
      throw po::error("--env " + entry + ": not NAME=VALUE");
    }
  }
  if (options.argv.empty()) throw po::error("no program: e.g. `oshrun -np 4 ./my_program`");
  return options;
}

int run_oshrun(const OshrunOptions& options) {
  const std::optional<BootedFabric> fabric = choose_fabric(options);
  if (!fabric) return 1;
  RunOptions run;
  run.name = fabric->name;
  run.all_vms = true;
  run.per_gpu = true;
  run.timeout_s = options.timeout_s;
  run.env = options.env;
  run.env.push_back("ETHX_SHMEM_NPES=" + std::to_string(options.pes));
  run.env.push_back("ETHX_SHMEM_JOB=" + std::to_string(new_job_id()));
  run.argv = options.argv;
  run.max_copies = options.pes;
  run.stop_on_failure = true;
  run.name_by_gpu = true;
  run.label = "oshrun";
  const int status = run_in_vms(run);
  if (fabric->booted) run_ethx({"down", "--name", fabric->name, "--quiet"});
  return status;
}

}  // namespace ethx
