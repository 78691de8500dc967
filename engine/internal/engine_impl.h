// Internal to orderwire::engine; do not depend on it.
//
// The member definitions of BasicEngine. engine.cc instantiates them for
// DefaultTraits (the engine); engine_bench includes this file to instantiate
// the alternative structures the design note in engine.h measures.
#ifndef ORDERWIRE_ENGINE_INTERNAL_ENGINE_IMPL_H_
#define ORDERWIRE_ENGINE_INTERNAL_ENGINE_IMPL_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "codec/command.h"
#include "codec/messages.h"
#include "codec/strong.h"
#include "codec/types.h"
#include "engine/engine.h"
#include "engine/internal/pool.h"
#include "engine/report.h"

namespace orderwire::engine {
namespace internal {

// 0 for Buy, 1 for Sell. Precondition: a valid side.
[[nodiscard]] inline int SideIndex(codec::Side side) noexcept {
  return static_cast<int>(side) - 1;
}
[[nodiscard]] inline codec::Side Opposite(codec::Side side) noexcept {
  return side == codec::Side::kBuy ? codec::Side::kSell : codec::Side::kBuy;
}
// The sort key of `price` on `side`: larger is better on both sides.
[[nodiscard]] inline std::int64_t KeyOf(codec::Side side,
                                        codec::Price price) noexcept {
  return side == codec::Side::kBuy ? price.value() : -price.value();
}

}  // namespace internal

template <typename Traits>
BasicEngine<Traits>::BasicEngine(const EngineConfig& config)
    : config_(config),
      books_(std::size_t{config.max_instrument} - config.min_instrument + 1),
      orders_(config.max_live_orders),
      // A level holds at least one order, so levels never outnumber orders.
      levels_(config.max_live_orders),
      index_(config.max_live_orders),
      booked_(config.max_live_orders) {}

template <typename Traits>
ExecuteStatus BasicEngine<Traits>::Execute(const codec::Command& command,
                                           OwnerTag owner,
                                           ReportBuffer& out) noexcept {
  switch (command.kind) {
    case codec::Kind::kNewLimit:
      NewOrder(command, owner, /*market=*/false, out);
      return ExecuteStatus::kOk;
    case codec::Kind::kNewMarket:
      NewOrder(command, owner, /*market=*/true, out);
      return ExecuteStatus::kOk;
    case codec::Kind::kCancelByOrder:
      CancelByOrder(command, owner, out);
      return ExecuteStatus::kOk;
    case codec::Kind::kCancelByClient:
      CancelByClient(command, owner, out);
      return ExecuteStatus::kOk;
    case codec::Kind::kReplace:
      Replace(command, owner, out);
      return ExecuteStatus::kOk;
    case codec::Kind::kMassCancel:
      MassCancel(command, owner, out);
      return ExecuteStatus::kOk;
    case codec::Kind::kGoodbye:
      CloseSession(command, owner, codec::SessionCloseReason::kGoodbye,
                   /*cancel_orders=*/false, out);
      return ExecuteStatus::kOk;
    case codec::Kind::kOrderStatusRequest:
      QueryStatus(command, owner, out);
      return ExecuteStatus::kOk;
    default:
      return ExecuteStatus::kNotACommand;
  }
}

template <typename Traits>
ExecuteStatus BasicEngine<Traits>::RejectUnauthorized(
    const codec::Command& command, OwnerTag owner, ReportBuffer& out) noexcept {
  switch (command.kind) {
    case codec::Kind::kNewLimit:
    case codec::Kind::kNewMarket:
    case codec::Kind::kCancelByOrder:
    case codec::Kind::kCancelByClient:
    case codec::Kind::kReplace:
    case codec::Kind::kMassCancel:
    case codec::Kind::kGoodbye:
    case codec::Kind::kOrderStatusRequest:
      Reject(command, owner, codec::RejectReason::kUnauthorized, out);
      return ExecuteStatus::kOk;
    default:
      return ExecuteStatus::kNotACommand;
  }
}

template <typename Traits>
void BasicEngine<Traits>::Reject(const codec::Command& c, OwnerTag owner,
                                 codec::RejectReason reason,
                                 ReportBuffer& out) noexcept {
  // PROTOCOL.md "What a Rejected report carries", kind by kind.
  codec::Rejected rejected{.account_id = c.account_id.value(),
                           .client_order_id = 0,
                           .order_id = 0,
                           .command_kind = c.kind,
                           .reason = reason};
  switch (c.kind) {
    case codec::Kind::kNewLimit:
    case codec::Kind::kNewMarket:
    case codec::Kind::kCancelByClient:
    case codec::Kind::kMassCancel:  // its request_id
    case codec::Kind::kGoodbye:     // its request_id
      rejected.client_order_id = c.client_order_id.value();
      break;
    case codec::Kind::kCancelByOrder:
      rejected.order_id = c.order_id.value();
      break;
    case codec::Kind::kReplace:             // the new client order id
    case codec::Kind::kOrderStatusRequest:  // both, as asked
      rejected.client_order_id = c.client_order_id.value();
      rejected.order_id = c.order_id.value();
      break;
    default:
      break;
  }
  out.Append(rejected, owner);
}

template <typename Traits>
void BasicEngine<Traits>::NewOrder(const codec::Command& c, OwnerTag owner,
                                   bool market, ReportBuffer& out) noexcept {
  using codec::RejectReason;
  using codec::TimeInForce;
  // Validation, in PROTOCOL.md's order; the first failure is the reason.
  const std::uint32_t book_index =
      c.instrument_id.value() - config_.min_instrument;
  if (book_index >= books_.size()) {
    return Reject(c, owner, RejectReason::kUnknownInstrument, out);
  }
  if (c.side != codec::Side::kBuy && c.side != codec::Side::kSell) {
    return Reject(c, owner, RejectReason::kInvalidSide, out);
  }
  const TimeInForce tif =
      market ? TimeInForce::kImmediateOrCancel : c.time_in_force;
  if (!market) {
    const auto raw_tif = static_cast<std::uint8_t>(tif);
    if (raw_tif < static_cast<std::uint8_t>(TimeInForce::kGoodTillCancel) ||
        raw_tif > static_cast<std::uint8_t>(TimeInForce::kPostOnly)) {
      return Reject(c, owner, RejectReason::kInvalidTimeInForce, out);
    }
    if (c.price.value() < config_.min_price ||
        c.price.value() > config_.max_price) {
      return Reject(c, owner, RejectReason::kInvalidPrice, out);
    }
  }
  if (c.quantity.value() < config_.min_quantity ||
      c.quantity.value() > config_.max_quantity) {
    return Reject(c, owner, RejectReason::kInvalidQuantity, out);
  }
  if (index_.FindByClient(c.account_id, owner, c.client_order_id,
                          orders_.data()) != internal::kNil) {
    return Reject(c, owner, RejectReason::kDuplicateClientOrderId, out);
  }
  BookData& book = books_[book_index];
  if (tif == TimeInForce::kPostOnly && Crosses(book, c.side, c.price)) {
    return Reject(c, owner, RejectReason::kWouldCross, out);
  }
  const bool rests =
      tif == TimeInForce::kGoodTillCancel || tif == TimeInForce::kPostOnly;
  if (rests && orders_.in_use() == config_.max_live_orders) {
    return Reject(c, owner, RejectReason::kBookFull, out);
  }

  // Accepted: the order gets its id.
  Taker taker{.order_id = codec::OrderId(next_order_id_++),
              .account_id = c.account_id,
              .client_order_id = c.client_order_id,
              .instrument_id = c.instrument_id,
              .side = c.side,
              .owner = owner,
              .leaves = c.quantity};
  const std::int64_t price = market ? 0 : c.price.value();
  out.Append(codec::Accepted{.order_id = taker.order_id.value(),
                             .account_id = c.account_id.value(),
                             .client_order_id = c.client_order_id.value(),
                             .instrument_id = c.instrument_id.value(),
                             .side = c.side,
                             .time_in_force = tif,
                             .price = price,
                             .quantity = c.quantity.value()},
             owner);
  const std::int64_t threshold =
      market ? std::numeric_limits<std::int64_t>::min()
             : internal::KeyOf(internal::Opposite(c.side), c.price);
  const auto cancel_rest = [&](codec::CancelReason reason) {
    out.Append(
        codec::Cancelled{.order_id = taker.order_id.value(),
                         .account_id = taker.account_id.value(),
                         .client_order_id = taker.client_order_id.value(),
                         .instrument_id = taker.instrument_id.value(),
                         .cancelled_quantity = taker.leaves.value(),
                         .reason = reason},
        taker.owner);
  };
  if (tif == TimeInForce::kFillOrKill &&
      AvailableFor(book, taker, threshold, c.quantity) < c.quantity) {
    return cancel_rest(codec::CancelReason::kFillOrKill);
  }
  if (tif != TimeInForce::kPostOnly && CanTrade(book, c.side, threshold)) {
    Match(book, taker, threshold, out);
  }
  if (taker.leaves == codec::Quantity(0)) return;
  if (!rests) {
    return cancel_rest(market ? codec::CancelReason::kNoLiquidity
                              : codec::CancelReason::kImmediateOrCancel);
  }
  // The remainder rests. A record is free: BookFull was checked above and
  // trading only frees records.
  const std::uint32_t index = orders_.Allocate();
  internal::Order& order = orders_[index];
  order.order_id = taker.order_id;
  order.account_id = taker.account_id;
  order.client_order_id = taker.client_order_id;
  order.price = c.price;
  order.leaves = taker.leaves;
  order.instrument_id = taker.instrument_id;
  order.side = taker.side;
  order.time_in_force = tif;
  order.owner = owner;
  booked_[index] = c.quantity;
  Rest(book, index);
  index_.InsertId(taker.order_id, index);
  // The command's own fields (equal to the order's), so that the compiler can
  // reuse the hash of the duplicate check above.
  index_.InsertClient(c.account_id, owner, c.client_order_id, index);
}

template <typename Traits>
bool BasicEngine<Traits>::CanTrade(const BookData& book, codec::Side side,
                                   std::int64_t threshold) const noexcept {
  const auto& opposite = book.sides[1 - internal::SideIndex(side)];
  return !opposite.empty() && opposite.Best().key >= threshold;
}

template <typename Traits>
bool BasicEngine<Traits>::Crosses(const BookData& book, codec::Side side,
                                  codec::Price price) const noexcept {
  const auto& opposite = book.sides[1 - internal::SideIndex(side)];
  return !opposite.empty() &&
         opposite.Best().key >=
             internal::KeyOf(internal::Opposite(side), price);
}

template <typename Traits>
codec::Quantity BasicEngine<Traits>::AvailableFor(
    const BookData& book, const Taker& taker, std::int64_t threshold,
    codec::Quantity wanted) const noexcept {
  codec::Quantity available(0);
  book.sides[1 - internal::SideIndex(taker.side)].ForEachFromBest(
      [&](internal::LevelRef ref) {
        if (ref.key < threshold) return false;
        for (std::uint32_t i = levels_[ref.level].head; i != internal::kNil;
             i = orders_[i].next) {
          const internal::Order& order = orders_[i];
          if (order.account_id == taker.account_id) continue;
          available += order.leaves;
          if (available >= wanted) return false;
        }
        return true;
      });
  return available;
}

template <typename Traits>
void BasicEngine<Traits>::Match(BookData& book, Taker& taker,
                                std::int64_t threshold,
                                ReportBuffer& out) noexcept {
  auto& opposite = book.sides[1 - internal::SideIndex(taker.side)];
  while (taker.leaves != codec::Quantity(0) && !opposite.empty()) {
    const internal::LevelRef best = opposite.Best();
    if (best.key < threshold) break;
    internal::Level& level = levels_[best.level];
    while (taker.leaves != codec::Quantity(0) && level.head != internal::kNil) {
      const std::uint32_t index = level.head;
      internal::Order& maker = orders_[index];
      if (maker.next != internal::kNil) {
        __builtin_prefetch(&orders_[maker.next]);
      }
      bool finished = true;
      if (maker.account_id == taker.account_id) {
        // Self-trade prevention: the resting order goes, matching goes on.
        out.Append(
            codec::Cancelled{.order_id = maker.order_id.value(),
                             .account_id = maker.account_id.value(),
                             .client_order_id = maker.client_order_id.value(),
                             .instrument_id = maker.instrument_id.value(),
                             .cancelled_quantity = maker.leaves.value(),
                             .reason = codec::CancelReason::kSelfTrade},
            maker.owner);
        level.quantity -= maker.leaves;
      } else {
        const codec::Quantity quantity = std::min(maker.leaves, taker.leaves);
        maker.leaves -= quantity;
        taker.leaves -= quantity;
        level.quantity -= quantity;
        const std::uint64_t match_id = next_match_id_++;
        out.Append(
            codec::Filled{.order_id = maker.order_id.value(),
                          .account_id = maker.account_id.value(),
                          .client_order_id = maker.client_order_id.value(),
                          .match_id = match_id,
                          .instrument_id = maker.instrument_id.value(),
                          .side = maker.side,
                          .liquidity = codec::Liquidity::kMaker,
                          .price = level.price.value(),
                          .quantity = quantity.value(),
                          .leaves_quantity = maker.leaves.value()},
            maker.owner);
        out.Append(
            codec::Filled{.order_id = taker.order_id.value(),
                          .account_id = taker.account_id.value(),
                          .client_order_id = taker.client_order_id.value(),
                          .match_id = match_id,
                          .instrument_id = taker.instrument_id.value(),
                          .side = taker.side,
                          .liquidity = codec::Liquidity::kTaker,
                          .price = level.price.value(),
                          .quantity = quantity.value(),
                          .leaves_quantity = taker.leaves.value()},
            taker.owner);
        finished = maker.leaves == codec::Quantity(0);
      }
      if (finished) {
        // Pop the head of the FIFO and drop the order.
        level.head = maker.next;
        if (level.head == internal::kNil) {
          level.tail = internal::kNil;
        } else {
          orders_[level.head].prev = internal::kNil;
        }
        --level.count;
        Release(index);
      }
    }
    if (level.count != 0) break;  // the taker is done inside this level
    opposite.PopBest();
    levels_.Free(best.level);
  }
}

template <typename Traits>
void BasicEngine<Traits>::Rest(BookData& book, std::uint32_t index) noexcept {
  internal::Order& order = orders_[index];
  auto& side = book.sides[internal::SideIndex(order.side)];
  const std::uint32_t level_index =
      side.FindOrInsert(internal::KeyOf(order.side, order.price), [&] {
        const std::uint32_t fresh = levels_.Allocate();
        levels_[fresh] = internal::Level{.price = order.price,
                                         .quantity = codec::Quantity(0),
                                         .count = 0,
                                         .head = internal::kNil,
                                         .tail = internal::kNil};
        return fresh;
      });
  internal::Level& level = levels_[level_index];
  order.level = level_index;
  order.prev = level.tail;
  order.next = internal::kNil;
  if (level.tail == internal::kNil) {
    level.head = index;
  } else {
    orders_[level.tail].next = index;
  }
  level.tail = index;
  ++level.count;
  level.quantity += order.leaves;
}

template <typename Traits>
void BasicEngine<Traits>::Unlink(BookData& book, std::uint32_t index) noexcept {
  const internal::Order& order = orders_[index];
  internal::Level& level = levels_[order.level];
  if (order.prev == internal::kNil) {
    level.head = order.next;
  } else {
    orders_[order.prev].next = order.next;
  }
  if (order.next == internal::kNil) {
    level.tail = order.prev;
  } else {
    orders_[order.next].prev = order.prev;
  }
  --level.count;
  level.quantity -= order.leaves;
  if (level.count == 0) {
    book.sides[internal::SideIndex(order.side)].Erase(
        internal::KeyOf(order.side, order.price));
    levels_.Free(order.level);
  }
}

template <typename Traits>
void BasicEngine<Traits>::Release(std::uint32_t index) noexcept {
  const internal::Order& order = orders_[index];
  index_.EraseId(order.order_id, index);
  index_.EraseClient(order.account_id, order.owner, order.client_order_id,
                     index);
  orders_.Free(index);
}

template <typename Traits>
void BasicEngine<Traits>::CancelByOrder(const codec::Command& c, OwnerTag owner,
                                        ReportBuffer& out) noexcept {
  const std::uint32_t index = index_.FindById(c.order_id, orders_.data());
  if (index == internal::kNil) {
    return Reject(c, owner, codec::RejectReason::kUnknownOrder, out);
  }
  // The order is the account's and the owner's (session's) to cancel.
  if (orders_[index].account_id != c.account_id ||
      orders_[index].owner != owner) {
    return Reject(c, owner, codec::RejectReason::kNotOwner, out);
  }
  CancelResting(index, codec::CancelReason::kRequested, out);
}

template <typename Traits>
void BasicEngine<Traits>::CancelResting(std::uint32_t index,
                                        codec::CancelReason reason,
                                        ReportBuffer& out) noexcept {
  const internal::Order& order = orders_[index];
  out.Append(codec::Cancelled{.order_id = order.order_id.value(),
                              .account_id = order.account_id.value(),
                              .client_order_id = order.client_order_id.value(),
                              .instrument_id = order.instrument_id.value(),
                              .cancelled_quantity = order.leaves.value(),
                              .reason = reason},
             order.owner);
  Unlink(books_[order.instrument_id.value() - config_.min_instrument], index);
  Release(index);
}

template <typename Traits>
void BasicEngine<Traits>::MassCancel(const codec::Command& c, OwnerTag owner,
                                     ReportBuffer& out) noexcept {
  using codec::MassCancelScope;
  using codec::MassCancelSide;
  // docs/CONTROLS.md "Mass cancel": the order of the checks.
  const auto scope = static_cast<MassCancelScope>(c.time_in_force);
  const auto side = static_cast<MassCancelSide>(c.side);
  const bool whole_account =
      scope == MassCancelScope::kAccount && c.instrument_id.value() == 0;
  if (!whole_account && scope != MassCancelScope::kInstrument) {
    return Reject(c, owner, codec::RejectReason::kInvalidMassCancelScope, out);
  }
  if (!whole_account && BookOf(c.instrument_id) == nullptr) {
    return Reject(c, owner, codec::RejectReason::kUnknownInstrument, out);
  }
  if (side != MassCancelSide::kBuy && side != MassCancelSide::kSell &&
      side != MassCancelSide::kBoth) {
    return Reject(c, owner, codec::RejectReason::kInvalidSide, out);
  }
  // The session's orders of the account in scope, then in order-id order.
  mass_cancel_.clear();
  const auto mine = [&](const internal::Order& order) {
    return order.owner == owner && order.account_id == c.account_id;
  };
  if (whole_account) {
    for (const BookData& book : books_) Collect(book, side, mine);
  } else {
    Collect(*BookOf(c.instrument_id), side, mine);
  }
  const std::uint32_t cancelled =
      CancelCollected(codec::CancelReason::kMassCancel, out);
  out.Append(codec::MassCancelDone{.account_id = c.account_id.value(),
                                   .request_id = c.client_order_id.value(),
                                   .instrument_id = c.instrument_id.value(),
                                   .side = side,
                                   .scope = scope,
                                   .cancelled_orders = cancelled},
             owner);
}

template <typename Traits>
void BasicEngine<Traits>::CloseSession(const codec::Command& c, OwnerTag owner,
                                       codec::SessionCloseReason reason,
                                       bool cancel_orders,
                                       ReportBuffer& out) noexcept {
  mass_cancel_.clear();
  if (cancel_orders) {
    const auto mine = [&](const internal::Order& order) {
      return order.owner == owner;
    };
    for (const BookData& book : books_) {
      Collect(book, codec::MassCancelSide::kBoth, mine);
    }
  }
  const std::uint32_t cancelled =
      CancelCollected(codec::CancelReason::kCancelOnDisconnect, out);
  out.Append(codec::SessionClosed{.account_id = c.account_id.value(),
                                  .request_id = c.client_order_id.value(),
                                  .reason = reason,
                                  .cancelled_orders = cancelled},
             owner);
}

template <typename Traits>
template <typename Keep>
void BasicEngine<Traits>::Collect(const BookData& book,
                                  codec::MassCancelSide side,
                                  Keep&& keep) noexcept {
  for (int s = 0; s < 2; ++s) {
    if (side != codec::MassCancelSide::kBoth &&
        s != static_cast<int>(side) - 1) {
      continue;
    }
    book.sides[s].ForEachFromBest([&](internal::LevelRef ref) {
      for (std::uint32_t i = levels_[ref.level].head; i != internal::kNil;
           i = orders_[i].next) {
        if (keep(orders_[i])) {
          mass_cancel_.emplace_back(orders_[i].order_id.value(), i);
        }
      }
      return true;
    });
  }
}

template <typename Traits>
std::uint32_t BasicEngine<Traits>::CancelCollected(codec::CancelReason reason,
                                                   ReportBuffer& out) noexcept {
  std::sort(mass_cancel_.begin(), mass_cancel_.end());
  for (const auto& [order_id, index] : mass_cancel_) {
    CancelResting(index, reason, out);
  }
  return static_cast<std::uint32_t>(mass_cancel_.size());
}

template <typename Traits>
void BasicEngine<Traits>::CancelByClient(const codec::Command& c,
                                         OwnerTag owner,
                                         ReportBuffer& out) noexcept {
  // Only the owner's own order: another owner's with the same
  // (account, client_order_id) is not found (UnknownOrder).
  const std::uint32_t index = index_.FindByClient(
      c.account_id, owner, c.client_order_id, orders_.data());
  if (index == internal::kNil) {
    return Reject(c, owner, codec::RejectReason::kUnknownOrder, out);
  }
  CancelResting(index, codec::CancelReason::kRequested, out);
}

template <typename Traits>
void BasicEngine<Traits>::Replace(const codec::Command& c, OwnerTag owner,
                                  ReportBuffer& out) noexcept {
  using codec::RejectReason;
  const std::uint32_t index = index_.FindById(c.order_id, orders_.data());
  if (index == internal::kNil) {
    return Reject(c, owner, RejectReason::kUnknownOrder, out);
  }
  internal::Order& order = orders_[index];
  if (order.account_id != c.account_id || order.owner != owner) {
    return Reject(c, owner, RejectReason::kNotOwner, out);
  }
  if (c.price.value() < config_.min_price ||
      c.price.value() > config_.max_price) {
    return Reject(c, owner, RejectReason::kInvalidPrice, out);
  }
  if (c.quantity.value() < config_.min_quantity ||
      c.quantity.value() > config_.max_quantity) {
    return Reject(c, owner, RejectReason::kInvalidQuantity, out);
  }
  // The new id may be the order's own; held by another live order of the
  // account and owner, it may not (another owner's may hold it).
  if (c.client_order_id != order.client_order_id &&
      index_.FindByClient(c.account_id, owner, c.client_order_id,
                          orders_.data()) != internal::kNil) {
    return Reject(c, owner, RejectReason::kDuplicateClientOrderId, out);
  }
  BookData& book = books_[order.instrument_id.value() - config_.min_instrument];
  if (order.time_in_force == codec::TimeInForce::kPostOnly &&
      Crosses(book, order.side, c.price)) {
    return Reject(c, owner, RejectReason::kWouldCross, out);
  }

  if (c.client_order_id != order.client_order_id) {
    index_.EraseClient(order.account_id, order.owner, order.client_order_id,
                       index);
    order.client_order_id = c.client_order_id;
    index_.InsertClient(order.account_id, order.owner, order.client_order_id,
                        index);
  }
  const bool keep = c.price == order.price && c.quantity <= order.leaves;
  out.Append(codec::Replaced{.order_id = order.order_id.value(),
                             .account_id = order.account_id.value(),
                             .client_order_id = order.client_order_id.value(),
                             .price = c.price.value(),
                             .quantity = c.quantity.value(),
                             .priority_kept = keep ? codec::PriorityKept::kYes
                                                   : codec::PriorityKept::kNo},
             order.owner);
  // What traded of it stays; its leaves become the new quantity.
  booked_[index] = booked_[index] - order.leaves + c.quantity;
  if (keep) {
    levels_[order.level].quantity -= order.leaves - c.quantity;
    order.leaves = c.quantity;
    return;
  }
  // Priority is lost: the order leaves its place in the queue, takes its new
  // price and quantity, trades if it crosses and rests at the back.
  Unlink(book, index);
  order.price = c.price;
  order.leaves = c.quantity;
  Taker taker{.order_id = order.order_id,
              .account_id = order.account_id,
              .client_order_id = order.client_order_id,
              .instrument_id = order.instrument_id,
              .side = order.side,
              .owner = order.owner,
              .leaves = order.leaves};
  const std::int64_t threshold =
      internal::KeyOf(internal::Opposite(order.side), order.price);
  if (CanTrade(book, order.side, threshold)) {
    Match(book, taker, threshold, out);
  }
  order.leaves = taker.leaves;
  if (order.leaves == codec::Quantity(0)) return Release(index);
  Rest(book, index);
}

template <typename Traits>
void BasicEngine<Traits>::QueryStatus(const codec::Command& c, OwnerTag owner,
                                      ReportBuffer& out) noexcept {
  // By order id when one is given, else the owner's client order id.
  const std::uint32_t index =
      c.order_id.value() != 0
          ? index_.FindById(c.order_id, orders_.data())
          : index_.FindByClient(c.account_id, owner, c.client_order_id,
                                orders_.data());
  if (index == internal::kNil) {
    out.Append(codec::OrderStatus{.order_id = c.order_id.value(),
                                  .account_id = c.account_id.value(),
                                  .client_order_id = c.client_order_id.value(),
                                  .instrument_id = 0,
                                  .side = static_cast<codec::Side>(0),
                                  .state = codec::OrderState::kNotLive,
                                  .price = 0,
                                  .leaves_quantity = 0,
                                  .executed_quantity = 0},
               owner);
    return;
  }
  const internal::Order& order = orders_[index];
  if (order.account_id != c.account_id || order.owner != owner) {
    return Reject(c, owner, codec::RejectReason::kNotOwner, out);
  }
  out.Append(
      codec::OrderStatus{
          .order_id = order.order_id.value(),
          .account_id = order.account_id.value(),
          .client_order_id = order.client_order_id.value(),
          .instrument_id = order.instrument_id.value(),
          .side = order.side,
          .state = codec::OrderState::kLive,
          .price = order.price.value(),
          .leaves_quantity = order.leaves.value(),
          .executed_quantity = (booked_[index] - order.leaves).value()},
      owner);
}

template <typename Traits>
const typename BasicEngine<Traits>::BookData* BasicEngine<Traits>::BookOf(
    codec::InstrumentId instrument_id) const noexcept {
  const std::uint32_t book_index =
      instrument_id.value() - config_.min_instrument;
  return book_index < books_.size() ? &books_[book_index] : nullptr;
}

template <typename Traits>
typename BasicEngine<Traits>::BookView BasicEngine<Traits>::Book(
    codec::InstrumentId instrument_id) const noexcept {
  return BookView(this, instrument_id, BookOf(instrument_id));
}

template <typename Traits>
bool BasicEngine<Traits>::BookView::empty() const noexcept {
  return book_ == nullptr ||
         (book_->sides[0].empty() && book_->sides[1].empty());
}

template <typename Traits>
std::optional<LevelInfo> BasicEngine<Traits>::BookView::Best(
    codec::Side side) const {
  LevelInfo info{};
  return Depth(side, std::span<LevelInfo>(&info, 1)) == 1
             ? std::optional<LevelInfo>(info)
             : std::nullopt;
}

template <typename Traits>
std::size_t BasicEngine<Traits>::BookView::Depth(
    codec::Side side, std::span<LevelInfo> out) const {
  if (book_ == nullptr || out.empty()) return 0;
  if (side != codec::Side::kBuy && side != codec::Side::kSell) return 0;
  std::size_t written = 0;
  book_->sides[internal::SideIndex(side)].ForEachFromBest(
      [&](internal::LevelRef ref) {
        const internal::Level& level = engine_->levels_[ref.level];
        out[written++] = LevelInfo{.price = level.price,
                                   .quantity = level.quantity,
                                   .order_count = level.count};
        return written < out.size();
      });
  return written;
}

template <typename Traits>
std::size_t BasicEngine<Traits>::BookView::level_count(
    codec::Side side) const noexcept {
  if (book_ == nullptr) return 0;
  if (side != codec::Side::kBuy && side != codec::Side::kSell) return 0;
  return book_->sides[internal::SideIndex(side)].size();
}

template <typename Traits>
OrderInfo BasicEngine<Traits>::InfoOf(std::uint32_t index) const noexcept {
  const internal::Order& order = orders_[index];
  return OrderInfo{.order_id = order.order_id,
                   .account_id = order.account_id,
                   .client_order_id = order.client_order_id,
                   .instrument_id = order.instrument_id,
                   .side = order.side,
                   .time_in_force = order.time_in_force,
                   .price = order.price,
                   .leaves_quantity = order.leaves,
                   .owner = order.owner,
                   .executed_quantity = booked_[index] - order.leaves};
}

template <typename Traits>
std::optional<OrderInfo> BasicEngine<Traits>::FindOrder(
    codec::OrderId order_id) const noexcept {
  const std::uint32_t index = index_.FindById(order_id, orders_.data());
  if (index == internal::kNil) return std::nullopt;
  return InfoOf(index);
}

template <typename Traits>
std::optional<OrderInfo> BasicEngine<Traits>::FindOrderByClient(
    codec::AccountId account_id, OwnerTag owner,
    codec::ClientOrderId client_order_id) const noexcept {
  const std::uint32_t index =
      index_.FindByClient(account_id, owner, client_order_id, orders_.data());
  if (index == internal::kNil) return std::nullopt;
  return InfoOf(index);
}

template <typename Traits>
absl::Status BasicEngine<Traits>::CheckInvariants() const {
  std::uint64_t orders_seen = 0;
  std::uint64_t levels_seen = 0;
  for (std::size_t b = 0; b < books_.size(); ++b) {
    const codec::InstrumentId instrument(config_.min_instrument +
                                         static_cast<std::uint32_t>(b));
    for (int s = 0; s < 2; ++s) {
      if (absl::Status status =
              CheckSide(books_[b], instrument, s, orders_seen, levels_seen);
          !status.ok()) {
        return status;
      }
    }
    const auto& bids = books_[b].sides[0];
    const auto& asks = books_[b].sides[1];
    if (!bids.empty() && !asks.empty() && bids.Best().key >= -asks.Best().key) {
      return absl::InternalError(absl::StrFormat(
          "instrument %d is crossed at rest: bid %d, ask %d",
          instrument.value(), bids.Best().key, -asks.Best().key));
    }
  }
  if (orders_seen != orders_.in_use()) {
    return absl::InternalError(
        absl::StrFormat("%d orders in books, %d records in use", orders_seen,
                        orders_.in_use()));
  }
  if (levels_seen != levels_.in_use()) {
    return absl::InternalError(
        absl::StrFormat("%d levels in books, %d records in use", levels_seen,
                        levels_.in_use()));
  }
  return absl::OkStatus();
}

template <typename Traits>
absl::Status BasicEngine<Traits>::CheckSide(const BookData& book,
                                            codec::InstrumentId instrument,
                                            int s, std::uint64_t& orders_seen,
                                            std::uint64_t& levels_seen) const {
  const codec::Side side = s == 0 ? codec::Side::kBuy : codec::Side::kSell;
  absl::Status status;
  bool first = true;
  std::int64_t previous_key = 0;
  book.sides[s].ForEachFromBest([&](internal::LevelRef ref) {
    ++levels_seen;
    if (!first && ref.key >= previous_key) {
      status = absl::InternalError(absl::StrFormat(
          "instrument %d side %d: level keys not strictly decreasing from "
          "the best (%d then %d)",
          instrument.value(), s, previous_key, ref.key));
      return false;
    }
    first = false;
    previous_key = ref.key;
    status = CheckLevel(instrument, side, ref, orders_seen);
    return status.ok();
  });
  return status;
}

template <typename Traits>
absl::Status BasicEngine<Traits>::CheckLevel(codec::InstrumentId instrument,
                                             codec::Side side,
                                             internal::LevelRef ref,
                                             std::uint64_t& orders_seen) const {
  const internal::Level& level = levels_[ref.level];
  if (internal::KeyOf(side, level.price) != ref.key) {
    return absl::InternalError(absl::StrFormat(
        "instrument %d: level %d has price %d "
        "but key %d",
        instrument.value(), ref.level, level.price.value(), ref.key));
  }
  if (level.count == 0 || level.head == internal::kNil) {
    return absl::InternalError(
        absl::StrFormat("instrument %d: empty level at price %d",
                        instrument.value(), level.price.value()));
  }
  std::uint32_t count = 0;
  codec::Quantity quantity(0);
  std::uint32_t previous = internal::kNil;
  for (std::uint32_t i = level.head; i != internal::kNil; i = orders_[i].next) {
    ++count;
    quantity += orders_[i].leaves;
    if (absl::Status status =
            CheckLinkedOrder(instrument, side, ref.level, i, previous, count);
        !status.ok()) {
      return status;
    }
    previous = i;
  }
  if (level.tail != previous || count != level.count ||
      quantity != level.quantity) {
    return absl::InternalError(absl::StrFormat(
        "instrument %d price %d: level says %d orders / %d lots, its "
        "FIFO holds %d / %d",
        instrument.value(), level.price.value(), level.count,
        level.quantity.value(), count, quantity.value()));
  }
  orders_seen += count;
  return absl::OkStatus();
}

template <typename Traits>
absl::Status BasicEngine<Traits>::CheckLinkedOrder(
    codec::InstrumentId instrument, codec::Side side, std::uint32_t level_index,
    std::uint32_t index, std::uint32_t previous, std::uint32_t count) const {
  const internal::Level& level = levels_[level_index];
  const internal::Order& order = orders_[index];
  if (order.prev != previous || order.level != level_index ||
      order.price != level.price || order.side != side ||
      order.instrument_id != instrument || order.leaves == codec::Quantity(0) ||
      count > level.count) {
    return absl::InternalError(absl::StrFormat(
        "order %d (index %d) does not belong where it is linked: "
        "price %d side %d instrument %d leaves %d, level price %d",
        order.order_id.value(), index, order.price.value(),
        static_cast<int>(order.side), order.instrument_id.value(),
        order.leaves.value(), level.price.value()));
  }
  if (order.time_in_force != codec::TimeInForce::kGoodTillCancel &&
      order.time_in_force != codec::TimeInForce::kPostOnly) {
    return absl::InternalError(absl::StrFormat(
        "order %d rests with time in force %d", order.order_id.value(),
        static_cast<int>(order.time_in_force)));
  }
  if (index_.FindById(order.order_id, orders_.data()) != index) {
    return absl::InternalError(absl::StrFormat(
        "order %d is not found by its id", order.order_id.value()));
  }
  if (index_.FindByClient(order.account_id, order.owner, order.client_order_id,
                          orders_.data()) != index) {
    return absl::InternalError(
        absl::StrFormat("order %d is not found by (account %d, owner %d, "
                        "client_order_id %d)",
                        order.order_id.value(), order.account_id.value(),
                        order.owner, order.client_order_id.value()));
  }
  return absl::OkStatus();
}

template <typename Traits>
absl::Status BasicEngine<Traits>::Reconfigure(const EngineConfig& config) {
  if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  // Check everything first: a refused reconfiguration changes nothing.
  if (config.max_live_orders < orders_.in_use()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "max_live_orders %d is below the %d orders live now: they would be "
        "lost (cancel some first, or keep max_live_orders >= %d)",
        config.max_live_orders, orders_.in_use(), orders_.in_use()));
  }
  std::uint64_t live_quantity = 0;
  for (std::size_t b = 0; b < books_.size(); ++b) {
    const std::uint32_t instrument =
        config_.min_instrument + static_cast<std::uint32_t>(b);
    const BookData& book = books_[b];
    if (book.sides[0].empty() && book.sides[1].empty()) continue;
    if (instrument < config.min_instrument ||
        instrument > config.max_instrument) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "instrument %d has live orders but is outside the new range "
          "min_instrument..max_instrument = %d..%d: they would be lost",
          instrument, config.min_instrument, config.max_instrument));
    }
    for (const auto& side : book.sides) {
      side.ForEachFromBest([&](internal::LevelRef ref) {
        live_quantity += levels_[ref.level].quantity.value();
        return true;
      });
    }
  }
  constexpr std::uint64_t kMaxTotal = std::numeric_limits<std::int64_t>::max();
  // ValidateConfig bounds the product by kMaxTotal.
  const std::uint64_t new_total =
      std::uint64_t{config.max_live_orders} * config.max_quantity;
  if (live_quantity > kMaxTotal - new_total) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the live orders' quantity (%d) plus max_live_orders (%d) times "
        "max_quantity (%d) exceeds 2^63-1, so a book's total quantity could "
        "overflow; lower one of them",
        live_quantity, config.max_live_orders, config.max_quantity));
  }

  // Apply: capacity first (the one step that allocates), then the books.
  if (config.max_live_orders > orders_.capacity()) {
    base::HugePageArray<codec::Quantity> booked(config.max_live_orders);
    std::copy(booked_.data(), booked_.data() + orders_.high_water(),
              booked.data());
    booked_ = std::move(booked);
  }
  orders_.Reserve(config.max_live_orders);
  levels_.Reserve(config.max_live_orders);
  index_.Reserve(config.max_live_orders);
  std::vector<BookData> books(std::size_t{config.max_instrument} -
                              config.min_instrument + 1);
  for (std::size_t b = 0; b < books_.size(); ++b) {
    const std::uint32_t instrument =
        config_.min_instrument + static_cast<std::uint32_t>(b);
    if (instrument >= config.min_instrument &&
        instrument <= config.max_instrument) {
      // Side by side (the struct's implicit move would loop over its
      // array, which clang-tidy 14 misreports as a reserved identifier).
      BookData& moved = books[instrument - config.min_instrument];
      moved.sides[0] = std::move(books_[b].sides[0]);
      moved.sides[1] = std::move(books_[b].sides[1]);
    }
  }
  books_ = std::move(books);
  config_ = config;
  return absl::OkStatus();
}

template <typename Traits>
absl::Status BasicEngine<Traits>::CheckRestorable(
    std::span<const OrderInfo> orders, std::uint64_t next_order_id,
    std::uint64_t next_match_id, std::size_t* bad_order) const {
  if (orders_.in_use() != 0 || next_order_id_ != 1 || next_match_id_ != 1) {
    return absl::FailedPreconditionError(
        "a state can be restored only into a new engine");
  }
  if (next_order_id == 0 || next_match_id == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "next_order_id %d / next_match_id %d: both must be at least 1",
        next_order_id, next_match_id));
  }
  if (orders.size() > config_.max_live_orders) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d live orders, more than max_live_orders %d",
                        orders.size(), config_.max_live_orders));
  }
  const auto fail = [&](std::size_t i, const std::string& why) {
    if (bad_order != nullptr) *bad_order = i;
    return absl::InvalidArgumentError(
        absl::StrFormat("live order #%d (order_id %d): %s", i,
                        orders[i].order_id.value(), why));
  };
  const std::uint64_t reserved =
      std::uint64_t{config_.max_live_orders} * config_.max_quantity;
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < orders.size(); ++i) {
    const std::string why =
        WhyNotRestorable(orders, i, next_order_id, reserved, total);
    if (!why.empty()) return fail(i, why);
  }
  // No book crossed: the first bid of a book (its best) is below its first
  // ask.
  for (std::size_t i = 0; i < orders.size(); ++i) {
    const std::string why = WhyCrossed(orders, i);
    if (!why.empty()) return fail(i, why);
  }
  return absl::OkStatus();
}

template <typename Traits>
std::string BasicEngine<Traits>::WhyNotRestorable(
    std::span<const OrderInfo> orders, std::size_t i,
    std::uint64_t next_order_id, std::uint64_t reserved,
    std::uint64_t& total) const {
  constexpr std::uint64_t kMaxTotal = std::numeric_limits<std::int64_t>::max();
  const OrderInfo& o = orders[i];
  const std::uint32_t instrument = o.instrument_id.value();
  if (instrument < config_.min_instrument ||
      instrument > config_.max_instrument) {
    return absl::StrFormat(
        "instrument_id %d is outside the configured range "
        "%d..%d",
        instrument, config_.min_instrument, config_.max_instrument);
  }
  if (o.side != codec::Side::kBuy && o.side != codec::Side::kSell) {
    return absl::StrFormat("side %d is neither Buy nor Sell",
                           static_cast<int>(o.side));
  }
  if (o.time_in_force != codec::TimeInForce::kGoodTillCancel &&
      o.time_in_force != codec::TimeInForce::kPostOnly) {
    return absl::StrFormat(
        "time_in_force %d cannot rest (GoodTillCancel or "
        "PostOnly only)",
        static_cast<int>(o.time_in_force));
  }
  if (o.leaves_quantity.value() == 0) return "leaves_quantity is 0";
  if (o.leaves_quantity.value() > kMaxTotal - reserved - total) {
    return absl::StrFormat(
        "the live orders' total leaves pass 2^63-1 minus "
        "max_live_orders * max_quantity (%d)",
        reserved);
  }
  total += o.leaves_quantity.value();
  if (o.price.value() == std::numeric_limits<std::int64_t>::min()) {
    return "price is INT64_MIN, which has no sort key";
  }
  if (o.order_id.value() == 0 || o.order_id.value() >= next_order_id) {
    return absl::StrFormat(
        "order_id is not in 1..%d (next_order_id "
        "- 1)",
        next_order_id - 1);
  }
  if (i > 0) {
    const OrderInfo& p = orders[i - 1];
    const bool same_side =
        p.instrument_id == o.instrument_id && p.side == o.side;
    const bool in_order =
        p.instrument_id.value() < instrument ||
        (p.instrument_id == o.instrument_id &&
         internal::SideIndex(p.side) < internal::SideIndex(o.side)) ||
        (same_side &&
         internal::KeyOf(p.side, p.price) >= internal::KeyOf(o.side, o.price));
    if (!in_order) {
      return absl::StrFormat(
          "out of book order after order_id %d (books "
          "ascending, bids before asks, best price first)",
          p.order_id.value());
    }
  }
  return {};
}

template <typename Traits>
std::string BasicEngine<Traits>::WhyCrossed(std::span<const OrderInfo> orders,
                                            std::size_t i) {
  const OrderInfo& o = orders[i];
  const bool first_of_side = i == 0 ||
                             orders[i - 1].instrument_id != o.instrument_id ||
                             orders[i - 1].side != o.side;
  if (!first_of_side || o.side != codec::Side::kSell) return {};
  // The best bid of this book, if any, is the first order of its bids.
  std::size_t b = i;
  while (b > 0 && orders[b - 1].instrument_id == o.instrument_id) --b;
  if (b < i && orders[b].side == codec::Side::kBuy &&
      orders[b].price.value() >= o.price.value()) {
    return absl::StrFormat(
        "the book of instrument %d is crossed: best bid %d, "
        "best ask %d",
        o.instrument_id.value(), orders[b].price.value(), o.price.value());
  }
  return {};
}

template <typename Traits>
absl::Status BasicEngine<Traits>::Restore(std::span<const OrderInfo> orders,
                                          std::uint64_t next_order_id,
                                          std::uint64_t next_match_id,
                                          std::size_t* bad_order) {
  // 1. Books: level by level from the worst of each side to the best, so
  // that every new level goes to the back of its side's array (O(1));
  // inside a level, oldest first, so each order goes to the back of its
  // FIFO. The pool index of orders[i] goes to pool_index[i].
  std::vector<std::uint32_t> pool_index(orders.size());
  std::size_t end = orders.size();
  while (end > 0) {
    std::size_t begin = end - 1;
    while (begin > 0 &&
           orders[begin - 1].instrument_id == orders[end - 1].instrument_id &&
           orders[begin - 1].side == orders[end - 1].side &&
           orders[begin - 1].price == orders[end - 1].price) {
      --begin;
    }
    for (std::size_t i = begin; i < end; ++i) {
      const OrderInfo& o = orders[i];
      const std::uint32_t index = orders_.Allocate();
      internal::Order& order = orders_[index];
      order.order_id = o.order_id;
      order.account_id = o.account_id;
      order.client_order_id = o.client_order_id;
      order.price = o.price;
      order.leaves = o.leaves_quantity;
      order.instrument_id = o.instrument_id;
      order.side = o.side;
      order.time_in_force = o.time_in_force;
      order.owner = o.owner;
      booked_[index] = o.executed_quantity + o.leaves_quantity;
      Rest(books_[o.instrument_id.value() - config_.min_instrument], index);
      pool_index[i] = index;
    }
    end = begin;
  }
  // 2. Both indexes, in the order of `orders`, each key looked up before it
  // is inserted (the uniqueness check: the later position of a repeated
  // key is the one named). The tables are random access over tens of MB at
  // a million orders; the slots of the order kPrefetchDistance ahead are
  // requested while this one is inserted.
  constexpr std::size_t kPrefetchDistance = 16;
  index_.PresizeClients(static_cast<std::uint32_t>(orders.size()));
  const auto fail = [&](std::size_t i, const std::string& why) {
    if (bad_order != nullptr) *bad_order = i;
    Reset();
    return absl::InvalidArgumentError(
        absl::StrFormat("live order #%d (order_id %d): %s", i,
                        orders[i].order_id.value(), why));
  };
  for (std::size_t i = 0; i < orders.size(); ++i) {
    if (i + kPrefetchDistance < orders.size()) {
      const OrderInfo& ahead = orders[i + kPrefetchDistance];
      index_.PrefetchId(ahead.order_id);
      index_.PrefetchClient(ahead.account_id, ahead.owner,
                            ahead.client_order_id);
    }
    const OrderInfo& o = orders[i];
    if (index_.FindById(o.order_id, orders_.data()) != internal::kNil) {
      return fail(i, "order_id is not unique");
    }
    if (index_.FindByClient(o.account_id, o.owner, o.client_order_id,
                            orders_.data()) != internal::kNil) {
      return fail(i, absl::StrFormat("(account %d, owner %d, client_order_id "
                                     "%d) is not unique",
                                     o.account_id.value(), o.owner,
                                     o.client_order_id.value()));
    }
    index_.InsertId(o.order_id, pool_index[i]);
    index_.InsertClient(o.account_id, o.owner, o.client_order_id,
                        pool_index[i]);
  }
  next_order_id_ = next_order_id;
  next_match_id_ = next_match_id;
  return absl::OkStatus();
}

template <typename Traits>
void BasicEngine<Traits>::Reset() noexcept {
  for (BookData& book : books_) {
    book.sides[0].Clear();
    book.sides[1].Clear();
  }
  orders_.Clear();
  levels_.Clear();
  index_.Clear();
  next_order_id_ = 1;
  next_match_id_ = 1;
}

}  // namespace orderwire::engine

#endif  // ORDERWIRE_ENGINE_INTERNAL_ENGINE_IMPL_H_
