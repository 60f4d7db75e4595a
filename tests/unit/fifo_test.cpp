// packet-engine/fifo.hpp: the ring-buffer FIFO the engine, the switch core and the simulator
// keep their queues in, checked against std::deque.
#include "packet-engine/fifo.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace ethx {
namespace {

TEST(Fifo, KeepsOrderThroughWrapAroundAndGrowthLikeADeque) {
  Fifo<std::uint32_t> fifo;
  std::deque<std::uint32_t> reference;
  std::uint64_t state = 99;
  std::uint32_t next = 0;
  for (int step = 0; step < 20000; ++step) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    // Pushes slightly more often than pops, so the ring wraps many times and also grows.
    if ((state >> 33) % 100 < 52 || reference.empty()) {
      fifo.push_back(next);
      reference.push_back(next);
      ++next;
    } else {
      ASSERT_EQ(fifo.front(), reference.front());
      fifo.pop_front();
      reference.pop_front();
    }
    ASSERT_EQ(fifo.size(), reference.size());
    ASSERT_EQ(fifo.empty(), reference.empty());
    if (!reference.empty()) {
      ASSERT_EQ(fifo.back(), reference.back());
      const std::size_t middle = reference.size() / 2;
      ASSERT_EQ(fifo[middle], reference[middle]);
    }
  }
  EXPECT_GT(reference.size(), 100u);
}

TEST(Fifo, PopReleasesWhatTheItemOwnedAtOnceAndClearReleasesEverything) {
  Fifo<std::shared_ptr<int>> fifo;
  const auto first = std::make_shared<int>(1);
  const auto second = std::make_shared<int>(2);
  fifo.push_back(first);
  fifo.push_back(second);
  EXPECT_EQ(first.use_count(), 2);
  fifo.pop_front();
  EXPECT_EQ(first.use_count(), 1);  // not kept alive in the popped slot
  EXPECT_EQ(*fifo.front(), 2);
  fifo.clear();
  EXPECT_TRUE(fifo.empty());
  EXPECT_EQ(second.use_count(), 1);
  fifo.push_back(std::make_shared<int>(3));  // usable after clear
  EXPECT_EQ(*fifo.front(), 3);
}

TEST(Fifo, ElementsCanBeChangedInPlaceAndSwapped) {
  Fifo<std::vector<int>> fifo;
  for (int i = 0; i < 8; ++i) fifo.push_back(std::vector<int>{i});  // fills the first array
  for (int i = 0; i < 7; ++i) fifo.pop_front();
  for (int i = 8; i < 15; ++i) fifo.push_back(std::vector<int>{i});  // full again, wrapped
  std::swap(fifo[fifo.size() - 1], fifo[fifo.size() - 2]);
  fifo.front().push_back(70);
  std::vector<int> order;
  while (!fifo.empty()) {
    order.push_back(fifo.front().front());
    fifo.pop_front();
  }
  EXPECT_EQ(order, (std::vector<int>{7, 8, 9, 10, 11, 12, 14, 13}));
}

TEST(Fifo, AppendGivesADefaultItemInPlaceEvenInAReusedSlot) {
  Fifo<std::uint32_t> plain;  // popped plain data is left in its slot: append resets it
  Fifo<std::vector<int>> owning;
  for (int round = 0; round < 20; ++round) {  // wraps around and grows
    std::uint32_t& number = plain.append();
    EXPECT_EQ(number, 0u);
    number = 7;
    std::vector<int>& values = owning.append();
    EXPECT_TRUE(values.empty());
    values.assign(3, round);
    if (round % 3 != 0) {
      plain.pop_front();
      owning.pop_front();
    }
  }
  EXPECT_EQ(plain.back(), 7u);
  EXPECT_EQ(owning.back(), (std::vector<int>{19, 19, 19}));
  EXPECT_EQ(plain.size(), owning.size());
}

}  // namespace
}  // namespace ethx
