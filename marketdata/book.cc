// The subscriber's L3 book: design note and costs in book.h.
#include "marketdata/book.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "codec/strong.h"
#include "codec/types.h"
#include "feed/kind_table.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "feed/types.h"

namespace orderwire::marketdata {
namespace {

using codec::InstrumentId;
using codec::OrderId;
using codec::Price;
using codec::Quantity;
using codec::Side;

constexpr std::array<Side, 2> kSides = {Side::kBuy, Side::kSell};

[[nodiscard]] bool ValidSide(Side side) noexcept {
  return side == Side::kBuy || side == Side::kSell;
}

[[nodiscard]] bool ValidState(feed::TradingState state) noexcept {
  return state == feed::TradingState::kTrading ||
         state == feed::TradingState::kHalted ||
         state == feed::TradingState::kUnlisted;
}

// The model of a block of a known kind. Precondition: block.kind() is
// Model's (so FromBlock cannot fail) and its length at least Model's size.
template <typename Model>
[[nodiscard]] Model Read(feed::MessageBlock block) noexcept {
  return feed::MessageView<Model>::FromBlock(block)->ToModel();
}

}  // namespace

std::string_view Name(BookError error) noexcept {
  switch (error) {
    case BookError::kOk:
      return "Ok";
    case BookError::kUnknownKind:
      return "UnknownKind";
    case BookError::kBadLength:
      return "BadLength";
    case BookError::kInstrumentNotListed:
      return "InstrumentNotListed";
    case BookError::kOrderIdLive:
      return "OrderIdLive";
    case BookError::kOrderIdUnknown:
      return "OrderIdUnknown";
    case BookError::kInstrumentMismatch:
      return "InstrumentMismatch";
    case BookError::kSideMismatch:
      return "SideMismatch";
    case BookError::kPriceMismatch:
      return "PriceMismatch";
    case BookError::kAboveDisplayed:
      return "AboveDisplayed";
    case BookError::kReducedToZero:
      return "ReducedToZero";
    case BookError::kZeroQuantity:
      return "ZeroQuantity";
    case BookError::kBadValue:
      return "BadValue";
    case BookError::kUnlistedNotEmpty:
      return "UnlistedNotEmpty";
  }
  return "";
}

absl::Status ToStatus(BookError error) {
  if (error == BookError::kOk) return absl::OkStatus();
  if (!IsContradiction(error)) {
    std::string message = "feed message not applied: ";
    message += Name(error);
    return absl::InvalidArgumentError(message);
  }
  std::string message = "Contradiction: ";
  message += Name(error);
  return absl::FailedPreconditionError(message);
}

void Book::Reserve(std::size_t orders, std::size_t levels) {
  orders_.reserve(orders);
  order_index_.reserve(orders);
  levels_.reserve(levels);
  level_index_.reserve(levels);
}

BookError Book::Apply(feed::MessageBlock block) {
  switch (block.kind()) {
    case feed::MessageKind::kInstrumentDirectory:
      return Apply(Read<feed::InstrumentDirectory>(block));
    case feed::MessageKind::kTradingStatus:
      return Apply(Read<feed::TradingStatus>(block));
    case feed::MessageKind::kOrderAdded:
      return Apply(Read<feed::OrderAdded>(block));
    case feed::MessageKind::kOrderExecuted:
      return Apply(Read<feed::OrderExecuted>(block));
    case feed::MessageKind::kOrderReduced:
      return Apply(Read<feed::OrderReduced>(block));
    case feed::MessageKind::kOrderDeleted:
      return Apply(Read<feed::OrderDeleted>(block));
    case feed::MessageKind::kOrderReplaced:
      return Apply(Read<feed::OrderReplaced>(block));
    case feed::MessageKind::kSystemEvent:
    case feed::MessageKind::kSnapshotStart:
    case feed::MessageKind::kSnapshotEnd:
      return BookError::kOk;  // no book change: the caller's
    default:
      return BookError::kUnknownKind;
  }
}

BookError Book::ApplyMessage(std::span<const std::byte> message) {
  if (message.size() < feed::kMinMessageLength ||
      message.size() > std::numeric_limits<std::uint16_t>::max()) {
    return BookError::kBadLength;
  }
  const feed::MessageBlock block(message.data(),
                                 static_cast<std::uint16_t>(message.size()));
  if (block.known() && message.size() < block.info().size) {
    return BookError::kBadLength;
  }
  return Apply(block);
}

BookError Book::Apply(const feed::InstrumentDirectory& message) {
  InstrumentBook& book = books_[SlotFor(InstrumentId(message.instrument_id))];
  book.info.min_price = Price(message.min_price);
  book.info.max_price = Price(message.max_price);
  book.info.min_quantity = Quantity(message.min_quantity);
  book.info.max_quantity = Quantity(message.max_quantity);
  book.known = true;  // a known instrument keeps its state and orders
  return BookError::kOk;
}

BookError Book::Apply(const feed::TradingStatus& message) {
  const std::uint32_t slot = KnownSlot(InstrumentId(message.instrument_id));
  if (slot == kNil) return BookError::kInstrumentNotListed;
  if (!ValidState(message.state)) return BookError::kBadValue;
  InstrumentBook& book = books_[slot];
  if (message.state == feed::TradingState::kUnlisted && book.order_count != 0) {
    return BookError::kUnlistedNotEmpty;
  }
  book.info.state = message.state;
  return BookError::kOk;
}

BookError Book::Apply(const feed::OrderAdded& message) {
  const std::uint32_t slot = ListedSlot(InstrumentId(message.instrument_id));
  if (slot == kNil) return BookError::kInstrumentNotListed;
  const OrderId order_id(message.order_id);
  if (order_index_.contains(order_id)) return BookError::kOrderIdLive;
  if (!ValidSide(message.side)) return BookError::kBadValue;
  if (message.quantity == 0) return BookError::kZeroQuantity;
  const std::uint32_t index = NewOrder();
  Order& order = orders_[index];
  order.order_id = order_id;
  order.price = Price(message.price);
  order.quantity = Quantity(message.quantity);
  order.slot = slot;
  order.side = message.side;
  order_index_.emplace(order_id, index);
  Rest(index);
  ++books_[slot].order_count;
  return BookError::kOk;
}

BookError Book::Apply(const feed::OrderExecuted& message) {
  std::uint32_t index = kNil;
  const BookError error =
      FindLive(message.order_id, message.instrument_id, &index);
  if (error != BookError::kOk) return error;
  Order& order = orders_[index];
  if (message.side != order.side) return BookError::kSideMismatch;
  if (Price(message.price) != order.price) return BookError::kPriceMismatch;
  if (message.quantity == 0) return BookError::kZeroQuantity;
  const Quantity executed(message.quantity);
  if (executed > order.quantity) return BookError::kAboveDisplayed;
  if (executed == order.quantity) {
    Remove(index);  // executed to 0: it leaves; no OrderDeleted follows
    return BookError::kOk;
  }
  order.quantity -= executed;
  levels_[order.level].quantity -= executed;
  return BookError::kOk;
}

BookError Book::Apply(const feed::OrderReduced& message) {
  std::uint32_t index = kNil;
  const BookError error =
      FindLive(message.order_id, message.instrument_id, &index);
  if (error != BookError::kOk) return error;
  Order& order = orders_[index];
  if (message.cancelled_quantity == 0) return BookError::kZeroQuantity;
  const Quantity cancelled(message.cancelled_quantity);
  if (cancelled > order.quantity) return BookError::kAboveDisplayed;
  if (cancelled == order.quantity) return BookError::kReducedToZero;
  order.quantity -= cancelled;  // keeps its place
  levels_[order.level].quantity -= cancelled;
  return BookError::kOk;
}

BookError Book::Apply(const feed::OrderDeleted& message) {
  std::uint32_t index = kNil;
  const BookError error =
      FindLive(message.order_id, message.instrument_id, &index);
  if (error != BookError::kOk) return error;
  Remove(index);
  return BookError::kOk;
}

BookError Book::Apply(const feed::OrderReplaced& message) {
  std::uint32_t index = kNil;
  const BookError error =
      FindLive(message.order_id, message.instrument_id, &index);
  if (error != BookError::kOk) return error;
  if (message.quantity == 0) return BookError::kZeroQuantity;
  Unlink(index);
  Order& order = orders_[index];
  order.price = Price(message.price);
  order.quantity = Quantity(message.quantity);
  Rest(index);  // the back of the new price's level: priority lost
  return BookError::kOk;
}

void Book::Clear(InstrumentId instrument_id) {
  const std::uint32_t slot = KnownSlot(instrument_id);
  if (slot == kNil) return;
  InstrumentBook& book = books_[slot];
  for (std::size_t s = 0; s < kSides.size(); ++s) {
    for (const auto& [price, level_index] : book.sides[s]) {
      Level& level = levels_[level_index];
      for (std::uint32_t i = level.head; i != kNil;) {
        const std::uint32_t next = orders_[i].next;
        order_index_.erase(orders_[i].order_id);
        orders_[i].next = free_order_;
        free_order_ = i;
        i = next;
      }
      level_index_.erase(LevelKey{slot, kSides[s], price});
      level.head = free_level_;
      free_level_ = level_index;
    }
    book.sides[s].clear();
  }
  book.order_count = 0;
  book.known = false;
  book.info = InstrumentInfo{};
  book.info.instrument_id = instrument_id;
}

void Book::Clear() {
  orders_.clear();
  free_order_ = kNil;
  levels_.clear();
  free_level_ = kNil;
  order_index_.clear();
  level_index_.clear();
  for (InstrumentBook& book : books_) {
    for (SideLevels& side : book.sides) side.clear();
    book.order_count = 0;
    book.known = false;
    const InstrumentId instrument_id = book.info.instrument_id;
    book.info = InstrumentInfo{};
    book.info.instrument_id = instrument_id;
  }
}

std::optional<BookOrder> Book::FindOrder(OrderId order_id) const {
  const auto it = order_index_.find(order_id);
  if (it == order_index_.end()) return std::nullopt;
  return ToBookOrder(orders_[it->second]);
}

std::optional<InstrumentInfo> Book::FindInstrument(
    InstrumentId instrument_id) const {
  const std::uint32_t slot = KnownSlot(instrument_id);
  if (slot == kNil) return std::nullopt;
  return books_[slot].info;
}

std::optional<LevelInfo> Book::Best(InstrumentId instrument_id,
                                    Side side) const {
  const std::uint32_t slot = KnownSlot(instrument_id);
  if (slot == kNil) return std::nullopt;
  const SideLevels& levels = books_[slot].sides[SideIndex(side)];
  if (levels.empty()) return std::nullopt;
  const Level& level = levels_[levels.begin()->second];  // best first
  return LevelInfo{level.price, level.quantity, level.order_count};
}

std::size_t Book::Depth(InstrumentId instrument_id, Side side,
                        std::span<LevelInfo> out) const {
  const std::uint32_t slot = KnownSlot(instrument_id);
  if (slot == kNil) return 0;
  const SideLevels& levels = books_[slot].sides[SideIndex(side)];
  std::size_t written = 0;
  for (auto it = levels.begin(); it != levels.end() && written < out.size();
       ++it) {
    const Level& level = levels_[it->second];
    out[written++] = {level.price, level.quantity, level.order_count};
  }
  return written;
}

std::size_t Book::level_count(InstrumentId instrument_id, Side side) const {
  const std::uint32_t slot = KnownSlot(instrument_id);
  return slot == kNil ? 0 : books_[slot].sides[SideIndex(side)].size();
}

std::size_t Book::order_count(InstrumentId instrument_id) const {
  const std::uint32_t slot = KnownSlot(instrument_id);
  return slot == kNil ? 0 : books_[slot].order_count;
}

std::uint32_t Book::KnownSlot(InstrumentId instrument_id) const {
  const auto it = slot_index_.find(instrument_id);
  if (it == slot_index_.end() || !books_[it->second].known) return kNil;
  return it->second;
}

std::uint32_t Book::ListedSlot(InstrumentId instrument_id) const {
  const std::uint32_t slot = KnownSlot(instrument_id);
  if (slot == kNil || !books_[slot].info.listed()) return kNil;
  return slot;
}

BookError Book::FindLive(std::uint64_t order_id, std::uint32_t instrument_id,
                         std::uint32_t* index) const {
  const std::uint32_t slot = ListedSlot(InstrumentId(instrument_id));
  if (slot == kNil) return BookError::kInstrumentNotListed;
  const auto it = order_index_.find(OrderId(order_id));
  if (it == order_index_.end()) return BookError::kOrderIdUnknown;
  if (orders_[it->second].slot != slot) return BookError::kInstrumentMismatch;
  *index = it->second;
  return BookError::kOk;
}

std::uint32_t Book::SlotFor(InstrumentId instrument_id) {
  const auto [it, inserted] = slot_index_.try_emplace(
      instrument_id, static_cast<std::uint32_t>(books_.size()));
  if (!inserted) return it->second;
  const std::uint32_t slot = it->second;
  books_.emplace_back();
  books_.back().info.instrument_id = instrument_id;
  const auto at =
      std::lower_bound(slots_by_id_.begin(), slots_by_id_.end(), instrument_id,
                       [&](std::uint32_t s, InstrumentId id) {
                         return books_[s].info.instrument_id < id;
                       });
  slots_by_id_.insert(at, slot);
  return slot;
}

void Book::Rest(std::uint32_t index) {
  const LevelKey key{orders_[index].slot, orders_[index].side,
                     orders_[index].price};
  const auto [it, inserted] = level_index_.try_emplace(key, kNil);
  if (inserted) {
    const std::uint32_t fresh = NewLevel();
    levels_[fresh] = Level{key.price, Quantity(0), 0, kNil, kNil};
    books_[key.slot].sides[SideIndex(key.side)].emplace(key.price, fresh);
    it->second = fresh;
  }
  const std::uint32_t level_index = it->second;
  Order& order = orders_[index];
  Level& level = levels_[level_index];
  order.level = level_index;
  order.prev = level.tail;
  order.next = kNil;
  if (level.tail == kNil) {
    level.head = index;
  } else {
    orders_[level.tail].next = index;
  }
  level.tail = index;
  level.quantity += order.quantity;
  ++level.order_count;
}

void Book::Unlink(std::uint32_t index) {
  Order& order = orders_[index];
  Level& level = levels_[order.level];
  if (order.prev == kNil) {
    level.head = order.next;
  } else {
    orders_[order.prev].next = order.next;
  }
  if (order.next == kNil) {
    level.tail = order.prev;
  } else {
    orders_[order.next].prev = order.prev;
  }
  level.quantity -= order.quantity;
  --level.order_count;
  if (level.order_count == 0) {
    books_[order.slot].sides[SideIndex(order.side)].erase(order.price);
    level_index_.erase(LevelKey{order.slot, order.side, order.price});
    level.head = free_level_;
    free_level_ = order.level;
  }
  order.level = kNil;
  order.prev = kNil;
  order.next = kNil;
}

void Book::Remove(std::uint32_t index) {
  Unlink(index);
  Order& order = orders_[index];
  order_index_.erase(order.order_id);
  --books_[order.slot].order_count;
  order.next = free_order_;
  free_order_ = index;
}

std::uint32_t Book::NewOrder() {
  if (free_order_ != kNil) {
    const std::uint32_t index = free_order_;
    free_order_ = orders_[index].next;
    return index;
  }
  orders_.emplace_back();
  return static_cast<std::uint32_t>(orders_.size() - 1);
}

std::uint32_t Book::NewLevel() {
  if (free_level_ != kNil) {
    const std::uint32_t index = free_level_;
    free_level_ = levels_[index].head;
    return index;
  }
  levels_.emplace_back();
  return static_cast<std::uint32_t>(levels_.size() - 1);
}

}  // namespace orderwire::marketdata
