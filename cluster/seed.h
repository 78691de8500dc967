// Seeding a new member's journal from a snapshot: a hot standby
// (standby.h) started on an empty directory follows the engine's stream
// from index 1, so the stream would have to hold the whole journal. Seeded
// from a primary's snapshot at index S, its directory instead holds a
// journal that starts at S + 1, and the standby starts from the snapshot
// and follows the stream from S + 1 (docs/REPLICATION.md "Seeding a new
// standby from a snapshot").
//
// A seeded journal is a pruned journal (journal/start.h) whose records
// before its first index are all in its snapshot, which RestartFromJournal
// (restart.h) already restarts from:
//   - its one segment starts at S + 1 and holds no record yet
//     (journal::WriterOptions::new_journal_first_index), pins the
//     configuration given and has the snapshot's journal_id (the
//     primary's), so that the snapshot belongs to it as it is;
//   - its snapshots/ holds the snapshot, copied byte for byte after it was
//     verified in full (CopySnapshot);
//   - its start record START says first_index S + 1. Written last: it is
//     the commit point. A seeding interrupted before it (a crash, a full
//     disk) leaves a directory that does not open as a journal at all
//     (a segment named S + 1 without START is DataLoss, naming the
//     records 1..S as missing), never one that opens wrong; empty it and
//     seed again.
//
// Refused before anything is written (CheckSeed):
//   - a directory that holds anything (FailedPrecondition naming the
//     entries): seeding makes a new member's journal; a directory with a
//     journal restarts from its own snapshots;
//   - a file that is not a valid snapshot (LoadSnapshot's errors, as
//     `orderwire snapshot inspect` reports them), or one of index 0
//     (InvalidArgument: nothing to seed);
//   - a snapshot whose configuration (the pinned part: the engine's limits
//     and max_sessions, pinned_config.h) differs from the one given
//     (FailedPrecondition naming each difference): the journal pins the
//     one given, and a restart would put it in force over the snapshot's
//     silently.
// What the snapshot cannot tell: whether it is of this engine's stream, and
// whether its records up to S are the ones the stream holds. Standby::Start
// checks what the stream can tell (it reaches S, and still holds S + 1);
// the snapshot must be a running member's (a primary's in the replicated
// mode, or a standby's: they hold only acknowledged records), not one
// written from a dead primary's journal, which may end with records the
// stream never acknowledged.
//
// Cold: reads the snapshot file twice (checked, then copied), writes one
// segment header, the copy and three small files.
#ifndef ORDERWIRE_CLUSTER_SEED_H_
#define ORDERWIRE_CLUSTER_SEED_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "journal/writer.h"
#include "state/pinned_config.h"
#include "state/snapshot.h"

namespace orderwire::cluster {

struct SeedOptions {
  // The new member's journal: its directory (missing or empty), durability
  // and segment size, as the member will open it.
  journal::WriterOptions journal;
  // The snapshot file (a primary's <journal>/snapshots/<index>.ows, or one
  // `orderwire snapshot` wrote).
  std::string snapshot;
  // The configuration the member is given (its --config).
  state::PinnedConfig given;
};

// What the snapshot holds (its header's journal_id and index); writes
// nothing. Errors: see the header comment.
absl::StatusOr<state::SnapshotInfo> CheckSeed(const SeedOptions& options);

struct SeededJournal {
  state::SnapshotInfo snapshot;   // the copy in the journal's snapshots/
  std::uint64_t first_index = 0;  // snapshot.index + 1
  std::uint64_t journal_id = 0;   // the snapshot's
  std::string report;             // one line for the start-up banner
};

// CheckSeed, then the journal (see the header comment). Errors:
// CheckSeed's; the journal writer's and the copy's (then the directory
// holds no journal that opens: the error says so).
absl::StatusOr<SeededJournal> SeedJournal(const SeedOptions& options);

}  // namespace orderwire::cluster

#endif  // ORDERWIRE_CLUSTER_SEED_H_
