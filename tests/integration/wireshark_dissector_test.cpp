// The Wireshark dissector (fabric/tools/wireshark/ethx.lua) against frames the encoder made:
// every opcode, error responses, sequenced frames with ACK and credits, ACK and NAK control
// frames, a frame without its CRC (as `ethx sim` makes them), a corrupted frame and an echo
// frame go into a pcap file through PcapWriter (libpcap); tshark reads it with the dissector,
// and every field it prints must equal what wire::decode_frame reads from the same bytes.
// Needs tshark (fabric/tools/debian-packages.txt); skipped, with the reason, without it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "packet-engine/flow_control.hpp"
#include "packet-engine/link_retry.hpp"
#include "packet-engine/mac_addr.hpp"
#include "packet-engine/wire.hpp"
#include "switch/capture/pcap_writer.hpp"

namespace ethx {
namespace {

using wire::Opcode;
using wire::Status;

struct Scratch {
  std::filesystem::path dir;
  Scratch() {
    char pattern[] = "/tmp/ethx-dissector-XXXXXX";
    dir = ::mkdtemp(pattern);
  }
  ~Scratch() { std::filesystem::remove_all(dir); }
};

std::string lua_script() {
  return std::string(ETHX_SOURCE_DIR) + "/fabric/tools/wireshark/ethx.lua";
}

// Runs a shell command and returns what it printed on stdout (stderr is kept apart).
std::string run(const std::string& command, int& status) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  status = ::pclose(pipe);
  return out;
}

bool have_tshark() {
  int status = 0;
  run("tshark -v > /dev/null 2>&1", status);
  return status == 0;
}

wire::FrameAddress address(GpuId src, GpuId dst, std::uint16_t partition) {
  return wire::FrameAddress{
      default_mac_for_gpu(dst), default_mac_for_gpu(src), src, dst, partition, 0x5eed0001};
}

std::vector<std::byte> bytes(std::size_t count, std::uint8_t first) {
  std::vector<std::byte> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<std::byte>(first + i);
  return out;
}

void append(wire::FrameBuilder& builder, Opcode opcode, std::uint16_t tag, std::uint16_t length,
            std::uint64_t address, std::size_t payload_bytes, Status status = Status::kOk) {
  auto payload =
      builder.append(wire::TxnFields{opcode, status, tag, length, address}, payload_bytes);
  const auto filler = bytes(payload.size(), 0xA0);
  std::copy(filler.begin(), filler.end(), payload.begin());
}

// The frames of the test: every opcode once at least, in four frames, then link-layer frames.
std::vector<wire::Frame> make_frames() {
  std::vector<wire::Frame> frames;
  wire::FrameBuilder builder(wire::kDefaultFrameBytesMax);
  builder.start(address(0, 1, 2));
  append(builder, Opcode::kReadReq, 0x1003, 256, 0x1000, 0);
  append(builder, Opcode::kWriteReq, 0x2004, 64, 0x2000, 64);
  append(builder, Opcode::kWritePosted, 0, 32, 0x3000, 32);
  frames.push_back(builder.finish());
  builder.start(address(0, 1, 2));
  append(builder, Opcode::kAtomicFetchAdd, 0x3005, 8, 0x40, 8);
  append(builder, Opcode::kAtomicSwap, 0x4006, 4, 0x44, 4);
  append(builder, Opcode::kAtomicCas, 0x5007, 8, 0x48, 16);
  append(builder, Opcode::kFlushReq, 0x0FFF, 0, 0, 0);  // a liveness probe's tag
  frames.push_back(builder.finish(wire::kFlagSeq | wire::kFlagAck | wire::kFlagCredit, 7, 3, 64));
  builder.start(address(1, 0, 2));
  append(builder, Opcode::kReadResp, 0x1003, 256, 0x1000, 256);
  append(builder, Opcode::kWriteAck, 0x2004, 64, 0x2000, 0);
  append(builder, Opcode::kAtomicResp, 0x3005, 8, 0x40, 8);
  append(builder, Opcode::kFlushResp, 0x0FFF, 0, 0, 0);
  append(builder, Opcode::kErrorResp, 0x4006, 4, 0x44, 0, Status::kNoRights);
  frames.push_back(builder.finish());
  builder.start(address(1, 0, 2));  // an ACK control frame, then a NAK
  frames.push_back(builder.finish(wire::kFlagAck | wire::kFlagCredit, 0, 9, 32));
  builder.start(address(1, 0, 2));
  frames.push_back(builder.finish(wire::kFlagAck | wire::kFlagNak, 0, 4, 0));
  wire::FrameBuilder no_crc(wire::kDefaultFrameBytesMax, wire::Crc::kOff);
  no_crc.start(address(3, 2, 0));
  append(no_crc, Opcode::kWriteReq, 0x1001, 1728, 0x10000, 1728);
  frames.push_back(no_crc.finish());
  return frames;
}

// One line per frame: kind, header fields and each transaction's, as tshark prints them.
const char* const kFields[] = {"ethx.kind",        "ethx.src_gpu",
                               "ethx.dst_gpu",     "ethx.partition",
                               "ethx.flags",       "ethx.seq",
                               "ethx.ack",         "ethx.credits",
                               "ethx.txn_count",   "ethx.txn.opcode",
                               "ethx.txn.status",  "ethx.txn.tag",
                               "ethx.txn.length",  "ethx.txn.payload_bytes",
                               "ethx.txn.address", "ethx.crc.status"};

// Values as decimal text, whatever base tshark printed them in ("0x04" and "4" are both "4");
// words (kind, CRC status) unchanged. A field with one value per transaction is a list.
std::string canonical(const std::string& value) {
  std::string out;
  std::stringstream items(value);
  for (std::string item; std::getline(items, item, ',');) {
    const bool number = !item.empty() && std::isdigit(static_cast<unsigned char>(item[0])) != 0;
    out +=
        (out.empty() ? "" : ",") + (number ? std::to_string(std::stoull(item, nullptr, 0)) : item);
  }
  return out;
}

std::string canonical_line(const std::string& line) {
  std::string out;
  std::stringstream fields(line);
  for (std::string field; std::getline(fields, field, '|');) {
    out += (out.empty() ? "" : "|") + canonical(field);
  }
  return out;
}

using TxnField = std::uint64_t (*)(const wire::TxnView&);

std::string join_txns(const wire::FrameView& view, TxnField field) {
  std::string out;
  wire::TxnCursor cursor(view);
  wire::TxnView txn;
  while (cursor.next(txn)) out += (out.empty() ? "" : ",") + std::to_string(field(txn));
  return out;
}

// What tshark should print for `frame`, from the C++ decoder, in canonical form.
std::string expected_line(const wire::Frame& frame, const std::string& crc_status) {
  wire::FrameView view;
  EXPECT_EQ(wire::decode_frame(frame, view, wire::Crc::kOff), wire::DecodeError::kOk);
  const bool nak = (view.flags & wire::kFlagNak) != 0;
  const std::vector<std::string> values = {
      view.txn_count == 0 ? (nak ? "nak" : "ack") : "transactions",
      std::to_string(view.src_gpu),
      std::to_string(view.dst_gpu),
      std::to_string(view.partition),
      std::to_string(view.flags),
      std::to_string(view.seq),
      std::to_string(view.ack),
      std::to_string(view.credits),
      std::to_string(view.txn_count),
      join_txns(view,
                [](const wire::TxnView& t) {
                  return std::uint64_t{static_cast<std::uint8_t>(t.opcode)};
                }),
      join_txns(view,
                [](const wire::TxnView& t) {
                  return std::uint64_t{static_cast<std::uint8_t>(t.status)};
                }),
      join_txns(view, [](const wire::TxnView& t) { return std::uint64_t{t.tag}; }),
      join_txns(view, [](const wire::TxnView& t) { return std::uint64_t{t.length}; }),
      join_txns(view, [](const wire::TxnView& t) { return std::uint64_t{t.payload.size()}; }),
      join_txns(view, [](const wire::TxnView& t) { return t.address; }),
      crc_status};
  std::string line;
  for (const std::string& value : values) line += (line.empty() ? "" : "|") + value;
  return line;
}

std::string tshark_fields(const std::string& pcap, int& status) {
  std::string command = "tshark -X lua_script:" + lua_script() + " -r " + pcap +
                        " -T fields -E separator='|' -E occurrence=a -E aggregator=,";
  for (const char* field : kFields) command += std::string(" -e ") + field;
  return run(command + " 2>/dev/null", status);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class WiresharkDissector : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_tshark()) GTEST_SKIP() << "needs tshark: apt-get install tshark";
  }
  Scratch scratch_;
  std::string pcap_ = (scratch_.dir / "frames.pcap").string();
};

TEST_F(WiresharkDissector, EveryFieldTsharkPrintsIsWhatTheDecoderReads) {
  const std::vector<wire::Frame> frames = make_frames();
  {
    PcapWriter writer(pcap_);
    TimeNs at_ns = 1'700'000'000'000'000'000;
    for (const wire::Frame& frame : frames) writer.write(frame, at_ns += 1000);
    EXPECT_EQ(writer.frames_written(), frames.size());
  }
  int status = -1;
  const std::vector<std::string> lines = lines_of(tshark_fields(pcap_, status));
  ASSERT_EQ(status, 0) << "tshark failed";
  ASSERT_EQ(lines.size(), frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const bool without_crc = i + 1 == frames.size();  // made as ethx sim makes them
    EXPECT_EQ(canonical_line(lines[i]), expected_line(frames[i], without_crc ? "absent" : "good"))
        << "frame " << i + 1;
  }
}

TEST_F(WiresharkDissector, ShowsOpcodeNamesAndFlagsACorruptedFrameAndAnEchoFrame) {
  std::vector<wire::Frame> frames = make_frames();
  wire::Frame corrupted = frames[0];
  corrupted[60] ^= std::byte{0x10};  // inside the first transaction's header
  {
    PcapWriter writer(pcap_);
    writer.write(frames[2], 1);
    writer.write(corrupted, 2);
    writer.write(
        wire::make_echo_frame(default_mac_for_gpu(1), default_mac_for_gpu(0), bytes(46, 0)), 3);
  }
  int status = -1;
  const std::string verbose =
      run("tshark -X lua_script:" + lua_script() + " -r " + pcap_ + " -V 2>/dev/null", status);
  ASSERT_EQ(status, 0);
  for (const char* text :
       {"read-resp", "write-ack", "atomic-resp", "flush-resp", "error-resp", "no-rights",
        "Tag slot: 4095", "CRC status: bad", "Expert Info (Error/Checksum): CRC-32C does not match",
        "ethx echo (benchmark baseline)"}) {
    EXPECT_NE(verbose.find(text), std::string::npos) << "missing: " << text;
  }
  const std::string summary = run("tshark -X lua_script:" + lua_script() + " -r " + pcap_ +
                                      " -T fields -e _ws.col.Info 2>/dev/null",
                                  status);
  EXPECT_NE(summary.find("GPU 1 -> 0 read-resp,write-ack,atomic-resp,flush-resp,"
                         "error-resp(no-rights)"),
            std::string::npos)
      << summary;
}

TEST_F(WiresharkDissector, ShowsTheLinkRetryTrailerAndItsControlFramesAndChecksTheLinkFcs) {
  // A hop's two ends, as docs/link-layer.md describes them: two data frames stamped by one,
  // the other's ACK for them, then a NAK after a gap, then a data frame damaged on the wire.
  LinkRetry sender({}, wire::Crc::kOn);
  LinkRetry receiver({}, wire::Crc::kOn);
  std::vector<wire::Frame> frames = make_frames();
  frames.resize(2);
  for (wire::Frame& frame : frames) {
    sender.stamp(frame, 0);
    std::size_t payload_bytes = 0;
    ASSERT_EQ(receiver.receive(frame, 0, payload_bytes), LinkRetry::Verdict::kDeliver);
  }
  receiver.on_time(LinkRetryConfig{}.ack_delay_ns);
  wire::Frame ack;
  ASSERT_TRUE(receiver.take_control(ack, default_mac_for_gpu(1)));
  frames.push_back(ack);
  wire::Frame skipped = make_frames()[2];
  sender.stamp(skipped, 0);  // lost: the receiver sees the next one as a gap
  wire::Frame after_gap = make_frames()[2];
  sender.stamp(after_gap, 0);
  std::size_t payload_bytes = 0;
  ASSERT_EQ(receiver.receive(after_gap, 0, payload_bytes), LinkRetry::Verdict::kDrop);
  wire::Frame nak;
  ASSERT_TRUE(receiver.take_control(nak, default_mac_for_gpu(1)));
  frames.push_back(nak);
  after_gap[20] ^= std::byte{0x01};
  frames.push_back(after_gap);
  {
    PcapWriter writer(pcap_);
    TimeNs at_ns = 1;
    for (const wire::Frame& frame : frames) writer.write(frame, at_ns++);
  }
  int status = -1;
  const std::string out =
      run("tshark -X lua_script:" + lua_script() + " -r " + pcap_ +
              " -T fields -E separator='|' -e ethx_llr.kind -e ethx_llr.seq -e ethx_llr.epoch"
              " -e ethx_llr.fcs.status -e ethx.txn_count -e _ws.col.Info 2>/dev/null",
          status);
  ASSERT_EQ(status, 0);
  const std::vector<std::string> lines = lines_of(out);
  ASSERT_EQ(lines.size(), 5u) << out;
  EXPECT_EQ(lines[0].substr(0, lines[0].rfind('|')), "1|0|0|good|3");
  EXPECT_EQ(lines[1].substr(0, lines[1].rfind('|')), "1|1|0|good|4");
  EXPECT_EQ(lines[2].substr(0, lines[2].rfind('|')), "2|2|0|good|");
  EXPECT_EQ(lines[3].substr(0, lines[3].rfind('|')), "3|2|0|good|");
  EXPECT_EQ(lines[4].substr(0, lines[4].rfind('|')), "1|3|0|bad|5");
  EXPECT_NE(lines[0].find("[LLR seq 0]"), std::string::npos) << lines[0];
  EXPECT_NE(lines[2].find("LLR ACK 2"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("LLR NAK 2"), std::string::npos) << lines[3];
}

TEST_F(WiresharkDissector, ShowsLinkTrainingFramesWithTheirNonce) {
  // A node that starts (LlrNodePort) trains its hop: its TRAIN, the switch port's answer.
  LinkRetry node({}, wire::Crc::kOn);
  LinkRetry port({}, wire::Crc::kOn);
  node.start_training(123456, 0);
  node.on_time(0);
  std::vector<wire::Frame> frames(2);
  ASSERT_TRUE(node.take_control(frames[0], default_mac_for_gpu(1)));
  std::size_t payload_bytes = 0;
  ASSERT_EQ(port.receive(frames[0], 0, payload_bytes), LinkRetry::Verdict::kConsumed);
  ASSERT_TRUE(port.take_control(frames[1], default_mac_for_gpu(2)));
  {
    PcapWriter writer(pcap_);
    TimeNs at_ns = 1;
    for (const wire::Frame& frame : frames) writer.write(frame, at_ns++);
  }
  int status = -1;
  const std::string out = run("tshark -X lua_script:" + lua_script() + " -r " + pcap_ +
                                  " -T fields -E separator='|' -e ethx_llr.kind -e ethx_llr.seq"
                                  " -e ethx_llr.fcs.status -e _ws.col.Info 2>/dev/null",
                              status);
  ASSERT_EQ(status, 0);
  const std::vector<std::string> lines = lines_of(out);
  ASSERT_EQ(lines.size(), 2u) << out;
  EXPECT_EQ(lines[0].substr(0, lines[0].rfind('|')), "4|123456|good");
  EXPECT_EQ(lines[1].substr(0, lines[1].rfind('|')), "5|123456|good");
  EXPECT_NE(lines[0].find("LLR TRAIN 123456"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("LLR TRAIN-ACK 123456"), std::string::npos) << lines[1];
}

TEST_F(WiresharkDissector, PfcFramesAreStandardMacControlFramesTsharkDecodesWithoutThePlugIn) {
  // What a PFC receiver sends (packet-engine/flow_control.hpp): XOFF for the requests class
  // when its buffer reaches xoff, XON once it drains to xon. tshark's own MAC control dissector
  // must read the class-enable vector and the pause times (no ethx plug-in loaded).
  FlowControlConfig config;
  config.mode = FlowControlMode::kPfc;
  FlowReceiver receiver(config, PfcThresholds{.xoff_bytes = 8192, .xon_bytes = 4096}, 800.0);
  std::vector<wire::Frame> frames(2);
  receiver.on_arrival(TrafficClass::kRequests, 8192, 0);
  ASSERT_TRUE(receiver.take_control(frames[0], default_mac_for_gpu(1), 0));
  receiver.on_departure(TrafficClass::kRequests, 8192);
  ASSERT_TRUE(receiver.take_control(frames[1], default_mac_for_gpu(1), 10));
  {
    PcapWriter writer(pcap_);
    TimeNs at_ns = 1;
    for (const wire::Frame& frame : frames) writer.write(frame, at_ns++);
  }
  int status = -1;
  const std::string out = run("tshark -r " + pcap_ +
                                  " -T fields -E separator='|' -e eth.type -e macc.opcode"
                                  " -e macc.cbfc.enbv -e macc.cbfc.pause_time.c0"
                                  " -e macc.cbfc.pause_time.c1 2>/dev/null",
                              status);
  ASSERT_EQ(status, 0);
  const std::vector<std::string> lines = lines_of(out);
  ASSERT_EQ(lines.size(), 2u) << out;
  EXPECT_EQ(lines[0], "0x8808|0x0101|0x0001|65535|0") << "XOFF, requests only";
  EXPECT_EQ(lines[1], "0x8808|0x0101|0x0001|0|0") << "XON, requests only";
}

TEST_F(WiresharkDissector, ShowsACreditUpdatesRunningTotalsPerClass) {
  FlowControlConfig config;
  config.mode = FlowControlMode::kCbfc;
  config.credit_update_bytes = 1024;
  FlowReceiver receiver(config, std::nullopt, 800.0);
  receiver.on_arrival(TrafficClass::kRequests, 3000, 0);
  receiver.on_arrival(TrafficClass::kResponses, 700, 0);
  receiver.on_departure(TrafficClass::kRequests, 3000);
  receiver.on_departure(TrafficClass::kResponses, 700);
  wire::Frame update;
  ASSERT_TRUE(receiver.take_control(update, default_mac_for_gpu(1), 0));
  {
    PcapWriter writer(pcap_);
    writer.write(update, 1);
  }
  int status = -1;
  const std::string out = run("tshark -X lua_script:" + lua_script() + " -r " + pcap_ +
                                  " -T fields -E separator='|' -e ethx_credit.freed_requests"
                                  " -e ethx_credit.freed_responses -e _ws.col.Info 2>/dev/null",
                              status);
  ASSERT_EQ(status, 0);
  EXPECT_EQ(out, "3000|700|credit update: freed requests 3000, responses 700\n");
}

TEST(PcapWriter, ACaptureFileThatCannotBeMadeNamesItsPath) {
  try {
    PcapWriter writer("/nonexistent-ethx-dir/x.pcap");
    FAIL() << "no error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent-ethx-dir/x.pcap"), std::string::npos);
  }
}

}  // namespace
}  // namespace ethx
