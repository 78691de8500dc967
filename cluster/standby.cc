// The hot standby; see standby.h.
#include "cluster/standby.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/clock.h"
#include "journal/cut.h"
#include "journal/reader.h"
#include "journal/record.h"
#include "journal/start.h"
#include "replication/cluster_status.h"
#include "replication/journal_stream.h"
#include "replication/nats_error.h"
#include "replication/stream_follower.h"
#include "replication/stream_position.h"
#include "replication/stream_reader.h"
#include "state/pinned_config.h"
#include "state/restart.h"
#include "state/snapshot.h"

namespace orderwire::cluster {
namespace {

using state::PinnedConfigOf;
using state::Record;
using state::RestartedJournal;
using state::RestartFromJournal;
using state::SnapshotInfo;
using state::StateMachineOptions;
using state::WriteSnapshot;

using replication::GroupMessage;
using replication::GroupMessageKind;

// While the local disk is too full for the next segment, appending is
// tried again this often (the writer itself retries its preparation at most
// every WriterOptions::no_space_retry_ms).
constexpr std::chrono::milliseconds kJournalFullRetry{10};
// At most this many messages appended and not yet applied (each holds its
// bytes until its records are durable): beyond it, Step waits for the disk.
constexpr std::size_t kMaxPendingMessages = 256;
// A follower that cannot be opened again is tried again after this, doubled
// after each failure up to kMaxReopenBackoff (the waits of every NATS retry).
constexpr std::chrono::milliseconds kFirstReopenBackoff =
    replication::kFirstTransientRetryWait;
constexpr std::chrono::milliseconds kMaxReopenBackoff =
    replication::kMaxTransientRetryWait;

// Bounds each request of the start-up's reads of the stream (its position,
// its first and last messages, the rejoin check's).
std::chrono::milliseconds StreamRequestTimeout(const StandbyOptions& o) {
  return std::min<std::chrono::milliseconds>(o.connect_timeout,
                                             std::chrono::seconds(5));
}

bool SameRecord(const journal::Record& a, const journal::Record& b) {
  const std::span<const std::byte> fa = a.frame.bytes();
  const std::span<const std::byte> fb = b.frame.bytes();
  return a.index == b.index && a.receive_ns == b.receive_ns &&
         a.session_id == b.session_id && a.flags == b.flags &&
         fa.size() == fb.size() &&
         std::memcmp(fa.data(), fb.data(), fa.size()) == 0;
}

// A record's fields and frame as one byte string, for comparing a local
// record with the stream's.
std::vector<std::byte> RecordBytes(std::uint64_t index,
                                   std::uint64_t receive_ns,
                                   std::uint32_t session_id,
                                   std::uint32_t flags,
                                   std::span<const std::byte> frame) {
  std::vector<std::byte> out(journal::kRecordHeaderSize + frame.size());
  journal::EncodeRecord(out.data(), journal::kRecordIndexSize, index,
                        receive_ns, session_id, flags, frame.data(),
                        frame.size());
  return out;
}

// What a rejoin cuts: the local records first..last, replaced on the
// stream from `first` on by a primary of `epoch`.
struct RejoinCut {
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  std::uint64_t epoch = 0;
};

std::string Describe(const journal::Record& r) {
  return absl::StrFormat(
      "index %d, session %d, receive_ns %d, flags 0x%x, %d "
      "frame bytes",
      r.index, r.session_id, r.receive_ns, r.flags, r.frame.bytes().size());
}

// The local record `index` (the writer has it durable: it recovered it),
// as RecordBytes. DataLoss when the local journal does not yield it.
absl::StatusOr<std::vector<std::byte>> LocalRecordBytes(const StandbyOptions& o,
                                                        std::uint64_t index) {
  absl::StatusOr<std::unique_ptr<journal::JournalReader>> r =
      journal::JournalReader::Open(o.journal.directory,
                                   journal::ReaderOptions{.from_index = index});
  if (!r.ok()) return r.status();
  journal::Record record;
  if ((*r)->Next(record) != journal::ReadResult::kRecord ||
      record.index != index) {
    return absl::DataLossError(
        absl::StrFormat("the local journal %s does not yield its record %d: %s",
                        o.journal.directory, index, (*r)->status().message()));
  }
  return RecordBytes(record.index, record.receive_ns, record.session_id,
                     record.flags, record.frame.bytes());
}

// Whether the stream holds the local record `index`, identical. Errors:
// the stream's (NotFound: no stream), LocalRecordBytes'.
absl::StatusOr<bool> StreamAgrees(const StandbyOptions& o,
                                  replication::StreamReader& reader,
                                  std::uint64_t index) {
  absl::StatusOr<std::optional<replication::StreamRecord>> theirs =
      reader.FindRecord(index);
  if (!theirs.ok()) return theirs.status();
  if (!theirs->has_value()) return false;
  absl::StatusOr<std::vector<std::byte>> ours = LocalRecordBytes(o, index);
  if (!ours.ok()) return ours.status();
  const replication::StreamRecord& t = **theirs;
  return *ours ==
         RecordBytes(t.index, t.receive_ns, t.session_id, t.flags, t.frame);
}

// The first local index in first..last the stream does not agree with,
// given that it does not agree with `last`: a binary search (the two
// journals agree on a prefix, then part).
absl::StatusOr<std::uint64_t> FirstDisagreement(
    const StandbyOptions& o, replication::StreamReader& reader,
    std::uint64_t first, std::uint64_t last) {
  std::uint64_t lo = first;
  std::uint64_t hi = last;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    absl::StatusOr<bool> same = StreamAgrees(o, reader, mid);
    if (!same.ok()) return same.status();
    if (*same) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Whether the stream ends before `diverge`: it is empty, or its last
// message (a marker: its next index) is before it. No primary went on
// from there yet (or a journal was seeded ahead of an empty stream).
absl::StatusOr<bool> StreamEndsBefore(replication::StreamReader& reader,
                                      std::uint64_t diverge) {
  absl::StatusOr<std::optional<replication::StreamMessage>> end =
      reader.ReadLast();
  if (!end.ok()) return end.status();
  if (!end->has_value()) return true;
  const replication::GroupMessage& m = (*end)->message;
  const bool marker = m.kind == replication::GroupMessageKind::kEpochMarker;
  return marker ? m.first_index < diverge : m.last_index() < diverge;
}

// Where the local journal (first_local..last) and a stream that goes on
// past it part, at `diverge`: the cut, when the stream's record
// diverge - 1 ends its message and the next message is the epoch marker of
// a newer epoch taking over at `diverge`; nullopt when the stream ends
// right after that record (no primary took over yet). Any other parting:
// DataLoss naming `diverge` (nothing is cut).
absl::StatusOr<std::optional<RejoinCut>> TakeoverAtDivergence(
    const StandbyOptions& o, replication::StreamReader& reader,
    std::uint64_t first_local, std::uint64_t diverge, std::uint64_t last) {
  const auto refuse = [&](std::string_view why) {
    return absl::DataLossError(absl::StrFormat(
        "the local journal %s diverges from stream %s at index %d (its last "
        "index is %d), and not where a new primary took over: %s. Nothing is "
        "cut; look at both before going on",
        o.journal.directory, o.engine_name, diverge, last, why));
  };
  if (diverge == first_local) {
    return refuse("the stream agrees with none of the local records");
  }
  absl::StatusOr<std::optional<replication::StreamRecord>> before =
      reader.FindRecord(diverge - 1);
  if (!before.ok()) return before.status();
  if (!before->has_value()) return refuse("the stream lost the index before");
  const replication::StreamRecord& agreed = **before;
  if (!agreed.last_in_message) {
    return refuse(absl::StrFormat(
        "index %d is not the last record of its stream message (sequence "
        "%d): the parting is inside a message",
        diverge - 1, agreed.sequence));
  }
  absl::StatusOr<replication::StreamMessage> next =
      reader.Read(agreed.sequence + 1);
  if (absl::IsNotFound(next.status())) {
    // The stream simply ends where the local journal goes on: no primary
    // took over yet. Following from the end refuses a later marker.
    return std::optional<RejoinCut>();
  }
  if (!next.ok()) return next.status();
  const replication::GroupMessage& m = next->message;
  if (m.kind != replication::GroupMessageKind::kEpochMarker) {
    return refuse(absl::StrFormat(
        "stream sequence %d, after the last agreed record, is records of "
        "epoch %d, not a new primary's epoch marker",
        next->sequence, m.epoch));
  }
  if (m.epoch <= agreed.epoch || m.first_index != diverge) {
    return refuse(absl::StrFormat(
        "the epoch marker at stream sequence %d (epoch %d, next index %d) is "
        "not of an epoch newer than %d taking over at index %d",
        next->sequence, m.epoch, m.first_index, agreed.epoch, diverge));
  }
  return std::optional<RejoinCut>(
      RejoinCut{.first = diverge, .last = last, .epoch = m.epoch});
}

// Whether the local journal (its writer open) agrees with the stream, and
// if not, whether a new primary took over where they part: see standby.h
// "Rejoining". nullopt: nothing to cut.
absl::StatusOr<std::optional<RejoinCut>> FindRejoinCut(
    const StandbyOptions& o, const journal::JournalWriter& writer) {
  const std::uint64_t last = writer.last_index();
  absl::StatusOr<std::uint64_t> first_local =
      journal::FirstAvailableIndex(o.journal.directory);
  if (!first_local.ok()) return first_local.status();
  // No local record (a new journal, or a seeded one: seed.h): nothing to
  // compare, nothing to cut.
  if (last < *first_local) return std::optional<RejoinCut>();
  const std::chrono::milliseconds request_timeout = StreamRequestTimeout(o);
  absl::StatusOr<std::unique_ptr<replication::StreamReader>> reader =
      replication::StreamReader::Open(o.nats_servers, o.engine_name,
                                      request_timeout);
  if (!reader.ok()) return reader.status();
  absl::StatusOr<bool> last_agrees = StreamAgrees(o, **reader, last);
  if (absl::IsNotFound(last_agrees.status())) {
    return std::optional<RejoinCut>();  // no stream yet: said when following
  }
  if (!last_agrees.ok()) return last_agrees.status();
  if (*last_agrees) return std::optional<RejoinCut>();  // a prefix
  absl::StatusOr<std::uint64_t> diverge =
      FirstDisagreement(o, **reader, *first_local, last);
  if (!diverge.ok()) return diverge.status();
  // The stream may simply end before D (no primary went on from there yet,
  // or a journal seeded ahead of an empty stream): nothing to decide now;
  // following from the end checks what comes (as before rejoining existed).
  absl::StatusOr<bool> ends_before = StreamEndsBefore(**reader, *diverge);
  if (!ends_before.ok()) return ends_before.status();
  if (*ends_before) return std::optional<RejoinCut>();
  return TakeoverAtDivergence(o, **reader, *first_local, *diverge, last);
}

// A journal that holds no record and starts at first_index > 1 (seeded
// from a snapshot at first_index - 1: seed.h) is followed only from a
// stream that reaches the snapshot's index and still holds the index after
// it (see standby.h "Seeded"). `position` is the stream's, searched for
// first_index. FailedPrecondition (the snapshot is ahead of the stream) and
// DataLoss (the stream no longer holds first_index) are final; any other
// error (NATS, a message gone while the stream is trimmed) is worth another
// try.
absl::Status CheckStreamContinuesSnapshot(
    const StandbyOptions& o, std::uint64_t first_index,
    const replication::StreamPosition& position) {
  const std::uint64_t snapshot_index = first_index - 1;
  const bool empty = position.last_sequence == 0 ||
                     position.first_sequence > position.last_sequence;
  std::uint64_t stream_first = 0;  // the first index the stream holds
  std::uint64_t stream_last = 0;   // the last
  if (!empty) {
    absl::StatusOr<std::unique_ptr<replication::StreamReader>> reader =
        replication::StreamReader::Open(o.nats_servers, o.engine_name,
                                        StreamRequestTimeout(o));
    if (!reader.ok()) return reader.status();
    absl::StatusOr<replication::StreamMessage> last =
        (*reader)->Read(position.last_sequence);
    if (!last.ok()) return last.status();
    // A marker holds no record: its last_index() is the one before the
    // index the next record gets.
    stream_last = last->message.last_index();
    absl::StatusOr<replication::StreamMessage> first =
        (*reader)->Read(std::max<std::uint64_t>(position.first_sequence, 1));
    if (!first.ok()) return first.status();
    stream_first = first->message.first_index;
  }
  const std::string stream = replication::JournalStreamName(o.engine_name);
  if (empty || stream_last < snapshot_index) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the local journal %s starts at index %d, seeded from a snapshot at "
        "index %d, but stream %s %s: the snapshot is ahead of the replicated "
        "journal (it holds records the stream never acknowledged, written "
        "from a journal rather than by a running member, or it is another "
        "engine's). Not followed: seed from a snapshot at an index the "
        "stream holds (a running primary's or standby's)",
        o.journal.directory, first_index, snapshot_index, stream,
        empty ? std::string("is empty")
              : absl::StrFormat("holds journal indexes only up to %d "
                                "(sequence %d)",
                                stream_last, position.last_sequence)));
  }
  if (stream_first > first_index) {
    return absl::DataLossError(absl::StrFormat(
        "the local journal %s starts at index %d, seeded from a snapshot at "
        "index %d, but stream %s holds journal indexes only from %d on "
        "(sequence %d): records %d..%d are no longer in the stream. Not "
        "followed: seed from a newer snapshot (at index %d or later)",
        o.journal.directory, first_index, snapshot_index, stream, stream_first,
        position.first_sequence, first_index, stream_first - 1,
        stream_first - 1));
  }
  return absl::OkStatus();
}

// Errors: the engine configuration's (ValidateConfig), InvalidArgument
// for a zero report history, session count, poll or connect timeout.
// Whether the journal directory exists as one or could be made: an
// existing path that is not a directory, or an ancestor that is not, is
// reported before NATS is asked anything (nothing is created here).
absl::Status CheckJournalPath(const std::string& directory) {
  std::error_code error;
  std::filesystem::path path(directory);
  if (std::filesystem::exists(path, error)) {
    if (std::filesystem::is_directory(path, error)) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrFormat(
        "journal %s: exists and is not a directory", directory));
  }
  for (path = path.parent_path(); !path.empty(); path = path.parent_path()) {
    if (!std::filesystem::exists(path, error)) continue;
    if (std::filesystem::is_directory(path, error)) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrFormat("journal %s cannot be made: %s is not a directory",
                        directory, path.string()));
  }
  return absl::OkStatus();
}

absl::Status ValidateStandbyOptions(const StandbyOptions& options) {
  if (absl::Status s = engine::ValidateConfig(options.config.engine); !s.ok()) {
    return s;
  }
  if (options.report_history == 0 || options.config.max_sessions == 0 ||
      options.poll.count() <= 0 || options.connect_timeout.count() <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "standby options: report_history %d and max_sessions %d (each at "
        "least 1), poll %d ms and connect timeout %d ms (above 0)",
        options.report_history, options.config.max_sessions,
        options.poll.count(), options.connect_timeout.count()));
  }
  return absl::OkStatus();
}

// The journal_id the engine's stream names (0: none), read once the
// stream exists: tried again every 200 ms until connect_timeout while it
// does not exist or NATS does not answer. Errors: the last of those then
// (NotFound: no stream); at once any other (a description that is not a
// label: FailedPrecondition).
absl::StatusOr<std::uint64_t> WaitForStreamJournalId(const StandbyOptions& o) {
  const std::int64_t deadline =
      base::MonotonicNs() + std::chrono::nanoseconds(o.connect_timeout).count();
  for (;;) {
    absl::StatusOr<replication::JournalStreamState> stream =
        replication::GetJournalStreamState(o.nats_servers, o.engine_name,
                                           StreamRequestTimeout(o));
    if (stream.ok()) return stream->journal_id;
    const bool again = absl::IsNotFound(stream.status()) ||
                       replication::IsTransientNatsError(stream.status());
    if (!again || base::MonotonicNs() > deadline) return stream.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// The local journal and the state it holds, as a primary restarts.
absl::StatusOr<RestartedJournal> RestartLocalJournal(const StandbyOptions& o) {
  return RestartFromJournal({
      .journal = o.journal,
      .machine =
          StateMachineOptions{
              .engine = o.config.engine,
              .max_sessions = o.config.max_sessions,
              .report_history = o.report_history,
              .history_budget_bytes =
                  static_cast<std::size_t>(o.config.max_report_history_bytes),
          },
      .given = PinnedConfigOf(o.config),
      .use_snapshots = o.restart_from_snapshot,
      .reconfigure = false,  // StandbyOptions::config
  });
}

}  // namespace

Standby::Standby(StandbyOptions options) : options_(std::move(options)) {}
Standby::~Standby() = default;

absl::StatusOr<std::unique_ptr<Standby>> Standby::Start(
    StandbyOptions options) {
  if (absl::Status s = ValidateStandbyOptions(options); !s.ok()) return s;
  std::unique_ptr<Standby> standby(new Standby(std::move(options)));
  const StandbyOptions& o = standby->options_;
  if (absl::Status s = CheckJournalPath(o.journal.directory); !s.ok()) {
    return s;
  }
  // A journal created now takes the stream's journal_id (the primary's).
  absl::StatusOr<std::uint64_t> stream_journal = WaitForStreamJournalId(o);
  if (!stream_journal.ok()) return stream_journal.status();
  standby->options_.journal.new_journal_id = *stream_journal;
  absl::StatusOr<RestartedJournal> restarted = RestartLocalJournal(o);
  if (!restarted.ok()) return restarted.status();
  if (absl::Status s = standby->CheckJournalOfStream(*restarted); !s.ok()) {
    return s;
  }
  // An old primary's journal may end with records the stream never
  // acknowledged, which a new primary replaced: cut them (see standby.h).
  if (absl::Status s = standby->RejoinIfReplaced(*restarted); !s.ok()) {
    return s;
  }
  standby->TakeRestarted(*restarted);
  absl::StatusOr<std::uint64_t> first_local =
      journal::FirstAvailableIndex(o.journal.directory);
  if (!first_local.ok()) return first_local.status();
  standby->first_local_index_ = *first_local;
  // A seeded journal (seed.h): no record yet, its first index past 1.
  const bool seeded =
      *first_local > 1 && standby->writer_->last_index() + 1 == *first_local;
  if (absl::Status s = standby->OpenFirstFollower(seeded); !s.ok()) return s;
  if (absl::Status s = standby->OpenMemberBoard(); !s.ok()) return s;
  return standby;
}

absl::Status Standby::CheckJournalOfStream(RestartedJournal& restarted) {
  const StandbyOptions& o = options_;
  const std::uint64_t theirs = o.journal.new_journal_id;  // the stream's
  const std::uint64_t ours = restarted.writer->journal_id();
  const std::string stream = replication::JournalStreamName(o.engine_name);
  if (theirs != 0 && ours != theirs) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the local journal %s is journal %016x, but stream %s carries journal "
        "%016x (its description): this standby would follow another "
        "journal's records into its own, and serve under another journal_id "
        "after a takeover. Not followed: empty %s and start again (the new "
        "journal gets the stream's journal_id), or seed it from a snapshot of "
        "the primary",
        o.journal.directory, ours, stream, theirs, o.journal.directory));
  }
  if (!restarted.writer->recovery().created) return absl::OkStatus();
  if (theirs != 0) {
    absl::StrAppendFormat(&restarted.report,
                          "\n  journal %016x: the stream's (its primary's)",
                          ours);
    return absl::OkStatus();
  }
  Event(absl::StrFormat(
      "stream %s names no journal (made before streams were labelled): the "
      "new journal %s gets a random journal_id, %016x, not the primary's, so "
      "after a takeover by this standby the market-data feed goes on under "
      "another session. Seed it from a primary's snapshot to keep the "
      "primary's journal_id",
      stream, o.journal.directory, ours));
  return absl::OkStatus();
}

absl::Status Standby::RejoinIfReplaced(RestartedJournal& restarted) {
  const StandbyOptions& o = options_;
  absl::StatusOr<std::optional<RejoinCut>> rejoin =
      FindRejoinCut(o, *restarted.writer);
  if (!rejoin.ok()) return rejoin.status();
  if (!rejoin->has_value()) return absl::OkStatus();
  const RejoinCut& cut = **rejoin;
  if (!o.rejoin) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the local journal %s diverges from stream %s at index %d: its "
        "records %d..%d were never acknowledged by the stream, where a new "
        "primary (epoch %d) took over at index %d. A rejoin would cut them "
        "(kept in %s); not done: --no-rejoin",
        o.journal.directory, o.engine_name, cut.first, cut.first, cut.last,
        cut.epoch, cut.first,
        journal::SideJournalPath(o.journal.directory, cut.first, cut.last)));
  }
  if (absl::Status s = restarted.writer->Close(); !s.ok()) return s;
  restarted.writer.reset();
  restarted.machine.reset();
  absl::StatusOr<journal::CutReport> report = journal::CutJournalTail(
      {.directory = o.journal.directory, .keep_through_index = cut.first - 1});
  if (!report.ok()) return report.status();
  Event(absl::StrFormat(
      "REJOINING AS A STANDBY: cut local records %d..%d (never "
      "acknowledged by the stream; kept in %s); the stream's epoch %d "
      "took over at index %d",
      cut.first, cut.last, report->side_journal, cut.epoch, cut.first));
  stats_.rejoin_cuts += 1;
  stats_.records_cut += cut.last - cut.first + 1;
  absl::StatusOr<RestartedJournal> again = RestartLocalJournal(o);
  if (!again.ok()) return again.status();
  restarted = *std::move(again);
  absl::StrAppendFormat(&restarted.report,
                        "\n  rejoined: cut local records %d..%d (kept in %s)",
                        cut.first, cut.last, report->side_journal);
  return absl::OkStatus();
}

void Standby::TakeRestarted(RestartedJournal& restarted) {
  writer_ = std::move(restarted.writer);
  machine_ = std::move(restarted.machine);
  startup_report_ = std::move(restarted.report);
  startup_warning_ = std::move(restarted.warning);
  stats_.replayed = restarted.replayed;
  stats_.started_from_snapshot = restarted.started_from_snapshot;
  stats_.last_snapshot_index = restarted.started_from_snapshot;
  snapshot_base_ = restarted.started_from_snapshot;
}

absl::Status Standby::OpenFirstFollower(bool seeded) {
  const StandbyOptions& o = options_;
  // Where the stream holds the next index, then a follower from there. The
  // JetStream meta leader may be missing for a while (a cluster electing
  // one): both are tried again until connect_timeout.
  const std::uint64_t next_index = writer_->last_index() + 1;
  const std::int64_t deadline =
      base::MonotonicNs() + std::chrono::nanoseconds(o.connect_timeout).count();
  absl::Status last_error;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) {
      if (base::MonotonicNs() > deadline) return last_error;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    const std::chrono::milliseconds request_timeout = StreamRequestTimeout(o);
    absl::StatusOr<replication::StreamPosition> position =
        replication::FindStreamPosition(o.nats_servers, o.engine_name,
                                        next_index, request_timeout);
    if (!position.ok()) {
      last_error = position.status();
      // A hole or a message that does not verify will not heal.
      if (absl::IsDataLoss(last_error) || absl::IsInvalidArgument(last_error)) {
        return last_error;
      }
      continue;
    }
    if (seeded) {
      if (absl::Status s =
              CheckStreamContinuesSnapshot(o, next_index, *position);
          !s.ok()) {
        last_error = s;
        if (absl::IsDataLoss(s) || absl::IsFailedPrecondition(s) ||
            absl::IsInvalidArgument(s)) {
          return s;
        }
        continue;
      }
    }
    absl::StatusOr<std::unique_ptr<replication::StreamFollower>> follower =
        replication::StreamFollower::Open({.servers = o.nats_servers,
                                           .engine_name = o.engine_name,
                                           .start_sequence = position->sequence,
                                           .timeout = request_timeout});
    if (!follower.ok()) {
      last_error = follower.status();
      if (absl::IsInvalidArgument(last_error)) return last_error;
      continue;
    }
    follower_ = std::move(*follower);
    stats_.start_sequence = position->sequence;
    stats_.search_probes = position->probes;
    stats_.epoch = position->epoch;
    absl::StrAppendFormat(
        &startup_report_,
        "\n  following stream %s at %s from sequence %d (stream holds %d to "
        "%d; found with %d read(s)) for journal index %d",
        o.engine_name, o.nats_servers, position->sequence,
        position->first_sequence, position->last_sequence, position->probes,
        next_index);
    return absl::OkStatus();
  }
}

absl::Status Standby::OpenMemberBoard() {
  const StandbyOptions& o = options_;
  if (o.member_name.empty()) return absl::OkStatus();
  // The bucket gets the stream's replica count.
  absl::StatusOr<replication::JournalStreamState> stream =
      replication::GetJournalStreamState(o.nats_servers, o.engine_name,
                                         o.connect_timeout);
  if (!stream.ok()) return stream.status();
  absl::StatusOr<std::unique_ptr<replication::MemberBoard>> board =
      replication::MemberBoard::Open(o.nats_servers, o.engine_name,
                                     stream->replicas == 3 ? 3 : 1,
                                     o.connect_timeout);
  if (!board.ok()) return board.status();
  board_ = std::move(*board);
  // A name the bucket cannot take is an error now, not a warning later.
  if (absl::Status s =
          board_->Put({.name = o.member_name,
                       .role = "standby",
                       .epoch = stats_.epoch,
                       .applied_index = machine_->last_index(),
                       .stream_sequence = stats_.start_sequence - 1});
      !s.ok()) {
    return s;
  }
  next_report_ns_ =
      base::MonotonicNs() + std::chrono::nanoseconds(o.report_interval).count();
  return absl::OkStatus();
}

void Standby::Report(std::string_view role) {
  if (board_ == nullptr) return;
  const StandbyStats s = stats();
  absl::Status put = board_->Put({.name = options_.member_name,
                                  .role = std::string(role),
                                  .epoch = s.epoch,
                                  .applied_index = s.applied_index,
                                  .stream_sequence = s.stream_sequence});
  if (!put.ok() && !report_failed_) {
    Event(absl::StrFormat(
        "member report not stored (cluster status will show it stale): %s",
        put.message()));
  }
  report_failed_ = !put.ok();
  next_report_ns_ = base::MonotonicNs() +
                    std::chrono::nanoseconds(options_.report_interval).count();
}

void Standby::Event(std::string_view line) const {
  if (options_.on_event) {
    options_.on_event(line);
  } else {
    std::fprintf(stderr, "orderwire standby: %.*s\n",
                 static_cast<int>(line.size()), line.data());
  }
}

absl::Status Standby::Fail(absl::Status status) {
  if (failure_.ok()) failure_ = status;
  return status;
}

bool Standby::ReopenFollower(std::chrono::milliseconds timeout) {
  if (base::MonotonicNs() < next_reopen_ns_) return false;
  const auto request_timeout = std::clamp<std::chrono::milliseconds>(
      timeout, std::chrono::milliseconds(500), std::chrono::seconds(5));
  absl::StatusOr<std::unique_ptr<replication::StreamFollower>> follower =
      replication::StreamFollower::Open({.servers = options_.nats_servers,
                                         .engine_name = options_.engine_name,
                                         .start_sequence = reopen_from_,
                                         .timeout = request_timeout});
  if (!follower.ok()) {
    const std::string text(follower.status().message());
    if (text != last_reopen_error_) {
      Event(absl::StrFormat(
          "following stream %s from sequence %d again: %s (trying again)",
          options_.engine_name, reopen_from_, text));
      last_reopen_error_ = text;
    }
    reopen_backoff_ = reopen_backoff_.count() == 0
                          ? kFirstReopenBackoff
                          : std::min(2 * reopen_backoff_, kMaxReopenBackoff);
    next_reopen_ns_ =
        base::MonotonicNs() + std::chrono::nanoseconds(reopen_backoff_).count();
    return false;
  }
  follower_ = std::move(*follower);
  ++stats_.follower_reopens;
  Event(absl::StrFormat("following stream %s again from sequence %d",
                        options_.engine_name, reopen_from_));
  reopen_from_ = 0;
  last_reopen_error_.clear();
  reopen_backoff_ = std::chrono::milliseconds(0);
  next_reopen_ns_ = 0;
  return true;
}

absl::Status Standby::Step(std::chrono::milliseconds timeout) {
  if (!failure_.ok()) return failure_;
  if (follower_ == nullptr && reopen_from_ == 0) {
    return absl::FailedPreconditionError("standby: released");
  }
  const std::int64_t step_end_ns =
      base::MonotonicNs() + std::chrono::nanoseconds(timeout).count();
  absl::StatusOr<replication::FollowedMessage> message =
      absl::DeadlineExceededError("standby: follower not open");
  if (follower_ != nullptr || ReopenFollower(timeout)) {
    message = follower_->Next(timeout);
  } else {
    // No follower to wait on: wait out the step (or until the next try)
    // as Next would have, not return at once into a spinning Run loop.
    const std::int64_t wait_ns =
        std::min(step_end_ns, next_reopen_ns_) - base::MonotonicNs();
    if (wait_ns > 0) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(wait_ns));
    }
  }
  if (message.ok()) {
    if (absl::Status s = Take(*std::move(message)); !s.ok()) return Fail(s);
  } else if (absl::IsDataLoss(message.status()) ||
             absl::IsInvalidArgument(message.status())) {
    // A hole in the stream does not heal.
    return Fail(message.status());
  } else if (!absl::IsDeadlineExceeded(message.status())) {
    // The stream's leader is re-elected, or NATS went away: follow again
    // from the sequence due next, with a new connection and consumer.
    reopen_from_ = follower_->next_sequence();
    Event(absl::StrFormat(
        "following stream %s: %s; opening the follower again from sequence "
        "%d",
        options_.engine_name, message.status().message(), reopen_from_));
    follower_.reset();
  }
  writer_->Poll();
  if (writer_->failed()) return Fail(writer_->status());
  if (absl::Status s = ApplyDurable(); !s.ok()) return Fail(s);
  while (pending_.size() > kMaxPendingMessages) {
    if (absl::Status s = writer_->Wait(); !s.ok()) return Fail(s);
    if (absl::Status s = ApplyDurable(); !s.ok()) return Fail(s);
  }
  if (board_ != nullptr && base::MonotonicNs() >= next_report_ns_) {
    Report("standby");
  }
  return absl::OkStatus();
}

absl::Status Standby::Take(replication::FollowedMessage followed) {
  const std::uint64_t sequence = followed.stream_sequence;
  absl::StatusOr<GroupMessage> parsed = replication::ParseGroupMessage(
      std::span<const std::byte>(followed.bytes));
  if (!parsed.ok()) {
    return absl::DataLossError(absl::StrFormat(
        "standby: stream %s sequence %d (Msg-Id %s) refused, nothing of it "
        "appended: %s",
        options_.engine_name, sequence, followed.msg_id,
        parsed.status().message()));
  }
  const GroupMessage& message = *parsed;
  if (message.epoch < stats_.epoch) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "standby: stream %s sequence %d carries epoch %d after epoch %d: a "
        "fenced primary's message cannot follow its successor's; nothing of "
        "it appended",
        options_.engine_name, sequence, message.epoch, stats_.epoch));
  }
  const std::uint64_t local_last = writer_->last_index();
  if (message.kind == GroupMessageKind::kEpochMarker) {
    if (message.first_index != local_last + 1) {
      return absl::DataLossError(absl::StrFormat(
          "standby: stream %s sequence %d: the epoch %d primary continues "
          "from index %d, but the local journal ends at %d (%s)",
          options_.engine_name, sequence, message.epoch, message.first_index,
          local_last,
          message.first_index > local_last + 1
              ? "records are missing from the stream"
              : "a local tail the new primary does not have: refused"));
    }
    if (message.epoch != stats_.epoch) {
      Event(absl::StrFormat(
          "epoch %d begins at index %d (stream sequence %d; was epoch %d)",
          message.epoch, message.first_index, sequence, stats_.epoch));
    }
    stats_.epoch = message.epoch;
    ++stats_.epoch_markers;
  } else {
    if (message.first_index > local_last + 1) {
      return absl::DataLossError(absl::StrFormat(
          "standby: stream %s sequence %d holds indexes %d to %d, but the "
          "local journal ends at %d: indexes %d to %d are missing (a gap); "
          "nothing of it appended",
          options_.engine_name, sequence, message.first_index,
          message.last_index(), local_last, local_last + 1,
          message.first_index - 1));
    }
    if (message.first_index <= local_last) {
      if (absl::Status s = VerifyHeld(
              sequence, message, std::min(local_last, message.last_index()));
          !s.ok()) {
        return s;
      }
    }
    stats_.epoch = message.epoch;
    if (message.last_index() > local_last) {
      if (absl::Status s = Append(sequence, message, local_last + 1); !s.ok()) {
        return s;
      }
      pending_.push_back(Pending{.bytes = std::move(followed.bytes),
                                 .message = message,
                                 .next_to_apply = local_last + 1});
    }
  }
  ++stats_.messages;
  stats_.stream_sequence = sequence;
  stats_.lag_messages = followed.pending;
  return absl::OkStatus();
}

absl::Status Standby::VerifyHeld(std::uint64_t stream_sequence,
                                 const GroupMessage& message,
                                 std::uint64_t up_to) {
  // Records before the local journal's first index (a seeded journal's:
  // they are in the snapshot it started from) are not on disk to compare.
  const std::uint64_t from = std::max(message.first_index, first_local_index_);
  if (from > message.first_index) {
    stats_.records_before_start +=
        std::min(up_to + 1, from) - message.first_index;
  }
  if (from > up_to) return absl::OkStatus();
  // The local records must be on disk to be read back.
  if (writer_->durable_index() < up_to) {
    if (absl::Status s = writer_->Flush(); !s.ok()) return s;
  }
  journal::ReaderOptions reader_options;
  reader_options.from_index = from;
  absl::StatusOr<std::unique_ptr<journal::JournalReader>> reader =
      journal::JournalReader::Open(options_.journal.directory, reader_options);
  if (!reader.ok()) return reader.status();
  absl::Status result;
  message.ForEachRecord([&](const journal::Record& theirs) {
    if (!result.ok() || theirs.index < from || theirs.index > up_to) return;
    journal::Record ours;
    const journal::ReadResult read = (*reader)->Next(ours);
    if (read != journal::ReadResult::kRecord || ours.index != theirs.index) {
      result = absl::DataLossError(absl::StrFormat(
          "standby: stream %s sequence %d: local record %d cannot be read "
          "back to compare with the primary's: %s",
          options_.engine_name, stream_sequence, theirs.index,
          read == journal::ReadResult::kError
              ? std::string((*reader)->status().message())
              : absl::StrFormat(
                    "the reader gave %s",
                    read == journal::ReadResult::kEnd
                        ? std::string("the end")
                        : absl::StrFormat("index %d", ours.index))));
      return;
    }
    if (!SameRecord(ours, theirs)) {
      result = absl::DataLossError(absl::StrFormat(
          "standby: the local journal %s diverges from the primary's at index "
          "%d (stream %s sequence %d): local {%s}, primary {%s}. A local tail "
          "the primary does not have (an old primary's unacknowledged "
          "records?) is refused: move the local journal aside and start the "
          "standby on an empty directory",
          options_.journal.directory, theirs.index, options_.engine_name,
          stream_sequence, Describe(ours), Describe(theirs)));
      return;
    }
    ++stats_.records_held;
  });
  return result;
}

absl::Status Standby::Append(std::uint64_t stream_sequence,
                             const GroupMessage& message, std::uint64_t from) {
  // Each run of records that share session, receive time and flags is one
  // Append (the writer stores those once per call), cut where it would
  // exceed what one Append takes.
  absl::Status result;
  bool open = false;
  std::uint32_t session_id = 0;
  std::uint64_t receive_ns = 0;
  std::uint32_t flags = 0;
  std::uint64_t run_last = 0;
  std::size_t run_records = 0;
  run_.clear();
  const std::size_t max_bytes = writer_->max_append_bytes();
  message.ForEachRecord([&](const journal::Record& record) {
    if (!result.ok() || record.index < from) return;
    const std::span<const std::byte> frame = record.frame.bytes();
    const bool same = open && record.session_id == session_id &&
                      record.receive_ns == receive_ns && record.flags == flags;
    // The writer takes frame bytes plus a record header per frame.
    const bool fits = run_.size() + frame.size() +
                          journal::kRecordHeaderSize * (run_records + 1) <=
                      max_bytes;
    if (open && !(same && fits)) {
      result = AppendRun(stream_sequence, session_id, receive_ns, flags,
                         run_last, run_records);
      open = false;
      run_records = 0;
      if (!result.ok()) return;
    }
    if (!open) {
      open = true;
      session_id = record.session_id;
      receive_ns = record.receive_ns;
      flags = record.flags;
    }
    run_.insert(run_.end(), frame.begin(), frame.end());
    run_last = record.index;
    ++run_records;
  });
  if (result.ok() && open) {
    result = AppendRun(stream_sequence, session_id, receive_ns, flags, run_last,
                       run_records);
  }
  return result;
}

absl::Status Standby::AppendRun(std::uint64_t stream_sequence,
                                std::uint32_t session_id,
                                std::uint64_t receive_ns, std::uint32_t flags,
                                std::uint64_t last_index, std::size_t records) {
  bool reported_full = false;
  for (;;) {
    const journal::AppendStatus status =
        writer_->Append(run_, session_id, receive_ns, flags);
    switch (status) {
      case journal::AppendStatus::kOk:
        break;
      case journal::AppendStatus::kFull:
        if (absl::Status s = writer_->Wait(); !s.ok()) return s;
        continue;
      case journal::AppendStatus::kJournalFull:
        if (!reported_full) {
          Event(absl::StrFormat(
              "journal full: need %d bytes free in %s; following waits",
              writer_->space_needed(), options_.journal.directory));
          reported_full = true;
        }
        writer_->Poll();
        std::this_thread::sleep_for(kJournalFullRetry);
        continue;
      case journal::AppendStatus::kFailed:
        return writer_->status();
      case journal::AppendStatus::kInvalidFrame:
      case journal::AppendStatus::kTooLarge:
        return absl::InternalError(absl::StrFormat(
            "standby: stream %s sequence %d: the local journal refused "
            "records up to index %d (%s)",
            options_.engine_name, stream_sequence, last_index,
            journal::Name(status)));
    }
    break;
  }
  if (reported_full) Event("journal full: resumed");
  run_.clear();
  if (writer_->last_index() != last_index) {
    return absl::InternalError(absl::StrFormat(
        "standby: stream %s sequence %d: the local journal gave index %d to "
        "the primary's record %d; the indexes must be the primary's",
        options_.engine_name, stream_sequence, writer_->last_index(),
        last_index));
  }
  stats_.records_appended += records;
  return absl::OkStatus();
}

absl::Status Standby::ApplyDurable() {
  const std::uint64_t durable = writer_->durable_index();
  while (!pending_.empty()) {
    Pending& pending = pending_.front();
    if (pending.next_to_apply > durable) break;
    absl::Status result;
    pending.message.ForEachRecord([&](const journal::Record& record) {
      if (!result.ok() || record.index < pending.next_to_apply ||
          record.index > durable) {
        return;
      }
      result = machine_->Apply(Record::FromJournal(record));
      if (!result.ok()) return;
      stats_.reports += machine_->outputs().size();
      pending.next_to_apply = record.index + 1;
      MaybeSnapshot();
    });
    if (!result.ok()) return result;
    if (pending.next_to_apply <= pending.message.last_index()) break;
    pending_.pop_front();
  }
  return absl::OkStatus();
}

void Standby::MaybeSnapshot() {
  const std::uint64_t every = options_.snapshot_every_records;
  const std::uint64_t index = machine_->last_index();
  if (every == 0 || index - snapshot_base_ < every) return;
  absl::StatusOr<SnapshotInfo> written = WriteSnapshot(
      *machine_, writer_->journal_id(), options_.journal.directory);
  // Tried again only after another `every` records either way.
  snapshot_base_ = index;
  if (written.ok()) {
    ++stats_.snapshots_taken;
    stats_.last_snapshot_index = index;
  } else {
    ++stats_.snapshots_failed;
    Event(absl::StrFormat("snapshot at index %d failed: %s", index,
                          written.status().message()));
  }
}

absl::Status Standby::Run(const std::atomic<bool>& stop) {
  const auto interval_ns = static_cast<std::int64_t>(options_.interval_s * 1e9);
  std::int64_t next_interval_ns = base::MonotonicNs() + interval_ns;
  absl::Status status;
  while (!stop.load(std::memory_order_relaxed)) {
    status = Step(options_.poll);
    if (!status.ok()) break;
    if (interval_ns > 0 && options_.on_interval &&
        base::MonotonicNs() >= next_interval_ns) {
      options_.on_interval();
      next_interval_ns = base::MonotonicNs() + interval_ns;
    }
  }
  // What was appended before a refused message is made durable and applied
  // either way.
  if (absl::Status s = Stop(); !s.ok() && status.ok()) status = s;
  Report("stopped");
  return status;
}

absl::Status Standby::Stop() {
  if (writer_ == nullptr) return absl::OkStatus();
  if (absl::Status s = writer_->Flush(); !s.ok()) return Fail(s);
  return ApplyDurable();
}

StandbyState Standby::Release() {
  StandbyState state{.writer = std::move(writer_),
                     .machine = std::move(machine_),
                     .epoch = stats_.epoch,
                     .stream_sequence = stats_.stream_sequence};
  follower_.reset();
  reopen_from_ = 0;
  board_.reset();
  pending_.clear();
  return state;
}

StandbyStats Standby::stats() const {
  StandbyStats s = stats_;
  if (machine_ != nullptr) s.applied_index = machine_->last_index();
  if (writer_ != nullptr) {
    s.durable_index = writer_->durable_index();
    s.appended_index = writer_->last_index();
  }
  return s;
}

std::string Standby::StatsLine() const {
  const StandbyStats s = stats();
  return absl::StrFormat(
      "standby: applied %d (durable %d), stream sequence %d, lag %d "
      "message(s), epoch %d, %d message(s) followed, %d record(s) appended",
      s.applied_index, s.durable_index, s.stream_sequence, s.lag_messages,
      s.epoch, s.messages, s.records_appended);
}

}  // namespace orderwire::cluster
