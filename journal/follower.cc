// JournalFollower; see follower.h.
#include "journal/follower.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <fstream>
#include <sstream>
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

namespace {

// "fe:00:5472428": how /proc/locks names the file with this device and
// inode ("%02x:%02x:%lu" of the device's major and minor numbers, then the
// inode number).
std::string LockName(const struct stat& st) {
  return absl::StrFormat("%02x:%02x:%d", major(st.st_dev), minor(st.st_dev),
                         st.st_ino);
}

}  // namespace

bool WriterHoldsLock(const std::string& directory) {
  // JournalWriter::Lock() takes LOCK_EX on the directory itself, and on
  // its LOCK file (which older writers lock alone).
  std::vector<std::string> names;
  struct stat st {};
  if (::stat(directory.c_str(), &st) == 0) names.push_back(LockName(st));
  const std::string lock_file =
      absl::StrFormat("%s/%s", directory, kLockFileName);
  if (::stat(lock_file.c_str(), &st) == 0) names.push_back(LockName(st));
  if (names.empty()) return false;
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    if (line.find("FLOCK") == std::string::npos) continue;
    std::istringstream fields(line);
    std::string field;
    while (fields >> field) {
      if (std::find(names.begin(), names.end(), field) != names.end()) {
        return true;
      }
    }
  }
  return false;
}

absl::StatusOr<std::uint64_t> JournalFollower::DurableLimit() {
  if (!mark_.has_value()) {
    // A writer of this version publishes the mark when it opens the
    // journal, before it appends anything.
    absl::StatusOr<std::optional<DurableMarkView>> mark =
        DurableMarkView::Open(directory_);
    if (!mark.ok()) return mark.status();
    mark_ = std::move(*mark);
  }
  if (mark_.has_value()) return mark_->durable_index();
  // No mark: the checkpoint witnesses what was durable (a writer that could
  // not create the mark, e.g. on a full disk, goes on and keeps it).
  absl::StatusOr<std::optional<Checkpoint>> checkpoint =
      ReadCheckpoint(directory_);
  if (!checkpoint.ok()) return checkpoint.status();
  if (checkpoint->has_value()) return (*checkpoint)->durable_index;
  // Neither: a writer that holds the lock is opening the journal (its mark
  // is not there yet) and anything it writes may not be durable: wait.
  if (WriterHoldsLock(directory_)) return 0;
  // A journal of older code at rest: what verifies up to the clean end is
  // what a restart keeps. Found by reading ahead without handing anything
  // out, then trusted only if still no writer came (one that came in the
  // meantime may have appended what was read: wait for its mark).
  if (next_index_ <= clean_end_) return clean_end_;
  absl::StatusOr<std::unique_ptr<JournalReader>> reader =
      JournalReader::Open(directory_, ReaderOptions{.from_index = next_index_});
  if (!reader.ok()) return reader.status();
  Record record;
  std::uint64_t end = next_index_ - 1;
  ReadResult result;
  while ((result = (*reader)->Next(record)) == ReadResult::kRecord) {
    end = record.index;
  }
  const bool torn_tail =
      (*reader)->damage().has_value() &&
      (*reader)->damage()->kind == internal::Damage::Kind::kTornTail;
  if (result == ReadResult::kError && !torn_tail) return (*reader)->status();
  struct stat st {};
  const bool writer_came =
      ::stat(absl::StrFormat("%s/%s", directory_, kDurableFileName).c_str(),
             &st) == 0 ||
      ::stat(absl::StrFormat("%s/%s", directory_, kCheckpointFileName).c_str(),
             &st) == 0 ||
      WriterHoldsLock(directory_);
  if (writer_came) return 0;
  clean_end_ = end;
  return clean_end_;
}

absl::StatusOr<std::size_t> JournalFollower::Poll(
    absl::FunctionRef<void(const Record&)> sink, std::size_t max_records) {
  if (!status_.ok()) return status_;
  if (next_index_ == 0) {
    // The journal's start: the index its first segment's name gives.
    absl::StatusOr<std::vector<internal::SegmentEntry>> entries =
        internal::ListSegments(directory_);
    if (!entries.ok()) return status_ = entries.status();
    if (entries->empty()) return 0;  // a journal being created
    next_index_ = entries->front().name_index;
  }
  absl::StatusOr<std::uint64_t> limit = DurableLimit();
  if (!limit.ok()) return status_ = limit.status();
  limit_ = *limit;
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
    if (result == ReadResult::kError) return status_ = reader_->status();
    // The end of the segments it listed: reopen at the next index, which
    // lists the new segments; once per Poll if the new reader has nothing
    // either.
    reader_.reset();
    if (fresh) break;
  }
  return count;
}

}  // namespace orderwire::journal
