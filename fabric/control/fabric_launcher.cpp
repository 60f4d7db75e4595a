#include "fabric/control/fabric_launcher.hpp"
#include "fabric/platform/clock.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "fabric/config/fabric_names.hpp"
#include "fabric/control/switch_launch.hpp"
#include "fabric/platform/process_identity.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/platform/readiness_pipe.hpp"
#include "fabric/transport/net/socket_transport.hpp"

namespace ethx {
namespace {

constexpr std::int64_t kStartTimeoutNs = 30'000'000'000;
constexpr std::int64_t kPollSliceNs = 100'000'000;
constexpr const char* kRunRecordDirectory = "/run/ethx/bench";

}  // namespace

std::vector<std::string> reap_stale_bench_runs() {
  std::vector<std::string> removed;
  std::error_code error;
  if (!std::filesystem::is_directory(kRunRecordDirectory, error)) return removed;
  for (const auto& entry : std::filesystem::directory_iterator(kRunRecordDirectory, error)) {
    const std::string tag = entry.path().filename().string();
    if (!netns::valid_tag(tag)) continue;
    std::ifstream in(entry.path());
    long pid = 0;
    std::string start_time;
    in >> pid >> start_time;
    if (pid > 0 && same_process_running(static_cast<pid_t>(pid), start_time)) {
      continue;  // its coordinator still runs
    }
    for (std::string& name : netns::cleanup_by_prefix(netns::run_prefix(tag))) {
      removed.push_back(std::move(name));
    }
    std::filesystem::remove(entry.path(), error);
  }
  return removed;
}

FabricLauncher::FabricLauncher(std::string fabric_name, std::string config_path,
                               TopologyConfig topology, LaunchOptions options)
    : fabric_name_(std::move(fabric_name)),
      config_path_(std::move(config_path)),
      topology_(std::move(topology)),
      options_(std::move(options)) {
  require_emulated(topology_);
  if (!options_.detached) watcher_ = std::make_unique<ProcessWatcher>();
  if (is_socket_transport(options_.transport) && options_.netns_tag.empty()) {
    options_.netns_tag = bench_tag(::getpid());
  }
  if (options_.vms.guest_nics && !is_socket_transport(options_.transport)) {
    throw std::invalid_argument(
        "guest NICs need the switch on sockets: --transport afxdp or afpacket (as root), not " +
        options_.transport);
  }
  if (options_.stats_path.empty()) {
    options_.stats_path = (std::filesystem::temp_directory_path() /
                           (std::string(kNamePrefix) + fabric_name_ + "-switch-stats.json"))
                              .string();
  }
}

FabricLauncher::~FabricLauncher() {
  if (detached_) return;
  if (!stopped_) {
    try {
      stop();
    } catch (...) {
      // Destructors must not throw; the files are removed below regardless.
    }
  }
  remove_files();
  remove_socket_topology();
}

std::vector<std::string> FabricLauncher::shared_memory_names() const {
  std::vector<std::string> names = {control_region_name(fabric_name_)};
  if (!is_socket_transport(options_.transport)) names.push_back(switch_region_name(fabric_name_));
  for (std::size_t gpu = 0; gpu < topology_.gpu_count; ++gpu) {
    names.push_back(hbm_file_name(fabric_name_, static_cast<GpuId>(gpu)));
  }
  return names;
}

void FabricLauncher::write_run_record() {
  // Detached fabrics are recorded by `ethx up` in their run directory instead.
  if (!run_record_.empty() || options_.detached) return;
  for (const std::string& name : reap_stale_bench_runs()) {
    std::cerr << "ethx: removed " << name << ", left by an earlier run that was killed\n";
  }
  std::error_code error;
  std::filesystem::create_directories(kRunRecordDirectory, error);
  run_record_ = std::string(kRunRecordDirectory) + "/" + options_.netns_tag;
  std::ofstream record(run_record_);
  record << ::getpid() << " " << process_start_time(::getpid()) << "\n";
}

RawPingPongResult FabricLauncher::measure_raw_pingpong(std::uint32_t rounds,
                                                       std::uint32_t samples_per_round) {
  write_run_record();
  const unsigned mtu = static_cast<unsigned>(topology_.frame_bytes_max) - 14;
  return ethx::measure_raw_pingpong(options_.transport, options_.netns_tag, mtu, rounds,
                                    samples_per_round);
}

void FabricLauncher::create_network() {
  if (veths_ || !is_socket_transport(options_.transport)) return;
  write_run_record();
  const unsigned mtu = static_cast<unsigned>(topology_.frame_bytes_max) - 14;
  netns::TopologySpec spec = netns::star_topology(options_.netns_tag, topology_.gpu_count, mtu);
  if (options_.vms.guest_nics) netns::add_guest_nics(spec, options_.vms.count);
  veths_ = std::make_unique<netns::VethTopology>(std::move(spec));
}

void FabricLauncher::remove_socket_topology() {
  if (veths_) {
    veths_->destroy();
    if (!veths_->destroy_error().empty()) {
      std::cerr << "ethx: cleanup: " << veths_->destroy_error() << "\n";
    }
    veths_.reset();
  }
  if (!run_record_.empty()) {
    std::error_code ignored;
    std::filesystem::remove(run_record_, ignored);
    run_record_.clear();
  }
}

void FabricLauncher::remove_files() {
  for (const std::string& name : shared_memory_names()) shm::SharedMemoryFile::remove(name);
  std::error_code ignored;
  std::filesystem::remove(options_.stats_path, ignored);
}

ChildProcess FabricLauncher::spawn(const std::vector<std::string>& argv,
                                   const std::string& log_name, int ready_fd) {
  ChildProcess::SpawnOptions spawn_options;
  spawn_options.inherit_fd = ready_fd;
  if (options_.detached) spawn_options.new_session = true;
  if (!options_.log_directory.empty()) {
    spawn_options.log_path = options_.log_directory + "/" + log_name + ".log";
  }
  ChildProcess child = ChildProcess::spawn(argv, spawn_options);
  if (options_.on_spawn) options_.on_spawn(log_name, child.pid());
  if (watcher_) {
    const std::string hint =
        spawn_options.log_path.empty()
            ? ""
            : "its log: " + spawn_options.log_path +
                  (log_name.starts_with("vm-")
                       ? " (console: " + options_.log_directory + "/" + log_name + ".console)"
                       : "");
    watcher_->watch({log_name, child.pid(), "", hint});
  }
  return child;
}

void FabricLauncher::start_switch() {
  if (switch_process_) return;
  const bool sockets = is_socket_transport(options_.transport);
  if (sockets) create_network();
  if (!control_) {
    control_.emplace(ControlRegion::create(control_region_name(fabric_name_),
                                           static_cast<std::uint32_t>(topology_.gpu_count)));
  }
  SwitchLaunch launch;
  launch.fabric = fabric_name_;
  launch.config_path = config_path_;
  launch.gpus = topology_.gpu_count;
  launch.transport = options_.transport;
  launch.netns_tag = options_.netns_tag;
  launch.stats_path = options_.stats_path;
  launch.detached = options_.detached;
  if (options_.vms.guest_nics) {
    launch.extra_ports = guest_nic_switch_ports(options_.netns_tag, options_.vms.count);
  }
  const std::vector<std::string> args = switch_arguments(launch);
  ReadinessPipe ready;
  switch_process_ = std::make_unique<ChildProcess>(spawn(args, "switch", ready.child_end()));
  ready.close_child_end();
  switch (ready.wait(kStartTimeoutNs)) {
    case ReadinessPipe::Outcome::kReady:
      break;
    case ReadinessPipe::Outcome::kClosed:
      switch_process_->wait_exit(2000);
      throw std::runtime_error("ethx-switch exited during start (" +
                               switch_process_->exit_description() + ")");
    case ReadinessPipe::Outcome::kTimeout:
      throw std::runtime_error("ethx-switch did not get ready within 30 s");
  }
  if (!sockets) region_.emplace(shm::ShmFabricRegion::attach(switch_region_name(fabric_name_)));
}

void FabricLauncher::start_nodes() {
  if (started_) return;
  const std::string bin = executable_directory();
  std::vector<std::string> common = {"--fabric", fabric_name_, "--gpus",
                                     std::to_string(topology_.gpu_count)};
  if (!config_path_.empty()) common.insert(common.end(), {"--config", config_path_});
  if (is_socket_transport(options_.transport)) {
    common.insert(common.end(),
                  {"--transport", options_.transport, "--netns-tag", options_.netns_tag});
  }
  if (options_.detached) common.push_back("--detach");
  const VmPlan& plan = options_.vms;
  // QEMU loads ethx's XDP program from wherever its device library was built; point it at the
  // object next to this ethx instead, which matches the processes it runs with.
  if (plan.count > 0) {
    const std::string object = bin + "/ethx_xdp.bpf.o";
    if (std::filesystem::exists(object)) ::setenv("ETHX_XDP_OBJECT", object.c_str(), 0);
  }
  const VmFabric vm_fabric{fabric_name_, options_.transport,  options_.netns_tag,
                           config_path_, topology_.gpu_count, options_.log_directory};
  for (std::size_t vm = 0; vm < plan.count; ++vm) {
    if (!plan.guest_nics) {
      vms_.push_back(spawn(qemu_command(plan, vm, vm_fabric), "vm-" + std::to_string(vm), -1));
      continue;
    }
    // The tap lives in the switch namespace, where QEMU cannot open it by name: it inherits
    // an open descriptor of it as descriptor 3 instead.
    const int tap = netns::open_tap(netns::switch_namespace(options_.netns_tag),
                                    netns::tap_interface(options_.netns_tag, vm));
    VmFabric with_tap = vm_fabric;
    with_tap.tap_fd = 3;
    try {
      vms_.push_back(spawn(qemu_command(plan, vm, with_tap), "vm-" + std::to_string(vm), tap));
    } catch (...) {
      ::close(tap);
      throw;
    }
    ::close(tap);
  }
  for (std::size_t gpu = plan.vm_gpus(); gpu < topology_.gpu_count; ++gpu) {
    std::vector<std::string> node_args = {bin + "/ethx-node", "--gpu", std::to_string(gpu)};
    node_args.insert(node_args.end(), common.begin(), common.end());
    nodes_.push_back(spawn(node_args, "node-" + std::to_string(gpu), -1));
  }
  // A VM's devices report ready from QEMU's realize, before its guest boots.
  // A guest that ran its boot-time commands may have powered off already (its GPUs then
  // report "exited"): it was ready.
  auto all_ready = [this] {
    for (std::uint32_t gpu = 0; gpu < control_->node_count(); ++gpu) {
      const auto state = static_cast<NodeState>(control_->node(gpu).state.load());
      const bool in_vm = gpu < options_.vms.vm_gpus();
      if (state != NodeState::kReady && !(in_vm && state == NodeState::kExited)) return false;
    }
    return true;
  };
  // VMs boot their guest (under TCG several seconds each, slower with many VMs on 2 cores).
  const std::int64_t deadline = monotonic_ns() + kStartTimeoutNs +
                                static_cast<std::int64_t>(options_.vms.count) * 30'000'000'000;
  while (!all_ready()) {
    check_alive();
    if (monotonic_ns() > deadline) {
      throw std::runtime_error("the GPUs did not all report ready in time" +
                               std::string(options_.vms.count > 0
                                               ? " (VM consoles: " + options_.log_directory + ")"
                                               : ""));
    }
    waiter_.wait(control_->header().coordinator_bell, all_ready, kPollSliceNs);
  }
  started_ = true;
  // A fabric that ends with us needs no name in /dev/shm any more: nothing is left behind
  // even if we are killed. A detached one keeps it for `ethx status` and `ethx bench --fabric`.
  if (!options_.detached) control_->unlink_name();
}

void FabricLauncher::start() {
  create_network();
  start_switch();
  start_nodes();
}

void FabricLauncher::set_switch_mode(SwitchMode mode) {
  if (!is_socket_transport(options_.transport)) {
    throw std::logic_error("set_switch_mode: only the socket transports have a bare forwarder");
  }
  ControlHeader& header = control_->header();
  const auto wanted = static_cast<std::uint32_t>(mode);
  header.switch_mode.store(wanted);
  auto active = [&header, wanted] { return header.switch_mode_active.load() == wanted; };
  const std::int64_t deadline = monotonic_ns() + 5'000'000'000;
  while (!active()) {
    check_alive();
    if (monotonic_ns() > deadline) throw std::runtime_error("ethx-switch did not change its mode");
    waiter_.wait(header.coordinator_bell, active, kPollSliceNs);
  }
}

FabricClient& FabricLauncher::client() {
  if (!client_) {
    if (!control_) throw std::logic_error("FabricLauncher::client() before start()");
    client_.emplace(*control_, region_ ? &*region_ : nullptr, [this] { check_alive(); });
  }
  return *client_;
}

void FabricLauncher::check_alive() {
  if (g_stop_requested.load()) throw Interrupted();
  // The watcher reports an exit (with how it ended) and requests the stop seen above; reaping
  // here as well would race with it for the exit status.
  if (watcher_) return;
  if (switch_process_ && !switch_process_->running()) {
    throw std::runtime_error("ethx-switch stopped unexpectedly (" +
                             switch_process_->exit_description() + ")");
  }
  const std::size_t first_node = options_.vms.vm_gpus();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].running()) {
      throw std::runtime_error("ethx-node for GPU " + std::to_string(first_node + i) +
                               " stopped unexpectedly (" + nodes_[i].exit_description() + ")");
    }
  }
  // VMs may power off on their own (`ethx bench --vms`) once they are up; during start that is
  // a failure (QEMU refused a device: its log says why).
  for (std::size_t vm = 0; vm < vms_.size() && !started_; ++vm) {
    bool reported = true;
    for (std::size_t i = 0; i < options_.vms.gpus_per_vm; ++i) {
      const std::size_t gpu = vm * options_.vms.gpus_per_vm + i;
      reported = reported && control_->node(static_cast<std::uint32_t>(gpu)).state.load() !=
                                 static_cast<std::uint32_t>(NodeState::kStarting);
    }
    if (!reported && !vms_[vm].running()) {
      throw std::runtime_error("QEMU of VM " + std::to_string(vm) + " stopped during start (" +
                               vms_[vm].exit_description() + "); see " + options_.log_directory +
                               "/vm-" + std::to_string(vm) + ".log and .console");
    }
  }
}

void FabricLauncher::terminate_all() {
  for (ChildProcess& node : nodes_) {
    if (node.running()) ::kill(node.pid(), SIGTERM);
  }
  for (ChildProcess& vm : vms_) {
    if (vm.running()) ::kill(vm.pid(), SIGTERM);
  }
  for (ChildProcess& node : nodes_) node.terminate();
  for (ChildProcess& vm : vms_) vm.terminate();
}

nlohmann::json FabricLauncher::stop() {
  stopped_ = true;
  if (watcher_) watcher_->stop_watching();  // what ends from here on, we end
  if (g_stop_requested.load()) terminate_all();
  const std::size_t first_node = options_.vms.vm_gpus();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].running() && control_) client().post_exit(static_cast<GpuId>(first_node + i));
  }
  for (ChildProcess& node : nodes_) {
    if (!node.wait_exit(5000)) node.terminate();
  }
  for (ChildProcess& vm : vms_) vm.terminate();
  nlohmann::json stats;
  if (switch_process_) {
    switch_process_->terminate();
    std::ifstream in(options_.stats_path);
    if (in) stats = nlohmann::json::parse(in, nullptr, false);
    if (stats.is_discarded()) stats = nullptr;
  }
  remove_files();
  remove_socket_topology();
  return stats;
}

DetachedProcesses FabricLauncher::detach() {
  if (!switch_process_ || !started_) throw std::logic_error("detach() before start()");
  DetachedProcesses processes;
  processes.switch_pid = switch_process_->release();
  for (ChildProcess& node : nodes_) processes.node_pids.push_back(node.release());
  for (ChildProcess& vm : vms_) processes.vm_pids.push_back(vm.release());
  if (control_) control_->keep_name();
  if (veths_) veths_->release();
  veths_.reset();
  detached_ = true;
  return processes;
}

}  // namespace ethx
