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
// - order_id -> slab index is an absl::flat_hash_map; only indices are
//   stored, never pointers into a table that moves.
// - Levels live in a second slab (price, total quantity, order count, head
//   and tail of the FIFO), found by (instrument, side, price) through one
//   absl::flat_hash_map, so adding to an existing level is O(1).
// - Each side of each book keeps its prices in an absl::btree_map (price ->
//   level index) ordered best first (bids descending, asks ascending: one
//   comparator that knows its side), so the best level is begin() and every
//   query walks forward. Only opening and closing a level touches it:
//   O(log levels).
// - Instruments: a vector of books, a flat_hash_map from instrument id to
//   its slot, and the slots sorted by instrument id for the canonical order.
//   A slot, once given, stays the id's (Clear forgets the instrument and
//   empties the book, and a later InstrumentDirectory lists it again there).
//
// Costs. OrderAdded, OrderExecuted, OrderReduced, OrderDeleted: O(1)
// average (a few hash lookups and an O(1) list operation), plus O(log levels)
// when a level opens or closes. OrderReplaced: a delete and an add.
// InstrumentDirectory: O(1), plus O(instruments) the first time an id is
// seen. TradingStatus: O(1). Queries: FindOrder, FindInstrument, Best and
// order_count O(1); the ForEach* functions O(what they visit).
//
// Allocation. A book allocates only as it grows: the order slab and the id
// map grow (by doubling, amortised O(1)) past their largest size so far; a
// level opened may allocate a btree node (and a level closed may free one)
// even below the high-water mark; the level slab and level map grow like
// the order slab; an instrument seen for the first time allocates its slot.
// Reserve() sizes the slabs and maps up front. Clear() keeps the slabs'
// memory (Abseil's hash maps free a large table on clear). Only running out
// of memory throws (std::bad_alloc); the book is then unspecified until
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

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "codec/strong.h"
#include "codec/types.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "feed/types.h"

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

  // Sizes the structures for `orders` live orders and `levels` open levels
  // in all, so that a book no larger allocates only btree nodes. Cold.
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
  // with instrument 0). O(slots + orders); keeps the slabs' memory.
  void Clear();

  // The resting order `order_id`, if any. O(1) average.
  [[nodiscard]] std::optional<BookOrder> FindOrder(
      codec::OrderId order_id) const;
  // The directory and state of `instrument_id`, if known. O(1) average.
  [[nodiscard]] std::optional<InstrumentInfo> FindInstrument(
      codec::InstrumentId instrument_id) const;
  // The best level of one side of a book, if any. O(1) average.
  [[nodiscard]] std::optional<LevelInfo> Best(codec::InstrumentId instrument_id,
                                              codec::Side side) const;
  // Writes the top `out.size()` levels of a side, best first (bids highest
  // price first, asks lowest), and returns how many it wrote. O(written).
  [[nodiscard]] std::size_t Depth(codec::InstrumentId instrument_id,
                                  codec::Side side,
                                  std::span<LevelInfo> out) const;
  // The number of levels of a side (0 for an unknown instrument).
  [[nodiscard]] std::size_t level_count(codec::InstrumentId instrument_id,
                                        codec::Side side) const;
  // The number of resting orders, all instruments.
  [[nodiscard]] std::size_t order_count() const noexcept {
    return order_index_.size();
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
    std::uint32_t slot;   // the instrument's
    std::uint32_t level;  // index in levels_
    std::uint32_t prev;   // FIFO neighbours in the level, kNil at the ends;
    std::uint32_t next;   // next is also the free list's link
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
  // Orders prices best first: descending for bids, ascending for asks.
  struct BestFirst {
    bool bids;
    [[nodiscard]] bool operator()(codec::Price a,
                                  codec::Price b) const noexcept {
      return bids ? b < a : a < b;
    }
  };
  // Levels of one side, best first: index in levels_.
  using SideLevels = absl::btree_map<codec::Price, std::uint32_t, BestFirst>;
  struct InstrumentBook {
    InstrumentInfo info{};
    bool known = false;
    std::uint32_t order_count = 0;
    // [0] bids, [1] asks.
    SideLevels sides[2] = {SideLevels(BestFirst{true}),
                           SideLevels(BestFirst{false})};
  };
  struct LevelKey {
    std::uint32_t slot;
    codec::Side side;
    codec::Price price;

    friend bool operator==(const LevelKey&, const LevelKey&) = default;
    template <typename H>
    friend H AbslHashValue(H h, const LevelKey& k) {
      return H::combine(std::move(h), k.slot, k.side, k.price);
    }
  };

  [[nodiscard]] static std::size_t SideIndex(codec::Side side) noexcept {
    return side == codec::Side::kBuy ? 0 : 1;
  }
  // The slot of a known instrument, or kNil.
  [[nodiscard]] std::uint32_t KnownSlot(
      codec::InstrumentId instrument_id) const;
  // The slot of a listed instrument (known, not Unlisted), or kNil.
  [[nodiscard]] std::uint32_t ListedSlot(
      codec::InstrumentId instrument_id) const;
  // Sets `*index` to the slab index of live order `order_id` on
  // `instrument_id`, or returns the error, checked in this order:
  // kInstrumentNotListed, kOrderIdUnknown, kInstrumentMismatch.
  [[nodiscard]] BookError FindLive(std::uint64_t order_id,
                                   std::uint32_t instrument_id,
                                   std::uint32_t* index) const;
  // The slot of `instrument_id`, made (unknown) if the id is new.
  std::uint32_t SlotFor(codec::InstrumentId instrument_id);
  // Links order `index` (all fields but level/prev/next set) at the back of
  // its level, opening the level if needed.
  void Rest(std::uint32_t index);
  // Unlinks order `index` from its level, closing the level if it empties.
  void Unlink(std::uint32_t index);
  // Unlinks, erases from the index and frees order `index`.
  void Remove(std::uint32_t index);
  std::uint32_t NewOrder();
  std::uint32_t NewLevel();
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

  std::vector<Order> orders_;
  std::uint32_t free_order_ = kNil;
  std::vector<Level> levels_;
  std::uint32_t free_level_ = kNil;
  absl::flat_hash_map<codec::OrderId, std::uint32_t> order_index_;
  absl::flat_hash_map<LevelKey, std::uint32_t> level_index_;
  std::vector<InstrumentBook> books_;
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
  for (const auto& entry : books_[slot].sides[SideIndex(side)]) {
    const Level& level = levels_[entry.second];
    fn(LevelInfo{level.price, level.quantity, level.order_count});
  }
}

template <typename Fn>
void Book::ForEachOrderAt(codec::InstrumentId instrument_id, codec::Side side,
                          codec::Price price, Fn&& fn) const {
  const std::uint32_t slot = KnownSlot(instrument_id);
  if (slot == kNil) return;
  const auto it = level_index_.find(LevelKey{slot, side, price});
  if (it == level_index_.end()) return;
  ForEachOrderOfLevel(levels_[it->second], fn);
}

template <typename Fn>
void Book::ForEachOrder(Fn&& fn) const {
  for (const std::uint32_t slot : slots_by_id_) {
    for (const SideLevels& side : books_[slot].sides) {  // bids, then asks
      for (const auto& entry : side) {
        ForEachOrderOfLevel(levels_[entry.second], fn);
      }
    }
  }
}

}  // namespace orderwire::marketdata

#endif  // ORDERWIRE_MARKETDATA_BOOK_H_
