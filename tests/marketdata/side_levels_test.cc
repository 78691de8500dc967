// marketdata::SideLevels (side_levels.h) against a std::map of the same
// keys: a ladder and a sorted vector must answer alike, and a side must
// take the form its design note gives it (a ladder while its levels are
// dense, a vector when a window would break the memory bound, a ladder
// again once they are dense).
#include "marketdata/side_levels.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/sanitizers.h"

namespace orderwire::marketdata {
namespace {

using Reference = std::map<std::int64_t, std::uint32_t, std::greater<>>;

constexpr std::int64_t kLowest = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kHighest = std::numeric_limits<std::int64_t>::max();
// A full walk of the side after every step costs O(window) under ASan.
constexpr std::uint64_t kWalkEvery = ORDERWIRE_TEST_UNDER_ASAN ? 16 : 1;

std::vector<std::pair<std::int64_t, std::uint32_t>> Walk(
    const SideLevels& side) {
  std::vector<std::pair<std::int64_t, std::uint32_t>> out;
  side.ForEachBestFirst([&](std::int64_t key, std::uint32_t level) {
    out.emplace_back(key, level);
    return true;
  });
  return out;
}

void ExpectSame(const SideLevels& side, const Reference& reference) {
  ASSERT_EQ(side.size(), reference.size());
  ASSERT_EQ(side.empty(), reference.empty());
  ASSERT_EQ(side.best(),
            reference.empty() ? SideLevels::kNil : reference.begin()->second);
  ASSERT_EQ(Walk(side), (std::vector<std::pair<std::int64_t, std::uint32_t>>(
                            reference.begin(), reference.end())));
}

class Lcg {
 public:
  explicit Lcg(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return state_ >> 33;
  }
  std::uint64_t Below(std::uint64_t n) { return Next() % n; }

 private:
  std::uint64_t state_;
};

// Random inserts and erases with keys drawn by `key_of`, checked against
// the map after every step; returns how many steps the side was a ladder.
template <typename KeyOf>
std::uint64_t RunAgainstMap(SideLevels& side, Reference& reference, Lcg& rng,
                            std::uint64_t steps, KeyOf&& key_of,
                            std::uint32_t& next_level) {
  std::uint64_t ladder_steps = 0;
  for (std::uint64_t step = 1; step <= steps; ++step) {
    const std::int64_t key = key_of();
    const auto it = reference.find(key);
    if (it != reference.end()) {
      EXPECT_EQ(side.Find(key), it->second) << key;
      side.Erase(key);
      reference.erase(it);
    } else if (!reference.empty() && rng.Below(3) == 0) {
      auto victim = reference.begin();  // erase an open level, often the best
      std::advance(victim, static_cast<std::ptrdiff_t>(rng.Below(
                               std::min<std::uint64_t>(reference.size(), 4))));
      side.Erase(victim->first);
      reference.erase(victim);
    } else {
      EXPECT_EQ(side.Find(key), SideLevels::kNil) << key;
      side.Insert(key, next_level);
      reference.emplace(key, next_level++);
    }
    ladder_steps += static_cast<std::uint64_t>(side.ladder());
    EXPECT_EQ(side.size(), reference.size());
    EXPECT_EQ(side.best(),
              reference.empty() ? SideLevels::kNil : reference.begin()->second);
    if (step % kWalkEvery == 0) {
      ExpectSame(side, reference);
      if (::testing::Test::HasFatalFailure()) return ladder_steps;
    }
  }
  ExpectSame(side, reference);
  return ladder_steps;
}

TEST(SideLevels, ADriftingDenseBookStaysALadderAndAnswersLikeAMap) {
  SideLevels side;
  Reference reference;
  Lcg rng(1);
  std::uint32_t next_level = 0;
  std::int64_t mid = 100'000;
  constexpr std::uint64_t kSteps = 60'000;
  const std::uint64_t ladder_steps = RunAgainstMap(
      side, reference, rng, kSteps,
      [&] {
        mid += static_cast<std::int64_t>(rng.Below(3)) - 1;
        return mid - static_cast<std::int64_t>(rng.Below(200));
      },
      next_level);
  // A vector only while the first few levels are sparse.
  EXPECT_GT(ladder_steps, kSteps - 100);
  EXPECT_TRUE(side.ladder());
}

TEST(SideLevels, SparseKeysMakeAVectorAndDenseOnesALadderAgain) {
  SideLevels side;
  Reference reference;
  Lcg rng(2);
  std::uint32_t next_level = 0;
  // Dense, then keys over 2^40 ticks (no window within the bound), then
  // dense again after the sparse keys are erased.
  const std::uint64_t dense = RunAgainstMap(
      side, reference, rng, 5'000,
      [&] { return static_cast<std::int64_t>(rng.Below(100)); }, next_level);
  EXPECT_GT(dense, 4'900U);
  EXPECT_TRUE(side.ladder());
  const std::uint64_t sparse = RunAgainstMap(
      side, reference, rng, 5'000,
      [&] { return static_cast<std::int64_t>(rng.Below(1ULL << 40)); },
      next_level);
  EXPECT_LT(sparse, 100U);
  EXPECT_FALSE(side.ladder());
  while (!reference.empty()) {
    side.Erase(reference.begin()->first);
    reference.erase(reference.begin());
  }
  EXPECT_TRUE(side.ladder());  // an empty side is an empty ladder
  const std::uint64_t again = RunAgainstMap(
      side, reference, rng, 5'000,
      [&] { return 7'000'000 + static_cast<std::int64_t>(rng.Below(300)); },
      next_level);
  EXPECT_GT(again, 4'900U);
  EXPECT_TRUE(side.ladder());
}

TEST(SideLevels, AVectorBecomesALadderWhenItsLevelsFillTheirRange) {
  SideLevels side;
  side.Insert(0, 0);
  side.Insert(1'000'000, 1);  // 2 levels over a million ticks: a vector
  EXPECT_FALSE(side.ladder());
  side.Erase(1'000'000);
  side.Insert(1, 2);
  EXPECT_TRUE(side.ladder());  // 2 levels over 2 ticks
  std::uint32_t level = 3;
  for (std::int64_t key = 2; key < 40; ++key) side.Insert(key, level++);
  EXPECT_TRUE(side.ladder());
  Reference reference;
  reference.emplace(0, 0);
  for (std::int64_t key = 1; key < 40; ++key) {
    reference.emplace(key, static_cast<std::uint32_t>(key + 1));
  }
  ExpectSame(side, reference);
}

TEST(SideLevels, ExtremeKeysKeepTheirOrder) {
  // Windows near either end of the int64 range must not wrap around it.
  Lcg rng(3);
  std::uint32_t next_level = 0;
  for (const std::int64_t base : {kLowest, kHighest - 99, std::int64_t{-50}}) {
    SideLevels side;
    Reference reference;
    RunAgainstMap(
        side, reference, rng, 3'000,
        [&] {
          const std::uint64_t r = rng.Below(100);
          if (r == 0) return kLowest;
          if (r == 1) return kHighest;
          return base + static_cast<std::int64_t>(rng.Below(100));
        },
        next_level);
    if (HasFatalFailure()) return;
  }
}

TEST(SideLevels, ForEachBestFirstStopsWhenTold) {
  SideLevels side;
  for (std::uint32_t key = 0; key < 10; ++key) {
    side.Insert(key, key);
  }
  std::vector<std::int64_t> seen;
  side.ForEachBestFirst([&](std::int64_t key, std::uint32_t /*level*/) {
    seen.push_back(key);
    return seen.size() < 3;
  });
  EXPECT_EQ(seen, (std::vector<std::int64_t>{9, 8, 7}));
}

TEST(SideLevels, ClearForgetsEveryLevelOfEitherForm) {
  for (const std::int64_t spread : {std::int64_t{10}, std::int64_t{1} << 40}) {
    SideLevels side;
    for (std::int64_t i = 0; i < 50; ++i) {
      side.Insert(i * spread, static_cast<std::uint32_t>(i));
    }
    EXPECT_EQ(side.ladder(), spread == 10);
    side.clear();
    EXPECT_TRUE(side.empty());
    EXPECT_EQ(side.best(), SideLevels::kNil);
    EXPECT_EQ(side.Find(0), SideLevels::kNil);
    EXPECT_TRUE(Walk(side).empty());
    side.Insert(-5, 77);
    EXPECT_EQ(side.Find(-5), 77U);
    EXPECT_EQ(side.best(), 77U);
    EXPECT_EQ(side.Find(0), SideLevels::kNil);
  }
}

}  // namespace
}  // namespace orderwire::marketdata
