// Scenarios of PROTOCOL.md "Matching semantics" and "Validation and report
// details" for orders already in the book: cancels, replaces, and the
// book's capacity. Command frames in, every field of every report out
// (tests/engine/scenario.h).
#include <cstdint>

#include "codec/command.h"
#include "codec/types.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/scenario.h"

namespace orderwire::engine::testing {
namespace {

using ::testing::ElementsAre;

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

}  // namespace
}  // namespace orderwire::engine::testing
