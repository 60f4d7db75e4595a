// Choosing and opening the socket transports (AF_XDP, AF_PACKET) for the ethx processes:
// transport names, the privileges each needs, the per-run namespace tag, and one function that
// opens a FrameSocket of either kind on an interface inside a network namespace.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fabric/transport/net/frame_socket.hpp"
#include "fabric/transport/net/privileges.hpp"

namespace ethx {

// "shm", "afxdp" or "afpacket" (not "auto": resolve that first).
bool is_socket_transport(std::string_view transport);
bool valid_transport(std::string_view transport);
// True when this build has AF_XDP (ETHX_WITH_XDP=ON).
bool built_with_xdp();
// What a run over `transport` needs: the socket's capabilities plus network namespaces.
PrivilegeNeeds privilege_needs(std::string_view transport);

// A transport that cannot run here; the message is one line naming what is missing.
class TransportUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Resolves --transport for `command` ("ethx bench", "ethx up"): "auto" picks afxdp when the
// privileges are there and the build has AF_XDP, else shm, and says on stderr what it picked
// and why; a socket transport is checked for privileges (before anything else is done) and,
// for afxdp, for AF_XDP support in this build. Throws TransportUnavailable otherwise.
std::string choose_transport(std::string_view requested, const std::string& command);

// The namespace tag of the `ethx bench` run with coordinator `pid`: the PID in base 36 (at
// most 5 characters for PIDs up to 2^22, netns::kTagMax), so names stay within IFNAMSIZ.
std::string bench_tag(pid_t pid);

// How many receive frames one port's socket gets (`receive_frames` below) in a fabric of
// `gpu_count` GPUs, on the node side and the switch side alike. A veth cannot back-pressure its
// sender: a burst the receiver cannot drain at once must fit its receive ring, so small fabrics
// get deep rings (8192 frames, 32 MiB of AF_XDP UMEM per port); the switch holds one per GPU,
// so larger fabrics get shallower ones, down to the sockets' default 2048 above 16 GPUs, and the
// pinned memory stays bounded.
std::uint32_t receive_frames_for_fabric(std::size_t gpu_count);

// Opens `transport`'s socket on `interface` inside network namespace `netns` (empty: the
// caller's). AF_XDP uses ethx's own XDP program in node or switch-port mode (docs/afxdp.md).
// `receive_frames` > 0 sizes the receive side: AF_XDP rx ring of that many frames (UMEM of
// twice as many chunks), AF_PACKET receive buffer of that many 2 KiB frames; 0: defaults.
std::unique_ptr<FrameSocket> open_frame_socket(std::string_view transport, const std::string& netns,
                                               const std::string& interface, SocketRole role,
                                               std::uint32_t receive_frames = 0);

}  // namespace ethx
