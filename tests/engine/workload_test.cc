// The generators of `orderwire gen`: wl1 reproduced from its recipe, mixed
// shaped as specified, both deterministic.
#include "engine/workload.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "codec/command.h"
#include "codec/types.h"
#include "engine/engine.h"
#include "engine/report.h"
#include "gtest/gtest.h"
#include "tests/engine/scenario.h"

namespace orderwire::workload {
namespace {

using codec::Side;
using codec::TimeInForce;
using engine::testing::kBuy;
using engine::testing::kGtc;
using engine::testing::kIoc;
using engine::testing::kSell;

TEST(Wl1, FirstCommandsMatchAHandComputationOfTheRecipe) {
  // Worked out from the recipe with seed 1 (splitmix64 outputs taken mod 4,
  // mod 100 and bit by bit, as the recipe says):
  //  1: r1%4=1 mid=100001, k=19 -> GTC #1 Buy  off=16 qty=20  px=99985
  //  2: k=61, live=[1]          -> CancelByOrder #1
  //  3: r1%4=1 mid=100002, k=33 -> GTC #2 Buy  off=1  qty=80  px=100001
  //  4: r1%4=2 mid=100002, k=37 -> GTC #3 Buy  off=16 qty=20  px=99986
  //  5: r1%4=0 mid=100001, k=22 -> GTC #4 Buy  off=9  qty=40  px=99992
  //  6: r1%4=3 mid=100001, k=55 -> GTC #5 Sell off=1  qty=10  px=100002
  //  7: k=92                    -> IOC #6 Buy  qty=120 px=mid+10=100011
  //  8: k=85, live=[2,3,4,5]    -> CancelByOrder #2
  const auto commands = Generate(Workload::kWl1, 8, 1);
  ASSERT_EQ(commands.size(), 8u);
  const auto expect_limit = [&](std::size_t i, std::uint64_t id, Side side,
                                TimeInForce tif, std::int64_t price,
                                std::uint64_t quantity) {
    const codec::Command& c = commands[i];
    EXPECT_EQ(c.sequence, i + 1);
    ASSERT_EQ(c.kind, codec::Kind::kNewLimit) << i;
    EXPECT_EQ(c.account_id.value(), id) << i;
    EXPECT_EQ(c.client_order_id.value(), id) << i;
    EXPECT_EQ(c.instrument_id.value(), 1u) << i;
    EXPECT_EQ(c.side, side) << i;
    EXPECT_EQ(c.time_in_force, tif) << i;
    EXPECT_EQ(c.price.value(), price) << i;
    EXPECT_EQ(c.quantity.value(), quantity) << i;
  };
  const auto expect_cancel = [&](std::size_t i, std::uint64_t id) {
    const codec::Command& c = commands[i];
    EXPECT_EQ(c.sequence, i + 1);
    ASSERT_EQ(c.kind, codec::Kind::kCancelByOrder) << i;
    EXPECT_EQ(c.account_id.value(), id) << i;
    EXPECT_EQ(c.order_id.value(), id) << i;
  };
  expect_limit(0, 1, kBuy, kGtc, 99985, 20);
  expect_cancel(1, 1);
  expect_limit(2, 2, kBuy, kGtc, 100001, 80);
  expect_limit(3, 3, kBuy, kGtc, 99986, 20);
  expect_limit(4, 4, kBuy, kGtc, 99992, 40);
  expect_limit(5, 5, kSell, kGtc, 100002, 10);
  expect_limit(6, 6, kBuy, kIoc, 100011, 120);
  expect_cancel(7, 2);
}

TEST(Wl1, EngineOrderIdsEqualTheRecipesIds) {
  const auto commands = Generate(Workload::kWl1, 200'000, 1);
  auto engine = std::make_unique<engine::Engine>(engine::EngineConfig{});
  engine::ReportBuffer reports;
  for (const codec::Command& c : commands) {
    reports.Clear();
    (void)engine->Execute(c, reports);
    if (c.kind == codec::Kind::kNewLimit) {
      ASSERT_EQ(reports[0].kind, codec::Kind::kAccepted);
      ASSERT_EQ(reports.Get<codec::Accepted>(reports[0]).order_id,
                c.client_order_id.value());
    } else {
      // A cancel hits a live order or one that has traded away.
      ASSERT_TRUE(reports[0].kind == codec::Kind::kCancelled ||
                  (reports[0].kind == codec::Kind::kRejected &&
                   reports.Get<codec::Rejected>(reports[0]).reason ==
                       codec::RejectReason::kUnknownOrder));
    }
  }
}

TEST(Workloads, AreDeterministicAndNumberedFromOne) {
  for (const Workload w : {Workload::kMixed, Workload::kWl1}) {
    const auto a = EncodeCommands(Generate(w, 20'000, 5));
    const auto b = EncodeCommands(Generate(w, 20'000, 5));
    const auto c = EncodeCommands(Generate(w, 20'000, 6));
    EXPECT_TRUE(a == b) << Name(w);
    EXPECT_FALSE(a == c) << Name(w);
    const auto commands = Generate(w, 1000, 5);
    for (std::size_t i = 0; i < commands.size(); ++i) {
      ASSERT_EQ(commands[i].sequence, i + 1);
    }
  }
}

TEST(Workloads, NamesParseAndUnknownNamesAreErrors) {
  EXPECT_EQ(*ParseWorkload("mixed"), Workload::kMixed);
  EXPECT_EQ(*ParseWorkload("wl1"), Workload::kWl1);
  EXPECT_EQ(Name(Workload::kWl1), "wl1");
  EXPECT_FALSE(ParseWorkload("wl2").ok());
}

TEST(Mixed, HasTheSpecifiedShape) {
  constexpr std::size_t kCount = 200'000;
  const auto commands = Generate(Workload::kMixed, kCount, 1);
  std::array<std::size_t, 6> kinds{};
  std::array<std::size_t, 5> tifs{};
  auto engine = std::make_unique<engine::Engine>(engine::EngineConfig{});
  engine::ReportBuffer reports;
  std::size_t targeted = 0;
  std::size_t missed = 0;
  std::size_t self_trades = 0;
  for (const codec::Command& c : commands) {
    ++kinds[static_cast<std::size_t>(c.kind)];
    if (c.kind == codec::Kind::kNewLimit) {
      ++tifs[static_cast<std::size_t>(c.time_in_force)];
      EXPECT_GE(c.instrument_id.value(), 1u);
      EXPECT_LE(c.instrument_id.value(), 8u);
      EXPECT_GE(c.account_id.value(), 1u);
      EXPECT_LE(c.account_id.value(), 64u);
      EXPECT_GE(c.quantity.value(), 1u);
      EXPECT_LE(c.quantity.value(), 100u);
      EXPECT_LT(std::abs(c.price.value() - 100'000), 5'000);
    }
    reports.Clear();
    (void)engine->Execute(c, reports);
    const bool aimed = c.kind == codec::Kind::kCancelByOrder ||
                       c.kind == codec::Kind::kCancelByClient ||
                       c.kind == codec::Kind::kReplace;
    if (aimed) {
      ++targeted;
      if (reports[0].kind == codec::Kind::kRejected) ++missed;
    }
    for (const auto& r : reports.reports()) {
      if (r.kind == codec::Kind::kCancelled &&
          reports.Get<codec::Cancelled>(r).reason ==
              codec::CancelReason::kSelfTrade) {
        ++self_trades;
      }
    }
  }
  const auto share = [&](codec::Kind kind) {
    return static_cast<double>(kinds[static_cast<std::size_t>(kind)]) /
           static_cast<double>(kCount);
  };
  // Percentages as specified, within sampling noise (a cancel or replace
  // drawn while nothing is live becomes a NewLimit: rare).
  EXPECT_NEAR(share(codec::Kind::kNewLimit), 0.50, 0.01);
  EXPECT_NEAR(share(codec::Kind::kNewMarket), 0.02, 0.002);
  EXPECT_NEAR(share(codec::Kind::kCancelByOrder), 0.28, 0.01);
  EXPECT_NEAR(share(codec::Kind::kCancelByClient), 0.05, 0.005);
  EXPECT_NEAR(share(codec::Kind::kReplace), 0.15, 0.01);
  const double limits = static_cast<double>(kinds[1]);
  EXPECT_NEAR(static_cast<double>(tifs[1]) / limits, 0.80, 0.01);
  EXPECT_NEAR(static_cast<double>(tifs[2]) / limits, 0.15, 0.01);
  EXPECT_NEAR(static_cast<double>(tifs[3]) / limits, 0.025, 0.005);
  EXPECT_NEAR(static_cast<double>(tifs[4]) / limits, 0.025, 0.005);
  // Cancels and replaces aim at live orders, a few on purpose elsewhere.
  const double miss_rate =
      static_cast<double>(missed) / static_cast<double>(targeted);
  EXPECT_GT(miss_rate, 0.02);
  EXPECT_LT(miss_rate, 0.12);
  EXPECT_GT(self_trades, 0u);
}

}  // namespace
}  // namespace orderwire::workload
