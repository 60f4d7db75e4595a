// Agent port leases (fabric/vm/agent_port_lease.hpp): each holder gets another port of the VM,
// a freed port goes to a waiter, and a wait that times out names the holders.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fabric/vm/agent_port_lease.hpp"
#include "fabric/vm/vm_plan.hpp"

namespace ethx {
namespace {

namespace fs = std::filesystem;

class AgentPortLeaseTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ethx-lease-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // QEMU's sockets; the leases only look at their names.
    for (std::size_t port = 0; port < 3; ++port) {
      std::ofstream(vm_agent_port_path(dir_.string(), 1, port)) << "";
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
};

TEST_F(AgentPortLeaseTest, EveryHolderGetsAPortOfItsOwn) {
  EXPECT_EQ(count_agent_ports(dir_.string(), 1), 3u);
  EXPECT_EQ(count_agent_ports(dir_.string(), 0), 0u);
  std::vector<AgentPortLease> leases;
  std::set<std::size_t> ports;
  for (int i = 0; i < 3; ++i) {
    leases.push_back(AgentPortLease::acquire(dir_.string(), 1, 1000));
    ports.insert(leases.back().port());
    EXPECT_EQ(leases.back().socket_path(),
              vm_agent_port_path(dir_.string(), 1, leases.back().port()));
  }
  EXPECT_EQ(ports, (std::set<std::size_t>{0, 1, 2}));
  const std::string holder = describe_lock_holder(vm_agent_lock_path(dir_.string(), 1, 0));
  EXPECT_EQ(holder.rfind("pid " + std::to_string(::getpid()), 0), 0u) << holder;
}

TEST_F(AgentPortLeaseTest, AWaiterGetsThePortThatIsFreed) {
  std::vector<std::optional<AgentPortLease>> leases;
  for (int i = 0; i < 3; ++i) leases.emplace_back(AgentPortLease::acquire(dir_.string(), 1, 1000));
  auto waiter = std::async(std::launch::async, [this] {
    return AgentPortLease::acquire(dir_.string(), 1, 60'000).port();
  });
  const std::size_t freed = leases[1]->port();
  leases[1].reset();  // closes its lock file: the waiter's inotify watch fires
  EXPECT_EQ(waiter.get(), freed);
}

TEST_F(AgentPortLeaseTest, AllBusyTimesOutNamingTheHolders) {
  std::vector<AgentPortLease> leases;
  for (int i = 0; i < 3; ++i) leases.push_back(AgentPortLease::acquire(dir_.string(), 1, 1000));
  try {
    AgentPortLease::acquire(dir_.string(), 1, 200);
    FAIL() << "a fourth lease of three ports";
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("all 3 agent ports of VM 1 are busy"), std::string::npos) << message;
    EXPECT_NE(message.find("pid " + std::to_string(::getpid())), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
}

TEST_F(AgentPortLeaseTest, AVmWithoutPortsIsNamed) {
  std::ofstream(vm_agent_path(dir_.string(), 0)) << "";  // only the legacy ttyS1 socket
  try {
    AgentPortLease::acquire(dir_.string(), 0, 1000);
    FAIL() << "a lease without ports";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("has no ethx-agent ports"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace ethx
