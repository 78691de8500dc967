// Where a replay starts: the newest valid snapshot of a journal and the
// journal's records after it (`orderwire replay`, `orderwire snapshot`).
//
// OpenJournalAt is the one place that opens a journal reader at an index:
// journal::ReaderOptions::from_index, a binary search over segments and
// groups; nothing before the index is read.
#ifndef ORDERWIRE_CLI_JOURNAL_TAIL_H_
#define ORDERWIRE_CLI_JOURNAL_TAIL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "journal/reader.h"
#include "service/snapshot.h"
#include "service/state_machine.h"

namespace orderwire::cli {

// A journal reader that hands out the records from index `from_index` on.
class JournalTail {
 public:
  // Errors: JournalReader::Open's.
  static absl::StatusOr<JournalTail> OpenJournalAt(
      const std::string& dir, const journal::ReaderOptions& options,
      std::uint64_t from_index);

  // The next record at or after from_index (JournalReader::Next otherwise).
  journal::ReadResult Next(journal::Record& record) noexcept {
    journal::ReadResult result;
    while ((result = reader_->Next(record)) == journal::ReadResult::kRecord &&
           record.index < from_index_) {
    }
    return result;
  }
  [[nodiscard]] journal::JournalReader& reader() { return *reader_; }

 private:
  JournalTail(std::unique_ptr<journal::JournalReader> reader,
              std::uint64_t from_index)
      : reader_(std::move(reader)), from_index_(from_index) {}
  std::unique_ptr<journal::JournalReader> reader_;
  std::uint64_t from_index_;
};

// The id of the journal in `dir` (every segment header carries it).
// Errors: JournalReader::Open's, and its reading error if the first
// segment's header cannot be read.
absl::StatusOr<std::uint64_t> JournalIdOf(
    const std::string& dir, const journal::ReaderOptions& options);

// The state a replay starts from.
struct ReplayStart {
  std::unique_ptr<service::StateMachine> machine;
  // The snapshot it was loaded from (nullopt: the journal's start, an
  // empty machine with the options given).
  std::optional<service::SnapshotInfo> snapshot;
  // The snapshots skipped as damaged or foreign, one line each.
  std::vector<std::string> skipped;
};

// The newest valid snapshot of the journal in `dir` with index <=
// max_index, when `use_snapshots`; otherwise (or when there is none) a new
// StateMachine with `options`. Errors: ListSnapshots', JournalIdOf's.
absl::StatusOr<ReplayStart> StartReplay(
    const std::string& dir, const journal::ReaderOptions& reader_options,
    bool use_snapshots, std::uint64_t max_index,
    const service::StateMachineOptions& options);

}  // namespace orderwire::cli

#endif  // ORDERWIRE_CLI_JOURNAL_TAIL_H_
