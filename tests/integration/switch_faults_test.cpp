// Run-time fault injection and switch restarts on a fabric `ethx up` started, as a user drives
// them: `ethx fault` changes what a port injects (seen in `ethx status --json` and in the
// traffic), `ethx restart-switch` replaces the switch while the nodes keep running, and a
// benchmark afterwards verifies every byte. Socket transports need root (skip otherwise).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "fabric/config/fabric_names.hpp"
#include "fabric/control/fabric_client.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/privileges.hpp"
#include "fabric/transport/net/socket_transport.hpp"
#include "fabric/transport/shm/control_region.hpp"
#include "fabric/transport/shm/shm_fabric_region.hpp"
#include "tests/integration/cli_test_support.hpp"

namespace ethx {
namespace {

using nlohmann::json;
using test::CommandResult;
using test::ethx_binary;
using test::run_command;

constexpr GpuId kFaultyPort = 1;

std::string requirement_missing(const std::string& transport) {
  if (!is_socket_transport(transport)) return {};
  if (::geteuid() != 0) return "needs root (network namespaces, veths, raw sockets)";
  if (std::string error = check_privileges(privilege_needs(transport), "this test");
      !error.empty()) {
    return error;
  }
  if (transport == "afxdp" && !built_with_xdp()) return "built without ETHX_WITH_XDP";
  return {};
}

// Kills a process that is not our child and waits (on a pidfd) until it has ended.
void kill_and_wait(pid_t pid) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  ASSERT_GE(pidfd, 0) << "pid " << pid << " is not running";
  ASSERT_EQ(::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0), 0);
  pollfd pfd{pidfd, POLLIN, 0};
  EXPECT_EQ(::poll(&pfd, 1, 10'000), 1) << "pid " << pid << " survived SIGKILL for 10 s";
  ::close(pidfd);
}

class LiveSwitchFaults : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (const std::string why = requirement_missing(GetParam()); !why.empty()) {
      GTEST_SKIP() << why;
    }
    run_root_ = std::filesystem::temp_directory_path() /
                ("ethx-test-faults-" + std::to_string(::getpid()) + "-" + GetParam());
    ::setenv("ETHX_RUN_DIR", run_root_.c_str(), 1);
    name_ = "f" + std::to_string(::getpid() % 100000);
  }
  void TearDown() override {
    if (run_root_.empty()) return;
    client_.reset();
    control_.reset();
    region_.reset();
    run_command(ethx_binary() + " down --quiet --name " + name_ + " 2>&1");
    std::filesystem::remove_all(run_root_);
    ::unsetenv("ETHX_RUN_DIR");
  }

  CommandResult ethx(const std::string& arguments) {
    return run_command(ethx_binary() + " " + arguments + " 2>&1");
  }
  CommandResult fault(const std::string& arguments) {
    return ethx("fault --name " + name_ + " --port " + std::to_string(kFaultyPort) + " " +
                arguments);
  }
  json state() {
    std::ifstream in(run_root_ / name_ / "state.json");
    return json::parse(in);
  }
  json status() {
    const CommandResult result = ethx("status --json --name " + name_);
    EXPECT_EQ(result.exit_status, 0) << result.output;
    return json::parse(result.output);
  }
  json status_of_degraded() {
    const CommandResult result = ethx("status --json --name " + name_);
    EXPECT_EQ(result.exit_status, 1) << result.output;
    return json::parse(result.output);
  }
  // Polls `ethx status --json` (the switch publishes its counters at most every 250 ms) until
  // `done` holds for the faulty port's entry, or 10 s pass; returns that entry.
  json faulty_port_when(const std::function<bool(const json&)>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    json port;
    do {
      const json report = status();
      if (report.contains("switch")) {
        port = report["switch"]["ports"][kFaultyPort];
        if (done(port)) return port;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (std::chrono::steady_clock::now() < deadline);
    ADD_FAILURE() << "the switch never reported the expected state; last: " << port.dump();
    return port;
  }
  // Echo round trips from the faulty port's GPU to GPU 0, through the mailboxes.
  json echo_from_faulty_port(std::uint32_t count) {
    if (!client_) {
      const std::string fabric = state()["fabric"].get<std::string>();
      control_ =
          std::make_unique<ControlRegion>(ControlRegion::attach(control_region_name(fabric)));
      if (!is_socket_transport(GetParam())) {
        region_ = std::make_unique<shm::ShmFabricRegion>(
            shm::ShmFabricRegion::attach(switch_region_name(fabric)));
      }
      client_ = std::make_unique<FabricClient>(*control_, region_.get(), [] {});
    }
    return client_->call(kFaultyPort, protocol::EchoCommand{.peer = 0, .count = count});
  }
  // Loads from GPU 0 to the faulty port's GPU, through the mailboxes (echo_from_faulty_port
  // has made the client).
  protocol::LatencyResult loads_to_faulty_port(std::uint32_t count) {
    return client_->call(0, protocol::LoadLatencyCommand{.peer = kFaultyPort, .count = count});
  }
  // GPU 0's entry of `ethx status --json`'s peer_health once `done` holds, or after 10 s.
  json gpu0_peer_health_when(const std::function<bool(const json&)>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    json gpu0;
    do {
      gpu0 = status()["peer_health"][0];
      if (done(gpu0)) return gpu0;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    ADD_FAILURE() << "GPU 0 never published the expected peer state; last: " << gpu0.dump();
    return gpu0;
  }
  std::string leftovers(const std::string& tag) {
    std::string found;
    if (!tag.empty()) {
      const std::string prefix = netns::run_prefix(tag);
      for (const std::string& ns : netns::list_namespaces()) {
        if (ns.rfind(prefix, 0) == 0) found += "namespace " + ns + "\n";
      }
      for (const std::string& link : netns::list_interfaces()) {
        if (link.rfind(prefix, 0) == 0) found += "link " + link + "\n";
      }
    }
    for (const std::string& file : test::shm_files_with_prefix("ethx-up-" + name_ + "-")) {
      found += "/dev/shm/" + file + "\n";
    }
    if (std::filesystem::exists(run_root_ / name_)) found += "run directory\n";
    return found;
  }

  std::filesystem::path run_root_;
  std::string name_;
  std::unique_ptr<ControlRegion> control_;
  std::unique_ptr<shm::ShmFabricRegion> region_;
  std::unique_ptr<FabricClient> client_;
};

TEST_P(LiveSwitchFaults, FaultsChangeAtRunTimeAndARestartedSwitchServesTheSameNodes) {
  const CommandResult up =
      ethx("up --name " + name_ + " --gpus 4 --quiet --transport " + GetParam());
  ASSERT_EQ(up.exit_status, 0) << up.output;
  const std::string tag = state()["netns_tag"].get<std::string>();
  const json before = faulty_port_when([](const json&) { return true; });
  EXPECT_EQ(before["faults"]["drop_rate"], 0.0);
  ASSERT_EQ(echo_from_faulty_port(3)["errors"], 0);

  // Bad input is refused by name, before the switch is asked.
  CommandResult bad = fault("--drop 1.5");
  EXPECT_EQ(bad.exit_status, 2) << bad.output;
  EXPECT_NE(bad.output.find("--drop: must be between 0 and 1"), std::string::npos) << bad.output;
  bad = ethx("fault --name " + name_ + " --port 4 --drop 0.5");
  EXPECT_EQ(bad.exit_status, 2) << bad.output;
  EXPECT_NE(bad.output.find("--port: 4 is not a port"), std::string::npos) << bad.output;
  bad = fault("--link sideways");
  EXPECT_EQ(bad.exit_status, 2) << bad.output;
  EXPECT_NE(bad.output.find("--link"), std::string::npos) << bad.output;
  bad = fault("--delay-spike-rate 0.5");  // no length: the switch refuses, naming the field
  EXPECT_EQ(bad.exit_status, 2) << bad.output;
  EXPECT_NE(bad.output.find("delay_spike_us"), std::string::npos) << bad.output;

  // Everything received on the port is lost, and counted.
  const CommandResult drop = fault("--drop 1");
  ASSERT_EQ(drop.exit_status, 0) << drop.output;
  EXPECT_NE(drop.output.find("drop 1"), std::string::npos) << drop.output;
  EXPECT_EQ(echo_from_faulty_port(2)["errors"], 2);
  const json dropping =
      faulty_port_when([](const json& port) { return port["faults_dropped"] >= 2; });
  EXPECT_EQ(dropping["faults"]["drop_rate"], 1.0);
  const CommandResult text_status = ethx("status --name " + name_);
  EXPECT_NE(text_status.output.find("injected faults"), std::string::npos) << text_status.output;

  ASSERT_EQ(fault("--clear").exit_status, 0);
  EXPECT_EQ(echo_from_faulty_port(3)["errors"], 0);

  // Delay spikes: every echo request waits 2 ms on the stalled link, and still arrives.
  ASSERT_EQ(fault("--delay-spike-rate 1 --delay-spike-us 2000").exit_status, 0);
  const json delayed = echo_from_faulty_port(5);
  EXPECT_EQ(delayed["errors"], 0);
  EXPECT_GE(delayed["p50_ns"].get<std::uint64_t>(), 2'000'000u);
  faulty_port_when([](const json& port) { return port["faults_delayed"] >= 5; });
  ASSERT_EQ(fault("--clear").exit_status, 0);

  // Link down and up again.
  ASSERT_EQ(fault("--link down").exit_status, 0);
  EXPECT_EQ(echo_from_faulty_port(2)["errors"], 2);
  faulty_port_when([](const json& port) {
    return port["faults"]["link"] == "down" && port["drops_link_down"] >= 2;
  });
  ASSERT_EQ(fault("--link up").exit_status, 0);
  EXPECT_EQ(echo_from_faulty_port(3)["errors"], 0);

  // A switch restart: a new process, the same nodes, faults back to the config's (none).
  ASSERT_EQ(fault("--drop 1").exit_status, 0);
  pid_t switch_pid = 0;
  std::vector<pid_t> node_pids;
  const json recorded = state();
  for (const json& process : recorded["processes"]) {
    if (process["role"] == "switch") {
      switch_pid = process["pid"].get<pid_t>();
    } else {
      node_pids.push_back(process["pid"].get<pid_t>());
    }
  }
  const CommandResult restart = ethx("restart-switch --name " + name_);
  ASSERT_EQ(restart.exit_status, 0) << restart.output;
  const json after = status();
  EXPECT_TRUE(after["healthy"].get<bool>()) << after.dump();
  std::vector<pid_t> nodes_after;
  pid_t new_switch = 0;
  for (const json& process : after["processes"]) {
    if (process["role"] == "switch") {
      new_switch = process["pid"].get<pid_t>();
    } else {
      nodes_after.push_back(process["pid"].get<pid_t>());
    }
  }
  EXPECT_NE(new_switch, switch_pid);
  EXPECT_EQ(nodes_after, node_pids) << "the nodes must not be restarted";
  // The new switch's own snapshot (its PID), not the old one's last.
  const json report_after = [&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    json report = status();
    while (report["switch"].value("pid", 0) != new_switch &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      report = status();
    }
    return report;
  }();
  ASSERT_EQ(report_after["switch"].value("pid", 0), new_switch);
  EXPECT_EQ(report_after["switch"]["ports"][kFaultyPort]["faults"]["drop_rate"], 0.0);
  EXPECT_EQ(echo_from_faulty_port(3)["errors"], 0);

  // A switch that crashed (SIGKILL: no clean exit from the rings, its XDP programs left on
  // the veths) is replaced the same way.
  kill_and_wait(new_switch);
  EXPECT_FALSE(status_of_degraded()["healthy"].get<bool>());
  const CommandResult revive = ethx("restart-switch --name " + name_);
  ASSERT_EQ(revive.exit_status, 0) << revive.output;
  EXPECT_NE(revive.output.find("was already gone"), std::string::npos) << revive.output;
  EXPECT_TRUE(status()["healthy"].get<bool>());
  EXPECT_EQ(echo_from_faulty_port(3)["errors"], 0);

  const CommandResult bench = run_command(
      ethx_binary() + " bench --quick --json --quiet --fabric " + name_ + " 2>/dev/null");
  ASSERT_EQ(bench.exit_status, 0) << bench.output;
  const json report = json::parse(bench.output);
  EXPECT_EQ(report["mismatches"], 0);
  EXPECT_EQ(report["errors"], 0);
  EXPECT_GT(report["verified_ops"].get<std::uint64_t>(), 1000u);

  client_.reset();
  control_.reset();
  region_.reset();
  const CommandResult down = ethx("down --name " + name_);
  ASSERT_EQ(down.exit_status, 0) << down.output;
  EXPECT_EQ(leftovers(tag), "");
}

TEST_P(LiveSwitchFaults, ABenchmarkFollowsASwitchRestartedUnderItsTraffic) {
  const CommandResult up =
      ethx("up --name " + name_ + " --gpus 4 --quiet --transport " + GetParam());
  ASSERT_EQ(up.exit_status, 0) << up.output;
  const std::string tag = state()["netns_tag"].get<std::string>();
  ControlRegion control =
      ControlRegion::attach(control_region_name(state()["fabric"].get<std::string>()));
  auto commands_posted = [&control] {
    std::uint64_t total = 0;
    for (std::uint32_t gpu = 0; gpu < control.node_count(); ++gpu) {
      total += control.node(gpu).command_seq.load();
    }
    return total;
  };
  const std::uint64_t commands_before = commands_posted();
  const std::filesystem::path bench_errors = run_root_ / "bench.stderr";
  CommandResult bench;
  std::thread benchmark([&] {
    bench = run_command(ethx_binary() + " bench --quick --json --quiet --fabric " + name_ + " 2>" +
                        bench_errors.string());
  });
  // Restart once the benchmark has posted its first commands (it posts them for seconds).
  auto busy = [&] { return commands_posted() > commands_before; };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!busy() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const CommandResult restart = ethx("restart-switch --name " + name_);
  benchmark.join();
  ASSERT_EQ(restart.exit_status, 0) << restart.output;
  std::ifstream errors_in(bench_errors);
  const std::string errors((std::istreambuf_iterator<char>(errors_in)),
                           std::istreambuf_iterator<char>());
  // Frames lost in the restart may fail operations (exit 1) until the reliability layer
  // retransmits them; the benchmark itself must carry on to its report.
  EXPECT_TRUE(bench.exit_status == 0 || bench.exit_status == 1) << bench.output << errors;
  EXPECT_EQ(errors.find("is gone"), std::string::npos) << errors;
  const json report = json::parse(bench.output, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << bench.output << errors;
  EXPECT_TRUE(report.value("switch_restarted", false)) << "the restart came after the benchmark";
  EXPECT_GT(report["verified_ops"].get<std::uint64_t>(), 0u);
  EXPECT_TRUE(status()["healthy"].get<bool>());

  ASSERT_EQ(ethx("down --name " + name_).exit_status, 0);
  EXPECT_EQ(leftovers(tag), "");
}

// With go-back-N the restart costs nothing but time: the soak mix runs across it and every
// operation is performed exactly once and verified (frames lost while no switch forwarded are
// resent; the nodes and their sequence state never notice the new switch).
TEST_P(LiveSwitchFaults, AGoBackNFabricLosesNothingWhenTheSwitchRestartsUnderTraffic) {
  const std::filesystem::path config = run_root_ / "go-back-n.toml";
  std::filesystem::create_directories(run_root_);
  std::ofstream(config) << "[reliability]\nmode = \"go-back-n\"\n";
  const CommandResult up = ethx("up --name " + name_ + " --gpus 4 --quiet --config " +
                                config.string() + " --transport " + GetParam());
  ASSERT_EQ(up.exit_status, 0) << up.output;
  const std::string tag = state()["netns_tag"].get<std::string>();
  ControlRegion control =
      ControlRegion::attach(control_region_name(state()["fabric"].get<std::string>()));
  auto soak_commands = [&control] {
    std::uint64_t total = 0;
    for (std::uint32_t gpu = 0; gpu < control.node_count(); ++gpu) {
      total += control.node(gpu).command_seq.load();
    }
    return total;
  };
  const std::uint64_t commands_before = soak_commands();
  std::atomic<bool> soak_done{false};
  CommandResult soak;
  std::thread traffic([&] {
    soak = run_command(ethx_binary() + " soak --ops 3000000 --json --quiet --fabric " + name_);
    soak_done = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (soak_commands() == commands_before && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const CommandResult restart = ethx("restart-switch --name " + name_);
  const bool restarted_under_traffic = !soak_done.load();
  traffic.join();
  ASSERT_EQ(restart.exit_status, 0) << restart.output;
  EXPECT_TRUE(restarted_under_traffic) << "the soak ended before the restart: make it longer";
  ASSERT_EQ(soak.exit_status, 0) << soak.output;
  const json report = json::parse(soak.output);
  const json& run = report["runs"].back();
  EXPECT_TRUE(report["passed"].get<bool>());
  EXPECT_EQ(run["ops"].get<std::uint64_t>(), 3'000'000u);
  EXPECT_EQ(run["mismatches"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(run["hung_ops"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(run["errors"].get<std::uint64_t>(), 0u);
  EXPECT_TRUE(status()["healthy"].get<bool>());
  ASSERT_EQ(ethx("down --name " + name_).exit_status, 0);
  EXPECT_EQ(leftovers(tag), "");
}

// `ethx status` shows each GPU's view of its peers: a link taken down makes GPU 0's loads to
// that GPU time out until the requester marks it down (then they fail at once), status names
// the down peer under GPU 0; once the link is back, GPU 0's probe brings it up again by
// itself. The board is the same on every transport, so shared memory alone is tested.
TEST_P(LiveSwitchFaults, StatusShowsThePeersEachGpuHasMarkedDown) {
  if (GetParam() != "shm") GTEST_SKIP() << "the peer board does not depend on the transport";
  const std::filesystem::path config = run_root_ / "short-timeout.toml";
  std::filesystem::create_directories(run_root_);
  std::ofstream(config) << "[fabric]\nrequest_timeout_ns = 100000000\n";
  const CommandResult up =
      ethx("up --name " + name_ + " --gpus 3 --quiet --config " + config.string());
  ASSERT_EQ(up.exit_status, 0) << up.output;
  EXPECT_EQ(echo_from_faulty_port(3)["errors"], 0);
  EXPECT_TRUE(status()["peer_health"][0]["down_peers"].empty());

  ASSERT_EQ(fault("--link down").exit_status, 0);
  const protocol::LatencyResult loads = loads_to_faulty_port(50);
  EXPECT_EQ(loads.errors, 50u) << "every load to a GPU behind a down link fails";
  const json down =
      gpu0_peer_health_when([](const json& gpu) { return !gpu["down_peers"].empty(); });
  EXPECT_EQ(down["down_peers"], json::array({kFaultyPort}));
  EXPECT_EQ(down["peers_marked_down"], 1);
  EXPECT_GT(down["ops_fast_failed"].get<std::uint64_t>(), 40u) << "only the first few wait";
  const CommandResult text = ethx("status --name " + name_);
  EXPECT_NE(text.output.find("gpu 0    DOWN: 1 "), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("with a peer marked down"), std::string::npos) << text.output;

  ASSERT_EQ(fault("--clear").exit_status, 0);
  const json back =
      gpu0_peer_health_when([](const json& gpu) { return gpu["down_peers"].empty(); });
  EXPECT_EQ(back["peers_marked_up"], 1);
  EXPECT_EQ(loads_to_faulty_port(10).errors, 0u);
  ASSERT_EQ(ethx("down --name " + name_).exit_status, 0);
}

// `ethx capture` records what a port receives and sends inside the switch, on every transport
// (AF_XDP frames never reach the kernel's taps): the loads GPU 0 makes to the port's GPU cross
// it as read requests out and read responses in, and tshark with the ethx dissector must read
// exactly the frames asked for, every one an intact ethx frame. Bad options are named.
TEST_P(LiveSwitchFaults, CaptureRecordsWhatAPortReceivesAndSendsOnEveryTransport) {
  if (run_command("tshark -v > /dev/null 2>&1").exit_status != 0) {
    GTEST_SKIP() << "needs tshark: apt-get install tshark";
  }
  const CommandResult up =
      ethx("up --name " + name_ + " --gpus 4 --quiet --transport " + GetParam());
  ASSERT_EQ(up.exit_status, 0) << up.output;
  ASSERT_EQ(echo_from_faulty_port(1)["errors"], 0);  // makes the client; before the capture
  const std::filesystem::path pcap = run_root_ / "port.pcap";
  CommandResult capture;
  std::thread recorder([&] {
    capture = ethx("capture --name " + name_ + " --port " + std::to_string(kFaultyPort) +
                   " --count 40 --duration-s 60 -w " + pcap.string());
  });
  // The switch makes the file when the capture starts: from then on the port is recorded.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!std::filesystem::exists(pcap) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(std::filesystem::exists(pcap)) << "the capture never started";
  EXPECT_EQ(loads_to_faulty_port(30).errors, 0u);  // 60 frames through the port
  recorder.join();
  ASSERT_EQ(capture.exit_status, 0) << capture.output;
  EXPECT_NE(capture.output.find("40 frames of port 1"), std::string::npos) << capture.output;
  const CommandResult fields = run_command(
      "tshark -X lua_script:" + std::string(ETHX_SOURCE_DIR) +
      "/fabric/tools/wireshark/ethx.lua -r " + pcap.string() +
      " -T fields -e frame.protocols -e ethx.txn.opcode -e ethx.crc.status 2>/dev/null");
  ASSERT_EQ(fields.exit_status, 0) << "tshark could not read " << pcap;
  std::istringstream lines(fields.output);
  std::size_t frames = 0;
  std::size_t requests = 0;
  for (std::string line; std::getline(lines, line); ++frames) {
    EXPECT_NE(line.find("eth:ethertype:ethx"), std::string::npos) << line;
    EXPECT_NE(line.find("good"), std::string::npos) << line;
    requests += line.find("\t0x01\t") != std::string::npos;  // read-req, sent to the port
  }
  EXPECT_EQ(frames, 40u);
  EXPECT_GE(requests, 19u);  // requests and responses alternate
  EXPECT_LE(requests, 21u);
  EXPECT_NE(ethx("capture --name " + name_ + " --port 9").output.find("--port: 9 is not a port"),
            std::string::npos);
  EXPECT_EQ(ethx("capture --name " + name_ + " --port 1 --count -1").exit_status, 2);
  ASSERT_EQ(ethx("down --name " + name_).exit_status, 0);
}

// `ethx top` shows the rates of a port under traffic (one JSON line per refresh), quits on `q`
// without waiting for its interval, and names bad options.
TEST_P(LiveSwitchFaults, TopShowsAPortsRatesAndQuitsOnQ) {
  if (GetParam() != "shm") GTEST_SKIP() << "top reads the switch's counters, any transport";
  const CommandResult up = ethx("up --name " + name_ + " --gpus 4 --quiet --transport shm");
  ASSERT_EQ(up.exit_status, 0) << up.output;
  ASSERT_EQ(echo_from_faulty_port(1)["errors"], 0);
  CommandResult top;
  std::atomic<bool> watching{true};
  std::thread watcher([&] {
    top = run_command(ethx_binary() + " top --json --iterations 3 --interval-s 0.3 --name " +
                      name_ + " < /dev/null");
    watching = false;
  });
  while (watching) EXPECT_EQ(loads_to_faulty_port(20).errors, 0u);
  watcher.join();
  ASSERT_EQ(top.exit_status, 0) << top.output;
  std::istringstream lines(top.output);
  std::size_t refreshes = 0;
  double most_frames_per_s = 0;
  for (std::string line; std::getline(lines, line); ++refreshes) {
    const json page = json::parse(line);
    ASSERT_EQ(page["ports"].size(), 4u);
    most_frames_per_s =
        std::max(most_frames_per_s, page["ports"][kFaultyPort]["rx_frames_per_s"].get<double>());
  }
  EXPECT_EQ(refreshes, 3u);
  EXPECT_GT(most_frames_per_s, 0.0) << top.output;
  const auto started = std::chrono::steady_clock::now();
  const CommandResult quit =
      run_command("printf q | " + ethx_binary() + " top --interval-s 60 --name " + name_);
  EXPECT_EQ(quit.exit_status, 0) << quit.output;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
  EXPECT_NE(ethx("top --interval-s 0 --name " + name_).output.find("--interval-s"),
            std::string::npos);
  EXPECT_EQ(ethx("top --name no-such-fabric").exit_status, 3);
  ASSERT_EQ(ethx("down --name " + name_).exit_status, 0);
}

INSTANTIATE_TEST_SUITE_P(Transports, LiveSwitchFaults,
                         ::testing::Values("shm", "afxdp", "afpacket"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace ethx
