// The completer side of a GPU's packet engine: serves remote requests against this GPU's
// local memory. Sans-I/O and lock-free: it touches memory through its own mapping, so it can
// run on a thread of its own that never needs QEMU's big lock.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "packet-engine/effects.hpp"
#include "packet-engine/engine_config.hpp"
#include "packet-engine/tx_framer.hpp"
#include "packet-engine/wire.hpp"

namespace ethx {

struct CompleterCounters {
  std::uint64_t reads = 0;
  std::uint64_t read_bytes = 0;
  std::uint64_t writes = 0;  // posted and non-posted
  std::uint64_t write_bytes = 0;
  std::uint64_t atomics = 0;
  std::uint64_t flushes = 0;
  std::uint64_t errors = 0;                         // error responses sent
  std::uint64_t posted_write_errors = 0;            // posted writes rejected (no one to tell)
  std::array<std::uint64_t, 8> errors_by_status{};  // indexed by wire::Status
};

class Completer {
 public:
  // `memory` is this GPU's local memory ("HBM"), shared with whoever else maps it.
  Completer(const EngineConfig& config, TxFramer& framer, std::span<std::byte> memory);

  // Serves one request transaction from `frame`; the response goes into the framer.
  void on_request(const wire::FrameView& frame, const wire::TxnView& txn, TimeNs now,
                  Effects& effects);
  const CompleterCounters& counters() const { return counters_; }
  std::span<std::byte> memory() const { return memory_; }

 private:
  wire::Status check(const wire::FrameView& frame, const wire::TxnView& txn) const;
  void respond_error(GpuId requester, const wire::TxnView& txn, wire::Status status, TimeNs now,
                     Effects& effects);
  std::uint64_t perform_atomic(const wire::TxnView& txn);

  const EngineConfig& config_;
  TxFramer& framer_;
  std::span<std::byte> memory_;
  CompleterCounters counters_;
};

}  // namespace ethx
