// Applying a journal through the StateMachine for a command; see
// journal_apply.h.
#include "cli/journal_apply.h"

#include <cstdio>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "cli/common.h"
#include "journal/prune.h"
#include "journal/start.h"
#include "state/pinned_config.h"

namespace orderwire::cli {
namespace {

absl::Status PrintError(const std::string& text) {
  return WriteAll(stderr, text, "standard error");
}

// Replay through the engine needs every record from index 1, or from a
// snapshot's index + 1: a pruned journal whose first index is later cannot
// rebuild the state.
absl::Status PrunedError(std::string_view command, const std::string& dir,
                         std::uint64_t first) {
  return absl::FailedPreconditionError(absl::StrFormat(
      "journal %s starts at index %s: indexes 1..%s were pruned, and %s "
      "cannot rebuild the engine's state without them. Replay from a "
      "snapshot taken at an index >= %s (in %s/%s), or check what is left "
      "with --verify",
      dir, journal::GroupedDigits(first), journal::GroupedDigits(first - 1),
      command, journal::GroupedDigits(first - 1), dir,
      journal::kSnapshotDirName));
}

// A note on standard error for each new segment (from segments_noted on)
// that pins a configuration other than --config's: the journal's own is
// used.
void NotePinnedConfigs(std::string_view command,
                       const journal::JournalReader& reader,
                       const state::PinnedConfig& unpinned,
                       std::size_t& segments_noted) {
  for (; segments_noted < reader.segments().size(); ++segments_noted) {
    const journal::SegmentInfo& segment = reader.segments()[segments_noted];
    absl::StatusOr<state::PinnedConfig> pinned =
        state::SegmentConfig(segment, unpinned);
    if (pinned.ok() && !(*pinned == unpinned)) {
      const std::string note = absl::StrFormat(
          "%s: note: segment %s pins its own configuration from index %d, "
          "used instead of --config (journal vs --config: %s)\n",
          command, segment.path, segment.header.first_index,
          state::DescribeDifferences(*pinned, unpinned));
      std::fputs(note.c_str(), stderr);
    }
  }
}

}  // namespace

absl::Status WithAcceptLossHint(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kDataLoss) return status;
  return absl::DataLossError(
      absl::StrFormat("%s. To go on with what is left, accepting the loss, add "
                      "--accept-loss",
                      status.message()));
}

absl::Status AcceptedOrFailed(std::string_view command,
                              const absl::Status& status, bool accept_loss) {
  if (status.ok() || !accept_loss ||
      status.code() != absl::StatusCode::kDataLoss) {
    return WithAcceptLossHint(status);
  }
  return PrintError(
      absl::StrFormat("orderwire %s: DATA LOSS ACCEPTED (--accept-loss): %s\n",
                      command, status.message()));
}

absl::Status ReportLosses(std::string_view command,
                          const journal::JournalReader& reader,
                          bool accept_loss) {
  for (const std::string& loss : reader.accepted_losses()) {
    if (absl::Status s = PrintError(absl::StrFormat(
            "orderwire %s: DATA LOSS ACCEPTED (--accept-loss): %s\n", command,
            loss));
        !s.ok()) {
      return s;
    }
  }
  return AcceptedOrFailed(command, reader.status(), accept_loss);
}

state::RebuildOptions JournalApplication::RebuildOptionsOf(
    const JournalApplyOptions& options, JournalApplication& self) {
  const config::ServiceConfig& config = options.config;
  const state::PinnedConfig unpinned = state::PinnedConfigOf(config);
  std::function<absl::Status(std::uint64_t)> pruned_error =
      options.pruned_error;
  if (!pruned_error) {
    pruned_error = [command = options.command,
                    dir = options.directory](std::uint64_t first) {
      return PrunedError(command, dir, first);
    };
  }
  return state::RebuildOptions{
      .directory = options.directory,
      .reader_options = {.accept_loss = options.accept_loss},
      .use_snapshots = options.use_snapshots,
      .snapshot_usable = options.snapshot_usable,
      // These commands need no report history: reports are written, not
      // sent again. (A snapshot brings its own.)
      .machine_options = {.engine = config.engine,
                          .max_sessions = static_cast<std::uint32_t>(
                              config.max_sessions + config.sessions.size()),
                          .report_history = 1,
                          .history_budget_bytes = 0},
      .unpinned = unpinned,
      .pruned_error = std::move(pruned_error),
      .on_new_segments =
          [&self, unpinned](const journal::JournalReader& reader, std::size_t) {
            // Cold: a new segment.
            if (self.options_.note_pinned) {
              NotePinnedConfigs(self.options_.command, reader, unpinned,
                                self.segments_noted_);
            }
            return absl::OkStatus();
          },
      .on_applied = [&self](
                        const journal::Record& record,
                        const state::StateMachine& machine,
                        const journal::JournalReader& reader) -> absl::Status {
        if (!self.options_.on_applied) return absl::OkStatus();
        absl::StatusOr<bool> go_on =
            self.options_.on_applied(record, machine, reader);
        if (!go_on.ok()) return go_on.status();
        if (*go_on) return absl::OkStatus();
        self.stopped_ = true;
        return absl::CancelledError("stopped by the command");
      }};
}

JournalApplication::JournalApplication(JournalApplyOptions options)
    : options_(std::move(options)),
      rebuild_(RebuildOptionsOf(options_, *this)) {}

std::uint64_t JournalApplication::snapshot_index() const noexcept {
  const state::RebuiltState& rebuilt = rebuild_.state();
  return rebuilt.snapshot.has_value() ? rebuilt.snapshot->index : 0;
}

absl::StatusOr<bool> JournalApplication::Begin() {
  const absl::Status begun = rebuild_.Begin();
  const state::RebuiltState& rebuilt = rebuild_.state();
  for (const std::string& skipped : rebuilt.skipped) {
    std::fprintf(stderr, "%s: %s\n", options_.command.c_str(), skipped.c_str());
  }
  if (!begun.ok()) {
    absl::Status s =
        AcceptedOrFailed(options_.command, begun, options_.accept_loss);
    if (!s.ok()) return s;
    return false;
  }
  if (rebuilt.reader == nullptr) {
    return absl::InternalError(
        absl::StrFormat("%s: no journal reader was opened", options_.command));
  }
  return true;
}

absl::Status JournalApplication::ApplyTail() {
  absl::Status s = rebuild_.ApplyTail();
  if (stopped_ && s.code() == absl::StatusCode::kCancelled) {
    return absl::OkStatus();
  }
  return s;
}

absl::Status JournalApplication::CheckSnapshotWithinJournal() const {
  const state::RebuiltState& rebuilt = rebuild_.state();
  const std::uint64_t index = snapshot_index();
  if (rebuilt.reader == nullptr || index <= rebuilt.reader->last_index() ||
      rebuilt.end != journal::ReadResult::kEnd) {
    return absl::OkStatus();
  }
  return absl::DataLossError(absl::StrFormat(
      "%s: snapshot %s holds the state up to index %d, but the journal "
      "ends at index %d: records it was made from are gone (--no-snapshot "
      "replays what the journal holds)",
      options_.command, rebuilt.snapshot->path, index,
      rebuilt.reader->last_index()));
}

absl::Status JournalApplication::Finish() const {
  const state::RebuiltState& rebuilt = rebuild_.state();
  if (rebuilt.reader == nullptr) return absl::OkStatus();
  return ReportLosses(options_.command, *rebuilt.reader, options_.accept_loss);
}

}  // namespace orderwire::cli
