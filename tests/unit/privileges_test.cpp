#include "fabric/transport/net/privileges.hpp"

#include <gtest/gtest.h>

namespace ethx {
namespace {

constexpr std::uint64_t bit(unsigned cap) {
  return std::uint64_t{1} << cap;
}

TEST(Privileges, ParsesCapEffFromProcStatus) {
  const std::string status =
      "Name:\tethx\nUmask:\t0022\nCapInh:\t0000000000000000\n"
      "CapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\n";
  ASSERT_EQ(parse_cap_eff(status), std::optional<std::uint64_t>(0x000001ffffffffffull));
  EXPECT_EQ(parse_cap_eff("CapEff:\t0000000000003000"), std::optional<std::uint64_t>(0x3000));
  EXPECT_EQ(parse_cap_eff("CapEff:   a1  \r\n"), std::optional<std::uint64_t>(0xa1));
}

TEST(Privileges, RejectsMissingOrMalformedCapEff) {
  EXPECT_FALSE(parse_cap_eff(""));
  EXPECT_FALSE(parse_cap_eff("CapPrm:\t0000000000000000\n"));
  EXPECT_FALSE(parse_cap_eff("CapEff:\t\n"));
  EXPECT_FALSE(parse_cap_eff("CapEff:\tzz00\n"));
  EXPECT_FALSE(parse_cap_eff("CapEff:\t00000000000000000\n"));  // 17 digits
  EXPECT_FALSE(parse_cap_eff("XCapEff:\t0\n"));
}

TEST(Privileges, NamesEveryMissingCapabilityForAfXdpInNamespaces) {
  const PrivilegeNeeds all{.af_xdp = true, .af_packet = false, .namespaces = true};
  EXPECT_EQ(missing_capabilities(0, all),
            (std::vector<std::string>{"CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_BPF (or CAP_SYS_ADMIN)",
                                      "CAP_SYS_ADMIN (network namespaces)"}));
  const std::uint64_t root = bit(kCapNetAdmin) | bit(kCapNetRaw) | bit(kCapSysAdmin) | bit(kCapBpf);
  EXPECT_TRUE(missing_capabilities(root, all).empty());
  // CAP_SYS_ADMIN stands in for CAP_BPF (kernels before 5.8 know no CAP_BPF).
  EXPECT_TRUE(
      missing_capabilities(bit(kCapNetAdmin) | bit(kCapNetRaw) | bit(kCapSysAdmin), all).empty());
  // CAP_BPF does not stand in for CAP_SYS_ADMIN for namespaces.
  EXPECT_EQ(missing_capabilities(bit(kCapNetAdmin) | bit(kCapNetRaw) | bit(kCapBpf), all),
            (std::vector<std::string>{"CAP_SYS_ADMIN (network namespaces)"}));
}

TEST(Privileges, AfPacketNeedsOnlyNetRaw) {
  const PrivilegeNeeds packet{.af_xdp = false, .af_packet = true, .namespaces = false};
  EXPECT_EQ(missing_capabilities(0, packet), (std::vector<std::string>{"CAP_NET_RAW"}));
  EXPECT_TRUE(missing_capabilities(bit(kCapNetRaw), packet).empty());
  EXPECT_TRUE(missing_capabilities(0, PrivilegeNeeds{}).empty());
}

TEST(Privileges, ErrorIsOneLineNamingWhatIsMissingAndTheShmAlternative) {
  const PrivilegeNeeds needs{.af_xdp = true, .af_packet = false, .namespaces = true};
  const std::string message = privilege_error(bit(kCapNetRaw), needs, "--transport afxdp");
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_NE(message.find("--transport afxdp needs CAP_NET_ADMIN"), std::string::npos) << message;
  EXPECT_NE(message.find("CAP_BPF"), std::string::npos);
  EXPECT_EQ(message.find("CAP_NET_RAW"), std::string::npos);
  EXPECT_NE(message.find("`--transport shm` runs without privileges"), std::string::npos);
  const std::uint64_t root = ~std::uint64_t{0};
  EXPECT_EQ(privilege_error(root, needs, "x"), "");
}

}  // namespace
}  // namespace ethx
