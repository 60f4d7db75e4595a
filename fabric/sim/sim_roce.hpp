// A GPU of `ethx sim --engine roce`: the unchanged RoCEv2 engine (packet-engine/roce, one RC
// queue pair per peer it talks to) behind the RDMA NIC model (rnic_model.hpp). SimFabric owns
// one per GPU and drives it from sim_roce.cpp; docs/simulator.md, "The RoCE engine".
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "fabric/config/rnic_config.hpp"
#include "fabric/sim/rnic_model.hpp"
#include "fabric/sim/sim_event_queue.hpp"
#include "packet-engine/fifo.hpp"
#include "packet-engine/roce/roce_node.hpp"

namespace ethx::sim {

// The RoCE path MTU: the largest IB MTU that fits a 1500 B Ethernet frame, as the load/store
// engine's frames do (docs/simulator.md).
inline constexpr std::uint32_t kSimRocePathMtuBytes = 1024;

// What the NIC must do for one packet, read from its headers.
struct RocePacketCost {
  std::uint32_t dest_qp = 0;
  std::uint32_t rkey = 0;
  std::uint64_t address = 0;        // RETH virtual address (first or only packet of a WRITE, READ)
  std::uint64_t touched_bytes = 0;  // bytes of the region it checks (0: none)
  std::uint64_t place_bytes = 0;    // payload the receiving NIC writes to memory
  std::uint64_t fetch_bytes = 0;    // payload the sending NIC reads from memory first
  bool one_packet_request = false;  // a WRITE or SEND in one packet: may have come inline
  bool valid = false;
};
// The cost of `frame` for the NIC that receives it (place, check) or sends it (fetch).
RocePacketCost roce_packet_cost(std::span<const std::byte> frame);

struct RoceGpu {
  RoceGpu(const roce::RoceNodeConfig& node_config, std::span<std::byte> memory,
          const RnicConfig& nic_config, std::size_t gpus);

  roce::RoceNode node;
  roce::CqId cq = 0;
  roce::MemoryRegion region;       // all of the GPU's memory, remote read and write, iova 0
  std::vector<roce::QpNum> qp_to;  // by peer GPU; 0 until the first operation to it
  RnicModel nic;
  std::uint64_t next_wr_id = 1;
  std::size_t outstanding = 0;  // posted and not yet completed
  // Sends the NIC has processed, in order: ring the QP's doorbell at `at`.
  struct Send {
    TimePs at;
    roce::QpNum qpn;
  };
  Fifo<Send> sends;
  // Received packets: arrived (handed to the NIC on arrival) and processed (handed to the
  // engine when the NIC is done, in arrival order so a QP's packets stay in order).
  struct Received {
    TimePs at;
    std::uint32_t slot;
    std::uint64_t place_bytes;
  };
  Fifo<Received> arriving;
  Fifo<Received> processed;
  // Completions, when the GPU sees their CQE.
  struct Seen {
    TimePs at;
    std::uint64_t wr_id;
    roce::WcStatus status;
  };
  Fifo<Seen> completions;
};

}  // namespace ethx::sim
