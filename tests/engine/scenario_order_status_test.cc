// One scenario per rule of docs/CONTROLS.md "Order status": a query by
// order id or client order id, the order as it rests, its executed
// quantity across fills and replaces, NotLive for what is not live, and
// another's order refused.
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

TEST(OrderStatus, ALiveOrderByIdAndByClientOrderId) {
  Scenario s;
  s.Send(Limit(7, 11, 2, kBuy, kGtc, 100, 30));  // #1
  const char* const kLive =
      "OrderStatus #1 acct=7 coid=11 inst=2 Buy Live px=100 leaves=30 "
      "executed=0";
  EXPECT_THAT(s.Send(StatusOf(7, 1, 0)), ElementsAre(kLive));
  EXPECT_THAT(s.Send(StatusOf(7, 0, 11)), ElementsAre(kLive));
  // With an order id, the client order id is not looked at.
  EXPECT_THAT(s.Send(StatusOf(7, 1, 999)), ElementsAre(kLive));
}

TEST(OrderStatus, ExecutedCountsEveryFillAcrossReplaces) {
  Scenario s;
  s.Send(Limit(7, 1, 1, kSell, kGtc, 100, 50));  // #1 rests
  s.Send(Limit(8, 2, 1, kBuy, kGtc, 100, 10));   // fills 10 of #1
  EXPECT_THAT(s.Send(StatusOf(7, 1, 0)),
              ElementsAre("OrderStatus #1 acct=7 coid=1 inst=1 Sell Live "
                          "px=100 leaves=40 executed=10"));
  // A replace that keeps priority keeps the count.
  s.Send(Replace(7, 1, 1, 100, 30));
  EXPECT_THAT(s.Send(StatusOf(7, 1, 0)),
              ElementsAre("OrderStatus #1 acct=7 coid=1 inst=1 Sell Live "
                          "px=100 leaves=30 executed=10"));
  // One that loses it and trades as it moves adds what it traded.
  s.Send(Limit(9, 3, 1, kBuy, kGtc, 95, 5));  // #3 rests at 95
  s.Send(Replace(7, 1, 4, 95, 30));           // #1 down to 95: takes 5
  EXPECT_THAT(s.Send(StatusOf(7, 0, 4)),
              ElementsAre("OrderStatus #1 acct=7 coid=4 inst=1 Sell Live "
                          "px=95 leaves=25 executed=15"));
  // A taker that rests after trading counts what it took.
  s.Send(Limit(8, 5, 1, kBuy, kGtc, 95, 40));  // takes 25, rests 15: #4
  EXPECT_THAT(s.Send(StatusOf(8, 4, 0)),
              ElementsAre("OrderStatus #4 acct=8 coid=5 inst=1 Buy Live "
                          "px=95 leaves=15 executed=25"));
}

TEST(OrderStatus, WhatIsNotLiveIsNotLiveAlike) {
  Scenario s;
  s.Send(Limit(7, 1, 1, kSell, kGtc, 100, 5));  // #1
  s.Send(Limit(8, 2, 1, kBuy, kGtc, 100, 5));   // fills #1 whole
  s.Send(Limit(7, 3, 1, kSell, kGtc, 101, 5));  // #3
  s.Send(CancelOrder(7, 3));
  // Filled, cancelled, never entered: the request's ids, all else 0.
  EXPECT_THAT(s.Send(StatusOf(7, 1, 0)),
              ElementsAre("OrderStatus #1 acct=7 coid=0 inst=0 ?0 NotLive "
                          "px=0 leaves=0 executed=0"));
  EXPECT_THAT(s.Send(StatusOf(7, 0, 3)),
              ElementsAre("OrderStatus #0 acct=7 coid=3 inst=0 ?0 NotLive "
                          "px=0 leaves=0 executed=0"));
  EXPECT_THAT(s.Send(StatusOf(7, 77, 0)),
              ElementsAre("OrderStatus #77 acct=7 coid=0 inst=0 ?0 NotLive "
                          "px=0 leaves=0 executed=0"));
}

TEST(OrderStatus, AnotherSessionsOrAccountsOrderIsNotOwner) {
  Scenario s;
  s.Send(Limit(7, 1, 1, kBuy, kGtc, 100, 5));  // #1, owner 0
  EXPECT_THAT(s.Send(StatusOf(7, 1, 0), /*owner=*/1),
              ElementsAre("Rejected acct=7 coid=0 #1 OrderStatusRequest "
                          "NotOwner"));
  EXPECT_THAT(s.Send(StatusOf(8, 1, 0)),
              ElementsAre("Rejected acct=8 coid=0 #1 OrderStatusRequest "
                          "NotOwner"));
  // By client order id, only the owner's own are found.
  EXPECT_THAT(s.Send(StatusOf(7, 0, 1), /*owner=*/1),
              ElementsAre("OrderStatus #0 acct=7 coid=1 inst=0 ?0 NotLive "
                          "px=0 leaves=0 executed=0"));
  EXPECT_THAT(s.SendUnauthorized(StatusOf(9, 1, 2)),
              ElementsAre("Rejected acct=9 coid=2 #1 OrderStatusRequest "
                          "Unauthorized"));
}

TEST(OrderStatus, ChangesNothing) {
  Scenario s;
  s.Send(Limit(7, 1, 1, kBuy, kGtc, 100, 5));
  (void)s.Send(StatusOf(7, 1, 0));
  (void)s.Send(StatusOf(7, 2, 0));
  EXPECT_EQ(s.engine().live_orders(), 1u);
  EXPECT_THAT(s.Send(Limit(7, 2, 1, kBuy, kGtc, 99, 1)),
              ElementsAre("Accepted #2 acct=7 coid=2 inst=1 Buy GTC px=99 "
                          "qty=1"));
}

}  // namespace
}  // namespace orderwire::engine::testing
