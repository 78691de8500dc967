// The service's sequencer; see sequencer.h.
#include "service/sequencer.h"

#include "codec/command.h"
#include "codec/frame.h"
#include "state/record_flags.h"

namespace orderwire::service {

using state::kRecordUnauthorized;

Sequencer::Sequencer(const config::ServiceConfig& config,
                     std::size_t max_pending, journal::JournalWriter& writer,
                     Backpressure& owner, const JournaledSessions& journaled)
    : sessions_(config, &journaled),
      writer_(writer),
      owner_(owner),
      pending_(max_pending) {}

namespace {

// Whether `datagram` would open a new session: its first frame with a
// sequence above 0 has sequence 1 (frames with sequence 0 are duplicates;
// a Heartbeat's sequence means nothing). Usually decided by the first
// frame.
bool OpensSession(const codec::DatagramView& datagram) {
  for (const codec::FrameView frame : datagram) {
    if (frame.kind() == codec::Kind::kHeartbeat) continue;
    if (frame.sequence() != 0) return frame.sequence() == 1;
  }
  return false;
}

}  // namespace

Sequenced Sequencer::Sequence(const codec::DatagramView& datagram,
                              const net::Endpoint& peer,
                              std::uint64_t receive_ns) {
  Sequenced result;
  Session* session = nullptr;
  result.admission =
      sessions_.Admit(datagram, peer, OpensSession(datagram), &session);
  if (result.admission != Admission::kOk) {
    ++stats_.refused[static_cast<std::size_t>(result.admission)];
    return result;
  }
  if (session == nullptr) {
    // A session not held, and this datagram does not open it: its frames
    // are duplicates (sequence 0) up to a gap, if any. Nothing is kept.
    result.no_session = true;
    std::size_t skipped = 0;  // duplicates and Heartbeats
    for (const codec::FrameView frame : datagram) {
      if (frame.kind() == codec::Kind::kHeartbeat) {
        NoteHeartbeat(frame, result);
      } else if (frame.sequence() != 0) {
        break;
      } else {
        ++stats_.duplicates;
      }
      ++skipped;
    }
    if (skipped < datagram.frame_count()) {
      result.gap = true;
      ++stats_.gaps;
      stats_.gap_frames_dropped += datagram.frame_count() - skipped;
    }
    return result;
  }
  result.session = session;

  // Frames below the next sequence are duplicates (skipped); the run that
  // starts at the next sequence is journaled; it ends at the first frame
  // that does not continue it. A frame above the next sequence is a gap: it
  // and the rest of the datagram are dropped.
  const std::byte* const frames_begin = datagram.frame_bytes().data();
  std::size_t frames_seen = 0;
  std::size_t run_count = 0;
  std::size_t run_begin = 0;
  std::size_t run_end = 0;
  std::uint64_t expected = session->next_expected;
  for (auto it = datagram.begin(); it != datagram.end(); ++it) {
    const codec::FrameView frame = *it;
    if (frame.kind() == codec::Kind::kHeartbeat) [[unlikely]] {
      if (run_count > 0) break;  // ends the run, as a duplicate does
      NoteHeartbeat(frame, result);
      ++frames_seen;
      continue;
    }
    const std::uint64_t sequence = frame.sequence();
    if (sequence < expected) {
      ++stats_.duplicates;
      if (!result.duplicates) result.first_duplicate = sequence;
      result.duplicates = true;
      if (run_count > 0) break;  // out of order after the run: stop there
      ++frames_seen;
      continue;
    }
    if (sequence != expected) {
      result.gap = true;
      break;
    }
    if (run_count == 0) run_begin = it.OffsetFrom(frames_begin);
    run_end = it.OffsetFrom(frames_begin) + frame.bytes().size();
    ++run_count;
    ++frames_seen;
    ++expected;
  }
  if (result.gap) {
    ++stats_.gaps;
    stats_.gap_frames_dropped += datagram.frame_count() - frames_seen;
  }
  if (run_count == 0) return result;

  // Journal the run verbatim, split where the authorization decision
  // changes (one record flag per append).
  const std::span<const std::byte> run =
      datagram.frame_bytes().subspan(run_begin, run_end - run_begin);
  const config::AccountSet& accounts = session->policy->accounts;
  const std::uint32_t session_flags = session->policy->cancel_on_disconnect
                                          ? state::kRecordCancelOnDisconnect
                                          : 0;
  std::size_t offset = 0;
  std::size_t group_begin = 0;
  std::size_t group_count = 0;
  bool group_allowed = true;
  codec::Command command{};
  // The outcome of one append; on anything but kOk the rest of the run is
  // not taken.
  const auto taken = [&](JournalOutcome outcome, std::size_t count) {
    if (outcome == JournalOutcome::kOk) {
      result.journaled += count;
      return true;
    }
    if (outcome == JournalOutcome::kJournalFull) {
      result.journal_full = true;
      ++stats_.journal_full_datagrams;
      stats_.journal_full_frames += run_count - result.journaled;
    } else {
      result.journal_failed = true;
    }
    return false;
  };
  while (offset < run.size()) {
    const auto size = *codec::DecodeCommand(run.subspan(offset), command);
    // AccountSet holds the configuration's plain account numbers.
    const bool allowed = accounts.Contains(command.account_id.value());
    if (group_count > 0 && allowed != group_allowed) {
      if (!taken(Journal(
                     *session, run.subspan(group_begin, offset - group_begin),
                     group_count, receive_ns,
                     session_flags | (group_allowed ? 0 : kRecordUnauthorized)),
                 group_count)) {
        return result;
      }
      group_begin = offset;
      group_count = 0;
    }
    group_allowed = allowed;
    ++group_count;
    offset += size;
  }
  (void)taken(
      Journal(*session, run.subspan(group_begin), group_count, receive_ns,
              session_flags | (group_allowed ? 0 : kRecordUnauthorized)),
      group_count);
  return result;
}

void Sequencer::NoteHeartbeat(const codec::FrameView& frame,
                              Sequenced& result) {
  ++stats_.heartbeats;
  if (result.heartbeat) return;  // one answer a datagram
  result.heartbeat = true;
  result.heartbeat_nonce = codec::View<codec::Heartbeat>::FromFrame(frame)
                               ->Get<&codec::Heartbeat::nonce>();
}

Sequencer::JournalOutcome Sequencer::Journal(Session& session,
                                             std::span<const std::byte> frames,
                                             std::size_t count,
                                             std::uint64_t receive_ns,
                                             std::uint32_t flags) {
  if (!new_feed_session_ || count == 0) [[likely]] {
    return Append(session, frames, count, receive_ns, flags);
  }
  const auto kind =
      codec::LoadLE<std::uint8_t>(frames.data() + codec::kKindOffset);
  const std::size_t first = codec::kKindTable[kind].frame_size;
  const JournalOutcome outcome =
      Append(session, frames.first(first), 1, receive_ns,
             flags | state::kRecordNewFeedSession);
  if (outcome != JournalOutcome::kOk) return outcome;
  new_feed_session_ = false;
  if (count == 1) return outcome;
  return Append(session, frames.subspan(first), count - 1, receive_ns, flags);
}

Sequencer::JournalOutcome Sequencer::JournalLapse(std::uint32_t id,
                                                  bool cancel_orders,
                                                  std::uint64_t receive_ns) {
  std::array<std::byte, codec::kFrameSize<codec::Goodbye>> frame{};
  (void)codec::EncodeCommand(codec::Command::From(0, codec::Goodbye{}), frame);
  std::uint32_t flags = state::kRecordLapse;
  if (cancel_orders) flags |= state::kRecordCancelOnDisconnect;
  if (new_feed_session_) flags |= state::kRecordNewFeedSession;
  const JournalOutcome outcome =
      AppendRecords(id, frame, 1, receive_ns, flags, /*commands=*/false);
  if (outcome == JournalOutcome::kOk) {
    new_feed_session_ = false;
    ++stats_.lapses;
  }
  return outcome;
}

Sequencer::JournalOutcome Sequencer::Append(Session& session,
                                            std::span<const std::byte> frames,
                                            std::size_t count,
                                            std::uint64_t receive_ns,
                                            std::uint32_t flags) {
  const JournalOutcome outcome =
      AppendRecords(session.id, frames, count, receive_ns, flags,
                    /*commands=*/true);
  if (outcome == JournalOutcome::kOk) session.next_expected += count;
  return outcome;
}

Sequencer::JournalOutcome Sequencer::AppendRecords(
    std::uint32_t id, std::span<const std::byte> frames, std::size_t count,
    std::uint64_t receive_ns, std::uint32_t flags, bool commands) {
  // Room in the pending ring first (back-pressure on the apply side).
  while (pending_size_ + count > pending_.size()) {
    if (!owner_.WaitForJournal()) return JournalOutcome::kFailed;
  }
  while (true) {
    const journal::AppendStatus status =
        writer_.Append(frames, id, receive_ns, flags);
    if (status == journal::AppendStatus::kOk) break;
    if (status == journal::AppendStatus::kJournalFull) {
      return JournalOutcome::kJournalFull;
    }
    if (status != journal::AppendStatus::kFull) return JournalOutcome::kFailed;
    // Back-pressure on the disk side.
    if (!owner_.WaitForJournal()) return JournalOutcome::kFailed;
  }
  if ((flags & state::kRecordUnauthorized) != 0) stats_.unauthorized += count;
  std::uint64_t index = writer_.last_index() - count + 1;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t tail = pending_head_ + pending_size_;
    if (tail >= pending_.size()) tail -= pending_.size();
    Pending& p = pending_[tail];
    const auto kind = codec::LoadLE<std::uint8_t>(frames.data() + offset +
                                                  codec::kKindOffset);
    const std::size_t size = codec::kKindTable[kind].frame_size;
    if (commands) ++stats_.journaled[kind];
    p.index = index++;
    p.receive_ns = receive_ns;
    p.session_id = id;
    p.flags = flags;
    p.size = static_cast<std::uint8_t>(size);
    std::memcpy(p.frame.data(), frames.data() + offset, size);
    offset += size;
    ++pending_size_;
  }
  return JournalOutcome::kOk;
}

}  // namespace orderwire::service
