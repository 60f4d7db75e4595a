// The GPU's copy engine (COPY_CMD, docs/register-map.md), sans-I/O: it copies `bytes` from one
// window address to another in chunks that never straddle a window edge, keeping a window of
// reads in flight. Chunks of the GPU's own memory are read from it directly and data for it is
// written to it directly; everything else travels through the node's requester (reads, then
// posted writes of the data), and once every read is answered a flush to each GPU written to
// makes the data visible everywhere before the copy completes. It knows nothing of threads,
// clocks or ports: the engine's owner calls advance(), hands it the completions of its
// operations and takes its result (GpuDevice); the unit tests do the same with a fake node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "address-map/address_map.hpp"
#include "qemu-device/host/device_request.hpp"
#include "qemu-device/host/node_requests.hpp"

namespace ethx {

struct CopyLimits {
  std::uint64_t aperture_bytes = 0;  // window edges: chunks never straddle a multiple of it
  std::uint32_t chunk_bytes = 4096;
  // Reads a copy keeps in flight: 32 x 4 KiB, as many as the host-process read benchmark keeps
  // (ethx bench "reads, 4096 B, 32 outstanding"), which is what large copies are held against.
  std::size_t max_reads_in_flight = 32;
  // No new chunk while more frames than this wait in front of a full port.
  std::size_t max_backlog_frames = 64;
};

class CopyEngine {
 public:
  // `map` and `local_memory` (the GPU's own) must outlive the engine.
  CopyEngine(const AddressMap& map, GpuId self, std::span<std::byte> local_memory,
             const CopyLimits& limits);

  // Starts a copy; the previous one must have ended (take_result()).
  void start(std::uint64_t src, std::uint64_t dst, std::uint64_t bytes);
  bool running() const { return job_.has_value(); }
  // Issues what the copy may issue now: chunks while fewer than max_reads_in_flight reads are
  // outstanding, the port is not backed up and the requester has the tags; after the last
  // read's answer, the flushes.
  void advance(NodeRequests& node);
  // Takes the completion of one of the copy's reads (its data goes out as a posted write, or
  // into local memory) or flushes; false if `completion` is not one of them.
  bool on_completion(const Completion& completion, NodeRequests& node);
  // Once the copy has ended (every read and flush answered): its result, then nullopt. A failure
  // names the first failing window address (a flush's: the GPU's, g x aperture); nothing more
  // is issued after it, what is in flight drains.
  std::optional<DeviceResult> take_result();

  std::size_t reads_in_flight() const { return reads_.size(); }
  // Bytes written to their destination (locally or as posted writes), over every copy.
  std::uint64_t moved_bytes() const { return moved_bytes_; }

 private:
  struct Job {
    std::uint64_t src = 0;
    std::uint64_t dst = 0;
    std::uint64_t bytes = 0;
    std::uint64_t issued = 0;  // bytes whose read was issued (or served locally)
    bool flushing = false;
    std::vector<GpuId> written_gpus;
    DeviceResult result;
  };

  std::uint64_t next_chunk_bytes() const;
  // Issues the next chunk; false if it must wait (tags) or the copy failed.
  bool issue_chunk(NodeRequests& node);
  void write_out(std::uint64_t dst_addr, std::span<const std::byte> data, NodeRequests& node);
  void on_read(std::uint64_t dst_addr, const Completion& completion, NodeRequests& node);
  void on_flush(const Completion& completion);
  void start_flushes(NodeRequests& node);
  // Records the first failure and stops issuing.
  void fail(DeviceStatus status, std::uint64_t fault_addr);

  const AddressMap& map_;
  GpuId self_;
  std::span<std::byte> memory_;
  CopyLimits limits_;
  std::optional<Job> job_;
  // The copy's operations in flight: each read with the window address its data goes to, and
  // the flushes. The one record of them: a completion is the copy's if it is here.
  std::unordered_map<OpId, std::uint64_t> reads_;
  std::unordered_set<OpId> flushes_;
  std::uint64_t moved_bytes_ = 0;
};

}  // namespace ethx
