// `ethx capture`: records every frame one switch port of a running fabric (`ethx up`) receives
// and sends into a pcap file, on any transport, taken inside the switch (docs/wireshark.md):
//   ethx capture [--name N] --port P [-w FILE] [--count K] [--duration-s S]
// It ends after K frames, after S seconds, or on Ctrl-C, whichever comes first.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ethx {

struct CaptureOptions {
  std::string name = "default";
  std::optional<long long> port;  // required; signed so a negative value gets a clear error
  std::string path;               // default: ethx-<name>-port<P>.pcap in the current directory
  long long count = 0;            // 0: no limit
  double duration_s = 0;          // 0: no limit
  bool json = false;
  std::int64_t timeout_ms = 5000;  // for each answer of the switch
};
// Exit status: 0 captured (the file is complete), 1 the switch did not answer or is not
// running, 2 bad input (named on stderr, also what the switch refuses), 3 no such fabric.
int run_capture(const CaptureOptions& options);

}  // namespace ethx
