// The order id index (engine/internal/order_index.h, DirectIdMap): ids that
// collide in the direct-mapped window go to the overflow and are still
// found, erased and reported absent exactly as a plain map says, over long
// random runs with a small window (so collisions are common), and after
// Clear.
#include "engine/internal/order_index.h"

#include <cstdint>
#include <map>
#include <vector>

#include "codec/strong.h"
#include "codec/testing/random_commands.h"
#include "engine/internal/pool.h"
#include "gtest/gtest.h"

namespace orderwire::engine::internal {
namespace {

TEST(DirectIdMap, CollidingIdsGoToTheOverflowAndAreStillFound) {
  // 16 entries at most: a window of 64 slots.
  std::vector<Order> orders(16);
  DirectIdMap map(16, IndexTable::kInitialSlots);
  orders[0].order_id = codec::OrderId(5);
  map.Insert(codec::OrderId(5), 0);
  orders[1].order_id = codec::OrderId(5 + 64);  // the same slot
  map.Insert(codec::OrderId(5 + 64), 1);
  EXPECT_EQ(map.overflow_size(), 1u);
  EXPECT_EQ(map.Find(codec::OrderId(5), orders.data()), 0u);
  EXPECT_EQ(map.Find(codec::OrderId(5 + 64), orders.data()), 1u);
  EXPECT_EQ(map.Find(codec::OrderId(5 + 128), orders.data()), kNil);
  map.Erase(codec::OrderId(5), 0);
  EXPECT_EQ(map.Find(codec::OrderId(5), orders.data()), kNil);
  EXPECT_EQ(map.Find(codec::OrderId(5 + 64), orders.data()), 1u);
  map.Erase(codec::OrderId(5 + 64), 1);
  EXPECT_EQ(map.overflow_size(), 0u);
  EXPECT_EQ(map.Find(codec::OrderId(5 + 64), orders.data()), kNil);
}

TEST(DirectIdMap, AgreesWithAMapOverARandomRunWithManyCollisions) {
  constexpr std::uint32_t kCapacity = 64;  // a window of 128 slots
  std::vector<Order> orders(kCapacity);
  std::vector<std::uint32_t> free_records;
  for (std::uint32_t i = 0; i < kCapacity; ++i) free_records.push_back(i);
  DirectIdMap map(kCapacity, IndexTable::kInitialSlots);
  std::map<std::uint64_t, std::uint32_t> expected;
  codec::testing::SplitMix64 rng(5);
  std::uint64_t next_id = 1;
  std::uint64_t most_overflow = 0;
  for (int step = 0; step < 200'000; ++step) {
    const std::uint64_t u = rng.Below(10);
    if (u < 5 && !free_records.empty()) {
      // Mostly sequential ids, sometimes a jump (a restored engine's ids).
      const std::uint64_t id =
          rng.Below(20) == 0 ? next_id + rng.Below(1000) : next_id;
      next_id = id + 1;
      const std::uint32_t index = free_records.back();
      free_records.pop_back();
      orders[index].order_id = codec::OrderId(id);
      map.Insert(codec::OrderId(id), index);
      expected[id] = index;
    } else if (u < 8 && !expected.empty()) {
      // Erase a live id, old ones included (they are the ones that collide).
      auto it = expected.begin();
      std::advance(it, static_cast<long>(rng.Below(expected.size())));
      map.Erase(codec::OrderId(it->first), it->second);
      orders[it->second].order_id = codec::OrderId(0xDEAD);
      free_records.push_back(it->second);
      expected.erase(it);
    } else {
      const std::uint64_t id = 1 + rng.Below(next_id + 10);
      const auto it = expected.find(id);
      ASSERT_EQ(map.Find(codec::OrderId(id), orders.data()),
                it == expected.end() ? kNil : it->second)
          << "id " << id << " at step " << step;
    }
    most_overflow = std::max(most_overflow, map.overflow_size());
    if (step % 50'000 == 49'999) {
      for (const auto& [id, index] : expected) {
        ASSERT_EQ(map.Find(codec::OrderId(id), orders.data()), index);
      }
    }
  }
  EXPECT_GT(most_overflow, 5u);  // the run did exercise the overflow
  map.Clear();
  for (const auto& [id, index] : expected) {
    EXPECT_EQ(map.Find(codec::OrderId(id), orders.data()), kNil);
  }
}

}  // namespace
}  // namespace orderwire::engine::internal
