// The coordinator's shared-memory mailboxes: how `ethx bench` hands commands (JSON text) to
// node processes and collects their results, without sockets and without locks.
//
// Protocol per node: the coordinator writes `command`, then bumps command_seq and rings the
// node's port doorbell; the node runs it, writes `result`, sets result_seq = command_seq and
// rings coordinator_bell. Only one command is in flight per node.
//
// The coordinator also rings the mailbox's own `node_bell` after posting: on the socket
// transports (AF_XDP, AF_PACKET) a node has no shared-memory port doorbell, so a small thread
// in ethx-node sleeps on node_bell and interrupts the node's socket wait (docs/afxdp.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "fabric/platform/shm_file.hpp"
#include "fabric/transport/doorbell.hpp"

namespace ethx {

enum class NodeState : std::uint32_t {
  kStarting = 0,
  kReady = 1,
  kBusy = 2,
  kExited = 3,
  kFailed = 4
};

inline constexpr std::size_t kCommandBytes = 4096;
inline constexpr std::size_t kResultBytes = std::size_t{60} * 1024;

enum class SwitchMode : std::uint32_t {
  kSwitchCore = 0,     // the ethx switch (switch_core.hpp)
  kBareForwarder = 1,  // the minimal MAC forwarder (bare_forwarder.hpp)
};

// What a GPU's requester knows of its peers (the engine's liveness, packet-engine/requester.hpp),
// published by the process that hosts the GPU (ethx-node, or QEMU's ethx-gpu device) so that
// `ethx status` can show it without asking the GPU anything. Written by that process only;
// readers take the words as they are (a display, not a protocol: a torn read shows a peer one
// refresh late). Bit g of down_bitmap is GPU g; 16 words cover the 1024 GPUs a topology may
// have (kMaxGpus, checked where the board is written).
inline constexpr std::size_t kPeerBitmapWords = 16;

struct alignas(64) PeerHealthBoard {
  std::atomic<std::uint64_t> down_bitmap[kPeerBitmapWords] = {};
  std::atomic<std::uint64_t> peers_marked_down{0};
  std::atomic<std::uint64_t> peers_marked_up{0};
  std::atomic<std::uint64_t> ops_fast_failed{0};  // ops completed at once: UNREACHABLE
};

struct alignas(64) NodeMailbox {
  std::atomic<std::uint32_t> state{0};  // NodeState
  std::atomic<std::int32_t> pid{0};
  std::atomic<std::uint32_t> command_seq{0};
  std::atomic<std::uint32_t> result_seq{0};
  std::uint32_t command_bytes = 0;
  std::uint32_t result_bytes = 0;
  char command[kCommandBytes];
  char result[kResultBytes];
  shm::Doorbell node_bell;  // rung after every post (see the protocol above)
  PeerHealthBoard peer_health;
};

// Run-time commands for ethx-switch (`ethx fault`), JSON text as the node mailboxes carry: the
// client writes `request`, then bumps request_seq; the switch, from its forwarding thread,
// applies it, writes `reply`, sets reply_seq = request_seq and rings coordinator_bell. One
// client at a time (switch_command_box.hpp takes a lock file in the run directory).
inline constexpr std::size_t kSwitchCommandBytes = 1024;

struct alignas(64) SwitchCommandBox {
  std::atomic<std::uint32_t> request_seq{0};
  std::atomic<std::uint32_t> reply_seq{0};
  std::uint32_t request_bytes = 0;
  std::uint32_t reply_bytes = 0;
  char request[kSwitchCommandBytes];
  char reply[kSwitchCommandBytes];
};

struct alignas(64) ControlHeader {
  std::uint64_t magic = 0;
  std::uint32_t version = 0;
  std::uint32_t node_count = 0;
  shm::Doorbell coordinator_bell;
  // Socket transports: what ethx-switch forwards with (SwitchMode), set by `ethx bench` to
  // measure its baseline on the same process and sockets; the switch confirms the mode it
  // runs in `switch_mode_active` and rings coordinator_bell.
  std::atomic<std::uint32_t> switch_mode{0};
  std::atomic<std::uint32_t> switch_mode_active{0};
  SwitchCommandBox switch_command;
};

class ControlRegion {
 public:
  static ControlRegion create(const std::string& name, std::uint32_t node_count);
  static ControlRegion attach(const std::string& name);

  std::uint32_t node_count() const { return node_count_; }
  NodeMailbox& node(std::uint32_t index);
  ControlHeader& header() { return *header_; }
  // Removes the name once every node has attached; the mappings stay valid, and nothing is
  // left in /dev/shm even if the coordinator is later killed.
  void unlink_name() { file_.unlink_now(); }
  // Leaves the name in /dev/shm when this object goes away (a detached fabric's).
  void keep_name() { file_.keep_name(); }

  // Node side: the command posted since `last_seen`, if any.
  std::optional<std::string> take_command(std::uint32_t node, std::uint32_t& last_seen);
  void post_result(std::uint32_t node, std::uint32_t sequence, const std::string& result);

 private:
  ControlRegion(shm::SharedMemoryFile file, ControlHeader* header, NodeMailbox* nodes,
                std::uint32_t node_count);

  shm::SharedMemoryFile file_;
  ControlHeader* header_;
  NodeMailbox* nodes_;
  std::uint32_t node_count_;
};

}  // namespace ethx
