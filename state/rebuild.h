// Rebuilding the state of a journal: the newest valid snapshot at or below
// an index, then the journal's records after it through the StateMachine.
// The one place that does it: the service's restart (Service::Start),
// `orderwire replay` and `orderwire snapshot` all go through StateRebuild,
// so they pick the same snapshot, refuse a pruned journal alike, and follow
// each segment's pinned configuration the same way.
//
// The steps, in order:
//   1. the newest snapshot with index <= up_to_index that loads (every
//      checksum and cross-reference verified) and belongs to the journal;
//      each one skipped is described ("snapshot FILE: ...; using the
//      previous one") and the next older tried; none (or use_snapshots
//      false): a new StateMachine;
//   2. the journal's first available index (a pruned journal's START): if
//      the records after the starting state were pruned, the state cannot be
//      rebuilt, and the caller's pruned_error says so;
//   3. a reader opened at the index after the snapshot
//      (ReaderOptions::from_index: a binary search, nothing before it read);
//   4. every record from there up to up_to_index applied, each segment's
//      pinned configuration followed (FollowSegments; the snapshot brings
//      the configuration in force at its index).
// Begin() does 1-3, ApplyTail() does 4, so that a caller can tell a journal
// that cannot be opened from a record that cannot be applied (`replay
// --accept-loss` accepts only the former). RebuildState() does both.
// ApplyNext() does 4 one record at a time, for a caller that paces the work
// or stops where it has what it needs (the feed's regenerator,
// service/feed_regenerator.h); ApplyTail() is ApplyNext() until the end.
//
// Cold path: a restart or an offline tool; per record one Apply, one
// comparison for a new segment, and the caller's hook if it gave one.
#ifndef ORDERWIRE_STATE_REBUILD_H_
#define ORDERWIRE_STATE_REBUILD_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "journal/reader.h"
#include "state/pinned_config.h"
#include "state/snapshot.h"
#include "state/state_machine.h"

namespace orderwire::state {

struct RebuildOptions {
  std::string directory;  // the journal's
  // accept_loss is passed on; from_index is set by the rebuild.
  journal::ReaderOptions reader_options{};
  // Start from the newest valid snapshot (false: the journal's start)...
  bool use_snapshots = true;
  // ... whose state this accepts, when given (others are passed over).
  std::function<bool(const StateMachine&)> snapshot_usable{};
  // The last record applied (and the newest snapshot considered).
  std::uint64_t up_to_index = std::numeric_limits<std::uint64_t>::max();
  // The journal the snapshots must belong to; 0: the id in the journal's
  // first segment header, read when there are snapshots to check.
  std::uint64_t journal_id = 0;
  // The machine without a snapshot, and the configuration of segments that
  // pin none.
  StateMachineOptions machine_options{};
  PinnedConfig unpinned{};
  // A snapshot directory that cannot be listed: an error (false), or
  // described in `skipped` and the whole journal replayed (true: the
  // service, for which snapshots only shorten a restart).
  bool unreadable_snapshots_replay_all = false;
  // The error for a journal whose records after the starting state were
  // pruned (its first available index given). Null: a FailedPrecondition
  // naming the directory and the index.
  std::function<absl::Status(std::uint64_t first_available)> pruned_error{};

  // Hooks, each optional. A status other than OK stops the rebuild with it.
  // Before the configuration of segments not seen yet is followed:
  // reader.segments()[first_unseen..] are new (a note for the operator).
  std::function<absl::Status(const journal::JournalReader& reader,
                             std::size_t first_unseen)>
      on_new_segments{};
  // After each record was applied (its outputs are machine.outputs(); the
  // reader's bytes_done() is the progress).
  std::function<absl::Status(const journal::Record& record,
                             const StateMachine& machine,
                             const journal::JournalReader& reader)>
      on_applied{};
};

// Where the rebuild stands; filled by Begin() and ApplyTail().
struct RebuiltState {
  std::unique_ptr<StateMachine> machine;
  // The snapshot it started from (nullopt: the journal's start), and how
  // long loading it took.
  std::optional<SnapshotInfo> snapshot;
  double snapshot_load_seconds = 0;
  // The snapshots skipped (damaged, foreign, unreadable), one line each.
  std::vector<std::string> skipped;
  // The journal's first available index (1 unless pruned), and its id
  // (0 when nothing needed it: no snapshot and no record read).
  std::uint64_t first_available_index = 1;
  std::uint64_t journal_id = 0;
  // The first index applied after the starting state (snapshot index + 1).
  std::uint64_t from_index = 1;
  // Records applied after the starting state.
  std::uint64_t replayed = 0;
  // Configuration changes met in the tail ("from index N (segment S): ...").
  std::vector<std::string> reconfigurations;
  // The reader of the tail: null when from_index > up_to_index (nothing to
  // read). After ApplyTail its segments(), last_index(), status() and
  // accepted_losses() describe what was read.
  std::unique_ptr<journal::JournalReader> reader;
  // How reading ended: kRecord when up_to_index was applied (nothing after
  // it read), kEnd at the journal's end, kError at damage (reader->status()
  // says what and where: the caller decides whether that fails it).
  journal::ReadResult end = journal::ReadResult::kEnd;
};

class StateRebuild {
 public:
  explicit StateRebuild(RebuildOptions options)
      : options_(std::move(options)) {}

  // Steps 1-3. Errors: the snapshot directory's (unless
  // unreadable_snapshots_replay_all), reading the journal id, pruned_error,
  // the reader's Open (an index before the start is OutOfRange).
  absl::Status Begin();
  // Step 4, after Begin(). Errors: the hooks', FollowSegments', Apply's,
  // and DataLoss if the tail does not start at from_index. Damage in the
  // journal is not an error here: state().end is kError.
  absl::Status ApplyTail();
  // Step 4's next record, after Begin(): true when one was applied (its
  // outputs and feed are the machine's), false when the tail is over
  // (state().end: kRecord at up_to_index, kEnd, kError). Errors: as
  // ApplyTail(); after one, no further call.
  absl::StatusOr<bool> ApplyNext();

  [[nodiscard]] RebuiltState& state() { return state_; }
  [[nodiscard]] const RebuiltState& state() const { return state_; }
  [[nodiscard]] const RebuildOptions& options() const { return options_; }

 private:
  // The tail is over: the journal id from the reader if still unknown.
  void EndTail();

  RebuildOptions options_;
  RebuiltState state_;
  // ApplyNext()'s place: the segments whose configuration is followed, the
  // next index wanted, and whether the tail is over.
  std::size_t segments_seen_ = 0;
  std::uint64_t next_index_ = 0;
  bool tail_over_ = false;
};

// Begin() then ApplyTail(): the state at up_to_index (or at the journal's
// end, or at damage: see RebuiltState::end).
absl::StatusOr<RebuiltState> RebuildState(RebuildOptions options);

// The id of the journal in `directory` (every segment header carries it).
// Errors: JournalReader::Open's, and its reading error if the first
// segment's header cannot be read.
absl::StatusOr<std::uint64_t> JournalIdOf(
    const std::string& directory, const journal::ReaderOptions& options);

}  // namespace orderwire::state

#endif  // ORDERWIRE_STATE_REBUILD_H_
