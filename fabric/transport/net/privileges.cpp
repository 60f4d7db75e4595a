#include "fabric/transport/net/privileges.hpp"

#include <charconv>
#include <fstream>
#include <sstream>

namespace ethx {
namespace {

bool has(std::uint64_t mask, unsigned cap) {
  return ((mask >> cap) & 1u) != 0;
}

}  // namespace

std::optional<std::uint64_t> parse_cap_eff(std::string_view proc_status) {
  constexpr std::string_view kKey = "CapEff:";
  std::size_t pos = 0;
  while (pos < proc_status.size()) {
    std::size_t end = proc_status.find('\n', pos);
    if (end == std::string_view::npos) end = proc_status.size();
    std::string_view line = proc_status.substr(pos, end - pos);
    pos = end + 1;
    if (line.substr(0, kKey.size()) != kKey) continue;
    line.remove_prefix(kKey.size());
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
      line.remove_suffix(1);
    }
    if (line.empty() || line.size() > 16) return std::nullopt;
    std::uint64_t value = 0;
    const auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), value, 16);
    if (ec != std::errc() || ptr != line.data() + line.size()) return std::nullopt;
    return value;
  }
  return std::nullopt;
}

std::vector<std::string> missing_capabilities(std::uint64_t cap_eff, const PrivilegeNeeds& needs) {
  std::vector<std::string> missing;
  const bool net_admin = needs.af_xdp || needs.namespaces;
  const bool net_raw = needs.af_xdp || needs.af_packet;
  if (net_admin && !has(cap_eff, kCapNetAdmin)) missing.emplace_back("CAP_NET_ADMIN");
  if (net_raw && !has(cap_eff, kCapNetRaw)) missing.emplace_back("CAP_NET_RAW");
  if (needs.af_xdp && !has(cap_eff, kCapBpf) && !has(cap_eff, kCapSysAdmin)) {
    missing.emplace_back("CAP_BPF (or CAP_SYS_ADMIN)");
  }
  if (needs.namespaces && !has(cap_eff, kCapSysAdmin)) {
    missing.emplace_back("CAP_SYS_ADMIN (network namespaces)");
  }
  return missing;
}

std::string privilege_error(std::uint64_t cap_eff, const PrivilegeNeeds& needs,
                            std::string_view what) {
  const std::vector<std::string> missing = missing_capabilities(cap_eff, needs);
  if (missing.empty()) return {};
  std::ostringstream out;
  out << what << " needs ";
  for (std::size_t i = 0; i < missing.size(); ++i) out << (i == 0 ? "" : ", ") << missing[i];
  out << " (run as root); `--transport shm` runs without privileges";
  return out.str();
}

std::string check_privileges(const PrivilegeNeeds& needs, std::string_view what) {
  std::ifstream file("/proc/self/status");
  std::stringstream text;
  text << file.rdbuf();
  const std::uint64_t cap_eff = parse_cap_eff(text.str()).value_or(0);
  return privilege_error(cap_eff, needs, what);
}

}  // namespace ethx
