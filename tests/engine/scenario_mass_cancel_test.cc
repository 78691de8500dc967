// One scenario per rule of docs/CONTROLS.md "Mass cancel": command frames in,
// every field of every report out.
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

using codec::MassCancelSide;
using ::testing::ElementsAre;

constexpr MassCancelSide kBoth = MassCancelSide::kBoth;

// Account 7 rests, for owner 0: #1 buy inst 1, #2 sell inst 2, #3 buy inst
// 2, #4 sell inst 1; owner 1 rests #5 buy inst 1 for account 7; account 8
// rests #6 buy inst 1 for owner 0.
void RestSix(Scenario& s) {
  s.Send(Limit(7, 11, 1, kBuy, kGtc, 100, 1));
  s.Send(Limit(7, 12, 2, kSell, kGtc, 300, 2));
  s.Send(Limit(7, 13, 2, kBuy, kGtc, 200, 3));
  s.Send(Limit(7, 14, 1, kSell, kGtc, 150, 4));
  s.Send(Limit(7, 15, 1, kBuy, kGtc, 101, 5), /*owner=*/1);
  s.Send(Limit(8, 16, 1, kBuy, kGtc, 99, 6));
  ASSERT_EQ(s.engine().live_orders(), 6u);
}

TEST(MassCancel,
     AccountScopeCancelsTheSessionsOrdersOfTheAccountInOrderIdOrder) {
  Scenario s;
  RestSix(s);
  EXPECT_THAT(s.Send(MassCancel(7, 900, 0, kBoth)),
              ElementsAre("Cancelled #1 acct=7 coid=11 inst=1 qty=1 MassCancel",
                          "Cancelled #2 acct=7 coid=12 inst=2 qty=2 MassCancel",
                          "Cancelled #3 acct=7 coid=13 inst=2 qty=3 MassCancel",
                          "Cancelled #4 acct=7 coid=14 inst=1 qty=4 MassCancel",
                          "MassCancelDone acct=7 req=900 inst=0 Both Account "
                          "cancelled=4"));
  // Another owner's order of the account and another account's stay.
  EXPECT_EQ(s.engine().live_orders(), 2u);
  EXPECT_TRUE(s.engine().FindOrder(codec::OrderId(5)).has_value());
  EXPECT_TRUE(s.engine().FindOrder(codec::OrderId(6)).has_value());
  EXPECT_TRUE(s.engine().CheckInvariants().ok());
}

TEST(MassCancel, InstrumentAndSideRestrictWhatGoes) {
  Scenario s;
  RestSix(s);
  EXPECT_THAT(s.Send(MassCancel(7, 1, 2, MassCancelSide::kBuy)),
              ElementsAre("Cancelled #3 acct=7 coid=13 inst=2 qty=3 MassCancel",
                          "MassCancelDone acct=7 req=1 inst=2 Buy Instrument "
                          "cancelled=1"));
  EXPECT_THAT(s.Send(MassCancel(7, 2, 1, MassCancelSide::kSell)),
              ElementsAre("Cancelled #4 acct=7 coid=14 inst=1 qty=4 MassCancel",
                          "MassCancelDone acct=7 req=2 inst=1 Sell Instrument "
                          "cancelled=1"));
  EXPECT_THAT(s.Send(MassCancel(7, 3, 1, kBoth)),
              ElementsAre("Cancelled #1 acct=7 coid=11 inst=1 qty=1 MassCancel",
                          "MassCancelDone acct=7 req=3 inst=1 Both Instrument "
                          "cancelled=1"));
  EXPECT_EQ(s.engine().live_orders(), 3u);  // #2, #5, #6
  EXPECT_TRUE(s.engine().FindOrder(codec::OrderId(2)).has_value());
}

TEST(MassCancel, OrderIdOrderIsNotBookOrder) {
  // Book order (best first, then time) differs from id order: the better
  // price arrives later. The cancels still come by id.
  Scenario s;
  s.Send(Limit(7, 1, 1, kBuy, kGtc, 100, 1));
  s.Send(Limit(7, 2, 1, kBuy, kGtc, 105, 1));
  s.Send(Limit(7, 3, 1, kBuy, kGtc, 100, 1));
  EXPECT_THAT(s.Send(MassCancel(7, 0, 1, kBoth)),
              ElementsAre("Cancelled #1 acct=7 coid=1 inst=1 qty=1 MassCancel",
                          "Cancelled #2 acct=7 coid=2 inst=1 qty=1 MassCancel",
                          "Cancelled #3 acct=7 coid=3 inst=1 qty=1 MassCancel",
                          "MassCancelDone acct=7 req=0 inst=1 Both Instrument "
                          "cancelled=3"));
  EXPECT_TRUE(s.engine().Book(codec::InstrumentId(1)).empty());
}

TEST(MassCancel, NothingToCancelIsADoneWithCountZero) {
  Scenario s;
  s.Send(Limit(7, 1, 1, kBuy, kGtc, 100, 1), /*owner=*/3);
  EXPECT_THAT(s.Send(MassCancel(7, 5, 0, kBoth)),
              ElementsAre("MassCancelDone acct=7 req=5 inst=0 Both Account "
                          "cancelled=0"));
  EXPECT_EQ(s.engine().live_orders(), 1u);
}

TEST(MassCancel, ReportsGoToTheSender) {
  Scenario s;
  s.Send(Limit(7, 1, 1, kBuy, kGtc, 100, 1), /*owner=*/4);
  s.Send(Limit(7, 2, 1, kSell, kGtc, 101, 1), /*owner=*/4);
  s.Send(MassCancel(7, 5, 0, kBoth), /*owner=*/4);
  EXPECT_THAT(s.Owners(), ElementsAre(4u, 4u, 4u));
}

TEST(MassCancel, ChecksScopeThenInstrumentThenSide) {
  Scenario s;  // instruments 1..1024
  s.Send(Limit(7, 1, 1, kBuy, kGtc, 100, 1));
  auto with = [](std::uint32_t instrument, std::uint8_t side,
                 std::uint8_t scope) {
    codec::Command c = MassCancel(7, 44, instrument, MassCancelSide::kBoth);
    c.side = static_cast<codec::Side>(side);
    c.time_in_force = static_cast<codec::TimeInForce>(scope);
    return c;
  };
  // Scope 0 and 3 are not scopes; scope Account names no instrument.
  EXPECT_THAT(s.Send(with(0, 9, 0)),
              ElementsAre("Rejected acct=7 coid=44 #0 MassCancel "
                          "InvalidMassCancelScope"));
  EXPECT_THAT(s.Send(with(1, 3, 3)),
              ElementsAre("Rejected acct=7 coid=44 #0 MassCancel "
                          "InvalidMassCancelScope"));
  EXPECT_THAT(s.Send(with(1, 3, 1)),
              ElementsAre("Rejected acct=7 coid=44 #0 MassCancel "
                          "InvalidMassCancelScope"));
  // Scope Instrument: instrument 0 and 1025 are not configured.
  EXPECT_THAT(s.Send(with(0, 9, 2)),
              ElementsAre("Rejected acct=7 coid=44 #0 MassCancel "
                          "UnknownInstrument"));
  EXPECT_THAT(s.Send(with(1025, 3, 2)),
              ElementsAre("Rejected acct=7 coid=44 #0 MassCancel "
                          "UnknownInstrument"));
  // Side 0 and 4 are not sides.
  EXPECT_THAT(s.Send(with(1, 0, 2)),
              ElementsAre("Rejected acct=7 coid=44 #0 MassCancel InvalidSide"));
  EXPECT_THAT(s.Send(with(0, 4, 1)),
              ElementsAre("Rejected acct=7 coid=44 #0 MassCancel InvalidSide"));
  // A zeroed body cancels nothing.
  codec::Command zero{};
  zero.kind = codec::Kind::kMassCancel;
  EXPECT_THAT(s.Send(zero), ElementsAre("Rejected acct=0 coid=0 #0 MassCancel "
                                        "InvalidMassCancelScope"));
  EXPECT_EQ(s.engine().live_orders(), 1u);
}

TEST(MassCancel, UnauthorizedIsRejectedWithItsRequestId) {
  Scenario s;
  s.Send(Limit(7, 1, 1, kBuy, kGtc, 100, 1));
  EXPECT_THAT(s.SendUnauthorized(MassCancel(7, 61, 0, kBoth)),
              ElementsAre("Rejected acct=7 coid=61 #0 MassCancel "
                          "Unauthorized"));
  EXPECT_EQ(s.engine().live_orders(), 1u);
}

TEST(MassCancel, ConsumesNoIdAndLeavesTheBookUsable) {
  Scenario s;
  s.Send(Limit(7, 1, 1, kBuy, kGtc, 100, 1));
  s.Send(Limit(7, 2, 1, kBuy, kGtc, 100, 1));
  s.Send(MassCancel(7, 1, 0, kBoth));
  // The client order ids are free again; order ids continue.
  EXPECT_THAT(s.Send(Limit(7, 1, 1, kBuy, kGtc, 100, 1)),
              ElementsAre("Accepted #3 acct=7 coid=1 inst=1 Buy GTC px=100 "
                          "qty=1"));
  EXPECT_THAT(s.Send(Limit(9, 1, 1, kSell, kGtc, 100, 1)),
              ElementsAre("Accepted #4 acct=9 coid=1 inst=1 Sell GTC px=100 "
                          "qty=1",
                          "Filled #3 acct=7 coid=1 match=1 inst=1 Buy Maker "
                          "px=100 qty=1 leaves=0",
                          "Filled #4 acct=9 coid=1 match=1 inst=1 Sell Taker "
                          "px=100 qty=1 leaves=0"));
  EXPECT_TRUE(s.engine().CheckInvariants().ok());
}

}  // namespace
}  // namespace orderwire::engine::testing
