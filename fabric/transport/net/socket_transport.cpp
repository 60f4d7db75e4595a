#include "fabric/transport/net/socket_transport.hpp"

#include <iostream>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "fabric/transport/net/af_packet_socket.hpp"
#ifdef ETHX_HAVE_XDP
#include "fabric/transport/net/afxdp_socket.hpp"
#endif

namespace ethx {

bool is_socket_transport(std::string_view transport) {
  return transport == "afxdp" || transport == "afpacket";
}

bool valid_transport(std::string_view transport) {
  return transport == "shm" || is_socket_transport(transport);
}

bool built_with_xdp() {
#ifdef ETHX_HAVE_XDP
  return true;
#else
  return false;
#endif
}

PrivilegeNeeds privilege_needs(std::string_view transport) {
  return PrivilegeNeeds{.af_xdp = transport == "afxdp",
                        .af_packet = transport == "afpacket",
                        .namespaces = is_socket_transport(transport)};
}

std::string bench_tag(pid_t pid) {
  constexpr std::string_view kDigits = "0123456789abcdefghijklmnopqrstuvwxyz";
  auto value = static_cast<unsigned long>(pid);
  std::string tag;
  do {
    tag.insert(tag.begin(), kDigits[value % kDigits.size()]);
    value /= kDigits.size();
  } while (value != 0);
  return tag;
}

std::uint32_t receive_frames_for_fabric(std::size_t gpu_count) {
  if (gpu_count <= 8) return 8192;
  if (gpu_count <= 16) return 4096;
  return 2048;
}

std::unique_ptr<FrameSocket> open_frame_socket(std::string_view transport, const std::string& netns,
                                               const std::string& interface, SocketRole role,
                                               std::uint32_t receive_frames) {
  if (transport == "afxdp") {
#ifdef ETHX_HAVE_XDP
    AfXdpOptions options;
    options.interface = interface;
    options.netns = netns;
    options.role = role;
    // Every node hosts a RoCEv2 engine next to its load/store endpoint (roce_host.hpp).
    options.accept_rocev2 = role == SocketRole::kNode;
    if (receive_frames > 0) options.frame_count = 2 * receive_frames;
    return std::make_unique<AfXdpSocket>(options);
#else
    throw std::runtime_error(
        "--transport afxdp: this build has no AF_XDP (configure with -DETHX_WITH_XDP=ON); "
        "--transport afpacket or shm work without it");
#endif
  }
  if (transport == "afpacket") {
    AfPacketOptions options;
    options.interface = interface;
    options.netns = netns;
    options.role = role;
    options.accept_rocev2 = role == SocketRole::kNode;  // the node's RoCEv2 engine
    if (receive_frames > 0) {
      options.receive_buffer_bytes = static_cast<int>(
          std::min<std::uint64_t>(std::uint64_t{receive_frames} * 2048, std::uint64_t{1} << 30));
    }
    return std::make_unique<AfPacketSocket>(options);
  }
  throw std::invalid_argument("not a socket transport: " + std::string(transport));
}

std::string choose_transport(std::string_view requested, const std::string& command) {
  std::string transport(requested);
  if (transport == "auto") {
    const std::string missing = check_privileges(privilege_needs("afxdp"), "AF_XDP");
    if (missing.empty() && built_with_xdp()) {
      std::cerr << command
                << ": transport auto: picked afxdp (running with CAP_NET_ADMIN, CAP_NET_RAW, "
                   "CAP_BPF and CAP_SYS_ADMIN; this build has AF_XDP)\n";
      return "afxdp";
    }
    std::cerr << command << ": transport auto: picked shm ("
              << (built_with_xdp() ? missing : std::string("this build has no AF_XDP")) << ")\n";
    return "shm";
  }
  if (!valid_transport(transport)) {
    throw TransportUnavailable(command + ": --transport " + transport +
                               ": unknown; use shm, afxdp, afpacket or auto");
  }
  if (!is_socket_transport(transport)) return transport;
  const std::string missing =
      check_privileges(privilege_needs(transport), command + " --transport " + transport);
  if (!missing.empty()) throw TransportUnavailable(command + ": " + missing);
  if (transport == "afxdp" && !built_with_xdp()) {
    throw TransportUnavailable(command +
                               ": --transport afxdp: this build has no AF_XDP (configure with "
                               "-DETHX_WITH_XDP=ON); --transport afpacket or --transport shm "
                               "work without it");
  }
  return transport;
}

}  // namespace ethx
