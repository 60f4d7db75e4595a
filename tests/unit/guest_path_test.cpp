// Where a guest finds a host file: /tmp and /run are each guest's own, so a program built in a
// clone under /tmp (as CI does) must be reached through the raw mount of the host's root.
#include <gtest/gtest.h>

#include "fabric/vm/guest_agent.hpp"

namespace ethx {
namespace {

TEST(GuestPathOfHostFile, GuestPrivateDirectoriesGoThroughTheHostRootMount) {
  EXPECT_EQ(guest_path_of_host_file("/tmp/ci/ethx/build/tests/shmem/shmem_bench"),
            "/run/ethx-host/tmp/ci/ethx/build/tests/shmem/shmem_bench");
  EXPECT_EQ(guest_path_of_host_file("/run/user/0/x"), "/run/ethx-host/run/user/0/x");
}

TEST(GuestPathOfHostFile, OtherPathsAreTheSameInTheGuest) {
  EXPECT_EQ(guest_path_of_host_file("/work/ethx/build/bin/ethx"), "/work/ethx/build/bin/ethx");
  EXPECT_EQ(guest_path_of_host_file("/tmpfoo/x"), "/tmpfoo/x");
  EXPECT_EQ(guest_path_of_host_file("/var/tmp/x"), "/var/tmp/x");
}

}  // namespace
}  // namespace ethx
