// JournalFollower: reads a journal that a running writer (in this process
// or another, e.g. `orderwire serve`) is appending to: catch up, then new
// records as they become durable. The basis of `orderwire journal follow`,
// a local standby and downstream consumers.
//
//   auto follower = JournalFollower::Open(dir, {.from_index = 1});
//   while (running) {
//     absl::StatusOr<std::size_t> n = (*follower)->Poll(
//         [](const Record& r) { Consume(r); });
//     if (!n.ok()) return n.status();      // damage: DataLoss, and where
//     if (*n == 0) SleepAMillisecond();
//   }
//
// What it yields: every record once, in index order, each from a group that
// verified in full (never a torn one), and only records the writer has
// published as durable in the DURABLE file (durable_mark.h): Poll reads the
// mark (one acquire load) and never asks the reader for a record past it,
// so it never looks at a group still in flight. A journal without a DURABLE
// file is read up to its checkpoint's durable index (a writer that could not
// create the mark, e.g. on a full disk, keeps the checkpoint). Without
// either:
// - while a process holds the journal's writer lock (a writer of this
//   version opening it: the mark comes before its first append), nothing
//   is handed out: Poll returns 0 until the mark is there;
// - otherwise (a journal of older code at rest) up to its clean end, where
//   a torn tail stops quietly (a restart cuts it): the end is found by
//   reading ahead without handing anything out, and trusted only if after
//   that read there is still no mark, no checkpoint and no lock (a writer
//   that started meanwhile may have appended what was read).
// The lock is seen in /proc/locks (WriterHoldsLock): taking it to test it
// would make a writer opening at that moment fail.
// Segment rollover: the reader is reopened (a seek, O(log segments + log
// groups)) at the next index when it reaches the end of the segments it listed.
// Pruning of early segments (retention) does not disturb it: segments it
// has mapped stay readable, and it reopens at an index it has not read; an
// index that was pruned before it was read is an error naming it.
#ifndef ORDERWIRE_JOURNAL_FOLLOWER_H_
#define ORDERWIRE_JOURNAL_FOLLOWER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "journal/durable_mark.h"
#include "journal/reader.h"

namespace orderwire::journal {

struct FollowerOptions {
  // The first index to yield; 0: the journal's start.
  std::uint64_t from_index = 0;
};

class JournalFollower {
 public:
  // Checks that `directory` holds a journal (NotFound otherwise); reads
  // nothing yet. Cold.
  static absl::StatusOr<std::unique_ptr<JournalFollower>> Open(
      const std::string& directory, const FollowerOptions& options = {});

  // Hands `sink` the durable records not yet yielded, at most `max_records`,
  // and returns how many. 0: nothing new yet (poll again). Errors: the
  // reader's (DataLoss naming file, offset and last good index for damage;
  // OutOfRange for a pruned index; the errno of an I/O error); after one
  // every call returns it. The Records are valid until the next Poll.
  absl::StatusOr<std::size_t> Poll(absl::FunctionRef<void(const Record&)> sink,
                                   std::size_t max_records = SIZE_MAX);

  // The next index to yield (0 before the first Poll when starting at the
  // journal's start).
  [[nodiscard]] std::uint64_t next_index() const noexcept {
    return next_index_;
  }
  // The limit the last Poll went by: the durable index (DURABLE, else the
  // checkpoint's); without either, 0 while a writer holds the lock, else
  // the clean end found.
  [[nodiscard]] std::uint64_t durable_limit() const noexcept { return limit_; }
  // Readers opened so far (1 + reopenings at segment ends).
  [[nodiscard]] std::uint64_t reader_opens() const noexcept { return opens_; }

 private:
  JournalFollower(std::string directory, std::uint64_t from_index)
      : directory_(std::move(directory)), next_index_(from_index) {}

  // The index up to which records may be handed out now (see above). Cold
  // unless there is no mark: one acquire load with it.
  absl::StatusOr<std::uint64_t> DurableLimit();

  std::string directory_;
  std::uint64_t next_index_ = 0;
  std::uint64_t limit_ = 0;
  // Without mark, checkpoint or writer: the clean end read ahead so far.
  std::uint64_t clean_end_ = 0;
  std::uint64_t opens_ = 0;
  std::optional<DurableMarkView> mark_;
  std::unique_ptr<JournalReader> reader_;
  absl::Status status_;
};

// Whether some process holds a flock on the journal directory or its LOCK
// file (what JournalWriter::Open takes), as /proc/locks lists them; no lock
// is taken. False when /proc/locks cannot be read. Cold: reads /proc/locks.
bool WriterHoldsLock(const std::string& directory);

}  // namespace orderwire::journal

#endif  // ORDERWIRE_JOURNAL_FOLLOWER_H_
