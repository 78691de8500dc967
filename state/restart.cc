// Restarting from a journal; see restart.h.
#include "state/restart.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/clock.h"
#include "journal/prune.h"
#include "journal/start.h"
#include "journal/verify.h"
#include "state/rebuild.h"

namespace orderwire::state {
namespace {

// The snapshots the rebuild skipped (each damaged one, or a snapshot
// directory that cannot be read) and the one it started from.
void NoteRestartSnapshot(const RebuiltState& rebuilt, RestartedJournal& out) {
  for (const std::string& line : rebuilt.skipped) {
    absl::StrAppendFormat(&out.report, "\n  %s", line);
    if (!out.warning.empty()) out.warning += "\n";
    out.warning += line;
  }
  if (!rebuilt.snapshot.has_value()) return;
  const SnapshotInfo& snapshot = *rebuilt.snapshot;
  out.started_from_snapshot = snapshot.index;
  absl::StrAppendFormat(
      &out.report,
      "\n  started from snapshot %s (index %d, %d session(s), %d live "
      "orders) loaded in %.3f s",
      snapshot.path, snapshot.index, snapshot.sessions, snapshot.live_orders,
      rebuilt.snapshot_load_seconds);
}

// Step 3 of restart.h: the records that neither recovery (from the
// checkpoint's group on) nor the replay (after the snapshot) read are
// verified, so damage anywhere in the retained journal refuses the start.
absl::Status VerifyUnreadPrefix(const std::string& directory,
                                const journal::RecoveryReport& recovery,
                                std::uint64_t replay_from,
                                std::string& report) {
  const std::uint64_t end = std::min(recovery.read_from_index, replay_from);
  absl::StatusOr<journal::VerifiedPrefix> verified =
      journal::VerifyPrefix(directory, end);
  if (!verified.ok()) {
    return absl::DataLossError(absl::StrFormat(
        "journal %s is damaged before the records this start reads: %s. "
        "The service does not start on a journal that no longer holds what "
        "it journaled ('orderwire replay --verify' lists the damage); "
        "--accept-loss cuts the journal after the last good index and sets "
        "the rest aside",
        directory, verified.status().message()));
  }
  if (verified->records == 0) return absl::OkStatus();
  absl::StrAppendFormat(
      &report,
      "\n  verified records %d to %d (%d segment(s), %.1f MB) in %.3f s",
      verified->first_index, verified->last_index, verified->segments,
      static_cast<double>(verified->bytes) * 1e-6, verified->seconds);
  return absl::OkStatus();
}

// Step 4 of restart.h: after the replay, the journal's current
// configuration in force in `machine`; `given` pinned when the journal pins
// none; a difference refused, or with `reconfigure` pinned from the next
// index.
absl::Status PinConfiguration(const std::string& directory,
                              const PinnedConfig& given, bool reconfigure,
                              journal::JournalWriter& writer,
                              StateMachine& machine, std::string& report) {
  const std::uint64_t next = writer.last_index() + 1;
  if (writer.metadata().empty()) {
    // A journal written before the configuration was pinned: its records
    // were applied with the configuration given, which is pinned from now.
    if (absl::Status s = writer.StartSegment(EncodePinnedConfig(given));
        !s.ok()) {
      return s;
    }
    absl::StrAppendFormat(&report,
                          "\n  journal %s pinned no configuration: the one "
                          "given is pinned from index %d",
                          directory, next);
    return absl::OkStatus();
  }
  const journal::SegmentInfo current{.path = writer.segment_path(),
                                     .header = {},
                                     .metadata = writer.metadata()};
  absl::StatusOr<PinnedConfig> pinned = SegmentConfig(current, given);
  if (!pinned.ok()) return pinned.status();
  // The last segment's configuration holds from its first index, records or
  // not (a segment started by a reconfiguration may have none yet).
  if (!(PinnedConfigOf(machine) == *pinned)) {
    if (absl::Status s =
            machine.Reconfigure(pinned->engine, pinned->max_sessions);
        !s.ok()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "journal %s: the configuration its last segment pins cannot be "
          "taken: %s",
          directory, s.message()));
    }
  }
  if (*pinned == given) return absl::OkStatus();
  const std::string differences = DescribeDifferences(*pinned, given);
  if (!reconfigure) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the configuration given differs from the one journal %s pins "
        "(journal -> given): %s. The journal's records were applied with its "
        "own configuration and must stay so; start with the same "
        "configuration, or add --reconfigure to change it from index %d on "
        "(a new segment pins it there, so a replay changes at the same "
        "index)",
        directory, differences, next));
  }
  if (absl::Status s = machine.Reconfigure(given.engine, given.max_sessions);
      !s.ok()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "--reconfigure refused, nothing changed (journal -> given: %s): %s",
        differences, s.message()));
  }
  if (absl::Status s = writer.StartSegment(EncodePinnedConfig(given));
      !s.ok()) {
    return s;
  }
  absl::StrAppendFormat(&report, "\n  journal reconfigured from index %d: %s",
                        next, differences);
  return absl::OkStatus();
}

// The warning when the journal's file system cannot hold two segments (the
// one being filled and the next, prepared ahead): the journal then fills
// the disk with ever smaller segments and is full long before an operator
// expects it. Nothing when the space cannot be measured.
void WarnWhenTwoSegmentsDoNotFit(const std::string& directory,
                                 const journal::JournalWriter& writer,
                                 RestartedJournal& out) {
  const absl::StatusOr<journal::JournalWriter::Space> space =
      writer.SpaceOnDisk();
  const std::uint64_t segment = writer.segment_size();
  if (!space.ok() || space->free_bytes + space->journal_bytes >= 2 * segment) {
    return;
  }
  const std::string line = absl::StrFormat(
      "warning: the file system of journal %s cannot hold two journal "
      "segments of %d bytes (%d bytes free + %d in the journal's segments): "
      "once the current segment is full, the next ones are smaller (down to "
      "%d bytes) and then the journal is full (new commands answered Busy); "
      "give the journal more room or a smaller --segment-size",
      directory, segment, space->free_bytes, space->journal_bytes,
      writer.smallest_segment());
  absl::StrAppendFormat(&out.report, "\n  %s", line);
  if (!out.warning.empty()) out.warning += "\n";
  out.warning += line;
}

// Step 1's lines: what recovery found (an accepted loss or a torn tail also
// as the warning), a file system too small for two segments, a journal
// without a checkpoint.
void NoteRecovery(const std::string& directory, RestartedJournal& out) {
  const journal::RecoveryReport& recovery = out.writer->recovery();
  out.report = absl::StrFormat(
      "journal %s: %s, %d segment(s), last index %d; %s, durability %s",
      directory, recovery.created ? "created" : "recovered", recovery.segments,
      recovery.last_index, out.writer->io_description(),
      journal::Name(out.writer->durability()));
  if (recovery.loss_accepted) {
    // Loud, and shown even with --quiet.
    out.warning = absl::StrFormat("DATA LOSS ACCEPTED (--accept-loss): %s",
                                  recovery.loss_message);
    absl::StrAppendFormat(&out.report, "\n  %s", out.warning);
  } else if (recovery.torn_tail) {
    absl::StrAppendFormat(&out.report, "\n  %s", recovery.message);
    out.warning = recovery.message;
  }
  WarnWhenTwoSegmentsDoNotFit(directory, *out.writer, out);
  if (recovery.checkpoint_missing) {
    absl::StrAppendFormat(
        &out.report,
        "\n  no checkpoint (a journal written before checkpoints): its end "
        "could not be checked this time; one is kept from now on");
  }
}

// The rebuild of step 2: up to the recovered journal's last index, from
// the newest valid snapshot of that journal unless options.use_snapshots
// is false; a pruned journal no snapshot reaches is refused.
RebuildOptions RestartRebuildOptions(const RestartOptions& options,
                                     const journal::JournalWriter& writer) {
  const std::string directory = options.journal.directory;
  const bool use_snapshots = options.use_snapshots;
  return RebuildOptions{
      .directory = directory,
      .use_snapshots = use_snapshots,
      .up_to_index = writer.recovery().last_index,
      .journal_id = writer.journal_id(),
      .machine_options = options.machine,
      .unpinned = options.given,
      .unreadable_snapshots_replay_all = true,
      .pruned_error = [directory, use_snapshots](std::uint64_t first_index) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "journal %s starts at index %s (indexes 1..%s were pruned) and "
            "no valid snapshot reaches it%s: the service cannot rebuild its "
            "state; restarting a pruned journal needs a snapshot at an "
            "index >= %s in %s/%s",
            directory, journal::GroupedDigits(first_index),
            journal::GroupedDigits(first_index - 1),
            use_snapshots ? "" : " (--no-snapshot)",
            journal::GroupedDigits(first_index - 1), directory,
            journal::kSnapshotDirName));
      }};
}

// Steps 2 and 3: the newest valid snapshot, if any, then every record after
// it through the StateMachine, as the live loop applied it, into
// out.machine; the records neither read verified. Returns the
// reconfigurations the replay went through.
absl::StatusOr<std::vector<std::string>> ReplayJournal(
    const RestartOptions& options, RestartedJournal& out) {
  const std::string& directory = options.journal.directory;
  const journal::RecoveryReport& recovery = out.writer->recovery();
  if (recovery.last_index == 0) {
    out.machine = std::make_unique<StateMachine>(options.machine);
    return std::vector<std::string>();
  }
  const std::int64_t start = base::MonotonicNs();
  absl::StatusOr<RebuiltState> rebuilt =
      RebuildState(RestartRebuildOptions(options, *out.writer));
  if (!rebuilt.ok()) return rebuilt.status();
  NoteRestartSnapshot(*rebuilt, out);
  out.machine = std::move(rebuilt->machine);
  out.replayed = rebuilt->replayed;
  std::vector<std::string> reconfigurations =
      std::move(rebuilt->reconfigurations);
  const std::uint64_t from = rebuilt->from_index;
  if (rebuilt->reader != nullptr) {
    if (!rebuilt->reader->status().ok()) return rebuilt->reader->status();
    const std::uint64_t last_read =
        out.replayed == 0 ? 0 : from + out.replayed - 1;
    if (last_read != recovery.last_index) {
      return absl::DataLossError(absl::StrFormat(
          "journal replay ended at index %d, but the journal holds %d",
          last_read, recovery.last_index));
    }
  }
  // The snapshot's loading and the verification are reported on lines of
  // their own.
  const double seconds =
      static_cast<double>(base::MonotonicNs() - start) * 1e-9 -
      rebuilt->snapshot_load_seconds;
  if (absl::Status s = VerifyUnreadPrefix(directory, recovery,
                                          rebuilt->from_index, out.report);
      !s.ok()) {
    return s;
  }
  absl::StrAppendFormat(
      &out.report,
      "\n  replayed %d records (%s) in %.3f s: %d session(s), %d live "
      "orders, next order id %d",
      out.replayed,
      from <= recovery.last_index
          ? absl::StrFormat("%d to %d", from, recovery.last_index)
          : std::string("none after the snapshot"),
      seconds, out.machine->session_count(),
      out.machine->engine().live_orders(),
      out.machine->engine().next_order_id().value());
  return reconfigurations;
}

}  // namespace

absl::StatusOr<RestartedJournal> RestartFromJournal(RestartOptions options) {
  RestartedJournal out;
  const std::string& directory = options.journal.directory;
  // 1. A new journal pins the configuration given from its first segment.
  options.journal.metadata = EncodePinnedConfig(options.given);
  absl::StatusOr<std::unique_ptr<journal::JournalWriter>> writer =
      journal::JournalWriter::Open(options.journal);
  if (!writer.ok()) return writer.status();
  out.writer = std::move(*writer);
  NoteRecovery(directory, out);
  // 2 and 3.
  absl::StatusOr<std::vector<std::string>> reconfigurations =
      ReplayJournal(options, out);
  if (!reconfigurations.ok()) return reconfigurations.status();
  for (const std::string& change : *reconfigurations) {
    absl::StrAppendFormat(&out.report, "\n  journal reconfigured %s", change);
  }
  // 4. The configuration.
  if (absl::Status s =
          PinConfiguration(directory, options.given, options.reconfigure,
                           *out.writer, *out.machine, out.report);
      !s.ok()) {
    return s;
  }
  return out;
}

}  // namespace orderwire::state
