// Writes Ethernet frames to a pcap file with libpcap's own writer (pcap_open_dead, pcap_dump):
// link type Ethernet (DLT_EN10MB), nanosecond timestamps, so tshark and Wireshark read it as
// they read their own captures. The file is complete after every flush() and at destruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "address-map/fabric_types.hpp"

namespace ethx {

class PcapWriter {
 public:
  // Frames longer than `snap_bytes` are cut to it (their original length is recorded).
  // Throws std::runtime_error naming `path` and libpcap's reason if the file cannot be made.
  explicit PcapWriter(const std::string& path, std::uint32_t snap_bytes = kDefaultSnapBytes);
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  // One frame as seen at `at_ns` (nanoseconds since the Unix epoch, or any clock: the file
  // stores what it is given).
  void write(std::span<const std::byte> frame, TimeNs at_ns);
  // Puts what was written so far into the file. Throws std::runtime_error naming the file if
  // any write failed (a full disk).
  void flush();
  std::uint64_t frames_written() const { return frames_written_; }
  const std::string& path() const { return path_; }

  static constexpr std::uint32_t kDefaultSnapBytes = 65535;

 private:
  std::string path_;
  std::uint32_t snap_bytes_;
  struct Handles;  // libpcap's: kept out of this header, which stays free of <pcap.h>
  std::unique_ptr<Handles> handles_;
  std::uint64_t frames_written_ = 0;
};

}  // namespace ethx
