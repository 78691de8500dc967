// Retention: how far a running journal may be pruned, as a pure function
// of its segments, its snapshots and the operator's policy
// (`serve --retain SEGMENTS|BYTES|DURATION`), so that it can be tested
// exhaustively and called from anywhere (the service calls it on a helper
// thread, then PruneJournal, prune.h).
//
// The rule: a segment may go when it is beyond the retention window AND
// every record in it is at or below the newest snapshot's index (a restart
// needs the snapshot and the records after it, nothing before). A journal
// without snapshots is never pruned by retention. The journal cannot tell a
// valid snapshot from a damaged file of the same name: the caller passes
// only the indexes of snapshots it has verified (the service passes the
// newest one that loads: service/retention.h), never names alone.
//
// The window, for the segments s[0..n-1] (s[n-1] the one being appended
// to, always kept):
// - SEGMENTS K: the newest K segments are kept;
// - BYTES B: the longest run of newest segments whose files total at most B
//   bytes is kept (at least the last one);
// - DURATION D: a segment is beyond the window once the segment after it
//   was created at least D ago (all its records were received before that).
// Pruning takes whole segments from the front only: it stops at the first
// segment that must stay.
#ifndef ORDERWIRE_JOURNAL_RETENTION_H_
#define ORDERWIRE_JOURNAL_RETENTION_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "journal/prune.h"

namespace orderwire::journal {

struct RetentionPolicy {
  enum class Kind : std::uint8_t { kSegments, kBytes, kDuration };
  Kind kind = Kind::kSegments;
  // Segments, bytes or nanoseconds; at least 1.
  std::uint64_t value = 0;
};

// Parses "8" (segments), "10GiB", "500MB", "65536B" (bytes: B, KB, MB, GB,
// TB, KiB, MiB, GiB, TiB) or "7d", "12h", "30m", "45s", "2w" (a duration).
// Error: InvalidArgument saying what was expected.
absl::StatusOr<RetentionPolicy> ParseRetention(std::string_view text);

// "8 segments", "10737418240 bytes", "604800 s".
std::string DescribeRetention(const RetentionPolicy& policy);

// The index to prune before (PruneOptions::before_index): the first index
// of the first segment to keep, or 0 when nothing may be pruned.
// `segments` in index order (first_index ascending), `snapshot_indexes` in
// any order, `now_ns` CLOCK_REALTIME (for DURATION). Pure; O(segments +
// snapshots).
std::uint64_t PruneBeforeIndex(std::span<const SegmentSummary> segments,
                               std::span<const std::uint64_t> snapshot_indexes,
                               const RetentionPolicy& policy,
                               std::uint64_t now_ns) noexcept;

}  // namespace orderwire::journal

#endif  // ORDERWIRE_JOURNAL_RETENTION_H_
