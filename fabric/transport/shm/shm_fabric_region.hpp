// The layout of the one shared-memory file ethx-switch creates for its N ports: a header, then
// one PortChannel (a ring each way plus the node's doorbell) per port.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fabric/platform/shm_file.hpp"
#include "fabric/transport/doorbell.hpp"
#include "fabric/transport/shm/frame_ring.hpp"

namespace ethx::shm {

inline constexpr std::uint64_t kRegionMagic = 0x3176'6261'6678'6865;  // "ethxfab1", little-endian
inline constexpr std::uint32_t kRegionVersion = 1;
inline constexpr std::uint32_t kMaxRegionPorts = 1024;

struct PortChannel {                      // one per switch port
  FrameRing to_switch;                    // node produces, switch consumes
  FrameRing to_node;                      // switch produces, node consumes
  Doorbell node_bell;                     // the switch rings it after pushing to to_node
  std::atomic<std::int32_t> node_pid{0};  // 0 = no node attached
  std::atomic<std::uint64_t> node_heartbeat{0};
};

struct alignas(64) RegionHeader {
  // Written last by the creator (release), read first by attach (acquire): a region with the
  // right magic is completely constructed.
  std::uint64_t magic = 0;
  std::uint32_t version = 0;
  std::uint32_t port_count = 0;
  std::uint32_t slot_bytes = 0;
  std::uint32_t ring_slots = 0;
  // sizeof(PortChannel) as the creator compiled it: catches two binaries that agree on the
  // numbers above but not on the layout (another Boost, other flags).
  std::uint64_t port_channel_bytes = 0;
  Doorbell switch_bell;  // nodes ring it after pushing to to_switch
  std::atomic<std::uint32_t> switch_ready{
      0};  // 1 once the layout is built; the switch may clear it
  std::atomic<std::int32_t> switch_pid{0};
};

static_assert(std::atomic<std::int32_t>::is_always_lock_free &&
                  std::atomic<std::uint64_t>::is_always_lock_free,
              "atomics in shared memory must be lock-free to be address-free");

class ShmFabricRegion {
 public:
  static std::size_t bytes_for(std::uint32_t port_count);
  // For the switch: creates the file (see SharedMemoryFile::create) and builds every channel.
  static ShmFabricRegion create(const std::string& name, std::uint32_t port_count);
  // For a node (or tools): maps an existing region and checks it was made by a compatible build.
  static ShmFabricRegion attach(const std::string& name);

  RegionHeader& header() { return *header_; }
  // Throws std::out_of_range for index >= port_count().
  PortChannel& port(std::uint32_t index);
  // As created or validated at attach; never re-read from the shared (peer-writable) header.
  std::uint32_t port_count() const { return port_count_; }
  SharedMemoryFile& file() { return file_; }

 private:
  ShmFabricRegion(SharedMemoryFile file, RegionHeader* header, PortChannel* ports,
                  std::uint32_t port_count);

  SharedMemoryFile file_;
  RegionHeader* header_;
  PortChannel* ports_;
  std::uint32_t port_count_;
};

}  // namespace ethx::shm
