// Deterministic command streams for `orderwire gen`, engine_bench, tests and
// load-generating clients. Cold path: generators allocate freely.
//
// Every stream is one session: sequences 1, 2, 3, ... A (workload, seed,
// count) triple gives the same commands on every machine and compiler (all
// randomness is splitmix64, all arithmetic is integer).
//
// mixed - the standard workload (MixedGenerator): 64 accounts, 8 instruments
//   (ids 1..8); per instrument a mid price doing a random walk from 100,000
//   ticks (each new order on the instrument moves it by -1, 0 or +1); the
//   command kinds are 50% NewLimit (of which 80% GoodTillCancel, 15%
//   ImmediateOrCancel, 2.5% FillOrKill, 2.5% PostOnly), 2% NewMarket, 28%
//   CancelByOrder, 5% CancelByClient, 15% Replace. Quantities 1..100.
//   Resting orders (GoodTillCancel, PostOnly) are priced mid -/+ d on their
//   side, d uniform in -5..50 for 90% of them (so some cross) and in
//   51..500 for the rest; ImmediateOrCancel and FillOrKill cross by 0..10
//   ticks. Cancels and replaces aim at a live order chosen uniformly - the
//   generator runs its own engine (default configuration) to know which
//   orders are live - except 3% aimed at a recently finished order
//   (UnknownOrder) and 2% sent from another account (NotOwner, or
//   UnknownOrder for CancelByClient). Replaces are half reprices (1..5 ticks
//   either way, same quantity: priority lost, may cross) and half size-downs
//   (same price, a smaller quantity: priority kept; a reprice when the
//   leaves are 1); each gives the order a new client_order_id. Each account
//   numbers its client_order_ids 1, 2, 3, ... When a cancel or replace is
//   drawn while nothing is live, a GoodTillCancel NewLimit is sent instead.
//
// wl1 - a published single-book workload (Wl1Generator), reproduced exactly
//   from its recipe: splitmix64 with state = seed; mid = 100000; live = [];
//   next_id = 1. Per command: r1 = next(): r1 % 4 == 0 -> mid -= 1, == 1 ->
//   mid += 1, clamp mid to [50000, 150000]; k = next() % 100; r3 = next().
//   k < 60, or k < 90 with live empty: GoodTillCancel NewLimit, side = r3 & 1
//   (0 Buy, 1 Sell), off = 1 + (r3 >> 1) % 20, qty = 10 * (1 + (r3 >> 8) % 10),
//   price = mid - off (buy) / mid + off (sell), id = next_id++ appended to
//   live. Else k < 90: CancelByOrder of live[i], i = r3 % len(live); live[i] =
//   last; pop. Else: ImmediateOrCancel NewLimit, side = r3 & 1, qty = 10 *
//   (1 + (r3 >> 8) % 20), price = mid + 10 (buy) / mid - 10 (sell), id =
//   next_id++ (not added to live). Instrument 1; account_id =
//   client_order_id = id.
//
// The book shapes (BookShapeGenerator): four streams that take the engine
// where mixed and wl1 never go. Each runs its own engine (default
// configuration) to know which orders are live, so every cancel and replace
// hits a live order and no command is rejected (the tests count: zero).
// All trade on instrument 1 from a mid of 100,000 ticks; every new order
// has an account of its own (account_id = its number among the new orders
// of the stream, 1, 2, 3, ...: no self-trade cancels) and client_order_ids
// come from one counter (1, 2, 3, ...; a replace takes the next one). Maker
// quantities are 1..100 lots. "Random live order" below is uniform over the
// live orders; "oldest live order" is the live order accepted first.
//
// deep - a deep static book. Build: the first 250,000 commands are
//   GoodTillCancel orders, side uniform, at mid -/+ off with off uniform in
//   1..15,000 (30,000 levels, ~8.3 orders each). Then, per command: 50%
//   GoodTillCancel (80% at off uniform in 1..15,000, 20% near the touch at
//   1..16), 40% CancelByOrder of a random live order (so mostly deep), 10%
//   ImmediateOrCancel at mid +/- 16 crossing the touch, quantity 1..100
//   (they fill ~0.1 resting orders per command: the book keeps its size).
//   The mid stays at 100,000. Peak: ~250,000 live orders over ~30,000
//   levels; the book stays that size.
// swings - large swings. The mid walks in legs: up by A ticks, back down by
//   A, down by B, back up by B, then again with new amplitudes; A and B are
//   25..40% (uniform, whole percent) of 100,000. Per command: 8% a sweep:
//   the mid advances 1..32 ticks along the leg (never past its end) and an
//   ImmediateOrCancel in the leg's direction priced 4 ticks beyond the new
//   mid, for 200 x (ticks advanced + 4) lots, takes every level on its way;
//   52% GoodTillCancel at mid -/+ (1..24); 40% CancelByOrder, 75% of the
//   oldest live order (stale quotes the market left behind), 25% of a random
//   one. About 1.3 ticks of travel per command: a 30% leg is ~23,000
//   commands.
// crash - flash crashes. Cycles of 125,000 commands. Normal trading for the
//   first 120,000 of each: the mid does wl1's walk (-1, 0, 0, +1); 55%
//   GoodTillCancel at mid -/+ off (off 1..50 for 70%, 51..2,000 for 30%),
//   35% CancelByOrder (half of the oldest live order, half of a random one),
//   10% ImmediateOrCancel crossing by 0..5 ticks. Then the crash: sells
//   until the bid side is empty, alternately NewMarket of 500..2,000 lots and
//   ImmediateOrCancel 20 ticks below the best bid for 2,000 lots (the last
//   one may find fewer left: its remainder is Cancelled, NoLiquidity or
//   ImmediateOrCancel, as PROTOCOL.md says; not a reject). Then the refill:
//   the mid drops to the lowest price traded in the crash and normal trading
//   resumes (bids rest again below the new mid, stale asks are cancelled
//   oldest first), the mid walking up with a drift (+1 with 1/2, -1 with
//   1/8) until it is back at its level before the crash.
// churn - heavy cancel churn. The mid does wl1's walk. Per command: 30%
//   GoodTillCancel at mid -/+ (1..10); 3% ImmediateOrCancel crossing by
//   0..3 ticks; 30% cancels (85% CancelByOrder, 15% CancelByClient) and 37%
//   Replace (half a reprice by -/+ 1..3 ticks, same quantity, priority lost,
//   may trade; half a size-down, priority kept; a reprice when the leaves
//   are 1), each aimed at one of the 32 orders accepted last that is still
//   live (a random live order when none of them is, a GoodTillCancel when
//   nothing is live). About two thirds of the commands are cancels and
//   replaces of orders a few commands old.
#ifndef ORDERWIRE_ENGINE_WORKLOAD_H_
#define ORDERWIRE_ENGINE_WORKLOAD_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "codec/command.h"
#include "codec/testing/random_commands.h"
#include "engine/engine.h"
#include "engine/report.h"

namespace orderwire::workload {

enum class Workload : std::uint8_t {
  kMixed,
  kWl1,
  kDeep,
  kSwings,
  kCrash,
  kChurn,
};

// Every workload, in the order above.
inline constexpr std::array<Workload, 6> kAllWorkloads = {
    Workload::kMixed,  Workload::kWl1,   Workload::kDeep,
    Workload::kSwings, Workload::kCrash, Workload::kChurn};

// "mixed", "wl1", "deep", "swings", "crash" or "churn".
[[nodiscard]] std::string_view Name(Workload workload);
// The workload called `name`; InvalidArgument listing the names otherwise.
[[nodiscard]] absl::StatusOr<Workload> ParseWorkload(std::string_view name);

// The wl1 stream (recipe above).
class Wl1Generator {
 public:
  explicit Wl1Generator(std::uint64_t seed);
  // The next command; sequences count from 1.
  codec::Command Next();

 private:
  codec::testing::SplitMix64 rng_;
  std::int64_t mid_ = 100'000;
  std::vector<std::uint64_t> live_;
  std::uint64_t next_id_ = 1;
  std::uint64_t sequence_ = 0;
};

// A resting order as a generator knows it.
struct LiveOrder {
  std::uint64_t order_id;
  std::uint64_t account_id;
  std::uint64_t client_order_id;
  codec::Side side;
  std::int64_t price;
  std::uint64_t leaves;
};

// The orders resting in a generator's engine, kept from its reports (the
// mixed and shape generators run an engine to know what they may cancel or
// replace). O(1) add, find and remove; a removal moves the last order into
// the hole, so positions (and a generator's random picks by position)
// depend only on the reports, which keeps every stream deterministic.
class LiveOrders {
 public:
  // Applies one report of `reports`: Accepted of a GoodTillCancel or PostOnly
  // order adds it; Filled updates its leaves and removes it at 0; Cancelled
  // removes it; Replaced updates its client order id, price and quantity.
  // Returns the order removed, if any. Reports of orders not live change
  // nothing.
  std::optional<LiveOrder> Apply(const engine::ReportBuffer& reports,
                                 const engine::Report& report);

  [[nodiscard]] bool empty() const noexcept { return orders_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return orders_.size(); }
  [[nodiscard]] const LiveOrder& operator[](std::size_t i) const noexcept {
    return orders_[i];
  }
  // Null when `order_id` is not live.
  [[nodiscard]] const LiveOrder* Find(std::uint64_t order_id) const;

 private:
  std::optional<LiveOrder> Remove(std::uint64_t order_id);

  std::vector<LiveOrder> orders_;
  absl::flat_hash_map<std::uint64_t, std::size_t> position_;
};

// The mixed stream (description above).
class MixedGenerator {
 public:
  static constexpr std::uint32_t kAccounts = 64;
  static constexpr std::uint32_t kInstruments = 8;
  static constexpr std::int64_t kStartMid = 100'000;

  explicit MixedGenerator(std::uint64_t seed);
  // The next command; sequences count from 1.
  codec::Command Next();

 private:
  codec::Command Draw();
  codec::Command NewLimit(codec::TimeInForce tif);
  codec::Command NewMarket();
  // A target for a cancel or replace: a live order, or (rarely) a finished
  // one or one seen from a foreign account.
  LiveOrder Target(std::uint64_t& account_id);
  void Track(const engine::ReportBuffer& reports);

  codec::testing::SplitMix64 rng_;
  std::uint64_t sequence_ = 0;
  std::array<std::int64_t, kInstruments> mid_;
  std::array<std::uint64_t, kAccounts> next_client_order_id_{};
  std::unique_ptr<engine::Engine> engine_;
  engine::ReportBuffer reports_;
  LiveOrders live_;
  std::array<LiveOrder, 64> finished_{};
  std::size_t finished_count_ = 0;
};

// The book shapes deep, swings, crash and churn (recipes above).
class BookShapeGenerator {
 public:
  static constexpr std::int64_t kStartMid = 100'000;
  // deep
  static constexpr std::size_t kDeepBuildOrders = 250'000;
  static constexpr std::int64_t kDeepLevelsPerSide = 15'000;
  static constexpr std::int64_t kDeepTouchBand = 16;
  // swings
  static constexpr std::int64_t kSwingMinPercent = 25;
  static constexpr std::int64_t kSwingMaxPercent = 40;
  static constexpr std::int64_t kSweepMaxTicks = 32;
  // crash: a crash begins at command kCrashFirst + k * kCrashCycle + 1.
  static constexpr std::uint64_t kCrashCycle = 125'000;
  static constexpr std::uint64_t kCrashFirst = 120'000;
  // churn
  static constexpr std::size_t kChurnRecent = 32;

  // Precondition: `shape` is kDeep, kSwings, kCrash or kChurn.
  BookShapeGenerator(Workload shape, std::uint64_t seed);
  BookShapeGenerator(BookShapeGenerator&&) noexcept;
  BookShapeGenerator& operator=(BookShapeGenerator&&) noexcept;
  ~BookShapeGenerator();

  // The next command; sequences count from 1.
  codec::Command Next();

 private:
  codec::Command Draw();
  codec::Command DrawDeep();
  codec::Command DrawSwings();
  codec::Command DrawCrash();
  codec::Command DrawChurn();
  // A NewLimit of a new account.
  codec::Command Limit(codec::Side side, codec::TimeInForce tif,
                       std::int64_t price, std::uint64_t quantity);
  // A GoodTillCancel maker at mid -/+ off on a random side.
  codec::Command Maker(std::int64_t off);
  codec::Command CancelByOrder(const LiveOrder& order);
  // Null when nothing is live.
  const LiveOrder* RandomLive();
  const LiveOrder* OldestLive();
  // One of the kChurnRecent orders accepted last that is still live, else a
  // random live order, else null.
  const LiveOrder* RecentLive();
  void WalkMid();  // wl1's walk: -1, 0, 0, +1
  void NextLeg();  // swings
  void Track(const engine::ReportBuffer& reports);

  Workload shape_;
  codec::testing::SplitMix64 rng_;
  std::uint64_t sequence_ = 0;
  std::int64_t mid_ = kStartMid;
  std::uint64_t next_account_ = 1;
  std::uint64_t next_client_order_id_ = 1;
  std::unique_ptr<engine::Engine> engine_;
  engine::ReportBuffer reports_;
  LiveOrders live_;
  std::deque<std::uint64_t> arrivals_;  // accepted order ids, oldest first
  std::array<std::uint64_t, kChurnRecent> recent_{};
  std::size_t recent_count_ = 0;
  // swings: the current leg (0 up, 1 back, 2 down, 3 back) and its end.
  int leg_ = -1;
  std::int64_t leg_end_ = kStartMid;
  std::int64_t amplitude_ = 0;
  // crash
  bool crashing_ = false;
  bool market_next_ = true;
  std::int64_t crash_low_ = 0;
  std::int64_t recover_to_ = 0;  // 0: not recovering
};

// Any workload's stream, one command at a time (`orderwire gen`).
class WorkloadGenerator {
 public:
  WorkloadGenerator(Workload workload, std::uint64_t seed);
  // The next command; sequences count from 1.
  codec::Command Next();

 private:
  std::variant<Wl1Generator, MixedGenerator, BookShapeGenerator> generator_;
};

// `count` commands of `workload` from `seed`, sequences 1..count.
[[nodiscard]] std::vector<codec::Command> Generate(Workload workload,
                                                   std::size_t count,
                                                   std::uint64_t seed);

// The frames of `commands`, back to back.
[[nodiscard]] std::vector<std::byte> EncodeCommands(
    std::span<const codec::Command> commands);

}  // namespace orderwire::workload

#endif  // ORDERWIRE_ENGINE_WORKLOAD_H_
