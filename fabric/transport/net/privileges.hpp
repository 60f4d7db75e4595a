// The privilege check that runs before anything touches a namespace, a socket or XDP: which of
// the capabilities the real-interface transports need are missing, in one line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ethx {

// Capability numbers from <linux/capability.h> (no libcap needed).
inline constexpr unsigned kCapNetAdmin = 12;
inline constexpr unsigned kCapNetRaw = 13;
inline constexpr unsigned kCapSysAdmin = 21;
inline constexpr unsigned kCapBpf = 39;

// What a transport needs. AF_XDP: NET_ADMIN (attach XDP), NET_RAW (the socket), BPF (load the
// program; CAP_SYS_ADMIN also satisfies it, as on kernels before 5.8). AF_PACKET: NET_RAW.
// Namespaces: SYS_ADMIN (setns, ip netns add) and NET_ADMIN (veths).
struct PrivilegeNeeds {
  bool af_xdp = false;
  bool af_packet = false;
  bool namespaces = false;
};

// The CapEff mask from the text of /proc/<pid>/status; nullopt if absent or malformed.
std::optional<std::uint64_t> parse_cap_eff(std::string_view proc_status);

// Names of the capabilities `needs` requires that `cap_eff` lacks, e.g. {"CAP_NET_RAW",
// "CAP_BPF (or CAP_SYS_ADMIN)"}; empty when everything is there.
std::vector<std::string> missing_capabilities(std::uint64_t cap_eff, const PrivilegeNeeds& needs);

// One line: empty when nothing is missing, otherwise what is missing, for what, and that
// `--transport shm` runs without privileges.
std::string privilege_error(std::uint64_t cap_eff, const PrivilegeNeeds& needs,
                            std::string_view what);

// Reads /proc/self/status (0 if unreadable) and returns privilege_error(...).
std::string check_privileges(const PrivilegeNeeds& needs, std::string_view what);

}  // namespace ethx
