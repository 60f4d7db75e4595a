#include "switch/capture/pcap_writer.hpp"

#include <pcap/pcap.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace ethx {

struct PcapWriter::Handles {
  pcap_t* pcap = nullptr;
  pcap_dumper_t* dumper = nullptr;
  ~Handles() {
    if (dumper != nullptr) pcap_dump_close(dumper);
    if (pcap != nullptr) pcap_close(pcap);
  }
};

PcapWriter::PcapWriter(const std::string& path, std::uint32_t snap_bytes)
    : path_(path), snap_bytes_(snap_bytes), handles_(std::make_unique<Handles>()) {
  handles_->pcap = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, static_cast<int>(snap_bytes),
                                                        PCAP_TSTAMP_PRECISION_NANO);
  if (handles_->pcap != nullptr) handles_->dumper = pcap_dump_open(handles_->pcap, path.c_str());
  if (handles_->dumper == nullptr) {
    const std::string reason =
        handles_->pcap != nullptr ? pcap_geterr(handles_->pcap) : "libpcap could not start";
    throw std::runtime_error("capture file " + path + ": " + reason);
  }
}

PcapWriter::~PcapWriter() = default;

void PcapWriter::write(std::span<const std::byte> frame, TimeNs at_ns) {
  pcap_pkthdr header{};
  header.ts.tv_sec = static_cast<time_t>(at_ns / 1'000'000'000);
  // With nanosecond precision libpcap stores nanoseconds in the microsecond field.
  header.ts.tv_usec = static_cast<suseconds_t>(at_ns % 1'000'000'000);
  header.len = static_cast<bpf_u_int32>(frame.size());
  header.caplen = static_cast<bpf_u_int32>(std::min<std::size_t>(frame.size(), snap_bytes_));
  // pcap_dump's signature takes the dumper as u_char* and the bytes as u_char*.
  pcap_dump(reinterpret_cast<u_char*>(handles_->dumper), &header,
            reinterpret_cast<const u_char*>(frame.data()));
  ++frames_written_;
}

void PcapWriter::flush() {
  // pcap_dump reports nothing: a failed write (a full disk) shows in the stream's error flag.
  if (pcap_dump_flush(handles_->dumper) != 0 || std::ferror(pcap_dump_file(handles_->dumper))) {
    throw std::runtime_error("capture file " + path_ + ": write failed (disk full?)");
  }
}

}  // namespace ethx
