// Cleanup after SIGKILL: a helper process (this test binary, re-run with a filter) builds a
// namespaced topology and holds AF_XDP (or AF_PACKET) sockets with XDP programs attached; the
// test kills it with SIGKILL and checks that cleanup_by_prefix() removes every namespace,
// veth and XDP program of that run and nothing else.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "fabric/transport/net/af_packet_socket.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/privileges.hpp"
#ifdef ETHX_HAVE_XDP
#include "fabric/transport/net/afxdp_socket.hpp"
#endif

extern char** environ;

namespace ethx {
namespace {

constexpr const char* kTagVariable = "ETHX_TEST_HOLD_TAG";
constexpr const char* kReadyVariable = "ETHX_TEST_HOLD_READY";

// Run only as the helper: builds 2 nodes + a switch namespace, opens a socket on every veth
// end, announces readiness and waits to be killed. Everything is leaked on purpose.
TEST(NetnsCleanupHelper, HoldSocketsUntilKilled) {
  const char* tag = std::getenv(kTagVariable);
  const char* ready = std::getenv(kReadyVariable);
  if (tag == nullptr || ready == nullptr) {
    GTEST_SKIP() << "helper process of NetnsCleanup.SigkillLeavesNothingAfterCleanupByPrefix";
  }
  new netns::VethTopology(netns::star_topology(tag, 2, 1778));
  for (std::size_t node = 0; node < 2; ++node) {
#ifdef ETHX_HAVE_XDP
    AfXdpOptions options;
    options.interface = netns::node_interface(tag, node);
    options.netns = netns::node_namespace(tag, node);
    new AfXdpSocket(options);
    options.interface = netns::switch_interface(tag, node);
    options.netns = netns::switch_namespace(tag);
    options.role = SocketRole::kSwitchPort;
    new AfXdpSocket(options);
#else
    AfPacketOptions options;
    options.interface = netns::node_interface(tag, node);
    options.netns = netns::node_namespace(tag, node);
    new AfPacketSocket(options);
#endif
  }
  std::ofstream(ready) << "ready\n";
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

TEST(NetnsCleanup, SigkillLeavesNothingAfterCleanupByPrefix) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (network namespaces, veths, raw sockets)";
  const PrivilegeNeeds needs{.af_xdp = true, .af_packet = true, .namespaces = true};
  if (std::string why = check_privileges(needs, "this test"); !why.empty()) GTEST_SKIP() << why;

  const std::string tag = netns::random_tag();
  const std::string prefix = netns::run_prefix(tag);
  const std::string ready = "/tmp/" + prefix + "ready";
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) environment.emplace_back(*entry);
  environment.push_back(std::string(kTagVariable) + "=" + tag);
  environment.push_back(std::string(kReadyVariable) + "=" + ready);
  std::vector<char*> envp;
  for (auto& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe";
  std::string filter = "--gtest_filter=NetnsCleanupHelper.HoldSocketsUntilKilled";
  std::vector<char*> argv{self.data(), filter.data(), nullptr};
  pid_t helper = 0;
  ASSERT_EQ(::posix_spawn(&helper, self.c_str(), nullptr, nullptr, argv.data(), envp.data()), 0);

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (::access(ready.c_str(), F_OK) != 0 && std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(helper, &status, WNOHANG) == helper) {
      netns::cleanup_by_prefix(prefix);
      FAIL() << "the helper exited before it was ready";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const bool was_ready = ::access(ready.c_str(), F_OK) == 0;
  const std::string xdp_before =
      netns::run_command({"ip", "-n", netns::switch_namespace(tag), "link", "show"}).output;
  ::kill(helper, SIGKILL);
  int status = 0;
  ::waitpid(helper, &status, 0);
  ::unlink(ready.c_str());
  ASSERT_TRUE(was_ready) << "the helper did not get ready in time";
#ifdef ETHX_HAVE_XDP
  EXPECT_NE(xdp_before.find("prog/xdp"), std::string::npos) << xdp_before;
#endif

  const std::vector<std::string> removed = netns::cleanup_by_prefix(prefix);
  EXPECT_EQ(removed.size(), 3u);  // the switch and two node namespaces (veths go with them)
  const std::string namespaces = netns::run_command({"ip", "netns", "list"}).output;
  const std::string links = netns::run_command({"ip", "-br", "link"}).output;
  EXPECT_EQ(namespaces.find(prefix), std::string::npos) << namespaces;
  EXPECT_EQ(links.find(prefix), std::string::npos) << links;
}

}  // namespace
}  // namespace ethx
