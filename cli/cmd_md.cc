// `orderwire md from-journal`: the market-data feed a journal produces, as
// JSON Lines (docs/MARKETDATA.md "Text form").
//
//   orderwire md from-journal --journal /tmp/j [--from N] [--count N]
//       [--instrument ID]
//
// The journal is applied through the StateMachine exactly as `replay`
// applies it (cli/journal_apply.h: pinned configurations, --config,
// snapshots, --accept-loss); each record's feed() messages are printed in
// feed order, one JSON object a line (jsonl::FeedMessageToJson). A snapshot
// is started from only when it does not skip a message asked for (its next
// feed sequence is at most --from), so the output is the same with
// snapshots or without. Cold path: an offline tool.
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/journal_apply.h"
#include "cli/md_live.h"
#include "cli/progress.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "journal/start.h"
#include "jsonl/jsonl.h"
#include "state/state_machine.h"

namespace orderwire::cli {
namespace {

const CommandSpec kFromJournalSpec{
    .name = "from-journal",
    .synopsis =
        "--journal DIR [--from N] [--count N] [--instrument ID] "
        "[--config FILE] [--no-snapshot] [--accept-loss]",
    .summary = "Print the market-data feed a journal produces, as JSON Lines.",
    .details =
        "Applies the journal in DIR through the same StateMachine as\n"
        "'orderwire serve' and 'orderwire replay' (each segment's pinned\n"
        "configuration; --config for segments that pin none) and prints the\n"
        "feed's messages on standard output, one JSON object a line, in feed\n"
        "order (docs/MARKETDATA.md \"Text form\"):\n"
        "  {\"sequence\":4,\"kind\":\"OrderAdded\",\"timestamp\":...,"
        "\"order_id\":1,...}\n"
        "The messages and their sequences are the feed's, byte for byte, as\n"
        "the service, its restart and a standby make them (MARKETDATA.md\n"
        "\"Durability and determinism\"). A one-line summary goes to\n"
        "standard error.\n\n"
        "--from N prints from feed sequence N on, --count N the N sequences\n"
        "from there (fewer if the feed ends first); reading stops once they\n"
        "are made. --instrument ID keeps the messages whose instrument_id is\n"
        "ID (SystemEvent, which names none, is left out); --from and --count\n"
        "still count every sequence.\n\n"
        "Snapshots (DIR/snapshots) shorten the run: the newest that loads and\n"
        "whose next feed sequence is at most N is started from; the output is\n"
        "the same as from the journal's start. --no-snapshot reads the whole\n"
        "journal. A pruned journal gives the feed only from a snapshot that\n"
        "reaches its first index.\n\n"
        "Errors as 'replay': a journal that is not whole (a torn tail,\n"
        "corruption, records lost under the checkpoint) ends the output with\n"
        "an error naming the file, offset and last good index: exit status 1\n"
        "(the messages of the records before it are printed). --accept-loss\n"
        "prints every loss on standard error and exits 0. A record the state\n"
        "machine refuses is an error too. Usage errors: exit status 2.",
    .flags = {{"journal", "DIR", "", "journal directory (required)"},
              {"from", "N", "1", "first feed sequence printed"},
              {"count", "N", "", "feed sequences printed (default: all)"},
              {"instrument", "ID", "", "only the messages of this instrument"},
              {"config", "FILE", "",
               "configuration for segments that pin none"},
              {"no-snapshot", "", "",
               "read the whole journal, not from a snapshot"},
              {"accept-loss", "", "",
               "report lost records (DATA LOSS ACCEPTED) and exit 0"}},
};

// The instrument a message names, if its kind has an instrument_id.
std::optional<std::uint32_t> InstrumentOf(feed::MessageBlock block) {
  std::optional<std::uint32_t> instrument;
  feed::ForEachMessage([&](auto model) {
    using Model = typename decltype(model)::type;
    if constexpr (requires { &Model::instrument_id; }) {
      if (block.kind() != feed::MessageTraits<Model>::kKind) return;
      const auto view = feed::MessageView<Model>::FromBlock(block);
      if (view.ok()) instrument = view->template Get<&Model::instrument_id>();
    }
  });
  return instrument;
}

// What to print: feed sequences [from, end), of one instrument or all.
struct FeedRange {
  std::uint64_t from = 1;
  std::uint64_t end = std::numeric_limits<std::uint64_t>::max();
  std::optional<std::uint32_t> instrument;
};

absl::StatusOr<FeedRange> RangeFlags(const Args& args) {
  FeedRange range;
  absl::StatusOr<std::uint64_t> from =
      args.Uint("from", 1, std::numeric_limits<std::uint64_t>::max() - 1);
  if (!from.ok()) return from.status();
  range.from = *from;
  if (args.Has("count")) {
    absl::StatusOr<std::uint64_t> count =
        args.Uint("count", 1, std::numeric_limits<std::uint64_t>::max());
    if (!count.ok()) return count.status();
    range.end =
        *count > range.end - range.from ? range.end : range.from + *count;
  }
  if (args.Has("instrument")) {
    absl::StatusOr<std::uint64_t> id =
        args.Uint("instrument", 1, std::numeric_limits<std::uint32_t>::max());
    if (!id.ok()) return id.status();
    range.instrument = static_cast<std::uint32_t>(*id);
  }
  return range;
}

// Prints the feed messages of each record in `range`, buffered.
class FeedPrinter {
 public:
  explicit FeedPrinter(const FeedRange& range) : range_(range) {}

  // Appends the last record's messages; false once the range is done.
  absl::StatusOr<bool> Add(const state::StateMachine& machine) {
    for (const state::FeedMessage& m : machine.feed()) {
      if (m.sequence < range_.from) continue;
      if (m.sequence >= range_.end) return false;
      const feed::MessageBlock block(
          m.bytes.data(), static_cast<std::uint16_t>(m.bytes.size()));
      if (range_.instrument.has_value() &&
          InstrumentOf(block) != range_.instrument) {
        continue;
      }
      out_ += jsonl::FeedMessageToJson(m.sequence, block);
      out_.push_back('\n');
      ++printed_;
    }
    if (out_.size() >= (std::size_t{1} << 20)) {
      if (absl::Status s = Flush(); !s.ok()) return s;
    }
    return machine.feed_producer().next_sequence() < range_.end;
  }

  absl::Status Flush() {
    absl::Status s = WriteAll(stdout, out_);
    out_.clear();
    return s;
  }

  [[nodiscard]] std::uint64_t printed() const { return printed_; }

 private:
  FeedRange range_;
  std::string out_;
  std::uint64_t printed_ = 0;
};

absl::Status PrunedFeedError(const std::string& dir, std::uint64_t from,
                             std::uint64_t first) {
  return absl::FailedPreconditionError(absl::StrFormat(
      "journal %s starts at index %s: indexes 1..%s were pruned, and no "
      "snapshot that reaches index %s starts the feed at or before sequence "
      "%d (--from): the feed from there cannot be made (a snapshot's next "
      "feed sequence: 'orderwire snapshot inspect')",
      dir, journal::GroupedDigits(first), journal::GroupedDigits(first - 1),
      journal::GroupedDigits(first - 1), from));
}

absl::Status FromJournal(const Args& args) {
  if (absl::Status s = args.Require("journal"); !s.ok()) return s;
  absl::StatusOr<FeedRange> range = RangeFlags(args);
  if (!range.ok()) return range.status();
  absl::StatusOr<config::ServiceConfig> config = ServiceConfigFlag(args);
  if (!config.ok()) return config.status();
  const std::string dir = args.String("journal");
  const std::uint64_t from = range->from;
  FeedPrinter printer(*range);
  ReaderProgress progress("md from-journal");
  JournalApplication application(JournalApplyOptions{
      .command = "md from-journal",
      .directory = dir,
      .config = *std::move(config),
      .note_pinned = args.Has("config"),
      .accept_loss = args.Bool("accept-loss"),
      // From sequence 1 no snapshot can be used: none is loaded.
      .use_snapshots = !args.Bool("no-snapshot") && from > 1,
      .snapshot_usable =
          [from](const state::StateMachine& machine) {
            return machine.feed_producer().next_sequence() <= from;
          },
      .pruned_error =
          [&dir, from](std::uint64_t first) {
            return PrunedFeedError(dir, from, first);
          },
      .on_applied =
          [&](const journal::Record&, const state::StateMachine& machine,
              const journal::JournalReader& reader) {
            progress.Count(reader);
            return printer.Add(machine);
          }});
  const absl::StatusOr<bool> begun = application.Begin();
  if (!begun.ok() || !*begun) return begun.status();
  absl::Status applied = application.ApplyTail();
  progress.Finish();
  if (absl::Status s = printer.Flush(); !s.ok()) return s;
  if (!applied.ok()) return applied;
  if (absl::Status s = application.CheckSnapshotWithinJournal(); !s.ok()) {
    return s;
  }
  const state::RebuiltState& rebuilt = application.state();
  std::string summary = absl::StrFormat(
      "md from-journal: %d messages printed; %d records applied",
      printer.printed(), rebuilt.replayed);
  if (rebuilt.snapshot.has_value()) {
    absl::StrAppendFormat(&summary, " after snapshot %s (index %d)",
                          rebuilt.snapshot->path, rebuilt.snapshot->index);
  }
  absl::StrAppendFormat(
      &summary, "; the feed's next sequence %d%s\n",
      rebuilt.machine->feed_producer().next_sequence(),
      application.stopped() ? " (stopped: --count reached)" : "");
  if (absl::Status s = WriteAll(stderr, summary, "standard error"); !s.ok()) {
    return s;
  }
  return application.Finish();
}

const CommandSpec kMdSpec{
    .name = "md",
    .synopsis = "<command> [flags]",
    .summary = "The market-data feed: from-journal, watch, record, print.",
};

const Command kMdSubcommands[] = {{&kFromJournalSpec, FromJournal},
                                  {&kMdWatchSpec, MdWatch},
                                  {&kMdRecordSpec, MdRecord},
                                  {&kMdPrintSpec, MdPrint}};

}  // namespace

const Command kMdCommand{&kMdSpec, nullptr, kMdSubcommands};

}  // namespace orderwire::cli
