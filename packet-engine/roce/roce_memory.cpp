#include "packet-engine/roce/roce_memory.hpp"

namespace ethx::roce {

const char* to_string(KeyCheck check) {
  switch (check) {
    case KeyCheck::kOk:
      return "ok";
    case KeyCheck::kBadKey:
      return "bad-key";
    case KeyCheck::kOutOfRange:
      return "out-of-range";
    case KeyCheck::kNoRights:
      return "no-rights";
  }
  return "unknown";
}

MemoryRegion MemoryTable::register_region(std::span<std::byte> bytes, std::uint32_t access,
                                          std::optional<std::uint64_t> iova) {
  // Like mlx5, a key is a region index in the upper 24 bits and a tag in the low 8 bits; the
  // rkey uses a different tag so that an lkey passed as an rkey (a classic bug) is rejected.
  const std::uint32_t index = next_index_++;
  MemoryRegion region;
  region.lkey = (index << 8) | 0x11;
  region.rkey = (index << 8) | 0x5A;
  region.addr = iova ? *iova : reinterpret_cast<std::uintptr_t>(bytes.data());
  region.bytes = bytes;
  region.access = access;
  by_lkey_[region.lkey] = region;
  lkey_by_rkey_[region.rkey] = region.lkey;
  return region;
}

bool MemoryTable::deregister(std::uint32_t lkey) {
  const auto it = by_lkey_.find(lkey);
  if (it == by_lkey_.end()) return false;
  lkey_by_rkey_.erase(it->second.rkey);
  by_lkey_.erase(it);
  return true;
}

KeyCheck MemoryTable::range(const MemoryRegion& region, std::uint64_t addr, std::uint64_t length,
                            std::span<std::byte>& out) {
  // Written so that no sum can wrap: addr >= base, then the offset and the length separately.
  if (addr < region.addr) return KeyCheck::kOutOfRange;
  const std::uint64_t offset = addr - region.addr;
  if (offset > region.bytes.size() || length > region.bytes.size() - offset) {
    return KeyCheck::kOutOfRange;
  }
  out = region.bytes.subspan(offset, length);
  return KeyCheck::kOk;
}

KeyCheck MemoryTable::check_remote(std::uint32_t rkey, std::uint64_t addr, std::uint64_t length,
                                   std::uint32_t required, std::span<std::byte>& out) const {
  const auto key = lkey_by_rkey_.find(rkey);
  if (key == lkey_by_rkey_.end()) return KeyCheck::kBadKey;
  const MemoryRegion& region = by_lkey_.at(key->second);
  if ((region.access & required) != required) return KeyCheck::kNoRights;
  return range(region, addr, length, out);
}

KeyCheck MemoryTable::check_local(const Sge& sge, bool write, std::span<std::byte>& out) const {
  const auto it = by_lkey_.find(sge.lkey);
  if (it == by_lkey_.end()) return KeyCheck::kBadKey;
  if (write && (it->second.access & kAccessLocalWrite) == 0) return KeyCheck::kNoRights;
  return range(it->second, sge.addr, sge.length, out);
}

}  // namespace ethx::roce
