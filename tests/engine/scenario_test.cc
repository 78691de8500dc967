// One scenario per rule of PROTOCOL.md "Matching semantics" and "Validation
// and report details": command frames in, every field of every report out.
#include "tests/engine/scenario.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "codec/command.h"
#include "codec/types.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "engine/internal/order_index.h"
#include "engine/report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace orderwire::engine::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

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

// ---------------------------------------------------------------------------
// Cancels.

TEST(Cancel, CancelByOrderCancelsTheLeavesQuantity) {
  Scenario s;
  s.Send(Limit(7, 1001, 42, kBuy, kGtc, 10050, 300));
  s.Send(Market(9, 77, 42, kSell, 250));
  EXPECT_THAT(s.Send(CancelOrder(7, 1)),
              ElementsAre("Cancelled #1 acct=7 coid=1001 inst=42 qty=50 "
                          "Requested"));
  EXPECT_TRUE(s.engine().Book(codec::InstrumentId(42)).empty());
  EXPECT_FALSE(
      s.engine()
          .FindOrderByClient(codec::AccountId(7), 0, codec::ClientOrderId(1001))
          .has_value());
}

TEST(Cancel, CancelByClientFindsTheAccountsLiveOrder) {
  Scenario s;
  s.Send(Limit(7, 1001, 42, kBuy, kGtc, 10050, 300));
  s.Send(Limit(8, 1001, 42, kBuy, kGtc, 10050, 100));
  EXPECT_THAT(s.Send(CancelClient(8, 1001)),
              ElementsAre("Cancelled #2 acct=8 coid=1001 inst=42 qty=100 "
                          "Requested"));
  EXPECT_EQ(
      s.engine().Book(codec::InstrumentId(42)).Best(kBuy)->quantity.value(),
      300u);
}

TEST(Cancel, UnknownOrderForAnIdNeverAssignedOrFinished) {
  Scenario s;
  EXPECT_THAT(s.Send(CancelOrder(7, 0x0102030405060708)),
              ElementsAre("Rejected acct=7 coid=0 #72623859790382856 "
                          "CancelByOrder UnknownOrder"));
  s.Send(Limit(7, 1, 1, kBuy, kGtc, 100, 10));   // #1
  s.Send(Limit(8, 1, 1, kSell, kIoc, 100, 10));  // fills #1
  EXPECT_THAT(s.Send(CancelOrder(7, 1)),
              ElementsAre("Rejected acct=7 coid=0 #1 CancelByOrder "
                          "UnknownOrder"));
  s.Send(Limit(7, 2, 1, kBuy, kGtc, 100, 10));  // #3
  s.Send(CancelOrder(7, 3));
  EXPECT_THAT(s.Send(CancelOrder(7, 3)),
              ElementsAre("Rejected acct=7 coid=0 #3 CancelByOrder "
                          "UnknownOrder"));
  // An IOC order never rests, so it is never live.
  EXPECT_THAT(s.Send(CancelOrder(8, 2)),
              ElementsAre("Rejected acct=8 coid=0 #2 CancelByOrder "
                          "UnknownOrder"));
}

TEST(Cancel, CancelByOrderOfAnotherAccountsOrderIsNotOwner) {
  Scenario s;
  s.Send(Limit(7, 1, 1, kBuy, kGtc, 100, 10));
  EXPECT_THAT(s.Send(CancelOrder(8, 1)),
              ElementsAre("Rejected acct=8 coid=0 #1 CancelByOrder "
                          "NotOwner"));
  EXPECT_TRUE(s.engine().FindOrder(codec::OrderId(1)).has_value());
}

TEST(Cancel, CancelByClientWithoutSuchLiveOrderIsUnknownOrder) {
  Scenario s;
  EXPECT_THAT(s.Send(CancelClient(7, 1001)),
              ElementsAre("Rejected acct=7 coid=1001 #0 CancelByClient "
                          "UnknownOrder"));
  s.Send(Limit(7, 1001, 1, kBuy, kGtc, 100, 10));
  // Another account's client order id is simply not found for this one.
  EXPECT_THAT(s.Send(CancelClient(8, 1001)),
              ElementsAre("Rejected acct=8 coid=1001 #0 CancelByClient "
                          "UnknownOrder"));
}

// ---------------------------------------------------------------------------
// Replace.

TEST(Replace, SizeDownAtTheSamePriceKeepsPriority) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kBuy, kGtc, 100, 10));  // #1
  s.Send(Limit(2, 1, 1, kBuy, kGtc, 100, 10));  // #2
  EXPECT_THAT(s.Send(Replace(1, 1, 11, 100, 4)),
              ElementsAre("Replaced #1 acct=1 coid=11 px=100 qty=4 kept=Yes"));
  EXPECT_EQ(
      s.engine().Book(codec::InstrumentId(1)).Best(kBuy)->quantity.value(),
      14u);
  EXPECT_THAT(
      s.Send(Limit(3, 1, 1, kSell, kIoc, 100, 1)),
      ElementsAre("Accepted #3 acct=3 coid=1 inst=1 Sell IOC px=100 qty=1",
                  "Filled #1 acct=1 coid=11 match=1 inst=1 Buy Maker px=100 "
                  "qty=1 leaves=3",
                  "Filled #3 acct=3 coid=1 match=1 inst=1 Sell Taker px=100 "
                  "qty=1 leaves=0"));
}

TEST(Replace, UnchangedPriceAndQuantityKeepsPriority) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kBuy, kGtc, 100, 10));
  s.Send(Limit(2, 1, 1, kBuy, kGtc, 100, 10));
  EXPECT_THAT(s.Send(Replace(1, 1, 1, 100, 10)),
              ElementsAre("Replaced #1 acct=1 coid=1 px=100 qty=10 kept=Yes"));
  EXPECT_EQ(
      s.engine().Book(codec::InstrumentId(1)).Best(kBuy)->quantity.value(),
      20u);
}

TEST(Replace, QuantityIncreaseLosesPriority) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kBuy, kGtc, 100, 10));  // #1
  s.Send(Limit(2, 1, 1, kBuy, kGtc, 100, 10));  // #2
  EXPECT_THAT(s.Send(Replace(1, 1, 1, 100, 12)),
              ElementsAre("Replaced #1 acct=1 coid=1 px=100 qty=12 kept=No"));
  EXPECT_EQ(
      s.engine().Book(codec::InstrumentId(1)).Best(kBuy)->quantity.value(),
      22u);
  EXPECT_THAT(
      s.Send(Limit(3, 1, 1, kSell, kIoc, 100, 1)),
      ElementsAre("Accepted #3 acct=3 coid=1 inst=1 Sell IOC px=100 qty=1",
                  "Filled #2 acct=2 coid=1 match=1 inst=1 Buy Maker px=100 "
                  "qty=1 leaves=9",
                  "Filled #3 acct=3 coid=1 match=1 inst=1 Sell Taker px=100 "
                  "qty=1 leaves=0"));
}

TEST(Replace, PriceChangeLosesPriorityEvenBackToTheSamePrice) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kSell, kGtc, 100, 10));  // #1
  s.Send(Limit(2, 1, 1, kSell, kGtc, 100, 10));  // #2
  EXPECT_THAT(s.Send(Replace(1, 1, 1, 101, 10)),
              ElementsAre("Replaced #1 acct=1 coid=1 px=101 qty=10 kept=No"));
  EXPECT_EQ(s.engine().Book(codec::InstrumentId(1)).Best(kSell)->price.value(),
            100);
  EXPECT_EQ(s.engine().Book(codec::InstrumentId(1)).level_count(kSell), 2u);
  EXPECT_THAT(s.Send(Replace(1, 1, 1, 100, 10)),
              ElementsAre("Replaced #1 acct=1 coid=1 px=100 qty=10 kept=No"));
  EXPECT_THAT(
      s.Send(Limit(3, 1, 1, kBuy, kIoc, 100, 15)),
      ElementsAre("Accepted #3 acct=3 coid=1 inst=1 Buy IOC px=100 qty=15",
                  "Filled #2 acct=2 coid=1 match=1 inst=1 Sell Maker px=100 "
                  "qty=10 leaves=0",
                  "Filled #3 acct=3 coid=1 match=1 inst=1 Buy Taker px=100 "
                  "qty=10 leaves=5",
                  "Filled #1 acct=1 coid=1 match=2 inst=1 Sell Maker px=100 "
                  "qty=5 leaves=5",
                  "Filled #3 acct=3 coid=1 match=2 inst=1 Buy Taker px=100 "
                  "qty=5 leaves=0"));
}

TEST(Replace, CrossingReplaceTradesAtOnceAsTakerAndRestsTheRemainder) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kSell, kGtc, 101, 5));  // #1
  s.Send(Limit(2, 1, 1, kSell, kGtc, 102, 5));  // #2
  s.Send(Limit(3, 1, 1, kBuy, kGtc, 100, 10));  // #3
  EXPECT_THAT(
      s.Send(Replace(3, 3, 2, 101, 12)),
      ElementsAre("Replaced #3 acct=3 coid=2 px=101 qty=12 kept=No",
                  "Filled #1 acct=1 coid=1 match=1 inst=1 Sell Maker px=101 "
                  "qty=5 leaves=0",
                  "Filled #3 acct=3 coid=2 match=1 inst=1 Buy Taker px=101 "
                  "qty=5 leaves=7"));
  const auto book = s.engine().Book(codec::InstrumentId(1));
  EXPECT_EQ(book.Best(kBuy)->price.value(), 101);
  EXPECT_EQ(book.Best(kBuy)->quantity.value(), 7u);
  EXPECT_EQ(book.Best(kSell)->price.value(), 102);
  EXPECT_EQ(
      s.engine()
          .FindOrderByClient(codec::AccountId(3), 0, codec::ClientOrderId(2))
          ->order_id.value(),
      3u);
}

TEST(Replace, CrossingReplaceThatFillsInFullFinishesTheOrder) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kBuy, kGtc, 100, 10));  // #1
  s.Send(Limit(2, 1, 1, kSell, kGtc, 105, 4));  // #2
  EXPECT_THAT(
      s.Send(Replace(2, 2, 1, 99, 4)),
      ElementsAre("Replaced #2 acct=2 coid=1 px=99 qty=4 kept=No",
                  "Filled #1 acct=1 coid=1 match=1 inst=1 Buy Maker px=100 "
                  "qty=4 leaves=6",
                  "Filled #2 acct=2 coid=1 match=1 inst=1 Sell Taker px=100 "
                  "qty=4 leaves=0"));
  EXPECT_THAT(s.Send(CancelOrder(2, 2)),
              ElementsAre("Rejected acct=2 coid=0 #2 CancelByOrder "
                          "UnknownOrder"));
  EXPECT_EQ(s.engine().live_orders(), 1u);
}

TEST(Replace, CrossingReplaceCancelsOwnRestingOrdersItMeets) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kSell, kGtc, 101, 5));  // #1 own
  s.Send(Limit(2, 1, 1, kSell, kGtc, 101, 5));  // #2 other
  s.Send(Limit(1, 2, 1, kBuy, kGtc, 100, 5));   // #3
  EXPECT_THAT(
      s.Send(Replace(1, 3, 2, 101, 5)),
      ElementsAre("Replaced #3 acct=1 coid=2 px=101 qty=5 kept=No",
                  "Cancelled #1 acct=1 coid=1 inst=1 qty=5 SelfTrade",
                  "Filled #2 acct=2 coid=1 match=1 inst=1 Sell Maker px=101 "
                  "qty=5 leaves=0",
                  "Filled #3 acct=1 coid=2 match=1 inst=1 Buy Taker px=101 "
                  "qty=5 leaves=0"));
  EXPECT_TRUE(s.engine().Book(codec::InstrumentId(1)).empty());
}

TEST(Replace, QuantityIsTheNewLeavesWhateverHasFilled) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kBuy, kGtc, 100, 100));  // #1
  s.Send(Limit(2, 1, 1, kSell, kIoc, 100, 60));  // leaves 40
  EXPECT_THAT(s.Send(Replace(1, 1, 1, 100, 30)),
              ElementsAre("Replaced #1 acct=1 coid=1 px=100 qty=30 kept=Yes"));
  EXPECT_THAT(s.Send(Replace(1, 1, 1, 100, 50)),
              ElementsAre("Replaced #1 acct=1 coid=1 px=100 qty=50 kept=No"));
  EXPECT_EQ(s.engine().FindOrder(codec::OrderId(1))->leaves_quantity.value(),
            50u);
  EXPECT_THAT(s.Send(CancelOrder(1, 1)),
              ElementsAre("Cancelled #1 acct=1 coid=1 inst=1 qty=50 "
                          "Requested"));
}

TEST(Replace, ToQuantityZeroIsInvalidQuantity) {
  Scenario s;
  s.Send(Limit(7, 1001, 1, kBuy, kGtc, 100, 10));
  EXPECT_THAT(s.Send(Replace(7, 1, 1003, 100, 0)),
              ElementsAre("Rejected acct=7 coid=1003 #1 Replace "
                          "InvalidQuantity"));
  EXPECT_THAT(s.Send(Replace(7, 1, 1003, 100, 1'000'000'001)),
              ElementsAre("Rejected acct=7 coid=1003 #1 Replace "
                          "InvalidQuantity"));
  EXPECT_EQ(s.engine().FindOrder(codec::OrderId(1))->leaves_quantity.value(),
            10u);
}

TEST(Replace, ChecksFollowTheProtocolOrder) {
  Scenario s;
  s.Send(Limit(7, 1, 1, kBuy, kPostOnly, 100, 10));  // #1
  s.Send(Limit(7, 2, 1, kBuy, kGtc, 99, 10));        // #2 holds coid 2
  s.Send(Limit(8, 1, 1, kSell, kGtc, 105, 10));      // #3
  EXPECT_THAT(s.Send(Replace(7, 99, 2, 0, 0)),
              ElementsAre("Rejected acct=7 coid=2 #99 Replace UnknownOrder"));
  EXPECT_THAT(s.Send(Replace(8, 1, 2, 0, 0)),
              ElementsAre("Rejected acct=8 coid=2 #1 Replace NotOwner"));
  EXPECT_THAT(s.Send(Replace(7, 1, 2, 0, 0)),
              ElementsAre("Rejected acct=7 coid=2 #1 Replace InvalidPrice"));
  EXPECT_THAT(s.Send(Replace(7, 1, 2, 106, 0)),
              ElementsAre("Rejected acct=7 coid=2 #1 Replace "
                          "InvalidQuantity"));
  EXPECT_THAT(s.Send(Replace(7, 1, 2, 106, 5)),
              ElementsAre("Rejected acct=7 coid=2 #1 Replace "
                          "DuplicateClientOrderId"));
  EXPECT_THAT(s.Send(Replace(7, 1, 3, 106, 5)),
              ElementsAre("Rejected acct=7 coid=3 #1 Replace WouldCross"));
  EXPECT_THAT(s.Send(Replace(7, 1, 3, 104, 5)),
              ElementsAre("Replaced #1 acct=7 coid=3 px=104 qty=5 kept=No"));
}

TEST(Replace, PostOnlyReplaceThatWouldTradeIsWouldCrossAndChangesNothing) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kSell, kGtc, 101, 10));      // #1
  s.Send(Limit(2, 1, 1, kBuy, kPostOnly, 100, 10));  // #2
  EXPECT_THAT(s.Send(Replace(2, 2, 5, 101, 10)),
              ElementsAre("Rejected acct=2 coid=5 #2 Replace WouldCross"));
  const auto order = s.engine().FindOrder(codec::OrderId(2));
  ASSERT_TRUE(order.has_value());
  EXPECT_EQ(order->price.value(), 100);
  EXPECT_EQ(order->client_order_id.value(), 1u);
  // A GoodTillCancel order at the same price would have traded instead.
  s.Send(Limit(2, 6, 1, kBuy, kGtc, 99, 10));  // #3
  EXPECT_THAT(
      s.Send(Replace(2, 3, 6, 101, 10)),
      ElementsAre("Replaced #3 acct=2 coid=6 px=101 qty=10 kept=No",
                  "Filled #1 acct=1 coid=1 match=1 inst=1 Sell Maker px=101 "
                  "qty=10 leaves=0",
                  "Filled #3 acct=2 coid=6 match=1 inst=1 Buy Taker px=101 "
                  "qty=10 leaves=0"));
}

TEST(Replace, KeepingItsOwnClientOrderIdIsAllowedAndANewIdFreesTheOld) {
  Scenario s;
  s.Send(Limit(7, 1001, 1, kBuy, kGtc, 100, 10));  // #1
  EXPECT_THAT(s.Send(Replace(7, 1, 1001, 100, 5)),
              ElementsAre("Replaced #1 acct=7 coid=1001 px=100 qty=5 "
                          "kept=Yes"));
  EXPECT_THAT(s.Send(Replace(7, 1, 1002, 100, 5)),
              ElementsAre("Replaced #1 acct=7 coid=1002 px=100 qty=5 "
                          "kept=Yes"));
  // The order is now known by its new id only; the old one is free.
  EXPECT_THAT(s.Send(CancelClient(7, 1001)),
              ElementsAre("Rejected acct=7 coid=1001 #0 CancelByClient "
                          "UnknownOrder"));
  EXPECT_THAT(s.Send(Limit(7, 1001, 1, kBuy, kGtc, 99, 1)),
              ElementsAre("Accepted #2 acct=7 coid=1001 inst=1 Buy GTC px=99 "
                          "qty=1"));
  EXPECT_THAT(s.Send(CancelClient(7, 1002)),
              ElementsAre("Cancelled #1 acct=7 coid=1002 inst=1 qty=5 "
                          "Requested"));
}

TEST(Replace, OfAFinishedOrNeverRestingOrderIsUnknownOrder) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kBuy, kIoc, 100, 10));  // #1: never rests
  EXPECT_THAT(s.Send(Replace(1, 1, 2, 100, 10)),
              ElementsAre("Rejected acct=1 coid=2 #1 Replace UnknownOrder"));
  s.Send(Market(1, 3, 1, kBuy, 10));  // #2: never rests
  EXPECT_THAT(s.Send(Replace(1, 2, 4, 100, 10)),
              ElementsAre("Rejected acct=1 coid=4 #2 Replace UnknownOrder"));
}

// ---------------------------------------------------------------------------
// Capacity.

TEST(Capacity, BookFullAtTheConfiguredNumberOfLiveOrders) {
  EngineConfig config;
  config.max_live_orders = 2;
  Scenario s(config);
  s.Send(Limit(1, 1, 1, kBuy, kGtc, 100, 10));   // #1
  s.Send(Limit(1, 2, 2, kSell, kGtc, 200, 10));  // #2 (other book: global)
  EXPECT_THAT(s.Send(Limit(2, 1, 1, kBuy, kGtc, 99, 10)),
              ElementsAre("Rejected acct=2 coid=1 #0 NewLimit BookFull"));
  EXPECT_THAT(s.Send(Limit(2, 1, 1, kBuy, kPostOnly, 99, 10)),
              ElementsAre("Rejected acct=2 coid=1 #0 NewLimit BookFull"));
  // Even one that would fill in full on arrival: it might have rested.
  EXPECT_THAT(s.Send(Limit(2, 1, 1, kSell, kGtc, 100, 10)),
              ElementsAre("Rejected acct=2 coid=1 #0 NewLimit BookFull"));
  // Orders that never rest are not limited.
  EXPECT_THAT(
      s.Send(Limit(2, 2, 1, kSell, kIoc, 100, 4)),
      ElementsAre("Accepted #3 acct=2 coid=2 inst=1 Sell IOC px=100 qty=4",
                  "Filled #1 acct=1 coid=1 match=1 inst=1 Buy Maker px=100 "
                  "qty=4 leaves=6",
                  "Filled #3 acct=2 coid=2 match=1 inst=1 Sell Taker px=100 "
                  "qty=4 leaves=0"));
  // Other checks come first.
  EXPECT_THAT(s.Send(Limit(1, 1, 1, kBuy, kGtc, 99, 10)),
              ElementsAre("Rejected acct=1 coid=1 #0 NewLimit "
                          "DuplicateClientOrderId"));
  EXPECT_THAT(s.Send(Limit(2, 3, 1, kSell, kPostOnly, 50, 10)),
              ElementsAre("Rejected acct=2 coid=3 #0 NewLimit WouldCross"));
  // A replace moves an order without needing room.
  EXPECT_THAT(s.Send(Replace(1, 1, 1, 98, 20)),
              ElementsAre("Replaced #1 acct=1 coid=1 px=98 qty=20 kept=No"));
  // Room again after a cancel.
  s.Send(CancelOrder(1, 2));
  EXPECT_THAT(s.Send(Limit(2, 4, 1, kBuy, kGtc, 99, 10)),
              ElementsAre("Accepted #4 acct=2 coid=4 inst=1 Buy GTC px=99 "
                          "qty=10"));
}

// ---------------------------------------------------------------------------
// Ownership: an order belongs to its account and to the owner (the service's
// session) whose command entered it. Owners 1 and 2 below are two sessions
// trading for the same account 7.

constexpr OwnerTag kSessionA = 1;
constexpr OwnerTag kSessionB = 2;

TEST(Ownership, CancelByOrderOfAnotherSessionsOrderOfTheSameAccountIsNotOwner) {
  Scenario s;
  s.Send(Limit(7, 1001, 1, kBuy, kGtc, 100, 10), kSessionA);  // #1
  EXPECT_THAT(s.Send(CancelOrder(7, 1), kSessionB),
              ElementsAre("Rejected acct=7 coid=0 #1 CancelByOrder "
                          "NotOwner"));
  EXPECT_THAT(s.Owners(), ElementsAre(kSessionB));
  ASSERT_TRUE(s.engine().FindOrder(codec::OrderId(1)).has_value());
  EXPECT_EQ(s.engine().FindOrder(codec::OrderId(1))->leaves_quantity.value(),
            10u);
  // Its own session still may.
  EXPECT_THAT(s.Send(CancelOrder(7, 1), kSessionA),
              ElementsAre("Cancelled #1 acct=7 coid=1001 inst=1 qty=10 "
                          "Requested"));
  EXPECT_THAT(s.Owners(), ElementsAre(kSessionA));
}

TEST(Ownership, ReplaceOfAnotherSessionsOrderOfTheSameAccountIsNotOwner) {
  Scenario s;
  s.Send(Limit(7, 1001, 1, kBuy, kGtc, 100, 10), kSessionA);  // #1
  EXPECT_THAT(s.Send(Replace(7, 1, 1002, 101, 5), kSessionB),
              ElementsAre("Rejected acct=7 coid=1002 #1 Replace NotOwner"));
  EXPECT_THAT(s.Owners(), ElementsAre(kSessionB));
  // Nothing changed: price, quantity and client order id are the old ones.
  const auto order = s.engine().FindOrder(codec::OrderId(1));
  ASSERT_TRUE(order.has_value());
  EXPECT_EQ(order->price.value(), 100);
  EXPECT_EQ(order->leaves_quantity.value(), 10u);
  EXPECT_EQ(order->client_order_id.value(), 1001u);
  EXPECT_THAT(s.Send(Replace(7, 1, 1002, 101, 5), kSessionA),
              ElementsAre("Replaced #1 acct=7 coid=1002 px=101 qty=5 "
                          "kept=No"));
  // The other account is still NotOwner, whatever the session.
  EXPECT_THAT(s.Send(Replace(8, 1, 1003, 101, 5), kSessionA),
              ElementsAre("Rejected acct=8 coid=1003 #1 Replace NotOwner"));
}

TEST(Ownership,
     CancelByClientFromAnotherSessionIsUnknownOrderAndTheOrderStays) {
  Scenario s;
  s.Send(Limit(7, 1001, 1, kBuy, kGtc, 100, 10), kSessionA);  // #1
  EXPECT_THAT(s.Send(CancelClient(7, 1001), kSessionB),
              ElementsAre("Rejected acct=7 coid=1001 #0 CancelByClient "
                          "UnknownOrder"));
  EXPECT_THAT(s.Owners(), ElementsAre(kSessionB));
  ASSERT_TRUE(s.engine().FindOrder(codec::OrderId(1)).has_value());
  EXPECT_EQ(s.engine().live_orders(), 1u);
  EXPECT_FALSE(s.engine()
                   .FindOrderByClient(codec::AccountId(7), kSessionB,
                                      codec::ClientOrderId(1001))
                   .has_value());
  EXPECT_EQ(s.engine()
                .FindOrderByClient(codec::AccountId(7), kSessionA,
                                   codec::ClientOrderId(1001))
                ->order_id.value(),
            1u);
}

TEST(Ownership, TwoSessionsHoldTheSameClientOrderIdAndEachCancelsItsOwn) {
  Scenario s;
  EXPECT_THAT(s.Send(Limit(7, 1001, 1, kBuy, kGtc, 100, 10), kSessionA),
              ElementsAre("Accepted #1 acct=7 coid=1001 inst=1 Buy GTC px=100 "
                          "qty=10"));
  EXPECT_THAT(s.Send(Limit(7, 1001, 1, kBuy, kGtc, 99, 20), kSessionB),
              ElementsAre("Accepted #2 acct=7 coid=1001 inst=1 Buy GTC px=99 "
                          "qty=20"));
  EXPECT_EQ(s.engine()
                .FindOrderByClient(codec::AccountId(7), kSessionA,
                                   codec::ClientOrderId(1001))
                ->order_id.value(),
            1u);
  EXPECT_EQ(s.engine()
                .FindOrderByClient(codec::AccountId(7), kSessionB,
                                   codec::ClientOrderId(1001))
                ->order_id.value(),
            2u);
  // B first (the later order), then A: each finds its own.
  EXPECT_THAT(s.Send(CancelClient(7, 1001), kSessionB),
              ElementsAre("Cancelled #2 acct=7 coid=1001 inst=1 qty=20 "
                          "Requested"));
  EXPECT_THAT(s.Owners(), ElementsAre(kSessionB));
  EXPECT_EQ(s.engine()
                .FindOrderByClient(codec::AccountId(7), kSessionA,
                                   codec::ClientOrderId(1001))
                ->order_id.value(),
            1u);
  EXPECT_THAT(s.Send(CancelClient(7, 1001), kSessionB),
              ElementsAre("Rejected acct=7 coid=1001 #0 CancelByClient "
                          "UnknownOrder"));
  EXPECT_THAT(s.Send(CancelClient(7, 1001), kSessionA),
              ElementsAre("Cancelled #1 acct=7 coid=1001 inst=1 qty=10 "
                          "Requested"));
  EXPECT_THAT(s.Owners(), ElementsAre(kSessionA));
  EXPECT_EQ(s.engine().live_orders(), 0u);
}

TEST(Ownership, DuplicateClientOrderIdOnlyWithinASession) {
  Scenario s;
  s.Send(Limit(7, 1001, 1, kBuy, kGtc, 100, 10), kSessionA);  // #1
  EXPECT_THAT(s.Send(Limit(7, 1001, 1, kSell, kGtc, 200, 10), kSessionA),
              ElementsAre("Rejected acct=7 coid=1001 #0 NewLimit "
                          "DuplicateClientOrderId"));
  EXPECT_THAT(s.Owners(), ElementsAre(kSessionA));
  EXPECT_THAT(s.Send(Market(7, 1001, 1, kSell, 1), kSessionA),
              ElementsAre("Rejected acct=7 coid=1001 #0 NewMarket "
                          "DuplicateClientOrderId"));
  EXPECT_THAT(s.Send(Limit(7, 1001, 1, kSell, kGtc, 200, 10), kSessionB),
              ElementsAre("Accepted #2 acct=7 coid=1001 inst=1 Sell GTC "
                          "px=200 qty=10"));
  // Owner 0 (one owner, `orderwire match`) is a session like any other.
  EXPECT_THAT(s.Send(Limit(7, 1001, 1, kSell, kGtc, 201, 10), 0),
              ElementsAre("Accepted #3 acct=7 coid=1001 inst=1 Sell GTC "
                          "px=201 qty=10"));
  EXPECT_THAT(s.Send(Limit(7, 1001, 1, kSell, kGtc, 202, 10), 0),
              ElementsAre("Rejected acct=7 coid=1001 #0 NewLimit "
                          "DuplicateClientOrderId"));
}

TEST(Ownership, ReplaceToAnotherSessionsClientOrderIdIsAllowedToItsOwnIsNot) {
  Scenario s;
  s.Send(Limit(7, 1001, 1, kBuy, kGtc, 100, 10), kSessionA);  // #1
  s.Send(Limit(7, 2002, 1, kBuy, kGtc, 99, 10), kSessionB);   // #2
  s.Send(Limit(7, 3003, 1, kBuy, kGtc, 98, 10), kSessionB);   // #3
  // B's #3 to 1001, which only A holds: allowed.
  EXPECT_THAT(s.Send(Replace(7, 3, 1001, 98, 5), kSessionB),
              ElementsAre("Replaced #3 acct=7 coid=1001 px=98 qty=5 "
                          "kept=Yes"));
  EXPECT_EQ(s.engine()
                .FindOrderByClient(codec::AccountId(7), kSessionA,
                                   codec::ClientOrderId(1001))
                ->order_id.value(),
            1u);
  EXPECT_EQ(s.engine()
                .FindOrderByClient(codec::AccountId(7), kSessionB,
                                   codec::ClientOrderId(1001))
                ->order_id.value(),
            3u);
  EXPECT_FALSE(s.engine()
                   .FindOrderByClient(codec::AccountId(7), kSessionB,
                                      codec::ClientOrderId(3003))
                   .has_value());
  // B's #3 to 2002, which B's own #2 holds: rejected, nothing changes.
  EXPECT_THAT(s.Send(Replace(7, 3, 2002, 98, 4), kSessionB),
              ElementsAre("Rejected acct=7 coid=2002 #3 Replace "
                          "DuplicateClientOrderId"));
  EXPECT_THAT(s.Owners(), ElementsAre(kSessionB));
  EXPECT_EQ(s.engine().FindOrder(codec::OrderId(3))->client_order_id.value(),
            1001u);
  EXPECT_EQ(s.engine().FindOrder(codec::OrderId(3))->leaves_quantity.value(),
            5u);
  // A's #1 to 2002 (B's): allowed.
  EXPECT_THAT(s.Send(Replace(7, 1, 2002, 100, 10), kSessionA),
              ElementsAre("Replaced #1 acct=7 coid=2002 px=100 qty=10 "
                          "kept=Yes"));
  EXPECT_EQ(s.engine()
                .FindOrderByClient(codec::AccountId(7), kSessionA,
                                   codec::ClientOrderId(2002))
                ->order_id.value(),
            1u);
  EXPECT_EQ(s.engine()
                .FindOrderByClient(codec::AccountId(7), kSessionB,
                                   codec::ClientOrderId(2002))
                ->order_id.value(),
            2u);
}

TEST(Ownership, EachReportGoesToTheOwnerOfTheOrderItConcerns) {
  Scenario s;
  // Makers of two sessions; account 7 trades on both A and B.
  s.Send(Limit(7, 1, 1, kSell, kGtc, 100, 5), kSessionA);  // #1
  s.Send(Limit(8, 1, 1, kSell, kGtc, 100, 5), kSessionB);  // #2
  s.Send(Limit(9, 1, 1, kSell, kGtc, 101, 5), 3);          // #3
  // A taker of account 7 on session 4: #1 is its own account's, so it is
  // self-trade cancelled (a report for A, its owner), then it fills against
  // #2 (maker's Filled for B, taker's for 4) and #3 (for 3 and 4), and its
  // IOC remainder is cancelled (for 4).
  EXPECT_THAT(
      s.Send(Limit(7, 2, 1, kBuy, kIoc, 101, 12), 4),
      ElementsAre(
          "Accepted #4 acct=7 coid=2 inst=1 Buy IOC px=101 qty=12",
          "Cancelled #1 acct=7 coid=1 inst=1 qty=5 SelfTrade",
          "Filled #2 acct=8 coid=1 match=1 inst=1 Sell Maker px=100 qty=5 "
          "leaves=0",
          "Filled #4 acct=7 coid=2 match=1 inst=1 Buy Taker px=100 qty=5 "
          "leaves=7",
          "Filled #3 acct=9 coid=1 match=2 inst=1 Sell Maker px=101 qty=5 "
          "leaves=0",
          "Filled #4 acct=7 coid=2 match=2 inst=1 Buy Taker px=101 qty=5 "
          "leaves=2",
          "Cancelled #4 acct=7 coid=2 inst=1 qty=2 ImmediateOrCancel"));
  EXPECT_THAT(s.Owners(),
              ElementsAre(4u, kSessionA, kSessionB, 4u, 3u, 4u, 4u));
  // Rejected: the command's owner.
  EXPECT_THAT(s.Send(Limit(7, 3, 1, kBuy, kGtc, 0, 1), 5),
              ElementsAre("Rejected acct=7 coid=3 #0 NewLimit InvalidPrice"));
  EXPECT_THAT(s.Owners(), ElementsAre(5u));
  EXPECT_THAT(s.SendUnauthorized(CancelOrder(7, 1), 6),
              ElementsAre("Rejected acct=7 coid=0 #1 CancelByOrder "
                          "Unauthorized"));
  EXPECT_THAT(s.Owners(), ElementsAre(6u));
  // FillOrKill killed, market remainder: the taker's owner.
  s.Send(Limit(8, 2, 1, kBuy, kGtc, 90, 5), kSessionB);  // #5
  EXPECT_THAT(
      s.Send(Limit(7, 4, 1, kSell, kFok, 90, 6), kSessionA),
      ElementsAre("Accepted #6 acct=7 coid=4 inst=1 Sell FOK px=90 "
                  "qty=6",
                  "Cancelled #6 acct=7 coid=4 inst=1 qty=6 FillOrKill"));
  EXPECT_THAT(s.Owners(), ElementsAre(kSessionA, kSessionA));
  EXPECT_THAT(
      s.Send(Market(7, 5, 1, kSell, 7), kSessionA),
      ElementsAre(
          "Accepted #7 acct=7 coid=5 inst=1 Sell IOC px=0 qty=7",
          "Filled #5 acct=8 coid=2 match=3 inst=1 Buy Maker px=90 qty=5 "
          "leaves=0",
          "Filled #7 acct=7 coid=5 match=3 inst=1 Sell Taker px=90 qty=5 "
          "leaves=2",
          "Cancelled #7 acct=7 coid=5 inst=1 qty=2 NoLiquidity"));
  EXPECT_THAT(s.Owners(),
              ElementsAre(kSessionA, kSessionB, kSessionA, kSessionA));
  // A crossing Replace: Replaced and the taker's Filled for the replacing
  // (owning) session, the maker's Filled for the maker's.
  s.Send(Limit(8, 3, 1, kSell, kGtc, 110, 5), kSessionB);  // #8
  s.Send(Limit(7, 6, 1, kBuy, kGtc, 100, 5), kSessionA);   // #9
  EXPECT_THAT(
      s.Send(Replace(7, 9, 6, 110, 5), kSessionA),
      ElementsAre("Replaced #9 acct=7 coid=6 px=110 qty=5 kept=No",
                  "Filled #8 acct=8 coid=3 match=4 inst=1 Sell Maker px=110 "
                  "qty=5 leaves=0",
                  "Filled #9 acct=7 coid=6 match=4 inst=1 Buy Taker px=110 "
                  "qty=5 leaves=0"));
  EXPECT_THAT(s.Owners(), ElementsAre(kSessionA, kSessionB, kSessionA));
}

TEST(Ownership, OrderInfoCarriesTheOwner) {
  Scenario s;
  s.Send(Limit(7, 1, 1, kBuy, kGtc, 100, 10), kSessionA);    // #1
  s.Send(Limit(7, 1, 1, kBuy, kGtc, 99, 10), kSessionB);     // #2
  s.Send(Limit(7, 2, 1, kBuy, kGtc, 98, 10), 0xFFFF'FFFFu);  // #3
  EXPECT_EQ(s.engine().FindOrder(codec::OrderId(1))->owner, kSessionA);
  EXPECT_EQ(s.engine().FindOrder(codec::OrderId(2))->owner, kSessionB);
  EXPECT_EQ(s.engine().FindOrder(codec::OrderId(3))->owner, 0xFFFF'FFFFu);
  EXPECT_EQ(s.engine()
                .FindOrderByClient(codec::AccountId(7), kSessionB,
                                   codec::ClientOrderId(1))
                ->owner,
            kSessionB);
  EXPECT_EQ(s.engine()
                .FindOrderByClient(codec::AccountId(7), 0xFFFF'FFFFu,
                                   codec::ClientOrderId(2))
                ->order_id.value(),
            3u);
  // A replaced order keeps its owner, wherever it moves.
  s.Send(Replace(7, 1, 5, 97, 10), kSessionA);
  EXPECT_EQ(s.engine().FindOrder(codec::OrderId(1))->owner, kSessionA);
  std::vector<std::pair<std::uint64_t, OwnerTag>> seen;
  s.engine().ForEachLiveOrder([&](const OrderInfo& order) {
    seen.emplace_back(order.order_id.value(), order.owner);
  });
  EXPECT_THAT(seen,
              ElementsAre(std::pair<std::uint64_t, OwnerTag>{2, kSessionB},
                          std::pair<std::uint64_t, OwnerTag>{3, 0xFFFF'FFFFu},
                          std::pair<std::uint64_t, OwnerTag>{1, kSessionA}));
}

// Two owners whose client keys (same account, same client order id) share
// the 32-bit tag of their index slots: only the owner comparison in the
// record tells them apart.
TEST(Ownership, ClientKeysThatShareAHashTagAreToldApartByTheOwner) {
  constexpr std::uint64_t kAccount = 7;
  constexpr std::uint64_t kCoid = 1001;
  const auto tag = [&](OwnerTag owner) {
    return static_cast<std::uint32_t>(
        internal::HashClientKey(codec::AccountId(kAccount), owner,
                                codec::ClientOrderId(kCoid)) >>
        32);
  };
  // The owner is part of the hash.
  EXPECT_NE(internal::HashClientKey(codec::AccountId(kAccount), 1,
                                    codec::ClientOrderId(kCoid)),
            internal::HashClientKey(codec::AccountId(kAccount), 2,
                                    codec::ClientOrderId(kCoid)));
  // A birthday search over owners for two that collide on the tag.
  absl::flat_hash_map<std::uint32_t, OwnerTag> first_of_tag;
  OwnerTag a = 0;
  OwnerTag b = 0;
  for (OwnerTag owner = 1; owner < 4'000'000; ++owner) {
    const auto [it, inserted] = first_of_tag.emplace(tag(owner), owner);
    if (!inserted) {
      a = it->second;
      b = owner;
      break;
    }
  }
  ASSERT_NE(b, 0u) << "no tag collision found";
  Scenario s;
  s.Send(Limit(kAccount, kCoid, 1, kBuy, kGtc, 100, 10), a);  // #1
  EXPECT_FALSE(s.engine()
                   .FindOrderByClient(codec::AccountId(kAccount), b,
                                      codec::ClientOrderId(kCoid))
                   .has_value());
  EXPECT_THAT(s.Send(CancelClient(kAccount, kCoid), b),
              ElementsAre("Rejected acct=7 coid=1001 #0 CancelByClient "
                          "UnknownOrder"));
  EXPECT_THAT(s.Send(Limit(kAccount, kCoid, 1, kBuy, kGtc, 99, 10), b),
              ElementsAre("Accepted #2 acct=7 coid=1001 inst=1 Buy GTC px=99 "
                          "qty=10"));
  EXPECT_EQ(s.engine()
                .FindOrderByClient(codec::AccountId(kAccount), a,
                                   codec::ClientOrderId(kCoid))
                ->order_id.value(),
            1u);
  EXPECT_EQ(s.engine()
                .FindOrderByClient(codec::AccountId(kAccount), b,
                                   codec::ClientOrderId(kCoid))
                ->order_id.value(),
            2u);
  EXPECT_THAT(s.Send(CancelClient(kAccount, kCoid), a),
              ElementsAre("Cancelled #1 acct=7 coid=1001 inst=1 qty=10 "
                          "Requested"));
  EXPECT_EQ(s.engine()
                .FindOrderByClient(codec::AccountId(kAccount), b,
                                   codec::ClientOrderId(kCoid))
                ->order_id.value(),
            2u);
}

// ---------------------------------------------------------------------------
// The service's entry point, and the engine's other surfaces.

TEST(Unauthorized, RejectedWithTheFieldsOfEachCommandKind) {
  Scenario s;
  s.Send(Limit(7, 1001, 1, kBuy, kGtc, 100, 10));  // #1
  EXPECT_THAT(s.SendUnauthorized(Limit(9, 5, 1, kSell, kGtc, 100, 10)),
              ElementsAre("Rejected acct=9 coid=5 #0 NewLimit Unauthorized"));
  EXPECT_THAT(s.SendUnauthorized(Market(9, 6, 1, kSell, 10)),
              ElementsAre("Rejected acct=9 coid=6 #0 NewMarket "
                          "Unauthorized"));
  EXPECT_THAT(s.SendUnauthorized(CancelOrder(7, 1)),
              ElementsAre("Rejected acct=7 coid=0 #1 CancelByOrder "
                          "Unauthorized"));
  EXPECT_THAT(s.SendUnauthorized(CancelClient(7, 1001)),
              ElementsAre("Rejected acct=7 coid=1001 #0 CancelByClient "
                          "Unauthorized"));
  EXPECT_THAT(s.SendUnauthorized(Replace(7, 1, 1002, 101, 5)),
              ElementsAre("Rejected acct=7 coid=1002 #1 Replace "
                          "Unauthorized"));
  // Nothing changed and no id was consumed.
  EXPECT_EQ(s.engine().FindOrder(codec::OrderId(1))->leaves_quantity.value(),
            10u);
  EXPECT_THAT(s.Send(Limit(9, 5, 1, kBuy, kGtc, 90, 1)),
              ElementsAre("Accepted #2 acct=9 coid=5 inst=1 Buy GTC px=90 "
                          "qty=1"));
}

TEST(Engine, ANonCommandKindIsRefusedAndChangesNothing) {
  Scenario s;
  codec::Command report_kind = Limit(1, 1, 1, kBuy, kGtc, 100, 10);
  report_kind.kind = codec::Kind::kAccepted;
  ReportBuffer out;
  EXPECT_EQ(s.engine().Execute(report_kind, out), ExecuteStatus::kNotACommand);
  EXPECT_EQ(s.engine().RejectUnauthorized(report_kind, 0, out),
            ExecuteStatus::kNotACommand);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(s.engine().next_order_id().value(), 1u);
}

TEST(BookView, BestAndDepthGiveTotalQuantityAndOrderCountPerLevel) {
  Scenario s;
  s.Send(Limit(1, 1, 3, kBuy, kGtc, 100, 10));
  s.Send(Limit(2, 1, 3, kBuy, kGtc, 100, 5));
  s.Send(Limit(3, 1, 3, kBuy, kGtc, 98, 7));
  s.Send(Limit(4, 1, 3, kBuy, kGtc, 99, 1));
  s.Send(Limit(5, 1, 3, kSell, kGtc, 103, 2));
  s.Send(Limit(6, 1, 3, kSell, kGtc, 101, 4));
  const auto book = s.engine().Book(codec::InstrumentId(3));
  EXPECT_FALSE(book.empty());
  EXPECT_EQ(book.instrument_id().value(), 3u);
  EXPECT_EQ(book.level_count(kBuy), 3u);
  EXPECT_EQ(book.level_count(kSell), 2u);
  LevelInfo levels[5];
  ASSERT_EQ(book.Depth(kBuy, std::span<LevelInfo>(levels, 2)), 2u);
  EXPECT_EQ(levels[0].price.value(), 100);
  EXPECT_EQ(levels[0].quantity.value(), 15u);
  EXPECT_EQ(levels[0].order_count, 2u);
  EXPECT_EQ(levels[1].price.value(), 99);
  EXPECT_EQ(levels[1].quantity.value(), 1u);
  ASSERT_EQ(book.Depth(kSell, levels), 2u);
  EXPECT_EQ(levels[0].price.value(), 101);
  EXPECT_EQ(levels[1].price.value(), 103);
  EXPECT_EQ(levels[1].order_count, 1u);
  EXPECT_EQ(book.Best(kSell)->quantity.value(), 4u);
  EXPECT_TRUE(s.engine().Book(codec::InstrumentId(4)).empty());
  EXPECT_TRUE(s.engine().Book(codec::InstrumentId(0)).empty());
  EXPECT_EQ(s.engine().Book(codec::InstrumentId(5000)).level_count(kBuy), 0u);
  EXPECT_FALSE(
      s.engine().Book(codec::InstrumentId(5000)).Best(kBuy).has_value());
}

TEST(Engine, FindsLiveOrdersByBothKeysAndListsThemInBookOrder) {
  Scenario s;
  s.Send(Limit(1, 11, 1, kBuy, kGtc, 100, 10));
  s.Send(Limit(2, 22, 1, kBuy, kGtc, 101, 5));
  s.Send(Limit(3, 33, 1, kSell, kPostOnly, 105, 7));
  const auto by_id = s.engine().FindOrder(codec::OrderId(3));
  ASSERT_TRUE(by_id.has_value());
  EXPECT_EQ(by_id->account_id.value(), 3u);
  EXPECT_EQ(by_id->client_order_id.value(), 33u);
  EXPECT_EQ(by_id->time_in_force, kPostOnly);
  EXPECT_EQ(by_id->side, kSell);
  EXPECT_EQ(
      s.engine()
          .FindOrderByClient(codec::AccountId(2), 0, codec::ClientOrderId(22))
          ->order_id.value(),
      2u);
  EXPECT_FALSE(
      s.engine()
          .FindOrderByClient(codec::AccountId(2), 0, codec::ClientOrderId(11))
          .has_value());
  std::vector<std::uint64_t> ids;
  s.engine().ForEachLiveOrder(
      [&](const OrderInfo& order) { ids.push_back(order.order_id.value()); });
  EXPECT_THAT(ids, ElementsAre(2, 1, 3));
}

TEST(Engine, ResetReturnsToTheStateOfANewEngine) {
  Scenario s;
  s.Send(Limit(1, 1, 1, kBuy, kGtc, 100, 10));
  s.Send(Limit(2, 1, 1, kSell, kIoc, 100, 3));
  s.engine().Reset();
  EXPECT_EQ(s.engine().live_orders(), 0u);
  EXPECT_TRUE(s.engine().Book(codec::InstrumentId(1)).empty());
  EXPECT_TRUE(s.engine().CheckInvariants().ok());
  EXPECT_THAT(s.Send(Limit(1, 1, 1, kBuy, kGtc, 100, 10)),
              ElementsAre("Accepted #1 acct=1 coid=1 inst=1 Buy GTC px=100 "
                          "qty=10"));
  EXPECT_EQ(s.engine().next_match_id(), 1u);
}

TEST(ReportBuffer, NumbersFramesAcrossClearAndGrowsPastItsReservation) {
  ReportBuffer buffer(16);
  for (std::uint64_t i = 0; i < 100; ++i) {
    buffer.Append(codec::Cancelled{.order_id = i,
                                   .account_id = 1,
                                   .client_order_id = 2,
                                   .instrument_id = 3,
                                   .cancelled_quantity = 4,
                                   .reason = codec::CancelReason::kRequested},
                  static_cast<OwnerTag>(i));
  }
  ASSERT_EQ(buffer.size(), 100u);
  EXPECT_EQ(buffer.frames().size(), 100 * codec::kFrameSize<codec::Cancelled>);
  EXPECT_EQ(buffer.Get<codec::Cancelled>(buffer[99]).order_id, 99u);
  EXPECT_EQ(buffer[99].owner, 99u);
  EXPECT_EQ(buffer[7].owner, 7u);
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(buffer.frame(99).data()), 100u);
  buffer.Clear();
  EXPECT_TRUE(buffer.empty());
  buffer.Append(codec::Replaced{.order_id = 1,
                                .account_id = 1,
                                .client_order_id = 1,
                                .price = 1,
                                .quantity = 1,
                                .priority_kept = codec::PriorityKept::kYes},
                0xFFFF'FFFFu);
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(buffer.frame(0).data()), 101u);
  EXPECT_EQ(buffer[0].owner, 0xFFFF'FFFFu);
  EXPECT_EQ(buffer.Get<codec::Replaced>(buffer[0]).priority_kept,
            codec::PriorityKept::kYes);
}

TEST(ReportBuffer, ReadsFieldsFromTheFramesItWrote) {
  ReportBuffer buffer(16);
  const codec::Filled filled{.order_id = 11,
                             .account_id = 12,
                             .client_order_id = 13,
                             .match_id = 14,
                             .instrument_id = 15,
                             .side = codec::Side::kSell,
                             .liquidity = codec::Liquidity::kTaker,
                             .price = -16,
                             .quantity = 17,
                             .leaves_quantity = 18};
  buffer.Append(
      codec::Accepted{.order_id = 1,
                      .account_id = 2,
                      .client_order_id = 3,
                      .instrument_id = 4,
                      .side = codec::Side::kBuy,
                      .time_in_force = codec::TimeInForce::kGoodTillCancel,
                      .price = 5,
                      .quantity = 6},
      0);
  buffer.Append(filled, 5);
  ASSERT_EQ(buffer.size(), 2u);
  EXPECT_EQ(buffer[1].kind, codec::Kind::kFilled);
  EXPECT_EQ(buffer[1].frame_size, codec::kFrameSize<codec::Filled>);
  const codec::Filled read = buffer.Get<codec::Filled>(buffer[1]);
  EXPECT_EQ(std::memcmp(&read, &filled, sizeof(filled)), 0)
      << "the model decoded from the frame differs from the one appended";
  EXPECT_EQ(buffer.View<codec::Filled>(buffer[1]).Get<&codec::Filled::price>(),
            -16);
  EXPECT_EQ(buffer.View<codec::Filled>(buffer[1]).sequence(), 2u);
  EXPECT_EQ(buffer.frame(buffer[1]).data(), buffer.frame(1).data());
  // Reading a report as another kind is a broken precondition: it aborts
  // with both kinds named rather than returning some other report's bytes.
  EXPECT_DEATH((void)buffer.Get<codec::Filled>(buffer[0]),
               "a report of kind Accepted read as Filled");
}

}  // namespace
}  // namespace orderwire::engine::testing
