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
#include "fabric/vm/vm_plan.hpp"
#include "qemu-device/agent-protocol/agent_protocol.hpp"

namespace ethx {

namespace po = boost::program_options;

namespace {

// The rdma backend's out-of-band port in VM 0: one per job, so a stale PE 0 of an earlier job
// is not what this job's PEs reach (docs/shmem.md).
constexpr std::uint32_t kOobFirstPort = 20000;
constexpr std::uint32_t kOobPorts = 20000;

constexpr const char* kOshrunUsage =
    "usage: oshrun -np N [--backend load-store|rdma] [--gpus-per-vm G] [--timeout-s S]\n"
    "              [--name F] [--env NAME=VALUE]... PROGRAM [ARGS...]\n"
    "Runs an OpenSHMEM program built with oshcc as N PEs, PE k on GPU k: in the VMs of the\n"
    "fabric F (`ethx up --vms`, default `default`) if it has N GPUs, else in ceil(N/G) VMs it\n"
    "boots for the job and removes afterwards (docs/shmem.md). --backend rdma runs the same\n"
    "program over libibverbs on the VMs' Soft-RoCE: it needs VMs with guest NICs (oshrun boots\n"
    "them so; a running fabric must have been started with --guest-nics).\n";

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
      "backend", po::value(&options.backend)->default_value("load-store"),
      "load-store (the fabric's windows) or rdma (libibverbs on the guest NICs)")(
      "transport", po::value(&options.transport),
      "transport of the VMs oshrun boots (shm, afxdp, afpacket; default shm, afpacket for rdma)")(
      "env", po::value(&options.env)->composing(), "NAME=VALUE for the PEs; repeatable");
  return description;
}

// Open MPI and others spell it `-np 4`; boost wants `--np 4`.
std::vector<std::string> normalise(const std::vector<std::string>& args) {
  std::vector<std::string> out = args;
  std::replace(out.begin(), out.end(), std::string("-np"), std::string("--np"));
  return out;
}

struct BootedFabric {
  std::string name;
  bool booted = false;
};

bool is_rdma(const OshrunOptions& options) {
  return options.backend == "rdma";
}

// The VMs oshrun boots: shm unless told, afpacket for rdma (guest NICs need a socket transport).
std::string boot_transport(const OshrunOptions& options) {
  if (!options.transport.empty()) return options.transport;
  return is_rdma(options) ? "afpacket" : "shm";
}

int run_ethx(const std::vector<std::string>& arguments) {
  std::vector<std::string> argv = {executable_directory() + "/ethx"};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  ChildProcess child = ChildProcess::spawn(argv);
  while (!child.wait_exit(1000)) {
  }
  return child.exit_status();
}

// The named fabric if it is up with VMs holding at least N GPUs (and, for rdma, guest NICs),
// else VMs booted for the job: with guest NICs and so the RDMA guest image for rdma.
std::optional<BootedFabric> choose_fabric(const OshrunOptions& options) {
  const std::optional<RunState> state = RunDirectory(options.name).load();
  if (state && state->vms > 0 && state->vms * state->gpus_per_vm >= options.pes) {
    if (is_rdma(options) && !state->guest_nics) {
      std::cerr << "oshrun: --backend rdma needs VMs with guest NICs (Soft-RoCE, rxe0): fabric '"
                << options.name << "' was started without --guest-nics; start it with `ethx up "
                << "--name " << options.name << " --vms " << state->vms << " --gpus-per-vm "
                << state->gpus_per_vm << " --guest-nics --transport afpacket`, or name a "
                << "fabric that is not up (--name) and oshrun boots VMs of its own\n";
      return std::nullopt;
    }
    return BootedFabric{options.name, false};
  }
  const std::size_t vms = (options.pes + options.gpus_per_vm - 1) / options.gpus_per_vm;
  BootedFabric fabric{"oshrun-" + std::to_string(::getpid()), true};
  std::cerr << "oshrun: booting " << vms << " VM" << (vms == 1 ? "" : "s") << " x "
            << options.gpus_per_vm << " GPUs for " << options.pes << " PEs (fabric '" << fabric.name
            << "'" << (is_rdma(options) ? ", guest NICs for rdma" : "") << ")\n";
  std::vector<std::string> up = {"up", "--name", fabric.name, "--vms", std::to_string(vms)};
  up.insert(up.end(), {"--gpus-per-vm", std::to_string(options.gpus_per_vm), "--transport",
                       boot_transport(options), "--quiet"});
  if (is_rdma(options)) up.emplace_back("--guest-nics");
  const int status = run_ethx(up);
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
  // Every option but --help takes a value (unless given as --option=value).
  const auto takes_value = [](const std::string& arg) {
    return arg.find('=') == std::string::npos && arg != "--help";
  };
  const std::size_t start = program_start(args, takes_value, has_separator);
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
  if (options.backend != "load-store" && options.backend != "rdma") {
    throw po::error("--backend " + options.backend + ": load-store or rdma");
  }
  if (is_rdma(options) && options.transport == "shm") {
    throw po::error("--backend rdma: --transport shm gives the VMs no NICs; use afpacket or afxdp");
  }
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
  const std::uint32_t job = new_job_id();
  run.env.push_back("ETHX_SHMEM_JOB=" + std::to_string(job));
  run.env.push_back("ETHX_SHMEM_BACKEND=" + options.backend);
  if (is_rdma(options)) {
    // PE 0 runs on GPU 0, in VM 0: it listens there for the queue-pair exchange.
    run.env.push_back("ETHX_SHMEM_OOB=" + guest_nic_ip(0) + ":" +
                      std::to_string(kOobFirstPort + job % kOobPorts));
  }
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
