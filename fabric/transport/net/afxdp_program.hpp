// ethx's own XDP program (fabric/transport/net/xdp/ethx_xdp.c, compiled to BPF at build time),
// loaded and attached through libxdp on one interface. Node mode redirects only ethx EtherTypes
// (and RoCEv2 if asked) to the interface's AF_XDP socket; switch-port mode redirects every frame.
#pragma once

#include <cstdint>
#include <string>

struct xdp_program;

namespace ethx {

// Keys and flags of the program's ethx_config map; keep in sync with
// fabric/transport/net/xdp/ethx_xdp.c.
inline constexpr std::uint32_t kXdpConfigFlags = 0;
inline constexpr std::uint32_t kXdpConfigMaxFrame = 1;
inline constexpr std::uint32_t kXdpFlagSwitchPort = 0x1;
inline constexpr std::uint32_t kXdpFlagRocev2 = 0x2;

enum class XdpAttachMode : std::uint8_t {
  kAuto,    // native (driver) mode, SKB (generic) mode if the driver refuses
  kNative,  // on veth: needs MTU <= 3506
  kSkb,
};

struct XdpProgramOptions {
  bool switch_port = false;
  bool accept_rocev2 = false;
  std::uint32_t max_frame_bytes = 0;  // longer frames are passed to the kernel and counted
  XdpAttachMode mode = XdpAttachMode::kAuto;
  // An XDP program already on the interface (left by a killed ethx process) is replaced, but
  // only on interfaces named ethx-*: a real NIC's program is never touched.
  bool replace_stale = true;
  std::string object_path;  // empty: find_xdp_object()
};

struct XdpProgramStats {
  std::uint64_t redirected = 0;
  std::uint64_t passed = 0;
  std::uint64_t oversize = 0;
};

// Where the compiled program is: $ETHX_XDP_OBJECT, then ethx_xdp.bpf.o next to the running
// executable, then the build tree. Throws std::runtime_error naming every place it looked.
std::string find_xdp_object();

class EthxXdpProgram {
 public:
  // Attaches in the calling thread's network namespace. Throws std::runtime_error with a clear
  // message (missing object, privileges, MTU too large for native XDP, ...).
  EthxXdpProgram(const std::string& interface, const XdpProgramOptions& options);
  ~EthxXdpProgram();
  EthxXdpProgram(const EthxXdpProgram&) = delete;
  EthxXdpProgram& operator=(const EthxXdpProgram&) = delete;

  int xsks_map_fd() const { return xsks_map_fd_; }
  int ifindex() const { return ifindex_; }
  const char* mode_name() const;
  XdpProgramStats stats() const;
  // The interface's namespace is gone (and the program with it): the destructor must not
  // detach by ifindex, which could name another interface in the caller's namespace.
  void forget_attachment() { detach_on_destroy_ = false; }

 private:
  std::string interface_;
  int ifindex_ = 0;
  xdp_program* program_ = nullptr;
  int attached_mode_ = 0;  // enum xdp_attach_mode
  int xsks_map_fd_ = -1;
  int config_map_fd_ = -1;
  int stats_map_fd_ = -1;
  bool detach_on_destroy_ = true;
};

}  // namespace ethx
