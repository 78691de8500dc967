// The lazy removal of internal::SortedLevels (sorted_levels.h "Lazy removal"):
// levels emptied deep in a side become tombstones, revived by an insert at
// their price and compacted when they outnumber live levels. Driven through
// many empties at the far end and mid-array, revivals and compactions, the
// structure must agree after every operation with a std::map per side (the
// reference): same Find, Best, size, and the same live levels from the best
// down, with no tombstone ever visible.
#include "engine/internal/sorted_levels.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <vector>

#include "codec/testing/random_commands.h"
#include "engine/internal/pool.h"
#include "gtest/gtest.h"
#include "tests/support/sanitizers.h"

namespace orderwire::engine::internal {
namespace {

using Reference = std::map<std::int64_t, std::uint32_t>;

// The walks of every live level (ExpectSame's, and WellFormed()'s) cost
// O(levels) a step: every step in the release suite; under AddressSanitizer,
// whose suite is there for memory errors (any step's), every 8th step, the
// size and the best still every step (the two tests took 52 s of it).
constexpr int kWalkEvery = ORDERWIRE_TEST_UNDER_ASAN ? 8 : 1;

void ExpectSame(const SortedLevels& levels, const Reference& reference,
                int step) {
  ASSERT_EQ(levels.size(), reference.size()) << "step " << step;
  ASSERT_EQ(levels.empty(), reference.empty()) << "step " << step;
  if (reference.empty()) return;
  ASSERT_EQ(levels.Best().key, reference.rbegin()->first) << "step " << step;
  ASSERT_EQ(levels.Best().level, reference.rbegin()->second) << "step " << step;
  if (step % kWalkEvery != 0) return;
  ASSERT_TRUE(levels.WellFormed()) << "step " << step;
  std::vector<LevelRef> walked;
  levels.ForEachFromBest([&](LevelRef ref) {
    walked.push_back(ref);
    return true;
  });
  ASSERT_EQ(walked.size(), reference.size()) << "step " << step;
  auto it = reference.rbegin();
  for (const LevelRef& ref : walked) {
    ASSERT_EQ(ref.key, it->first) << "step " << step;
    ASSERT_EQ(ref.level, it->second) << "step " << step;
    ASSERT_NE(ref.level, kNil) << "step " << step;
    ++it;
  }
}

// Keys 0..kSpan-1; each step inserts (often at a tombstone's key), erases a
// live level chosen deep, mid-array or at the best, or pops the best. The
// book grows towards 3,000 levels and shrinks towards 100 in turns of
// 10,000 steps, so tombstones pile up deep and get compacted.
TEST(SortedLevelsTest, TombstonesReviveAndCompactLikeAMap) {
  constexpr std::int64_t kSpan = 4'000;
  codec::testing::SplitMix64 rng(12);
  SortedLevels levels;
  Reference reference;
  std::vector<std::int64_t> erased;  // keys erased, candidates for revival
  std::uint32_t next_level = 0;
  std::size_t max_tombstones = 0;
  std::size_t revivals = 0;
  std::size_t compactions = 0;
  for (int step = 0; step < 100'000; ++step) {
    const std::uint64_t op = rng.Below(100);
    const std::size_t target = (step / 10'000) % 2 == 0 ? 3'000 : 100;
    if (op < 25 || reference.size() < target || reference.size() < 64) {
      std::int64_t key = static_cast<std::int64_t>(
          rng.Below(static_cast<std::uint64_t>(kSpan)));
      if (op < 25 && !erased.empty()) {
        key = erased[rng.Below(erased.size())];  // revive a tombstone
      }
      const std::size_t tombstones_before = levels.tombstones();
      const bool fresh = !reference.contains(key);
      const std::uint32_t got =
          levels.FindOrInsert(key, [&] { return next_level++; });
      if (fresh) {
        reference[key] = got;
        if (levels.tombstones() < tombstones_before) ++revivals;
      }
      ASSERT_EQ(got, reference[key]) << "step " << step;
    } else if (op < 95) {
      // Erase a live level: the deepest few, mid-array, or near the best.
      auto it = reference.begin();
      const std::uint64_t where = rng.Below(3);
      const std::size_t n = reference.size();
      const std::size_t offset = where == 0   ? rng.Below(8)
                                 : where == 1 ? rng.Below(n)
                                              : n - 1 - rng.Below(8);
      std::advance(it, static_cast<std::ptrdiff_t>(offset));
      const std::size_t tombstones_before = levels.tombstones();
      levels.Erase(it->first);
      if (levels.tombstones() + 1 < tombstones_before) ++compactions;
      if (levels.tombstones() == tombstones_before + 1) {
        // A deep removal left a tombstone and did not compact: so they do
        // not outnumber the live levels (the bound a removal at the best,
        // which does not check, may break until the next deep removal).
        ASSERT_LE(levels.tombstones(), levels.size()) << "step " << step;
      }
      erased.push_back(it->first);
      reference.erase(it);
    } else {
      levels.PopBest();
      erased.push_back(reference.rbegin()->first);
      reference.erase(std::prev(reference.end()));
    }
    max_tombstones = std::max(max_tombstones, levels.tombstones());
    if (erased.size() > 512) erased.erase(erased.begin(), erased.begin() + 256);
    ExpectSame(levels, reference, step);
    if (::testing::Test::HasFatalFailure()) return;
    // Find agrees, tombstone keys included.
    const auto probe =
        static_cast<std::int64_t>(rng.Below(static_cast<std::uint64_t>(kSpan)));
    const auto found = reference.find(probe);
    ASSERT_EQ(levels.Find(probe),
              found == reference.end() ? kNil : found->second)
        << "step " << step << " key " << probe;
  }
  // The run exercised what it is about.
  EXPECT_GT(max_tombstones, 100u);
  EXPECT_GT(revivals, 1'000u);
  EXPECT_GT(compactions, 10u);
}

// Deep inserts (more than kShiftInsertDepth below the best) take the slot of
// the nearest tombstone, shifting only the entries between, or first spread
// gaps around their position. Keys are sparse (room for gaps) over a side
// of ~450-2,400 levels; each step inserts at a random depth (mostly deep,
// sometimes at a tombstone's key, sometimes near the best), erases a live
// level deep or near the best, or pops the best. After every step the array
// must be strictly ascending with a live back entry and agree with a
// std::map: Find (the key and its neighbours), Best, size, the live levels
// from the best down.
TEST(SortedLevelsTest, DeepInsertsTakeNearbyGapsLikeAMap) {
  constexpr std::uint64_t kSpan = 200'000;
  codec::testing::SplitMix64 rng(21);
  SortedLevels levels;
  Reference reference;
  std::vector<std::int64_t> erased;
  std::uint32_t next_level = 0;
  std::size_t gaps_taken = 0;  // fresh key, a tombstone fewer, no revival
  std::size_t spreads = 0;     // an insert that added tombstones
  std::size_t plain_deep = 0;  // a deep insert that took no gap
  for (int step = 0; step < 24'000; ++step) {
    const std::uint64_t op = rng.Below(100);
    const std::size_t target = (step / 6'000) % 2 == 0 ? 2'400 : 900;
    if (op < 60 || reference.size() < target / 2 || reference.size() < 300) {
      std::int64_t key = static_cast<std::int64_t>(rng.Below(kSpan));
      if (op < 5 && !erased.empty()) {
        key = erased[rng.Below(erased.size())];  // a tombstone's key
      } else if (op < 10 && !reference.empty()) {
        // Near the best: the short shift, never a gap.
        key = reference.rbegin()->first -
              static_cast<std::int64_t>(rng.Below(40));
      }
      const bool fresh = !reference.contains(key);
      const auto depth = static_cast<std::size_t>(
          std::distance(reference.upper_bound(key), reference.end()));
      const std::size_t tombstones_before = levels.tombstones();
      const std::uint32_t got =
          levels.FindOrInsert(key, [&] { return next_level++; });
      if (fresh) {
        reference[key] = got;
        const bool revived =
            std::find(erased.begin(), erased.end(), key) != erased.end();
        if (levels.tombstones() > tombstones_before) {
          ++spreads;
        } else if (levels.tombstones() < tombstones_before && !revived) {
          ++gaps_taken;
        } else if (depth > SortedLevels::kShiftInsertDepth + 8) {
          ++plain_deep;
        }
      }
      ASSERT_EQ(got, reference[key]) << "step " << step;
      // The neighbours of the slot it went into are intact.
      for (const std::int64_t near : {key - 1, key + 1}) {
        const auto found = reference.find(near);
        ASSERT_EQ(levels.Find(near),
                  found == reference.end() ? kNil : found->second)
            << "step " << step << " key " << near;
      }
    } else if (op < 95) {
      auto it = reference.begin();
      const std::size_t n = reference.size();
      const std::size_t offset =
          rng.Below(4) != 0 ? rng.Below(n - 40) : n - 1 - rng.Below(40);
      std::advance(it, static_cast<std::ptrdiff_t>(offset));
      levels.Erase(it->first);
      erased.push_back(it->first);
      reference.erase(it);
    } else {
      levels.PopBest();
      erased.push_back(reference.rbegin()->first);
      reference.erase(std::prev(reference.end()));
    }
    if (erased.size() > 512) erased.erase(erased.begin(), erased.begin() + 256);
    ExpectSame(levels, reference, step);
    if (::testing::Test::HasFatalFailure()) return;
    const auto probe = static_cast<std::int64_t>(rng.Below(kSpan));
    const auto found = reference.find(probe);
    ASSERT_EQ(levels.Find(probe),
              found == reference.end() ? kNil : found->second)
        << "step " << step << " key " << probe;
  }
  // Both ways of a deep insert ran, and most deep inserts took a gap.
  EXPECT_GT(gaps_taken, 4'000u);
  EXPECT_GT(spreads, 50u);
  EXPECT_LT(plain_deep, gaps_taken / 10);
}

// A deep insert into a dense stretch (every key taken but its own, so no
// key room for a gap) shifts the better levels as near the top, and the
// structure stays right.
TEST(SortedLevelsTest, DeepInsertIntoDenseKeysShifts) {
  SortedLevels levels;
  Reference reference;
  std::uint32_t next_level = 0;
  for (std::int64_t key = 0; key < 2'000; ++key) {
    if (key == 1'000) continue;
    reference[key] = levels.FindOrInsert(key, [&] { return next_level++; });
  }
  reference[1'000] = levels.FindOrInsert(1'000, [&] { return next_level++; });
  EXPECT_EQ(levels.tombstones(), 0u);
  ASSERT_TRUE(levels.WellFormed());
  ExpectSame(levels, reference, 0);
  for (std::int64_t key = -1; key <= 2'000; ++key) {
    const auto found = reference.find(key);
    ASSERT_EQ(levels.Find(key), found == reference.end() ? kNil : found->second)
        << "key " << key;
  }
}

}  // namespace
}  // namespace orderwire::engine::internal
