#include "qemu-device/host/copy_engine.hpp"

#include <algorithm>
#include <cstring>

namespace ethx {

CopyEngine::CopyEngine(const AddressMap& map, GpuId self, std::span<std::byte> local_memory,
                       const CopyLimits& limits)
    : map_(map), self_(self), memory_(local_memory), limits_(limits) {}

void CopyEngine::start(std::uint64_t src, std::uint64_t dst, std::uint64_t bytes) {
  Job job;
  job.src = src;
  job.dst = dst;
  job.bytes = bytes;
  job_.emplace(std::move(job));
}

void CopyEngine::advance(NodeRequests& node) {
  if (!job_) return;
  while (job_->issued < job_->bytes && reads_.size() < limits_.max_reads_in_flight &&
         node.backlog_frames() <= limits_.max_backlog_frames) {
    if (!issue_chunk(node)) break;
  }
  if (job_->issued >= job_->bytes && reads_.empty() && !job_->flushing) start_flushes(node);
}

// Chunks never straddle a window edge on either side.
std::uint64_t CopyEngine::next_chunk_bytes() const {
  const Job& job = *job_;
  const std::uint64_t offset = job.issued;
  const std::uint64_t aperture = limits_.aperture_bytes;
  std::uint64_t length = std::min<std::uint64_t>(limits_.chunk_bytes, job.bytes - offset);
  length = std::min(length, aperture - (job.src + offset) % aperture);
  return std::min(length, aperture - (job.dst + offset) % aperture);
}

bool CopyEngine::issue_chunk(NodeRequests& node) {
  Job& job = *job_;
  const std::uint64_t offset = job.issued;
  const std::uint64_t length = next_chunk_bytes();
  const WindowTarget source = translate_window(map_, job.src + offset, length, Access::kRead);
  if (!source.ok()) {
    fail(source.status, source.fault_addr);
    return false;
  }
  if (source.gpu == self_) {
    if (source.remote + length > memory_.size()) {
      fail(DeviceStatus::kRemoteError, job.src + offset);
      return false;
    }
    job.issued += length;
    write_out(job.dst + offset, memory_.subspan(source.remote, length), node);
    return true;
  }
  if (node.free_tags() < node.tags_needed(length)) return false;
  reads_.emplace(node.read(source.gpu, source.remote, static_cast<std::uint32_t>(length)),
                 job.dst + offset);
  job.issued += length;
  return true;
}

void CopyEngine::write_out(std::uint64_t dst_addr, std::span<const std::byte> data,
                           NodeRequests& node) {
  const WindowTarget target = translate_window(map_, dst_addr, data.size(), Access::kWrite);
  if (!target.ok()) {
    fail(target.status, target.fault_addr);
    return;
  }
  if (target.gpu == self_) {
    if (target.remote + data.size() > memory_.size()) {
      fail(DeviceStatus::kRemoteError, dst_addr);
      return;
    }
    // memmove: a copy within the GPU's own memory may overlap itself.
    std::memmove(memory_.data() + target.remote, data.data(), data.size());
  } else {
    node.write_posted(target.gpu, target.remote, data);
    Job& job = *job_;
    if (std::find(job.written_gpus.begin(), job.written_gpus.end(), target.gpu) ==
        job.written_gpus.end()) {
      job.written_gpus.push_back(target.gpu);
    }
  }
  moved_bytes_ += data.size();
}

// Visible everywhere before completion: a flush per GPU written to.
void CopyEngine::start_flushes(NodeRequests& node) {
  job_->flushing = true;
  for (const GpuId gpu : job_->written_gpus) flushes_.insert(node.flush(gpu));
}

bool CopyEngine::on_completion(const Completion& completion, NodeRequests& node) {
  if (const auto read = reads_.find(completion.id); read != reads_.end()) {
    const std::uint64_t dst_addr = read->second;
    reads_.erase(read);
    on_read(dst_addr, completion, node);
    return true;
  }
  if (flushes_.erase(completion.id) == 0) return false;
  on_flush(completion);
  return true;
}

void CopyEngine::on_read(std::uint64_t dst_addr, const Completion& completion, NodeRequests& node) {
  const DeviceStatus status = from_wire(completion.status);
  if (status != DeviceStatus::kOk) {
    fail(status, job_->src + (dst_addr - job_->dst));
    return;
  }
  if (job_->result.status != DeviceStatus::kOk) return;  // failed already: drain only
  write_out(dst_addr, completion.data, node);
}

// A failed flush names the GPU that did not answer, as flush_all's does.
void CopyEngine::on_flush(const Completion& completion) {
  const DeviceStatus status = from_wire(completion.status);
  if (status != DeviceStatus::kOk && job_->result.status == DeviceStatus::kOk) {
    job_->result.status = status;
    job_->result.fault_addr = std::uint64_t{completion.dst_gpu} * limits_.aperture_bytes;
  }
}

void CopyEngine::fail(DeviceStatus status, std::uint64_t fault_addr) {
  if (job_->result.status == DeviceStatus::kOk) {
    job_->result.status = status;
    job_->result.fault_addr = fault_addr;
  }
  job_->issued = job_->bytes;  // issue nothing more; what is in flight drains
}

std::optional<DeviceResult> CopyEngine::take_result() {
  if (!job_ || !job_->flushing || !flushes_.empty()) return std::nullopt;
  const DeviceResult result = job_->result;
  job_.reset();
  return result;
}

}  // namespace ethx
