// engine_bench: the matching engine on the workloads of `orderwire gen`
// (1,000,000 commands, seed 1): `mixed` and `wl1`, and the book shapes
// `deep`, `swings`, `crash` and `churn` (engine/workload.h); and the
// alternatives engine.h's design note weighs (on mixed and wl1, and the
// level structures on the shapes too).
//
//   engine/<workload>            engine alone: commands already decoded,
//                                reports into a reused ReportBuffer
//   engine+prefetch/<workload>   the same, calling Engine::Prefetch for the
//                                next command before executing each one
//   decode+engine/<workload>     frames decoded, then executed
//   decode/<workload>            baseline in the same run: decoding alone
//   alt:<variant>/<workload>     the engine with another structure (engine.h)
//   latency/<workload>/<kind>    per-command latency (rdtsc around each
//                                Execute), p50/p99/p99.9/max in ns, for one
//                                command kind or all
//   latency/tsc-overhead         baseline: the timer's own cost, measured
//                                the same way around nothing
//   calib/wl1                    the calibration book (bench/calib_book.h)
//                                on the same wl1 commands, packed: the
//                                baseline engine/wl1 is measured against
//                                (ratio engine/wl1 : calib/wl1);
//                                fails unless it reproduces wl1's outcome
//   latency/wl1/calib            its per-command latency, timed the same way
//
// Each engine pass starts from an empty book (Reset, outside the timing) on
// an engine whose tables already grew in an earlier pass, i.e. the steady
// state. The figure is the per_cmd counter (time per command); take the
// median of repetitions, pinned: scripts/bench.sh (docs/BENCHMARKS.md).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "absl/container/flat_hash_map.h"
#include "bench/calib_book.h"
#include "benchmark/benchmark.h"
#include "codec/command.h"
#include "codec/kind_table.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "engine/internal/engine_impl.h"
#include "engine/internal/map_levels.h"
#include "engine/internal/order_index.h"
#include "engine/internal/pool.h"
#include "engine/internal/sorted_levels.h"
#include "engine/report.h"
#include "engine/workload.h"

namespace orderwire::engine {
namespace {

constexpr std::size_t kCommands = 1'000'000;
constexpr std::uint64_t kSeed = 1;

// ---------------------------------------------------------------------------
// The alternatives.

// A side as a node-based ordered map: internal::MapLevels.
using internal::MapLevels;

// Both lookups as absl::flat_hash_map, reserved to capacity (keyed on the
// strong types: codec::Strong hashes as its integer).
class AbslIndex {
 public:
  explicit AbslIndex(std::uint32_t max_entries) {
    by_id_.reserve(max_entries);
    by_client_.reserve(max_entries);
  }
  [[nodiscard]] std::uint32_t FindById(codec::OrderId order_id,
                                       const internal::Order*) const noexcept {
    const auto it = by_id_.find(order_id);
    return it == by_id_.end() ? internal::kNil : it->second;
  }
  void InsertId(codec::OrderId order_id, std::uint32_t index) noexcept {
    by_id_.emplace(order_id, index);
  }
  void EraseId(codec::OrderId order_id, std::uint32_t) noexcept {
    by_id_.erase(order_id);
  }
  [[nodiscard]] std::uint32_t FindByClient(
      codec::AccountId account_id, std::uint32_t owner,
      codec::ClientOrderId client_order_id,
      const internal::Order*) const noexcept {
    const auto it = by_client_.find({account_id, owner, client_order_id});
    return it == by_client_.end() ? internal::kNil : it->second;
  }
  void InsertClient(codec::AccountId account_id, std::uint32_t owner,
                    codec::ClientOrderId client_order_id,
                    std::uint32_t index) noexcept {
    by_client_.emplace(std::make_tuple(account_id, owner, client_order_id),
                       index);
  }
  void EraseClient(codec::AccountId account_id, std::uint32_t owner,
                   codec::ClientOrderId client_order_id,
                   std::uint32_t) noexcept {
    by_client_.erase({account_id, owner, client_order_id});
  }
  void Clear() noexcept {
    by_id_.clear();
    by_client_.clear();
  }

 private:
  absl::flat_hash_map<codec::OrderId, std::uint32_t> by_id_;
  absl::flat_hash_map<
      std::tuple<codec::AccountId, std::uint32_t, codec::ClientOrderId>,
      std::uint32_t>
      by_client_;
};

// Our tables, but sized to the capacity from the start (2 slots per order).
class FullSizeIndex : public internal::OrderIndex {
 public:
  explicit FullSizeIndex(std::uint32_t max_entries)
      : OrderIndex(max_entries, std::numeric_limits<std::uint64_t>::max()) {}
};

struct NoDenseGuessTraits {
  using Levels = internal::BasicSortedLevels<8, /*kGuessDense=*/false>;
  using Index = internal::OrderIndex;
};
struct BinarySearchTraits {
  using Levels = internal::BasicSortedLevels<0>;
  using Index = internal::OrderIndex;
};
struct Window32Traits {
  using Levels = internal::BasicSortedLevels<32>;
  using Index = internal::OrderIndex;
};
struct LinearScanTraits {
  using Levels =
      internal::BasicSortedLevels<std::numeric_limits<std::size_t>::max()>;
  using Index = internal::OrderIndex;
};
struct MapTraits {
  using Levels = MapLevels;
  using Index = internal::OrderIndex;
};
struct AbslIndexTraits {
  using Levels = internal::SortedLevels;
  using Index = AbslIndex;
};
struct FullSizeIndexTraits {
  using Levels = internal::SortedLevels;
  using Index = FullSizeIndex;
};

// ---------------------------------------------------------------------------
// Inputs, made once per workload.

struct Input {
  std::vector<codec::Command> commands;
  std::vector<std::byte> frames;
};

const Input& InputOf(workload::Workload which) {
  static std::map<workload::Workload, Input> inputs;
  auto it = inputs.find(which);
  if (it == inputs.end()) {
    Input input;
    input.commands = workload::Generate(which, kCommands, kSeed);
    input.frames = workload::EncodeCommands(input.commands);
    it = inputs.emplace(which, std::move(input)).first;
  }
  return it->second;
}

void SetPerCommand(benchmark::State& state) {
  state.SetItemsProcessed(state.iterations() *
                          static_cast<std::int64_t>(kCommands));
  // Seconds per command (the console shows it with an SI prefix: "52.1n").
  state.counters["per_cmd"] =
      benchmark::Counter(static_cast<double>(kCommands),
                         benchmark::Counter::kIsIterationInvariantRate |
                             benchmark::Counter::kInvert);
}

// ---------------------------------------------------------------------------
// Throughput.

template <typename Traits, bool kPrefetchNext = false>
void BM_Engine(benchmark::State& state, workload::Workload which) {
  const Input& input = InputOf(which);
  auto engine = std::make_unique<BasicEngine<Traits>>(EngineConfig{});
  ReportBuffer reports(1 << 12);
  // One untimed pass grows the tables to the workload's size.
  for (const codec::Command& c : input.commands) {
    (void)engine->Execute(c, reports);
    reports.Clear();
  }
  std::uint64_t checksum = 0;
  const std::span<const codec::Command> commands(input.commands);
  for (auto _ : state) {
    state.PauseTiming();
    engine->Reset();
    state.ResumeTiming();
    for (std::size_t i = 0; i < commands.size(); ++i) {
      if constexpr (kPrefetchNext) {
        if (i + 1 < commands.size()) engine->Prefetch(commands[i + 1], 0);
      }
      (void)engine->Execute(commands[i], reports);
      checksum += reports.size();
      reports.Clear();
    }
    benchmark::DoNotOptimize(checksum);
  }
  state.counters["reports_per_cmd"] =
      static_cast<double>(checksum) / (static_cast<double>(state.iterations()) *
                                       static_cast<double>(kCommands));
  SetPerCommand(state);
}

void BM_DecodeEngine(benchmark::State& state, workload::Workload which) {
  const Input& input = InputOf(which);
  auto engine = std::make_unique<Engine>(EngineConfig{});
  ReportBuffer reports(1 << 12);
  for (const codec::Command& c : input.commands) {
    (void)engine->Execute(c, reports);
    reports.Clear();
  }
  const std::span<const std::byte> frames(input.frames);
  for (auto _ : state) {
    state.PauseTiming();
    engine->Reset();
    state.ResumeTiming();
    std::size_t offset = 0;
    codec::Command command;
    while (offset < frames.size()) {
      const auto size = codec::DecodeCommand(frames.subspan(offset), command);
      if (!size.ok()) break;
      offset += *size;
      (void)engine->Execute(command, reports);
      reports.Clear();
    }
    benchmark::DoNotOptimize(offset);
  }
  SetPerCommand(state);
}

void BM_Decode(benchmark::State& state, workload::Workload which) {
  const Input& input = InputOf(which);
  const std::span<const std::byte> frames(input.frames);
  for (auto _ : state) {
    std::size_t offset = 0;
    codec::Command command;
    std::uint64_t sum = 0;
    while (offset < frames.size()) {
      const auto size = codec::DecodeCommand(frames.subspan(offset), command);
      if (!size.ok()) break;
      offset += *size;
      sum += command.order_id.value() + command.quantity.value();
    }
    benchmark::DoNotOptimize(sum);
  }
  SetPerCommand(state);
}

// ---------------------------------------------------------------------------
// The calibration book.

// wl1 seed 1, 1,000,000 commands: the outcome every book must reproduce.
constexpr bench::CalibOutcome kWl1Outcome{.fills = 533'786,
                                          .remainders_cancelled = 36'195,
                                          .cancels = 48'592,
                                          .cancel_rejects = 251'075};

struct CalibInput {
  std::vector<bench::CalibCommand> commands;
  std::unique_ptr<bench::CalibBook> book;
};

// The packed wl1 commands and a book for them, checked once against
// kWl1Outcome; null (after SkipWithError) if the book gets another outcome.
CalibInput* CalibInputOrSkip(benchmark::State& state) {
  static CalibInput* const input = [] {
    auto* in = new CalibInput;
    in->commands = bench::PackWl1(InputOf(workload::Workload::kWl1).commands);
    std::uint32_t max_id = 0;
    for (const bench::CalibCommand& c : in->commands) {
      max_id = std::max(max_id, c.id);
    }
    in->book = std::make_unique<bench::CalibBook>(max_id);
    return in;
  }();
  const bench::CalibOutcome outcome =
      bench::RunAndCount(*input->book, input->commands);
  if (kSeed != 1 || kCommands != 1'000'000 ||
      outcome.fills != kWl1Outcome.fills ||
      outcome.remainders_cancelled != kWl1Outcome.remainders_cancelled ||
      outcome.cancels != kWl1Outcome.cancels ||
      outcome.cancel_rejects != kWl1Outcome.cancel_rejects) {
    state.SkipWithError(
        "the calibration book does not reproduce wl1's outcome (533,786 "
        "fills, 36,195 IOC remainders, 48,592 cancels, 251,075 rejects)");
    return nullptr;
  }
  return input;
}

void BM_CalibBook(benchmark::State& state) {
  CalibInput* const input = CalibInputOrSkip(state);
  if (input == nullptr) return;
  std::uint64_t checksum = 0;
  for (auto _ : state) {
    state.PauseTiming();
    input->book->Reset();
    state.ResumeTiming();
    for (const bench::CalibCommand& c : input->commands) {
      input->book->Execute(c);
      checksum += input->book->reports().size();
    }
    benchmark::DoNotOptimize(checksum);
  }
  state.counters["reports_per_cmd"] =
      static_cast<double>(checksum) / (static_cast<double>(state.iterations()) *
                                       static_cast<double>(kCommands));
  SetPerCommand(state);
}

// ---------------------------------------------------------------------------
// Latency per command.

std::uint64_t Ticks() noexcept {
#if defined(__x86_64__)
  _mm_lfence();
  const std::uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
#else
  return static_cast<std::uint64_t>(
      std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

// Nanoseconds per tick, measured against steady_clock over 50 ms.
double NsPerTick() {
  static const double ns_per_tick = [] {
    const auto start = std::chrono::steady_clock::now();
    const std::uint64_t t0 = Ticks();
    while (std::chrono::steady_clock::now() - start <
           std::chrono::milliseconds(50)) {
    }
    const std::uint64_t t1 = Ticks();
    const double ns = std::chrono::duration<double, std::nano>(
                          std::chrono::steady_clock::now() - start)
                          .count();
    return ns / static_cast<double>(t1 - t0);
  }();
  return ns_per_tick;
}

void ReportPercentiles(benchmark::State& state,
                       std::vector<std::uint64_t>& samples) {
  if (samples.empty()) return;
  std::sort(samples.begin(), samples.end());
  const double scale = NsPerTick();
  const auto at = [&](double q) {
    const auto i = static_cast<std::size_t>(
        std::lround(q * static_cast<double>(samples.size() - 1)));
    return static_cast<double>(samples[i]) * scale;
  };
  state.counters["p50_ns"] = at(0.50);
  state.counters["p99_ns"] = at(0.99);
  state.counters["p999_ns"] = at(0.999);
  state.counters["max_ns"] = static_cast<double>(samples.back()) * scale;
  state.counters["count"] = static_cast<double>(samples.size());
}

// kind 0: every command; else only commands of that kind byte.
void BM_Latency(benchmark::State& state, workload::Workload which, int kind) {
  const Input& input = InputOf(which);
  auto engine = std::make_unique<Engine>(EngineConfig{});
  ReportBuffer reports(1 << 12);
  for (const codec::Command& c : input.commands) {
    (void)engine->Execute(c, reports);
    reports.Clear();
  }
  std::vector<std::uint64_t> samples;
  samples.reserve(kCommands);
  for (auto _ : state) {
    engine->Reset();
    samples.clear();
    for (const codec::Command& c : input.commands) {
      const std::uint64_t t0 = Ticks();
      (void)engine->Execute(c, reports);
      const std::uint64_t t1 = Ticks();
      reports.Clear();
      if (kind == 0 || static_cast<int>(c.kind) == kind) {
        samples.push_back(t1 - t0);
      }
    }
  }
  ReportPercentiles(state, samples);
}

void BM_CalibLatency(benchmark::State& state) {
  CalibInput* const input = CalibInputOrSkip(state);
  if (input == nullptr) return;
  std::vector<std::uint64_t> samples;
  samples.reserve(kCommands);
  for (auto _ : state) {
    input->book->Reset();
    samples.clear();
    for (const bench::CalibCommand& c : input->commands) {
      const std::uint64_t t0 = Ticks();
      input->book->Execute(c);
      const std::uint64_t t1 = Ticks();
      samples.push_back(t1 - t0);
    }
  }
  ReportPercentiles(state, samples);
}

// The timer alone, around nothing: what every latency sample includes.
void BM_TimerOverhead(benchmark::State& state) {
  std::vector<std::uint64_t> samples;
  samples.reserve(kCommands);
  for (auto _ : state) {
    samples.clear();
    for (std::size_t i = 0; i < kCommands; ++i) {
      const std::uint64_t t0 = Ticks();
      const std::uint64_t t1 = Ticks();
      samples.push_back(t1 - t0);
    }
  }
  ReportPercentiles(state, samples);
}

// Whether `which` has commands of `kind` (0: every kind).
bool HasKind(workload::Workload which, int kind) {
  using workload::Workload;
  const auto is = [kind](codec::Kind k) { return kind == static_cast<int>(k); };
  if (kind == 0 || is(codec::Kind::kNewLimit) ||
      is(codec::Kind::kCancelByOrder)) {
    return true;
  }
  switch (which) {
    case Workload::kMixed:
      return true;
    case Workload::kCrash:
      return is(codec::Kind::kNewMarket);
    case Workload::kChurn:
      return is(codec::Kind::kCancelByClient) || is(codec::Kind::kReplace);
    default:
      return false;
  }
}

void RegisterAll() {
  using workload::Workload;
  for (const Workload w : workload::kAllWorkloads) {
    const std::string name(workload::Name(w));
    benchmark::RegisterBenchmark(("engine/" + name).c_str(),
                                 BM_Engine<DefaultTraits>, w)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("engine+prefetch/" + name).c_str(),
                                 BM_Engine<DefaultTraits, true>, w)
        ->Unit(benchmark::kMillisecond);
    if (w == Workload::kWl1) {
      benchmark::RegisterBenchmark("calib/wl1", BM_CalibBook)
          ->Unit(benchmark::kMillisecond);
    }
    benchmark::RegisterBenchmark(("decode+engine/" + name).c_str(),
                                 BM_DecodeEngine, w)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("decode/" + name).c_str(), BM_Decode, w)
        ->Unit(benchmark::kMillisecond);
  }
  for (const Workload w : {Workload::kMixed, Workload::kWl1}) {
    const std::string name(workload::Name(w));
    benchmark::RegisterBenchmark(("alt:no-dense-guess/" + name).c_str(),
                                 BM_Engine<NoDenseGuessTraits>, w)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("alt:binary-search-levels/" + name).c_str(),
                                 BM_Engine<BinarySearchTraits>, w)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("alt:count-32-levels/" + name).c_str(),
                                 BM_Engine<Window32Traits>, w)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("alt:count-all-levels/" + name).c_str(),
                                 BM_Engine<LinearScanTraits>, w)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("alt:std-map-levels/" + name).c_str(),
                                 BM_Engine<MapTraits>, w)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("alt:absl-flat-hash-map/" + name).c_str(),
                                 BM_Engine<AbslIndexTraits>, w)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(
        ("alt:index-sized-to-capacity/" + name).c_str(),
        BM_Engine<FullSizeIndexTraits>, w)
        ->Unit(benchmark::kMillisecond);
  }
  // The level structures on the book shapes (deep books, sweeps).
  for (const Workload w : {Workload::kDeep, Workload::kSwings, Workload::kCrash,
                           Workload::kChurn}) {
    const std::string name(workload::Name(w));
    benchmark::RegisterBenchmark(("alt:binary-search-levels/" + name).c_str(),
                                 BM_Engine<BinarySearchTraits>, w)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("alt:std-map-levels/" + name).c_str(),
                                 BM_Engine<MapTraits>, w)
        ->Unit(benchmark::kMillisecond);
  }
  constexpr std::array<std::pair<int, const char*>, 6> kKinds = {{
      {0, "all"},
      {static_cast<int>(codec::Kind::kNewLimit), "NewLimit"},
      {static_cast<int>(codec::Kind::kNewMarket), "NewMarket"},
      {static_cast<int>(codec::Kind::kCancelByOrder), "CancelByOrder"},
      {static_cast<int>(codec::Kind::kCancelByClient), "CancelByClient"},
      {static_cast<int>(codec::Kind::kReplace), "Replace"},
  }};
  for (const Workload w : workload::kAllWorkloads) {
    const std::string name(workload::Name(w));
    for (const auto& [kind, kind_name] : kKinds) {
      if (!HasKind(w, kind)) continue;
      benchmark::RegisterBenchmark(
          ("latency/" + name + "/" + kind_name).c_str(),
          [w, kind = kind](benchmark::State& state) {
            BM_Latency(state, w, kind);
          })
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::RegisterBenchmark("latency/wl1/calib", BM_CalibLatency)
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("latency/tsc-overhead", BM_TimerOverhead)
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
}

}  // namespace
}  // namespace orderwire::engine

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  orderwire::engine::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
