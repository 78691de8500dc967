// The enumerations' values and docs/PROTOCOL.md names; values the protocol does
// not define have the empty name, and no enumeration uses 0.
#include "codec/types.h"

#include <cstdint>
#include <string_view>

#include "gtest/gtest.h"

namespace orderwire::codec::test {
namespace {

template <typename E>
void ExpectNames(std::initializer_list<std::string_view> names) {
  using U = std::underlying_type_t<E>;
  // Value i + 1 has names[i]; 0 and every value after the last have none.
  EXPECT_EQ(Name(static_cast<E>(U{0})), "");
  std::size_t i = 0;
  for (std::string_view name : names) {
    EXPECT_EQ(Name(static_cast<E>(static_cast<U>(i + 1))), name);
    ++i;
  }
  for (std::size_t v = names.size() + 1; v < 256; ++v) {
    EXPECT_EQ(Name(static_cast<E>(static_cast<U>(v))), "") << v;
  }
  if constexpr (sizeof(U) == 2) {
    EXPECT_EQ(Name(static_cast<E>(U{0xFFFF})), "");
  }
}

TEST(TypesTest, EnumerationsHaveTheirProtocolValuesAndNames) {
  ExpectNames<Side>({"Buy", "Sell"});
  ExpectNames<TimeInForce>(
      {"GoodTillCancel", "ImmediateOrCancel", "FillOrKill", "PostOnly"});
  ExpectNames<RejectReason>(
      {"UnknownInstrument", "InvalidSide", "InvalidTimeInForce", "InvalidPrice",
       "InvalidQuantity", "DuplicateClientOrderId", "UnknownOrder", "NotOwner",
       "WouldCross", "BookFull", "Unauthorized", "InvalidMassCancelScope"});
  ExpectNames<CancelReason>({"Requested", "ImmediateOrCancel", "FillOrKill",
                             "SelfTrade", "NoLiquidity", "ReplacedAway",
                             "MassCancel", "CancelOnDisconnect"});
  ExpectNames<MassCancelScope>({"Account", "Instrument"});
  ExpectNames<MassCancelSide>({"Buy", "Sell", "Both"});
  ExpectNames<SessionCloseReason>({"Goodbye", "Lapsed"});
  ExpectNames<OrderState>({"Live", "NotLive"});
  ExpectNames<Liquidity>({"Maker", "Taker"});
  ExpectNames<PriorityKept>({"Yes", "No"});
}

TEST(TypesTest, EnumerationsHaveTheirWireWidths) {
  static_assert(sizeof(Kind) == 1 && sizeof(Side) == 1 &&
                sizeof(TimeInForce) == 1 && sizeof(CancelReason) == 1 &&
                sizeof(Liquidity) == 1 && sizeof(PriorityKept) == 1 &&
                sizeof(BusyCause) == 1);
  static_assert(sizeof(RejectReason) == 2);
  EXPECT_EQ(static_cast<int>(Kind::kNewLimit), 0x01);
  EXPECT_EQ(static_cast<int>(Kind::kReplace), 0x05);
  EXPECT_EQ(static_cast<int>(Kind::kAccepted), 0x41);
  EXPECT_EQ(static_cast<int>(Kind::kSequenceGap), 0x46);
  EXPECT_EQ(static_cast<int>(Kind::kReportsGone), 0x47);
  EXPECT_EQ(static_cast<int>(Kind::kBusy), 0x48);
  EXPECT_EQ(static_cast<int>(Kind::kMassCancel), 0x06);
  EXPECT_EQ(static_cast<int>(Kind::kMassCancelDone), 0x49);
  EXPECT_EQ(static_cast<int>(Kind::kHeartbeat), 0x07);
  EXPECT_EQ(static_cast<int>(Kind::kHeartbeatAck), 0x4A);
  EXPECT_EQ(static_cast<int>(Kind::kGoodbye), 0x08);
  EXPECT_EQ(static_cast<int>(Kind::kSessionClosed), 0x4B);
  EXPECT_EQ(static_cast<int>(Kind::kOrderStatusRequest), 0x09);
  EXPECT_EQ(static_cast<int>(Kind::kOrderStatus), 0x4C);
  static_assert(sizeof(MassCancelScope) == 1 && sizeof(MassCancelSide) == 1 &&
                sizeof(SessionCloseReason) == 1 && sizeof(OrderState) == 1);
  EXPECT_EQ(static_cast<int>(CancelReason::kCancelOnDisconnect), 8);
  EXPECT_EQ(static_cast<int>(SessionCloseReason::kGoodbye), 1);
  EXPECT_EQ(static_cast<int>(SessionCloseReason::kLapsed), 2);
  EXPECT_EQ(static_cast<int>(OrderState::kLive), 1);
  EXPECT_EQ(static_cast<int>(OrderState::kNotLive), 2);
  EXPECT_EQ(static_cast<int>(BusyCause::kJournalFull), 1);
  EXPECT_EQ(Name(BusyCause::kJournalFull), "JournalFull");
}

}  // namespace
}  // namespace orderwire::codec::test
