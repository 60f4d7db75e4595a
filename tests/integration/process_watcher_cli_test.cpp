// A coordinator whose node dies stops within 5 s, exit status 1, with one line naming the
// process (fabric/platform/process_watcher.hpp): `ethx bench` with its own fabric, and
// `ethx bench --fabric` on one `ethx up` left running. Real processes over shared memory; the
// AF_XDP runs of the same scenarios are in process_watcher_afxdp_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "tests/integration/watched_bench_fixture.hpp"

namespace ethx {
namespace {

using WatchedBench = test::WatchedBenchTest;

TEST_F(WatchedBench, SigkillOfANodeStopsTheBenchWithinFiveSecondsNamingIt) {
  kill_a_node_during_bench({"--gpus", "8"}, 8);
}

TEST_F(WatchedBench, SigkillOfANodeOfAnUpFabricStopsTheAttachedBench) {
  kill_a_node_of_an_up_fabric("w" + std::to_string(::getpid() % 100000),
                              "--gpus 4 --transport shm");
}

}  // namespace
}  // namespace ethx
