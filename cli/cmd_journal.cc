// `orderwire journal write`, `journal inspect`, `journal follow` and `orderwire
// replay`: the journal from the command line.
//
//   orderwire gen --workload mixed --count 1000000 |
//       orderwire journal write --journal /tmp/j
//   orderwire journal inspect /tmp/j [--records]
//   orderwire replay --journal /tmp/j --verify
//   orderwire replay --journal /tmp/j --reports reports.bin
//   orderwire replay --journal /tmp/j --reports-dir per-session/
//
// Replay applies every record through state::StateMachine, the function
// the live service and its restart use, so each session's reports are what
// the service sent it, numbered on the session; for a journal of one
// session (e.g. written from `orderwire gen`) they are byte for byte those
// of `orderwire gen | orderwire match`.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "cli/book_text.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/journal_apply.h"
#include "cli/progress.h"
#include "codec/command.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "config/service_config.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "engine/report.h"
#include "journal/follower.h"
#include "journal/prune.h"
#include "journal/reader.h"
#include "journal/start.h"
#include "journal/writer.h"
#include "jsonl/jsonl.h"
#include "state/pinned_config.h"
#include "state/rebuild.h"
#include "state/snapshot.h"
#include "state/state_machine.h"

namespace orderwire::cli {
namespace {

using Clock = std::chrono::steady_clock;

const CommandSpec kWriteSpec{
    .name = "write",
    .synopsis =
        "--journal DIR [--durability MODE] [--segment-size BYTES] "
        "[--session ID] < commands.bin",
    .summary = "Append command frames from standard input to a journal.",
    .details =
        "Reads command frames back to back from standard input and appends\n"
        "them, verbatim, to the journal in DIR (created if missing) as one\n"
        "session, each stamped with the CLOCK_REALTIME time it was read.\n"
        "The whole input is checked first: a partial frame or a non-command\n"
        "kind is an error naming its byte offset, and nothing is appended.\n"
        "Opening the journal recovers it: a torn tail left by a crash is\n"
        "reported and cut off; damage to durable data is refused.\n\n"
        "Durability: none (no sync), batch (group commit, each group synced\n"
        "before it counts; the default) or sync (each append synced before\n"
        "the next). Prints the records/s and the durable index at the end.",
    .flags = {{"journal", "DIR", "", "journal directory (required)"},
              {"durability", "MODE", "batch", "none, batch or sync"},
              {"segment-size", "BYTES", "67108864", "bytes per segment file"},
              {"session", "ID", "1", "session id recorded with every frame"},
              {"accept-loss", "", "",
               "recover a journal that lost durable records by keeping its "
               "whole prefix (logged)"}},
};

const CommandSpec kInspectSpec{
    .name = "inspect",
    .synopsis = "DIR [--records] [--from-index N | --from-time T]",
    .summary = "Show a journal's segments, or every record as JSON Lines.",
    .details =
        "Reads the journal in DIR, checking every checksum, and prints each\n"
        "segment: file, header fields, groups, records and index range. With\n"
        "--records it prints instead one JSON object per record on standard\n"
        "output (the summary goes to standard error):\n"
        "  {\"index\":1,\"receive_ns\":...,\"session_id\":1,\"flags\":0,"
        "\"frame\":{...}}\n"
        "where \"frame\" is the form 'orderwire decode' prints. Damage (a\n"
        "torn tail, corruption) is reported with the file, the offset and the\n"
        "last good index, after what could be read, and the exit status is "
        "1.\n\n"
        "--from-index N starts at index N, --from-time T at the first record\n"
        "received at or after T (RFC 3339, e.g. 2026-12-01T13:00:00.5Z, or\n"
        "nanoseconds since the epoch): the reader finds it by binary search\n"
        "(docs/JOURNAL.md \"Seek\") without reading what comes before, so\n"
        "damage before it is not reported; the segments shown are those read.\n"
        "An index past the end prints no record; an index before the\n"
        "journal's first (a pruned journal) is an error naming both.",
    .flags = {{"records", "", "", "print every record as JSON Lines"},
              {"from-index", "N", "", "start at index N"},
              {"from-time", "T", "",
               "start at the first record received at or after T"}},
    .positional = "DIR",
};

const CommandSpec kPruneSpec{
    .name = "prune",
    .synopsis = "--journal DIR --before-index N [--archive DIR]",
    .summary = "Remove (or archive) the journal's segments before an index.",
    .details =
        "Removes every whole segment of the journal in DIR all of whose\n"
        "records have an index below N, or with --archive moves them into\n"
        "the archive directory (created if missing; a rename on the same\n"
        "file system, else a copy that is synced before the original goes).\n"
        "Never the last segment (the one being appended to), never the one\n"
        "holding the journal's last record, never one holding an index >= N.\n"
        "The journal's new first index is recorded first, durably, in its\n"
        "start record (DIR/START): a crash at any point leaves a journal that\n"
        "opens, and a segment that goes missing without a prune is still\n"
        "data loss. Snapshot files (DIR/snapshots/NNN.ows) older than what\n"
        "remains (index + 1 below the new first index) are removed: no\n"
        "restart can use them. Pruning relies on no snapshot; afterwards it\n"
        "names each snapshot file that does not verify (as a restart loads\n"
        "it) and notes when none that does reaches the new first index\n"
        "('serve' and 'replay' then refuse the journal).\n\n"
        "It takes the journal's writer lock: while 'orderwire serve' (or\n"
        "'journal write') has the journal open, it refuses. Opening the\n"
        "journal recovers it first, as 'journal write' does. Prints what it\n"
        "did. A pruned journal is replayed from a snapshot; reading an index\n"
        "below the first fails with \"index 5 was pruned; the journal starts\n"
        "at 1,000,001\".",
    .flags = {{"journal", "DIR", "", "journal directory (required)"},
              {"before-index", "N", "",
               "remove segments whose records are all below N (required)"},
              {"archive", "DIR", "", "move the segments here instead"}},
};

const CommandSpec kFollowSpec{
    .name = "follow",
    .synopsis = "--journal DIR [--from-index N] [--jsonl]",
    .summary =
        "Print a journal's records as a running writer makes them "
        "durable.",
    .details =
        "Reads the journal in DIR from its start (or index N), then waits\n"
        "for new records and prints each one as soon as the writer "
        "('orderwire\n"
        "serve', 'journal write') has made it durable, as JSON Lines like\n"
        "'journal inspect --records' (--jsonl says so explicitly; it is the\n"
        "only format). Only durable records: the writer publishes its "
        "durable\n"
        "index in the file DURABLE, and nothing past it is read, so no torn\n"
        "or in-flight group is ever printed. It follows segment rollover, "
        "and\n"
        "segments pruned behind it. It polls every millisecond while idle.\n"
        "Damage (corruption, a missing segment, an index that was pruned\n"
        "before it was read) is reported with the file, offset and last "
        "good\n"
        "index: exit status 1. SIGINT or SIGTERM stops it: exit status 0.",
    .flags = {{"journal", "DIR", "", "journal directory (required)"},
              {"from-index", "N", "", "start at index N"},
              {"jsonl", "", "", "JSON Lines (the default and only format)"}},
};

const CommandSpec kReplaySpec{
    .name = "replay",
    .synopsis =
        "--journal DIR [--verify] [--reports FILE] [--reports-dir DIR] "
        "[--json] [--book N] [--config FILE] [--no-snapshot] [--accept-loss] "
        "[--from-index N]",
    .summary =
        "Replay a journal through the service's state machine, or "
        "verify it.",
    .details =
        "Reads every segment of the journal in DIR in order, checking every\n"
        "checksum and the continuity of the indexes, and applies each "
        "record\n"
        "through the same StateMachine as 'orderwire serve', with the\n"
        "configuration the journal pins: each segment's (engine limits and\n"
        "max_sessions) from its first record, as the service applied them.\n"
        "--config FILE (the file 'serve --config' reads; its session lists "
        "do\n"
        "not matter here: each record carries the decision taken when it "
        "was\n"
        "received) applies only to segments that pin none (journals written\n"
        "before the configuration was pinned, and 'journal write'); where "
        "it\n"
        "differs from a pinned one, a note on standard error names the\n"
        "differences and the journal's own is used. So every session's\n"
        "reports are reproduced exactly as the service sent them, numbered "
        "on\n"
        "their session. Prints the records, the commands and reports by "
        "kind,\n"
        "the sessions, the final index and the records/s.\n\n"
        "--reports FILE writes every report frame in emission order (for "
        "one\n"
        "session: its reports; FILE '-' is standard output, and the summary\n"
        "then goes to standard error). --reports-dir DIR writes one file "
        "per\n"
        "session, DIR/session-<id>.bin, holding the report frames that\n"
        "session received, byte for byte (DIR is created if missing).\n"
        "--json writes JSON Lines instead of frames. --book N prints the "
        "top\n"
        "N levels of every non-empty book to standard error at the end.\n\n"
        "Snapshots: when DIR/snapshots holds snapshots of this journal\n"
        "('orderwire snapshot', 'serve --snapshot-every'), the replay "
        "starts\n"
        "from the newest one that loads (every checksum and cross-reference\n"
        "verified) and applies only the records after it; a damaged or\n"
        "foreign snapshot is named on standard error and the previous one\n"
        "(or the journal's start) is used. The reports written are then\n"
        "those of the records after the snapshot only (the same bytes, with\n"
        "the same session sequences, as the full replay gives for them), "
        "and\n"
        "the counts printed are the tail's (the statistics are the whole\n"
        "journal's). --no-snapshot replays the whole journal from its "
        "start.\n\n"
        "--verify checks the journal without the engine (and that every\n"
        "configuration it pins can be read) and prints the records by kind,\n"
        "the final index and the records/s.\n\n"
        "A journal that is not whole (a torn tail, corruption) ends the\n"
        "replay with an error naming the file, offset and last good index:\n"
        "exit status 1, never a summary that looks complete. So does a "
        "record\n"
        "the state machine refuses (unknown flags, a sequence out of "
        "order).\n"
        "The journal's end is held against its checkpoint: records it says\n"
        "were durable that are gone (a truncated or deleted segment), a\n"
        "segment file shorter than its capacity or a journal rewritten "
        "under\n"
        "the checkpoint is data loss naming the indexes and files (exit 1).\n"
        "--accept-loss reads what is there instead, prints every loss on\n"
        "standard error and exits 0.\n"
        "A pruned journal (see 'orderwire journal prune') cannot be "
        "replayed\n"
        "through the engine from its first index alone: replay refuses it,\n"
        "naming the first index; --verify checks what is left.\n\n"
        "Progress (records, rate, ETA) is shown on standard error when it "
        "is\n"
        "a terminal, and nothing when it is not.\n\n"
        "--from-index N (with --verify) checks the records from index N on,\n"
        "found by binary search without reading what comes before (damage\n"
        "there is not reported). Applying the engine from the middle of a\n"
        "journal needs the state before index N (a snapshot): without one\n"
        "replay --from-index refuses to run the engine and says so.",
    .flags = {{"journal", "DIR", "", "journal directory (required)"},
              {"verify", "", "", "check only, without the engine"},
              {"reports", "FILE", "", "write every report frame to FILE"},
              {"reports-dir", "DIR", "",
               "write each session's reports to DIR/session-<id>.bin"},
              {"json", "", "", "with --reports/--reports-dir: JSON Lines"},
              {"book", "N", "0", "depth table of every book (stderr)"},
              {"config", "FILE", "",
               "configuration for segments that pin none"},
              {"no-snapshot", "", "",
               "replay the whole journal, not from its newest snapshot"},
              {"accept-loss", "", "",
               "report lost records (DATA LOSS ACCEPTED) and exit 0"},
              {"from-index", "N", "", "with --verify: start at index N"}},
};

using base::RealtimeNs;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::string Rate(double count, double seconds) {
  if (seconds <= 0) return "-";
  const double rate = count / seconds;
  if (rate >= 1e6) return absl::StrFormat("%.2fM", rate / 1e6);
  if (rate >= 1e3) return absl::StrFormat("%.1fk", rate / 1e3);
  return absl::StrFormat("%.0f", rate);
}

std::string FormatTime(std::uint64_t ns) {
  const auto seconds = static_cast<time_t>(ns / 1'000'000'000u);
  tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &utc);
  return absl::StrFormat("%s.%09dZ", text, ns % 1'000'000'000u);
}

// --from-index N and --from-time T as reader options (neither: the
// journal's start). T is nanoseconds since the epoch or an RFC 3339 time.
absl::StatusOr<journal::ReaderOptions> SeekFlags(const Args& args) {
  journal::ReaderOptions options;
  if (args.Has("from-index") && args.Has("from-time")) {
    return UsageError("give --from-index or --from-time, not both");
  }
  if (args.Has("from-index")) {
    absl::StatusOr<std::uint64_t> index = args.Uint(
        "from-index", 1, std::numeric_limits<std::uint64_t>::max() - 1);
    if (!index.ok()) return index.status();
    options.from_index = *index;
  }
  if (args.Has("from-time")) {
    const std::string text = args.String("from-time");
    std::uint64_t ns = 0;
    if (!text.empty() && absl::SimpleAtoi(text, &ns)) {
      options.from_time_ns = ns;
    } else {
      absl::Time time;
      std::string error;
      if (!absl::ParseTime(absl::RFC3339_full, text, &time, &error) ||
          time < absl::UnixEpoch()) {
        return UsageError(absl::StrFormat(
            "--from-time '%s' is neither nanoseconds since the epoch nor an "
            "RFC 3339 time after 1970 (like 2026-12-01T13:00:00.5Z)%s%s",
            text, error.empty() ? "" : ": ", error));
      }
      options.from_time_ns =
          static_cast<std::uint64_t>(absl::ToUnixNanos(time));
    }
  }
  return options;
}

// The counts of each kind, as "NewLimit 5, CancelByOrder 2".
std::string ByKind(const std::array<std::uint64_t, 256>& counts) {
  std::string out;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    if (counts[k] == 0) continue;
    absl::StrAppendFormat(&out, "%s%s %d", out.empty() ? "" : ", ",
                          codec::kKindTable[k].name, counts[k]);
  }
  return out.empty() ? "none" : out;
}

absl::Status Print(std::FILE* file, const std::string& text) {
  return WriteAll(file, text,
                  file == stdout ? "standard output" : "standard error");
}

absl::StatusOr<journal::Durability> DurabilityFlag(const Args& args) {
  absl::StatusOr<journal::Durability> d =
      journal::ParseDurability(args.String("durability"));
  if (!d.ok()) return FlagError("durability", d.status());
  return d;
}

std::string RecoveryText(const journal::RecoveryReport& report) {
  std::string out = absl::StrFormat(
      "journal: torn tail cut off: segment %s, offset %d, last good index "
      "%d; %d non-zero bytes discarded",
      report.torn_segment, report.torn_offset, report.last_index,
      report.discarded_bytes);
  for (const std::string& file : report.removed_files) {
    absl::StrAppendFormat(&out, "; removed %s", file);
  }
  absl::StrAppendFormat(&out, "\njournal: %s\n", report.message);
  return out;
}

// What recovery says about the checkpoint and about a loss accepted.
std::string CheckpointText(const journal::RecoveryReport& report) {
  std::string out;
  if (report.loss_accepted) {
    absl::StrAppendFormat(&out,
                          "journal: DATA LOSS ACCEPTED (--accept-loss): %s\n",
                          report.loss_message);
  }
  if (report.checkpoint_missing) {
    out +=
        "journal: no checkpoint (a journal written before checkpoints): its "
        "end could not be checked this time; one is kept from now on\n";
  }
  return out;
}

// ---------------------------------------------------------------------------
// journal write

// The size of each frame of `bytes`, every one a whole command frame;
// otherwise the error names the first that is not, by its byte offset.
absl::StatusOr<std::vector<std::uint32_t>> CommandFrameSizes(
    std::span<const std::byte> bytes) {
  std::vector<std::uint32_t> sizes;
  sizes.reserve(bytes.size() / 25 + 1);
  for (std::size_t offset = 0; offset < bytes.size();) {
    const auto frame = codec::FrameView::Parse(bytes.subspan(offset));
    if (!frame.ok()) {
      return FrameError(0, offset, frame.error(), bytes.subspan(offset));
    }
    if (!frame->is_command()) {
      return InputError(0, offset,
                        absl::StrFormat("%s is not a command frame (only "
                                        "commands are journaled)",
                                        frame->info().name));
    }
    sizes.push_back(static_cast<std::uint32_t>(frame->size()));
    offset += frame->size();
  }
  return sizes;
}

// Appends the frames of `bytes` (their sizes in `sizes`) as records of
// `session`, in appends of up to 32 KiB of records (many per group under
// batch), waiting while the writer is full.
absl::Status AppendFrames(journal::JournalWriter& writer,
                          std::span<const std::byte> bytes,
                          std::span<const std::uint32_t> sizes,
                          std::uint32_t session) {
  const std::size_t chunk_limit =
      std::min<std::size_t>(writer.max_append_bytes(), std::size_t{32} * 1024);
  std::size_t offset = 0;
  std::size_t frame = 0;
  Progress progress("journal write", sizes.size());
  while (frame < sizes.size()) {
    progress.Update(frame, frame);
    std::size_t length = 0;
    std::size_t records = 0;
    while (frame + records < sizes.size() &&
           length + sizes[frame + records] + journal::kRecordHeaderSize <=
               chunk_limit) {
      length += sizes[frame + records] + journal::kRecordHeaderSize;
      ++records;
    }
    const std::size_t frame_bytes =
        length - records * journal::kRecordHeaderSize;
    const auto span = bytes.subspan(offset, frame_bytes);
    journal::AppendStatus st;
    while ((st = writer.Append(span, session, RealtimeNs())) ==
           journal::AppendStatus::kFull) {
      if (absl::Status s = writer.Wait(); !s.ok()) return s;
    }
    if (st == journal::AppendStatus::kJournalFull) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "append at byte offset %d: the journal is full: need %d bytes free "
          "in its directory (%s); nothing after index %d was appended",
          offset, writer.space_needed(), writer.space_reason(),
          writer.last_index()));
    }
    if (st != journal::AppendStatus::kOk) {
      if (writer.failed()) return writer.status();
      return absl::InternalError(absl::StrFormat("append at byte offset %d: %s",
                                                 offset, journal::Name(st)));
    }
    writer.Poll();
    offset += frame_bytes;
    frame += records;
  }
  progress.Finish();
  return absl::OkStatus();
}

// What `journal write` did: `count` records from index `first`, `bytes`
// bytes of frames in `seconds`, and the writer's groups and latencies.
std::string WriteSummary(const journal::JournalWriter& writer,
                         journal::Durability durability, std::uint64_t count,
                         std::uint64_t first, std::size_t bytes,
                         double seconds) {
  const auto& latency = writer.durable_latency();
  std::string out = absl::StrFormat("journal write: %d records", count);
  if (count > 0) {
    absl::StrAppendFormat(&out, " (indexes %d..%d)", first,
                          writer.last_index());
  }
  absl::StrAppendFormat(
      &out,
      " in %.3f s: %s records/s, %.1f MB/s of frames; durable up to index %d "
      "(%s)\n",
      seconds, Rate(static_cast<double>(count), seconds),
      seconds > 0 ? static_cast<double>(bytes) / seconds / 1e6 : 0.0,
      writer.durable_index(), journal::Name(durability));
  absl::StrAppendFormat(&out,
                        "journal write: %d groups, %d bytes written; submit "
                        "to durable p50 %.1f "
                        "us, p99 %.1f us, max %.1f us\n",
                        writer.stats().groups, writer.stats().bytes_written,
                        static_cast<double>(latency.Percentile(0.5)) / 1e3,
                        static_cast<double>(latency.Percentile(0.99)) / 1e3,
                        static_cast<double>(latency.max()) / 1e3);
  return out;
}

absl::Status Write(const Args& args) {
  if (absl::Status s = args.Require("journal"); !s.ok()) return s;
  absl::StatusOr<journal::Durability> durability = DurabilityFlag(args);
  if (!durability.ok()) return durability.status();
  absl::StatusOr<std::uint64_t> segment_size =
      args.Uint("segment-size", journal::kMinSegmentCapacity,
                journal::kMaxSegmentCapacity);
  if (!segment_size.ok()) return segment_size.status();
  absl::StatusOr<std::uint64_t> session = args.Uint("session", UINT32_MAX);
  if (!session.ok()) return session.status();

  // The whole input, checked before anything is appended.
  absl::StatusOr<std::vector<std::byte>> input = ReadAll(stdin);
  if (!input.ok()) return input.status();
  const std::span<const std::byte> bytes(*input);
  absl::StatusOr<std::vector<std::uint32_t>> sizes = CommandFrameSizes(bytes);
  if (!sizes.ok()) return sizes.status();

  journal::WriterOptions options;
  options.directory = args.String("journal");
  options.durability = *durability;
  options.segment_size = *segment_size;
  options.accept_loss = args.Bool("accept-loss");
  absl::StatusOr<std::unique_ptr<journal::JournalWriter>> opened =
      journal::JournalWriter::Open(options);
  if (!opened.ok()) return WithAcceptLossHint(opened.status());
  journal::JournalWriter& writer = **opened;
  std::string head = absl::StrFormat(
      "journal: %s, durability %s, I/O: %s\n", options.directory,
      journal::Name(*durability), writer.io_description());
  if (writer.recovery().torn_tail && !writer.recovery().loss_accepted) {
    head += RecoveryText(writer.recovery());
  }
  head += CheckpointText(writer.recovery());
  if (absl::Status s = Print(stderr, head); !s.ok()) return s;

  const std::uint64_t first = writer.last_index() + 1;
  const auto start = Clock::now();
  if (absl::Status s = AppendFrames(writer, bytes, *sizes,
                                    static_cast<std::uint32_t>(*session));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = writer.Close(); !s.ok()) return s;
  const double seconds = Seconds(Clock::now() - start);
  return Print(stdout, WriteSummary(writer, *durability, sizes->size(), first,
                                    bytes.size(), seconds));
}

// ---------------------------------------------------------------------------
// journal inspect

std::string SegmentText(const journal::SegmentInfo& s) {
  const journal::SegmentHeader& h = s.header;
  std::string out = absl::StrFormat(
      "segment %s\n  format version %d, journal id %016x, created %s\n"
      "  capacity %d bytes, %d used (to offset %d)\n"
      "  %d groups, %d records",
      s.path, h.version, h.journal_id, FormatTime(h.created_ns), h.capacity,
      s.data_end, s.data_end, s.groups, s.records);
  if (s.records > 0) {
    absl::StrAppendFormat(&out, ", indexes %d..%d", h.first_index,
                          s.last_index);
  } else {
    absl::StrAppendFormat(&out, " (first index %d)", h.first_index);
  }
  out += "\n";
  // The metadata: the service's pinned configuration, shown as its text.
  if (s.metadata.empty()) {
    out += "  metadata: none (pins no configuration)\n";
  } else {
    absl::StrAppendFormat(&out, "  metadata: %d bytes, CRC32C 0x%08x\n",
                          s.metadata.size(), h.metadata_crc);
    absl::StatusOr<state::PinnedConfig> pinned =
        state::DecodePinnedConfig(s.metadata);
    if (pinned.ok()) {
      for (std::string_view rest = s.metadata; !rest.empty();) {
        const std::size_t eol = rest.find('\n');
        absl::StrAppendFormat(&out, "    %s\n", rest.substr(0, eol));
        rest = eol == std::string_view::npos ? std::string_view{}
                                             : rest.substr(eol + 1);
      }
    } else {
      absl::StrAppendFormat(&out, "    (not a configuration: %s)\n",
                            pinned.status().message());
    }
  }
  return out;
}

// The journal's first available index and, if it was pruned, the pruned
// range and any segment files an interrupted prune left.
std::string StartText(const journal::JournalReader& reader) {
  std::string out;
  if (!reader.journal_start().has_value()) {
    return "first available index 1 (never pruned)\n";
  }
  const journal::JournalStart& start = *reader.journal_start();
  absl::StrAppendFormat(&out,
                        "first available index %d: indexes 1..%d were pruned "
                        "(start record written %s)\n",
                        start.first_index, start.first_index - 1,
                        FormatTime(start.written_ns));
  for (const std::string& path : reader.pruned_leftovers()) {
    absl::StrAppendFormat(&out,
                          "  %s: pruned, not removed yet (an interrupted "
                          "prune; the next prune removes it), not read\n",
                          path);
  }
  return out;
}

absl::Status Inspect(const Args& args) {
  if (args.positional().size() != 1) {
    return UsageError("give one journal directory");
  }
  const bool records = args.Bool("records");
  absl::StatusOr<journal::ReaderOptions> options = SeekFlags(args);
  if (!options.ok()) return options.status();
  const bool seek =
      options->from_index != 0 || options->from_time_ns.has_value();
  absl::StatusOr<std::unique_ptr<journal::JournalReader>> opened =
      journal::JournalReader::Open(args.positional()[0], *options);
  if (!opened.ok()) return opened.status();
  journal::JournalReader& reader = **opened;
  journal::Record r;
  journal::ReadResult result;
  std::string out;
  std::uint64_t count = 0;
  std::uint64_t first = 0;
  while ((result = reader.Next(r)) == journal::ReadResult::kRecord) {
    if (count++ == 0) first = r.index;
    if (!records) continue;
    absl::StrAppendFormat(
        &out,
        "{\"index\":%d,\"receive_ns\":%d,\"session_id\":%d,\"flags\":%d,"
        "\"frame\":%s}\n",
        r.index, r.receive_ns, r.session_id, r.flags,
        jsonl::FrameToJson(r.frame));
    if (out.size() >= (1u << 20)) {
      if (absl::Status s = Print(stdout, out); !s.ok()) return s;
      out.clear();
    }
  }
  if (records) {
    if (absl::Status s = Print(stdout, out); !s.ok()) return s;
    out.clear();
  }
  for (const journal::SegmentInfo& s : reader.segments()) out += SegmentText(s);
  out += StartText(reader);
  absl::StrAppendFormat(&out, "journal %s: %d segment file%s, %d records",
                        args.positional()[0], reader.segment_count(),
                        reader.segment_count() == 1 ? "" : "s", count);
  if (seek) {
    absl::StrAppendFormat(
        &out, " from %s",
        options->from_time_ns.has_value()
            ? absl::StrFormat("the first received at or after %s",
                              FormatTime(*options->from_time_ns))
            : absl::StrFormat("index %d", options->from_index));
    absl::StrAppendFormat(&out, " (%d segment%s read)",
                          reader.segments().size(),
                          reader.segments().size() == 1 ? "" : "s");
  }
  if (count > 0) {
    absl::StrAppendFormat(&out, ", indexes %d..%d", first, reader.last_index());
  } else if (seek && result == journal::ReadResult::kEnd) {
    absl::StrAppendFormat(&out, ", none: the journal ends at index %d",
                          reader.last_index());
  }
  out += result == journal::ReadResult::kEnd ? ", ends cleanly\n"
                                             : ", NOT whole (see below)\n";
  if (absl::Status s = Print(records ? stderr : stdout, out); !s.ok()) return s;
  return reader.status();
}

// ---------------------------------------------------------------------------
// journal prune

// The journal in `dir`, for pruning: it must be there (opening a writer
// would create one); a writer that appends nothing (no durability, nothing
// prepared ahead) holds the writer's lock and recovers it.
absl::StatusOr<std::unique_ptr<journal::JournalWriter>> OpenToPrune(
    const std::string& dir) {
  if (absl::StatusOr<std::vector<journal::SegmentSummary>> segments =
          journal::ListSegmentSummaries(dir);
      !segments.ok()) {
    return segments.status();
  }
  journal::WriterOptions options;
  options.directory = dir;
  options.durability = journal::Durability::kNone;
  options.prezero = false;
  absl::StatusOr<std::unique_ptr<journal::JournalWriter>> opened =
      journal::JournalWriter::Open(options);
  if (!opened.ok()) {
    if (opened.status().code() == absl::StatusCode::kUnavailable) {
      return absl::UnavailableError(absl::StrFormat(
          "cannot prune while another process appends to the journal (stop "
          "'orderwire serve' first, or let 'serve --retain' prune it): %s",
          opened.status().message()));
    }
    return WithAcceptLossHint(opened.status());
  }
  return opened;
}

// The segments a prune removed or archived (every one when there are few;
// else the first and last five), or that there was nothing to prune.
std::string PrunedSegmentsText(const journal::PruneReport& report,
                               const std::string& dir, std::uint64_t before,
                               bool archived) {
  std::string out;
  if (report.segments.empty()) {
    absl::StrAppendFormat(&out,
                          "journal prune: %s: nothing to prune before index "
                          "%d; the journal starts at index %d (%s)\n",
                          dir, before, report.first_index_after,
                          report.stopped_because);
    return out;
  }
  std::uint64_t bytes = 0;
  const std::size_t n = report.segments.size();
  for (std::size_t i = 0; i < n; ++i) {
    const journal::PrunedSegment& segment = report.segments[i];
    bytes += segment.bytes;
    if (n > 12 && i >= 5 && i + 5 < n) {
      if (i == 5) {
        absl::StrAppendFormat(&out, "journal prune: ... %d more ...\n", n - 10);
      }
      continue;
    }
    absl::StrAppendFormat(
        &out, "journal prune: %s %s (indexes %d..%d, %d bytes)%s\n",
        segment.archived_to.empty() ? "removed" : "archived", segment.path,
        segment.first_index, segment.last_index, segment.bytes,
        segment.archived_to.empty()
            ? ""
            : absl::StrFormat(" to %s", segment.archived_to));
  }
  absl::StrAppendFormat(
      &out,
      "journal prune: %s: %d segment%s (%d bytes) %s; the journal now "
      "starts at index %d (it started at %d); kept from there because %s\n",
      dir, report.segments.size(), report.segments.size() == 1 ? "" : "s",
      bytes, archived ? "archived" : "removed", report.first_index_after,
      report.first_index_before, report.stopped_because);
  return out;
}

// What a restart of a journal that now starts at `first_index` can start
// from: a snapshot that verifies (as a restart loads it) and reaches it.
// Pruning relies on none; the operator is told when there is none, and
// which files do not verify.
std::string RestartAfterPruneText(const std::string& dir,
                                  std::uint64_t journal_id,
                                  std::uint64_t first_index) {
  std::string out;
  std::vector<std::string> damaged;
  absl::StatusOr<std::optional<state::LoadedSnapshot>> newest =
      state::LoadNewestSnapshot(
          dir, journal_id, std::numeric_limits<std::uint64_t>::max(), &damaged);
  for (std::string& line : damaged) {
    constexpr std::string_view kFallback = "; using the previous one";
    if (line.ends_with(kFallback)) line.resize(line.size() - kFallback.size());
    absl::StrAppendFormat(&out, "journal prune: %s: no restart can use it\n",
                          line);
  }
  if (!newest.ok() || !newest->has_value() ||
      (*newest)->info.index + 1 < first_index) {
    absl::StrAppendFormat(
        &out,
        "journal prune: note: no snapshot that verifies reaches index %d "
        "(the journal's start): 'serve' and 'replay' refuse this journal "
        "until one does ('replay --verify' reads what is left)\n",
        first_index);
  }
  return out;
}

absl::Status Prune(const Args& args) {
  if (absl::Status s = args.Require("journal"); !s.ok()) return s;
  if (absl::Status s = args.Require("before-index"); !s.ok()) return s;
  absl::StatusOr<std::uint64_t> before =
      args.Uint("before-index", 1, UINT64_MAX);
  if (!before.ok()) return before.status();
  const std::string dir = args.String("journal");
  absl::StatusOr<std::unique_ptr<journal::JournalWriter>> opened =
      OpenToPrune(dir);
  if (!opened.ok()) return opened.status();
  journal::JournalWriter& writer = **opened;
  std::string head;
  if (writer.recovery().torn_tail) head += RecoveryText(writer.recovery());
  head += CheckpointText(writer.recovery());
  if (absl::Status s = Print(stderr, head); !s.ok()) return s;

  Progress progress("journal prune", 0);
  absl::StatusOr<journal::PruneReport> pruned =
      journal::PruneJournal({.directory = dir,
                             .before_index = *before,
                             .archive = args.String("archive"),
                             .on_progress = [&](std::size_t done, std::size_t,
                                                std::uint64_t records) {
                               progress.Update(records, done);
                             }});
  progress.Finish();
  absl::Status closed = writer.Close();
  if (!pruned.ok()) return pruned.status();
  if (!closed.ok()) return closed;

  const journal::PruneReport& report = *pruned;
  std::string out =
      PrunedSegmentsText(report, dir, *before, args.Has("archive"));
  for (const std::string& snapshot : report.snapshots_removed) {
    absl::StrAppendFormat(&out,
                          "journal prune: removed snapshot %s (the journal no "
                          "longer holds the records after it)\n",
                          snapshot);
  }
  if (report.first_index_after > 1) {
    out += RestartAfterPruneText(dir, writer.journal_id(),
                                 report.first_index_after);
  }
  return Print(stdout, out);
}

// ---------------------------------------------------------------------------
// journal follow

std::atomic<bool> g_follow_stop{false};

void OnFollowSignal(int) { g_follow_stop.store(true); }

absl::Status Follow(const Args& args) {
  if (absl::Status s = args.Require("journal"); !s.ok()) return s;
  journal::FollowerOptions options;
  if (args.Has("from-index")) {
    absl::StatusOr<journal::ReaderOptions> seek = SeekFlags(args);
    if (!seek.ok()) return seek.status();
    options.from_index = seek->from_index;
  }
  absl::StatusOr<std::unique_ptr<journal::JournalFollower>> opened =
      journal::JournalFollower::Open(args.String("journal"), options);
  if (!opened.ok()) return opened.status();
  struct sigaction action {};
  action.sa_handler = OnFollowSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
  std::string out;
  while (!g_follow_stop.load()) {
    out.clear();
    absl::StatusOr<std::size_t> got = (*opened)->Poll(
        [&](const journal::Record& r) {
          absl::StrAppendFormat(
              &out,
              "{\"index\":%d,\"receive_ns\":%d,\"session_id\":%d,"
              "\"flags\":%d,\"frame\":%s}\n",
              r.index, r.receive_ns, r.session_id, r.flags,
              jsonl::FrameToJson(r.frame));
        },
        4096);
    if (!out.empty()) {
      if (absl::Status s = Print(stdout, out); !s.ok()) return s;
      std::fflush(stdout);
    }
    if (!got.ok()) return got.status();
    if (*got == 0) ::usleep(1000);
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// replay

absl::Status Verify(const std::string& dir, bool accept_loss,
                    std::uint64_t from_index) {
  absl::StatusOr<std::unique_ptr<journal::JournalReader>> opened =
      journal::JournalReader::Open(
          dir, journal::ReaderOptions{.accept_loss = accept_loss,
                                      .from_index = from_index});
  if (!opened.ok())
    return AcceptedOrFailed("replay --verify", opened.status(), accept_loss);
  journal::JournalReader& reader = **opened;
  ReaderProgress progress("replay --verify");
  std::array<std::uint64_t, 256> by_kind{};
  journal::Record r;
  journal::ReadResult result;
  const auto start = Clock::now();
  while ((result = reader.Next(r)) == journal::ReadResult::kRecord) {
    ++by_kind[static_cast<std::uint8_t>(r.frame.kind())];
    progress.Count(reader);
  }
  const std::uint64_t count = progress.records();
  const double seconds = Seconds(Clock::now() - start);
  progress.Finish();
  // Every configuration the journal pins must be readable: replay needs it.
  for (const journal::SegmentInfo& segment : reader.segments()) {
    absl::StatusOr<state::PinnedConfig> pinned =
        state::SegmentConfig(segment, state::PinnedConfig{});
    if (!pinned.ok()) return pinned.status();
  }
  std::string out = absl::StrFormat(
      "replay --verify: %d records%s in %d segment%s, every checksum and "
      "index checked%s\n",
      count,
      from_index == 0 ? "" : absl::StrFormat(" from index %d", from_index),
      reader.segments().size(), reader.segments().size() == 1 ? "" : "s",
      result == journal::ReadResult::kEnd ? "" : " UP TO THE DAMAGE BELOW");
  absl::StrAppendFormat(&out, "  by kind: %s\n", ByKind(by_kind));
  if (reader.first_index() > 1) {
    absl::StrAppendFormat(&out,
                          "  first index %d (indexes 1..%d were pruned)\n",
                          reader.first_index(), reader.first_index() - 1);
  }
  absl::StrAppendFormat(&out, "  final index %d\n", reader.last_index());
  absl::StrAppendFormat(
      &out, "  %.3f s: %s records/s, %.0f MB/s\n", seconds,
      Rate(static_cast<double>(count), seconds),
      seconds > 0 ? static_cast<double>(reader.bytes_done()) / seconds / 1e6
                  : 0.0);
  if (absl::Status s = Print(stdout, out); !s.ok()) return s;
  return ReportLosses("replay --verify", reader, accept_loss);
}

// replay --verify: no flag of the engine's run, --from-index allowed.
absl::Status ReplayVerify(const Args& args, const std::string& dir,
                          std::int64_t book_levels) {
  if (args.Has("reports") || args.Has("reports-dir") || args.Bool("json") ||
      book_levels > 0 || args.Has("config") || args.Has("no-snapshot")) {
    return UsageError(
        "--verify checks the journal without the engine: it takes no "
        "--reports, --reports-dir, --json, --book, --config or "
        "--no-snapshot");
  }
  std::uint64_t from_index = 0;
  if (args.Has("from-index")) {
    absl::StatusOr<journal::ReaderOptions> options = SeekFlags(args);
    if (!options.ok()) return options.status();
    from_index = options->from_index;
  }
  return Verify(dir, args.Bool("accept-loss"), from_index);
}

// Where replay writes the reports: --reports FILE ('-': standard output)
// and --reports-dir DIR (one file per session, opened at its first
// report), in binary or, with --json, JSON lines.
class ReplayReportSinks {
 public:
  // Opens --reports, then creates --reports-dir.
  static absl::StatusOr<ReplayReportSinks> Open(const Args& args) {
    ReplayReportSinks sinks;
    sinks.json_ = args.Bool("json");
    sinks.format_ =
        sinks.json_ ? ReportFormat::kJsonLines : ReportFormat::kBinary;
    if (args.Has("reports")) {
      absl::StatusOr<ReportSink> opened_sink =
          ReportSink::Open("reports", args.String("reports"), sinks.format_);
      if (!opened_sink.ok()) return opened_sink.status();
      sinks.file_.emplace(*std::move(opened_sink));
    }
    sinks.to_dir_ = args.Has("reports-dir");
    sinks.dir_ = args.String("reports-dir");
    if (sinks.to_dir_) {
      std::error_code ec;
      std::filesystem::create_directories(sinks.dir_, ec);
      if (ec || !std::filesystem::is_directory(sinks.dir_)) {
        return absl::NotFoundError(
            absl::StrFormat("--reports-dir %s: cannot create the directory: %s",
                            sinks.dir_, ec ? ec.message() : "not a directory"));
      }
    }
    return sinks;
  }

  // Writes one report to --reports and to its session's file.
  absl::Status Write(const state::Output& out) {
    if (file_.has_value()) {
      if (absl::Status s = file_->Write(out.frame); !s.ok()) return s;
    }
    if (!to_dir_) return absl::OkStatus();
    if (sessions_.size() <= out.session) sessions_.resize(out.session + 1);
    std::optional<ReportSink>& session_sink = sessions_[out.session];
    if (!session_sink.has_value()) {
      absl::StatusOr<ReportSink> opened_sink = ReportSink::Open(
          "reports-dir",
          absl::StrFormat("%s/session-%d.%s", dir_, out.session_id,
                          json_ ? "jsonl" : "bin"),
          format_);
      if (!opened_sink.ok()) return opened_sink.status();
      session_sink.emplace(*std::move(opened_sink));
    }
    return session_sink->Write(out.frame);
  }

  // Finishes --reports, then each session's file.
  absl::Status Finish() {
    if (file_.has_value()) {
      if (absl::Status s = file_->Finish(); !s.ok()) return s;
    }
    for (std::optional<ReportSink>& session_sink : sessions_) {
      if (session_sink.has_value()) {
        if (absl::Status s = session_sink->Finish(); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  // Where the summary goes: standard error when the reports go to standard
  // output.
  [[nodiscard]] std::FILE* summary() const {
    return file_.has_value() && file_->is_stdout() ? stderr : stdout;
  }

 private:
  ReplayReportSinks() = default;

  bool json_ = false;
  ReportFormat format_ = ReportFormat::kBinary;
  std::optional<ReportSink> file_;
  bool to_dir_ = false;
  std::string dir_;
  // By the state machine's session index.
  std::vector<std::optional<ReportSink>> sessions_;
};

// What a replay of `count` records (after the snapshot at snapshot_index,
// if not 0) made, in `seconds`.
std::string ReplaySummary(const state::RebuiltState& rebuilt,
                          std::uint64_t count, std::uint64_t report_count,
                          std::uint64_t snapshot_index, double seconds) {
  const state::StateMachine& machine = *rebuilt.machine;
  const journal::JournalReader& reader = *rebuilt.reader;
  const state::StateMachineStats& stats = machine.stats();
  std::string out = absl::StrFormat(
      "replay: %d records in %d segment%s through the state machine%s%s\n",
      count, reader.segments().size(), reader.segments().size() == 1 ? "" : "s",
      snapshot_index > 0
          ? absl::StrFormat(", after snapshot index %d", snapshot_index)
          : std::string(),
      rebuilt.end == journal::ReadResult::kEnd ? ""
                                               : " UP TO THE DAMAGE BELOW");
  absl::StrAppendFormat(&out, "  commands: %s\n", ByKind(stats.commands));
  absl::StrAppendFormat(&out, "  reports: %d (%s)\n", report_count,
                        ByKind(stats.reports));
  absl::StrAppendFormat(&out, "  sessions: %d", machine.session_count());
  for (std::size_t i = 0; i < machine.session_count() && i < 8; ++i) {
    const state::SessionState& session =
        machine.session(static_cast<std::uint32_t>(i));
    absl::StrAppendFormat(&out, "%s %d (%d commands, %d reports%s)",
                          i == 0 ? ":" : ",", session.id,
                          session.next_expected - 1, session.next_report - 1,
                          session.closed ? ", closed" : "");
  }
  if (machine.session_count() > 8) out += ", ...";
  out += "\n";
  for (const std::string& change : rebuilt.reconfigurations) {
    absl::StrAppendFormat(&out, "  reconfigured %s\n", change);
  }
  absl::StrAppendFormat(&out, "  final index %d; %d live orders at the end\n",
                        reader.last_index(), machine.engine().live_orders());
  absl::StrAppendFormat(&out, "  %.3f s: %s records/s\n", seconds,
                        Rate(static_cast<double>(count), seconds));
  return out;
}

// Snapshots passed over are named by JournalApplication; this is the one
// the replay starts from.
void PrintReplayStart(const state::RebuiltState& rebuilt) {
  if (!rebuilt.snapshot.has_value()) return;
  const std::uint64_t snapshot_index = rebuilt.snapshot->index;
  const std::string from = absl::StrFormat(
      "replay: from snapshot %s (index %d, %d sessions, %d live orders); "
      "reports of records %d.. only\n",
      rebuilt.snapshot->path, snapshot_index, rebuilt.snapshot->sessions,
      rebuilt.snapshot->live_orders, snapshot_index + 1);
  std::fputs(from.c_str(), stderr);
}

// Replays the journal in `dir` through the state machine (from the newest
// usable snapshot unless --no-snapshot), writing the reports to `sinks`,
// then prints the summary and, with --book, the depth of the books.
absl::Status RunReplay(const Args& args, const std::string& dir,
                       const config::ServiceConfig& config,
                       std::int64_t book_levels, ReplayReportSinks& sinks) {
  ReaderProgress progress("replay");
  std::uint64_t report_count = 0;
  JournalApplication application(JournalApplyOptions{
      .command = "replay",
      .directory = dir,
      .config = config,
      .note_pinned = args.Has("config"),
      .accept_loss = args.Bool("accept-loss"),
      .use_snapshots = !args.Bool("no-snapshot"),
      .on_applied =
          [&](const journal::Record&, const state::StateMachine& machine,
              const journal::JournalReader& reader) -> absl::StatusOr<bool> {
        for (const state::Output& out : machine.outputs()) {
          ++report_count;
          if (absl::Status s = sinks.Write(out); !s.ok()) return s;
        }
        progress.Count(reader);
        return true;
      }});
  const absl::StatusOr<bool> begun = application.Begin();
  state::RebuiltState& rebuilt = application.state();
  PrintReplayStart(rebuilt);
  if (!begun.ok() || !*begun) return begun.status();
  const auto start = Clock::now();
  if (absl::Status s = application.ApplyTail(); !s.ok()) return s;
  const std::uint64_t count = progress.records();
  const double seconds = Seconds(Clock::now() - start);
  progress.Finish();
  if (absl::Status s = sinks.Finish(); !s.ok()) return s;
  if (absl::Status s = application.CheckSnapshotWithinJournal(); !s.ok()) {
    return s;
  }
  if (absl::Status s =
          Print(sinks.summary(),
                ReplaySummary(rebuilt, count, report_count,
                              application.snapshot_index(), seconds));
      !s.ok()) {
    return s;
  }
  if (book_levels > 0) {
    const std::string depth = DepthTables(
        rebuilt.machine->engine(), static_cast<std::size_t>(book_levels));
    if (absl::Status s = Print(stderr, depth); !s.ok()) return s;
  }
  return application.Finish();
}

absl::Status Replay(const Args& args) {
  if (absl::Status s = args.Require("journal"); !s.ok()) return s;
  const std::string dir = args.String("journal");
  absl::StatusOr<std::int64_t> book_levels = args.Int("book", 0, 1'000'000);
  if (!book_levels.ok()) return book_levels.status();
  if (args.Bool("verify")) return ReplayVerify(args, dir, *book_levels);
  if (args.Has("from-index")) {
    return UsageError(absl::StrFormat(
        "--from-index %s without --verify would apply the engine from the "
        "middle of the journal, which needs the state before index %s (a "
        "snapshot): without one it cannot reproduce the reports. Use "
        "'replay --verify --from-index %s' to check the records from there, "
        "or 'journal inspect --records --from-index %s' to print them",
        args.String("from-index"), args.String("from-index"),
        args.String("from-index"), args.String("from-index")));
  }
  if (args.Bool("json") && !args.Has("reports") && !args.Has("reports-dir")) {
    return UsageError("--json needs --reports FILE or --reports-dir DIR");
  }
  absl::StatusOr<config::ServiceConfig> config = ServiceConfigFlag(args);
  if (!config.ok()) return config.status();
  absl::StatusOr<ReplayReportSinks> sinks = ReplayReportSinks::Open(args);
  if (!sinks.ok()) return sinks.status();
  return RunReplay(args, dir, *config, *book_levels, *sinks);
}

// `orderwire journal <write|inspect|prune|follow>`.
const CommandSpec kJournalSpec{
    .name = "journal",
    .synopsis = "<command> [flags]",
    .summary = "Append frames to a journal, inspect, prune or follow one.",
};

const Command kJournalSubcommands[] = {{&kWriteSpec, Write},
                                       {&kInspectSpec, Inspect},
                                       {&kPruneSpec, Prune},
                                       {&kFollowSpec, Follow}};

}  // namespace

const Command kJournalCommand{&kJournalSpec, nullptr, kJournalSubcommands};

const Command kReplayCommand{&kReplaySpec, Replay};

}  // namespace orderwire::cli
