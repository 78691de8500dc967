// `orderwire match` and `orderwire gen`: the matching engine offline, and the
// deterministic command streams that feed it.
//
//   orderwire gen --workload wl1 --count 1000000 --seed 1 | orderwire match
//
// match checks its whole input (every frame a command, sequences 1, 2, 3,
// ...) before it runs anything, so a bad stream never leaves reports on
// standard output that look complete.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "cli/book_text.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "codec/command.h"
#include "codec/frame.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "engine/report.h"
#include "engine/workload.h"

namespace orderwire::cli {
namespace {

// match's help: the [engine] keys are listed from engine::kConfigKeys.
std::string MatchDetails() {
  std::string out =
      "Reads command frames back to back from standard input: one session,\n"
      "so their sequences must be 1, 2, 3, ... The whole input is checked\n"
      "first; a frame that is not a whole command frame, or whose sequence\n"
      "is not the next one, is an error naming its byte offset (exit 1,\n"
      "nothing written). The commands then run through the engine, and\n"
      "every report frame is written to standard output, numbered 1, 2,\n"
      "3, ... in emission order (--json: one JSON object per line, the form\n"
      "'orderwire decode' prints).\n\n"
      "--config FILE sets the engine's limits: the [engine] table of a\n"
      "TOML configuration file (the file 'serve --config' reads,\n"
      "docs/SERVICE.md; its other tables are checked, key files not read).\n"
      "Its keys, with their defaults:\n";
  const engine::EngineConfig defaults;
  for (const engine::ConfigKey& key : engine::kConfigKeys) {
    absl::StrAppendFormat(&out, "  %-16s %s (%d)\n", key.name, key.description,
                          key.get(defaults));
  }
  out +=
      "A key not given keeps its default. An error names the file, line\n"
      "and column.\n\n"
      "--book N prints the top N levels of each side of every non-empty\n"
      "book to standard error at the end. --stats prints counts and the\n"
      "engine's own time per command (engine alone, without decoding or\n"
      "output) to standard error.";
  return out;
}

const std::string kMatchDetails = MatchDetails();

const CommandSpec kMatchSpec{
    .name = "match",
    .synopsis =
        "[--config FILE] [--json] [--book N] [--stats] "
        "< commands.bin > reports.bin",
    .summary = "Run command frames through the matching engine.",
    .details = kMatchDetails,
    .flags = {{"config", "FILE", "", "engine configuration file"},
              {"json", "", "", "write reports as JSON Lines"},
              {"book", "N", "0", "depth table of every book (stderr)"},
              {"stats", "", "", "counts and ns/command (stderr)"}},
};

const CommandSpec kGenSpec{
    .name = "gen",
    .synopsis = "[--workload NAME] [--count N] [--seed S] > commands.bin",
    .summary = "Write a deterministic command stream (binary frames).",
    .details =
        "Writes --count command frames of one session (sequences 1, 2, 3,\n"
        "...) to standard output. The same workload, count and seed always\n"
        "give the same bytes. Workloads:\n"
        "  mixed  64 accounts, 8 instruments, prices a random walk around\n"
        "         100000 ticks; 50% NewLimit (80% GTC, 15% IOC, 2.5% FOK,\n"
        "         2.5% PostOnly), 2% NewMarket, 28% CancelByOrder,\n"
        "         5% CancelByClient, 15% Replace, aimed at live orders.\n"
        "  wl1    the published single-book workload (splitmix64 recipe):\n"
        "         60% GTC adds, 30% cancels, 10% IOC, instrument 1.\n"
        "Book shapes (instrument 1, no rejects with the default limits):\n"
        "  deep   a static book of ~250,000 orders over ~30,000 levels (built\n"
        "         by the first 250,000 commands), then inserts and cancels\n"
        "         deep in it and IOC orders at the touch.\n"
        "  swings the price walks 25-40% up and back, then down and back,\n"
        "         over and over; IOC sweeps of up to 36 levels, stale\n"
        "         quotes cancelled.\n"
        "  crash  every 125,000 commands, a burst of market and IOC sells\n"
        "         empties the bid side; then the book refills and the price\n"
        "         recovers.\n"
        "  churn  two thirds of the commands cancel or replace one of the\n"
        "         32 orders placed last.\n"
        "engine/workload.h gives every recipe in full.",
    .flags = {{"workload", "NAME", "mixed",
               "mixed, wl1, deep, swings, crash or churn"},
              {"count", "N", "1000000", "number of commands"},
              {"seed", "S", "1", "generator seed"}},
};

using Clock = std::chrono::steady_clock;

// Decodes the whole input, checking the session's sequences.
absl::StatusOr<std::vector<codec::Command>> DecodeSession(
    std::span<const std::byte> bytes) {
  std::vector<codec::Command> commands;
  commands.reserve(bytes.size() / codec::kFrameSize<codec::CancelByOrder> + 1);
  std::size_t offset = 0;
  std::uint64_t expected = 1;
  while (offset < bytes.size()) {
    codec::Command command;
    const auto size = codec::DecodeCommand(bytes.subspan(offset), command);
    if (!size.ok()) {
      return FrameError(0, offset, size.error(), bytes.subspan(offset));
    }
    if (command.sequence != expected) {
      return InputError(0, offset,
                        absl::StrFormat("frame sequence %d where %d was "
                                        "expected (one session: sequences "
                                        "must be 1, 2, 3, ...)",
                                        command.sequence, expected));
    }
    ++expected;
    offset += *size;
    commands.push_back(command);
  }
  return commands;
}

absl::Status Match(const Args& args) {
  // Flags first: a usage error is reported before any file is read.
  absl::StatusOr<std::int64_t> book_levels = args.Int("book", 0, 1'000'000);
  if (!book_levels.ok()) return book_levels.status();
  engine::EngineConfig config;
  if (args.Has("config")) {
    absl::StatusOr<engine::EngineConfig> loaded =
        LoadEngineConfig(args.String("config"));
    if (!loaded.ok()) return loaded.status();
    config = *loaded;
  }
  ReportSink sink = ReportSink::Stdout(
      args.Bool("json") ? ReportFormat::kJsonLines : ReportFormat::kBinary);

  absl::StatusOr<std::vector<std::byte>> input = ReadAll(stdin);
  if (!input.ok()) return input.status();
  absl::StatusOr<std::vector<codec::Command>> commands = DecodeSession(*input);
  if (!commands.ok()) return commands.status();

  auto engine = std::make_unique<engine::Engine>(config);
  engine::ReportBuffer reports(1 << 14);
  std::array<std::uint64_t, 256> by_kind{};
  std::uint64_t report_count = 0;
  Clock::duration engine_time{};
  const auto flush = [&]() -> absl::Status {
    for (const engine::Report& report : reports.reports()) {
      ++by_kind[static_cast<std::uint8_t>(report.kind)];
    }
    report_count += reports.size();
    absl::Status status = sink.Write(reports.frames());
    reports.Clear();
    return status;
  };
  constexpr std::size_t kChunk = 4096;
  const std::span<const codec::Command> all(*commands);
  for (std::size_t first = 0; first < all.size(); first += kChunk) {
    const auto chunk = all.subspan(first, std::min(kChunk, all.size() - first));
    const auto start = Clock::now();
    for (const codec::Command& command : chunk) {
      (void)engine->Execute(command, reports);
    }
    engine_time += Clock::now() - start;
    if (reports.frames().size() >= (1u << 20)) {
      if (absl::Status s = flush(); !s.ok()) return s;
    }
  }
  if (absl::Status s = flush(); !s.ok()) return s;
  if (absl::Status s = sink.Finish(); !s.ok()) return s;

  if (*book_levels > 0) {
    const std::string depth =
        DepthTables(*engine, static_cast<std::size_t>(*book_levels));
    if (absl::Status s = WriteAll(stderr, depth, "standard error"); !s.ok()) {
      return s;
    }
  }
  if (args.Bool("stats")) {
    const double ns =
        std::chrono::duration<double, std::nano>(engine_time).count();
    const double per_command =
        all.empty() ? 0.0 : ns / static_cast<double>(all.size());
    const auto count = [&](codec::Kind kind) {
      return by_kind[static_cast<std::uint8_t>(kind)];
    };
    const std::string stats = absl::StrFormat(
        "match: %d commands, %d reports (Accepted %d, Rejected %d, Filled "
        "%d, Cancelled %d, Replaced %d); %d live orders at the end; next "
        "order id %d, next match id %d\n"
        "match: engine alone %.1f ns/command (%.2f M commands/s)\n",
        all.size(), report_count, count(codec::Kind::kAccepted),
        count(codec::Kind::kRejected), count(codec::Kind::kFilled),
        count(codec::Kind::kCancelled), count(codec::Kind::kReplaced),
        engine->live_orders(), engine->next_order_id().value(),
        engine->next_match_id(), per_command,
        per_command > 0 ? 1e3 / per_command : 0.0);
    if (absl::Status s = WriteAll(stderr, stats, "standard error"); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status Gen(const Args& args) {
  absl::StatusOr<workload::Workload> which =
      workload::ParseWorkload(args.String("workload"));
  if (!which.ok()) return FlagError("workload", which.status());
  absl::StatusOr<std::uint64_t> count = args.Uint("count", 1'000'000'000);
  if (!count.ok()) return count.status();
  absl::StatusOr<std::uint64_t> seed = args.Uint("seed", UINT64_MAX);
  if (!seed.ok()) return seed.status();

  workload::WorkloadGenerator generator(*which, *seed);
  constexpr std::size_t kChunk = 1 << 14;
  std::vector<std::byte> bytes(kChunk * codec::kMaxFrameSize);
  for (std::uint64_t done = 0; done < *count;) {
    const std::uint64_t n = std::min<std::uint64_t>(kChunk, *count - done);
    std::size_t used = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      const codec::Command command = generator.Next();
      const auto size = codec::EncodeCommand(
          command, std::span<std::byte>(bytes).subspan(used));
      if (!size.ok()) {
        return absl::InternalError(
            absl::StrFormat("encoding command %d: %s", done + i + 1,
                            codec::Describe(size.error())));
      }
      used += *size;
    }
    if (absl::Status s =
            WriteAll(stdout, std::span<const std::byte>(bytes.data(), used));
        !s.ok()) {
      return s;
    }
    done += n;
  }
  return absl::OkStatus();
}

}  // namespace

const Command kMatchCommand{&kMatchSpec, Match};

const Command kGenCommand{&kGenSpec, Gen};

}  // namespace orderwire::cli
