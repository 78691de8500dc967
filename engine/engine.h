// orderwire::engine: deterministic price-time matching of decoded commands.
//
// DESIGN NOTE
//
// What it does. The engine takes codec::Command values one at a time and
// appends the reports each one causes to a caller-owned ReportBuffer as
// frames, written once, straight from the engine's fields (report.h). It keeps
// one book per instrument of the configured range and applies every rule of
// PROTOCOL.md "Matching semantics" and "Validation and report details". It does
// no I/O, reads no clock, starts no thread and keeps no pointer-dependent
// order, so the same commands (with the same owner tags) always give the same
// report bytes: a journal replays it exactly. It knows nothing of sessions:
// each command comes with an opaque OwnerTag (report.h; the service passes its
// dense session index, `orderwire match` 0), which the orders it enters keep,
// which decides who may cancel or replace them and which client order ids
// collide, and which every report carries (Report::owner) so that the caller
// can route it. Where PROTOCOL.md leaves a choice open (BookFull, PostOnly,
// Replace, FillOrKill, self-trade prevention, ownership, Unauthorized), the
// engine's decision is docs/ENGINE.md "Decisions where PROTOCOL.md is open",
// each with a scenario in tests/engine/scenario*_test.cc.
//
// Threading: none of its own. An engine is used by one thread at a time; the
// const members may be called concurrently with each other, not with
// Execute(), Reconfigure(), Reset() or Restore().
//
// The structures. A command touches at most: one hash lookup (cancel,
// replace, or the duplicate check of a new order), the top of one side of
// one book, and the orders it trades with. So the structures are built for
// exactly those, with every byte preallocated:
//
// - Orders live in a pool of 64-byte records (one cache line each) addressed
//   by 32-bit index, allocated once at the configured capacity; free records
//   form a LIFO list, so the record freed last (warm in cache) is reused
//   first. Nothing points into a hash table; only indices are stored. The
//   owner tag takes 4 of the record's spare bytes (still one cache line), so
//   comparing it costs no extra memory access. The pools are in transparent
//   huge pages where the kernel offers them, so that fork() (a snapshot
//   while serving) copies few page table entries (base/huge_page_array.h).
// - order_id -> index is a direct-mapped window (internal/order_index.h,
//   DirectIdMap): slot = order_id mod (2 x capacity, a power of two), 4
//   bytes each, confirmed in the order record. The engine numbers orders
//   1, 2, 3, ..., so a new order's slot is next to the previous one's: the
//   insert costs no cache miss, where a hashed slot would cost one per new
//   order, and a lookup or erase is one load, no probing. An id whose slot
//   is still held by an order older than the last 2 x capacity ids goes to
//   a hashed overflow table, consulted only while it holds anything, so
//   every id works.
// - (account, owner, client_order_id) -> index is an open-addressing table
//   of our own (internal/order_index.h): 8-byte slots (index and a 32-bit
//   hash tag), linear probing, backward-shift deletion (no tombstones, no
//   clean-up pass). Memory for 2 slots per order of capacity is reserved up
//   front, untouched; the table in use starts at 4,096 slots and doubles in
//   place at load 1/4, so it is sized to the live orders (a small live set
//   stays in L1/L2) and its runs are short (every new order's duplicate
//   check is a lookup of a fresh key, which probes to the end of its run).
//   With wl1's tens of thousands of live orders it outgrows L2, and that
//   lookup misses the cache. Prefetch(next command) can start the load one
//   command early; measured, that makes wl1 and mixed slower, and the
//   service does not call it (docs/BENCHMARKS.md "Engine against the
//   calibration book").
// - A price level is a 32-byte record in a second pool (price, total
//   quantity, order count, head and tail of an intrusive FIFO of orders
//   linked by index). Cancelling any order is O(1) once found: unlink it.
// - A book side is a sorted array of (key, level) pairs with the best level
//   at the back (internal/sorted_levels.h). The top of the book is one
//   load; a level opened or closed near the top moves a handful of entries.
//   A search guesses the position from the price distance to the best
//   (exact while the levels between are dense, as near the touch: most
//   searches on wl1 and mixed end there), then compares the 8 entries
//   nearest the best, then binary-searches, all branch-free, so a deep
//   level (an order left behind by a moving market) costs O(log levels).
//   Deep in a book a closed level stays as a tombstone and a new level
//   takes a nearby tombstone's slot, so most deep opens and closes move a
//   few entries, not every level above them (internal/sorted_levels.h).
//
// Alternatives. engine_bench runs each as alt:<variant> on the same commands
// as the engine (figures: docs/BENCHMARKS.md "Alternatives"). A node-based
// std::map per side is slower and allocates per level. A linear scan of the
// whole side suits mixed's few dozen levels a side, not wl1's ~1,000 (its
// mid wanders and leaves orders behind). Binary search alone, or counting
// the 32 entries nearest the best, gains nothing over the 8 nearest.
// absl::flat_hash_map for both indices, reserved to the capacity, is slower
// than our tables: its group probe and full-key compare cost more than one
// 8-byte slot with a tag, and the reserved array spreads a small live set.
// A price ladder (an array indexed by price) is not built: the valid band
// is 1..10^9 ticks, so a ladder needs a moving window plus an overflow
// structure for the deep book, and the sorted array already spends little
// of a command's time on levels.
//
// Memory. No allocation happens in steady state: pools and tables are
// allocated at construction; a side's array and a ReportBuffer grow only
// past their largest size so far; tests/engine/alloc_test.cc counts
// operator new over 1,000,000 mixed commands after warm-up (zero). The one
// latency cost of growth: a table doubling rehashes the live orders once
// per new high-water mark (warm-up).
//
// Usage:
//
//   engine::Engine engine(engine::EngineConfig{});  // PROTOCOL.md defaults
//   engine::ReportBuffer reports;
//   for (const codec::Command& command : commands) {
//     engine.Execute(command, /*owner=*/0, reports);
//     Send(reports.frames());
//     reports.Clear();
//   }
#ifndef ORDERWIRE_ENGINE_ENGINE_H_
#define ORDERWIRE_ENGINE_ENGINE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/huge_page_array.h"
#include "codec/command.h"
#include "codec/strong.h"
#include "codec/types.h"
#include "engine/config.h"
#include "engine/internal/order_index.h"
#include "engine/internal/pool.h"
#include "engine/internal/sorted_levels.h"
#include "engine/report.h"

namespace orderwire::engine {

// What Execute() made of a command.
enum class ExecuteStatus : std::uint8_t {
  kOk,           // the command was applied (accepted or rejected)
  kNotACommand,  // command.kind is not a command kind: nothing happened
};

// A live order, as the engine holds it.
struct OrderInfo {
  codec::OrderId order_id;
  codec::AccountId account_id;
  codec::ClientOrderId client_order_id;
  codec::InstrumentId instrument_id;
  codec::Side side;
  codec::TimeInForce time_in_force;
  codec::Price price;
  codec::Quantity leaves_quantity;
  OwnerTag owner;  // the tag of the command that entered it
  // All that traded of it since it was entered, across its replaces.
  codec::Quantity executed_quantity{};
};

// One price level of a book, for market data.
struct LevelInfo {
  codec::Price price;
  codec::Quantity quantity;  // total leaves of its orders
  std::uint32_t order_count;
};

// The engine's structures. DefaultTraits is the engine; others exist only so
// that engine_bench can measure the alternatives the design note compares.
struct DefaultTraits {
  using Levels = internal::SortedLevels;
  using Index = internal::OrderIndex;
};

template <typename Traits>
class BasicEngine {
  struct BookData;

 public:
  // A read-only view of one book, valid until the next Execute() or Reset().
  class BookView {
   public:
    [[nodiscard]] codec::InstrumentId instrument_id() const noexcept {
      return instrument_id_;
    }
    // True when neither side has an order.
    [[nodiscard]] bool empty() const noexcept;
    // The best level of `side`, if any. O(1).
    [[nodiscard]] std::optional<LevelInfo> Best(codec::Side side) const;
    // Writes the top `out.size()` levels of `side`, best first; returns how
    // many it wrote. O(levels written).
    [[nodiscard]] std::size_t Depth(codec::Side side,
                                    std::span<LevelInfo> out) const;
    // The number of price levels of `side`.
    [[nodiscard]] std::size_t level_count(codec::Side side) const noexcept;

   private:
    friend class BasicEngine;
    BookView(const BasicEngine* engine, codec::InstrumentId instrument_id,
             const BookData* book)
        : engine_(engine), instrument_id_(instrument_id), book_(book) {}
    const BasicEngine* engine_;
    codec::InstrumentId instrument_id_;
    const BookData* book_;  // null for an unknown instrument
  };

  // An empty engine. Precondition: ValidateConfig(config).ok(). Allocates
  // the order and level pools and the two index tables for
  // config.max_live_orders orders (about 144 bytes per order of address
  // space, touched only as it is used). Cold.
  explicit BasicEngine(const EngineConfig& config);

  BasicEngine(const BasicEngine&) = delete;
  BasicEngine& operator=(const BasicEngine&) = delete;

  // Applies one command on behalf of `owner` and appends its reports to
  // `out`, in the order PROTOCOL.md fixes. An order it enters keeps `owner`;
  // a cancel or replace acts only on orders of the command's account and
  // `owner`; each report carries the owner it is for (Report::owner). An
  // invalid command is answered by a Rejected report, it is not an error.
  // Returns kNotACommand (and appends nothing) if command.kind is not a
  // command kind. Hot path: no allocation (see report.h for the buffer;
  // a MassCancel's scratch grows like it), no exception; O(1) plus O(1)
  // per match and per self-trade cancel, plus O(log levels) when a level
  // deep in a book opens or closes; a MassCancel O(live orders in its
  // scope).
  ExecuteStatus Execute(const codec::Command& command, OwnerTag owner,
                        ReportBuffer& out) noexcept;
  // One owner (0) for every command: `orderwire match`, tests, benchmarks.
  ExecuteStatus Execute(const codec::Command& command,
                        ReportBuffer& out) noexcept {
    return Execute(command, 0, out);
  }

  // Starts loading, without changing anything, the index slot that
  // Execute(command, owner, ...) reads first: the client key of a new order
  // or a CancelByClient, the order id of a CancelByOrder or Replace. A
  // caller that holds several commands may call it for the next command
  // before executing the current one, so that the next lookup's cache miss
  // overlaps this command's work; on wl1 and mixed that costs more than it
  // saves, and the service does not call it (the design note above). Has no
  // effect on any result. Hot path: a hash and a prefetch.
  void Prefetch(const codec::Command& command, OwnerTag owner) const noexcept {
    switch (command.kind) {
      case codec::Kind::kNewLimit:
      case codec::Kind::kNewMarket:
      case codec::Kind::kCancelByClient:
        index_.PrefetchClient(command.account_id, owner,
                              command.client_order_id);
        return;
      case codec::Kind::kCancelByOrder:
      case codec::Kind::kReplace:
        index_.PrefetchId(command.order_id);
        return;
      default:
        return;
    }
  }

  // Appends the Rejected report with reason Unauthorized that `command`
  // gets when its session may not trade for its account (the service
  // decides that), with Report::owner `owner`; the command has no other
  // effect. Its fields follow the Rejected rules of PROTOCOL.md for the
  // command's kind. Returns kNotACommand (and appends nothing) for a
  // non-command kind. Hot path.
  ExecuteStatus RejectUnauthorized(const codec::Command& command,
                                   OwnerTag owner, ReportBuffer& out) noexcept;

  // Closes `owner`'s session (docs/CONTROLS.md "Goodbye, liveness and
  // cancel-on-disconnect"): with `cancel_orders`, every live order of
  // `owner`, of any account and instrument, gets a Cancelled (reason
  // CancelOnDisconnect) in ascending order id and leaves its book; then
  // one SessionClosed (`reason`, the command's account_id and request_id,
  // the count), all to `owner`. Execute() of a Goodbye closes without
  // cancelling: cancel-on-disconnect is the session's setting, which the
  // caller knows and the engine does not (the state machine reads it from
  // the record). Never rejects. Hot-path rules as Execute(); O(live
  // orders) when cancelling.
  void CloseSession(const codec::Command& command, OwnerTag owner,
                    codec::SessionCloseReason reason, bool cancel_orders,
                    ReportBuffer& out) noexcept;

  // The book of `instrument_id` (an empty view for an unknown instrument).
  [[nodiscard]] BookView Book(codec::InstrumentId instrument_id) const noexcept;

  // The live order with this id, if any. O(1).
  [[nodiscard]] std::optional<OrderInfo> FindOrder(
      codec::OrderId order_id) const noexcept;
  // The live order of (account_id, owner, client_order_id), if any: the one
  // a CancelByClient of `owner` would cancel. O(1).
  [[nodiscard]] std::optional<OrderInfo> FindOrderByClient(
      codec::AccountId account_id, OwnerTag owner,
      codec::ClientOrderId client_order_id) const noexcept;

  // Calls `fn(const OrderInfo&)` for every live order, book by book, bids
  // then asks, best level first, oldest first. Cold: O(live orders).
  template <typename Fn>
  void ForEachLiveOrder(Fn&& fn) const;

  [[nodiscard]] std::uint32_t live_orders() const noexcept {
    return orders_.in_use();
  }
  // The id the next accepted order will get (1 for a new engine).
  [[nodiscard]] codec::OrderId next_order_id() const noexcept {
    return codec::OrderId(next_order_id_);
  }
  // The match id the next trade will get (1 for a new engine).
  [[nodiscard]] std::uint64_t next_match_id() const noexcept {
    return next_match_id_;
  }
  [[nodiscard]] const EngineConfig& config() const noexcept { return config_; }

  // Checks every structural invariant: no book is crossed; each side's
  // levels are strictly ordered, non-empty, and their counts and quantities
  // match their FIFOs; every live order sits in the level of its price,
  // side and instrument and is found by both keys (the client key with its
  // owner); the pools' counts agree.
  // Returns Internal naming the first violation. For tests. O(live orders).
  [[nodiscard]] absl::Status CheckInvariants() const;

  // Changes the configuration between two commands (docs/ENGINE.md
  // "Reconfiguration"): the new instrument range, price band and quantity
  // range apply to the commands that follow; live orders stay as they are
  // (an order resting at a price outside the new band rests on, trades and
  // can be cancelled; a Replace is checked against the new band). The
  // capacity may grow (the pools and index tables are reallocated and the
  // live records copied, indexes unchanged: O(capacity), cold) or shrink to
  // no fewer than the live orders (the memory is kept). Order and match ids
  // continue. Everything is checked before anything changes. Errors, the
  // engine unchanged: InvalidArgument (ValidateConfig); FailedPrecondition
  // when the new range leaves out an instrument that has live orders, when
  // max_live_orders is below the live orders, or when the live orders'
  // quantity plus max_live_orders * max_quantity could exceed 2^63-1 (a
  // book's total must stay exact). Cost: O(books + levels) to check.
  absl::Status Reconfigure(const EngineConfig& config);

  // Returns to the state of a new engine, keeping all memory. O(capacity).
  void Reset() noexcept;

  // Snapshots (state/snapshot.h). The engine's state, as far as any later
  // command's outcome depends on it, is its configuration, its live orders
  // in ForEachLiveOrder's order (book by book, bids then asks, best level
  // first, oldest first: that order is the price-time priority) and its two
  // id counters. Where records sit in the pools and index tables decides
  // nothing a command can observe, so it is not part of the state. Both
  // functions are cold and off the hot path (no virtual, no new member).
  //
  // Checks, without changing anything, that `orders` (in ForEachLiveOrder's
  // order) with these counters can be restored into this engine: the engine
  // is new (no live order, both counters at 1); at most max_live_orders
  // orders; each order's instrument in the configured range, side Buy or
  // Sell, time in force GoodTillCancel or PostOnly, leaves >= 1, price above
  // INT64_MIN (a price outside the band is allowed: Reconfigure leaves such
  // orders resting), order id in 1..next_order_id-1; the order is the
  // canonical one (books ascending, bids before asks, prices from the best
  // down, so equal prices are adjacent: one level); no book crossed; the
  // total leaves plus max_live_orders * max_quantity within 2^63-1 (as
  // Reconfigure requires); next_order_id and next_match_id >= 1. Errors:
  // InvalidArgument naming the order's position and field (its position
  // also in `*bad_order` when given), FailedPrecondition for a used engine.
  // O(n), no allocation. The uniqueness of the keys is Restore's check.
  [[nodiscard]] absl::Status CheckRestorable(
      std::span<const OrderInfo> orders, std::uint64_t next_order_id,
      std::uint64_t next_match_id, std::size_t* bad_order = nullptr) const;
  // Rebuilds that state: the same books, levels, FIFOs and counters, so
  // every later command gives the same reports as in the engine exported.
  // Checks, as it builds the indexes, that order ids are unique and
  // (account, owner, client_order_id) keys are unique: a repeated key is
  // InvalidArgument naming the later position (also in `*bad_order`), and
  // the engine is Reset() to new. Precondition: CheckRestorable(...) is OK.
  // O(n), allocates.
  [[nodiscard]] absl::Status Restore(std::span<const OrderInfo> orders,
                                     std::uint64_t next_order_id,
                                     std::uint64_t next_match_id,
                                     std::size_t* bad_order = nullptr);

 private:
  struct BookData {
    typename Traits::Levels sides[2];  // [0] bids, [1] asks
  };
  // The incoming order while it trades.
  struct Taker {
    codec::OrderId order_id;
    codec::AccountId account_id;
    codec::ClientOrderId client_order_id;
    codec::InstrumentId instrument_id;
    codec::Side side;
    OwnerTag owner;
    codec::Quantity leaves;
  };

  void NewOrder(const codec::Command& c, OwnerTag owner, bool market,
                ReportBuffer& out) noexcept;
  void CancelByOrder(const codec::Command& c, OwnerTag owner,
                     ReportBuffer& out) noexcept;
  void CancelByClient(const codec::Command& c, OwnerTag owner,
                      ReportBuffer& out) noexcept;
  // Cancels live order `index`: the Cancelled report (with `reason`), then
  // out of its level and released.
  void CancelResting(std::uint32_t index, codec::CancelReason reason,
                     ReportBuffer& out) noexcept;
  // docs/CONTROLS.md "Mass cancel". O(live orders of the books in scope)
  // plus a sort of the ones cancelled.
  void MassCancel(const codec::Command& c, OwnerTag owner,
                  ReportBuffer& out) noexcept;
  // Appends to mass_cancel_ the live orders of `book`, on `side` (kBoth:
  // both), that `keep(const internal::Order&)` takes.
  template <typename Keep>
  void Collect(const BookData& book, codec::MassCancelSide side,
               Keep&& keep) noexcept;
  // Cancels mass_cancel_'s orders in order-id order with `reason`; returns
  // how many.
  std::uint32_t CancelCollected(codec::CancelReason reason,
                                ReportBuffer& out) noexcept;
  void Replace(const codec::Command& c, OwnerTag owner,
               ReportBuffer& out) noexcept;
  // docs/CONTROLS.md "Order status": O(1).
  void QueryStatus(const codec::Command& c, OwnerTag owner,
                   ReportBuffer& out) noexcept;
  static void Reject(const codec::Command& c, OwnerTag owner,
                     codec::RejectReason reason, ReportBuffer& out) noexcept;

  // Trades `taker` against the opposite side of `book` while the best
  // opposite level's key is >= `threshold`.
  void Match(BookData& book, Taker& taker, std::int64_t threshold,
             ReportBuffer& out) noexcept;
  // Other accounts' resting quantity at keys >= threshold, counted up to
  // `wanted` (FillOrKill).
  [[nodiscard]] codec::Quantity AvailableFor(
      const BookData& book, const Taker& taker, std::int64_t threshold,
      codec::Quantity wanted) const noexcept;
  // True if the best opposite level of an order on `side` has a key >=
  // `threshold` (it would trade).
  [[nodiscard]] bool CanTrade(const BookData& book, codec::Side side,
                              std::int64_t threshold) const noexcept;
  [[nodiscard]] bool Crosses(const BookData& book, codec::Side side,
                             codec::Price price) const noexcept;
  // Puts order `index` (fields set) at the back of its price level.
  void Rest(BookData& book, std::uint32_t index) noexcept;
  // Takes order `index` out of its level (closing the level if empty).
  void Unlink(BookData& book, std::uint32_t index) noexcept;
  // Drops a finished order from both indices and frees its record.
  void Release(std::uint32_t index) noexcept;
  // The live order in record `index`.
  [[nodiscard]] OrderInfo InfoOf(std::uint32_t index) const noexcept;
  [[nodiscard]] const BookData* BookOf(
      codec::InstrumentId instrument_id) const noexcept;

  // CheckInvariants' parts, each returning Internal naming the first
  // violation: side `s` of `book` (its levels counted into `levels_seen`);
  // one level and its FIFO (its orders counted into `orders_seen`); the
  // order at `index`, the `count`th of the FIFO of level `level_index`,
  // linked after `previous`.
  [[nodiscard]] absl::Status CheckSide(const BookData& book,
                                       codec::InstrumentId instrument, int s,
                                       std::uint64_t& orders_seen,
                                       std::uint64_t& levels_seen) const;
  [[nodiscard]] absl::Status CheckLevel(codec::InstrumentId instrument,
                                        codec::Side side,
                                        internal::LevelRef ref,
                                        std::uint64_t& orders_seen) const;
  [[nodiscard]] absl::Status CheckLinkedOrder(codec::InstrumentId instrument,
                                              codec::Side side,
                                              std::uint32_t level_index,
                                              std::uint32_t index,
                                              std::uint32_t previous,
                                              std::uint32_t count) const;
  // CheckRestorable's parts, each giving why orders[i] cannot be restored
  // ("" if it can): its own fields and its place after orders[i - 1], with
  // `total` the leaves of the orders before it (its own then added), and,
  // for the first ask of a book, whether the book is crossed.
  [[nodiscard]] std::string WhyNotRestorable(std::span<const OrderInfo> orders,
                                             std::size_t i,
                                             std::uint64_t next_order_id,
                                             std::uint64_t reserved,
                                             std::uint64_t& total) const;
  [[nodiscard]] static std::string WhyCrossed(std::span<const OrderInfo> orders,
                                              std::size_t i);

  EngineConfig config_;
  std::vector<BookData> books_;
  internal::OrderPool orders_;
  internal::LevelPool levels_;
  typename Traits::Index index_;
  std::uint64_t next_order_id_ = 1;
  std::uint64_t next_match_id_ = 1;
  // Per order record (by pool index), what traded of the order since it
  // was entered plus its leaves (OrderStatus's executed is this less the
  // leaves): no fill changes it, so matching never writes it; set when the
  // order rests and at a replace. Beside the records, the 64-byte record
  // being full; touched as the records are.
  base::HugePageArray<codec::Quantity> booked_;
  // The orders a MassCancel or CloseSession cancels, (order id, index):
  // scratch, grown only past its largest size so far.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> mass_cancel_;
};

// The engine.
using Engine = BasicEngine<DefaultTraits>;
extern template class BasicEngine<DefaultTraits>;

// ---------------------------------------------------------------------------
// Implementation of the template member.

template <typename Traits>
template <typename Fn>
void BasicEngine<Traits>::ForEachLiveOrder(Fn&& fn) const {
  for (const BookData& book : books_) {
    for (const auto& side : book.sides) {
      side.ForEachFromBest([&](internal::LevelRef ref) {
        for (std::uint32_t i = levels_[ref.level].head; i != internal::kNil;
             i = orders_[i].next) {
          fn(InfoOf(i));
        }
        return true;
      });
    }
  }
}

}  // namespace orderwire::engine

#endif  // ORDERWIRE_ENGINE_ENGINE_H_
