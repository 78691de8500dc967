// What the commands that apply a journal through the StateMachine share
// (`orderwire replay`, `orderwire md from-journal`): one state::StateRebuild
// set up as the service's restart does it (each segment's pinned
// configuration, --config for segments that pin none, the newest usable
// snapshot unless told otherwise, a pruned journal refused), and one way of
// ending: a journal that is not whole fails the command (exit status 1)
// unless --accept-loss, which prints every loss on standard error as
// "orderwire COMMAND: DATA LOSS ACCEPTED (--accept-loss): ..." and exits 0.
//
// Errors name the command and the journal; notes (a segment that pins a
// configuration other than --config's, a snapshot passed over) go to
// standard error, prefixed "COMMAND: ". Cold path: an offline tool; the cost
// is the rebuild's (state/rebuild.h) plus the caller's hook per record.
// Not thread-safe; one command's thread.
#ifndef ORDERWIRE_CLI_JOURNAL_APPLY_H_
#define ORDERWIRE_CLI_JOURNAL_APPLY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/service_config.h"
#include "journal/reader.h"
#include "state/rebuild.h"
#include "state/state_machine.h"

namespace orderwire::cli {

// A DataLoss error gets the way out appended: "... add --accept-loss".
// Any other status is returned as it is.
[[nodiscard]] absl::Status WithAcceptLossHint(const absl::Status& status);

// Under `accept_loss` a DataLoss error is printed on standard error
// ("orderwire COMMAND: DATA LOSS ACCEPTED (--accept-loss): ...") and the
// result is OK; otherwise the status, with the hint above.
[[nodiscard]] absl::Status AcceptedOrFailed(std::string_view command,
                                            const absl::Status& status,
                                            bool accept_loss);

// The end of a reading: every loss the reader let pass (printed as above),
// then AcceptedOrFailed of its status.
[[nodiscard]] absl::Status ReportLosses(std::string_view command,
                                        const journal::JournalReader& reader,
                                        bool accept_loss);

struct JournalApplyOptions {
  // "replay", "md from-journal": the prefix of notes and errors.
  std::string command;
  std::string directory;  // the journal's
  // The configuration of segments that pin none (--config, or the
  // defaults); with note_pinned (--config was given), each segment that
  // pins another is noted on standard error and its own is used.
  config::ServiceConfig config{};
  bool note_pinned = false;
  bool accept_loss = false;
  // Start from the newest snapshot that loads (and that snapshot_usable
  // accepts, when given); false: from the journal's start.
  bool use_snapshots = true;
  std::function<bool(const state::StateMachine&)> snapshot_usable{};
  // The error for a journal pruned past every usable snapshot (its first
  // available index given); null: replay's, naming the index and where
  // snapshots are.
  std::function<absl::Status(std::uint64_t first_available)> pruned_error{};
  // After each record applied: OK and true to go on, OK and false to stop
  // there (what the command wants is done), an error to fail with it.
  std::function<absl::StatusOr<bool>(const journal::Record& record,
                                     const state::StateMachine& machine,
                                     const journal::JournalReader& reader)>
      on_applied{};
};

class JournalApplication {
 public:
  // The rebuild's hooks point at this object: it neither moves nor copies.
  explicit JournalApplication(JournalApplyOptions options);
  JournalApplication(const JournalApplication&) = delete;
  JournalApplication& operator=(const JournalApplication&) = delete;

  // Finds the starting state (a snapshot or the journal's start) and opens
  // the reader of the records after it; prints each snapshot passed over.
  // Returns true to go on to ApplyTail(), false when the command ends here
  // successfully (the journal could not be opened, and the loss was
  // accepted and printed). Errors: the rebuild's (state/rebuild.h),
  // pruned_error, a journal that cannot be opened (DataLoss with the
  // --accept-loss hint).
  [[nodiscard]] absl::StatusOr<bool> Begin();
  // Applies every record after the starting state, calling on_applied,
  // up to the journal's end, damage (state().end is then kError: Finish()
  // reports it), or on_applied's stop. Errors: on_applied's, a
  // configuration that cannot be followed, a record the StateMachine
  // refuses.
  [[nodiscard]] absl::Status ApplyTail();
  // DataLoss when the snapshot started from holds records past the
  // journal's clean end (they are gone).
  [[nodiscard]] absl::Status CheckSnapshotWithinJournal() const;
  // ReportLosses for the reader of the tail.
  [[nodiscard]] absl::Status Finish() const;

  // Whether on_applied stopped the application before the journal's end.
  [[nodiscard]] bool stopped() const noexcept { return stopped_; }
  // The index of the snapshot started from, 0 for the journal's start.
  [[nodiscard]] std::uint64_t snapshot_index() const noexcept;
  [[nodiscard]] state::RebuiltState& state() { return rebuild_.state(); }
  [[nodiscard]] const JournalApplyOptions& options() const noexcept {
    return options_;
  }

 private:
  static state::RebuildOptions RebuildOptionsOf(
      const JournalApplyOptions& options, JournalApplication& self);

  JournalApplyOptions options_;
  std::size_t segments_noted_ = 0;
  bool stopped_ = false;
  state::StateRebuild rebuild_;
};

}  // namespace orderwire::cli

#endif  // ORDERWIRE_CLI_JOURNAL_APPLY_H_
