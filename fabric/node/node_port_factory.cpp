#include "fabric/node/node_port_factory.hpp"

#include <random>
#include <stdexcept>

#include "fabric/config/fabric_names.hpp"
#include "fabric/node/flow_node_port.hpp"
#include "fabric/node/llr_node_port.hpp"
#include "fabric/platform/shm_file.hpp"
#include "fabric/transport/net/frame_socket.hpp"
#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/transport/net/socket_transport.hpp"
#include "fabric/transport/shm/shm_node_port.hpp"

namespace ethx {

SocketEndpoint socket_endpoint(const TopologyConfig& topology, GpuId gpu,
                               const NodePortOptions& options) {
  SocketEndpoint endpoint{options.interface, options.netns.value_or("")};
  const GpuConfig& configured = topology.gpus.at(gpu);
  if (endpoint.interface.empty() && !configured.interface.empty()) {
    endpoint.interface = configured.interface;
    endpoint.netns = options.netns.value_or(configured.netns);
  }
  if (endpoint.interface.empty() && !options.netns_tag.empty()) {
    endpoint.interface = netns::node_interface(options.netns_tag, gpu);
    endpoint.netns = netns::node_namespace(options.netns_tag, gpu);
  }
  if (endpoint.interface.empty()) {
    throw std::invalid_argument("transport " + options.transport +
                                " needs a netns tag, an interface or gpu.interface in the config");
  }
  return endpoint;
}

namespace {

std::unique_ptr<NodePort> open_socket_port(const TopologyConfig& topology, GpuId gpu,
                                           const NodePortOptions& options) {
  const SocketEndpoint endpoint = socket_endpoint(topology, gpu, options);
  // Entering a namespace needs CAP_SYS_ADMIN; an interface in the caller's own does not.
  PrivilegeNeeds needs = privilege_needs(options.transport);
  needs.namespaces = !endpoint.netns.empty();
  if (std::string error = check_privileges(needs, options.program); !error.empty()) {
    throw std::runtime_error(error);
  }
  return std::make_unique<SocketNodePort>(
      open_frame_socket(options.transport, endpoint.netns, endpoint.interface, SocketRole::kNode,
                        receive_frames_for_fabric(topology.gpu_count)));
}

std::unique_ptr<NodePort> open_transport_port(const TopologyConfig& topology, GpuId gpu,
                                              const NodePortOptions& options) {
  if (!valid_transport(options.transport)) {
    throw std::invalid_argument("transport " + options.transport + ": use shm, afxdp or afpacket");
  }
  if (is_socket_transport(options.transport)) return open_socket_port(topology, gpu, options);
  const std::string region = switch_region_name(options.fabric);
  if (!shm::SharedMemoryFile::exists(region)) {
    throw std::runtime_error("no fabric '" + options.fabric +
                             "' (its switch region is missing; start one with `ethx up`)");
  }
  return ShmNodePort::attach(region, gpu);
}

}  // namespace

std::unique_ptr<NodePort> open_node_port(const TopologyConfig& topology, GpuId gpu,
                                         const NodePortOptions& options) {
  require_emulated(topology);
  std::unique_ptr<NodePort> port = open_transport_port(topology, gpu, options);
  if (!topology.link_retry) return port;
  const MacAddr& mac = topology.gpus.at(gpu).mac;
  auto llr = std::make_unique<LlrNodePort>(std::move(port),
                                           wall_clock_link_retry(topology.link_retry_config), mac,
                                           std::random_device{}());
  const FlowControlConfig& flow = topology.flow_control;
  if (flow.mode == FlowControlMode::kNone) return llr;
  // The same thresholds as the switch port's end of the hop (SwitchCore::reset_flow).
  std::optional<PfcThresholds> thresholds;
  if (flow.mode == FlowControlMode::kPfc) {
    thresholds = pfc_thresholds(flow.class_buffer_bytes, topology.link_rate_gbps,
                                topology.link_propagation_ns, flow.frame_bytes_max);
  }
  return std::make_unique<FlowNodePort>(std::move(llr), flow, thresholds, topology.link_rate_gbps,
                                        mac);
}

}  // namespace ethx
