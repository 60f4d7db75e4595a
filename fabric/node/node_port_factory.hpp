// How one GPU reaches its switch port, whatever the transport: a shared-memory port of the
// fabric's switch region, or an AF_XDP / AF_PACKET socket on the GPU's interface in its network
// namespace. ethx-node and the QEMU device's GpuDevice both open their port here, so both pick
// the interface, check privileges and size the receive ring the same way.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "address-map/fabric_types.hpp"
#include "fabric/config/topology_config.hpp"
#include "fabric/transport/node_port.hpp"

namespace ethx {

struct NodePortOptions {
  std::string fabric;             // the fabric instance: the shm transport's switch region
  std::string transport = "shm";  // shm | afxdp | afpacket
  std::string netns_tag;          // socket transports: this run's veth for the GPU, unless ...
  std::string interface;          // ... an interface is named here or as the config's gpu.interface
  // The named interface's network namespace. Unset: gpu.netns when the interface is the
  // config's, else the caller's ("" names the caller's explicitly).
  std::optional<std::string> netns;
  std::string program = "ethx";  // who opens the port, for the privilege error ("ethx-node")
};

// Where a socket transport's port is: an interface inside a network namespace ("" the caller's).
struct SocketEndpoint {
  std::string interface;
  std::string netns;
};

// The interface and namespace GPU `gpu` opens on a socket transport: options.interface, else the
// config's gpu.interface, else the veth of options.netns_tag. Throws std::invalid_argument when
// none is given.
SocketEndpoint socket_endpoint(const TopologyConfig& topology, GpuId gpu,
                               const NodePortOptions& options);

// Opens GPU `gpu`'s port. Throws with one line naming what is wrong: an unknown transport, no
// fabric (the switch region is missing), no interface, or the privileges a socket transport
// lacks (e.g. "ethx-node needs CAP_NET_RAW ...").
std::unique_ptr<NodePort> open_node_port(const TopologyConfig& topology, GpuId gpu,
                                         const NodePortOptions& options);

}  // namespace ethx
