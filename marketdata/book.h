// orderwire::marketdata::Book: a subscriber's order-by-order (L3) book of
// every instrument of the market-data feed, rebuilt from its messages
// (docs/MARKETDATA.md "Messages", "Meaning for a book", "A subscriber").
//
// DESIGN NOTE
//
// What it does. Apply() takes one feed message and changes the books as
// "Meaning for a book" says, or refuses it: a message the book contradicts
// (step 6 of "A subscriber") returns the BookError naming the contradiction
// and changes nothing, so the caller counts it (`Contradiction`) and goes to
// snapshot recovery (step 5: Clear() the books concerned, apply the
// snapshot). The book knows nothing of sequence numbers, packets, gaps,
// sockets or counters: the subscriber that will own it (issue 27) applies
// messages in feed order, skips unknown kinds (`UnknownKind`), handles
// SystemEvent, SnapshotStart and SnapshotEnd, and counts. So a Book is also
// what a test, `md from-journal` or a snapshot server needs to hold the
// displayed book at a feed sequence.
//
// Rules (each refusal is a BookError below). Everything is checked before
// anything changes, in this order, the first failure named: the instrument
// (known, or listed), the order id (live or not; then the order's
// instrument), then the fields (side, price, quantities, enumerations).
// - InstrumentDirectory lists an instrument, or updates the bands of a known
//   one (its state and orders unchanged). A new instrument has no state
//   until its TradingStatus.
// - TradingStatus sets the state of a known instrument (one that had an
//   InstrumentDirectory since the last Clear). Unlisted means "its book is
//   empty": an Unlisted while it still has orders is refused
//   (kUnlistedNotEmpty), since the engine only lets an instrument leave the
//   range without live orders; the subscriber recovers by snapshot.
// - Order messages need their instrument listed: known and not Unlisted
//   (Halted books still change: deletes and the rest are applied).
// - OrderAdded: a new id (kOrderIdLive otherwise), side Buy or Sell,
//   quantity >= 1; at the back of its level. Prices are not checked against
//   the bands: orders outside a changed band stay resting, and a snapshot
//   adds them again.
// - OrderExecuted: a live id, the order's instrument, side and price (the
//   trade's price is the resting order's), 1 <= quantity <= displayed; at 0
//   the order leaves (no OrderDeleted follows).
// - OrderReduced: a live id, its instrument, 1 <= cancelled < displayed
//   (never to 0); keeps its place.
// - OrderDeleted: a live id, its instrument.
// - OrderReplaced: a live id, its instrument, new quantity >= 1; the order
//   (same id and side) goes to the back of the level of the new price, even
//   at the same price: it always loses time priority.
//
// The structures. A message touches one order found by id and the level it
// sits in, so:
// - Orders live in a slab (a std::vector of 48-byte records addressed by a
//   32-bit index) with a LIFO free list; a level's orders form an intrusive
//   doubly linked FIFO through those indices, so unlinking any order is O(1).
//   An order records its level, so only opening or closing a level (and
//   OrderAdded or OrderReplaced finding the level of its price) searches a
//   side.
// - order_id -> slab index: a direct-mapped table indexed by the id's low
//   bits (8 bytes a cell, a power of two of at least twice the live orders,
//   so at most half full; it doubles, re-placing every live order, when one
//   more would fill more than half), each cell holding one live order
//   (checked against the order's own id) and a count of live orders of
//   those low bits that found the cell taken; those go to an
//   absl::flat_hash_map, looked in only when the count is not 0. The
//   engine's ids come from one increasing counter, so nearly every live id
//   has its own cell; any other ids (repeated low bits, huge values) stay
//   correct, through the overflow map. Only indices are stored, never
//   pointers into a table that moves.
// - Levels live in a second slab (price, total quantity, order count, head
//   and tail of the FIFO) with a free list. Each side of each book keeps
//   its open levels in a SideLevels (side_levels.h) by a key that is
//   larger for a better price (the price for bids, ~price for asks): a
//   price ladder, a window of consecutive keys indexed directly with a
//   bitmap of the open ones, while the side's levels fill their range
//   densely enough (the usual book, near its best); a vector sorted by key
//   for a sparse side. So finding, opening and closing the level of a
//   price is an index and a bit, and a new best after the best closes is a
//   scan of the bitmap, one word per 64 ticks.
// - Instruments: a vector of books; instrument id -> slot through a direct
//   array for ids below 65,536 (4 bytes an id, as far as the largest such
//   id seen: at most 256 KiB), an absl::flat_hash_map for larger ids; and
//   the slots sorted by instrument id for the canonical order. A slot, once
//   given, stays the id's (Clear forgets the instrument and empties the
//   book, and a later InstrumentDirectory lists it again there).
//
// Costs. OrderAdded, OrderExecuted, OrderReduced, OrderDeleted: O(1)
// average (an array index for the instrument, one cell of the order index,
// an O(1) list operation), plus, when OrderAdded opens or a message closes
// a level, that of SideLevels: O(1) on a ladder (a rebuild of its window,
// O(levels + window / 64), when a price falls outside it), a search and a
// shift of the better levels on a sparse side's vector. OrderReplaced: a
// delete and an add. InstrumentDirectory: O(1), plus O(instruments) the
// first time an id is seen. TradingStatus: O(1).
// Every Apply also counts, in best_changes(), each message that touched a
// side's best level (a compare of the order's level with the side's back),
// so a subscriber re-reads Best() only after those.
// Queries: FindOrder, FindInstrument, Best, best_changes and order_count
// O(1); ForEachOrderAt O(its orders) (plus a search on a vector side); the
// ForEach* functions O(what they visit), plus a ladder's window / 64.
//
// Memory: bounded by what the book holds, never by id values: the slabs
// (48 bytes an order, 32 a level, at their high-water marks), the order
// index (16 to 32 bytes a live order at the high-water mark, plus the
// overflow map's entries), a side's SideLevels (at most 64 cells of 4
// bytes an open level at its high-water mark, or 16 bytes a level as a
// vector), and the instrument map above.
//
// Allocation. A book allocates only as it grows past its largest size so
// far: the order slab and the level slab grow by doubling, a side's
// SideLevels when it holds more levels, or spans more ticks, than before
// (side_levels.h); the order index doubles (an O(orders) re-placing) and its
// overflow map grows; an instrument seen for the first time allocates its
// slot. Reserve() sizes the slabs and the order index up front, and the
// overflow map for a quarter of the orders (not the SideLevels of books
// not yet seen). Clear() keeps all of that memory. Only running out of
// memory throws (std::bad_alloc); the book is then unspecified until
// Clear().
//
// Threading: none. A Book is used by one thread at a time; const members
// may run concurrently with each other, not with Apply or Clear.
//
// Usage:
//
//   marketdata::Book book;
//   for (const feed::MessageBlock block : packet) {
//     if (!block.known()) { ++unknown_kind; continue; }
//     const marketdata::BookError error = book.Apply(block);
//     if (marketdata::IsContradiction(error)) { ++contradiction; Recover(); }
//   }
#ifndef ORDERWIRE_MARKETDATA_BOOK_H_
#define ORDERWIRE_MARKETDATA_BOOK_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "codec/strong.h"
#include "codec/types.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "feed/types.h"
#include "marketdata/side_levels.h"

namespace orderwire::marketdata {

// What Book::Apply made of a message. kOk: applied (or a kind that changes
// no book). The two errors before the contradictions are the caller's
// (not a Contradiction of the feed); every other value is one of step 6's
// contradictions, named. A refused message changed nothing.
enum class BookError : std::uint8_t {
  kOk = 0,
  kUnknownKind,  // a kind version 1 does not know: skip it (UnknownKind)
  kBadLength,    // ApplyMessage: fewer bytes than 9 or than the kind's size
  // Contradictions (MARKETDATA.md "A subscriber" step 6):
  kInstrumentNotListed,  // no InstrumentDirectory for it, or Unlisted
  kOrderIdLive,          // OrderAdded of an id the book holds
  kOrderIdUnknown,       // OrderExecuted/Reduced/Deleted/Replaced: no such id
  kInstrumentMismatch,   // ... naming another instrument than the order's
  kSideMismatch,         // OrderExecuted: not the resting order's side
  kPriceMismatch,        // OrderExecuted: not the resting order's price
  kAboveDisplayed,       // executed or reduced by more than is displayed
  kReducedToZero,        // OrderReduced by all that is displayed
  kZeroQuantity,         // added, replaced, executed or reduced by 0
  kBadValue,             // a side or trading state the contract lacks
  kUnlistedNotEmpty,     // TradingStatus Unlisted while orders rest
};

// Whether `error` is a Contradiction (counted; snapshot recovery).
[[nodiscard]] constexpr bool IsContradiction(BookError error) noexcept {
  return error >= BookError::kInstrumentNotListed;
}

// The enumerator's name without the k ("OrderIdUnknown"); "" for a value
// not defined.
[[nodiscard]] std::string_view Name(BookError error) noexcept;

// OK for kOk; InvalidArgument for kUnknownKind and kBadLength;
// FailedPrecondition "Contradiction: <name>" otherwise. Cold.
[[nodiscard]] absl::Status ToStatus(BookError error);

// A resting order, as the feed shows it.
struct BookOrder {
  codec::OrderId order_id;
  codec::InstrumentId instrument_id;
  codec::Side side;
  codec::Price price;
  codec::Quantity quantity;  // displayed: its leaves

  friend bool operator==(const BookOrder&, const BookOrder&) = default;
};

// One price level of a book side.
struct LevelInfo {
  codec::Price price;
  codec::Quantity quantity;  // the total of its orders
  std::uint32_t order_count;

  friend bool operator==(const LevelInfo&, const LevelInfo&) = default;
};

// An instrument's InstrumentDirectory (the last one) and TradingStatus.
struct InstrumentInfo {
  codec::InstrumentId instrument_id;
  codec::Price min_price;
  codec::Price max_price;
  codec::Quantity min_quantity;
  codec::Quantity max_quantity;
  // None until its first TradingStatus.
  std::optional<feed::TradingState> state;

  // Known and not Unlisted: order messages for it are accepted.
  [[nodiscard]] bool listed() const noexcept {
    return state != feed::TradingState::kUnlisted;
  }
};

class Book {
 public:
  Book() = default;
  Book(const Book&) = default;
  Book& operator=(const Book&) = default;
  Book(Book&&) noexcept = default;
  Book& operator=(Book&&) noexcept = default;
  ~Book() = default;

  // Sizes the slabs and the order index for `orders` live orders and
  // `levels` open levels in all, so that a book no larger allocates only
  // as a side's SideLevels grows past its largest size. Cold.
  void Reserve(std::size_t orders, std::size_t levels);

  // Applies one message of a parsed packet (feed::PacketView): its kind
  // picks the Apply below; SystemEvent, SnapshotStart and SnapshotEnd change
  // nothing and return kOk; an unknown kind returns kUnknownKind (the
  // caller's to skip before, counted as UnknownKind). Extra bytes of a later
  // revision are ignored. Costs: those of the message's Apply.
  [[nodiscard]] BookError Apply(feed::MessageBlock block);
  // The same for the bytes of one message (kind byte first), checked:
  // kBadLength when shorter than 9 bytes, than its known kind's size, or
  // longer than a block can say (65535).
  [[nodiscard]] BookError ApplyMessage(std::span<const std::byte> message);

  // One message of each kind that changes a book, as "Meaning for a book"
  // and the rules of the design note say. Each returns kOk, or the first
  // contradiction found with nothing changed.
  [[nodiscard]] BookError Apply(const feed::InstrumentDirectory& message);
  [[nodiscard]] BookError Apply(const feed::TradingStatus& message);
  [[nodiscard]] BookError Apply(const feed::OrderAdded& message);
  [[nodiscard]] BookError Apply(const feed::OrderExecuted& message);
  [[nodiscard]] BookError Apply(const feed::OrderReduced& message);
  [[nodiscard]] BookError Apply(const feed::OrderDeleted& message);
  [[nodiscard]] BookError Apply(const feed::OrderReplaced& message);

  // Forgets one instrument: its orders, levels, directory and state (a
  // snapshot of it lists it again). Nothing happens for an unknown id.
  // O(its orders + its levels); allocates nothing.
  void Clear(codec::InstrumentId instrument_id);
  // Forgets everything (snapshot recovery of all instruments, SnapshotStart
  // with instrument 0). O(slots + the order index's cells); keeps all the
  // memory.
  void Clear();

  // The resting order `order_id`, if any. O(1) average.
  [[nodiscard]] std::optional<BookOrder> FindOrder(
      codec::OrderId order_id) const;
  // The directory and state of `instrument_id`, if known. O(1) average.
  [[nodiscard]] std::optional<InstrumentInfo> FindInstrument(
      codec::InstrumentId instrument_id) const;
  // The best level of one side of a book, if any. O(1) average.
  [[nodiscard]] std::optional<LevelInfo> Best(codec::InstrumentId instrument_id,
                                              codec::Side side) const {
    const std::uint32_t slot = KnownSlot(instrument_id);
    if (slot == kNil) return std::nullopt;
    const std::uint32_t best = books_[slot].sides[SideIndex(side)].best();
    if (best == kNil) return std::nullopt;
    const Level& level = levels_[best];
    return LevelInfo{level.price, level.quantity, level.order_count};
  }
  // Writes the top `out.size()` levels of a side, best first (bids highest
  // price first, asks lowest), and returns how many it wrote. O(written).
  [[nodiscard]] std::size_t Depth(codec::InstrumentId instrument_id,
                                  codec::Side side,
                                  std::span<LevelInfo> out) const;
  // The number of levels of a side (0 for an unknown instrument).
  [[nodiscard]] std::size_t level_count(codec::InstrumentId instrument_id,
                                        codec::Side side) const;
  // A count that grows whenever Apply or Clear may have changed Best() of
  // some side (an order entering, leaving or changing at a side's best
  // level, a new best, a directory or state change, a Clear); it may grow
  // when no Best() changed, and never stays when one did. So a reader that
  // compared every Best() at count c need not look again while it is c.
  // O(1).
  [[nodiscard]] std::uint64_t best_changes() const noexcept {
    return best_changes_;
  }
  // The number of resting orders, all instruments.
  [[nodiscard]] std::size_t order_count() const noexcept {
    return live_orders_;
  }
  // The resting orders of one instrument (0 for an unknown one).
  [[nodiscard]] std::size_t order_count(
      codec::InstrumentId instrument_id) const;

  // Calls `fn(const InstrumentInfo&)` for every known instrument, ascending.
  template <typename Fn>
  void ForEachInstrument(Fn&& fn) const;
  // Calls `fn(const LevelInfo&)` for every level of a side, best first.
  template <typename Fn>
  void ForEachLevel(codec::InstrumentId instrument_id, codec::Side side,
                    Fn&& fn) const;
  // Calls `fn(const BookOrder&)` for every order of one level, oldest
  // first (nothing for a level that is not open).
  template <typename Fn>
  void ForEachOrderAt(codec::InstrumentId instrument_id, codec::Side side,
                      codec::Price price, Fn&& fn) const;
  // Calls `fn(const BookOrder&)` for every resting order in the engine's
  // canonical order (engine::Engine::ForEachLiveOrder, and a snapshot's
  // OrderAdded messages): instrument ascending, bids then asks, best price
  // first, oldest first. O(orders + levels + instruments).
  template <typename Fn>
  void ForEachOrder(Fn&& fn) const;

 private:
  static constexpr std::uint32_t kNil =
      std::numeric_limits<std::uint32_t>::max();

  struct Order {
    codec::OrderId order_id;
    codec::Price price;
    codec::Quantity quantity;
    std::uint32_t slot;          // the instrument's
    std::uint32_t level = kNil;  // index in levels_; kNil when free
    std::uint32_t prev;  // FIFO neighbours in the level, kNil at the ends;
    std::uint32_t next;  // next is also the free list's link
    codec::Side side;
  };
  static_assert(sizeof(Order) == 48, "the design note's 48-byte records");
  struct Level {
    codec::Price price;
    codec::Quantity quantity;
    std::uint32_t order_count;
    std::uint32_t head;  // oldest; also the free list's link
    std::uint32_t tail;  // newest
  };
  struct InstrumentBook {
    InstrumentInfo info{};
    bool known = false;
    bool listed = false;  // known and info.listed(): order messages apply
    std::uint32_t order_count = 0;
    SideLevels sides[2];  // [0] bids, [1] asks
  };
  // A cell of the direct-mapped order index (the order id's low bits):
  // the slab index of the live order it holds (kNil if none), and how
  // many live orders of ids with those low bits are in id_overflow_.
  struct IdCell {
    std::uint32_t index = kNil;
    std::uint32_t overflow = 0;
  };
  // Instrument ids below this find their slot in a direct array.
  static constexpr std::uint32_t kDirectInstrumentIds = 1U << 16;
  // The direct order index never holds more than half its cells.
  static constexpr std::size_t kMinIdCells = 64;

  [[nodiscard]] static std::size_t SideIndex(codec::Side side) noexcept {
    return side == codec::Side::kBuy ? 0 : 1;
  }
  // A level's key in its side: larger is better on both sides (the price
  // for bids, its bitwise complement, -price - 1, for asks).
  [[nodiscard]] static std::int64_t SortKey(codec::Side side,
                                            codec::Price price) noexcept {
    return side == codec::Side::kBuy ? price.value() : ~price.value();
  }
  // The slab index of live order `order_id`, or kNil. O(1) average.
  [[nodiscard]] std::uint32_t FindId(std::uint64_t order_id) const {
    if (id_cells_.empty()) return kNil;
    const IdCell& cell = id_cells_[order_id & (id_cells_.size() - 1)];
    if (cell.index != kNil &&
        orders_[cell.index].order_id.value() == order_id) {
      return cell.index;
    }
    return cell.overflow == 0 ? kNil : FindOverflowId(order_id);
  }
  // FindId in the overflow map.
  [[gnu::noinline, nodiscard]] std::uint32_t FindOverflowId(
      std::uint64_t order_id) const;
  // Indexes order `index` under `order_id` (not live).
  void InsertId(std::uint64_t order_id, std::uint32_t index) {
    IdCell& cell = id_cells_[order_id & (id_cells_.size() - 1)];
    if (cell.index == kNil) {
      cell.index = index;
    } else {
      InsertOverflowId(cell, order_id, index);  // the cell holds another
    }
  }
  [[gnu::noinline]] void InsertOverflowId(IdCell& cell, std::uint64_t order_id,
                                          std::uint32_t index);
  // Forgets order `index` (live) under `order_id`.
  void EraseId(std::uint64_t order_id, std::uint32_t index) {
    IdCell& cell = id_cells_[order_id & (id_cells_.size() - 1)];
    if (cell.index == index) {
      cell.index = kNil;
    } else {
      EraseOverflowId(cell, order_id);
    }
  }
  [[gnu::noinline]] void EraseOverflowId(IdCell& cell, std::uint64_t order_id);
  // Grows the direct order index (re-placing every live order) when one
  // more order would fill more than half of it. Allocates only then.
  void EnsureIdRoom();
  // Re-places every live order into a direct index of `cells` cells.
  [[gnu::noinline]] void RebuildIds(std::size_t cells);
  // The slot an instrument id was given, or kNil.
  [[nodiscard]] std::uint32_t AnySlot(
      codec::InstrumentId instrument_id) const noexcept {
    if (instrument_id.value() < direct_slots_.size()) {
      return direct_slots_[instrument_id.value()];
    }
    return instrument_id.value() >= kDirectInstrumentIds
               ? LargeSlot(instrument_id)
               : kNil;
  }
  // The slot of a known instrument, or kNil.
  [[nodiscard]] std::uint32_t KnownSlot(
      codec::InstrumentId instrument_id) const noexcept {
    const std::uint32_t slot = AnySlot(instrument_id);
    return slot != kNil && books_[slot].known ? slot : kNil;
  }
  // The slot of an id at or above kDirectInstrumentIds, or kNil.
  [[gnu::noinline, nodiscard]] std::uint32_t LargeSlot(
      codec::InstrumentId instrument_id) const noexcept;
  // The slot of a listed instrument (known, not Unlisted), or kNil.
  [[nodiscard]] std::uint32_t ListedSlot(
      codec::InstrumentId instrument_id) const noexcept {
    const std::uint32_t slot = AnySlot(instrument_id);
    return slot != kNil && books_[slot].listed ? slot : kNil;
  }
  // Sets `*index` to the slab index of live order `order_id` on
  // `instrument_id`, or returns the error, checked in this order:
  // kInstrumentNotListed, kOrderIdUnknown, kInstrumentMismatch.
  [[nodiscard]] BookError FindLive(std::uint64_t order_id,
                                   std::uint32_t instrument_id,
                                   std::uint32_t* index) const;
  // The slot of `instrument_id`, made (unknown) if the id is new.
  [[gnu::noinline]] std::uint32_t SlotFor(codec::InstrumentId instrument_id);
  // Links order `index` (all fields but level/prev/next set) at the back of
  // its level, opening the level if needed.
  void Rest(std::uint32_t index);
  // Unlinks order `index` from its level, closing the level if it empties.
  void Unlink(std::uint32_t index);
  // Whether order `order` (linked) rests at the best level of its side.
  [[nodiscard]] bool AtBest(const Order& order) const noexcept {
    return books_[order.slot].sides[SideIndex(order.side)].best() ==
           order.level;
  }
  // Unlinks, erases from the index and frees order `index`.
  void Remove(std::uint32_t index);
  // A free record's index, from the free list or a new one at the end
  // (the slab grows out of line: cold).
  std::uint32_t NewOrder();
  std::uint32_t NewLevel();
  [[gnu::noinline]] std::uint32_t AppendOrder();
  [[gnu::noinline]] std::uint32_t AppendLevel();
  [[nodiscard]] BookOrder ToBookOrder(const Order& order) const {
    return {order.order_id, books_[order.slot].info.instrument_id, order.side,
            order.price, order.quantity};
  }
  template <typename Fn>
  void ForEachOrderOfLevel(const Level& level, Fn&& fn) const {
    for (std::uint32_t i = level.head; i != kNil; i = orders_[i].next) {
      fn(ToBookOrder(orders_[i]));
    }
  }

  std::vector<Order> orders_;  // a free one has level == kNil
  std::uint32_t free_order_ = kNil;
  std::vector<Level> levels_;
  std::uint32_t free_level_ = kNil;
  std::size_t live_orders_ = 0;
  std::uint64_t best_changes_ = 0;  // best_changes()
  std::vector<IdCell> id_cells_;    // a power of two in size, or empty
  absl::flat_hash_map<std::uint64_t, std::uint32_t> id_overflow_;
  std::vector<InstrumentBook> books_;
  // Slots of instrument ids below kDirectInstrumentIds (kNil: none yet),
  // as far as the largest such id seen; the others through slot_index_.
  std::vector<std::uint32_t> direct_slots_;
  absl::flat_hash_map<codec::InstrumentId, std::uint32_t> slot_index_;
  std::vector<std::uint32_t> slots_by_id_;  // sorted by instrument id
};

template <typename Fn>
void Book::ForEachInstrument(Fn&& fn) const {
  for (const std::uint32_t slot : slots_by_id_) {
    if (books_[slot].known) fn(std::as_const(books_[slot].info));
  }
}

template <typename Fn>
void Book::ForEachLevel(codec::InstrumentId instrument_id, codec::Side side,
                        Fn&& fn) const {
  const std::uint32_t slot = KnownSlot(instrument_id);
  if (slot == kNil) return;
  books_[slot].sides[SideIndex(side)].ForEachBestFirst(
      [&](std::int64_t /*key*/, std::uint32_t index) {
        const Level& level = levels_[index];
        fn(LevelInfo{level.price, level.quantity, level.order_count});
        return true;
      });
}

template <typename Fn>
void Book::ForEachOrderAt(codec::InstrumentId instrument_id, codec::Side side,
                          codec::Price price, Fn&& fn) const {
  const std::uint32_t slot = KnownSlot(instrument_id);
  if (slot == kNil) return;
  const std::uint32_t level =
      books_[slot].sides[SideIndex(side)].Find(SortKey(side, price));
  if (level == kNil) return;
  ForEachOrderOfLevel(levels_[level], fn);
}

template <typename Fn>
void Book::ForEachOrder(Fn&& fn) const {
  for (const std::uint32_t slot : slots_by_id_) {
    for (const SideLevels& side : books_[slot].sides) {  // bids, then asks
      side.ForEachBestFirst([&](std::int64_t /*key*/, std::uint32_t level) {
        ForEachOrderOfLevel(levels_[level], fn);
        return true;
      });
    }
  }
}

}  // namespace orderwire::marketdata

#endif  // ORDERWIRE_MARKETDATA_BOOK_H_
