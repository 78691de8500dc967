// The orders of the tests. The limit order: one builder of a
// codec::NewLimit with named defaults, so that a test spells out only the
// fields it relies on, e.g.
//
//   Limit({.account_id = 7, .client_order_id = 1, .price = 10})
//
// is account 7's good-till-cancel buy of 1 on instrument 1 at 10. Reports
// and pinned hashes depend on every field: a test whose orders differ from a
// default passes that field explicitly. Header-only.
#ifndef ORDERWIRE_TESTS_SUPPORT_ORDERS_H_
#define ORDERWIRE_TESTS_SUPPORT_ORDERS_H_

#include <cstddef>
#include <cstdint>

#include "codec/command.h"
#include "codec/messages.h"
#include "codec/types.h"

namespace orderwire::test_support {

// The fields of a limit order, in codec::NewLimit's order, each with the
// default the tests share.
struct LimitFields {
  std::uint64_t account_id = 1;
  std::uint64_t client_order_id = 1;
  std::uint32_t instrument_id = 1;
  codec::Side side = codec::Side::kBuy;
  codec::TimeInForce time_in_force = codec::TimeInForce::kGoodTillCancel;
  std::int64_t price = 100;
  std::uint64_t quantity = 1;
};

// The NewLimit of `fields`.
inline codec::NewLimit Limit(const LimitFields& fields) {
  return codec::NewLimit{.account_id = fields.account_id,
                         .client_order_id = fields.client_order_id,
                         .instrument_id = fields.instrument_id,
                         .side = fields.side,
                         .time_in_force = fields.time_in_force,
                         .price = fields.price,
                         .quantity = fields.quantity};
}

// The feed tests' two traders: trader `t`'s (0 or 1) limit order
// `sequence`, of account t + 1 and client order id `sequence`, on
// instruments 1 and 2 by turns, good till cancel, trader 0 buying and
// trader 1 selling at 100 to 104 and 1 to 13 at a time, so that orders
// rest, trade and partly fill.
inline codec::NewLimit TraderLimit(std::size_t t, std::uint64_t sequence) {
  return codec::NewLimit{
      .account_id = t + 1,
      .client_order_id = sequence,
      .instrument_id = static_cast<std::uint32_t>(1 + sequence % 2),
      .side = t == 0 ? codec::Side::kBuy : codec::Side::kSell,
      .time_in_force = codec::TimeInForce::kGoodTillCancel,
      .price = static_cast<std::int64_t>(100 + (sequence * 7 + t) % 5),
      .quantity = 1 + (sequence * 3 + t) % 13};
}

// A MassCancel (docs/CONTROLS.md) in place of command `c`, with its
// sequence and account, for streams that mix mass cancels into a
// workload: request `n`; every instrument when `n` is even, else `c`'s;
// both sides, buys, sells by turns.
inline codec::Command MassCancelInstead(const codec::Command& c,
                                        std::uint64_t n) {
  static constexpr codec::MassCancelSide kSides[] = {
      codec::MassCancelSide::kBoth, codec::MassCancelSide::kBuy,
      codec::MassCancelSide::kSell};
  const bool whole_account = n % 2 == 0;
  return codec::Command::From(
      c.sequence,
      codec::MassCancel{
          .account_id = c.account_id.value(),
          .request_id = n,
          .instrument_id = whole_account ? 0 : c.instrument_id.value(),
          .side = kSides[n % 3],
          .scope = whole_account ? codec::MassCancelScope::kAccount
                                 : codec::MassCancelScope::kInstrument});
}

// A Goodbye in place of `c` (docs/CONTROLS.md "Goodbye, liveness and
// cancel-on-disconnect"): same sequence and account, request `n`.
inline codec::Command GoodbyeInstead(const codec::Command& c, std::uint64_t n) {
  return codec::Command::From(
      c.sequence,
      codec::Goodbye{.account_id = c.account_id.value(), .request_id = n});
}

// An OrderStatusRequest in place of `c` (docs/CONTROLS.md "Order status"):
// same sequence and account, for `c`'s order id if it has one (a cancel's
// or a replace's: an order its stream takes to be live), else its client
// order id.
inline codec::Command StatusRequestInstead(const codec::Command& c) {
  return codec::Command::From(
      c.sequence,
      codec::OrderStatusRequest{.account_id = c.account_id.value(),
                                .order_id = c.order_id.value(),
                                .client_order_id = c.client_order_id.value()});
}

// The frame of a lapse record (journaled flagged state::kRecordLapse): a
// Goodbye of sequence 0, account 0, request 0.
inline Bytes LapseFrame() {
  Bytes frame(codec::kFrameSize<codec::Goodbye>);
  (void)codec::EncodeCommand(codec::Command::From(0, codec::Goodbye{}), frame);
  return frame;
}

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SUPPORT_ORDERS_H_
