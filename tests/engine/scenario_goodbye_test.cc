// One scenario per engine rule of docs/CONTROLS.md "Goodbye, liveness and
// cancel-on-disconnect": what closing a session cancels, in which order,
// and what it reports.
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

using codec::SessionCloseReason;
using ::testing::ElementsAre;

// Owner 0 rests #1 (acct 7, inst 2, buy), #2 (acct 8, inst 1, sell),
// #4 (acct 7, inst 1, buy, a better price than #1's book neighbour); owner
// 1 rests #3 (acct 7, inst 1, buy).
void RestFour(Scenario& s) {
  s.Send(Limit(7, 1, 2, kBuy, kGtc, 100, 1));
  s.Send(Limit(8, 2, 1, kSell, kGtc, 300, 2));
  s.Send(Limit(7, 3, 1, kBuy, kGtc, 100, 3), /*owner=*/1);
  s.Send(Limit(7, 4, 1, kBuy, kGtc, 105, 4));
  ASSERT_EQ(s.engine().live_orders(), 4u);
}

TEST(CloseSession, WithCancelOnDisconnectEveryOrderOfTheOwnerGoesInIdOrder) {
  Scenario s;
  RestFour(s);
  // Every account and instrument of owner 0, by id (not by book or
  // account); owner 1's order of the same account stays.
  EXPECT_THAT(
      s.Close(Goodbye(7, 55), 0, SessionCloseReason::kGoodbye, true),
      ElementsAre("Cancelled #1 acct=7 coid=1 inst=2 qty=1 CancelOnDisconnect",
                  "Cancelled #2 acct=8 coid=2 inst=1 qty=2 CancelOnDisconnect",
                  "Cancelled #4 acct=7 coid=4 inst=1 qty=4 CancelOnDisconnect",
                  "SessionClosed acct=7 req=55 Goodbye cancelled=3"));
  EXPECT_THAT(s.Owners(), ElementsAre(0, 0, 0, 0));
  EXPECT_EQ(s.engine().live_orders(), 1u);
  EXPECT_TRUE(s.engine().FindOrder(codec::OrderId(3)).has_value());
}

TEST(CloseSession, WithoutCancelOnDisconnectTheOrdersStay) {
  Scenario s;
  RestFour(s);
  EXPECT_THAT(s.Close(Goodbye(7, 56), 0, SessionCloseReason::kGoodbye, false),
              ElementsAre("SessionClosed acct=7 req=56 Goodbye cancelled=0"));
  EXPECT_EQ(s.engine().live_orders(), 4u);
}

TEST(CloseSession, ALapseReportsItsReasonAndCountsWhatWent) {
  Scenario s;
  RestFour(s);
  EXPECT_THAT(
      s.Close(Goodbye(0, 0), 1, SessionCloseReason::kLapsed, true),
      ElementsAre("Cancelled #3 acct=7 coid=3 inst=1 qty=3 CancelOnDisconnect",
                  "SessionClosed acct=0 req=0 Lapsed cancelled=1"));
  EXPECT_THAT(s.Owners(), ElementsAre(1, 1));
  // Nothing left of owner 1: a second close cancels nothing.
  EXPECT_THAT(s.Close(Goodbye(0, 0), 1, SessionCloseReason::kLapsed, true),
              ElementsAre("SessionClosed acct=0 req=0 Lapsed cancelled=0"));
  EXPECT_EQ(s.engine().live_orders(), 3u);
}

TEST(CloseSession, PartlyFilledOrdersAreCancelledForTheirLeaves) {
  Scenario s;
  s.Send(Limit(7, 1, 1, kSell, kGtc, 100, 10));
  s.Send(Limit(8, 2, 1, kBuy, kGtc, 100, 4), /*owner=*/1);
  EXPECT_THAT(
      s.Close(Goodbye(7, 1), 0, SessionCloseReason::kGoodbye, true),
      ElementsAre("Cancelled #1 acct=7 coid=1 inst=1 qty=6 CancelOnDisconnect",
                  "SessionClosed acct=7 req=1 Goodbye cancelled=1"));
  EXPECT_EQ(s.engine().live_orders(), 0u);
}

TEST(CloseSession, ExecuteOfAGoodbyeClosesWithoutCancelling) {
  // The engine does not know the session's setting: Execute() never
  // cancels, the state machine calls CloseSession with the record's flag.
  Scenario s;
  RestFour(s);
  EXPECT_THAT(s.Send(Goodbye(7, 9)),
              ElementsAre("SessionClosed acct=7 req=9 Goodbye cancelled=0"));
  EXPECT_EQ(s.engine().live_orders(), 4u);
}

TEST(CloseSession, AnUnauthorizedGoodbyeIsRejectedWithItsRequestId) {
  Scenario s;
  RestFour(s);
  EXPECT_THAT(s.SendUnauthorized(Goodbye(9, 77)),
              ElementsAre("Rejected acct=9 coid=77 #0 Goodbye Unauthorized"));
  EXPECT_EQ(s.engine().live_orders(), 4u);
}

TEST(CloseSession, IdsGoOnAfterTheCancels) {
  Scenario s;
  RestFour(s);
  (void)s.Close(Goodbye(7, 1), 0, SessionCloseReason::kGoodbye, true);
  EXPECT_THAT(s.Send(Limit(7, 1, 1, kBuy, kGtc, 90, 1)),
              ElementsAre("Accepted #5 acct=7 coid=1 inst=1 Buy GTC px=90 "
                          "qty=1"));
}

}  // namespace
}  // namespace orderwire::engine::testing
