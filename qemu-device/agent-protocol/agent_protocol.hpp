// The host <-> guest command protocol of ethx-agent (docs/agent-protocol.md): typed frames on
// one virtio-serial port per command. The host side (fabric/vm/agent_client.hpp) and the agent
// in the guest (qemu-device/guest-tools/agent_server.hpp) both include this header and nothing
// else defines the bytes. Sans-I/O: encoders return bytes, FrameDecoder takes bytes; no
// sockets, threads or clocks here.
//
// A frame is a 12-byte header and a payload of at most kMaxPayloadBytes:
//   magic "ETXA" | type (u16) | reserved (u16, 0) | payload_bytes (u32)
// Every field is little-endian (both ends are x86-64 Linux; the static_assert below keeps it
// so). The decoder counts and skips malformed frames (bad magic, unknown type, oversized) and
// finds the next magic; it never throws. Payload parsers throw ProtocolError naming the field.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace ethx::agent {

static_assert(std::endian::native == std::endian::little,
              "the agent protocol copies little-endian structs as they are");

inline constexpr std::uint32_t kMagic = 0x41585445;  // the bytes 'E' 'T' 'X' 'A'
inline constexpr std::uint16_t kVersion = 1;
inline constexpr std::uint32_t kMaxPayloadBytes = 64 * 1024;
// The port names the agent serves: QEMU `-device virtserialport,name=org.ethx.agent.<N>`.
inline constexpr const char* kPortNamePrefix = "org.ethx.agent.";
// Exit statuses of a command that did not start, as a shell reports them.
inline constexpr std::uint32_t kExitNotFound = 127;
inline constexpr std::uint32_t kExitCannotRun = 126;
// Start: no GPU asked for (gpu_id), so no ETHX_GPU_BDF.
inline constexpr std::uint32_t kNoGpu = 0xffffffff;

enum class MessageType : std::uint16_t {
  kHello = 1,       // host -> guest, first on every connection
  kHelloReply = 2,  // guest -> host
  kStart = 3,       // host -> guest: the command
  kStdin = 4,       // host -> guest: bytes for the command's stdin
  kStdinEof = 5,    // host -> guest: close the command's stdin
  kStop = 6,        // host -> guest: SIGTERM now, SIGKILL after grace_ms
  kStarted = 7,     // guest -> host: exec succeeded
  kStdout = 8,      // guest -> host: bytes the command wrote to stdout
  kStderr = 9,      // guest -> host: ... to stderr
  kExit = 10,       // guest -> host: the command ended (always the last frame of a command)
  kError = 11,      // guest -> host: the request could not be served (an Exit follows if a
                    // Start failed)
};
inline constexpr std::uint16_t kLastMessageType = 11;

enum class ErrorCode : std::uint16_t {
  kBadRequest = 1,       // a frame or payload the agent could not parse
  kVersionMismatch = 2,  // Hello with another protocol version
  kBusy = 3,             // Start while this port runs a command
  kNotFound = 4,         // the program is not in the guest (exit status 127)
  kCannotRun = 5,        // found but exec failed, or the working directory (exit status 126)
  kNoSuchGpu = 6,        // gpu_id is not a GPU of this VM (exit status 126)
  kHelloFirst = 7,       // a request before Hello
};

// Hello/HelloReply flags.
inline constexpr std::uint16_t kHelloSharedRoot = 1;  // the guest has /run/ethx-host
// Where a guest with the shared root (docs/guest-image.md) keeps the host's root, read-write.
inline constexpr const char* kGuestHostRoot = "/run/ethx-host";
// Start flags.
inline constexpr std::uint32_t kStartForwardStdin = 1;  // else stdin is /dev/null

struct [[gnu::packed]] FrameHeader {
  std::uint32_t magic;
  std::uint16_t type;
  std::uint16_t reserved;
  std::uint32_t payload_bytes;
};
static_assert(sizeof(FrameHeader) == 12);
inline constexpr std::size_t kHeaderBytes = sizeof(FrameHeader);

struct [[gnu::packed]] HelloBody {
  std::uint64_t nonce;  // chosen by the host; the reply echoes it
  std::uint16_t version;
  std::uint16_t flags;
  std::uint32_t max_payload_bytes;
};
static_assert(sizeof(HelloBody) == 16);

// The nonce comes first so that a host can find its reply by the 20 bytes it knows (header +
// nonce) even behind a cut-off frame from an earlier connection.
struct [[gnu::packed]] HelloReplyBody {
  std::uint64_t nonce;
  std::uint16_t version;
  std::uint16_t flags;  // kHelloSharedRoot
  std::uint32_t agent_pid;
};
static_assert(sizeof(HelloReplyBody) == 16);

// Followed by 1 + argc + env_count NUL-terminated strings: the working directory (empty: /),
// argv[0..argc), then NAME=VALUE environment additions. Nothing after the last NUL.
struct [[gnu::packed]] StartBody {
  std::uint32_t flags;   // kStartForwardStdin
  std::uint32_t gpu_id;  // kNoGpu, or a fabric GPU id: the agent sets ETHX_GPU_BDF to its BDF
  std::uint16_t argc;
  std::uint16_t env_count;
  std::uint32_t reserved;
};
static_assert(sizeof(StartBody) == 16);

struct [[gnu::packed]] StopBody {
  std::uint32_t grace_ms;  // SIGTERM now, SIGKILL to the process group after this
  std::uint32_t reserved;
};
static_assert(sizeof(StopBody) == 8);

struct [[gnu::packed]] StartedBody {
  std::uint32_t pid;  // in the guest
  std::uint32_t reserved;
};
static_assert(sizeof(StartedBody) == 8);

struct [[gnu::packed]] ExitBody {
  std::uint32_t exit_status;  // 0-255: the exit code, or 128 + signal
  std::uint32_t signal;       // the signal that ended it, 0 if it exited
};
static_assert(sizeof(ExitBody) == 8);

// Followed by a one-line message (UTF-8, no NUL), at most kMaxErrorTextBytes.
struct [[gnu::packed]] ErrorBody {
  std::uint16_t code;  // ErrorCode
  std::uint16_t reserved;
};
static_assert(sizeof(ErrorBody) == 4);
inline constexpr std::size_t kMaxErrorTextBytes = 1024;

struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Frame {
  MessageType type = MessageType::kHello;
  std::vector<std::uint8_t> payload;
};

inline const char* message_name(MessageType type) {
  static constexpr const char* kNames[] = {"?",      "Hello",    "HelloReply", "Start",
                                           "Stdin",  "StdinEof", "Stop",       "Started",
                                           "Stdout", "Stderr",   "Exit",       "Error"};
  const auto index = static_cast<std::uint16_t>(type);
  return index <= kLastMessageType ? kNames[index] : "?";
}

// --- encoding ---

inline void append_frame(std::vector<std::uint8_t>& out, MessageType type,
                         std::span<const std::uint8_t> payload) {
  if (payload.size() > kMaxPayloadBytes) {
    throw ProtocolError(std::string(message_name(type)) + ": payload of " +
                        std::to_string(payload.size()) + " bytes exceeds " +
                        std::to_string(kMaxPayloadBytes));
  }
  const FrameHeader header{kMagic, static_cast<std::uint16_t>(type), 0,
                           static_cast<std::uint32_t>(payload.size())};
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(&header);
  out.insert(out.end(), bytes, bytes + sizeof header);
  out.insert(out.end(), payload.begin(), payload.end());
}

template <class Body>
std::span<const std::uint8_t> bytes_of(const Body& body) {
  return {reinterpret_cast<const std::uint8_t*>(&body), sizeof body};
}

template <class Body>
void append_body_frame(std::vector<std::uint8_t>& out, MessageType type, const Body& body) {
  append_frame(out, type, bytes_of(body));
}

// Stdin, Stdout, Stderr: as many frames as `size` needs.
inline void append_data_frames(std::vector<std::uint8_t>& out, MessageType type, const void* data,
                               std::size_t size) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  for (std::size_t done = 0; done < size;) {
    const std::size_t chunk = std::min<std::size_t>(size - done, kMaxPayloadBytes);
    append_frame(out, type, {bytes + done, chunk});
    done += chunk;
  }
}

struct StartRequest {
  std::string working_directory;         // absolute; empty: /
  std::vector<std::string> argv;         // argv[0] is looked up in PATH unless it has a '/'
  std::vector<std::string> environment;  // NAME=VALUE, added to the agent's environment
  bool forward_stdin = false;
  std::uint32_t gpu_id = kNoGpu;
};

// Throws ProtocolError naming the field: empty argv or argv[0], a string with a NUL, an entry
// that is not NAME=VALUE, a relative working directory, a payload over kMaxPayloadBytes.
inline void validate_start(const StartRequest& request);

inline void append_start(std::vector<std::uint8_t>& out, const StartRequest& request) {
  validate_start(request);
  StartBody body{request.forward_stdin ? kStartForwardStdin : 0, request.gpu_id,
                 static_cast<std::uint16_t>(request.argv.size()),
                 static_cast<std::uint16_t>(request.environment.size()), 0};
  const std::span<const std::uint8_t> head = bytes_of(body);
  std::vector<std::uint8_t> payload(head.begin(), head.end());
  auto add = [&payload](const std::string& text) {
    payload.insert(payload.end(), text.begin(), text.end());
    payload.push_back(0);
  };
  add(request.working_directory);
  for (const std::string& arg : request.argv) add(arg);
  for (const std::string& entry : request.environment) add(entry);
  append_frame(out, MessageType::kStart, payload);
}

inline void append_error(std::vector<std::uint8_t>& out, ErrorCode code, std::string text) {
  text.erase(std::remove(text.begin(), text.end(), '\0'), text.end());
  if (text.size() > kMaxErrorTextBytes) text.resize(kMaxErrorTextBytes);
  const ErrorBody body{static_cast<std::uint16_t>(code), 0};
  const std::span<const std::uint8_t> head = bytes_of(body);
  std::vector<std::uint8_t> payload(head.begin(), head.end());
  payload.insert(payload.end(), text.begin(), text.end());
  append_frame(out, MessageType::kError, payload);
}

// The 20 bytes a HelloReply to `nonce` starts with (its header and the nonce).
inline std::vector<std::uint8_t> hello_reply_prefix(std::uint64_t nonce) {
  const FrameHeader header{kMagic, static_cast<std::uint16_t>(MessageType::kHelloReply), 0,
                           sizeof(HelloReplyBody)};
  std::vector<std::uint8_t> out(sizeof header + sizeof nonce);
  std::memcpy(out.data(), &header, sizeof header);
  std::memcpy(out.data() + sizeof header, &nonce, sizeof nonce);
  return out;
}

// --- decoding ---

// A fixed-size payload as its struct; throws ProtocolError unless the size is exact.
template <class Body>
Body read_body(const Frame& frame) {
  if (frame.payload.size() != sizeof(Body)) {
    throw ProtocolError(std::string(message_name(frame.type)) + ": payload of " +
                        std::to_string(frame.payload.size()) + " bytes, expected " +
                        std::to_string(sizeof(Body)));
  }
  Body body{};
  std::memcpy(&body, frame.payload.data(), sizeof body);
  return body;
}

inline bool valid_environment_entry(const std::string& entry) {
  const std::size_t equals = entry.find('=');
  if (equals == std::string::npos || equals == 0) return false;
  for (std::size_t i = 0; i < equals; ++i) {
    const char c = entry[i];
    const bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

inline void validate_start(const StartRequest& request) {
  if (request.argv.empty()) throw ProtocolError("Start: argv is empty");
  if (request.argv[0].empty()) throw ProtocolError("Start: argv[0] is empty");
  if (request.argv.size() > 0xffff || request.environment.size() > 0xffff) {
    throw ProtocolError("Start: more than 65535 arguments or environment entries");
  }
  auto no_nul = [](const std::string& text, const std::string& field) {
    if (text.find('\0') != std::string::npos) throw ProtocolError("Start: " + field + " has a NUL");
  };
  no_nul(request.working_directory, "working_directory");
  if (!request.working_directory.empty() && request.working_directory[0] != '/') {
    throw ProtocolError("Start: working_directory \"" + request.working_directory +
                        "\" is not absolute");
  }
  std::size_t bytes = sizeof(StartBody) + request.working_directory.size() + 1;
  for (std::size_t i = 0; i < request.argv.size(); ++i) {
    no_nul(request.argv[i], "argv[" + std::to_string(i) + "]");
    bytes += request.argv[i].size() + 1;
  }
  for (std::size_t i = 0; i < request.environment.size(); ++i) {
    if (!valid_environment_entry(request.environment[i])) {
      throw ProtocolError("Start: environment[" + std::to_string(i) + "] \"" +
                          request.environment[i] + "\" is not NAME=VALUE");
    }
    bytes += request.environment[i].size() + 1;
  }
  if (bytes > kMaxPayloadBytes) {
    throw ProtocolError("Start: arguments and environment take " + std::to_string(bytes) +
                        " bytes, more than " + std::to_string(kMaxPayloadBytes));
  }
}

inline StartRequest parse_start(const Frame& frame) {
  if (frame.payload.size() < sizeof(StartBody)) {
    throw ProtocolError("Start: payload of " + std::to_string(frame.payload.size()) +
                        " bytes, shorter than its 16-byte header");
  }
  StartBody body{};
  std::memcpy(&body, frame.payload.data(), sizeof body);
  if ((body.flags & ~kStartForwardStdin) != 0 || body.reserved != 0) {
    throw ProtocolError("Start: unknown flags or nonzero reserved field");
  }
  std::vector<std::string> strings;
  const std::size_t wanted = 1u + body.argc + body.env_count;
  std::size_t at = sizeof body;
  while (strings.size() < wanted) {
    const auto begin = frame.payload.begin() + static_cast<std::ptrdiff_t>(at);
    const auto nul = std::find(begin, frame.payload.end(), std::uint8_t{0});
    if (nul == frame.payload.end()) {
      throw ProtocolError("Start: " + std::to_string(wanted) + " strings expected, the payload " +
                          "ends after " + std::to_string(strings.size()));
    }
    strings.emplace_back(begin, nul);
    at = static_cast<std::size_t>(nul - frame.payload.begin()) + 1;
  }
  if (at != frame.payload.size()) {
    throw ProtocolError("Start: " + std::to_string(frame.payload.size() - at) +
                        " bytes after the last string");
  }
  StartRequest request;
  request.forward_stdin = (body.flags & kStartForwardStdin) != 0;
  request.gpu_id = body.gpu_id;
  request.working_directory = strings[0];
  request.argv.assign(strings.begin() + 1, strings.begin() + 1 + body.argc);
  request.environment.assign(strings.begin() + 1 + body.argc, strings.end());
  validate_start(request);
  return request;
}

struct ErrorReport {
  ErrorCode code = ErrorCode::kBadRequest;
  std::string message;
};

inline ErrorReport parse_error(const Frame& frame) {
  if (frame.payload.size() < sizeof(ErrorBody) ||
      frame.payload.size() > sizeof(ErrorBody) + kMaxErrorTextBytes) {
    throw ProtocolError("Error: payload of " + std::to_string(frame.payload.size()) +
                        " bytes, expected 4 to " + std::to_string(4 + kMaxErrorTextBytes));
  }
  ErrorBody body{};
  std::memcpy(&body, frame.payload.data(), sizeof body);
  return {static_cast<ErrorCode>(body.code),
          std::string(frame.payload.begin() + sizeof body, frame.payload.end())};
}

// Splits a byte stream into frames. Malformed input never throws: a header with a bad magic,
// a nonzero reserved field or a payload over kMaxPayloadBytes is counted, its first byte
// skipped and the next magic searched for; a frame of an unknown type is skipped whole.
class FrameDecoder {
 public:
  void feed(std::span<const std::uint8_t> bytes) {
    if (start_ > 0 && start_ == buffer_.size()) {
      buffer_.clear();
      start_ = 0;
    }
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
  }
  void feed(const void* data, std::size_t size) {
    feed({static_cast<const std::uint8_t*>(data), size});
  }

  // The next complete frame; nullopt when more bytes are needed.
  std::optional<Frame> next() {
    for (;;) {
      if (!align_to_magic()) return std::nullopt;
      if (available() < kHeaderBytes) return std::nullopt;
      FrameHeader header{};
      std::memcpy(&header, buffer_.data() + start_, sizeof header);
      if (header.reserved != 0 || header.payload_bytes > kMaxPayloadBytes) {
        reject(header.reserved != 0
                   ? "frame header: reserved field is " + std::to_string(header.reserved) +
                         ", not 0"
                   : "frame of " + std::to_string(header.payload_bytes) +
                         " payload bytes exceeds " + std::to_string(kMaxPayloadBytes));
        skip(1);
        continue;
      }
      if (available() < kHeaderBytes + header.payload_bytes) return std::nullopt;
      const std::size_t payload_at = start_ + kHeaderBytes;
      if (header.type == 0 || header.type > kLastMessageType) {
        reject("unknown message type " + std::to_string(header.type));
        skip(kHeaderBytes + header.payload_bytes);
        continue;
      }
      Frame frame;
      frame.type = static_cast<MessageType>(header.type);
      frame.payload.assign(
          buffer_.begin() + static_cast<std::ptrdiff_t>(payload_at),
          buffer_.begin() + static_cast<std::ptrdiff_t>(payload_at + header.payload_bytes));
      start_ = payload_at + header.payload_bytes;
      compact();
      ++frames_;
      return frame;
    }
  }

  // Drops everything before the first occurrence of `pattern` (a frame's first bytes, e.g.
  // hello_reply_prefix()); false, keeping only a tail that may begin it, when it is absent.
  bool skip_to(std::span<const std::uint8_t> pattern) {
    const auto begin = buffer_.begin() + static_cast<std::ptrdiff_t>(start_);
    const auto found = std::search(begin, buffer_.end(), pattern.begin(), pattern.end());
    if (found != buffer_.end()) {
      skipped_bytes_ += static_cast<std::uint64_t>(found - begin);
      start_ = static_cast<std::size_t>(found - buffer_.begin());
      return true;
    }
    const std::size_t keep = std::min(available(), pattern.size() - 1);
    skip(available() - keep);
    return false;
  }

  // Forgets buffered bytes (a new connection); the counters stay.
  void reset() {
    buffer_.clear();
    start_ = 0;
  }

  std::size_t buffered_bytes() const { return available(); }
  std::uint64_t frames() const { return frames_; }
  std::uint64_t rejected_frames() const { return rejected_frames_; }
  std::uint64_t skipped_bytes() const { return skipped_bytes_; }
  const std::string& last_error() const { return last_error_; }

 private:
  std::size_t available() const { return buffer_.size() - start_; }
  void skip(std::size_t bytes) {
    skipped_bytes_ += bytes;
    start_ += bytes;
    compact();
  }
  void reject(std::string why) {
    ++rejected_frames_;
    last_error_ = std::move(why);
  }
  // Moves start_ to the next magic (or to a tail that may begin one); false if none is whole.
  bool align_to_magic() {
    const auto* magic = reinterpret_cast<const std::uint8_t*>(&kMagic);
    const std::size_t before = start_;
    const bool found = skip_to({magic, sizeof kMagic});
    if (start_ != before) reject("bytes without a frame magic");
    return found;
  }
  void compact() {
    if (start_ >= kMaxPayloadBytes && start_ * 2 >= buffer_.size()) {
      buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(start_));
      start_ = 0;
    }
  }

  std::vector<std::uint8_t> buffer_;
  std::size_t start_ = 0;
  std::uint64_t frames_ = 0;
  std::uint64_t rejected_frames_ = 0;
  std::uint64_t skipped_bytes_ = 0;
  std::string last_error_;
};

}  // namespace ethx::agent
