// Rebuilding the state of a journal; see rebuild.h.
#include "state/rebuild.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "journal/start.h"

namespace orderwire::state {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

absl::StatusOr<std::uint64_t> JournalIdOf(
    const std::string& directory, const journal::ReaderOptions& options) {
  absl::StatusOr<std::unique_ptr<journal::JournalReader>> opened =
      journal::JournalReader::Open(directory, options);
  if (!opened.ok()) return opened.status();
  journal::JournalReader& reader = **opened;
  journal::Record record;
  // The first Next() enters the first segment (its header read and
  // checked), whatever it returns.
  (void)reader.Next(record);
  if (reader.segments().empty()) {
    if (!reader.status().ok()) return reader.status();
    return absl::NotFoundError(
        absl::StrCat("journal ", directory, ": no segment could be read"));
  }
  return reader.segments().front().header.journal_id;
}

absl::Status StateRebuild::Begin() {
  const std::string& dir = options_.directory;
  RebuiltState& state = state_;
  // 1. The newest valid snapshot at or below up_to_index.
  if (options_.use_snapshots) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<SnapshotInfo>> list = ListSnapshots(dir);
    absl::Status load_status = list.status();
    std::optional<LoadedSnapshot> loaded;
    if (list.ok() && !list->empty()) {
      state.journal_id = options_.journal_id;
      if (state.journal_id == 0) {
        absl::StatusOr<std::uint64_t> id =
            JournalIdOf(dir, options_.reader_options);
        if (!id.ok()) return id.status();
        state.journal_id = *id;
      }
      absl::StatusOr<std::optional<LoadedSnapshot>> newest =
          LoadNewestSnapshot(dir, state.journal_id, options_.up_to_index,
                             &state.skipped, options_.snapshot_usable);
      if (newest.ok()) {
        loaded = std::move(*newest);
      } else {
        load_status = newest.status();
      }
    }
    if (!load_status.ok()) {
      if (!options_.unreadable_snapshots_replay_all) return load_status;
      // Snapshots only shorten the rebuild: one that cannot be read is
      // reported and the whole journal replayed.
      state.skipped.push_back(absl::StrFormat(
          "snapshots of journal %s not read (%s); replaying the whole journal",
          dir, load_status.ToString()));
    } else if (loaded.has_value()) {
      state.machine = std::move(loaded->machine);
      state.snapshot = loaded->info;
      state.journal_id = state.snapshot->journal_id;
      state.snapshot_load_seconds = SecondsSince(start);
    }
  }
  if (state.machine == nullptr) {
    state.machine = std::make_unique<StateMachine>(options_.machine_options);
  }
  state.from_index = state.snapshot.has_value() ? state.snapshot->index + 1 : 1;

  // 2. A pruned journal lacks the records before its first index: the state
  // comes from a snapshot that reaches it, or not at all.
  absl::StatusOr<std::uint64_t> first = journal::FirstAvailableIndex(dir);
  if (!first.ok()) return first.status();
  state.first_available_index = *first;
  if (*first > state.from_index) {
    if (options_.pruned_error) return options_.pruned_error(*first);
    return absl::FailedPreconditionError(absl::StrFormat(
        "journal %s starts at index %d (indexes before it were pruned) and no "
        "valid snapshot reaches it: the state cannot be rebuilt",
        dir, *first));
  }

  // 3. The reader of the tail: a seek to the index after the snapshot.
  if (state.from_index > options_.up_to_index) return absl::OkStatus();
  journal::ReaderOptions reader_options = options_.reader_options;
  reader_options.from_index = state.from_index == 1 ? 0 : state.from_index;
  absl::StatusOr<std::unique_ptr<journal::JournalReader>> reader =
      journal::JournalReader::Open(dir, reader_options);
  if (!reader.ok()) return reader.status();
  state.reader = *std::move(reader);
  return absl::OkStatus();
}

absl::Status StateRebuild::ApplyTail() {
  while (true) {
    absl::StatusOr<bool> applied = ApplyNext();
    if (!applied.ok()) return applied.status();
    if (!*applied) return absl::OkStatus();
  }
}

absl::StatusOr<bool> StateRebuild::ApplyNext() {
  RebuiltState& state = state_;
  if (next_index_ == 0) {  // the first call
    next_index_ = state.from_index;
    state.end = journal::ReadResult::kRecord;
    tail_over_ = state.reader == nullptr;  // nothing after the snapshot
  }
  if (tail_over_) return false;
  journal::JournalReader& reader = *state.reader;
  StateMachine& machine = *state.machine;
  // Each segment's configuration is in force from its first record
  // (segments that pin none: options_.unpinned); the one in force at a
  // snapshot's index came with the snapshot.
  journal::Record record;
  const journal::ReadResult result = next_index_ <= options_.up_to_index
                                         ? reader.Next(record)
                                         : journal::ReadResult::kRecord;
  if (next_index_ > options_.up_to_index ||
      result != journal::ReadResult::kRecord) {
    if (next_index_ <= options_.up_to_index) state.end = result;
    EndTail();
    return false;
  }
  if (state.replayed == 0) {
    if (record.index != state.from_index) {
      return absl::DataLossError(absl::StrFormat(
          "journal %s: the records after the snapshot start at index %d, "
          "not %d",
          options_.directory, record.index, state.from_index));
    }
    if (state.snapshot.has_value()) {
      // Only the segments from this record's on may change it.
      segments_seen_ = reader.segments().size() - 1;
    }
  }
  if (reader.segments().size() != segments_seen_) [[unlikely]] {
    if (options_.on_new_segments) {
      if (absl::Status s = options_.on_new_segments(reader, segments_seen_);
          !s.ok()) {
        return s;
      }
    }
    if (absl::Status s =
            FollowSegments(reader, segments_seen_, options_.unpinned, machine,
                           &state.reconfigurations);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = machine.Apply(Record::FromJournal(record)); !s.ok()) {
    return s;
  }
  ++state.replayed;
  if (options_.on_applied) {
    if (absl::Status s = options_.on_applied(record, machine, reader);
        !s.ok()) {
      return s;
    }
  }
  if (record.index == std::numeric_limits<std::uint64_t>::max()) {
    EndTail();  // no index after it
  } else {
    next_index_ = record.index + 1;
  }
  return true;
}

void StateRebuild::EndTail() {
  tail_over_ = true;
  const journal::JournalReader& reader = *state_.reader;
  if (state_.journal_id == 0 && !reader.segments().empty()) {
    state_.journal_id = reader.segments().front().header.journal_id;
  }
}

absl::StatusOr<RebuiltState> RebuildState(RebuildOptions options) {
  StateRebuild rebuild(std::move(options));
  if (absl::Status s = rebuild.Begin(); !s.ok()) return s;
  if (absl::Status s = rebuild.ApplyTail(); !s.ok()) return s;
  return std::move(rebuild.state());
}

}  // namespace orderwire::state
