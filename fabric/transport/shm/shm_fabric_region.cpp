#include "fabric/transport/shm/shm_fabric_region.hpp"

#include <unistd.h>

#include <cstdio>
#include <new>
#include <stdexcept>
#include <utility>

namespace ethx::shm {
namespace {

constexpr std::size_t round_up(std::size_t bytes, std::size_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

constexpr std::size_t kPortsOffset = round_up(sizeof(RegionHeader), alignof(PortChannel));

std::atomic_ref<std::uint64_t> magic_of(RegionHeader& header) {
  return std::atomic_ref<std::uint64_t>(header.magic);
}

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

[[noreturn]] void reject(const SharedMemoryFile& file, const std::string& why) {
  throw std::runtime_error("shared memory " + file.name() +
                           " is not a usable ethx fabric region: " + why);
}

std::string mismatch(const char* field, std::uint64_t found, std::uint64_t expected) {
  return std::string(field) + " is " + std::to_string(found) + ", this build expects " +
         std::to_string(expected) + " (switch and node built from different ethx versions?)";
}

}  // namespace

std::size_t ShmFabricRegion::bytes_for(std::uint32_t port_count) {
  return kPortsOffset + std::size_t{port_count} * sizeof(PortChannel);
}

ShmFabricRegion ShmFabricRegion::create(const std::string& name, std::uint32_t port_count) {
  if (port_count == 0 || port_count > kMaxRegionPorts) {
    throw std::invalid_argument("fabric region " + name + ": port count " +
                                std::to_string(port_count) + " is outside 1.." +
                                std::to_string(kMaxRegionPorts));
  }
  SharedMemoryFile file = SharedMemoryFile::create(name, bytes_for(port_count));
  std::byte* base = file.data();
  auto* header = new (base) RegionHeader{};
  for (std::uint32_t index = 0; index < port_count; ++index) {
    new (base + kPortsOffset + index * sizeof(PortChannel)) PortChannel{};
  }
  auto* ports = std::launder(reinterpret_cast<PortChannel*>(base + kPortsOffset));
  header->version = kRegionVersion;
  header->port_count = port_count;
  header->slot_bytes = static_cast<std::uint32_t>(kSlotBytes);
  header->ring_slots = static_cast<std::uint32_t>(kRingSlots);
  header->port_channel_bytes = sizeof(PortChannel);
  header->switch_pid.store(static_cast<std::int32_t>(::getpid()), std::memory_order_relaxed);
  header->switch_ready.store(1, std::memory_order_relaxed);
  magic_of(*header).store(kRegionMagic, std::memory_order_release);  // publishes all of the above
  return ShmFabricRegion(std::move(file), header, ports, port_count);
}

ShmFabricRegion ShmFabricRegion::attach(const std::string& name) {
  SharedMemoryFile file = SharedMemoryFile::open(name);
  if (file.size_bytes() < kPortsOffset) {
    reject(file, "it is " + std::to_string(file.size_bytes()) + " bytes, smaller than a header");
  }
  // The creator (another process) constructed these objects; launder is how this process
  // starts using them through the mapping (C++23 would say std::start_lifetime_as).
  auto* header = std::launder(reinterpret_cast<RegionHeader*>(file.data()));
  if (const std::uint64_t magic = magic_of(*header).load(std::memory_order_acquire);
      magic != kRegionMagic) {
    reject(file, "magic is " + hex(magic) + ", expected " + hex(kRegionMagic) +
                     " (not made by ethx-switch, or the switch is still setting it up)");
  }
  if (header->version != kRegionVersion) {
    reject(file, mismatch("layout version", header->version, kRegionVersion));
  }
  if (header->slot_bytes != kSlotBytes) {
    reject(file, mismatch("slot size", header->slot_bytes, kSlotBytes));
  }
  if (header->ring_slots != kRingSlots) {
    reject(file, mismatch("ring slot count", header->ring_slots, kRingSlots));
  }
  if (header->port_channel_bytes != sizeof(PortChannel)) {
    reject(file, mismatch("port channel size", header->port_channel_bytes, sizeof(PortChannel)));
  }
  const std::uint32_t port_count = header->port_count;  // read once: the header is shared
  if (port_count == 0 || port_count > kMaxRegionPorts) {
    reject(file, "port count " + std::to_string(port_count) + " is outside 1.." +
                     std::to_string(kMaxRegionPorts));
  }
  if (file.size_bytes() < bytes_for(port_count)) {
    reject(file, "it is " + std::to_string(file.size_bytes()) + " bytes, " +
                     std::to_string(port_count) + " ports need " +
                     std::to_string(bytes_for(port_count)));
  }
  auto* ports = std::launder(reinterpret_cast<PortChannel*>(file.data() + kPortsOffset));
  return ShmFabricRegion(std::move(file), header, ports, port_count);
}

PortChannel& ShmFabricRegion::port(std::uint32_t index) {
  if (index >= port_count_) {
    throw std::out_of_range("fabric region " + file_.name() + ": port " + std::to_string(index) +
                            " of " + std::to_string(port_count_));
  }
  return ports_[index];
}

ShmFabricRegion::ShmFabricRegion(SharedMemoryFile file, RegionHeader* header, PortChannel* ports,
                                 std::uint32_t port_count)
    : file_(std::move(file)), header_(header), ports_(ports), port_count_(port_count) {}

}  // namespace ethx::shm
