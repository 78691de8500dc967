// FeedRegenerator: the feed's messages made again from the journal, for a
// retransmission older than the request server's ring (docs/MARKETDATA.md
// "Retransmission": the retained feed below the ring).
//
// The feed is a function of the journal (StateMachine::feed()), so messages
// S to S + N - 1 are made again by a private StateMachine started from the
// newest snapshot file whose next feed sequence is at most S (or from the
// journal's first record), through the records after it (state/rebuild.h:
// the same snapshot checks and pinned configurations as a restart), until
// its next feed sequence passes S + N - 1. The bytes are the live feed's by
// construction. The caller asks only for messages the live feed already
// sent: their records are durable, so the reader never goes past the
// answer point (it stops after the record that made the last one wanted).
//
// The cursor: the machine stays where the last request ended, so the next
// one from there on (a subscriber catching up, S = the previous S + N)
// continues without loading a snapshot again; one from before the last
// record applied starts again from a snapshot.
//
// Pacing: Work() does at most `records_per_pass` records (or one snapshot
// load and the reader's opening) and returns, so the caller's thread serves
// other requests between passes. One request at a time (busy()).
//
// F, the first sequence regenerable (FirstRegenerable): 1 for a journal
// that was never pruned; for a pruned one, the next feed sequence of the
// oldest snapshot of this journal that loads and from which the journal
// goes on (index + 1 >= its first index); none without such a snapshot.
// Recomputed at most once a second (a START file and a directory read; each
// snapshot considered is loaded once, its feed sequence remembered).
//
// Errors: a journal that cannot be opened or read (damaged, pruned past the
// cursor or the snapshot, an I/O error), a record that does not apply:
// Work() returns kFailed and status() names it; the cursor is dropped.
// A reader that ends before the messages wanted (the journal rolled to a
// segment created after the reader was opened) is opened again once, from
// the last message made.
//
// Memory: while positioned, one StateMachine (the engine's pools for
// max_live_orders, one report per session kept) and the journal's segments
// mapped; Release() frees both. The messages of one request (at most
// 1024 x 49 bytes). Threading: one thread (the request server's).
#ifndef ORDERWIRE_SERVICE_FEED_REGENERATOR_H_
#define ORDERWIRE_SERVICE_FEED_REGENERATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "state/pinned_config.h"
#include "state/rebuild.h"
#include "state/state_machine.h"

namespace orderwire::service {

// Records one Work() call applies, at most.
inline constexpr std::size_t kFeedRegenerationRecordsPerPass = 4096;

struct FeedRegeneratorOptions {
  std::string journal_dir;
  std::uint64_t journal_id = 0;  // the snapshots must belong to it
  // The machine without a snapshot, and the configuration of segments that
  // pin none (as the service's restart takes them).
  state::StateMachineOptions machine;
  state::PinnedConfig unpinned;
  std::size_t records_per_pass = kFeedRegenerationRecordsPerPass;
};

// What the regenerator did (plain: its thread's own).
struct FeedRegenerationCounters {
  std::uint64_t requests = 0;   // Begin() calls
  std::uint64_t starts = 0;     // from a snapshot or the journal start
  std::uint64_t continued = 0;  // went on from the cursor
  std::uint64_t snapshots_loaded = 0;
  std::uint64_t records_applied = 0;
  std::uint64_t messages = 0;  // made for requests
  std::uint64_t failures = 0;  // kFailed, and F unreadable
};

class FeedRegenerator {
 public:
  explicit FeedRegenerator(FeedRegeneratorOptions options);
  ~FeedRegenerator();
  FeedRegenerator(const FeedRegenerator&) = delete;
  FeedRegenerator& operator=(const FeedRegenerator&) = delete;

  // F (above): 0 when nothing is regenerable (a pruned journal without a
  // usable snapshot). Errors: the journal's start record or snapshot
  // directory cannot be read (counted as a failure). `now_ns`: monotonic.
  absl::StatusOr<std::uint64_t> FirstRegenerable(std::int64_t now_ns);

  // Starts making messages [first, first + count). Preconditions: !busy(),
  // count >= 1, and the live feed sent them all.
  void Begin(std::uint64_t first, std::size_t count);
  [[nodiscard]] bool busy() const noexcept { return busy_; }

  enum class Progress : std::uint8_t { kWorking, kDone, kFailed };
  // One pass (above). kDone: blocks() holds the messages; kFailed:
  // status() says why. Either ends the request (busy() false).
  Progress Work();
  // The messages made, as blocks (u16 length, then the message), the
  // first being Begin's `first`. Valid until the next Begin or Release.
  [[nodiscard]] std::span<const std::byte> blocks() const noexcept {
    return blocks_;
  }
  [[nodiscard]] const absl::Status& status() const noexcept { return status_; }

  // Whether a machine is kept (the cursor).
  [[nodiscard]] bool positioned() const noexcept { return rebuild_ != nullptr; }
  // Drops the cursor: the machine and the reader. Not while busy().
  void Release() noexcept;

  [[nodiscard]] const FeedRegenerationCounters& counters() const noexcept {
    return counters_;
  }

 private:
  // A new rebuild from the newest snapshot before next_wanted_.
  absl::Status StartRebuild();
  // Appends the last record's messages from next_wanted_ below end_.
  void Collect(const state::StateMachine& machine);
  Progress Fail(absl::Status status);

  FeedRegeneratorOptions options_;
  std::unique_ptr<state::StateRebuild> rebuild_;
  std::vector<std::byte> blocks_;
  absl::Status status_;
  bool busy_ = false;
  bool reopened_ = false;          // the reader was opened again this time
  std::uint64_t next_wanted_ = 0;  // the next message to collect
  std::uint64_t end_ = 0;          // after the last one wanted
  // FirstRegenerable's cache, and each snapshot's next feed sequence by
  // index (0: it does not load).
  std::int64_t next_check_ns_ = 0;
  bool checked_ = false;
  absl::StatusOr<std::uint64_t> first_ = std::uint64_t{0};
  std::map<std::uint64_t, std::uint64_t> snapshot_feed_;
  FeedRegenerationCounters counters_;
};

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_FEED_REGENERATOR_H_
