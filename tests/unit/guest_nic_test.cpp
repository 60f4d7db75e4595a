// Guest NICs on the switch (docs/softroce.md), the parts that need no root: names, the topology
// description, the QEMU command line, the switch's command line and its extra ports, the run
// record. The live path (taps, VMs, rdma_rxe) is tests/integration/softroce_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "fabric/control/run_state.hpp"
#include "fabric/control/switch_launch.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/vm/vm_plan.hpp"
#include "switch/core/switch_core.hpp"

namespace ethx {
namespace {

bool contains(const std::vector<std::string>& argv, const std::string& word) {
  return std::find(argv.begin(), argv.end(), word) != argv.end();
}

TEST(GuestNics, AddressesAndNamesAreFixedAndFitIfnamsiz) {
  EXPECT_EQ(guest_nic_ip(0), "198.18.0.1");
  EXPECT_EQ(guest_nic_ip(1), "198.18.0.2");
  EXPECT_EQ(guest_nic_mac(0), "02:e7:6e:00:00:01");
  EXPECT_EQ(guest_nic_mac(15), "02:e7:6e:00:00:10");
  EXPECT_EQ(host_port_ip(), "198.18.0.254");
  EXPECT_EQ(host_port_mac(), "02:e7:6e:00:00:fe");
  EXPECT_EQ(netns::tap_interface("abcde", 7), "ethx-abcde-t7");
  EXPECT_EQ(netns::host_port_namespace("abcde"), "ethx-abcde-h");
  EXPECT_EQ(netns::host_port_switch_interface("abcde"), "ethx-abcde-sh");
  EXPECT_LE(netns::tap_interface("abcde", 999).size(), netns::kInterfaceNameMax);
  EXPECT_EQ(guest_nic_switch_ports("ab1", 2),
            (std::vector<std::string>{"ethx-ab1-t0", "ethx-ab1-t1", "ethx-ab1-sh"}));
}

TEST(GuestNics, TopologyAddsTapsInTheSwitchNamespaceAndTheHostPort) {
  netns::TopologySpec spec = netns::star_topology("ab1", 2, 1778);
  netns::add_guest_nics(spec, 2);
  ASSERT_EQ(spec.taps.size(), 2u);
  EXPECT_EQ(spec.taps[1].netns, "ethx-ab1-sw");
  EXPECT_EQ(spec.taps[1].name, "ethx-ab1-t1");
  EXPECT_EQ(spec.taps[1].mtu, 1500u);
  EXPECT_EQ(spec.namespaces.back(), "ethx-ab1-h");
  ASSERT_EQ(spec.links.size(), 3u);
  EXPECT_EQ(spec.links.back().interface_a, "ethx-ab1-h");
  EXPECT_EQ(spec.links.back().namespace_b, "ethx-ab1-sw");
  EXPECT_EQ(spec.links.back().interface_b, "ethx-ab1-sh");
  ASSERT_EQ(spec.link_mtus.size(), 1u);
  EXPECT_EQ(spec.link_mtus[0], std::make_pair(std::string("ethx-ab1-h"), 1500u));
}

TEST(GuestNics, QemuCommandHasTheTapNicAndTheGuestAddress) {
  VmPlan plan;
  plan.count = 2;
  plan.gpus_per_vm = 1;
  plan.qemu = "/q";
  plan.kernel = "/k";
  plan.initrd = "/i";
  plan.guest_nics = true;
  VmFabric fabric{"up-x", "afpacket", "ab1", "", 2, "/run/x"};
  EXPECT_THROW(qemu_command(plan, 1, fabric), std::logic_error);  // no tap descriptor
  fabric.tap_fd = 3;
  const std::vector<std::string> argv = qemu_command(plan, 1, fabric);
  EXPECT_TRUE(contains(argv, "tap,id=nic0,fd=3"));
  EXPECT_TRUE(contains(argv, "virtio-net-pci,netdev=nic0,mac=02:e7:6e:00:00:02"));
  const auto append = std::find(argv.begin(), argv.end(), "-append");
  ASSERT_NE(append, argv.end());
  EXPECT_NE((append + 1)->find("ethx.ip=198.18.0.2/24"), std::string::npos) << *(append + 1);
  // Without guest NICs nothing of it appears.
  plan.guest_nics = false;
  const std::vector<std::string> plain = qemu_command(plan, 1, fabric);
  EXPECT_FALSE(contains(plain, "-netdev"));
  for (const std::string& arg : plain) EXPECT_EQ(arg.find("ethx.ip="), std::string::npos);
}

TEST(GuestNics, SwitchGetsExtraUnboundLearnedPorts) {
  SwitchLaunch launch;
  launch.fabric = "up-x";
  launch.gpus = 2;
  launch.transport = "afxdp";
  launch.netns_tag = "ab1";
  launch.stats_path = "/tmp/s.json";
  launch.extra_ports = guest_nic_switch_ports("ab1", 2);
  const std::vector<std::string> args = switch_arguments(launch);
  EXPECT_EQ(std::count(args.begin(), args.end(), "--extra-port"), 3);
  EXPECT_TRUE(contains(args, "ethx-ab1-sh"));

  const TopologyConfig topology = load_topology("", 2);
  const SwitchConfig config = topology.switch_config(3);
  ASSERT_EQ(config.ports.size(), 5u);
  EXPECT_EQ(config.static_routes.size(), 2u);  // the GPUs' MACs only
  for (const auto& binding : config.port_bindings) EXPECT_LT(binding.port, 2u);
  // A guest's frame on an extra port is learned and forwarded, not dropped as spoofed.
  SwitchCore core(config);
  std::vector<std::byte> frame(60, std::byte{0});
  const std::byte guest0[6] = {std::byte{2}, std::byte{0xe7}, std::byte{0x6e},
                               std::byte{0}, std::byte{0},    std::byte{1}};
  const std::byte guest1[6] = {std::byte{2}, std::byte{0xe7}, std::byte{0x6e},
                               std::byte{0}, std::byte{0},    std::byte{2}};
  std::vector<PortId> touched;
  std::copy(guest1, guest1 + 6, frame.begin() + 6);  // from guest 1 on port 3: learned there
  std::fill(frame.begin(), frame.begin() + 6, std::byte{0xff});
  frame[12] = std::byte{0x08};
  frame[13] = std::byte{0x06};
  core.on_frame(3, frame, 0, touched);
  std::copy(guest1, guest1 + 6, frame.begin());  // guest 0 on port 2 -> guest 1
  std::copy(guest0, guest0 + 6, frame.begin() + 6);
  touched.clear();
  core.on_frame(2, frame, 1, touched);
  EXPECT_EQ(touched, (std::vector<PortId>{3}));
  EXPECT_EQ(core.counters(2).drops_spoofed, 0u);
}

TEST(GuestNics, RunStateKeepsTheFlag) {
  RunState state;
  state.name = "x";
  state.fabric = "up-x";
  state.transport = "afpacket";
  state.guest_nics = true;
  EXPECT_TRUE(RunState::from_json(state.to_json()).guest_nics);
  nlohmann::json older = state.to_json();
  older.erase("guest_nics");  // a record written before guest NICs existed
  EXPECT_FALSE(RunState::from_json(older).guest_nics);
}

}  // namespace
}  // namespace ethx
