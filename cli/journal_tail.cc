// Where a replay starts; see journal_tail.h.
#include "cli/journal_tail.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace orderwire::cli {

absl::StatusOr<JournalTail> JournalTail::OpenJournalAt(
    const std::string& dir, const journal::ReaderOptions& options,
    std::uint64_t from_index) {
  journal::ReaderOptions at = options;
  at.from_index = from_index;
  absl::StatusOr<std::unique_ptr<journal::JournalReader>> opened =
      journal::JournalReader::Open(dir, at);
  if (!opened.ok()) return opened.status();
  return JournalTail(*std::move(opened), from_index);
}

absl::StatusOr<std::uint64_t> JournalIdOf(
    const std::string& dir, const journal::ReaderOptions& options) {
  absl::StatusOr<std::unique_ptr<journal::JournalReader>> opened =
      journal::JournalReader::Open(dir, options);
  if (!opened.ok()) return opened.status();
  journal::JournalReader& reader = **opened;
  journal::Record record;
  // The first Next() enters the first segment (its header read and
  // checked), whatever it returns.
  (void)reader.Next(record);
  if (reader.segments().empty()) {
    if (!reader.status().ok()) return reader.status();
    return absl::NotFoundError(
        absl::StrCat("journal ", dir, ": no segment could be read"));
  }
  return reader.segments().front().header.journal_id;
}

absl::StatusOr<ReplayStart> StartReplay(
    const std::string& dir, const journal::ReaderOptions& reader_options,
    bool use_snapshots, std::uint64_t max_index,
    const service::StateMachineOptions& options) {
  ReplayStart start;
  if (use_snapshots) {
    absl::StatusOr<std::vector<service::SnapshotInfo>> list =
        service::ListSnapshots(dir);
    if (!list.ok()) return list.status();
    if (!list->empty()) {
      absl::StatusOr<std::uint64_t> journal_id =
          JournalIdOf(dir, reader_options);
      if (!journal_id.ok()) return journal_id.status();
      absl::StatusOr<std::optional<service::LoadedSnapshot>> loaded =
          service::LoadNewestSnapshot(dir, *journal_id, max_index,
                                      &start.skipped);
      if (!loaded.ok()) return loaded.status();
      if (loaded->has_value()) {
        start.machine = std::move((*loaded)->machine);
        start.snapshot = (*loaded)->info;
        return start;
      }
    }
  }
  start.machine = std::make_unique<service::StateMachine>(options);
  return start;
}

}  // namespace orderwire::cli
