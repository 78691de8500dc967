// Cutting a journal's tail: moving the records after an index out of the
// journal into a side journal, so that a journal whose last records were
// never acknowledged (an old primary's, docs/REPLICATION.md "Rejoining as a
// standby") can go on from an earlier index. Nothing is deleted: the
// records cut are kept in a journal directory of their own,
// <dir>/cut/<K+1>-<L>/, that every `orderwire journal` tool reads.
//
// CutJournalTail(dir, keep_through_index K) on a journal whose last index
// is L > K. Let S be the segment holding index K + 1 (the last segment whose
// first index is <= K + 1). The order of operations makes every crash point
// safe; the intent file is the commit point:
//   1. the intent `CUT` (K, L, the journal id, the first indexes of S and of
//      every later segment) is written, fdatasynced, renamed into place and
//      the directory fsynced. From now on the cut is finished by whoever
//      opens the journal for writing (JournalWriter::Open, or
//      CutJournalTail again), and readers refuse the journal naming the
//      file (CheckNoPendingCut);
//   2. S and every later segment are copied, byte for byte, into the side
//      journal <dir>/cut/<K+1>-<L>/ (with a START record when S does not
//      begin at 1, so it reads from S's first index), each copy fsynced,
//      then the file COPIED, the side directory and its parents fsynced.
//      The side journal therefore holds S's records before K + 1 too (they
//      stay in the journal as well): its records K+1..L are the journal's,
//      byte for byte. Without COPIED a finishing run copies again;
//   3. S is cut at the record boundary after K, from the pristine copy: the
//      group holding K and K + 1 is sealed again with its records up to K
//      (same header but for records_bytes and record_count, a new CRC32C),
//      and every byte after it is zero (the file keeps its size). Redone
//      from the copy, this step can be interrupted and repeated;
//   4. the segments after S are unlinked;
//   5. the snapshot files <dir>/snapshots/N.ows with N > K are unlinked;
//   6. the checkpoint (checkpoint.h), if it witnesses an index > K, is
//      rewritten to name the journal's new last group (removed when the
//      journal keeps no record), so that recovery does not take the cut
//      records for records lost;
//   7. the directory is fsynced and CUT is unlinked (the directory fsynced
//      again).
//
// A side journal of an earlier cut of the same range is first renamed to
// <dir>/cut/<K+1>-<L>.earlier-<n>/ (kept, never reused).
//
// The caller must not have a writer open on the journal: CutJournalTail
// takes the writer's lock (an exclusive flock on the directory) itself, and
// the journal must be one its last writer closed, or that recovery has
// opened since (no torn tail; the group holding K + 1 must verify).
#ifndef ORDERWIRE_JOURNAL_CUT_H_
#define ORDERWIRE_JOURNAL_CUT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace orderwire::journal {

inline constexpr std::string_view kCutFileName = "CUT";
inline constexpr std::string_view kCutTempFileName = "CUT.tmp";
// The side journals' parent directory in a journal directory.
inline constexpr std::string_view kCutDirName = "cut";
// In a side journal: its copy is complete.
inline constexpr std::string_view kCutCopiedFileName = "COPIED";

// The steps above, for tests that stop a cut after one of them (a crash).
enum class CutStep : std::uint8_t {
  kNone = 0,              // run to the end
  kIntentWritten,         // 1
  kTailCopied,            // 2
  kSegmentCut,            // 3
  kLaterSegmentsRemoved,  // 4
  kSnapshotsRemoved,      // 5
  kCheckpointRewritten,   // 6
  kDirectorySynced,       // 7, before CUT is unlinked
};

struct CutOptions {
  std::string directory;
  // Keep the records 1..K; move the rest out. K may be 0; in a pruned
  // journal (one that starts at F > 1) K >= F: it keeps a record.
  std::uint64_t keep_through_index = 0;
  // Tests only: return Aborted right after this step, as a crash there.
  CutStep stop_after = CutStep::kNone;
};

struct CutReport {
  bool cut = false;  // false: nothing after K (K >= L), nothing done
  // A cut left half-done (a CUT file) was finished first.
  bool finished_pending = false;
  std::uint64_t keep_through_index = 0;
  std::uint64_t last_index = 0;  // L: the journal's last index before
  std::string side_journal;      // <dir>/cut/<K+1>-<L>
  std::vector<std::string> segments_removed;
  std::vector<std::string> snapshots_removed;
  // "cut records 101..250 of /j (kept in /j/cut/101-250)".
  std::string message;
};

// Cuts as described above. Errors: InvalidArgument (K below a pruned
// journal's first index), NotFound (no journal), Unavailable (a writer holds
// the journal), FailedPrecondition (a prepared next segment is in use: open the
// journal with a writer first), DataLoss (a segment header or the group
// holding K + 1 does not verify, a CUT file that does not parse), the errno
// of any file operation (the CUT file stays: the next open finishes the
// cut). Cold: copies the segments from S on.
absl::StatusOr<CutReport> CutJournalTail(const CutOptions& options);

// For JournalWriter::Open, which holds the lock (dir_fd: the directory's
// descriptor): finishes the cut whose CUT file is in `directory`, if any
// (nullopt: none). Errors: those of CutJournalTail.
absl::StatusOr<std::optional<CutReport>> FinishPendingCut(
    const std::string& directory, int dir_fd);

// For readers: FailedPrecondition naming <directory>/CUT when a cut is
// half-done (the journal holds records being moved out), OK otherwise.
absl::Status CheckNoPendingCut(const std::string& directory);

// "<dir>/cut/<first>-<last>".
std::string SideJournalPath(const std::string& directory,
                            std::uint64_t first_index,
                            std::uint64_t last_index);

}  // namespace orderwire::journal

#endif  // ORDERWIRE_JOURNAL_CUT_H_
