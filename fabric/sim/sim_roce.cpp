// SimFabric's RoCE GPUs (--engine roce): posting, the NIC's processing, the engine's calls and
// the completions, each at its modelled time (sim_roce.hpp, rnic_model.hpp).
#include "fabric/sim/sim_roce.hpp"

#include <algorithm>

#include "fabric/sim/sim_fabric.hpp"
#include "packet-engine/roce/roce_addressing.hpp"

namespace ethx::sim {

RocePacketCost roce_packet_cost(std::span<const std::byte> frame) {
  RocePacketCost cost;
  roce::PacketView packet;
  // Headers only: the engine that receives the packet checks its ICRC.
  if (roce::decode_packet(frame, packet, roce::Icrc::kSkip) != roce::DecodeError::kOk) {
    return cost;
  }
  cost.valid = true;
  cost.dest_qp = packet.dest_qp;
  const roce::Opcode opcode = packet.opcode;
  const std::uint64_t payload = packet.payload.size();
  if (packet.reth) {
    cost.rkey = packet.reth->rkey.value();
    cost.address = packet.reth->virtual_address.value();
    // A WRITE checks the bytes it carries; a READ request the bytes it asks for.
    cost.touched_bytes =
        opcode == roce::Opcode::kReadRequest ? packet.reth->dma_length.value() : payload;
  }
  const bool request_data = roce::is_write(opcode) || roce::is_send(opcode);
  if (request_data || roce::is_read_response(opcode)) {
    cost.place_bytes = payload;  // for the receiver
    cost.fetch_bytes = payload;  // for the sender
  }
  cost.one_packet_request =
      request_data && roce::is_first_or_only(opcode) && roce::is_last_or_only(opcode);
  return cost;
}

namespace {

// A work completion's status in the report's terms: retries exhausted is the RoCE timeout.
wire::Status load_store_status(roce::WcStatus status) {
  switch (status) {
    case roce::WcStatus::kSuccess:
      return wire::Status::kOk;
    case roce::WcStatus::kRetryExceeded:
    case roce::WcStatus::kRnrRetryExceeded:
      return wire::Status::kTimeout;
    case roce::WcStatus::kRemoteAccessError:
    case roce::WcStatus::kLocalProtectionError:
      return wire::Status::kNoRights;
    default:
      return wire::Status::kBadRequest;
  }
}

}  // namespace

RoceGpu::RoceGpu(const roce::RoceNodeConfig& node_config, std::span<std::byte> memory,
                 const RnicConfig& nic_config, std::size_t gpus)
    : node(node_config), qp_to(gpus, 0), nic(nic_config) {
  cq = node.create_cq(std::size_t{1} << 20);
  region = node.register_memory(
      memory, roce::kAccessLocalWrite | roce::kAccessRemoteWrite | roce::kAccessRemoteRead, 0);
}

void SimFabric::add_roce_gpus() {
  for (std::size_t gpu = 0; gpu < gpus_.size(); ++gpu) {
    const GpuConfig& gpu_config = config_.gpus[gpu];
    roce::RoceNodeConfig node_config;
    node_config.mac = gpu_config.mac;
    node_config.ip = roce_ipv4_for_gpu(static_cast<GpuId>(gpu));
    node_config.icrc = config_.sim_crc;
    gpus_[gpu].roce =
        std::make_unique<RoceGpu>(node_config, memories_[0].bytes(), config_.rnic, gpus_.size());
  }
}

// Connection setup is out of band (RDMA-CM) and takes no modelled time: both ends of the pair
// get their QP the first time either needs it.
roce::QpNum SimFabric::roce_qp(GpuId gpu, GpuId peer) {
  RoceGpu& self = *gpus_[gpu].roce;
  if (self.qp_to[peer] != 0) return self.qp_to[peer];
  RoceGpu& other = *gpus_[peer].roce;
  roce::QpConfig qp_config;
  qp_config.path_mtu_bytes = kSimRocePathMtuBytes;
  qp_config.max_send_wr = std::max<std::size_t>(qp_config.max_send_wr, config_.max_outstanding);
  qp_config.send_cq = self.cq;
  qp_config.recv_cq = self.cq;
  const roce::QpNum mine = *self.node.create_qp(qp_config);
  qp_config.send_cq = other.cq;
  qp_config.recv_cq = other.cq;
  const roce::QpNum theirs = *other.node.create_qp(qp_config);
  self.node.connect_qp(mine, roce::QpRemote{other.node.mac(), other.node.ip(), theirs, 0});
  other.node.connect_qp(theirs, roce::QpRemote{self.node.mac(), self.node.ip(), mine, 0});
  self.qp_to[peer] = mine;
  other.qp_to[gpu] = theirs;
  return mine;
}

// One operation per work request; the GPU may have max_outstanding of them posted.
void SimFabric::try_issue_roce(GpuId gpu) {
  SimPartition& part = gpu_part(gpu);
  Gpu& state = gpus_[gpu];
  RoceGpu& roce = *state.roce;
  OpSpec op;
  while (roce.outstanding < config_.max_outstanding && workload_->peek(gpu, op)) {
    workload_->issued(gpu);
    ++roce.outstanding;
    const TimePs doorbell_ps = roce.nic.post(part.now);
    state.issuing.push_back(PendingIssue{op, 1, part.now, doorbell_ps});
    if (state.issuing.size() == 1) part.queue.push(doorbell_ps, kIssue, gpu);
  }
}

// The doorbell reached the NIC: post the WR and let the NIC process it.
void SimFabric::on_issue_roce(GpuId gpu) {
  SimPartition& part = gpu_part(gpu);
  Gpu& state = gpus_[gpu];
  RoceGpu& roce = *state.roce;
  const PendingIssue pending = state.issuing.front();
  state.issuing.pop_front();
  if (!state.issuing.empty()) part.queue.push(state.issuing.front().handed_ps, kIssue, gpu);
  const roce::QpNum qpn = roce_qp(gpu, pending.op.dst);
  const RoceGpu& peer = *gpus_[pending.op.dst].roce;
  roce::SendWr wr;
  wr.wr_id = roce.next_wr_id++;
  wr.opcode = pending.op.read ? roce::WrOpcode::kRdmaRead : roce::WrOpcode::kRdmaWrite;
  // The local buffer is the start of the (shared) memory, as for load/store (sim_fabric.hpp).
  wr.sg_list.push_back(roce::Sge{0, pending.op.bytes, roce.region.lkey});
  wr.remote_addr = pending.op.address;
  wr.rkey = peer.region.rkey;
  roce.node.post_send(qpn, wr);
  state.ops.add(wr.wr_id, OpRecord{pending.decided_ps, pending.op.bytes});
  // An inline WQE brought its small payload along; otherwise the NIC fetches the WQE, and
  // checks the local buffer it will read.
  const bool inline_send = !pending.op.read && roce.nic.inline_send(pending.op.bytes);
  NicAccess access{qpn, !roce.nic.inline_send(pending.op.read ? 0 : pending.op.bytes),
                   roce.region.lkey, 0, inline_send ? 0 : pending.op.bytes};
  const TimePs ready =
      std::max(roce.nic.process(part.now, access), roce.sends.empty() ? 0 : roce.sends.back().at);
  roce.sends.push_back(RoceGpu::Send{ready, qpn});
  if (roce.sends.size() == 1) part.queue.push(ready, kRoceSend, gpu);
}

void SimFabric::on_roce_send(GpuId gpu) {
  SimPartition& part = gpu_part(gpu);
  RoceGpu& roce = *gpus_[gpu].roce;
  const RoceGpu::Send send = roce.sends.front();
  roce.sends.pop_front();
  if (!roce.sends.empty()) part.queue.push(roce.sends.front().at, kRoceSend, gpu);
  part.effects.clear();
  roce.node.ring_doorbell(send.qpn, part.now_ns(), part.effects);
  after_roce(gpu);
}

// A packet reached the NIC: it processes it (contexts, checks) before the engine sees it.
void SimFabric::on_roce_arrival(GpuId gpu) {
  SimPartition& part = gpu_part(gpu);
  RoceGpu& roce = *gpus_[gpu].roce;
  RoceGpu::Received received = roce.arriving.front();
  roce.arriving.pop_front();
  if (!roce.arriving.empty()) part.queue.push(roce.arriving.front().at, kRoceArrival, gpu);
  const RocePacketCost cost = roce_packet_cost(part.slots[received.slot]);
  NicAccess access{cost.dest_qp, false, cost.rkey, cost.address, cost.touched_bytes};
  if (!cost.valid) access = NicAccess{};  // the engine counts it; the NIC still looked
  received.at = std::max(roce.nic.process(part.now, access),
                         roce.processed.empty() ? 0 : roce.processed.back().at);
  received.place_bytes = cost.place_bytes;
  roce.processed.push_back(received);
  if (roce.processed.size() == 1) part.queue.push(received.at, kRoceProcessed, gpu);
}

void SimFabric::on_roce_processed(GpuId gpu) {
  SimPartition& part = gpu_part(gpu);
  RoceGpu& roce = *gpus_[gpu].roce;
  const RoceGpu::Received received = roce.processed.front();
  roce.processed.pop_front();
  if (!roce.processed.empty()) part.queue.push(roce.processed.front().at, kRoceProcessed, gpu);
  ++part.tally.frames_delivered;
  // Posted: the engine answers (ACK, READ response) without waiting for the write to land;
  // a completion's CQE is written after it, on the same direction of PCIe.
  if (received.place_bytes > 0) roce.nic.dma_write(part.now, received.place_bytes);
  part.effects.clear();
  roce.node.on_frame(part.slots[received.slot], part.now_ns(), part.effects);
  part.release_slot(received.slot);
  after_roce(gpu);
}

// Frames the engine produced go to the wire once the NIC has their payload (a DMA read,
// unless it came inline); completions get their CQE; a wake-up is scheduled.
void SimFabric::after_roce(GpuId gpu) {
  SimPartition& part = gpu_part(gpu);
  Gpu& state = gpus_[gpu];
  RoceGpu& roce = *state.roce;
  const std::uint32_t uplink = topology_.gpu_tx_link[gpu];
  for (wire::Frame& frame : part.effects.send) {
    const RocePacketCost cost = roce_packet_cost(frame);
    // Only a one-packet request can have come inline with its doorbell.
    const bool came_inline = cost.one_packet_request && roce.nic.inline_send(cost.fetch_bytes);
    const TimePs ready = cost.fetch_bytes == 0 || came_inline
                             ? part.now
                             : roce.nic.dma_read(part.now, cost.fetch_bytes);
    const std::uint32_t slot = part.take_slot();
    part.slots[slot].swap(frame);
    launch(part, uplink, slot, std::max(ready, links_[uplink].free_at));
  }
  schedule_wake(gpu);
  part.effects.clear();
  roce::WorkCompletion completions[16];
  while (const std::size_t count = roce.node.poll_cq(roce.cq, completions)) {
    for (std::size_t index = 0; index < count; ++index) {
      const TimePs seen = roce.nic.write_cqe(part.now);
      roce.completions.push_back(
          RoceGpu::Seen{seen, completions[index].wr_id, completions[index].status});
      if (roce.completions.size() == 1) part.queue.push(seen, kRoceCompletion, gpu);
    }
  }
}

void SimFabric::on_roce_completion(GpuId gpu) {
  SimPartition& part = gpu_part(gpu);
  Gpu& state = gpus_[gpu];
  RoceGpu& roce = *state.roce;
  const RoceGpu::Seen seen = roce.completions.front();
  roce.completions.pop_front();
  if (!roce.completions.empty()) part.queue.push(roce.completions.front().at, kRoceCompletion, gpu);
  --roce.outstanding;
  Completion completion;
  completion.id = seen.wr_id;
  completion.status = load_store_status(seen.status);
  count_completion(part, completion, state.ops.take(seen.wr_id));
  part.wake.clear();
  workload_->completed(gpu, part.wake);
  workload_done_ = workload_->done();
  const std::vector<GpuId> others = part.wake;
  try_issue_roce(gpu);
  for (GpuId other : others) {
    if (other != gpu) try_issue_roce(other);
  }
}

void SimFabric::add_nic_report() {
  NicReport nic;
  std::uint64_t state_bytes = 0;
  for (const Gpu& state : gpus_) {
    const RoceGpu& roce = *state.roce;
    nic.counters += roce.nic.counters();
    nic.qps += roce.node.qp_count();
    nic.max_qps_per_gpu = std::max<std::uint64_t>(nic.max_qps_per_gpu, roce.node.qp_count());
    state_bytes += roce.node.total_qp_state_bytes();
  }
  nic.connection_state_bytes_per_gpu = gpus_.empty() ? 0 : state_bytes / gpus_.size();
  report_.nic = nic;
  report_.engine = to_string(engine_);
}

}  // namespace ethx::sim
