// The hot standby; see standby.h.
#include "service/standby.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/clock.h"
#include "journal/reader.h"
#include "replication/cluster_status.h"
#include "replication/journal_follower.h"
#include "replication/journal_stream.h"
#include "replication/stream_position.h"
#include "service/pinned_config.h"
#include "service/restart.h"
#include "service/snapshot.h"

namespace orderwire::service {
namespace {

using replication::GroupMessage;
using replication::GroupMessageKind;

// While the local disk is too full for the next segment, appending is
// tried again this often (the writer itself retries its preparation at most
// every WriterOptions::no_space_retry_ms).
constexpr std::chrono::milliseconds kJournalFullRetry{10};
// At most this many messages appended and not yet applied (each holds its
// bytes until its records are durable): beyond it, Step waits for the disk.
constexpr std::size_t kMaxPendingMessages = 256;

bool SameRecord(const journal::Record& a, const journal::Record& b) {
  const std::span<const std::byte> fa = a.frame.bytes();
  const std::span<const std::byte> fb = b.frame.bytes();
  return a.index == b.index && a.receive_ns == b.receive_ns &&
         a.session_id == b.session_id && a.flags == b.flags &&
         fa.size() == fb.size() &&
         std::memcmp(fa.data(), fb.data(), fa.size()) == 0;
}

std::string Describe(const journal::Record& r) {
  return absl::StrFormat(
      "index %d, session %d, receive_ns %d, flags 0x%x, %d "
      "frame bytes",
      r.index, r.session_id, r.receive_ns, r.flags, r.frame.bytes().size());
}

}  // namespace

Standby::Standby(StandbyOptions options) : options_(std::move(options)) {}
Standby::~Standby() = default;

absl::StatusOr<std::unique_ptr<Standby>> Standby::Start(
    StandbyOptions options) {
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
  std::unique_ptr<Standby> standby(new Standby(std::move(options)));
  const StandbyOptions& o = standby->options_;
  // The local journal and the state it holds, as a primary restarts.
  absl::StatusOr<RestartedJournal> restarted = RestartFromJournal({
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
      .reconfigure = o.reconfigure,
  });
  if (!restarted.ok()) return restarted.status();
  standby->writer_ = std::move(restarted->writer);
  standby->machine_ = std::move(restarted->machine);
  standby->startup_report_ = std::move(restarted->report);
  standby->startup_warning_ = std::move(restarted->warning);
  StandbyStats& stats = standby->stats_;
  stats.replayed = restarted->replayed;
  stats.started_from_snapshot = restarted->started_from_snapshot;
  stats.last_snapshot_index = restarted->started_from_snapshot;
  standby->snapshot_base_ = restarted->started_from_snapshot;

  // Where the stream holds the next index, then a follower from there. The
  // JetStream meta leader may be missing for a while (a cluster electing
  // one): both are tried again until connect_timeout.
  const std::uint64_t next_index = standby->writer_->last_index() + 1;
  const std::int64_t deadline =
      base::MonotonicNs() + std::chrono::nanoseconds(o.connect_timeout).count();
  absl::Status last_error;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) {
      if (base::MonotonicNs() > deadline) return last_error;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    const auto request_timeout = std::min<std::chrono::milliseconds>(
        o.connect_timeout, std::chrono::seconds(5));
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
    absl::StatusOr<std::unique_ptr<replication::JournalFollower>> follower =
        replication::JournalFollower::Open(
            {.servers = o.nats_servers,
             .engine_name = o.engine_name,
             .start_sequence = position->sequence,
             .timeout = request_timeout});
    if (!follower.ok()) {
      last_error = follower.status();
      if (absl::IsInvalidArgument(last_error)) return last_error;
      continue;
    }
    standby->follower_ = std::move(*follower);
    stats.start_sequence = position->sequence;
    stats.search_probes = position->probes;
    stats.epoch = position->epoch;
    absl::StrAppendFormat(
        &standby->startup_report_,
        "\n  following stream %s at %s from sequence %d (stream holds %d to "
        "%d; found with %d read(s)) for journal index %d",
        o.engine_name, o.nats_servers, position->sequence,
        position->first_sequence, position->last_sequence, position->probes,
        next_index);
    break;
  }
  if (!o.member_name.empty()) {
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
    standby->board_ = std::move(*board);
    // A name the bucket cannot take is an error now, not a warning later.
    if (absl::Status s = standby->board_->Put(
            {.name = o.member_name,
             .role = "standby",
             .epoch = stats.epoch,
             .applied_index = standby->machine_->last_index(),
             .stream_sequence = stats.start_sequence - 1});
        !s.ok()) {
      return s;
    }
    standby->next_report_ns_ =
        base::MonotonicNs() +
        std::chrono::nanoseconds(o.report_interval).count();
  }
  return standby;
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

absl::Status Standby::Step(std::chrono::milliseconds timeout) {
  if (!failure_.ok()) return failure_;
  if (follower_ == nullptr) {
    return absl::FailedPreconditionError("standby: released");
  }
  absl::StatusOr<replication::FollowedMessage> message =
      follower_->Next(timeout);
  if (message.ok()) {
    if (absl::Status s = Take(*std::move(message)); !s.ok()) return Fail(s);
  } else if (!absl::IsDeadlineExceeded(message.status())) {
    return Fail(message.status());
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
  // The local records must be on disk to be read back.
  if (writer_->durable_index() < up_to) {
    if (absl::Status s = writer_->Flush(); !s.ok()) return s;
  }
  journal::ReaderOptions reader_options;
  reader_options.from_index = message.first_index;
  absl::StatusOr<std::unique_ptr<journal::JournalReader>> reader =
      journal::JournalReader::Open(options_.journal.directory, reader_options);
  if (!reader.ok()) return reader.status();
  absl::Status result;
  message.ForEachRecord([&](const journal::Record& theirs) {
    if (!result.ok() || theirs.index > up_to) return;
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

}  // namespace orderwire::service
