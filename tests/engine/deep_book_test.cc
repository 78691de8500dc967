// The level structure on a deep book: hundreds of thousands of resting orders
// over tens of thousands of price levels per side, with inserts and cancels
// deep in the book, reprices far away, swings that sweep thousands of levels
// and a side emptied by market orders. The engine must give exactly the
// reports (bytes and owners) and the book of the same engine built on a plain
// std::map per side (internal::MapLevels, the reference), and keep its
// invariants.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "codec/command.h"
#include "codec/testing/random_commands.h"
#include "codec/types.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "engine/internal/engine_impl.h"
#include "engine/internal/map_levels.h"
#include "engine/report.h"
#include "gtest/gtest.h"
#include "tests/engine/scenario.h"

namespace orderwire::engine {

struct MapLevelsTraits {
  using Levels = internal::MapLevels;
  using Index = internal::OrderIndex;
};
template class BasicEngine<MapLevelsTraits>;

namespace testing {
namespace {

using ReferenceEngine = BasicEngine<MapLevelsTraits>;

// The commands, phase by phase (see the file comment). Order ids are
// predictable: each NewLimit/NewMarket that is accepted gets the next one,
// and every order here is accepted (valid fields, fresh client ids).
std::vector<codec::Command> DeepBookStream(std::uint64_t seed) {
  codec::testing::SplitMix64 rng(seed);
  std::vector<codec::Command> out;
  std::uint64_t coid = 1;
  std::uint64_t accepted = 0;
  constexpr std::int64_t kMid = 10'000'000;
  constexpr std::int64_t kDepth = 40'000;  // levels per side
  const auto account = [&] { return 1 + rng.Below(50); };
  const auto deep_price = [&](Side side) {
    const auto offset = static_cast<std::int64_t>(1 + rng.Below(kDepth));
    return side == kBuy ? kMid - offset : kMid + offset;
  };
  // 1. Build: 300,000 resting orders, spread over up to 40,000 levels a side.
  for (int i = 0; i < 300'000; ++i) {
    const Side side = rng.Below(2) == 0 ? kBuy : kSell;
    out.push_back(Limit(account(), coid++, 1, side, kGtc, deep_price(side),
                        1 + rng.Below(100)));
    ++accepted;
  }
  // 2. Churn deep in the book: inserts, cancels of random live-or-gone
  // orders, reprices far away.
  for (int i = 0; i < 200'000; ++i) {
    const std::uint64_t k = rng.Below(10);
    const Side side = rng.Below(2) == 0 ? kBuy : kSell;
    if (k < 4) {
      out.push_back(Limit(account(), coid++, 1, side,
                          rng.Below(5) == 0 ? kPostOnly : kGtc,
                          deep_price(side), 1 + rng.Below(100)));
      ++accepted;
    } else if (k < 8) {
      out.push_back(CancelOrder(1 + rng.Below(50), 1 + rng.Below(accepted)));
    } else {
      out.push_back(Replace(1 + rng.Below(50), 1 + rng.Below(accepted), coid++,
                            deep_price(side), 1 + rng.Below(100)));
    }
  }
  // 3. Swings: takers that sweep thousands of levels (IOC far through the
  // touch, FillOrKill, and GTCs that cross and rest on the other side).
  for (int i = 0; i < 2'000; ++i) {
    const Side side = rng.Below(2) == 0 ? kBuy : kSell;
    const auto reach = static_cast<std::int64_t>(rng.Below(kDepth / 4));
    const std::int64_t price = side == kBuy ? kMid + reach : kMid - reach;
    const std::uint64_t k = rng.Below(3);
    out.push_back(Limit(account(), coid++, 1, side,
                        k == 0 ? kIoc : (k == 1 ? kFok : kGtc), price,
                        1 + rng.Below(50'000)));
    ++accepted;
    // And refill near the middle.
    for (int j = 0; j < 20; ++j) {
      const Side refill = rng.Below(2) == 0 ? kBuy : kSell;
      const auto offset = static_cast<std::int64_t>(1 + rng.Below(200));
      out.push_back(Limit(account(), coid++, 1, refill, kGtc,
                          refill == kBuy ? kMid - offset : kMid + offset,
                          1 + rng.Below(100)));
      ++accepted;
    }
  }
  // 4. Flash crash: the bids emptied by market sells, then rebuilt far
  // below and taken again.
  for (int i = 0; i < 400; ++i) {
    out.push_back(Market(account(), coid++, 1, kSell, 100'000));
    ++accepted;
  }
  for (int i = 0; i < 20'000; ++i) {
    out.push_back(Limit(account(), coid++, 1, kBuy, kGtc,
                        1 + static_cast<std::int64_t>(rng.Below(kMid)),
                        1 + rng.Below(100)));
    ++accepted;
  }
  for (int i = 0; i < 100; ++i) {
    out.push_back(Market(account(), coid++, 1, kSell, 5'000));
  }
  return out;
}

template <typename E>
void RunInto(E& engine, std::span<const codec::Command> commands,
             std::vector<std::byte>& bytes, std::vector<OwnerTag>& owners,
             std::size_t* most_levels) {
  ReportBuffer reports;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    reports.Clear();
    (void)engine.Execute(commands[i], static_cast<OwnerTag>(i % 2), reports);
    bytes.insert(bytes.end(), reports.frames().begin(), reports.frames().end());
    for (const Report& r : reports.reports()) owners.push_back(r.owner);
    if (most_levels != nullptr && i % 1000 == 0) {
      const auto book = engine.Book(codec::InstrumentId(1));
      *most_levels =
          std::max({*most_levels, book.level_count(codec::Side::kBuy),
                    book.level_count(codec::Side::kSell)});
    }
  }
}

TEST(DeepBook, SameReportsAndBookAsAStdMapPerSide) {
  const std::vector<codec::Command> commands = DeepBookStream(11);
  auto engine = std::make_unique<Engine>(EngineConfig{});
  auto reference = std::make_unique<ReferenceEngine>(EngineConfig{});
  std::vector<std::byte> bytes;
  std::vector<std::byte> expected_bytes;
  std::vector<OwnerTag> owners;
  std::vector<OwnerTag> expected_owners;
  std::size_t most_levels = 0;
  RunInto(*engine, commands, bytes, owners, &most_levels);
  RunInto(*reference, commands, expected_bytes, expected_owners, nullptr);

  // The stream is what it claims to be: a deep book.
  EXPECT_GE(most_levels, 30'000u);
  EXPECT_TRUE(engine->CheckInvariants().ok()) << engine->CheckInvariants();
  ASSERT_EQ(bytes.size(), expected_bytes.size());
  EXPECT_TRUE(bytes == expected_bytes);
  EXPECT_TRUE(owners == expected_owners);

  std::vector<OrderInfo> live;
  std::vector<OrderInfo> expected_live;
  engine->ForEachLiveOrder([&](const OrderInfo& o) { live.push_back(o); });
  reference->ForEachLiveOrder(
      [&](const OrderInfo& o) { expected_live.push_back(o); });
  ASSERT_EQ(live.size(), expected_live.size());
  for (std::size_t i = 0; i < live.size(); ++i) {
    ASSERT_EQ(live[i].order_id, expected_live[i].order_id) << i;
    ASSERT_EQ(live[i].price, expected_live[i].price) << i;
    ASSERT_EQ(live[i].leaves_quantity, expected_live[i].leaves_quantity) << i;
  }
  for (const codec::Side side : {codec::Side::kBuy, codec::Side::kSell}) {
    std::vector<LevelInfo> depth(50'000);
    std::vector<LevelInfo> expected_depth(50'000);
    const std::size_t n =
        engine->Book(codec::InstrumentId(1)).Depth(side, depth);
    const std::size_t m =
        reference->Book(codec::InstrumentId(1)).Depth(side, expected_depth);
    ASSERT_EQ(n, m);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(depth[i].price, expected_depth[i].price) << i;
      ASSERT_EQ(depth[i].quantity, expected_depth[i].quantity) << i;
      ASSERT_EQ(depth[i].order_count, expected_depth[i].order_count) << i;
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace orderwire::engine
