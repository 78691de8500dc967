// One scenario per rule of PROTOCOL.md "Matching semantics" and "Validation
// and report details": command frames in, every field of every report out.
// Here: new orders, their validation, matching and self-trade prevention;
// cancels, replaces and capacity are in scenario_cancel_replace_test.cc,
// ownership and the engine's other surfaces in scenario_ownership_test.cc.
#include "tests/engine/scenario.h"

#include <cstdint>
#include <limits>

#include "codec/command.h"
#include "codec/types.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace orderwire::engine::testing {
namespace {

using ::testing::ElementsAre;

// ---------------------------------------------------------------------------
// New orders: acceptance and ids.

TEST(NewOrder, GoodTillCancelIsAcceptedWithOrderIdOneAndRests) {
  Scenario s;
  EXPECT_THAT(s.Send(Limit(7, 1001, 42, kBuy, kGtc, 10050, 300)),
              ElementsAre("Accepted #1 acct=7 coid=1001 inst=42 Buy GTC "
                          "px=10050 qty=300"));
  const auto best = s.engine().Book(codec::InstrumentId(42)).Best(kBuy);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->price.value(), 10050);
  EXPECT_EQ(best->quantity.value(), 300u);
  EXPECT_EQ(best->order_count, 1u);
}

TEST(NewOrder, OrderIdsCountUpFromOneAndRejectsConsumeNone) {
  Scenario s;
  EXPECT_THAT(s.Send(Limit(1, 1, 1, kBuy, kGtc, 0, 10)),
              ElementsAre("Rejected acct=1 coid=1 #0 NewLimit InvalidPrice"));
  EXPECT_THAT(s.Send(Limit(1, 2, 1, kBuy, kGtc, 100, 10)),
              ElementsAre("Accepted #1 acct=1 coid=2 inst=1 Buy GTC px=100 "
                          "qty=10"));
  EXPECT_THAT(s.Send(Market(1, 3, 1, kBuy, 0)),
              ElementsAre("Rejected acct=1 coid=3 #0 NewMarket "
                          "InvalidQuantity"));
  EXPECT_THAT(s.Send(Limit(1, 4, 1, kBuy, kGtc, 99, 10)),
              ElementsAre("Accepted #2 acct=1 coid=4 inst=1 Buy GTC px=99 "
                          "qty=10"));
  EXPECT_EQ(s.engine().next_order_id().value(), 3u);
}

TEST(NewOrder, MatchIdsCountUpFromOneAndRejectsConsumeNone) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kSell, kGtc, 100, 10));
  EXPECT_THAT(
      s.Send(Limit(2, 1, 1, kBuy, kIoc, 100, 4)),
      ElementsAre(
          "Accepted #2 acct=2 coid=1 inst=1 Buy IOC px=100 qty=4",
          "Filled #1 acct=1 coid=1 match=1 inst=1 Sell Maker px=100 qty=4 "
          "leaves=6",
          "Filled #2 acct=2 coid=1 match=1 inst=1 Buy Taker px=100 qty=4 "
          "leaves=0"));
  s.Send(Limit(2, 2, 1, kBuy, kFok, 100, 1'000));  // killed: no trade
  s.Send(Limit(2, 3, 1, kBuy, kIoc, 100, 0));      // rejected
  EXPECT_THAT(
      s.Send(Limit(3, 1, 1, kBuy, kIoc, 100, 1)),
      ElementsAre(
          "Accepted #4 acct=3 coid=1 inst=1 Buy IOC px=100 qty=1",
          "Filled #1 acct=1 coid=1 match=2 inst=1 Sell Maker px=100 qty=1 "
          "leaves=5",
          "Filled #4 acct=3 coid=1 match=2 inst=1 Buy Taker px=100 qty=1 "
          "leaves=0"));
}

// ---------------------------------------------------------------------------
// Validation of new orders: every reason, and the order of the checks.

TEST(Validation, UnknownInstrumentOutsideTheConfiguredRange) {
  Scenario s;
  EXPECT_THAT(s.Send(Limit(1, 1, 0, kBuy, kGtc, 100, 1)),
              ElementsAre("Rejected acct=1 coid=1 #0 NewLimit "
                          "UnknownInstrument"));
  EXPECT_THAT(s.Send(Limit(1, 1, 1025, kBuy, kGtc, 100, 1)),
              ElementsAre("Rejected acct=1 coid=1 #0 NewLimit "
                          "UnknownInstrument"));
  EXPECT_THAT(s.Send(Market(1, 1, 4'000'000'000u, kBuy, 1)),
              ElementsAre("Rejected acct=1 coid=1 #0 NewMarket "
                          "UnknownInstrument"));
  EXPECT_THAT(s.Send(Limit(1, 1, 1024, kBuy, kGtc, 100, 1)),
              ElementsAre("Accepted #1 acct=1 coid=1 inst=1024 Buy GTC "
                          "px=100 qty=1"));
}

TEST(Validation, InvalidSide) {
  Scenario s;
  EXPECT_THAT(s.Send(Limit(1, 1, 1, static_cast<Side>(0), kGtc, 100, 1)),
              ElementsAre("Rejected acct=1 coid=1 #0 NewLimit InvalidSide"));
  EXPECT_THAT(s.Send(Market(1, 2, 1, static_cast<Side>(3), 1)),
              ElementsAre("Rejected acct=1 coid=2 #0 NewMarket InvalidSide"));
}

TEST(Validation, InvalidTimeInForce) {
  Scenario s;
  EXPECT_THAT(
      s.Send(Limit(1, 1, 1, kBuy, static_cast<TimeInForce>(0), 100, 1)),
      ElementsAre("Rejected acct=1 coid=1 #0 NewLimit InvalidTimeInForce"));
  EXPECT_THAT(
      s.Send(Limit(1, 1, 1, kBuy, static_cast<TimeInForce>(5), 100, 1)),
      ElementsAre("Rejected acct=1 coid=1 #0 NewLimit InvalidTimeInForce"));
}

TEST(Validation, InvalidPriceOutsideTheBand) {
  Scenario s;
  for (const std::int64_t price :
       {std::int64_t{0}, std::int64_t{-5}, std::int64_t{1'000'000'001},
        std::numeric_limits<std::int64_t>::min()}) {
    EXPECT_THAT(s.Send(Limit(7, 1002, 42, kSell, kIoc, price, 1)),
                ElementsAre("Rejected acct=7 coid=1002 #0 NewLimit "
                            "InvalidPrice"))
        << price;
  }
  EXPECT_THAT(s.Send(Limit(7, 1, 42, kSell, kGtc, 1'000'000'000, 1)),
              ElementsAre("Accepted #1 acct=7 coid=1 inst=42 Sell GTC "
                          "px=1000000000 qty=1"));
  EXPECT_THAT(s.Send(Limit(7, 2, 42, kBuy, kGtc, 1, 1)),
              ElementsAre("Accepted #2 acct=7 coid=2 inst=42 Buy GTC px=1 "
                          "qty=1"));
}

TEST(Validation, InvalidQuantityOutsideTheRange) {
  Scenario s;
  EXPECT_THAT(s.Send(Limit(1, 1, 1, kBuy, kGtc, 100, 0)),
              ElementsAre("Rejected acct=1 coid=1 #0 NewLimit "
                          "InvalidQuantity"));
  EXPECT_THAT(s.Send(Limit(1, 1, 1, kBuy, kGtc, 100, 1'000'000'001)),
              ElementsAre("Rejected acct=1 coid=1 #0 NewLimit "
                          "InvalidQuantity"));
  EXPECT_THAT(s.Send(Market(1, 1, 1, kBuy, 1'000'000'001)),
              ElementsAre("Rejected acct=1 coid=1 #0 NewMarket "
                          "InvalidQuantity"));
  EXPECT_THAT(s.Send(Limit(1, 1, 1, kBuy, kGtc, 100, 1'000'000'000)),
              ElementsAre("Accepted #1 acct=1 coid=1 inst=1 Buy GTC px=100 "
                          "qty=1000000000"));
}

TEST(Validation, DuplicateClientOrderIdAmongTheAccountsLiveOrders) {
  Scenario s;
  s.Send(Limit(7, 1001, 1, kBuy, kGtc, 100, 10));
  EXPECT_THAT(s.Send(Limit(7, 1001, 2, kSell, kGtc, 200, 10)),
              ElementsAre("Rejected acct=7 coid=1001 #0 NewLimit "
                          "DuplicateClientOrderId"));
  EXPECT_THAT(s.Send(Market(7, 1001, 1, kSell, 1)),
              ElementsAre("Rejected acct=7 coid=1001 #0 NewMarket "
                          "DuplicateClientOrderId"));
  // Another account may use the same id.
  EXPECT_THAT(s.Send(Limit(8, 1001, 1, kBuy, kGtc, 100, 10)),
              ElementsAre("Accepted #2 acct=8 coid=1001 inst=1 Buy GTC "
                          "px=100 qty=10"));
  // Once the order is finished its id is free again.
  s.Send(CancelClient(7, 1001));
  EXPECT_THAT(s.Send(Limit(7, 1001, 1, kBuy, kGtc, 100, 10)),
              ElementsAre("Accepted #3 acct=7 coid=1001 inst=1 Buy GTC "
                          "px=100 qty=10"));
}

TEST(Validation, AnOrderThatNeverRestedLeavesItsClientOrderIdFree) {
  Scenario s;
  s.Send(Limit(1, 5, 1, kBuy, kIoc, 100, 10));  // nothing to trade
  EXPECT_THAT(s.Send(Limit(1, 5, 1, kBuy, kGtc, 100, 10)),
              ElementsAre("Accepted #2 acct=1 coid=5 inst=1 Buy GTC px=100 "
                          "qty=10"));
}

TEST(Validation, NewLimitChecksFollowTheProtocolOrder) {
  Scenario s;
  s.Send(Limit(1, 9, 1, kSell, kGtc, 100, 10));  // #1, holds coid 9
  const Side bad_side = static_cast<Side>(9);
  const TimeInForce bad_tif = static_cast<TimeInForce>(9);
  // Every field wrong: each fix reveals the next reason in the list.
  EXPECT_THAT(s.Send(Limit(1, 9, 0, bad_side, bad_tif, 0, 0)),
              ElementsAre("Rejected acct=1 coid=9 #0 NewLimit "
                          "UnknownInstrument"));
  EXPECT_THAT(s.Send(Limit(1, 9, 1, bad_side, bad_tif, 0, 0)),
              ElementsAre("Rejected acct=1 coid=9 #0 NewLimit InvalidSide"));
  EXPECT_THAT(s.Send(Limit(1, 9, 1, kBuy, bad_tif, 0, 0)),
              ElementsAre("Rejected acct=1 coid=9 #0 NewLimit "
                          "InvalidTimeInForce"));
  EXPECT_THAT(s.Send(Limit(1, 9, 1, kBuy, kPostOnly, 0, 0)),
              ElementsAre("Rejected acct=1 coid=9 #0 NewLimit InvalidPrice"));
  EXPECT_THAT(s.Send(Limit(1, 9, 1, kBuy, kPostOnly, 100, 0)),
              ElementsAre("Rejected acct=1 coid=9 #0 NewLimit "
                          "InvalidQuantity"));
  EXPECT_THAT(s.Send(Limit(1, 9, 1, kBuy, kPostOnly, 100, 5)),
              ElementsAre("Rejected acct=1 coid=9 #0 NewLimit "
                          "DuplicateClientOrderId"));
  EXPECT_THAT(s.Send(Limit(1, 10, 1, kBuy, kPostOnly, 100, 5)),
              ElementsAre("Rejected acct=1 coid=10 #0 NewLimit WouldCross"));
}

TEST(Validation, NewMarketChecksFollowTheProtocolOrder) {
  Scenario s;
  s.Send(Limit(1, 9, 1, kSell, kGtc, 100, 10));
  const Side bad_side = static_cast<Side>(0);
  EXPECT_THAT(s.Send(Market(1, 9, 2000, bad_side, 0)),
              ElementsAre("Rejected acct=1 coid=9 #0 NewMarket "
                          "UnknownInstrument"));
  EXPECT_THAT(s.Send(Market(1, 9, 1, bad_side, 0)),
              ElementsAre("Rejected acct=1 coid=9 #0 NewMarket InvalidSide"));
  EXPECT_THAT(s.Send(Market(1, 9, 1, kBuy, 0)),
              ElementsAre("Rejected acct=1 coid=9 #0 NewMarket "
                          "InvalidQuantity"));
  EXPECT_THAT(s.Send(Market(1, 9, 1, kBuy, 1)),
              ElementsAre("Rejected acct=1 coid=9 #0 NewMarket "
                          "DuplicateClientOrderId"));
}

TEST(Validation, ConfiguredLimitsReplaceTheDefaults) {
  EngineConfig config;
  config.min_instrument = 100;
  config.max_instrument = 199;
  config.min_price = -50;
  config.max_price = 50;
  config.min_quantity = 10;
  config.max_quantity = 20;
  Scenario s(config);
  EXPECT_THAT(s.Send(Limit(1, 1, 99, kBuy, kGtc, 0, 10)),
              ElementsAre("Rejected acct=1 coid=1 #0 NewLimit "
                          "UnknownInstrument"));
  EXPECT_THAT(s.Send(Limit(1, 1, 200, kBuy, kGtc, 0, 10)),
              ElementsAre("Rejected acct=1 coid=1 #0 NewLimit "
                          "UnknownInstrument"));
  EXPECT_THAT(s.Send(Limit(1, 1, 100, kBuy, kGtc, -51, 10)),
              ElementsAre("Rejected acct=1 coid=1 #0 NewLimit InvalidPrice"));
  EXPECT_THAT(s.Send(Limit(1, 1, 100, kBuy, kGtc, 51, 10)),
              ElementsAre("Rejected acct=1 coid=1 #0 NewLimit InvalidPrice"));
  EXPECT_THAT(s.Send(Limit(1, 1, 100, kBuy, kGtc, -5, 9)),
              ElementsAre("Rejected acct=1 coid=1 #0 NewLimit "
                          "InvalidQuantity"));
  EXPECT_THAT(s.Send(Limit(1, 1, 100, kBuy, kGtc, -5, 21)),
              ElementsAre("Rejected acct=1 coid=1 #0 NewLimit "
                          "InvalidQuantity"));
  EXPECT_THAT(s.Send(Limit(1, 1, 199, kBuy, kGtc, -5, 20)),
              ElementsAre("Accepted #1 acct=1 coid=1 inst=199 Buy GTC px=-5 "
                          "qty=20"));
  // Negative prices trade like any other.
  EXPECT_THAT(
      s.Send(Limit(2, 1, 199, kSell, kIoc, -6, 10)),
      ElementsAre("Accepted #2 acct=2 coid=1 inst=199 Sell IOC px=-6 qty=10",
                  "Filled #1 acct=1 coid=1 match=1 inst=199 Buy Maker px=-5 "
                  "qty=10 leaves=10",
                  "Filled #2 acct=2 coid=1 match=1 inst=199 Sell Taker px=-5 "
                  "qty=10 leaves=0"));
}

// ---------------------------------------------------------------------------
// Matching: price-time priority, fills, report order.

TEST(Matching, TradesAtTheRestingPriceMakerFirstThenTaker) {
  Scenario s;
  s.Send(Limit(7, 1001, 42, kBuy, kGtc, 10050, 300));
  EXPECT_THAT(
      s.Send(Market(9, 77, 42, kSell, 250)),
      ElementsAre("Accepted #2 acct=9 coid=77 inst=42 Sell IOC px=0 qty=250",
                  "Filled #1 acct=7 coid=1001 match=1 inst=42 Buy Maker "
                  "px=10050 qty=250 leaves=50",
                  "Filled #2 acct=9 coid=77 match=1 inst=42 Sell Taker "
                  "px=10050 qty=250 leaves=0"));
  // A limit that crosses deeper still trades at the resting price.
  EXPECT_THAT(s.Send(Limit(9, 78, 42, kSell, kGtc, 10000, 50)),
              ElementsAre("Accepted #3 acct=9 coid=78 inst=42 Sell GTC "
                          "px=10000 qty=50",
                          "Filled #1 acct=7 coid=1001 match=2 inst=42 Buy "
                          "Maker px=10050 qty=50 leaves=0",
                          "Filled #3 acct=9 coid=78 match=2 inst=42 Sell "
                          "Taker px=10050 qty=50 leaves=0"));
  EXPECT_TRUE(s.engine().Book(codec::InstrumentId(42)).empty());
}

TEST(Matching, PartialFillsAcrossLevelsInPriceThenTimeOrder) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kSell, kGtc, 102, 10));  // #1
  s.Send(Limit(2, 1, 1, kSell, kGtc, 101, 10));  // #2
  s.Send(Limit(3, 1, 1, kSell, kGtc, 101, 10));  // #3, behind #2
  s.Send(Limit(4, 1, 1, kSell, kGtc, 103, 10));  // #4, beyond the limit
  EXPECT_THAT(
      s.Send(Limit(5, 1, 1, kBuy, kGtc, 102, 35)),
      ElementsAre("Accepted #5 acct=5 coid=1 inst=1 Buy GTC px=102 qty=35",
                  "Filled #2 acct=2 coid=1 match=1 inst=1 Sell Maker px=101 "
                  "qty=10 leaves=0",
                  "Filled #5 acct=5 coid=1 match=1 inst=1 Buy Taker px=101 "
                  "qty=10 leaves=25",
                  "Filled #3 acct=3 coid=1 match=2 inst=1 Sell Maker px=101 "
                  "qty=10 leaves=0",
                  "Filled #5 acct=5 coid=1 match=2 inst=1 Buy Taker px=101 "
                  "qty=10 leaves=15",
                  "Filled #1 acct=1 coid=1 match=3 inst=1 Sell Maker px=102 "
                  "qty=10 leaves=0",
                  "Filled #5 acct=5 coid=1 match=3 inst=1 Buy Taker px=102 "
                  "qty=10 leaves=5"));
  // The remainder rests at its limit; the level beyond stays.
  const auto book = s.engine().Book(codec::InstrumentId(1));
  ASSERT_TRUE(book.Best(kBuy).has_value());
  EXPECT_EQ(book.Best(kBuy)->price.value(), 102);
  EXPECT_EQ(book.Best(kBuy)->quantity.value(), 5u);
  EXPECT_EQ(book.Best(kSell)->price.value(), 103);
  EXPECT_EQ(s.engine().FindOrder(codec::OrderId(5))->leaves_quantity.value(),
            5u);
}

TEST(Matching, EarlierOrderAtAPriceFillsFirstAndPartially) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kBuy, kGtc, 100, 10));  // #1
  s.Send(Limit(2, 1, 1, kBuy, kGtc, 100, 10));  // #2
  EXPECT_THAT(
      s.Send(Limit(3, 1, 1, kSell, kIoc, 100, 4)),
      ElementsAre("Accepted #3 acct=3 coid=1 inst=1 Sell IOC px=100 qty=4",
                  "Filled #1 acct=1 coid=1 match=1 inst=1 Buy Maker px=100 "
                  "qty=4 leaves=6",
                  "Filled #3 acct=3 coid=1 match=1 inst=1 Sell Taker px=100 "
                  "qty=4 leaves=0"));
  EXPECT_THAT(
      s.Send(Limit(3, 2, 1, kSell, kIoc, 100, 8)),
      ElementsAre("Accepted #4 acct=3 coid=2 inst=1 Sell IOC px=100 qty=8",
                  "Filled #1 acct=1 coid=1 match=2 inst=1 Buy Maker px=100 "
                  "qty=6 leaves=0",
                  "Filled #4 acct=3 coid=2 match=2 inst=1 Sell Taker px=100 "
                  "qty=6 leaves=2",
                  "Filled #2 acct=2 coid=1 match=3 inst=1 Buy Maker px=100 "
                  "qty=2 leaves=8",
                  "Filled #4 acct=3 coid=2 match=3 inst=1 Sell Taker px=100 "
                  "qty=2 leaves=0"));
}

TEST(Matching, BooksOfDifferentInstrumentsNeverMeet) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kSell, kGtc, 100, 10));
  EXPECT_THAT(s.Send(Limit(2, 1, 2, kBuy, kGtc, 200, 10)),
              ElementsAre("Accepted #2 acct=2 coid=1 inst=2 Buy GTC px=200 "
                          "qty=10"));
  EXPECT_EQ(s.engine().Book(codec::InstrumentId(1)).Best(kSell)->price.value(),
            100);
  EXPECT_EQ(s.engine().Book(codec::InstrumentId(2)).Best(kBuy)->price.value(),
            200);
}

TEST(Matching, ImmediateOrCancelCancelsItsUnfilledRemainder) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kSell, kGtc, 100, 10));
  EXPECT_THAT(
      s.Send(Limit(2, 1, 1, kBuy, kIoc, 101, 25)),
      ElementsAre("Accepted #2 acct=2 coid=1 inst=1 Buy IOC px=101 qty=25",
                  "Filled #1 acct=1 coid=1 match=1 inst=1 Sell Maker px=100 "
                  "qty=10 leaves=0",
                  "Filled #2 acct=2 coid=1 match=1 inst=1 Buy Taker px=100 "
                  "qty=10 leaves=15",
                  "Cancelled #2 acct=2 coid=1 inst=1 qty=15 "
                  "ImmediateOrCancel"));
  EXPECT_THAT(s.Send(Limit(2, 2, 1, kBuy, kIoc, 101, 5)),
              ElementsAre("Accepted #3 acct=2 coid=2 inst=1 Buy IOC px=101 "
                          "qty=5",
                          "Cancelled #3 acct=2 coid=2 inst=1 qty=5 "
                          "ImmediateOrCancel"));
  EXPECT_TRUE(s.engine().Book(codec::InstrumentId(1)).empty());
  EXPECT_EQ(s.engine().live_orders(), 0u);
}

TEST(Matching, FillOrKillFillsInFullAcrossLevels) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kSell, kGtc, 100, 10));
  s.Send(Limit(2, 1, 1, kSell, kGtc, 101, 10));
  EXPECT_THAT(
      s.Send(Limit(3, 1, 1, kBuy, kFok, 101, 15)),
      ElementsAre("Accepted #3 acct=3 coid=1 inst=1 Buy FOK px=101 qty=15",
                  "Filled #1 acct=1 coid=1 match=1 inst=1 Sell Maker px=100 "
                  "qty=10 leaves=0",
                  "Filled #3 acct=3 coid=1 match=1 inst=1 Buy Taker px=100 "
                  "qty=10 leaves=5",
                  "Filled #2 acct=2 coid=1 match=2 inst=1 Sell Maker px=101 "
                  "qty=5 leaves=5",
                  "Filled #3 acct=3 coid=1 match=2 inst=1 Buy Taker px=101 "
                  "qty=5 leaves=0"));
}

TEST(Matching, FillOrKillThatCannotFillIsCancelledWholeAndNothingTrades) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kSell, kGtc, 100, 10));
  s.Send(Limit(2, 1, 1, kSell, kGtc, 102, 10));  // beyond the limit
  EXPECT_THAT(
      s.Send(Limit(3, 1, 1, kBuy, kFok, 101, 11)),
      ElementsAre("Accepted #3 acct=3 coid=1 inst=1 Buy FOK px=101 qty=11",
                  "Cancelled #3 acct=3 coid=1 inst=1 qty=11 FillOrKill"));
  EXPECT_EQ(s.engine().FindOrder(codec::OrderId(1))->leaves_quantity.value(),
            10u);
  EXPECT_EQ(s.engine().FindOrder(codec::OrderId(2))->leaves_quantity.value(),
            10u);
  EXPECT_EQ(s.engine().next_match_id(), 1u);
}

TEST(Matching, FillOrKillCountsOnlyOtherAccountsRestingQuantity) {
  Scenario s;
  s.Send(Limit(3, 50, 1, kSell, kGtc, 100, 50));  // #1: the FOK's own account
  s.Send(Limit(1, 1, 1, kSell, kGtc, 100, 50));   // #2
  // 100 lots rest, but only 50 belong to others: 60 cannot fill.
  EXPECT_THAT(
      s.Send(Limit(3, 1, 1, kBuy, kFok, 100, 60)),
      ElementsAre("Accepted #3 acct=3 coid=1 inst=1 Buy FOK px=100 qty=60",
                  "Cancelled #3 acct=3 coid=1 inst=1 qty=60 FillOrKill"));
  // The killed order cancelled nothing; 50 can fill, and the own order it
  // meets first is self-trade-cancelled on the way.
  EXPECT_THAT(
      s.Send(Limit(3, 2, 1, kBuy, kFok, 100, 50)),
      ElementsAre("Accepted #4 acct=3 coid=2 inst=1 Buy FOK px=100 qty=50",
                  "Cancelled #1 acct=3 coid=50 inst=1 qty=50 SelfTrade",
                  "Filled #2 acct=1 coid=1 match=1 inst=1 Sell Maker px=100 "
                  "qty=50 leaves=0",
                  "Filled #4 acct=3 coid=2 match=1 inst=1 Buy Taker px=100 "
                  "qty=50 leaves=0"));
}

TEST(Matching, PostOnlyRestsWhenItDoesNotCross) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kSell, kGtc, 101, 10));
  EXPECT_THAT(s.Send(Limit(2, 1, 1, kBuy, kPostOnly, 100, 10)),
              ElementsAre("Accepted #2 acct=2 coid=1 inst=1 Buy PostOnly "
                          "px=100 qty=10"));
  EXPECT_EQ(s.engine().Book(codec::InstrumentId(1)).Best(kBuy)->price.value(),
            100);
}

TEST(Matching, PostOnlyThatWouldTradeIsRejectedWouldCross) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kSell, kGtc, 101, 10));
  EXPECT_THAT(s.Send(Limit(2, 1, 1, kBuy, kPostOnly, 101, 10)),
              ElementsAre("Rejected acct=2 coid=1 #0 NewLimit WouldCross"));
  EXPECT_THAT(s.Send(Limit(2, 1, 1, kBuy, kPostOnly, 150, 10)),
              ElementsAre("Rejected acct=2 coid=1 #0 NewLimit WouldCross"));
  EXPECT_EQ(s.engine().FindOrder(codec::OrderId(1))->leaves_quantity.value(),
            10u);
  EXPECT_EQ(s.engine().next_order_id().value(), 2u);
}

TEST(Matching, PostOnlyCrossingOnlyItsOwnOrdersIsStillWouldCross) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kSell, kGtc, 101, 10));
  EXPECT_THAT(s.Send(Limit(1, 2, 1, kBuy, kPostOnly, 101, 10)),
              ElementsAre("Rejected acct=1 coid=2 #0 NewLimit WouldCross"));
  EXPECT_TRUE(s.engine().FindOrder(codec::OrderId(1)).has_value());
}

TEST(Matching, MarketOrderIsAcceptedWithPriceZeroAndImmediateOrCancel) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kBuy, kGtc, 100, 5));
  s.Send(Limit(2, 1, 1, kBuy, kGtc, 90, 5));
  EXPECT_THAT(
      s.Send(Market(3, 1, 1, kSell, 12)),
      ElementsAre("Accepted #3 acct=3 coid=1 inst=1 Sell IOC px=0 qty=12",
                  "Filled #1 acct=1 coid=1 match=1 inst=1 Buy Maker px=100 "
                  "qty=5 leaves=0",
                  "Filled #3 acct=3 coid=1 match=1 inst=1 Sell Taker px=100 "
                  "qty=5 leaves=7",
                  "Filled #2 acct=2 coid=1 match=2 inst=1 Buy Maker px=90 "
                  "qty=5 leaves=0",
                  "Filled #3 acct=3 coid=1 match=2 inst=1 Sell Taker px=90 "
                  "qty=5 leaves=2",
                  "Cancelled #3 acct=3 coid=1 inst=1 qty=2 NoLiquidity"));
}

TEST(Matching, MarketOrderOnAnEmptySideIsCancelledNoLiquidity) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kBuy, kGtc, 100, 5));  // same side: no liquidity
  EXPECT_THAT(s.Send(Market(2, 1, 1, kBuy, 7)),
              ElementsAre("Accepted #2 acct=2 coid=1 inst=1 Buy IOC px=0 "
                          "qty=7",
                          "Cancelled #2 acct=2 coid=1 inst=1 qty=7 "
                          "NoLiquidity"));
}

// ---------------------------------------------------------------------------
// Self-trade prevention.

TEST(SelfTrade, RestingOrderOfTheSameAccountIsCancelledAndMatchingGoesOn) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kSell, kGtc, 100, 10));  // #1 other
  s.Send(Limit(5, 1, 1, kSell, kGtc, 100, 10));  // #2 own, behind #1
  s.Send(Limit(2, 1, 1, kSell, kGtc, 100, 10));  // #3 other
  s.Send(Limit(5, 2, 1, kSell, kGtc, 101, 10));  // #4 own, next level
  EXPECT_THAT(
      s.Send(Limit(5, 3, 1, kBuy, kGtc, 101, 25)),
      ElementsAre("Accepted #5 acct=5 coid=3 inst=1 Buy GTC px=101 qty=25",
                  "Filled #1 acct=1 coid=1 match=1 inst=1 Sell Maker px=100 "
                  "qty=10 leaves=0",
                  "Filled #5 acct=5 coid=3 match=1 inst=1 Buy Taker px=100 "
                  "qty=10 leaves=15",
                  "Cancelled #2 acct=5 coid=1 inst=1 qty=10 SelfTrade",
                  "Filled #3 acct=2 coid=1 match=2 inst=1 Sell Maker px=100 "
                  "qty=10 leaves=0",
                  "Filled #5 acct=5 coid=3 match=2 inst=1 Buy Taker px=100 "
                  "qty=10 leaves=5",
                  "Cancelled #4 acct=5 coid=2 inst=1 qty=10 SelfTrade"));
  // The remainder rests; the self-trade cancels emptied the ask side.
  const auto book = s.engine().Book(codec::InstrumentId(1));
  EXPECT_FALSE(book.Best(kSell).has_value());
  EXPECT_EQ(book.Best(kBuy)->quantity.value(), 5u);
  EXPECT_THAT(s.Send(CancelOrder(5, 2)),
              ElementsAre("Rejected acct=5 coid=0 #2 CancelByOrder "
                          "UnknownOrder"));
}

TEST(SelfTrade, MarketOrderCancelsOwnRestingOrdersItMeets) {
  Scenario s;
  s.Send(Limit(5, 1, 1, kBuy, kGtc, 100, 10));  // #1 own
  EXPECT_THAT(s.Send(Market(5, 2, 1, kSell, 10)),
              ElementsAre("Accepted #2 acct=5 coid=2 inst=1 Sell IOC px=0 "
                          "qty=10",
                          "Cancelled #1 acct=5 coid=1 inst=1 qty=10 SelfTrade",
                          "Cancelled #2 acct=5 coid=2 inst=1 qty=10 "
                          "NoLiquidity"));
}

}  // namespace
}  // namespace orderwire::engine::testing
