// Shared-memory transport: frame rings, the futex doorbell, the shm file and the fabric region,
// within one process and across fork()ed processes.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fabric/platform/shm_file.hpp"
#include "fabric/transport/doorbell.hpp"
#include "fabric/transport/shm/frame_ring.hpp"
#include "fabric/transport/shm/shm_fabric_region.hpp"

namespace ethx::shm {
namespace {

constexpr std::int64_t kTenSecondsNs = 10'000'000'000;

std::vector<std::byte> numbered_frame(std::uint64_t number, std::size_t length) {
  std::vector<std::byte> frame(length);
  for (std::size_t i = 0; i < length; ++i) frame[i] = std::byte((number * 31 + i) & 0xff);
  if (length >= sizeof number) std::memcpy(frame.data(), &number, sizeof number);
  return frame;
}

bool is_numbered_frame(std::span<const std::byte> frame, std::uint64_t number, std::size_t length) {
  const auto expected = numbered_frame(number, length);
  return frame.size() == length && std::memcmp(frame.data(), expected.data(), length) == 0;
}

// Varies with the number so that lengths, and slot contents, differ from frame to frame.
std::size_t length_for(std::uint64_t number) {
  return 60 + (number * 7) % 1400;
}

// Unique per process and test, removed however the test ends.
class ShmName {
 public:
  explicit ShmName(const std::string& what)
      : name_("/ethx-test-" + std::to_string(::getpid()) + "-" + what) {
    SharedMemoryFile::remove(name_);
  }
  ~ShmName() { SharedMemoryFile::remove(name_); }
  const std::string& str() const { return name_; }

 private:
  std::string name_;
};

// Runs `body` in a forked child whose exit status is body's return value (99 if it throws).
// alarm() bounds a hung child, so the parent's blocking waitpid is bounded too.
pid_t fork_child(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::alarm(60);
  int status = 99;
  try {
    status = body();
  } catch (...) {
  }
  ::_exit(status);
}

// "exited 0", or how the child ended otherwise.
std::string child_outcome(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return "waitpid failed";
  if (WIFEXITED(status)) return "exited " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "ended with status " + std::to_string(status);
}

// The scheduler state letter of a process ('S' = sleeping in the kernel), from /proc.
char process_state(pid_t pid) {
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(stat_file, stat);
  const auto name_end = stat.rfind(')');
  return name_end == std::string::npos || name_end + 2 >= stat.size() ? '?' : stat[name_end + 2];
}

// --- FrameRing -----------------------------------------------------------------------------

TEST(FrameRingTest, SlotIsTwoKibAndTheLargestFrameIsTheSlotPayload) {
  EXPECT_EQ(sizeof(FrameSlot), 2048u);
  EXPECT_EQ(FrameRing::max_frame_bytes(), kSlotBytes);
  EXPECT_GE(FrameRing::max_frame_bytes(), 1792u);  // the fabric's default MTU fits
}

TEST(FrameRingTest, PopsFramesInPushOrderWithTheirContent) {
  auto ring = std::make_unique<FrameRing>();
  EXPECT_TRUE(ring->empty());
  for (std::uint64_t n = 0; n < 10; ++n)
    ASSERT_TRUE(ring->try_push(numbered_frame(n, length_for(n))));
  EXPECT_EQ(ring->size(), 10u);
  for (std::uint64_t n = 0; n < 10; ++n) {
    bool matched = false;
    ASSERT_TRUE(ring->try_pop([&](std::span<const std::byte> frame) {
      matched = is_numbered_frame(frame, n, length_for(n));
    }));
    EXPECT_TRUE(matched) << "frame " << n;
  }
  EXPECT_TRUE(ring->empty());
}

TEST(FrameRingTest, PopOnEmptyRingReturnsFalseWithoutCallingConsume) {
  auto ring = std::make_unique<FrameRing>();
  int calls = 0;
  EXPECT_FALSE(ring->try_pop([&](std::span<const std::byte>) { ++calls; }));
  EXPECT_EQ(ring->pop_batch(8, [&](std::span<const std::byte>) { ++calls; }), 0u);
  EXPECT_EQ(calls, 0);
}

TEST(FrameRingTest, FullRingRejectsPushAndLosesNothingQueued) {
  auto ring = std::make_unique<FrameRing>();
  for (std::uint64_t n = 0; n < kRingSlots; ++n) {
    ASSERT_TRUE(ring->try_push(numbered_frame(n, length_for(n)))) << "frame " << n;
  }
  EXPECT_FALSE(ring->has_free_slot());
  EXPECT_FALSE(ring->try_push(numbered_frame(9999, 64)));
  EXPECT_EQ(ring->size(), kRingSlots);

  std::uint64_t next = 0;
  std::uint64_t mismatches = 0;
  const std::size_t popped = ring->pop_batch(kRingSlots * 2, [&](std::span<const std::byte> frame) {
    if (!is_numbered_frame(frame, next, length_for(next))) ++mismatches;
    ++next;
  });
  EXPECT_EQ(popped, kRingSlots);
  EXPECT_EQ(mismatches, 0u);
  EXPECT_TRUE(ring->has_free_slot());
}

TEST(FrameRingTest, OversizeFrameIsRejectedAndTheLargestFits) {
  auto ring = std::make_unique<FrameRing>();
  EXPECT_FALSE(ring->try_push(numbered_frame(1, FrameRing::max_frame_bytes() + 1)));
  EXPECT_TRUE(ring->empty());
  EXPECT_TRUE(ring->try_push(numbered_frame(2, FrameRing::max_frame_bytes())));
  bool matched = false;
  ASSERT_TRUE(ring->try_pop([&](std::span<const std::byte> frame) {
    matched = is_numbered_frame(frame, 2, FrameRing::max_frame_bytes());
  }));
  EXPECT_TRUE(matched);
}

TEST(FrameRingTest, PopBatchStopsAtMaxAndKeepsOrder) {
  auto ring = std::make_unique<FrameRing>();
  for (std::uint64_t n = 0; n < 100; ++n)
    ASSERT_TRUE(ring->try_push(numbered_frame(n, length_for(n))));
  std::vector<std::uint64_t> numbers;
  auto collect = [&](std::span<const std::byte> frame) {
    std::uint64_t number;
    std::memcpy(&number, frame.data(), sizeof number);
    numbers.push_back(number);
  };
  EXPECT_EQ(ring->pop_batch(40, collect), 40u);
  EXPECT_EQ(ring->size(), 60u);
  EXPECT_EQ(ring->pop_batch(1000, collect), 60u);
  ASSERT_EQ(numbers.size(), 100u);
  for (std::uint64_t n = 0; n < 100; ++n) EXPECT_EQ(numbers[n], n);
}

TEST(FrameRingTest, WrapsAroundManyTimesWithoutLosingSlots) {
  auto ring = std::make_unique<FrameRing>();
  std::uint64_t pushed = 0;
  std::uint64_t popped = 0;
  std::uint64_t mismatches = 0;
  for (int round = 0; round < 50; ++round) {
    // Uneven push and pop counts move the queues' indices through every position.
    while (ring->try_push(numbered_frame(pushed, length_for(pushed)))) ++pushed;
    ring->pop_batch(kRingSlots - 1 - static_cast<std::size_t>(round), [&](auto frame) {
      if (!is_numbered_frame(frame, popped, length_for(popped))) ++mismatches;
      ++popped;
    });
  }
  ring->pop_batch(kRingSlots, [&](auto frame) {
    if (!is_numbered_frame(frame, popped, length_for(popped))) ++mismatches;
    ++popped;
  });
  EXPECT_EQ(popped, pushed);
  EXPECT_GT(pushed, 50 * kRingSlots / 2);
  EXPECT_EQ(mismatches, 0u);
  // Every slot came back: a full ring's worth fits again.
  for (std::size_t n = 0; n < kRingSlots; ++n) ASSERT_TRUE(ring->try_push(numbered_frame(n, 64)));
}

TEST(FrameRingTest, SlotIsFreedWhenConsumeThrows) {
  auto ring = std::make_unique<FrameRing>();
  for (std::size_t n = 0; n < kRingSlots; ++n) ASSERT_TRUE(ring->try_push(numbered_frame(n, 64)));
  EXPECT_THROW(ring->try_pop([](std::span<const std::byte>) { throw std::runtime_error("x"); }),
               std::runtime_error);
  EXPECT_TRUE(ring->try_push(numbered_frame(7, 64)));
  EXPECT_FALSE(ring->try_push(numbered_frame(8, 64)));
}

// --- Doorbell and AdaptiveWaiter (one process) ---------------------------------------------

TEST(DoorbellTest, RingWithoutSleeperCostsNoWakeup) {
  Doorbell bell;
  AdaptiveWaiter waiter;
  EXPECT_FALSE(ring(bell));
  EXPECT_FALSE(waiter.ring(bell));
  EXPECT_EQ(bell.sequence.load(), 0u);
  EXPECT_EQ(waiter.stats().wakeups_sent, 0u);
}

TEST(DoorbellTest, RingWakesAnAnnouncedSleeperAndClearsTheFlag) {
  Doorbell bell;
  bell.sleeping.store(1);  // as a waiter about to call FUTEX_WAIT leaves it
  AdaptiveWaiter waiter;
  EXPECT_TRUE(waiter.ring(bell));
  EXPECT_EQ(bell.sequence.load(), 1u);  // a FUTEX_WAIT on the old value now returns at once
  EXPECT_EQ(bell.sleeping.load(), 0u);
  EXPECT_EQ(waiter.stats().wakeups_sent, 1u);
  EXPECT_FALSE(waiter.ring(bell));  // the next producer in a burst pays nothing
}

TEST(AdaptiveWaiterTest, ReturnsAtOnceWhenAlreadyReady) {
  Doorbell bell;
  AdaptiveWaiter waiter;
  EXPECT_TRUE(waiter.wait(
      bell, [] { return true; }, kTenSecondsNs));
  EXPECT_EQ(waiter.stats().spins + waiter.stats().yields + waiter.stats().sleeps, 0u);
}

// Asserts phases and bounds, not exact counts: this machine is shared, a yield or a sleep slice
// can take much longer than asked.
TEST(AdaptiveWaiterTest, TimesOutAfterSpinningYieldingAndSleepingInSlices) {
  Doorbell bell;
  AdaptiveWaiter waiter(
      WaitPolicy{.spin_iterations = 100, .yield_iterations = 3, .max_sleep_ns = 1'000'000});
  constexpr std::int64_t kTimeoutNs = 30'000'000;
  const std::int64_t start_ns = monotonic_ns();
  EXPECT_FALSE(waiter.wait(
      bell, [] { return false; }, kTimeoutNs));
  EXPECT_GE(monotonic_ns() - start_ns, kTimeoutNs);
  EXPECT_GT(waiter.stats().spins, 0u);
  EXPECT_LE(waiter.stats().spins, 100u);
  EXPECT_LE(waiter.stats().yields, 3u);
  EXPECT_GE(waiter.stats().sleeps, 2u);  // 30 ms in slices of at most 1 ms
  EXPECT_EQ(bell.sleeping.load(), 0u);   // nobody is told to ring a waiter that left
}

TEST(AdaptiveWaiterTest, NegativeTimeoutSleepsOnceForMaxSleep) {
  Doorbell bell;
  AdaptiveWaiter waiter(
      WaitPolicy{.spin_iterations = 0, .yield_iterations = 0, .max_sleep_ns = 2'000'000});
  const std::int64_t start_ns = monotonic_ns();
  EXPECT_FALSE(waiter.wait(
      bell, [] { return false; }, -1));
  EXPECT_GE(monotonic_ns() - start_ns, 2'000'000);
  EXPECT_EQ(waiter.stats().sleeps, 1u);
}

TEST(AdaptiveWaiterTest, SpinBudgetShrinksWhenSpinningFailsAndGrowsWhenItPaysOff) {
  Doorbell bell;
  const WaitPolicy policy{
      .yield_iterations = 1, .max_sleep_ns = 1'000'000, .max_spin_ns = 8'000, .min_spin_ns = 500};
  AdaptiveWaiter waiter(policy);
  EXPECT_EQ(waiter.spin_budget_ns(), 8'000);
  EXPECT_FALSE(waiter.wait(
      bell, [] { return false; }, 100'000));
  EXPECT_EQ(waiter.spin_budget_ns(), 4'000);  // spinning did not pay off: halve
  EXPECT_GT(waiter.stats().spins, 0u);
  for (int i = 0; i < 10; ++i) {
    int polls = 0;
    EXPECT_TRUE(waiter.wait(
        bell, [&] { return ++polls > 3; }, kTenSecondsNs));
  }
  EXPECT_EQ(waiter.spin_budget_ns(), 8'000);  // found while spinning: doubled up to the cap
}

TEST(AdaptiveWaiterTest, AShortTimedWaitDoesNotMakeTheWaiterIdle) {
  Doorbell bell;
  const WaitPolicy policy{.yield_iterations = 10, .idle_after_ns = 10'000'000};
  AdaptiveWaiter waiter(policy);
  EXPECT_FALSE(waiter.wait(
      bell, [] { return false; }, 100'000));
  const WaitStats before = waiter.stats();
  EXPECT_FALSE(waiter.wait(
      bell, [] { return false; }, 100'000));
  EXPECT_GT(waiter.stats().spins, before.spins);  // still eager: it spun again
}

TEST(AdaptiveWaiterTest, AnIdleWaiterSleepsWithoutSpinningOrYielding) {
  Doorbell bell;
  // Nothing for 100 us with idle_after_ns = 50 us makes the waiter idle.
  const WaitPolicy policy{
      .yield_iterations = 10, .max_sleep_ns = 1'000'000, .idle_after_ns = 50'000};
  AdaptiveWaiter waiter(policy);
  EXPECT_FALSE(waiter.wait(
      bell, [] { return false; }, 100'000));  // now idle
  const WaitStats before = waiter.stats();
  EXPECT_FALSE(waiter.wait(
      bell, [] { return false; }, 100'000));
  EXPECT_EQ(waiter.stats().spins, before.spins);
  EXPECT_EQ(waiter.stats().yields, before.yields);
  EXPECT_GT(waiter.stats().sleeps, before.sleeps);
  // Work found makes it eager again: the next wait spins first.
  EXPECT_TRUE(waiter.wait(
      bell, [] { return true; }, 100'000));
  int polls = 0;
  EXPECT_TRUE(waiter.wait(
      bell, [&] { return ++polls > 2; }, kTenSecondsNs));
  EXPECT_GT(waiter.stats().spins, before.spins);
}

// --- SharedMemoryFile ----------------------------------------------------------------------

TEST(SharedMemoryFileTest, OpenerSeesCreatorsBytesAndCreatorUnlinksOnDestruction) {
  ShmName name("file");
  {
    SharedMemoryFile created = SharedMemoryFile::create(name.str(), 12345);
    EXPECT_EQ(created.size_bytes(), 12345u);
    EXPECT_EQ(created.name(), name.str());
    EXPECT_TRUE(SharedMemoryFile::exists(name.str()));
    created.data()[12344] = std::byte{0x5a};
    {
      SharedMemoryFile opened = SharedMemoryFile::open(name.str());
      EXPECT_EQ(opened.size_bytes(), 12345u);
      EXPECT_EQ(opened.data()[12344], std::byte{0x5a});
      EXPECT_FALSE(opened.owns_name());
    }
    EXPECT_TRUE(SharedMemoryFile::exists(name.str()));  // the opener left the name alone
    SharedMemoryFile moved = std::move(created);
    EXPECT_EQ(moved.data()[12344], std::byte{0x5a});
  }
  EXPECT_FALSE(SharedMemoryFile::exists(name.str()));
}

TEST(SharedMemoryFileTest, UnlinkNowRemovesTheNameButKeepsTheMapping) {
  ShmName name("unlink");
  SharedMemoryFile file = SharedMemoryFile::create(name.str(), 4096);
  file.unlink_now();
  EXPECT_FALSE(SharedMemoryFile::exists(name.str()));
  file.data()[0] = std::byte{1};
  EXPECT_EQ(file.data()[0], std::byte{1});
}

TEST(SharedMemoryFileTest, CreatingAnExistingNameFailsAndNamesTheFile) {
  ShmName name("twice");
  SharedMemoryFile first = SharedMemoryFile::create(name.str(), 4096);
  try {
    SharedMemoryFile::create(name.str(), 4096);
    FAIL() << "second create succeeded";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(name.str()), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("already exists"), std::string::npos) << error.what();
  }
  EXPECT_TRUE(SharedMemoryFile::exists(name.str()));  // the failed create did not remove it
}

TEST(SharedMemoryFileTest, OpeningAMissingNameFailsAndNamesTheFile) {
  ShmName name("missing");
  try {
    SharedMemoryFile::open(name.str());
    FAIL() << "open of a missing name succeeded";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(name.str()), std::string::npos) << error.what();
  }
}

TEST(SharedMemoryFileTest, SizeThatDoesNotFitFailsAtCreateAndLeavesNothingBehind) {
  ShmName name("huge");
  const std::size_t one_pib = std::size_t{1} << 50;
  try {
    SharedMemoryFile::create(name.str(), one_pib);
    FAIL() << "a 1 PiB shared memory file was created";
  } catch (const std::runtime_error& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("cannot allocate"), std::string::npos) << text;
    EXPECT_NE(text.find("/dev/shm"), std::string::npos) << text;
    EXPECT_NE(text.find(name.str()), std::string::npos) << text;
  }
  EXPECT_FALSE(SharedMemoryFile::exists(name.str()));
}

TEST(SharedMemoryFileTest, RemoveOfAMissingNameIsNotAnError) {
  ShmName name("absent");
  EXPECT_NO_THROW(SharedMemoryFile::remove(name.str()));
  EXPECT_FALSE(SharedMemoryFile::exists(name.str()));
}

// --- ShmFabricRegion -----------------------------------------------------------------------

TEST(ShmFabricRegionTest, AttachSeesTheCreatorsPortsAndHeader) {
  ShmName name("region");
  ShmFabricRegion created = ShmFabricRegion::create(name.str(), 4);
  EXPECT_GE(created.file().size_bytes(), ShmFabricRegion::bytes_for(4));
  ShmFabricRegion attached = ShmFabricRegion::attach(name.str());
  EXPECT_EQ(attached.port_count(), 4u);
  EXPECT_EQ(attached.header().switch_pid.load(), ::getpid());
  EXPECT_EQ(attached.header().switch_ready.load(), 1u);

  ASSERT_TRUE(attached.port(2).to_switch.try_push(numbered_frame(42, 100)));
  EXPECT_TRUE(created.port(1).to_switch.empty());  // ports do not share rings
  bool matched = false;
  ASSERT_TRUE(created.port(2).to_switch.try_pop(
      [&](std::span<const std::byte> frame) { matched = is_numbered_frame(frame, 42, 100); }));
  EXPECT_TRUE(matched);
  EXPECT_THROW(attached.port(4), std::out_of_range);
}

TEST(ShmFabricRegionTest, SizeGrowsByOnePortChannelPerPort) {
  EXPECT_EQ(ShmFabricRegion::bytes_for(32) - ShmFabricRegion::bytes_for(31), sizeof(PortChannel));
  EXPECT_GE(sizeof(PortChannel), 2 * kRingSlots * sizeof(FrameSlot));
  EXPECT_THROW(ShmFabricRegion::create("/ethx-test-unused", 0), std::invalid_argument);
}

TEST(ShmFabricRegionTest, AttachRejectsWrongMagicAndSaysSo) {
  ShmName name("magic");
  ShmFabricRegion created = ShmFabricRegion::create(name.str(), 2);
  created.header().magic = 0x0123456789abcdef;
  try {
    ShmFabricRegion::attach(name.str());
    FAIL() << "attached to a region with the wrong magic";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("magic"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find(name.str()), std::string::npos) << error.what();
  }
}

TEST(ShmFabricRegionTest, AttachRejectsAnotherLayoutVersion) {
  ShmName name("version");
  ShmFabricRegion created = ShmFabricRegion::create(name.str(), 2);
  created.header().version = kRegionVersion + 1;
  EXPECT_THROW(ShmFabricRegion::attach(name.str()), std::runtime_error);
}

TEST(ShmFabricRegionTest, AttachRejectsAFileTooSmallForItsPortCount) {
  ShmName name("small");
  SharedMemoryFile header_only = SharedMemoryFile::create(name.str(), 100);
  EXPECT_THROW(ShmFabricRegion::attach(name.str()), std::runtime_error);
}

// --- Across processes ----------------------------------------------------------------------

struct StreamCase {
  const char* label;
  std::uint64_t frames;
  WaitPolicy policy;
};

class CrossProcessStreamTest : public ::testing::TestWithParam<StreamCase> {};

// The child is a node pushing numbered frames into its port's to_switch ring; the parent is the
// switch draining it. Both wait with AdaptiveWaiter and wake each other with ring(): the parent
// waits for frames on switch_bell, the child for free slots on node_bell.
TEST_P(CrossProcessStreamTest, ChildStreamsNumberedFramesThatArriveInOrderAndIntact) {
  const StreamCase stream = GetParam();
  ShmName name(std::string("stream-") + stream.label);
  ShmFabricRegion region = ShmFabricRegion::create(name.str(), 2);
  constexpr std::uint32_t kPort = 1;

  const pid_t child = fork_child([&] {
    ShmFabricRegion node_view = ShmFabricRegion::attach(name.str());
    PortChannel& port = node_view.port(kPort);
    AdaptiveWaiter waiter(stream.policy);
    for (std::uint64_t n = 0; n < stream.frames; ++n) {
      const auto frame = numbered_frame(n, length_for(n));
      while (!port.to_switch.try_push(frame)) {
        const bool has_room = waiter.wait(
            port.node_bell, [&] { return port.to_switch.has_free_slot(); }, kTenSecondsNs);
        if (!has_room) return 3;
      }
      waiter.ring(node_view.header().switch_bell);
    }
    return 0;
  });
  ASSERT_GT(child, 0);

  PortChannel& port = region.port(kPort);
  AdaptiveWaiter waiter(stream.policy);
  std::uint64_t next = 0;
  std::uint64_t first_bad = UINT64_MAX;
  while (next < stream.frames) {
    const std::size_t popped = port.to_switch.pop_batch(64, [&](std::span<const std::byte> frame) {
      if (first_bad == UINT64_MAX && !is_numbered_frame(frame, next, length_for(next))) {
        first_bad = next;
      }
      ++next;
    });
    if (popped > 0) {
      waiter.ring(port.node_bell);
      continue;
    }
    if (!waiter.wait(
            region.header().switch_bell, [&] { return !port.to_switch.empty(); }, kTenSecondsNs)) {
      break;  // a lost wake-up or a dead child: no frame for 10 s
    }
  }
  EXPECT_EQ(child_outcome(child), "exited 0");
  EXPECT_EQ(next, stream.frames);
  EXPECT_EQ(first_bad, UINT64_MAX) << "first wrong frame: " << first_bad;
  EXPECT_TRUE(port.to_switch.empty());
}

INSTANTIATE_TEST_SUITE_P(Policies, CrossProcessStreamTest,
                         ::testing::Values(StreamCase{"adaptive", 100'000, WaitPolicy{}},
                                           // Every wait goes to the futex and each sleep slice is
                                           // as long as the timeout, so a single lost wake-up fails
                                           // the test instead of costing a millisecond.
                                           StreamCase{"always_sleep", 20'000,
                                                      WaitPolicy{.spin_iterations = 0,
                                                                 .yield_iterations = 0,
                                                                 .max_sleep_ns = kTenSecondsNs}}),
                         [](const ::testing::TestParamInfo<StreamCase>& case_info) {
                           return std::string(case_info.param.label);
                         });

// The parent blocks in FUTEX_WAIT on switch_bell with spinning and yielding off and a 10 s sleep;
// the child waits until the parent is really asleep in the kernel (its announcement flag is set
// and /proc says 'S'), pushes a frame and rings. Only that ring can end the parent's wait early.
TEST(CrossProcessDoorbellTest, WaiterBlockedOnFutexIsWokenByRingFromAnotherProcess) {
  ShmName name("wake");
  ShmFabricRegion region = ShmFabricRegion::create(name.str(), 1);
  const pid_t parent = ::getpid();

  const pid_t child = fork_child([&] {
    ShmFabricRegion node_view = ShmFabricRegion::attach(name.str());
    Doorbell& bell = node_view.header().switch_bell;
    const std::int64_t give_up_ns = monotonic_ns() + kTenSecondsNs;
    while (bell.sleeping.load() == 0 || process_state(parent) != 'S') {
      if (monotonic_ns() > give_up_ns) return 4;
      ::sched_yield();
    }
    if (!node_view.port(0).to_switch.try_push(numbered_frame(1, 64))) return 5;
    return ring(bell) ? 0 : 6;
  });
  ASSERT_GT(child, 0);

  PortChannel& port = region.port(0);
  AdaptiveWaiter waiter(
      WaitPolicy{.spin_iterations = 0, .yield_iterations = 0, .max_sleep_ns = kTenSecondsNs});
  const std::int64_t start_ns = monotonic_ns();
  const bool woken = waiter.wait(
      region.header().switch_bell, [&] { return !port.to_switch.empty(); }, kTenSecondsNs);
  const std::int64_t waited_ns = monotonic_ns() - start_ns;

  EXPECT_EQ(child_outcome(child), "exited 0");
  EXPECT_TRUE(woken);
  EXPECT_LT(waited_ns, kTenSecondsNs / 2) << "woken by the timeout, not by ring()";
  EXPECT_EQ(waiter.stats().sleeps, 1u);
}

}  // namespace
}  // namespace ethx::shm
