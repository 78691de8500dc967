// JournalFollower; see follower.h.
#include "journal/follower.h"

#include <sys/stat.h>

#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "journal/checkpoint.h"

namespace orderwire::journal {

absl::StatusOr<std::unique_ptr<JournalFollower>> JournalFollower::Open(
    const std::string& directory, const FollowerOptions& options) {
  struct stat st {};
  if (::stat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::NotFoundError(
        absl::StrFormat("journal directory %s does not exist", directory));
  }
  return std::unique_ptr<JournalFollower>(
      new JournalFollower(directory, options.from_index));
}

absl::StatusOr<std::size_t> JournalFollower::Poll(
    absl::FunctionRef<void(const Record&)> sink, std::size_t max_records) {
  if (!status_.ok()) return status_;
  if (!mark_.has_value()) {
    // Until a writer of this version has opened the journal there is no
    // mark: what verifies up to the clean end is what a restart keeps.
    absl::StatusOr<std::optional<DurableMarkView>> mark =
        DurableMarkView::Open(directory_);
    if (!mark.ok()) return status_ = mark.status();
    mark_ = std::move(*mark);
  }
  if (mark_.has_value()) {
    limit_ = mark_->durable_index();
  } else {
    // No writer of this version has opened the journal: its checkpoint
    // witnesses what was durable; without one (a journal of older code)
    // what verifies up to the clean end is what a restart keeps.
    absl::StatusOr<std::optional<Checkpoint>> checkpoint =
        ReadCheckpoint(directory_);
    if (!checkpoint.ok()) return status_ = checkpoint.status();
    limit_ = checkpoint->has_value()
                 ? (*checkpoint)->durable_index
                 : std::numeric_limits<std::uint64_t>::max();
  }
  if (next_index_ == 0) {
    // The journal's start: the index its first segment's name gives.
    absl::StatusOr<std::vector<internal::SegmentEntry>> entries =
        internal::ListSegments(directory_);
    if (!entries.ok()) return status_ = entries.status();
    if (entries->empty()) return 0;  // a journal being created
    next_index_ = entries->front().name_index;
  }
  std::size_t count = 0;
  bool fresh = false;  // reader_ opened in this Poll, nothing read from it yet
  while (count < max_records && next_index_ <= limit_) {
    if (reader_ == nullptr) {
      fresh = true;
      absl::StatusOr<std::unique_ptr<JournalReader>> reader =
          JournalReader::Open(directory_,
                              ReaderOptions{.from_index = next_index_});
      if (!reader.ok()) return status_ = reader.status();
      reader_ = std::move(*reader);
      ++opens_;
    }
    Record record;
    const ReadResult result = reader_->Next(record);
    if (result == ReadResult::kRecord) {
      sink(record);
      next_index_ = record.index + 1;
      ++count;
      fresh = false;
      continue;
    }
    const bool torn_without_mark =
        result == ReadResult::kError &&
        limit_ == std::numeric_limits<std::uint64_t>::max() &&
        reader_->damage().has_value() &&
        reader_->damage()->kind == internal::Damage::Kind::kTornTail;
    if (result == ReadResult::kError && !torn_without_mark) {
      return status_ = reader_->status();
    }
    // The end of the segments it listed (or, without a mark, a torn tail):
    // reopen at the next index, which lists the new segments; once per
    // Poll if the new reader has nothing either.
    reader_.reset();
    if (fresh) break;
  }
  return count;
}

}  // namespace orderwire::journal
