// Sequencer: what the service does with a datagram before its commands are
// durable. It admits the datagram's session (policy, pinning, the cap),
// checks the frames' sequences against what the session has journaled,
// decides whether the session may trade for each command's account, and
// appends the new frames to the journal verbatim (the bytes of the receive
// buffer, split where the authorization decision changes), remembering each
// journaled record in a pending ring until it is durable and applied.
//
// It decides nothing about what a command does: that is the StateMachine's,
// from the journal record alone (docs/ARCHITECTURE.md).
//
// Sequences (docs/PROTOCOL.md "Sessions and sequence numbers"): frames below
// the session's next sequence are duplicates (skipped, counted, and the
// service answers them by sending reports again); the run that starts at the
// next sequence is journaled; a frame above it is a gap: it and the rest of
// the datagram are dropped and the service answers with SequenceGap.
//
// Back-pressure: when the journal has no free buffer or the pending ring is
// full, Sequence() calls the owner's WaitForJournal(), which must make
// progress (wait for the disk and apply what became durable). The pending
// ring must hold at least one datagram's commands (kMinPending).
//
// A datagram for a session the table does not hold creates it only when the
// datagram opens it (its first frame above sequence 0 is 1) or the journal
// holds the session (JournaledSessions: after a restart, or after it gave
// its slot back; it continues at the journal's next sequence); otherwise
// nothing is kept (docs/PROTOCOL.md "A session begins with frame 1").
//
// A new feed session: after BeginNewFeedSession() (a start that accepted a
// loss), the first record journaled carries kRecordNewFeedSession
// (state/record_flags.h) on its own: its append holds that one frame, the
// rest of its run follows in another.
//
// Heartbeats (docs/CONTROLS.md): never journaled and never part of the
// run; one before the run is noted (Sequenced::heartbeat) and skipped, one
// after the run began ends it (the frames after it are dropped, as after
// a duplicate).
//
// Goodbye, liveness and cancel-on-disconnect (docs/CONTROLS.md): every
// record of a session whose policy has cancel_on_disconnect is flagged
// kRecordCancelOnDisconnect; JournalLapse() journals a lapse the owner
// decided (it has the clock).
//
// Disk full: when the journal answers kJournalFull, the frames from there on
// are not taken (the session's next sequence stays at the first of them),
// Sequenced::journal_full says so and the owner answers Busy; counted.
//
// Hot path: no allocation. The pending ring is allocated at construction.
#ifndef ORDERWIRE_SERVICE_SEQUENCER_H_
#define ORDERWIRE_SERVICE_SEQUENCER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "codec/datagram.h"
#include "codec/kind_table.h"
#include "config/service_config.h"
#include "journal/writer.h"
#include "net/udp.h"
#include "service/session_table.h"
#include "state/state_machine.h"

namespace orderwire::service {

// What Sequence() made of one datagram.
struct Sequenced {
  Admission admission = Admission::kOk;
  Session* session = nullptr;  // when admitted
  bool duplicates = false;     // frames below the next sequence were skipped
  std::uint64_t first_duplicate = 0;
  bool gap = false;  // a frame above the next sequence: SequenceGap is due
  // Admitted, but for a session the table does not hold and the datagram
  // does not open (its first frame above 0 is not 1): `session` is null,
  // nothing was kept, and `gap` says whether SequenceGap(1) is due.
  bool no_session = false;
  // A Heartbeat was seen (docs/CONTROLS.md "Heartbeats"): the owner
  // answers it with HeartbeatAck echoing `heartbeat_nonce` (the first's).
  bool heartbeat = false;
  std::uint64_t heartbeat_nonce = 0;
  std::size_t journaled = 0;    // frames appended to the journal
  bool journal_failed = false;  // the service cannot go on: stop
  bool journal_full = false;    // no room on the disk: frames from the
                                // session's next sequence on not taken
};

// The fewest pending commands the ring may hold: a whole datagram of the
// smallest command frames.
inline constexpr std::size_t kMinPending =
    (codec::kMaxDatagramSize - codec::kDatagramHeaderSize) /
    codec::kMinCommandFrameSize;

struct SequencerStats {
  std::array<std::uint64_t, kAdmissionCount> refused{};  // by Admission
  std::array<std::uint64_t, 256> journaled{};            // commands, by kind
  std::uint64_t duplicates = 0;                          // frames
  std::uint64_t gaps = 0;                                // datagrams
  std::uint64_t gap_frames_dropped = 0;
  std::uint64_t unauthorized = 0;  // commands flagged
  std::uint64_t heartbeats = 0;    // Heartbeat frames of admitted datagrams
  std::uint64_t lapses = 0;        // lapse records journaled
  // Not taken because the journal was full (kJournalFull).
  std::uint64_t journal_full_datagrams = 0;
  std::uint64_t journal_full_frames = 0;
};

class Sequencer {
 public:
  // Whoever owns the loop: called when the journal or the pending ring is
  // full; must wait for the disk and apply what became durable. Returns
  // false when the service cannot go on (the journal failed, or a record
  // was refused): the Sequencer then journals nothing more.
  class Backpressure {
   public:
    virtual bool WaitForJournal() = 0;

   protected:
    ~Backpressure() = default;
  };

  // `config`, `writer`, `owner` and `journaled` must outlive the sequencer.
  // Precondition: max_pending >= kMinPending.
  Sequencer(const config::ServiceConfig& config, std::size_t max_pending,
            journal::JournalWriter& writer, Backpressure& owner,
            const JournaledSessions& journaled);

  // Admits, checks and journals one parsed datagram from `peer`.
  Sequenced Sequence(const codec::DatagramView& datagram,
                     const net::Endpoint& peer, std::uint64_t receive_ns);

  enum class JournalOutcome : std::uint8_t { kOk, kJournalFull, kFailed };
  // Journals a lapse of session `id` (docs/CONTROLS.md "Goodbye, liveness
  // and cancel-on-disconnect"): a Goodbye of sequence 0, account 0 and
  // request 0 flagged kRecordLapse, plus kRecordCancelOnDisconnect when
  // `cancel_orders`. It does not move the session's next sequence; the
  // session need not be held. kJournalFull: no room, nothing journaled;
  // kFailed: the writer failed. Waits for the journal like Sequence().
  // Cold.
  JournalOutcome JournalLapse(std::uint32_t id, bool cancel_orders,
                              std::uint64_t receive_ns);

  // Calls `apply(const Record&)` for each pending record whose index is at
  // most `durable`, oldest first, and forgets it.
  template <typename Fn>
  void ForEachDurable(std::uint64_t durable, Fn&& apply);

  // The next record journaled begins a new feed session (the service
  // started on a journal whose recovery accepted a loss). Cold.
  void BeginNewFeedSession() noexcept { new_feed_session_ = true; }
  // A record still waits to carry kRecordNewFeedSession.
  [[nodiscard]] bool new_feed_session_pending() const noexcept {
    return new_feed_session_;
  }

  [[nodiscard]] std::size_t pending() const noexcept { return pending_size_; }
  [[nodiscard]] SessionTable& sessions() noexcept { return sessions_; }
  [[nodiscard]] const SequencerStats& stats() const noexcept { return stats_; }

 private:
  // A journaled record waiting to be durable, with a copy of its frame (the
  // receive buffer is reused by the next batch).
  struct Pending {
    std::uint64_t index;
    std::uint64_t receive_ns;
    std::uint32_t session_id;
    std::uint32_t flags;
    std::uint8_t size;
    std::array<std::byte, codec::kMaxCommandFrameSize> frame;
  };

  // Journals `frames` (whole command frames of `session`, `count` of them)
  // with `flags`, waiting when the writer has no free buffer. kJournalFull:
  // no room on the disk, nothing journaled; kFailed: the writer failed.
  // The first frame alone with kRecordNewFeedSession added when a new feed
  // session is due (BeginNewFeedSession), then the rest.
  JournalOutcome Journal(Session& session, std::span<const std::byte> frames,
                         std::size_t count, std::uint64_t receive_ns,
                         std::uint32_t flags);
  JournalOutcome Append(Session& session, std::span<const std::byte> frames,
                        std::size_t count, std::uint64_t receive_ns,
                        std::uint32_t flags);
  // Append() for session `id` without moving any session's next sequence;
  // counted in SequencerStats::journaled when they are `commands` (a lapse
  // is not).
  JournalOutcome AppendRecords(std::uint32_t id,
                               std::span<const std::byte> frames,
                               std::size_t count, std::uint64_t receive_ns,
                               std::uint32_t flags, bool commands);
  // Counts a Heartbeat and notes the datagram's first in `result`.
  void NoteHeartbeat(const codec::FrameView& frame, Sequenced& result);

  SessionTable sessions_;
  journal::JournalWriter& writer_;
  Backpressure& owner_;
  std::vector<Pending> pending_;  // ring
  std::size_t pending_head_ = 0;
  std::size_t pending_size_ = 0;
  bool new_feed_session_ = false;
  SequencerStats stats_;
};

template <typename Fn>
void Sequencer::ForEachDurable(std::uint64_t durable, Fn&& apply) {
  while (pending_size_ > 0 && pending_[pending_head_].index <= durable) {
    const Pending& p = pending_[pending_head_];
    apply(state::Record{p.index, p.receive_ns, p.session_id, p.flags,
                        std::span<const std::byte>(p.frame.data(), p.size)});
    pending_head_ =
        pending_head_ + 1 == pending_.size() ? 0 : pending_head_ + 1;
    --pending_size_;
  }
}

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_SEQUENCER_H_
