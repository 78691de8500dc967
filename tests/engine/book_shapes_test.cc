// The book shapes of `orderwire gen` (deep, swings, crash, churn): each
// stream is run through a fresh engine and its shape is measured from the
// engine's own book and reports - the depth the deep book reaches, how far
// the swings walk, that a crash empties the bid side and the book refills,
// the cancel share of churn - and none of them is rejected.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "codec/command.h"
#include "codec/types.h"
#include "engine/engine.h"
#include "engine/report.h"
#include "engine/workload.h"
#include "gtest/gtest.h"

namespace orderwire::workload {
namespace {

using codec::Kind;
using codec::Side;
using codec::TimeInForce;
constexpr codec::InstrumentId kInstrument{1};
constexpr std::int64_t kStartMid = BookShapeGenerator::kStartMid;

// One command as the engine saw it.
struct Step {
  std::size_t index;  // 0-based position in the stream
  const codec::Command* command;
  const engine::ReportBuffer* reports;
  // For a cancel or replace: the live order it aims at (before it ran).
  std::optional<engine::OrderInfo> target;
};

// Runs `commands` through a fresh engine (default configuration), calling
// `on_step(step, engine)` after each; returns the number of Rejected reports.
template <typename OnStep>
std::size_t RunThroughEngine(const std::vector<codec::Command>& commands,
                             OnStep on_step) {
  auto engine = std::make_unique<engine::Engine>(engine::EngineConfig{});
  engine::ReportBuffer reports(1 << 12);
  std::size_t rejects = 0;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    const codec::Command& c = commands[i];
    std::optional<engine::OrderInfo> target;
    if (c.kind == Kind::kCancelByOrder || c.kind == Kind::kReplace) {
      target = engine->FindOrder(c.order_id);
    } else if (c.kind == Kind::kCancelByClient) {
      target = engine->FindOrderByClient(c.account_id, 0, c.client_order_id);
    }
    reports.Clear();
    (void)engine->Execute(c, reports);
    for (const engine::Report& r : reports.reports()) {
      if (r.kind == Kind::kRejected) ++rejects;
    }
    on_step(Step{i, &c, &reports, target}, *engine);
  }
  EXPECT_TRUE(engine->CheckInvariants().ok());
  return rejects;
}

double Share(std::size_t part, std::size_t whole) {
  return static_cast<double>(part) / static_cast<double>(whole);
}

std::size_t Levels(const engine::Engine& engine) {
  const auto book = engine.Book(kInstrument);
  return book.level_count(Side::kBuy) + book.level_count(Side::kSell);
}

TEST(BookShapes, NamesParseAndRoundTrip) {
  for (const Workload w : kAllWorkloads) {
    ASSERT_TRUE(ParseWorkload(Name(w)).ok()) << Name(w);
    EXPECT_EQ(*ParseWorkload(Name(w)), w);
  }
  EXPECT_EQ(Name(Workload::kDeep), "deep");
  EXPECT_EQ(Name(Workload::kSwings), "swings");
  EXPECT_EQ(Name(Workload::kCrash), "crash");
  EXPECT_EQ(Name(Workload::kChurn), "churn");
  const auto unknown = ParseWorkload("flash");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("deep, swings, crash, churn"),
            std::string_view::npos);
}

TEST(BookShapes, AreDeterministicFromTheSeed) {
  for (const Workload w : {Workload::kDeep, Workload::kSwings, Workload::kCrash,
                           Workload::kChurn}) {
    const auto a = EncodeCommands(Generate(w, 30'000, 7));
    const auto b = EncodeCommands(Generate(w, 30'000, 7));
    const auto c = EncodeCommands(Generate(w, 30'000, 8));
    EXPECT_TRUE(a == b) << Name(w);
    EXPECT_FALSE(a == c) << Name(w);
    // A prefix of a longer stream is the shorter stream.
    const auto longer = EncodeCommands(Generate(w, 40'000, 7));
    ASSERT_GE(longer.size(), a.size());
    EXPECT_TRUE(std::equal(a.begin(), a.end(), longer.begin())) << Name(w);
  }
}

TEST(BookShapes, DeepBookHoldsAQuarterMillionOrdersOverThirtyThousandLevels) {
  constexpr std::size_t kCount = 400'000;
  const auto commands = Generate(Workload::kDeep, kCount, 1);
  std::size_t peak_orders = 0;
  std::size_t peak_levels = 0;
  std::size_t least_orders_after_build = SIZE_MAX;
  std::size_t least_levels_after_build = SIZE_MAX;
  std::size_t steady_inserts = 0;
  std::size_t deep_inserts = 0;
  std::size_t steady_cancels = 0;
  std::size_t deep_cancels = 0;
  std::size_t iocs = 0;
  const auto deep = [](std::int64_t price) {
    return std::abs(price - kStartMid) > 1000;
  };
  const std::size_t rejects = RunThroughEngine(
      commands, [&](const Step& step, const engine::Engine& engine) {
        const codec::Command& c = *step.command;
        const std::size_t levels = Levels(engine);
        peak_orders = std::max<std::size_t>(peak_orders, engine.live_orders());
        peak_levels = std::max(peak_levels, levels);
        if (step.index < BookShapeGenerator::kDeepBuildOrders) {
          ASSERT_EQ(c.kind, Kind::kNewLimit);
          ASSERT_EQ(c.time_in_force, TimeInForce::kGoodTillCancel);
          return;
        }
        least_orders_after_build = std::min<std::size_t>(
            least_orders_after_build, engine.live_orders());
        least_levels_after_build = std::min(least_levels_after_build, levels);
        if (c.kind == Kind::kNewLimit &&
            c.time_in_force == TimeInForce::kGoodTillCancel) {
          ++steady_inserts;
          if (deep(c.price.value())) ++deep_inserts;
        } else if (c.kind == Kind::kNewLimit) {
          ++iocs;
          // The mid is static: takers always aim at the same touch band.
          EXPECT_EQ(std::abs(c.price.value() - kStartMid),
                    BookShapeGenerator::kDeepTouchBand);
        } else if (c.kind == Kind::kCancelByOrder) {
          ++steady_cancels;
          ASSERT_TRUE(step.target.has_value());
          if (deep(step.target->price.value())) ++deep_cancels;
        }
      });
  EXPECT_EQ(rejects, 0u);
  EXPECT_GE(peak_orders, 200'000u);
  EXPECT_GE(peak_levels, 20'000u);
  // Static: after the build it stays that deep.
  EXPECT_GE(least_orders_after_build, 200'000u);
  EXPECT_GE(least_levels_after_build, 20'000u);
  // Inserts and cancels deep in the book (over 1,000 ticks from the mid).
  const std::size_t steady = kCount - BookShapeGenerator::kDeepBuildOrders;
  EXPECT_NEAR(Share(steady_inserts, steady), 0.50, 0.01);
  EXPECT_NEAR(Share(steady_cancels, steady), 0.40, 0.01);
  EXPECT_NEAR(Share(iocs, steady), 0.10, 0.01);
  EXPECT_GT(Share(deep_inserts, steady_inserts), 0.70);
  EXPECT_GT(Share(deep_cancels, steady_cancels), 0.80);
  std::printf(
      "deep: peak %zu orders over %zu levels; after the build at "
      "least %zu orders, %zu levels\n",
      peak_orders, peak_levels, least_orders_after_build,
      least_levels_after_build);
}

TEST(BookShapes, SwingsWalkOverAQuarterAndBackSweepingManyLevels) {
  constexpr std::size_t kCount = 300'000;
  const auto commands = Generate(Workload::kSwings, kCount, 1);
  // Trade prices: the excursions and the returns.
  std::int64_t high = kStartMid;
  std::int64_t low = kStartMid;
  std::size_t returns_from_high = 0;  // back within 1% after >= +25%
  std::size_t returns_from_low = 0;   // back within 1% after <= -25%
  bool above = false;
  bool below = false;
  std::size_t wide_sweeps = 0;  // commands trading at >= 10 price levels
  std::size_t widest = 0;
  std::size_t peak_orders = 0;
  std::vector<std::int64_t> prices;
  const std::size_t rejects = RunThroughEngine(
      commands, [&](const Step& step, const engine::Engine& engine) {
        peak_orders = std::max<std::size_t>(peak_orders, engine.live_orders());
        prices.clear();
        for (const engine::Report& r : step.reports->reports()) {
          if (r.kind != Kind::kFilled) continue;
          const codec::Filled filled = step.reports->Get<codec::Filled>(r);
          if (filled.liquidity != codec::Liquidity::kTaker) continue;
          const std::int64_t p = filled.price;
          prices.push_back(p);
          high = std::max(high, p);
          low = std::min(low, p);
          if (p >= kStartMid * 125 / 100) above = true;
          if (p <= kStartMid * 75 / 100) below = true;
          if (std::abs(p - kStartMid) <= kStartMid / 100) {
            if (above) ++returns_from_high;
            if (below) ++returns_from_low;
            above = below = false;
          }
        }
        std::sort(prices.begin(), prices.end());
        const auto distinct = static_cast<std::size_t>(
            std::unique(prices.begin(), prices.end()) - prices.begin());
        widest = std::max(widest, distinct);
        if (distinct >= 10) ++wide_sweeps;
      });
  EXPECT_EQ(rejects, 0u);
  EXPECT_GE(high, kStartMid * 125 / 100);
  EXPECT_LE(high, kStartMid * 140 / 100 + 100);
  EXPECT_LE(low, kStartMid * 75 / 100);
  EXPECT_GE(low, kStartMid * 60 / 100 - 100);
  EXPECT_GE(returns_from_high, 2u);
  EXPECT_GE(returns_from_low, 2u);
  EXPECT_GE(wide_sweeps, 1'000u);
  EXPECT_GE(widest, 20u);
  // Stale orders are cancelled: the book does not grow with the distance.
  EXPECT_LT(peak_orders, 20'000u);
  std::printf(
      "swings: trades %lld..%lld, %zu/%zu returns, %zu sweeps of "
      ">= 10 levels (widest %zu), peak %zu orders\n",
      static_cast<long long>(low), static_cast<long long>(high),
      returns_from_high, returns_from_low, wide_sweeps, widest, peak_orders);
}

// One crash of the kCrash workload, as the engine's book saw it.
struct CrashEpisode {
  std::size_t start = 0;
  std::size_t length = 0;
  std::size_t bid_levels_before = 0;
  std::int64_t best_bid_before = 0;
  std::int64_t lowest_trade = INT64_MAX;
  std::size_t bid_levels_at_next = 0;  // just before the next crash
  std::int64_t best_bid_at_next = 0;
};

// Each crash emptied a deep bid side in a burst, and the book refilled
// after it; `no_liquidity` orders found nothing left to take. Prints each.
void ExpectEachCrashEmptiedTheBidsAndRefilled(
    const std::vector<CrashEpisode>& crashes, std::size_t no_liquidity) {
  for (const CrashEpisode& crash : crashes) {
    // A deep bid side, emptied in a burst (not one order, not a slow drain).
    EXPECT_GE(crash.bid_levels_before, 500u) << crash.start;
    EXPECT_GE(crash.length, 20u) << crash.start;
    EXPECT_LE(crash.length, 2'000u) << crash.start;
    EXPECT_LE(crash.lowest_trade, crash.best_bid_before - 1'000) << crash.start;
    // Then refilled, and the price back near its level before the crash.
    EXPECT_GE(crash.bid_levels_at_next, crash.bid_levels_before / 2)
        << crash.start;
    EXPECT_GE(crash.best_bid_at_next, crash.best_bid_before - 500)
        << crash.start;
  }
  // At most the last order of each burst finds nothing left to take.
  EXPECT_LE(no_liquidity, crashes.size());
  for (const CrashEpisode& crash : crashes) {
    std::printf(
        "crash at %zu: %zu bid levels (best %lld) emptied in %zu "
        "commands down to %lld; %zu levels (best %lld) before the "
        "next\n",
        crash.start, crash.bid_levels_before,
        static_cast<long long>(crash.best_bid_before), crash.length,
        static_cast<long long>(crash.lowest_trade), crash.bid_levels_at_next,
        static_cast<long long>(crash.best_bid_at_next));
  }
}

TEST(BookShapes, CrashEmptiesTheBidSideInABurstThenTheBookRefills) {
  constexpr std::uint64_t kCycle = BookShapeGenerator::kCrashCycle;
  constexpr std::uint64_t kFirst = BookShapeGenerator::kCrashFirst;
  // Two crashes, and the refill after the second up to where a third would
  // begin.
  constexpr std::size_t kCount = 2 * kCycle + kFirst;
  const auto commands = Generate(Workload::kCrash, kCount, 1);
  std::vector<CrashEpisode> crashes;
  bool in_crash = false;
  std::size_t bid_levels_before = 0;
  std::int64_t best_bid_before = 0;
  std::size_t no_liquidity = 0;
  const std::size_t rejects = RunThroughEngine(
      commands, [&](const Step& step, const engine::Engine& engine) {
        const codec::Command& c = *step.command;
        const auto book = engine.Book(kInstrument);
        const bool burst_command =
            (c.kind == Kind::kNewMarket ||
             (c.kind == Kind::kNewLimit &&
              c.time_in_force == TimeInForce::kImmediateOrCancel &&
              c.quantity.value() == 2000)) &&
            c.side == Side::kSell;
        for (const engine::Report& r : step.reports->reports()) {
          if (r.kind == Kind::kCancelled &&
              step.reports->Get<codec::Cancelled>(r).reason ==
                  codec::CancelReason::kNoLiquidity) {
            ++no_liquidity;
          }
        }
        if (step.index == kFirst || step.index == kFirst + kCycle) {
          ASSERT_TRUE(burst_command) << step.index;
          crashes.push_back(CrashEpisode{.start = step.index,
                                         .bid_levels_before = bid_levels_before,
                                         .best_bid_before = best_bid_before});
          if (crashes.size() > 1) {
            crashes[crashes.size() - 2].bid_levels_at_next = bid_levels_before;
            crashes[crashes.size() - 2].best_bid_at_next = best_bid_before;
          }
          in_crash = true;
        }
        if (in_crash && !burst_command) {
          ADD_FAILURE() << "the crash from command " << crashes.back().start
                        << " stopped at " << step.index
                        << " with the bid side not empty";
          in_crash = false;
        }
        if (in_crash) {
          CrashEpisode& crash = crashes.back();
          ++crash.length;
          for (const engine::Report& r : step.reports->reports()) {
            if (r.kind == Kind::kFilled) {
              crash.lowest_trade =
                  std::min(crash.lowest_trade,
                           step.reports->Get<codec::Filled>(r).price);
            }
          }
          if (!book.Best(Side::kBuy)) in_crash = false;  // the side is empty
        } else {
          EXPECT_FALSE(burst_command && c.kind == Kind::kNewMarket)
              << step.index;
        }
        bid_levels_before = book.level_count(Side::kBuy);
        best_bid_before =
            book.Best(Side::kBuy) ? book.Best(Side::kBuy)->price.value() : 0;
      });
  EXPECT_EQ(rejects, 0u);
  ASSERT_EQ(crashes.size(), 2u);
  EXPECT_FALSE(in_crash);  // each burst ended with the bid side empty
  crashes.back().bid_levels_at_next = bid_levels_before;
  crashes.back().best_bid_at_next = best_bid_before;
  ExpectEachCrashEmptiedTheBidsAndRefilled(crashes, no_liquidity);
}

TEST(BookShapes, ChurnIsMostlyCancelsAndReplacesOfRecentOrders) {
  constexpr std::size_t kCount = 200'000;
  const auto commands = Generate(Workload::kChurn, kCount, 1);
  // order id -> its number among the resting orders accepted so far
  absl::flat_hash_map<std::uint64_t, std::size_t> accepted_at;
  std::size_t accepted = 0;
  std::size_t cancels = 0;
  std::size_t by_client = 0;
  std::size_t replaces = 0;
  std::size_t recent = 0;  // aimed at one of the last 64 resting orders
  std::size_t peak_orders = 0;
  const std::size_t rejects = RunThroughEngine(
      commands, [&](const Step& step, const engine::Engine& engine) {
        const codec::Command& c = *step.command;
        peak_orders = std::max<std::size_t>(peak_orders, engine.live_orders());
        for (const engine::Report& r : step.reports->reports()) {
          if (r.kind != Kind::kAccepted) continue;
          const codec::Accepted a = step.reports->Get<codec::Accepted>(r);
          if (a.time_in_force == TimeInForce::kGoodTillCancel) {
            accepted_at[a.order_id] = accepted++;
          }
        }
        if (c.kind == Kind::kCancelByOrder || c.kind == Kind::kCancelByClient ||
            c.kind == Kind::kReplace) {
          ASSERT_TRUE(step.target.has_value()) << step.index;
          if (c.kind == Kind::kReplace) {
            ++replaces;
          } else {
            ++cancels;
            if (c.kind == Kind::kCancelByClient) ++by_client;
          }
          const auto it = accepted_at.find(step.target->order_id.value());
          ASSERT_NE(it, accepted_at.end());
          if (accepted - it->second <= 64) ++recent;
        }
      });
  EXPECT_EQ(rejects, 0u);
  EXPECT_GE(Share(cancels + replaces, kCount), 0.60);
  EXPECT_GE(Share(cancels, kCount), 0.25);
  EXPECT_GE(Share(replaces, kCount), 0.30);
  EXPECT_GT(by_client, cancels / 10);
  EXPECT_GE(Share(recent, cancels + replaces), 0.90);
  EXPECT_LT(peak_orders, 5'000u);
  std::printf(
      "churn: %.1f%% cancels, %.1f%% replaces, %.1f%% of them aimed "
      "at the 64 newest resting orders; peak %zu orders\n",
      100.0 * Share(cancels, kCount), 100.0 * Share(replaces, kCount),
      100.0 * Share(recent, cancels + replaces), peak_orders);
}

}  // namespace
}  // namespace orderwire::workload
