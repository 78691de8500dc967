// Scenarios of who an order belongs to (its account and the owner, the
// service's session, that entered it) and of the service's entry point
// (Unauthorized); then the engine's other surfaces: the book view, order
// lookups, Reset, the report buffer. Command frames in, every field of
// every report out (tests/engine/scenario.h).
#include <cstdint>
#include <cstring>
#include <span>
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
#include "tests/engine/scenario.h"

namespace orderwire::engine::testing {
namespace {

using ::testing::ElementsAre;

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
