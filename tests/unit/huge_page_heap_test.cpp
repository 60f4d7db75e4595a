// `ethx sim`'s huge pages: the GLIBC_TUNABLES value it re-executes with, and the resident memory
// it reports.
#include "fabric/platform/huge_page_heap.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace ethx {
namespace {

TEST(HugePageHeap, AddsTheTunableAndKeepsTheUsersOthers) {
  EXPECT_EQ(tunables_with_huge_pages(nullptr), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(tunables_with_huge_pages(""), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(tunables_with_huge_pages("glibc.malloc.check=3"),
            "glibc.malloc.check=3:glibc.malloc.hugetlb=1");
}

TEST(HugePageHeap, LeavesAUsersOwnChoiceAlone) {
  // Empty: nothing to set, so no exec (this is also how the re-executed image stops).
  EXPECT_EQ(tunables_with_huge_pages("glibc.malloc.hugetlb=0"), "");
  EXPECT_EQ(tunables_with_huge_pages("glibc.malloc.hugetlb=1"), "");
  EXPECT_EQ(tunables_with_huge_pages("glibc.malloc.check=3:glibc.malloc.hugetlb=0"), "");
}

TEST(HugePageHeap, ReadsResidentAndHugePageBytesFromSmapsRollup) {
  const ResidentMemory memory = parse_smaps_rollup(
      "55d0c6c00000-7ffd3f5fe000 ---p 00000000 00:00 0                          [rollup]\n"
      "Rss:               77244 kB\n"
      "Pss:               76100 kB\n"
      "AnonHugePages:     67584 kB\n"
      "ShmemPmdMapped:        0 kB\n");
  EXPECT_EQ(memory.resident_bytes, 77244ull * 1024);
  EXPECT_EQ(memory.huge_page_bytes, 67584ull * 1024);
  const ResidentMemory unreadable = parse_smaps_rollup("Rss: lots\n");
  EXPECT_EQ(unreadable.resident_bytes, 0u);
  EXPECT_EQ(unreadable.huge_page_bytes, 0u);
}

TEST(HugePageHeap, ResidentMemoryGrowsWithWhatThisProcessTouches) {
  const ResidentMemory before = resident_memory();
  ASSERT_GT(before.resident_bytes, 0u) << "/proc/self/smaps_rollup unreadable";
  std::vector<char> touched(std::size_t{64} << 20, 1);  // 64 MiB, every page written
  const ResidentMemory after = resident_memory();
  EXPECT_GE(after.resident_bytes, before.resident_bytes + (std::size_t{60} << 20));
  EXPECT_EQ(touched.back(), 1);
}

}  // namespace
}  // namespace ethx
