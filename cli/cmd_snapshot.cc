// `orderwire snapshot` and `orderwire snapshot inspect`: snapshots of a
// journal's state (state/snapshot.h, docs/SNAPSHOT.md) from the command
// line.
//
//   orderwire snapshot --journal /tmp/j [--at-index N]
//   orderwire snapshot inspect /tmp/j/snapshots/00000000000001000000.ows
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/progress.h"
#include "config/service_config.h"
#include "feed/session.h"
#include "journal/reader.h"
#include "state/pinned_config.h"
#include "state/rebuild.h"
#include "state/snapshot.h"
#include "state/state_machine.h"

namespace orderwire::cli {
namespace {

using Clock = std::chrono::steady_clock;

const CommandSpec kSnapshotSpec{
    .name = "snapshot",
    .synopsis = "--journal DIR [--at-index N] [--config FILE] [--no-snapshot]",
    .summary = "Write a snapshot of a journal's state at an index.",
    .details =
        "Replays the journal in DIR through the service's state machine, with\n"
        "the configuration each segment pins (--config FILE for segments that\n"
        "pin none, as 'replay' does), up to record N (--at-index; default:\n"
        "the journal's last record), and writes the state (engine, sessions,\n"
        "report histories, configuration, statistics) as\n"
        "DIR/snapshots/<N, 20 digits>.ows (docs/SNAPSHOT.md): written as\n"
        ".tmp, synced, renamed, the directory synced. The replay starts from\n"
        "the newest valid snapshot at or below N, if any (--no-snapshot: from\n"
        "the journal's start). Report histories are kept as 'serve' keeps\n"
        "them (serve's default number of reports per session and\n"
        "max_report_history_bytes of --config), so a service restarted from\n"
        "the snapshot can resend.\n\n"
        "Errors (exit 1): a journal with damage before N, or that ends before\n"
        "N, or whose durable records are gone (see 'replay'), writes nothing.",
    .flags = {{"journal", "DIR", "", "journal directory (required)"},
              {"at-index", "N", "", "last record included (default: the end)"},
              {"config", "FILE", "",
               "configuration for segments that pin none"},
              {"no-snapshot", "", "",
               "replay from the journal's start, not from a snapshot"}},
};

const CommandSpec kInspectSpec{
    .name = "inspect",
    .synopsis = "FILE",
    .summary = "Verify a snapshot file and show what it holds.",
    .details =
        "Reads the snapshot FILE in full and verifies it as a restart would\n"
        "(magic, version, sizes, every section's CRC32C and the whole file's,\n"
        "every count, range and cross-reference), then prints its header\n"
        "(journal id, index, creation time), its sections (offset, bytes,\n"
        "records, CRC32C), its configuration, its sessions and its books'\n"
        "totals. A damaged file is an error naming the file, the offset, the\n"
        "field and why (exit 1).",
    .flags = {},
    .positional = "FILE",
};

std::string FormatTime(std::uint64_t ns) {
  const auto seconds = static_cast<time_t>(ns / 1'000'000'000u);
  tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &utc);
  return absl::StrFormat("%s.%09dZ", text, ns % 1'000'000'000u);
}

absl::Status Print(std::FILE* file, const std::string& text) {
  return WriteAll(file, text,
                  file == stdout ? "standard output" : "standard error");
}

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

absl::Status Create(const Args& args) {
  if (absl::Status s = args.Require("journal"); !s.ok()) return s;
  const std::string dir = args.String("journal");
  std::uint64_t at_index = std::numeric_limits<std::uint64_t>::max();
  if (args.Has("at-index")) {
    absl::StatusOr<std::uint64_t> n =
        args.Uint("at-index", 1, std::numeric_limits<std::int64_t>::max());
    if (!n.ok()) return n.status();
    at_index = *n;
  }
  absl::StatusOr<config::ServiceConfig> loaded = ServiceConfigFlag(args);
  if (!loaded.ok()) return loaded.status();
  const config::ServiceConfig& config = *loaded;
  const auto start = Clock::now();
  ReaderProgress progress("snapshot");
  state::StateRebuild rebuild(state::RebuildOptions{
      .directory = dir,
      .use_snapshots = !args.Bool("no-snapshot"),
      .up_to_index = at_index,
      .machine_options = {.engine = config.engine,
                          .max_sessions = static_cast<std::uint32_t>(
                              config.max_sessions + config.sessions.size()),
                          .history_budget_bytes = static_cast<std::size_t>(
                              config.max_report_history_bytes)},
      .unpinned = state::PinnedConfigOf(config),
      .pruned_error =
          [&](std::uint64_t first) {
            return absl::FailedPreconditionError(absl::StrFormat(
                "snapshot: journal %s starts at index %d (indexes before it "
                "were pruned) and no valid snapshot reaches it: the state "
                "cannot be rebuilt",
                dir, first));
          },
      .on_applied =
          [&](const journal::Record&, const state::StateMachine&,
              const journal::JournalReader& reader) {
            progress.Count(reader);
            return absl::OkStatus();
          }});
  absl::Status begun = rebuild.Begin();
  state::RebuiltState& rebuilt = rebuild.state();
  for (const std::string& skipped : rebuilt.skipped) {
    std::fprintf(stderr, "snapshot: %s\n", skipped.c_str());
  }
  if (!begun.ok()) return begun;
  if (absl::Status s = rebuild.ApplyTail(); !s.ok()) return s;
  progress.Finish();
  const state::StateMachine& machine = *rebuilt.machine;
  const std::uint64_t applied = rebuilt.replayed;
  if (rebuilt.reader != nullptr) {
    const journal::JournalReader& reader = *rebuilt.reader;
    if (rebuilt.end == journal::ReadResult::kError ||
        (rebuilt.end == journal::ReadResult::kEnd && !reader.status().ok())) {
      return reader.status();
    }
    if (args.Has("at-index") && machine.last_index() < at_index) {
      return absl::OutOfRangeError(absl::StrFormat(
          "snapshot: the journal %s ends at index %d, before --at-index %d",
          dir, reader.last_index(), at_index));
    }
  }
  if (machine.last_index() == 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "snapshot: the journal %s holds no record: nothing to snapshot", dir));
  }
  if (rebuilt.journal_id == 0) {
    return absl::InternalError("snapshot: no journal segment was read");
  }
  const std::uint64_t journal_id = rebuilt.journal_id;
  const double replay_seconds = Seconds(Clock::now() - start);
  const auto write_start = Clock::now();
  absl::StatusOr<state::SnapshotInfo> info =
      state::WriteSnapshot(machine, journal_id, dir);
  if (!info.ok()) return info.status();
  const double write_seconds = Seconds(Clock::now() - write_start);
  std::string out = absl::StrFormat(
      "snapshot: wrote %s: index %d, %d sessions, %d live orders, %d bytes\n",
      info->path, info->index, info->sessions, info->live_orders,
      info->file_bytes);
  absl::StrAppendFormat(
      &out, "  %d records applied from %s in %.3f s; written in %.3f s\n",
      applied,
      rebuilt.snapshot.has_value()
          ? absl::StrFormat("snapshot %s (index %d)", rebuilt.snapshot->path,
                            rebuilt.snapshot->index)
          : std::string("the journal's start"),
      replay_seconds, write_seconds);
  return Print(stdout, out);
}

absl::Status Inspect(const Args& args) {
  if (args.positional().size() != 1) {
    return UsageError("give one snapshot file");
  }
  const std::string& path = args.positional()[0];
  absl::StatusOr<state::LoadedSnapshot> loaded = state::LoadSnapshot(path, 0);
  if (!loaded.ok()) return loaded.status();
  const state::SnapshotInfo& info = loaded->info;
  const state::StateMachine& machine = *loaded->machine;
  std::string out = absl::StrFormat(
      "snapshot %s: format version %d, %d bytes, whole-file CRC32C 0x%08x; "
      "every checksum and cross-reference verified\n",
      path, loaded->version, info.file_bytes, loaded->file_crc);
  absl::StrAppendFormat(&out,
                        "  journal_id %016x, index %d (last record included), "
                        "created %s\n",
                        info.journal_id, info.index,
                        FormatTime(info.created_ns));
  out += "  sections:\n";
  for (const state::SnapshotSection& s : loaded->sections) {
    absl::StrAppendFormat(&out,
                          "    %d %-8s offset %8d  bytes %10d  records %8d  "
                          "CRC32C 0x%08x\n",
                          s.kind, s.name, s.offset, s.bytes, s.count, s.crc);
  }
  const state::StateMachineOptions& options = machine.options();
  const std::string pinned =
      state::EncodePinnedConfig(state::PinnedConfigOf(machine));
  out += "  configuration:\n";
  for (std::string_view rest = pinned; !rest.empty();) {
    const std::size_t eol = rest.find('\n');
    absl::StrAppendFormat(&out, "    %s\n", rest.substr(0, eol));
    rest = eol == std::string_view::npos ? std::string_view{}
                                         : rest.substr(eol + 1);
  }
  absl::StrAppendFormat(&out,
                        "    report_history %d per session, budget %d bytes "
                        "(%d in use)\n",
                        options.report_history, options.history_budget_bytes,
                        machine.history_budget().used());
  absl::StrAppendFormat(&out, "  sessions: %d", machine.session_count());
  for (std::size_t i = 0; i < machine.session_count(); ++i) {
    const state::SessionState& s =
        machine.session(static_cast<std::uint32_t>(i));
    if (i == 16) {
      out += ", ...";
      break;
    }
    absl::StrAppendFormat(&out, "%s %d (%d commands, %d reports, %d held%s)",
                          i == 0 ? ":" : ",", s.id, s.next_expected - 1,
                          s.next_report - 1, s.history.held(),
                          s.closed ? ", closed" : "");
  }
  out += "\n";
  absl::StrAppendFormat(&out,
                        "  engine: %d live orders; next order id %d, next "
                        "match id %d\n",
                        machine.engine().live_orders(),
                        machine.engine().next_order_id().value(),
                        machine.engine().next_match_id());
  const state::FeedProducer& feed = machine.feed_producer();
  if (feed.next_sequence() == 1) {
    out += "  market-data feed: nothing made yet\n";
  } else {
    const state::FeedDirectory& d = feed.announced();
    absl::StrAppendFormat(&out,
                          "  market-data feed: next sequence %d; directory "
                          "announced: instruments %d-%d, prices %d-%d, "
                          "quantities %d-%d\n",
                          feed.next_sequence(), d.min_instrument,
                          d.max_instrument, d.min_price, d.max_price,
                          d.min_quantity, d.max_quantity);
  }
  if (feed.session_start() != 0) {
    absl::StrAppendFormat(
        &out,
        "  market-data feed session: began at record %d "
        "(after an accepted loss), id %016x\n",
        feed.session_start(),
        feed::FeedSession(info.journal_id, feed.session_start()));
  }
  absl::StrAppendFormat(&out,
                        "  statistics: %d records applied, %d "
                        "unauthorized\n",
                        machine.stats().records, machine.stats().unauthorized);
  return Print(stdout, out);
}

const Command kSnapshotSubcommands[] = {{&kInspectSpec, Inspect}};

}  // namespace

const Command kSnapshotCommand{&kSnapshotSpec, Create, kSnapshotSubcommands};

}  // namespace orderwire::cli
