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

#include "absl/container/flat_hash_map.h"
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
  levels_.reserve(levels);
  std::size_t cells = kMinIdCells;
  while (cells < 2 * orders) cells *= 2;
  if (cells > id_cells_.size()) RebuildIds(cells);
  id_overflow_.reserve(orders / 4);  // ids whose cell is taken: few
}

// Flattened: the Apply of each kind and what it calls are inlined into
// the dispatch (the functions kept out of line are marked noinline in
// book.h), which makes a fifth fewer instructions a message on `mixed`.
[[gnu::flatten]] BookError Book::Apply(feed::MessageBlock block) {
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
  book.listed = book.info.listed();
  ++best_changes_;
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
  book.listed = book.info.listed();
  ++best_changes_;
  return BookError::kOk;
}

BookError Book::Apply(const feed::OrderAdded& message) {
  const std::uint32_t slot = ListedSlot(InstrumentId(message.instrument_id));
  if (slot == kNil) return BookError::kInstrumentNotListed;
  if (FindId(message.order_id) != kNil) return BookError::kOrderIdLive;
  if (!ValidSide(message.side)) return BookError::kBadValue;
  if (message.quantity == 0) return BookError::kZeroQuantity;
  EnsureIdRoom();
  const std::uint32_t index = NewOrder();
  Order& order = orders_[index];
  order.order_id = OrderId(message.order_id);
  order.price = Price(message.price);
  order.quantity = Quantity(message.quantity);
  order.slot = slot;
  order.side = message.side;
  Rest(index);
  InsertId(message.order_id, index);
  ++live_orders_;
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
  best_changes_ += static_cast<std::uint64_t>(AtBest(order));
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
  best_changes_ += static_cast<std::uint64_t>(AtBest(order));
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
  for (SideLevels& side : book.sides) {
    side.ForEachBestFirst([&](std::int64_t /*key*/, std::uint32_t index) {
      Level& level = levels_[index];
      for (std::uint32_t i = level.head; i != kNil;) {
        Order& order = orders_[i];
        const std::uint32_t next = order.next;
        EraseId(order.order_id.value(), i);
        order.level = kNil;
        order.next = free_order_;
        free_order_ = i;
        i = next;
      }
      level.head = free_level_;
      free_level_ = index;
      return true;
    });
    side.clear();  // keeps its memory
  }
  live_orders_ -= book.order_count;
  ++best_changes_;
  book.order_count = 0;
  book.known = false;
  book.listed = false;
  book.info = InstrumentInfo{};
  book.info.instrument_id = instrument_id;
}

void Book::Clear() {
  orders_.clear();
  free_order_ = kNil;
  levels_.clear();
  free_level_ = kNil;
  live_orders_ = 0;
  ++best_changes_;
  std::fill(id_cells_.begin(), id_cells_.end(), IdCell{});
  // Erased one by one: clear() would free a large table.
  absl::erase_if(id_overflow_, [](const auto&) { return true; });
  for (InstrumentBook& book : books_) {
    for (SideLevels& side : book.sides) side.clear();
    book.order_count = 0;
    book.known = false;
    book.listed = false;
    const InstrumentId instrument_id = book.info.instrument_id;
    book.info = InstrumentInfo{};
    book.info.instrument_id = instrument_id;
  }
}

std::optional<BookOrder> Book::FindOrder(OrderId order_id) const {
  const std::uint32_t index = FindId(order_id.value());
  if (index == kNil) return std::nullopt;
  return ToBookOrder(orders_[index]);
}

std::optional<InstrumentInfo> Book::FindInstrument(
    InstrumentId instrument_id) const {
  const std::uint32_t slot = KnownSlot(instrument_id);
  if (slot == kNil) return std::nullopt;
  return books_[slot].info;
}

std::size_t Book::Depth(InstrumentId instrument_id, Side side,
                        std::span<LevelInfo> out) const {
  const std::uint32_t slot = KnownSlot(instrument_id);
  if (slot == kNil) return 0;
  std::size_t written = 0;
  if (out.empty()) return 0;
  books_[slot].sides[SideIndex(side)].ForEachBestFirst(
      [&](std::int64_t /*key*/, std::uint32_t index) {
        const Level& level = levels_[index];
        out[written++] = {level.price, level.quantity, level.order_count};
        return written < out.size();
      });
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

std::uint32_t Book::LargeSlot(InstrumentId instrument_id) const noexcept {
  const auto it = slot_index_.find(instrument_id);
  return it == slot_index_.end() ? kNil : it->second;
}

BookError Book::FindLive(std::uint64_t order_id, std::uint32_t instrument_id,
                         std::uint32_t* index) const {
  const std::uint32_t slot = ListedSlot(InstrumentId(instrument_id));
  if (slot == kNil) return BookError::kInstrumentNotListed;
  const std::uint32_t found = FindId(order_id);
  if (found == kNil) return BookError::kOrderIdUnknown;
  if (orders_[found].slot != slot) return BookError::kInstrumentMismatch;
  *index = found;
  return BookError::kOk;
}

std::uint32_t Book::SlotFor(InstrumentId instrument_id) {
  const auto slot = static_cast<std::uint32_t>(books_.size());
  if (instrument_id.value() < kDirectInstrumentIds) {
    if (instrument_id.value() >= direct_slots_.size()) {
      direct_slots_.resize(instrument_id.value() + 1, kNil);
    }
    std::uint32_t& direct = direct_slots_[instrument_id.value()];
    if (direct != kNil) return direct;
    direct = slot;
  } else {
    const auto [it, inserted] = slot_index_.try_emplace(instrument_id, slot);
    if (!inserted) return it->second;
  }
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
  const Order& resting = orders_[index];
  SideLevels& side = books_[resting.slot].sides[SideIndex(resting.side)];
  const std::int64_t key = SortKey(resting.side, resting.price);
  std::uint32_t level_index = side.Find(key);
  if (level_index == kNil) {
    level_index = NewLevel();
    Level& level = levels_[level_index];  // field by field: an aggregate
    level.price = resting.price;          // temporary stalled the copy
    level.quantity = Quantity(0);
    level.order_count = 0;
    level.head = kNil;
    level.tail = kNil;
    side.Insert(key, level_index);
  }
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
  best_changes_ += static_cast<std::uint64_t>(side.best() == level_index);
}

void Book::Unlink(std::uint32_t index) {
  Order& order = orders_[index];
  best_changes_ += static_cast<std::uint64_t>(AtBest(order));
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
    books_[order.slot].sides[SideIndex(order.side)].Erase(
        SortKey(order.side, order.price));
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
  EraseId(order.order_id.value(), index);
  --live_orders_;
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
  return AppendOrder();
}

std::uint32_t Book::AppendOrder() {
  orders_.emplace_back();
  return static_cast<std::uint32_t>(orders_.size() - 1);
}

std::uint32_t Book::NewLevel() {
  if (free_level_ != kNil) {
    const std::uint32_t index = free_level_;
    free_level_ = levels_[index].head;
    return index;
  }
  return AppendLevel();
}

std::uint32_t Book::AppendLevel() {
  levels_.emplace_back();
  return static_cast<std::uint32_t>(levels_.size() - 1);
}

std::uint32_t Book::FindOverflowId(std::uint64_t order_id) const {
  const auto it = id_overflow_.find(order_id);
  return it == id_overflow_.end() ? kNil : it->second;
}

void Book::InsertOverflowId(IdCell& cell, std::uint64_t order_id,
                            std::uint32_t index) {
  ++cell.overflow;
  id_overflow_.emplace(order_id, index);
}

void Book::EraseOverflowId(IdCell& cell, std::uint64_t order_id) {
  --cell.overflow;
  id_overflow_.erase(order_id);
}

void Book::EnsureIdRoom() {
  if (2 * (live_orders_ + 1) <= id_cells_.size()) return;
  RebuildIds(std::max(kMinIdCells, 2 * id_cells_.size()));
}

void Book::RebuildIds(std::size_t cells) {
  id_cells_.assign(cells, IdCell{});
  absl::erase_if(id_overflow_, [](const auto&) { return true; });
  for (std::size_t i = 0; i < orders_.size(); ++i) {
    if (orders_[i].level != kNil) {
      InsertId(orders_[i].order_id.value(), static_cast<std::uint32_t>(i));
    }
  }
}

}  // namespace orderwire::marketdata
