#include "fabric/sim/sim_topology.hpp"

namespace ethx::sim {

const char* to_string(TopologyKind kind) {
  return kind == TopologyKind::kSingle ? "single" : "leaf-spine";
}

bool parse_topology_kind(const std::string& text, TopologyKind& out) {
  if (text == "single") {
    out = TopologyKind::kSingle;
    return true;
  }
  if (text == "leaf-spine") {
    out = TopologyKind::kLeafSpine;
    return true;
  }
  return false;
}

namespace {

class Builder {
 public:
  Builder(const TopologyConfig& config, SimTopology& topology)
      : config_(config), topology_(topology) {}

  std::uint32_t add_switch(std::string name, SwitchConfig switch_config) {
    switch_config.crc = config_.sim_crc ? wire::Crc::kOn : wire::Crc::kOff;
    // Link-level retry on every hop, GPU ports and switch-to-switch ports alike.
    for (SwitchPortConfig& port : switch_config.ports) {
      port.link_retry = config_.link_retry;
      port.propagation_ns = config_.link_propagation_ns;  // PFC's headroom
    }
    switch_config.link_retry = config_.link_retry_config;
    // Flow control per traffic class on every hop too.
    switch_config.flow_control = config_.flow_control;
    topology_.switch_names.push_back(std::move(name));
    topology_.egress_link.emplace_back(switch_config.ports.size(), kNoLink);
    topology_.switches.push_back(std::move(switch_config));
    return static_cast<std::uint32_t>(topology_.switches.size() - 1);
  }

  // A cable between GPU `gpu` and port `port` of switch `sw`: two links.
  void wire_gpu(GpuId gpu, std::uint32_t sw, std::uint32_t port) {
    const LinkEnd gpu_end{NodeKind::kGpu, gpu, 0};
    const LinkEnd switch_end{NodeKind::kSwitch, sw, port};
    topology_.gpu_tx_link[gpu] =
        add_link(gpu_end, switch_end, ns(config_.sim_nic_latency_ns) + forwarding(sw));
    topology_.egress_link[sw][port] = add_link(switch_end, gpu_end, ns(config_.sim_nic_latency_ns));
  }

  void wire_switches(std::uint32_t a, std::uint32_t a_port, std::uint32_t b, std::uint32_t b_port) {
    const LinkEnd a_end{NodeKind::kSwitch, a, a_port};
    const LinkEnd b_end{NodeKind::kSwitch, b, b_port};
    topology_.egress_link[a][a_port] = add_link(a_end, b_end, forwarding(b));
    topology_.egress_link[b][b_port] = add_link(b_end, a_end, forwarding(a));
  }

  SwitchConfig switch_config(std::size_t ports) const {
    SwitchConfig result;
    result.ports.assign(
        ports, SwitchPortConfig{config_.link_rate_gbps, config_.switch_egress_queue_bytes});
    result.forwarding_latency_ns = config_.switch_forwarding_latency_ns;
    result.learning = false;
    return result;
  }

 private:
  static TimePs ns(TimeNs value) { return value * kPsPerNs; }
  TimePs forwarding(std::uint32_t sw) const {
    return ns(topology_.switches[sw].forwarding_latency_ns);
  }
  std::uint32_t add_link(LinkEnd from, LinkEnd to, TimePs pipeline_ps) {
    Link link;
    link.from = from;
    link.to = to;
    link.rate_gbps = config_.link_rate_gbps;
    link.delay_ps = ns(config_.link_propagation_ns) + pipeline_ps;
    topology_.links.push_back(link);
    return static_cast<std::uint32_t>(topology_.links.size() - 1);
  }

  const TopologyConfig& config_;
  SimTopology& topology_;
};

}  // namespace

SimTopology build_topology(const TopologyConfig& config, TopologyKind kind) {
  SimTopology topology;
  topology.kind = kind;
  const std::size_t gpus = config.gpu_count;
  topology.gpu_tx_link.assign(gpus, kNoLink);
  Builder builder(config, topology);
  if (kind == TopologyKind::kSingle) {
    const std::uint32_t sw = builder.add_switch("switch", config.switch_config());
    for (std::size_t gpu = 0; gpu < gpus; ++gpu) {
      builder.wire_gpu(static_cast<GpuId>(gpu), sw, static_cast<std::uint32_t>(gpu));
    }
    return topology;
  }

  const std::size_t leaves = (gpus + kGpusPerLeaf - 1) / kGpusPerLeaf;
  const std::size_t spines = leaves > 1 ? kGpusPerLeaf : 0;
  topology.leaves = leaves;
  topology.spines = spines;
  for (std::size_t leaf = 0; leaf < leaves; ++leaf) {
    SwitchConfig leaf_config = builder.switch_config(kGpusPerLeaf + spines);
    for (const GpuConfig& gpu : config.gpus) {
      const std::size_t home = gpu.id / kGpusPerLeaf;
      const auto port = static_cast<PortId>(home == leaf ? gpu.id % kGpusPerLeaf
                                                         : kGpusPerLeaf + gpu.id % spines);
      leaf_config.static_routes.emplace_back(gpu.mac, port);
    }
    builder.add_switch("leaf" + std::to_string(leaf), std::move(leaf_config));
  }
  for (std::size_t spine = 0; spine < spines; ++spine) {
    SwitchConfig spine_config = builder.switch_config(leaves);
    for (const GpuConfig& gpu : config.gpus) {
      spine_config.static_routes.emplace_back(gpu.mac, static_cast<PortId>(gpu.id / kGpusPerLeaf));
    }
    builder.add_switch("spine" + std::to_string(spine), std::move(spine_config));
  }
  for (std::size_t gpu = 0; gpu < gpus; ++gpu) {
    builder.wire_gpu(static_cast<GpuId>(gpu), static_cast<std::uint32_t>(gpu / kGpusPerLeaf),
                     static_cast<std::uint32_t>(gpu % kGpusPerLeaf));
  }
  for (std::size_t leaf = 0; leaf < leaves; ++leaf) {
    for (std::size_t spine = 0; spine < spines; ++spine) {
      builder.wire_switches(
          static_cast<std::uint32_t>(leaf), static_cast<std::uint32_t>(kGpusPerLeaf + spine),
          static_cast<std::uint32_t>(leaves + spine), static_cast<std::uint32_t>(leaf));
    }
  }
  return topology;
}

}  // namespace ethx::sim
