#include "switch/core/earliest_deadline.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace ethx {
namespace {

TEST(EarliestDeadline, StartsWithNoneAndFollowsTheSlotThatHeldTheMinimum) {
  EarliestDeadline deadlines;
  deadlines.resize(3);
  EXPECT_EQ(deadlines.earliest_ns(), EarliestDeadline::kNever);
  deadlines.set(0, 500);
  deadlines.set(2, 300);
  EXPECT_EQ(deadlines.earliest_ns(), 300u);
  deadlines.set(2, 900);  // the earliest moves later: the next one counts now
  EXPECT_EQ(deadlines.earliest_ns(), 500u);
  deadlines.set(0, EarliestDeadline::kNever);
  EXPECT_EQ(deadlines.earliest_ns(), 900u);
  EXPECT_EQ(deadlines.at(0), EarliestDeadline::kNever);
  EXPECT_EQ(deadlines.at(2), 900u);
}

TEST(EarliestDeadline, AgreesWithTheMinimumOfAllSlotsAcrossRandomChanges) {
  constexpr std::size_t kSlots = 33;
  EarliestDeadline deadlines;
  deadlines.resize(kSlots);
  std::vector<TimeNs> plain(kSlots, EarliestDeadline::kNever);
  std::mt19937_64 rng(7);
  for (int step = 0; step < 20'000; ++step) {
    const std::size_t slot = rng() % kSlots;
    // Mostly later (timers move on as frames are acknowledged), sometimes earlier, sometimes
    // none, and ties on purpose (a small range of times).
    const std::uint64_t draw = rng() % 10;
    const TimeNs at_ns = draw == 0 ? EarliestDeadline::kNever : rng() % 64;
    deadlines.set(slot, at_ns);
    plain[slot] = at_ns;
    // Asked at some steps only, as a switch asks between changes.
    if (rng() % 3 == 0) {
      ASSERT_EQ(deadlines.earliest_ns(), *std::min_element(plain.begin(), plain.end()))
          << "step " << step;
    }
  }
}

}  // namespace
}  // namespace ethx
