// Which interface a GPU's socket port opens (the command line or device property, then the
// config's [[gpu]] interface, then the run's veth), and the errors open_node_port gives before
// it touches a socket or a switch region.
#include <gtest/gtest.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "fabric/node/node_port_factory.hpp"
#include "fabric/transport/net/netns_topology.hpp"

namespace ethx {
namespace {

TopologyConfig with_real_nic_on_gpu1() {
  return parse_topology(
      "[fabric]\ngpus = 2\n[[gpu]]\nid = 1\ninterface = \"enp3s0f1\"\nnetns = \"rack\"\n", "t");
}

NodePortOptions socket_options() {
  NodePortOptions options;
  options.transport = "afpacket";
  options.netns_tag = "tag1";
  return options;
}

TEST(NodePortFactory, TheRunsVethWhenNothingElseIsNamed) {
  const SocketEndpoint endpoint = socket_endpoint(with_real_nic_on_gpu1(), 0, socket_options());
  EXPECT_EQ(endpoint.interface, netns::node_interface("tag1", 0));
  EXPECT_EQ(endpoint.netns, netns::node_namespace("tag1", 0));
}

TEST(NodePortFactory, TheConfigsInterfaceAndNamespaceComeBeforeTheVeth) {
  const SocketEndpoint endpoint = socket_endpoint(with_real_nic_on_gpu1(), 1, socket_options());
  EXPECT_EQ(endpoint.interface, "enp3s0f1");
  EXPECT_EQ(endpoint.netns, "rack");

  NodePortOptions host_namespace = socket_options();
  host_namespace.netns = "";  // named explicitly: the caller's namespace
  EXPECT_EQ(socket_endpoint(with_real_nic_on_gpu1(), 1, host_namespace).netns, "");
}

TEST(NodePortFactory, ANamedInterfaceComesFirstInTheCallersNamespaceUnlessOneIsNamed) {
  NodePortOptions options = socket_options();
  options.interface = "eth7";
  SocketEndpoint endpoint = socket_endpoint(with_real_nic_on_gpu1(), 1, options);
  EXPECT_EQ(endpoint.interface, "eth7");
  EXPECT_EQ(endpoint.netns, "");
  options.netns = "lab";
  endpoint = socket_endpoint(with_real_nic_on_gpu1(), 1, options);
  EXPECT_EQ(endpoint.netns, "lab");
}

TEST(NodePortFactory, NoInterfaceAtAllIsAnErrorNamingTheWays) {
  NodePortOptions options = socket_options();
  options.netns_tag.clear();
  try {
    socket_endpoint(with_real_nic_on_gpu1(), 0, options);
    FAIL() << "no interface accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("gpu.interface"), std::string::npos) << error.what();
  }
}

TEST(NodePortFactory, UnknownTransportsAndMissingFabricsAreRefusedByName) {
  NodePortOptions options;
  options.transport = "carrier-pigeon";
  EXPECT_THROW(open_node_port(with_real_nic_on_gpu1(), 0, options), std::invalid_argument);
  options.transport = "shm";
  options.fabric = "no-such-fabric-" + std::to_string(::getpid());
  try {
    open_node_port(with_real_nic_on_gpu1(), 0, options);
    FAIL() << "a missing fabric accepted";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("no fabric '" + options.fabric + "'"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace ethx
