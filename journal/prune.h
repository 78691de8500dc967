// Pruning: removing (or archiving) whole segments at the start of a
// journal, recorded durably so that only an intended prune is accepted
// (start.h), and what retention needs to decide how far to prune.
//
// PruneJournal(dir, before_index N) removes every segment all of whose
// records are < N, never the last segment, never one holding an index >= N
// and never the segment holding the journal's last record. The order of
// operations makes every crash point safe:
//   1. the new first index F is published in START (written, fdatasynced,
//      renamed, directory fsynced): from now on readers and recovery ignore
//      segment files before F;
//   2. each segment before F is unlinked, or moved to the archive directory
//      (a rename on the same file system; across file systems a copy that
//      is fsynced and renamed into place before the original is unlinked);
//   3. the journal directory (and the archive) are fsynced;
//   4. snapshot files <dir>/snapshots/NNN.ows whose index + 1 < F (useless:
//      the journal no longer holds the records after them) are removed.
// A crash after 1 leaves segment files before F that nothing reads; the
// next prune finishes the job. A crash before 1 changes nothing.
//
// The caller holds the journal's writer lock: it has a JournalWriter open
// on the directory (the service: its own; `orderwire journal prune`: one it
// opened for this). The writer appends only to the last segment, so a prune
// may run on another thread beside it. Journal code takes plain indexes:
// the snapshots are only file names here.
#ifndef ORDERWIRE_JOURNAL_PRUNE_H_
#define ORDERWIRE_JOURNAL_PRUNE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace orderwire::journal {

// The snapshots' directory in a journal directory, and their names:
// "%020llu.ows", the index of the last record a snapshot includes.
inline constexpr std::string_view kSnapshotDirName = "snapshots";
inline constexpr std::string_view kSnapshotSuffix = ".ows";

struct PruneOptions {
  std::string directory;
  // Remove the segments all of whose records are < this index.
  std::uint64_t before_index = 0;
  // Empty: unlink the segments. Otherwise move them into this directory
  // (created if missing).
  std::string archive{};
  // Called after each segment removed or archived: segments done, segments
  // to do in all, records they held (for a progress display). May be null.
  std::function<void(std::size_t, std::size_t, std::uint64_t)> on_progress{};
};

struct PrunedSegment {
  std::string path;  // where it was in the journal
  std::uint64_t first_index = 0;
  std::uint64_t last_index = 0;  // the next segment's first index - 1
  std::uint64_t bytes = 0;       // its file size
  std::string archived_to{};     // empty when unlinked
};

struct PruneReport {
  std::uint64_t first_index_before = 1;
  std::uint64_t first_index_after = 1;
  std::vector<PrunedSegment> segments;  // removed or archived, in order
  std::vector<std::string> snapshots_removed;
  // Why the prune stopped where it did, e.g. "segment ... holds index
  // 2561, which is not below 3000" (for the operator).
  std::string stopped_because{};
};

// Prunes as described above. Errors: InvalidArgument (before_index 0),
// NotFound (no journal in `directory`), DataLoss (the journal's first
// segment is not where its start says: pruning would hide the loss; a
// segment header that does not verify; segments of another journal), the
// errno of any file operation (the journal stays readable: see above).
// Cold: blocking file operations, a few per segment.
absl::StatusOr<PruneReport> PruneJournal(const PruneOptions& options);

// What retention needs to know of a segment: read from its header.
struct SegmentSummary {
  std::uint64_t first_index = 0;
  std::uint64_t bytes = 0;       // file size
  std::uint64_t created_ns = 0;  // its header's created_ns
};

// The segments of the journal in `directory` from its first index on, in
// order (the writer's prepared next segment excluded). Errors: NotFound,
// DataLoss (a header that does not verify, except the last one's: it may
// be being written), the errno of reading. Cold: one small read per
// segment.
absl::StatusOr<std::vector<SegmentSummary>> ListSegmentSummaries(
    const std::string& directory);

// The indexes of the snapshot files in <directory>/snapshots, ascending
// (none when the directory does not exist). Names only: whether a file is
// a valid snapshot is the service's business. Errors: the errno of
// reading the directory. Cold.
absl::StatusOr<std::vector<std::uint64_t>> ListSnapshotIndexes(
    const std::string& directory);

// "00000000000000001000.ows" for index 1000.
std::string SnapshotFileName(std::uint64_t index);

}  // namespace orderwire::journal

#endif  // ORDERWIRE_JOURNAL_PRUNE_H_
