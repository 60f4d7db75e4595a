// Transparent huge pages for a program's heap, asked of glibc's malloc.
//
// `ethx sim` keeps tens to hundreds of MB of frames, queues and per-GPU state, and touches a
// few lines of each at a time in an order no cache follows: with 4 KiB pages nearly every such
// touch is a TLB miss as well. A kernel in "madvise" mode (as here:
// /sys/kernel/mm/transparent_hugepage/enabled) gives huge pages only to memory that asks for
// them, and glibc's malloc asks only when its tunable glibc.malloc.hugetlb=1 is set, which glibc
// reads once, at start-up: so the program re-executes itself with it set (docs/simulator.md,
// "Round 6"). In "always" mode the tunable changes nothing; in "never" mode nothing can.
#pragma once

#include <cstdint>
#include <string>

namespace ethx {

// If GLIBC_TUNABLES does not mention glibc.malloc.hugetlb, adds glibc.malloc.hugetlb=1 to it
// and re-executes /proc/self/exe with `argv` (same PID, same arguments, same environment
// otherwise). Returns only if it was already mentioned (so GLIBC_TUNABLES=glibc.malloc.hugetlb=0
// keeps 4 KiB pages), under valgrind (an exec would leave the tool), or if the exec failed;
// then the returned text says why it failed (empty if nothing was tried) and the program
// carries on without.
std::string reexec_with_huge_page_heap(char** argv);

// What reexec_with_huge_page_heap would set GLIBC_TUNABLES to, given its current value
// (nullptr when unset); empty if it already mentions glibc.malloc.hugetlb.
std::string tunables_with_huge_pages(const char* current);

// This process's resident memory, and how much of it sits in transparent huge pages (the Rss and
// AnonHugePages lines of /proc/self/smaps_rollup); zeros where the file cannot be read.
struct ResidentMemory {
  std::uint64_t resident_bytes = 0;
  std::uint64_t huge_page_bytes = 0;
};
ResidentMemory resident_memory();
// The same from the text of an smaps_rollup file.
ResidentMemory parse_smaps_rollup(const std::string& text);

}  // namespace ethx
