// The scenarios of process_watcher_cli_test.cpp over AF_XDP: a coordinator whose node dies
// stops within 5 s, exit status 1, with one line naming the node, and leaves no namespace,
// shared-memory file or process of the run behind. Each node runs in its own network namespace
// on a veth to the switch's, so these live in ethx_netns_tests and need root (they skip
// otherwise). Two GPUs: GPU 0 measures against GPU 1, the one killed; more add nothing here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/privileges.hpp"
#include "fabric/transport/net/socket_transport.hpp"
#include "tests/integration/watched_bench_fixture.hpp"

namespace ethx {
namespace {

std::string requirement_missing() {
  if (::geteuid() != 0) return "needs root (network namespaces, veths, AF_XDP sockets)";
  if (std::string error = check_privileges(privilege_needs("afxdp"), "this test"); !error.empty()) {
    return error;
  }
  if (netns::run_command({"ip", "-V"}).exit_code != 0) return "needs iproute2 (`ip`)";
  if (!built_with_xdp()) return "built without ETHX_WITH_XDP";
  return {};
}

// What is left of the run tagged `tag`: its namespaces and processes, one per line.
std::string leftovers_of_tag(const std::string& tag) {
  std::string found;
  for (const std::string& name : netns::list_namespaces()) {
    if (name.rfind(netns::run_prefix(tag), 0) == 0) found += "namespace " + name + "\n";
  }
  for (const test::ProcessInfo& process : test::processes_of_tag(tag)) {
    found += "process " + process.command_line + "\n";
  }
  return found;
}

class WatchedAfXdpBench : public test::WatchedBenchTest {
 protected:
  void SetUp() override {
    if (const std::string why = requirement_missing(); !why.empty()) GTEST_SKIP() << why;
    WatchedBenchTest::SetUp();
  }
  void TearDown() override {
    ::unsetenv("ETHX_WAIT_YIELDS");
    WatchedBenchTest::TearDown();
  }
};

TEST_F(WatchedAfXdpBench, SigkillOfANodeStopsTheBenchWithinFiveSecondsNamingIt) {
  // `ethx bench` runs its raw ping-pong and forwarding-rate baselines on the socket transports
  // before any node starts: ~0.5 s and ~2.5 s with --quick (~0.7 s and ~11 s without). Its
  // waiters yield before they sleep (WaitPolicy); with other processes busy on both cores each
  // yield may cost a whole time slice, and when they yielded up to 5000 times the ping-pong's
  // 2500 round trips took 11 s. Sleeping at once keeps them short; the watcher does not care.
  ::setenv("ETHX_WAIT_YIELDS", "0", 1);
  ASSERT_NO_FATAL_FAILURE(
      kill_a_node_during_bench({"--gpus", "2", "--quick", "--transport", "afxdp"}, 2));
  EXPECT_EQ(leftovers_of_tag(bench_tag(bench_pid_)), "");
}

TEST_F(WatchedAfXdpBench, SigkillOfANodeOfAnUpFabricStopsTheAttachedBench) {
  ASSERT_NO_FATAL_FAILURE(kill_a_node_of_an_up_fabric("x" + std::to_string(::getpid() % 100000),
                                                      "--gpus 2 --transport afxdp"));
  EXPECT_EQ(leftovers_of_tag(state_["netns_tag"].get<std::string>()), "");
}

}  // namespace
}  // namespace ethx
