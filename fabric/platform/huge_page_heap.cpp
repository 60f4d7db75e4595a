#include "fabric/platform/huge_page_heap.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ethx {

namespace {

constexpr const char* kTunable = "glibc.malloc.hugetlb";

// Valgrind runs a program inside its tool and preloads vgpreload_*.so: an exec would replace
// the tool (its /proc/self/exe), so under valgrind the program runs as it is.
bool under_valgrind() {
  const char* preload = std::getenv("LD_PRELOAD");
  return preload != nullptr && std::strstr(preload, "vgpreload") != nullptr;
}

}  // namespace

std::string tunables_with_huge_pages(const char* current) {
  const std::string tunables = current == nullptr ? "" : current;
  if (tunables.find(kTunable) != std::string::npos) return "";
  const std::string added = std::string(kTunable) + "=1";
  return tunables.empty() ? added : tunables + ":" + added;
}

std::string reexec_with_huge_page_heap(char** argv) {
  const std::string tunables = tunables_with_huge_pages(std::getenv("GLIBC_TUNABLES"));
  if (tunables.empty() || under_valgrind()) return "";
  // Set before the exec, so the new image finds it and does not exec again.
  if (setenv("GLIBC_TUNABLES", tunables.c_str(), 1) != 0) {
    return std::string("setenv GLIBC_TUNABLES: ") + std::strerror(errno);
  }
  execv("/proc/self/exe", argv);
  return std::string("exec /proc/self/exe: ") + std::strerror(errno);
}

ResidentMemory parse_smaps_rollup(const std::string& text) {
  ResidentMemory memory;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string key;
    std::uint64_t kib = 0;
    std::string unit;
    if (!(fields >> key >> kib >> unit) || unit != "kB") continue;
    if (key == "Rss:") memory.resident_bytes = kib * 1024;
    if (key == "AnonHugePages:") memory.huge_page_bytes = kib * 1024;
  }
  return memory;
}

ResidentMemory resident_memory() {
  std::ifstream file("/proc/self/smaps_rollup");
  std::ostringstream text;
  text << file.rdbuf();
  return parse_smaps_rollup(text.str());
}

}  // namespace ethx
