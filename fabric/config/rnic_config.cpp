// [rnic]: the RDMA NIC model's parameters (rnic_config.hpp); each checked against a range that
// keeps the model meaningful, and named in the error.
#include "fabric/config/rnic_config.hpp"

#include "fabric/config/table_reader_internal.hpp"

namespace ethx {

namespace {

std::uint32_t u32_field(const TableReader& table, const std::string& key, std::uint32_t fallback,
                        std::uint32_t min, std::uint32_t max) {
  return static_cast<std::uint32_t>(table.unsigned_field(key, fallback, min, max));
}

}  // namespace

void read_rnic(const toml::value& node, const std::string& source, RnicConfig& rnic) {
  TableReader table(node, "rnic", source);
  table.allow_only({"post_ns",
                    "doorbell_ns",
                    "inline_wqe",
                    "inline_max_bytes",
                    "pcie_rtt_ns",
                    "pcie_rate_gbps",
                    "pcie_read_tags",
                    "pcie_max_payload_bytes",
                    "pcie_tlp_overhead_bytes",
                    "wqe_bytes",
                    "cqe_bytes",
                    "qpc_cache_entries",
                    "mpt_cache_entries",
                    "mtt_cache_entries",
                    "qpc_bytes",
                    "mpt_bytes",
                    "mtt_entry_bytes",
                    "page_bytes",
                    "processing_units",
                    "packet_ns"});
  constexpr std::uint64_t kSecondNs = 1'000'000'000;
  rnic.post_ns = table.unsigned_field("post_ns", rnic.post_ns, 0, kSecondNs);
  rnic.doorbell_ns = table.unsigned_field("doorbell_ns", rnic.doorbell_ns, 0, kSecondNs);
  rnic.inline_wqe = table.bool_field("inline_wqe", rnic.inline_wqe);
  rnic.inline_max_bytes = u32_field(table, "inline_max_bytes", rnic.inline_max_bytes, 0, 4096);
  rnic.pcie_rtt_ns = table.unsigned_field("pcie_rtt_ns", rnic.pcie_rtt_ns, 0, kSecondNs);
  rnic.pcie_rate_gbps = table.double_field("pcie_rate_gbps", rnic.pcie_rate_gbps, 0.001, 1e6);
  rnic.pcie_read_tags = u32_field(table, "pcie_read_tags", rnic.pcie_read_tags, 1, 1 << 16);
  rnic.pcie_max_payload_bytes =
      u32_field(table, "pcie_max_payload_bytes", rnic.pcie_max_payload_bytes, 64, 4096);
  rnic.pcie_tlp_overhead_bytes =
      u32_field(table, "pcie_tlp_overhead_bytes", rnic.pcie_tlp_overhead_bytes, 0, 256);
  rnic.wqe_bytes = u32_field(table, "wqe_bytes", rnic.wqe_bytes, 1, 4096);
  rnic.cqe_bytes = u32_field(table, "cqe_bytes", rnic.cqe_bytes, 1, 4096);
  rnic.qpc_cache_entries =
      u32_field(table, "qpc_cache_entries", rnic.qpc_cache_entries, 0, 1 << 24);
  rnic.mpt_cache_entries =
      u32_field(table, "mpt_cache_entries", rnic.mpt_cache_entries, 0, 1 << 24);
  rnic.mtt_cache_entries =
      u32_field(table, "mtt_cache_entries", rnic.mtt_cache_entries, 0, 1 << 24);
  rnic.qpc_bytes = u32_field(table, "qpc_bytes", rnic.qpc_bytes, 1, 4096);
  rnic.mpt_bytes = u32_field(table, "mpt_bytes", rnic.mpt_bytes, 1, 4096);
  rnic.mtt_entry_bytes = u32_field(table, "mtt_entry_bytes", rnic.mtt_entry_bytes, 1, 4096);
  rnic.page_bytes = table.unsigned_field("page_bytes", rnic.page_bytes, 4096, 1ull << 30);
  if ((rnic.page_bytes & (rnic.page_bytes - 1)) != 0)
    table.fail("page_bytes", "must be a power of two");
  rnic.processing_units = u32_field(table, "processing_units", rnic.processing_units, 1, 4096);
  rnic.packet_ns = table.unsigned_field("packet_ns", rnic.packet_ns, 0, kSecondNs);
}

}  // namespace ethx
