// Fuzz target: an Endpoint (requester + completer over 64 KiB of memory) receiving arbitrary
// frames through on_frame, with poll() after each. Before the first frame it has requests of
// every kind outstanding (tests/fuzz/endpoint_harness.hpp), so forged responses reach the
// requester as well as forged requests the completer.
//
// Input: records (tests/fuzz/fuzz_input.hpp). The upper five control bits advance the clock by
// that many milliseconds before the frame, which lets inputs expire outstanding requests.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "packet-engine/wire.hpp"
#include "tests/fuzz/endpoint_harness.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

using namespace ethx;

// Whatever arrives, what the endpoint sends must be valid frames from itself.
void check_sent(const fuzz::EndpointHarness& harness) {
  const EngineConfig& config = harness.endpoint.config();
  for (const wire::Frame& frame : harness.effects.send) {
    wire::FrameView view;
    ETHX_FUZZ_CHECK(wire::decode_frame(frame, view) == wire::DecodeError::kOk);
    ETHX_FUZZ_CHECK(view.src_gpu == config.self && view.src_mac == config.self_mac);
    ETHX_FUZZ_CHECK(view.dst_gpu < config.gpu_macs.size());
    ETHX_FUZZ_CHECK(frame.size() <= wire::clamp_frame_bytes_max(config.frame_bytes_max));
  }
}

void check_completions(fuzz::EndpointHarness& harness) {
  while (auto completion = harness.endpoint.requester().take_completion()) {
    if (!completion->ok()) ETHX_FUZZ_CHECK(completion->data.empty());
    ETHX_FUZZ_CHECK(completion->completed_ns >= completion->issued_ns);
  }
  // Forged responses must neither complete an op twice nor lose one.
  const Requester& requester = harness.endpoint.requester();
  const RequesterCounters& counters = requester.counters();
  ETHX_FUZZ_CHECK(counters.ops_completed + counters.ops_failed + requester.outstanding_ops() ==
                  counters.ops_issued);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::EndpointHarness harness;
  harness.issue_requests();
  harness.effects.clear();
  const fuzz::SelfAddress self{harness.endpoint.config().self_mac, harness.endpoint.config().self};

  std::vector<std::byte> memory_before;
  std::span<const std::byte> rest = fuzz::as_bytes(data, size);
  fuzz::Record record;
  while (fuzz::next_record(rest, record)) {
    harness.now += fuzz::kHarnessTimeStepNs * (record.control >> fuzz::kTargetBitsShift);
    const wire::Frame frame = fuzz::fix_up(record.bytes, record.control & fuzz::kModeMask, &self);
    wire::FrameView view;
    const wire::DecodeError error = wire::decode_frame(frame, view);

    const EndpointCounters before = harness.endpoint.counters();
    // Compared with memcmp, not std::equal or a checksum: those run byte loops under
    // coverage instrumentation and cost more than everything else the target does.
    if (error != wire::DecodeError::kOk) memory_before = harness.memory;
    harness.endpoint.on_frame(frame, harness.now, harness.effects);
    const EndpointCounters& after = harness.endpoint.counters();
    ETHX_FUZZ_CHECK(after.frames_rx == before.frames_rx + 1);
    if (error != wire::DecodeError::kOk) {
      // A frame the decoder refuses is counted under its reason and changes nothing else.
      const auto reason = static_cast<std::size_t>(error);
      ETHX_FUZZ_CHECK(after.malformed == before.malformed + 1);
      ETHX_FUZZ_CHECK(after.malformed_by_reason[reason] == before.malformed_by_reason[reason] + 1);
      ETHX_FUZZ_CHECK(after.txns_rx == before.txns_rx);
      ETHX_FUZZ_CHECK(
          std::memcmp(harness.memory.data(), memory_before.data(), memory_before.size()) == 0);
    } else {
      ETHX_FUZZ_CHECK(after.malformed == before.malformed);
    }
    harness.endpoint.poll(harness.now, harness.effects);
    check_sent(harness);
    harness.effects.clear();
    check_completions(harness);
  }
  return 0;
}
