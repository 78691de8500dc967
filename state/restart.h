// Restarting from a journal: opening it for appending (recovery: a torn
// tail cut off) and rebuilding the state it holds, as every process that
// appends to a journal and applies it must. Service::Start (service.h) and
// the standby (standby.h) both start here, so a standby's state after its
// restart is built exactly as a primary's is.
//
// The steps, in order:
//   1. journal::JournalWriter::Open (a new journal pins `given` in its first
//      segment's header);
//   2. if the journal holds records: the newest valid snapshot, then every
//      record after it through StateMachine::Apply (rebuild.h: each
//      segment's pinned configuration followed), checked to end exactly at
//      the journal's last index;
//   3. the records before both the checkpoint's group (where recovery
//      began reading) and the snapshot (where the replay began) verified
//      as `replay --verify` verifies them (journal/verify.h): damage
//      anywhere in the retained journal refuses the start, as it does
//      without a snapshot;
//   4. the configuration: the one the journal's last segment pins is put in
//      force; a `given` that differs from it is refused (each difference
//      named) unless `reconfigure`, which pins `given` from the next index
//      in a new segment. A journal that pins none pins `given` from the next
//      index.
// What each step found or did is written, one line each, to `report` (the
// start-up banner); what an operator must see even without the banner (a
// torn tail cut off, accepted loss, a damaged snapshot, a file system that
// cannot hold two segments) also to `warning`.
//
// Cold: reads the journal's tail (from the newest snapshot), writes at most
// a checkpoint and a segment header.
#ifndef ORDERWIRE_STATE_RESTART_H_
#define ORDERWIRE_STATE_RESTART_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "journal/writer.h"
#include "state/pinned_config.h"
#include "state/state_machine.h"

namespace orderwire::state {

struct RestartOptions {
  // The journal's directory, durability, ...; `metadata` is set from
  // `given`.
  journal::WriterOptions journal;
  // The machine without a snapshot (its engine and max_sessions are
  // `given`'s).
  StateMachineOptions machine;
  // The configuration given (pinned_config.h).
  PinnedConfig given;
  // Start from the newest valid snapshot (false: replay the whole journal).
  bool use_snapshots = true;
  // Accept a `given` that differs from the journal's (see step 4).
  bool reconfigure = false;
};

struct RestartedJournal {
  std::unique_ptr<journal::JournalWriter> writer;
  // The state at writer->last_index(), the journal's configuration in
  // force.
  std::unique_ptr<StateMachine> machine;
  // Records applied after the starting snapshot (or from the start).
  std::uint64_t replayed = 0;
  // The snapshot's index; 0: none.
  std::uint64_t started_from_snapshot = 0;
  std::string report;   // lines for the start-up banner (no trailing \n)
  std::string warning;  // empty, or what must be shown even with --quiet
};

// Steps 1-4. Errors: JournalWriter::Open's (DataLoss names the file and
// offset), step 3's DataLoss (naming the file, offset and records), the
// rebuild's (rebuild.h; a pruned journal without a snapshot
// that reaches its start is a FailedPrecondition saying so), DataLoss when
// the replay does not end at the journal's last index, FailedPrecondition
// for a configuration refused (step 4) or one the state cannot take.
absl::StatusOr<RestartedJournal> RestartFromJournal(RestartOptions options);

}  // namespace orderwire::state

#endif  // ORDERWIRE_STATE_RESTART_H_
