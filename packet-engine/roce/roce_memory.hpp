// Memory registration for the RoCEv2 engine: the table a NIC keeps of registered regions (its
// MTT/MPT), with lkey checks for local access and rkey checks for remote access. A failed
// check returns why and never hands out memory, so a bad request cannot touch a byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>

#include "packet-engine/roce/roce_verbs.hpp"

namespace ethx::roce {

struct MemoryRegion {
  std::uint32_t lkey = 0;
  std::uint32_t rkey = 0;
  std::uint64_t addr = 0;  // virtual address of the first byte (what the peer puts in RETH)
  std::span<std::byte> bytes;
  std::uint32_t access = 0;  // Access bits
};

enum class KeyCheck : std::uint8_t {
  kOk,
  kBadKey,      // no region with this key
  kOutOfRange,  // [addr, addr + length) not inside the region
  kNoRights,    // the region does not grant the access
};
const char* to_string(KeyCheck check);

class MemoryTable {
 public:
  // Registers `bytes` with `access`. The virtual address is the buffer's address unless
  // `iova` is given (ibv_reg_mr_iova). Keys are never reused while the table lives.
  MemoryRegion register_region(std::span<std::byte> bytes, std::uint32_t access,
                               std::optional<std::uint64_t> iova = std::nullopt);
  // False if no region has this lkey.
  bool deregister(std::uint32_t lkey);

  // Remote access by rkey (RETH / AtomicETH): `required` is one Access bit. On kOk, `out` is
  // the addressed bytes.
  KeyCheck check_remote(std::uint32_t rkey, std::uint64_t addr, std::uint64_t length,
                        std::uint32_t required, std::span<std::byte>& out) const;
  // Local access by lkey (scatter/gather lists); `write` needs kAccessLocalWrite.
  KeyCheck check_local(const Sge& sge, bool write, std::span<std::byte>& out) const;

  std::size_t size() const { return by_lkey_.size(); }

 private:
  static KeyCheck range(const MemoryRegion& region, std::uint64_t addr, std::uint64_t length,
                        std::span<std::byte>& out);

  std::unordered_map<std::uint32_t, MemoryRegion> by_lkey_;
  std::unordered_map<std::uint32_t, std::uint32_t> lkey_by_rkey_;
  std::uint32_t next_index_ = 1;
};

}  // namespace ethx::roce
