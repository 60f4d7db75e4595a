#include <gtest/gtest.h>

#include <set>

#include "fabric/transport/net/netns_topology.hpp"

namespace ethx::netns {
namespace {

TEST(NetnsNames, TagsAreShortLowercaseAlphanumerics) {
  EXPECT_TRUE(valid_tag("a"));
  EXPECT_TRUE(valid_tag("t0z9x"));
  EXPECT_FALSE(valid_tag(""));
  EXPECT_FALSE(valid_tag("abcdef"));  // 6 > kTagMax
  EXPECT_FALSE(valid_tag("Ab"));
  EXPECT_FALSE(valid_tag("a-b"));
  EXPECT_FALSE(valid_tag("a/b"));
  EXPECT_THROW(run_prefix("../x"), std::invalid_argument);
}

TEST(NetnsNames, RandomTagsAreValidAndDiffer) {
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    const std::string tag = random_tag();
    EXPECT_TRUE(valid_tag(tag)) << tag;
    seen.insert(tag);
  }
  EXPECT_GT(seen.size(), 40u);
}

TEST(NetnsNames, NamesCarryThePrefixAndFitIfnamsiz) {
  EXPECT_EQ(run_prefix("ab12"), "ethx-ab12-");
  EXPECT_EQ(switch_namespace("ab12"), "ethx-ab12-sw");
  EXPECT_EQ(node_namespace("ab12", 3), "ethx-ab12-n3");
  EXPECT_EQ(node_interface("ab12", 3), "ethx-ab12-n3");
  EXPECT_EQ(switch_interface("ab12", 31), "ethx-ab12-s31");
  // The longest tag and node numbers still fit in 15 characters.
  EXPECT_EQ(switch_interface("zzzzz", kMaxNodes - 1), "ethx-zzzzz-s999");
  EXPECT_LE(switch_interface("zzzzz", kMaxNodes - 1).size(), kInterfaceNameMax);
  EXPECT_THROW(switch_interface("zzzzz", 1000), std::invalid_argument);
}

TEST(NetnsNames, StarTopologyJoinsEveryNodeToTheSwitchNamespace) {
  const TopologySpec spec = star_topology("q1", 4, 1778);
  ASSERT_EQ(spec.namespaces.size(), 5u);
  EXPECT_EQ(spec.namespaces[0], "ethx-q1-sw");
  ASSERT_EQ(spec.links.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(spec.links[i].namespace_a, node_namespace("q1", i));
    EXPECT_EQ(spec.links[i].interface_a, node_interface("q1", i));
    EXPECT_EQ(spec.links[i].namespace_b, "ethx-q1-sw");
    EXPECT_EQ(spec.links[i].interface_b, switch_interface("q1", i));
  }
  for (const auto& ns : spec.namespaces) EXPECT_EQ(ns.rfind("ethx-q1-", 0), 0u);
  EXPECT_THROW(star_topology("q1", 0, 1778), std::invalid_argument);
  EXPECT_THROW(star_topology("q1", kMaxNodes + 1, 1778), std::invalid_argument);
}

TEST(NetnsNames, PairTopologyJoinsTwoNodeNamespaces) {
  const TopologySpec spec = pair_topology("p", 1500);
  EXPECT_EQ(spec.namespaces, (std::vector<std::string>{"ethx-p-n0", "ethx-p-n1"}));
  ASSERT_EQ(spec.links.size(), 1u);
  EXPECT_EQ(spec.links[0].interface_a, "ethx-p-n0");
  EXPECT_EQ(spec.links[0].interface_b, "ethx-p-n1");
  EXPECT_EQ(spec.mtu, 1500u);
}

TEST(NetnsNames, CleanupRefusesPrefixesThatWouldTouchOtherRuns) {
  EXPECT_THROW(cleanup_by_prefix(""), std::invalid_argument);
  EXPECT_THROW(cleanup_by_prefix("ethx-"), std::invalid_argument);
  EXPECT_THROW(cleanup_by_prefix("veth"), std::invalid_argument);
}

TEST(NetnsNames, RunCommandCapturesOutputAndExitStatus) {
  const CommandResult ok = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(ok.exit_code, 3);
  EXPECT_NE(ok.output.find("out"), std::string::npos);
  EXPECT_NE(ok.output.find("err"), std::string::npos);
  const CommandResult missing = run_command({"ethx-no-such-program"});
  EXPECT_EQ(missing.exit_code, -1);
  EXPECT_NE(missing.output.find("cannot run"), std::string::npos);
  EXPECT_THROW(run_checked({"false"}), NetnsError);
}

}  // namespace
}  // namespace ethx::netns
