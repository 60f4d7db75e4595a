// ethx_fuzz_seeds: writes the seed corpora in tests/fuzz/corpus/<target>/ (docs/fuzzing.md).
// The frames come from the real encoder and engine, so the seeds follow the wire format as it
// changes: rerun this and commit the result instead of editing bytes by hand.
//
//   ethx_fuzz_seeds <corpus directory>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/config/topology_config.hpp"
#include "packet-engine/roce/roce_wire.hpp"
#include "packet-engine/wire.hpp"
#include "tests/fuzz/endpoint_harness.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

using namespace ethx;
using Bytes = std::vector<std::byte>;
namespace fs = std::filesystem;

void write_seed(const fs::path& dir, const std::string& name, std::span<const std::byte> bytes) {
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

wire::Frame one_txn_frame(GpuId src, GpuId dst, const wire::TxnFields& fields,
                          std::size_t payload_bytes) {
  wire::FrameBuilder builder(wire::kDefaultFrameBytesMax);
  builder.start(
      wire::FrameAddress{default_mac_for_gpu(dst), default_mac_for_gpu(src), src, dst, 0});
  auto payload = builder.append(fields, payload_bytes);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>(i * 7 + 1);
  return builder.finish();
}

// A request of every opcode from GPU 1 to GPU 0, each in its own frame.
std::vector<std::pair<std::string, wire::Frame>> request_frames() {
  using wire::Opcode;
  const wire::Status ok = wire::Status::kOk;
  std::vector<std::pair<std::string, wire::Frame>> frames;
  frames.emplace_back("read-req", one_txn_frame(1, 0, {Opcode::kReadReq, ok, 1, 256, 0}, 0));
  frames.emplace_back("write-req", one_txn_frame(1, 0, {Opcode::kWriteReq, ok, 2, 100, 4096}, 100));
  frames.emplace_back("write-posted",
                      one_txn_frame(1, 0, {Opcode::kWritePosted, ok, 0, 64, 8192}, 64));
  frames.emplace_back("fetch-add", one_txn_frame(1, 0, {Opcode::kAtomicFetchAdd, ok, 3, 8, 64}, 8));
  frames.emplace_back("swap", one_txn_frame(1, 0, {Opcode::kAtomicSwap, ok, 4, 4, 68}, 4));
  frames.emplace_back("cas", one_txn_frame(1, 0, {Opcode::kAtomicCas, ok, 5, 8, 72}, 16));
  frames.emplace_back("flush", one_txn_frame(1, 0, {Opcode::kFlushReq, ok, 6, 0, 0}, 0));
  frames.emplace_back("out-of-range",
                      one_txn_frame(1, 0, {Opcode::kReadReq, ok, 7, 64, 1u << 20}, 0));

  // Several transactions in one frame, as write combining and batched responses produce.
  wire::FrameBuilder builder(wire::kDefaultFrameBytesMax);
  builder.start(wire::FrameAddress{default_mac_for_gpu(0), default_mac_for_gpu(1), 1, 0, 0});
  builder.append({Opcode::kWritePosted, ok, 0, 32, 0}, 32);
  builder.append({Opcode::kReadReq, ok, 8, 32, 0}, 0);
  builder.append({Opcode::kFlushReq, ok, 9, 0, 0}, 0);
  frames.emplace_back("multi-txn", builder.finish(wire::kFlagSeq | wire::kFlagAck, 5, 4));
  return frames;
}

// The responses GPU 1's engine sends to the requests the endpoint harness leaves outstanding,
// so the seeds start right at the requester's matching logic.
std::vector<wire::Frame> harness_responses() {
  fuzz::EndpointHarness requester(0);
  requester.issue_requests();
  fuzz::EndpointHarness peer(1);
  for (const wire::Frame& frame : requester.effects.send) {
    peer.endpoint.on_frame(frame, peer.now, peer.effects);
  }
  peer.endpoint.poll(peer.now, peer.effects);
  std::vector<wire::Frame> responses;
  for (wire::Frame& frame : peer.effects.send) {
    wire::FrameView view;
    if (wire::decode_frame(frame, view) == wire::DecodeError::kOk && view.dst_gpu == 0) {
      responses.push_back(std::move(frame));
    }
  }
  return responses;
}

void frame_decode_seeds(const fs::path& dir) {
  for (const auto& [name, frame] : request_frames()) {
    Bytes input{std::byte{0}};
    input.insert(input.end(), frame.begin(), frame.end());
    write_seed(dir, name, input);
  }
  Bytes response{std::byte{0}};
  const wire::Frame first = harness_responses().at(0);
  response.insert(response.end(), first.begin(), first.end());
  write_seed(dir, "read-resp", response);
}

void endpoint_seeds(const fs::path& dir) {
  for (const auto& [name, frame] : request_frames()) {
    Bytes input;
    fuzz::append_record(input, 0, frame);
    write_seed(dir, name, input);
  }
  Bytes responses;
  for (const wire::Frame& frame : harness_responses()) fuzz::append_record(responses, 0, frame);
  write_seed(dir, "responses", responses);
  // The same responses after the requests timed out: every one of them is stale.
  Bytes late;
  const std::uint8_t thirty_ms = 30u << fuzz::kTargetBitsShift;
  for (const wire::Frame& frame : harness_responses()) {
    fuzz::append_record(late, late.empty() ? thirty_ms : 0, frame);
  }
  write_seed(dir, "late-responses", late);
}

void switch_seeds(const fs::path& dir) {
  // Bit 7 of the first record turns learning on; bits 3-5 pick the ingress port.
  auto control = [](PortId port, bool bit7) {
    return static_cast<std::uint8_t>((port | (bit7 ? 0x10u : 0u)) << fuzz::kTargetBitsShift);
  };
  const auto requests = request_frames();
  Bytes learning;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    fuzz::append_record(learning, control(1, i == 0), requests[i].second);
  }
  const std::byte hello[] = {std::byte{'h'}, std::byte{'i'}};
  const wire::Frame echo = wire::make_echo_frame(kBroadcastMac, default_mac_for_gpu(3), hello);
  fuzz::append_record(learning, control(3, false), echo);
  write_seed(dir, "learning", learning);

  Bytes routed;
  for (const wire::Frame& frame : harness_responses()) {
    fuzz::append_record(routed, control(1, false), frame);
  }
  fuzz::append_record(routed, control(2, true), echo);
  write_seed(dir, "static-routes", routed);
}

void config_seeds(const fs::path& dir) {
  const auto text_seed = [&dir](const std::string& name, std::string_view text) {
    write_seed(dir, name, std::as_bytes(std::span(text.data(), text.size())));
  };
  text_seed("default.toml", default_topology_toml());
  text_seed("minimal.toml", "[fabric]\ngpus = 2\n");
  text_seed("gpu-overrides.toml",
            "[fabric]\ngpus = 4\ndefault_rights = \"rw\"\n\n"
            "[[gpu]]\nid = 3\nmac = \"02:e7:68:00:10:03\"\npartition = 1\nexport_rights = \"r\"\n\n"
            "[switch]\nlearning = false\negress_queue_bytes = 65536\n");
  text_seed("windows.toml",
            "[fabric]\ngpus = 2\nhbm_bytes = 1048576\n\n"
            "[[window]]\nname = \"peer\"\noffset = 0\nsize = 4096\ngpu = 1\nremote_base = 8192\n"
            "rights = \"rwa\"\n\n"
            "[[window]]\noffset = 4096\nsize = 4096\ngpu = 0\n\n"
            "[link]\nrate_gbps = 400.5\npropagation_ns = 5\n\n"
            "[sim]\nissue_ns = 1\ncompleter_ns = 2\nnic_latency_ns = 3\n");
}

// One packet of every RC opcode from the engine's encoder, with the fix-up bit set.
void roce_seeds(const fs::path& dir) {
  const roce::PacketAddress address{default_mac_for_gpu(1), default_mac_for_gpu(0), 0x0a000001,
                                    0x0a000002};
  for (unsigned code = 0; code <= static_cast<unsigned>(roce::Opcode::kFetchAdd); ++code) {
    const auto opcode = static_cast<roce::Opcode>(code);
    roce::PacketFields fields;
    fields.opcode = opcode;
    fields.dest_qp = 0x11;
    fields.psn = 0x123456;
    fields.rkey = 0xabcd;
    fields.dma_length = 64;
    fields.virtual_address = 0x1000;
    const Bytes payload(roce::layout_of(opcode).payload ? 61 : 0, std::byte{0x5a});
    Bytes seed{std::byte{1}};
    const roce::Frame frame = roce::encode_packet(address, fields, payload);
    seed.insert(seed.end(), frame.begin(), frame.end());
    write_seed(dir, std::string("opcode-") + roce::to_string(opcode), seed);
  }
}

// Link-level retry: frames stamped and carried, one lost (a NAK and a replay), one damaged,
// ACKs taken, time passing, a reset. Actions as in fuzz_link_retry.cpp.
void link_retry_seeds(const fs::path& dir) {
  const Bytes frame(64, std::byte{0x42});
  const Bytes none;
  const auto record = [](Bytes& input, std::uint8_t control, std::span<const std::byte> bytes) {
    fuzz::append_record(input, control, bytes);
  };
  Bytes clean;
  for (int i = 0; i < 5; ++i) record(clean, 0, frame);
  for (int i = 0; i < 5; ++i) record(clean, 1, none);
  record(clean, 2, none);
  record(clean, 3, none);
  write_seed(dir, "in-sequence", clean);
  Bytes faulty;
  for (int i = 0; i < 4; ++i) record(faulty, 0, frame);
  record(faulty, 1 | 0x08, none);   // lost
  record(faulty, 1 | 0x10, frame);  // damaged
  record(faulty, 1, none);
  record(faulty, 2, none);  // the NAK
  record(faulty, 3, none);
  for (int i = 0; i < 4; ++i) record(faulty, 4, none);
  for (int i = 0; i < 4; ++i) record(faulty, 1, none);
  record(faulty, 5, frame);  // time passes: the ACK delay
  record(faulty, 2, none);
  record(faulty, 3, none);
  record(faulty, 7, none);  // reset
  record(faulty, 0, frame);
  record(faulty, 1, none);
  write_seed(dir, "loss-damage-reset", faulty);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus directory>\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  frame_decode_seeds(root / "fuzz_frame_decode");
  endpoint_seeds(root / "fuzz_endpoint_rx");
  switch_seeds(root / "fuzz_switch_ingress");
  config_seeds(root / "fuzz_topology_config");
  roce_seeds(root / "fuzz_roce_decode");
  link_retry_seeds(root / "fuzz_link_retry");
  return 0;
}
