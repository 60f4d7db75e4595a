// `ethx sim` as a user runs it: the process re-executes itself with huge pages asked of glibc's
// malloc (fabric/platform/huge_page_heap.hpp) and must print exactly what it prints without.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "tests/integration/cli_test_support.hpp"

namespace ethx {
namespace {

using test::CommandResult;
using test::ethx_binary;
using test::read_file;
using test::run_command;

constexpr const char* kSimArgs =
    " sim --gpus 32 --workload all-to-all --bytes 64 --repeat 100 --json";

struct SimRun {
  CommandResult result;
  std::string stderr_text;
};

SimRun run_sim(const std::string& environment, const std::string& extra_args = "") {
  const auto err = std::filesystem::temp_directory_path() /
                   ("ethx-test-" + std::to_string(::getpid()) + "-sim.err");
  SimRun run;
  run.result =
      run_command(environment + " " + ethx_binary() + kSimArgs + extra_args + " 2>" + err.string());
  run.stderr_text = read_file(err.string());
  std::filesystem::remove(err);
  return run;
}

bool transparent_huge_pages_available() {
  // "always [madvise] never": the brackets mark the mode in force.
  const std::string mode = read_file("/sys/kernel/mm/transparent_hugepage/enabled");
  return !mode.empty() && mode.find("[never]") == std::string::npos;
}

TEST(SimCli, HugePagesChangeTheSpeedNotTheResults) {
  const SimRun asked = run_sim("env -u GLIBC_TUNABLES");
  const SimRun declined = run_sim("env GLIBC_TUNABLES=glibc.malloc.hugetlb=0");
  ASSERT_EQ(asked.result.exit_status, 0) << asked.stderr_text;
  ASSERT_EQ(declined.result.exit_status, 0) << declined.stderr_text;
  EXPECT_FALSE(asked.result.output.empty());
  EXPECT_EQ(asked.result.output, declined.result.output);  // byte-identical JSON
  // The exec worked (a failure is reported on stderr and the run goes on with 4 KiB pages).
  EXPECT_EQ(asked.stderr_text.find("4 KiB pages"), std::string::npos) << asked.stderr_text;

  const std::regex memory_line(
      R"(ethx sim: wall .* ([0-9]+) MiB resident \(([0-9]+) MiB in huge pages\))");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(asked.stderr_text, match, memory_line)) << asked.stderr_text;
  EXPECT_GT(std::stoull(match[1].str()), 0u);
  if (!transparent_huge_pages_available()) GTEST_SKIP() << "transparent huge pages are off";
  EXPECT_GT(std::stoull(match[2].str()), 0u) << asked.stderr_text;
}

TEST(SimCli, TwoThreadsPrintWhatOnePrintsAndSaySo) {
  const SimRun one = run_sim("", " --threads 1");
  const SimRun two = run_sim("", " --threads 2");
  ASSERT_EQ(one.result.exit_status, 0) << one.stderr_text;
  ASSERT_EQ(two.result.exit_status, 0) << two.stderr_text;
  EXPECT_FALSE(one.result.output.empty());
  EXPECT_EQ(one.result.output, two.result.output);  // byte-identical JSON
  EXPECT_NE(one.stderr_text.find("on 1 thread,"), std::string::npos) << one.stderr_text;
  // Two, with how far apart their cores are, unless the host put the second core far away or
  // it is busy, which it then says.
  const std::regex two_near("on 2 threads, cores [0-9]+ ns apart, ");
  EXPECT_TRUE(std::regex_search(two.stderr_text, two_near) ||
              two.stderr_text.find("one thread, not two: the second") != std::string::npos)
      << two.stderr_text;
  // A thread count it cannot use is refused, by name.
  const SimRun three = run_sim("", " --threads 3");
  EXPECT_EQ(three.result.exit_status, 2);
  EXPECT_NE(three.stderr_text.find("--threads must be 1 or 2"), std::string::npos)
      << three.stderr_text;
}

}  // namespace
}  // namespace ethx
