// Fuzz target: the switch core's ingress (SwitchCore::on_frame) with arbitrary frames on
// arbitrary ports, interleaved with link flaps and egress draining. A shadow copy of every
// egress queue checks that the core queues exactly the bytes it was given, in order, within
// its byte limit.
//
// Input: records (tests/fuzz/fuzz_input.hpp). Upper control bits:
//   bits 3-5  ingress port, modulo 5: port 4 does not exist (four-port switch)
//   bit 6     flip the ingress port's link state first
//   bit 7     drain every egress queue first; in the first record instead: learning on
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "packet-engine/wire.hpp"
#include "switch/core/switch_core.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

using namespace ethx;

constexpr std::size_t kPorts = 4;
constexpr PortId kPortChoices = kPorts + 1;
// Small queues, so a handful of large frames reaches the queue-full path.
constexpr std::size_t kQueueBytes = 8 * 1024;

SwitchConfig make_config(bool learning) {
  SwitchConfig config;
  config.ports.assign(kPorts, SwitchPortConfig{800.0, kQueueBytes});
  config.learning = learning;
  // GPU 3 has no static route: with learning it is learned, without it is unknown.
  for (GpuId gpu = 0; gpu < 3; ++gpu) {
    config.static_routes.emplace_back(default_mac_for_gpu(gpu), gpu);
  }
  return config;
}

struct Shadow {
  std::deque<wire::Frame> queue;
  std::size_t bytes = 0;
};

void drain(SwitchCore& core, std::vector<Shadow>& shadows, bool into) {
  for (PortId port = 0; port < kPorts; ++port) {
    Shadow& shadow = shadows[port];
    while (const QueuedFrame* front = core.front(port)) {
      ETHX_FUZZ_CHECK(!shadow.queue.empty() && front->bytes == shadow.queue.front());
      if (into) {
        wire::Frame out;
        core.pop_into(port, out);
        ETHX_FUZZ_CHECK(out == shadow.queue.front());
      } else {
        core.pop(port);
      }
      shadow.bytes -= shadow.queue.front().size();
      shadow.queue.pop_front();
    }
    ETHX_FUZZ_CHECK(shadow.queue.empty() && core.queued_bytes(port) == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::byte> rest = fuzz::as_bytes(data, size);
  std::optional<SwitchCore> core;
  std::vector<Shadow> shadows(kPorts);
  std::vector<PortId> touched;
  TimeNs now = 0;
  fuzz::Record record;
  while (fuzz::next_record(rest, record)) {
    const std::uint8_t target = record.control >> fuzz::kTargetBitsShift;
    const PortId ingress = (target & 0x7u) % kPortChoices;
    const bool flap = (target & 0x8u) != 0;
    const bool drain_first = (target & 0x10u) != 0;
    if (!core) {
      core.emplace(make_config(drain_first));
    } else if (drain_first) {
      drain(*core, shadows, ingress % 2 == 0);
    }
    if (flap && ingress < kPorts) {
      const bool up = !core->port_up(ingress);
      core->set_port_up(ingress, up);
      if (!up) shadows[ingress] = Shadow{};  // taking a link down drops what was queued to it
    }

    const wire::Frame frame = fuzz::fix_up(record.bytes, record.control & fuzz::kModeMask);
    now += 100;
    const std::uint64_t bad_port_before = core->drops_bad_port();
    const bool ingress_up = core->port_up(ingress);
    const std::optional<PortCounters> before =
        ingress < kPorts ? std::optional(core->counters(ingress)) : std::nullopt;
    touched.clear();
    core->on_frame(ingress, frame, now, touched);

    if (!before) {
      ETHX_FUZZ_CHECK(core->drops_bad_port() == bad_port_before + 1 && touched.empty());
      continue;
    }
    const PortCounters& after = core->counters(ingress);
    ETHX_FUZZ_CHECK(after.rx_frames == before->rx_frames + 1);
    MacAddr dst;
    MacAddr src;
    std::uint16_t ether_type = 0;
    wire::FrameView view;
    const bool fabric =
        wire::peek_ethernet(frame, dst, src, ether_type) && ether_type == wire::kEtherTypeFabric;
    if (!ingress_up) {
      ETHX_FUZZ_CHECK(after.drops_link_down == before->drops_link_down + 1 && touched.empty());
    } else if (fabric && wire::decode_frame(frame, view) != wire::DecodeError::kOk) {
      // A corrupt fabric frame is counted on its ingress and goes nowhere.
      ETHX_FUZZ_CHECK(after.drops_malformed == before->drops_malformed + 1);
      ETHX_FUZZ_CHECK(touched.empty());
    }
    for (PortId egress : touched) {
      ETHX_FUZZ_CHECK(egress < kPorts && egress != ingress);
      shadows[egress].queue.push_back(frame);
      shadows[egress].bytes += frame.size();
    }
    for (PortId port = 0; port < kPorts; ++port) {
      ETHX_FUZZ_CHECK(core->queued_bytes(port) == shadows[port].bytes);
      ETHX_FUZZ_CHECK(core->queued_frames(port) == shadows[port].queue.size());
      ETHX_FUZZ_CHECK(core->queued_bytes(port) <= kQueueBytes);
    }
  }
  if (core) drain(*core, shadows, true);
  return 0;
}
