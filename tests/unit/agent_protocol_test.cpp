// The host <-> guest agent protocol (qemu-device/agent-protocol/agent_protocol.hpp): the bytes
// docs/agent-protocol.md documents, round trips, and the decoder against malformed, short,
// oversized and random input (counted and skipped, never a crash or a throw).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "qemu-device/agent-protocol/agent_protocol.hpp"

namespace ethx::agent {
namespace {

using Bytes = std::vector<std::uint8_t>;

// Little-endian fields written by hand from the table in docs/agent-protocol.md.
void put(Bytes& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}
void put_string(Bytes& out, const std::string& text) {
  out.insert(out.end(), text.begin(), text.end());
  out.push_back(0);
}
Bytes header(std::uint16_t type, std::uint32_t payload_bytes) {
  Bytes out = {'E', 'T', 'X', 'A'};
  put(out, type, 2);
  put(out, 0, 2);
  put(out, payload_bytes, 4);
  return out;
}

std::vector<Frame> decode_all(FrameDecoder& decoder) {
  std::vector<Frame> frames;
  while (std::optional<Frame> frame = decoder.next()) frames.push_back(*frame);
  return frames;
}

StartRequest sample_start() {
  StartRequest request;
  request.working_directory = "/work/x";
  request.argv = {"./prog", "-n", "3"};
  request.environment = {"A=1", "ETHX_GPU_ID=2"};
  request.forward_stdin = true;
  request.gpu_id = 2;
  return request;
}

TEST(AgentProtocol, StartMatchesTheDocumentedByteOffsets) {
  Bytes encoded;
  append_start(encoded, sample_start());
  Bytes expected;
  put(expected, kStartForwardStdin, 4);  // payload 0: flags
  put(expected, 2, 4);                   // 4: gpu_id
  put(expected, 3, 2);                   // 8: argc
  put(expected, 2, 2);                   // 10: env_count
  put(expected, 0, 4);                   // 12: reserved
  for (const char* text : {"/work/x", "./prog", "-n", "3", "A=1", "ETHX_GPU_ID=2"}) {
    put_string(expected, text);
  }
  Bytes frame = header(3, static_cast<std::uint32_t>(expected.size()));
  frame.insert(frame.end(), expected.begin(), expected.end());
  EXPECT_EQ(encoded, frame);
}

TEST(AgentProtocol, FixedBodiesMatchTheDocumentedByteOffsets) {
  Bytes hello;
  append_body_frame(hello, MessageType::kHello,
                    HelloBody{0x1122334455667788ull, kVersion, 0, kMaxPayloadBytes});
  Bytes expected = header(1, 16);
  put(expected, 0x1122334455667788ull, 8);
  put(expected, kVersion, 2);
  put(expected, 0, 2);
  put(expected, 65536, 4);
  EXPECT_EQ(hello, expected);

  Bytes exit;
  append_body_frame(exit, MessageType::kExit, ExitBody{137, 9});
  expected = header(10, 8);
  put(expected, 137, 4);
  put(expected, 9, 4);
  EXPECT_EQ(exit, expected);

  Bytes error;
  append_error(error, ErrorCode::kNotFound, "no");
  expected = header(11, 6);
  put(expected, 4, 2);
  put(expected, 0, 2);
  expected.push_back('n');
  expected.push_back('o');
  EXPECT_EQ(error, expected);
  // A HelloReply begins with the 20 bytes a host looks for.
  Bytes reply;
  append_body_frame(reply, MessageType::kHelloReply, HelloReplyBody{42, kVersion, 1, 7});
  const Bytes prefix = hello_reply_prefix(42);
  ASSERT_EQ(prefix.size(), 20u);
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), reply.begin()));
}

TEST(AgentProtocol, StartRoundTripsByteByByte) {
  Bytes encoded;
  append_start(encoded, sample_start());
  append_data_frames(encoded, MessageType::kStdin, "hello", 5);
  append_frame(encoded, MessageType::kStdinEof, {});
  FrameDecoder decoder;
  std::vector<Frame> frames;
  for (const std::uint8_t byte : encoded) {  // the worst split a stream can deliver
    decoder.feed(&byte, 1);
    for (Frame& frame : decode_all(decoder)) frames.push_back(frame);
  }
  ASSERT_EQ(frames.size(), 3u);
  const StartRequest parsed = parse_start(frames[0]);
  EXPECT_EQ(parsed.working_directory, "/work/x");
  EXPECT_EQ(parsed.argv, sample_start().argv);
  EXPECT_EQ(parsed.environment, sample_start().environment);
  EXPECT_TRUE(parsed.forward_stdin);
  EXPECT_EQ(parsed.gpu_id, 2u);
  EXPECT_EQ(std::string(frames[1].payload.begin(), frames[1].payload.end()), "hello");
  EXPECT_EQ(frames[2].type, MessageType::kStdinEof);
  EXPECT_EQ(decoder.rejected_frames(), 0u);
}

TEST(AgentProtocol, LargeOutputIsSplitIntoFramesOfAtMostTheLimit) {
  const std::string data(kMaxPayloadBytes + 10, 'x');
  Bytes encoded;
  append_data_frames(encoded, MessageType::kStdout, data.data(), data.size());
  FrameDecoder decoder;
  decoder.feed(encoded);
  const std::vector<Frame> frames = decode_all(decoder);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].payload.size(), kMaxPayloadBytes);
  EXPECT_EQ(frames[1].payload.size(), 10u);
  EXPECT_THROW(append_frame(encoded, MessageType::kStdout, Bytes(kMaxPayloadBytes + 1)),
               ProtocolError);
}

TEST(AgentProtocol, JunkBeforeAFrameIsSkippedAndCounted) {
  Bytes stream = {1, 2, 3, 'E', 'T', 9};
  append_frame(stream, MessageType::kStdinEof, {});
  FrameDecoder decoder;
  decoder.feed(stream);
  const std::vector<Frame> frames = decode_all(decoder);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].type, MessageType::kStdinEof);
  EXPECT_EQ(decoder.skipped_bytes(), 6u);
  EXPECT_GE(decoder.rejected_frames(), 1u);
}

TEST(AgentProtocol, OversizedUnknownAndReservedFramesAreRejectedThenDecodingGoesOn) {
  Bytes stream = header(8, kMaxPayloadBytes + 1);  // oversized: no payload follows
  Bytes unknown = header(99, 3);                   // unknown type: skipped whole
  unknown.insert(unknown.end(), {'a', 'b', 'c'});
  Bytes reserved = header(8, 0);
  reserved[6] = 1;  // reserved field not 0
  stream.insert(stream.end(), unknown.begin(), unknown.end());
  stream.insert(stream.end(), reserved.begin(), reserved.end());
  append_data_frames(stream, MessageType::kStdout, "ok", 2);
  FrameDecoder decoder;
  decoder.feed(stream);
  const std::vector<Frame> frames = decode_all(decoder);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(std::string(frames[0].payload.begin(), frames[0].payload.end()), "ok");
  EXPECT_GE(decoder.rejected_frames(), 3u);
  EXPECT_FALSE(decoder.last_error().empty());
}

TEST(AgentProtocol, AShortFrameWaitsForTheRest) {
  Bytes encoded;
  append_body_frame(encoded, MessageType::kExit, ExitBody{3, 0});
  FrameDecoder decoder;
  decoder.feed(encoded.data(), encoded.size() - 1);
  EXPECT_FALSE(decoder.next());
  EXPECT_EQ(decoder.rejected_frames(), 0u);
  decoder.feed(&encoded.back(), 1);
  const std::optional<Frame> frame = decoder.next();
  ASSERT_TRUE(frame);
  EXPECT_EQ(read_body<ExitBody>(*frame).exit_status, 3u);
}

TEST(AgentProtocol, HostFindsItsHelloReplyBehindACutOffFrame) {
  // A previous host's output frame, cut short, then the reply to this host's Hello.
  Bytes stream;
  append_data_frames(stream, MessageType::kStdout, "0123456789", 10);
  stream.resize(stream.size() - 4);
  append_body_frame(stream, MessageType::kHelloReply, HelloReplyBody{77, kVersion, 0, 1});
  FrameDecoder decoder;
  decoder.feed(stream);
  ASSERT_TRUE(decoder.skip_to(hello_reply_prefix(77)));
  const std::optional<Frame> frame = decoder.next();
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->type, MessageType::kHelloReply);
  EXPECT_EQ(read_body<HelloReplyBody>(*frame).nonce, 77u);
  FrameDecoder other;
  other.feed(stream);
  EXPECT_FALSE(other.skip_to(hello_reply_prefix(78)));  // another host's nonce
}

StartRequest parse_payload(const Bytes& payload) {
  Frame frame;
  frame.type = MessageType::kStart;
  frame.payload = payload;
  return parse_start(frame);
}

TEST(AgentProtocol, MalformedStartPayloadsNameTheField) {
  Bytes body;
  put(body, 0, 4);
  put(body, kNoGpu, 4);
  put(body, 1, 2);  // argc 1
  put(body, 0, 2);
  put(body, 0, 4);
  auto message = [](const Bytes& payload) {
    try {
      parse_payload(payload);
    } catch (const ProtocolError& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message(Bytes(body.begin(), body.begin() + 10)).find("shorter"), std::string::npos);
  Bytes missing = body;
  put_string(missing, "");  // the working directory, then no argv[0]
  EXPECT_NE(message(missing).find("2 strings expected"), std::string::npos);
  Bytes empty_program = missing;
  put_string(empty_program, "");
  EXPECT_NE(message(empty_program).find("argv[0] is empty"), std::string::npos);
  Bytes trailing = missing;
  put_string(trailing, "ls");
  trailing.push_back('x');
  EXPECT_NE(message(trailing).find("after the last string"), std::string::npos);
  Bytes relative = body;
  put_string(relative, "work");
  put_string(relative, "ls");
  EXPECT_NE(message(relative).find("not absolute"), std::string::npos);
  Bytes flags = body;
  flags[0] = 0x80;
  put_string(flags, "");
  put_string(flags, "ls");
  EXPECT_NE(message(flags).find("flags"), std::string::npos);
  Bytes good = body;
  put_string(good, "");
  put_string(good, "ls");
  EXPECT_EQ(message(good), "accepted");
}

TEST(AgentProtocol, EnvironmentEntriesMustBeNameEqualsValue) {
  EXPECT_TRUE(valid_environment_entry("A=1"));
  EXPECT_TRUE(valid_environment_entry("_x9="));
  EXPECT_FALSE(valid_environment_entry("=1"));
  EXPECT_FALSE(valid_environment_entry("A"));
  EXPECT_FALSE(valid_environment_entry("9A=1"));
  EXPECT_FALSE(valid_environment_entry("A-B=1"));
  StartRequest request = sample_start();
  request.environment = {"NOVALUE"};
  Bytes out;
  EXPECT_THROW(append_start(out, request), ProtocolError);
  request.environment.clear();
  request.argv = {};
  EXPECT_THROW(append_start(out, request), ProtocolError);
  request.argv = {std::string("a\0b", 3)};
  EXPECT_THROW(append_start(out, request), ProtocolError);
  EXPECT_TRUE(out.empty());
}

TEST(AgentProtocol, FixedBodiesOfTheWrongSizeAndBadErrorsThrow) {
  Frame frame;
  frame.type = MessageType::kStop;
  frame.payload = Bytes(7);
  EXPECT_THROW(read_body<StopBody>(frame), ProtocolError);
  frame.type = MessageType::kError;
  frame.payload = Bytes(3);
  EXPECT_THROW(parse_error(frame), ProtocolError);
  frame.payload = Bytes(4 + kMaxErrorTextBytes + 1);
  EXPECT_THROW(parse_error(frame), ProtocolError);
}

TEST(AgentProtocol, RandomBytesNeverCrashTheDecoder) {
  std::mt19937 random(1234);
  Bytes valid;
  append_start(valid, sample_start());
  FrameDecoder decoder;
  std::uint64_t decoded = 0;
  for (int round = 0; round < 2000; ++round) {
    Bytes chunk(random() % 64);
    for (std::uint8_t& byte : chunk) byte = static_cast<std::uint8_t>(random());
    if (round % 10 == 0) chunk.insert(chunk.end(), {'E', 'T', 'X', 'A'});  // decoys
    if (round % 7 == 0) chunk.insert(chunk.end(), valid.begin(), valid.end());
    decoder.feed(chunk);
    while (std::optional<Frame> frame = decoder.next()) {
      ++decoded;
      try {
        if (frame->type == MessageType::kStart) parse_start(*frame);
      } catch (const ProtocolError&) {
      }
    }
  }
  EXPECT_GT(decoded, 0u);
  EXPECT_GT(decoder.skipped_bytes(), 0u);
  EXPECT_LE(decoder.buffered_bytes(), kHeaderBytes + kMaxPayloadBytes);
}

}  // namespace
}  // namespace ethx::agent
