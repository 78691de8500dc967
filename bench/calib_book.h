// CalibBook: a calibration book for the wl1 workload only, to measure the
// engine against in the same engine_bench run (docs/BENCHMARKS.md "Engine
// against the calibration book"). It is a lower bound, not a product: one
// instrument, GoodTillCancel and ImmediateOrCancel limit orders and
// CancelByOrder (all wl1 has), no accounts, no self-trade check, no validation
// beyond "is this order live", and 32-byte report records instead of
// PROTOCOL.md frames.
//
// Structures:
// - Commands are first packed into 16-byte CalibCommand records (outside the
//   timing), so the book reads a quarter of what the engine reads.
// - Orders live in a pool indexed by the order id itself (wl1 ids are dense,
//   1..N): no id -> slot table; an order is live while its quantity is not 0.
// - Each side is a flat ladder of levels indexed by price - kLadderBase, each
//   the head and tail of an intrusive FIFO of orders linked by id. The best
//   price of a side is a plain integer; when its level empties, the next
//   one is found by walking the ladder (wl1's levels are dense near the
//   touch, so the walk is a few steps; a two-level occupancy bitmap bounds
//   it on sparse stretches).
// - Reports go into a fixed array reused for every command (a command's
//   reports never exceed it: wl1 quantities are <= 200 lots and resting
//   orders >= 10, so a taker fills at most 20 makers).
//
// Correctness check: Outcome() counts the reports of a run; engine_bench
// compares the counts with wl1's published outcome (533,786 fills, 36,195
// IOC remainders cancelled, 48,592 cancels, 251,075 cancel rejects) and
// fails the benchmark if they differ.
#ifndef ORDERWIRE_BENCH_CALIB_BOOK_H_
#define ORDERWIRE_BENCH_CALIB_BOOK_H_

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "codec/command.h"

namespace orderwire::bench {

// One wl1 command, packed.
struct CalibCommand {
  enum Type : std::uint8_t { kGoodTillCancel, kImmediateOrCancel, kCancel };
  std::uint32_t id;  // the new order's id, or the id to cancel
  std::int32_t price;
  std::uint32_t quantity;
  Type type;
  std::uint8_t side;  // 0 buy, 1 sell
};
static_assert(sizeof(CalibCommand) == 16);

// wl1 commands (NewLimit GoodTillCancel / ImmediateOrCancel, CancelByOrder)
// packed; the order ids a NewLimit gets are its position among the new
// orders (1, 2, 3, ...), which is what the engine assigns too.
[[nodiscard]] std::vector<CalibCommand> PackWl1(
    std::span<const codec::Command> commands);

struct CalibReport {
  enum Type : std::uint8_t {
    kAccepted,
    kFilledMaker,
    kFilledTaker,
    kCancelled,           // a requested cancel
    kRemainderCancelled,  // the rest of an ImmediateOrCancel order
    kCancelRejected,
  };
  std::uint64_t order_id;
  std::int64_t price;
  std::uint32_t quantity;
  std::uint32_t leaves;
  Type type;
};
static_assert(sizeof(CalibReport) == 32);

struct CalibOutcome {
  std::uint64_t fills = 0;  // maker fills (= trades)
  std::uint64_t remainders_cancelled = 0;
  std::uint64_t cancels = 0;
  std::uint64_t cancel_rejects = 0;
};

class CalibBook {
 public:
  // Prices must lie in [kLadderBase, kLadderBase + kLadderSize).
  static constexpr std::int32_t kLadderBase = 0;
  static constexpr std::int32_t kLadderSize = 1 << 18;
  static constexpr std::size_t kMaxReports = 64;

  // A book for order ids 1..max_order_id. Allocates everything.
  explicit CalibBook(std::uint32_t max_order_id);

  // Empties the book (keeps the memory). O(ladder + orders).
  void Reset();

  // Applies one command; its reports are reports() until the next call.
  void Execute(const CalibCommand& command) noexcept;

  [[nodiscard]] std::span<const CalibReport> reports() const noexcept {
    return {reports_.data(), report_count_};
  }

 private:
  static constexpr std::uint32_t kNone = 0;  // no order (ids start at 1)
  struct Order {
    std::uint32_t next;
    std::uint32_t prev;
    std::int32_t price;
    std::uint32_t quantity;  // 0: not live
    std::uint8_t side;
  };
  struct Level {
    std::uint32_t head;
    std::uint32_t tail;
  };
  struct Side {
    std::vector<Level> levels;            // by price - kLadderBase
    std::vector<std::uint64_t> occupied;  // bit per level
    std::vector<std::uint64_t> summary;   // bit per non-zero occupied word
  };

  void Emit(CalibReport::Type type, std::uint64_t order_id, std::int64_t price,
            std::uint32_t quantity, std::uint32_t leaves) noexcept {
    reports_[report_count_++] =
        CalibReport{order_id, price, quantity, leaves, type};
  }
  void NewOrder(const CalibCommand& c) noexcept;
  void Cancel(std::uint32_t id) noexcept;
  // Trades against the asks (SideIndex 1) up to `limit`, or the bids.
  template <int kTakerSide>
  std::uint32_t Match(std::uint32_t taker_id, std::int32_t limit,
                      std::uint32_t quantity) noexcept;
  void Rest(std::uint32_t id, std::uint8_t side, std::int32_t price,
            std::uint32_t quantity) noexcept;
  void MarkOccupied(Side& side, std::int32_t slot) noexcept;
  void MarkEmpty(Side& side, std::int32_t slot) noexcept;
  // The highest occupied slot below `slot`, or -1.
  [[nodiscard]] std::int32_t OccupiedBelow(const Side& side,
                                           std::int32_t slot) const noexcept;
  // The lowest occupied slot above `slot`, or kLadderSize.
  [[nodiscard]] std::int32_t OccupiedAbove(const Side& side,
                                           std::int32_t slot) const noexcept;

  std::vector<Order> orders_;  // by order id
  Side sides_[2];
  std::int32_t best_bid_ = -1;           // slot, -1 when empty
  std::int32_t best_ask_ = kLadderSize;  // slot, kLadderSize when empty
  std::array<CalibReport, kMaxReports> reports_{};
  std::size_t report_count_ = 0;
};

// Runs `commands` from an empty book and counts the outcome.
[[nodiscard]] CalibOutcome RunAndCount(CalibBook& book,
                                       std::span<const CalibCommand> commands);

}  // namespace orderwire::bench

#endif  // ORDERWIRE_BENCH_CALIB_BOOK_H_
