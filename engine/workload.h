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
#ifndef ORDERWIRE_ENGINE_WORKLOAD_H_
#define ORDERWIRE_ENGINE_WORKLOAD_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "codec/command.h"
#include "codec/testing/random_commands.h"
#include "engine/engine.h"
#include "engine/report.h"

namespace orderwire::workload {

enum class Workload : std::uint8_t { kMixed, kWl1 };

// "mixed" or "wl1".
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
  struct LiveOrder {
    std::uint64_t order_id;
    std::uint64_t account_id;
    std::uint64_t client_order_id;
    std::int64_t price;
    std::uint64_t leaves;
  };

  codec::Command Draw();
  codec::Command NewLimit(codec::TimeInForce tif);
  codec::Command NewMarket();
  // A target for a cancel or replace: a live order, or (rarely) a finished
  // one or one seen from a foreign account.
  LiveOrder Target(std::uint64_t& account_id);
  void Track(const engine::ReportBuffer& reports);
  void Remove(std::uint64_t order_id);

  codec::testing::SplitMix64 rng_;
  std::uint64_t sequence_ = 0;
  std::array<std::int64_t, kInstruments> mid_;
  std::array<std::uint64_t, kAccounts> next_client_order_id_{};
  std::unique_ptr<engine::Engine> engine_;
  engine::ReportBuffer reports_;
  std::vector<LiveOrder> live_;
  absl::flat_hash_map<std::uint64_t, std::size_t> live_position_;
  std::array<LiveOrder, 64> finished_{};
  std::size_t finished_count_ = 0;
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
