// The primary's replication link; see replication_link.h.
#include "cluster/replication_link.h"

#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/background_thread.h"
#include "base/clock.h"
#include "journal/follower.h"
#include "journal/record.h"
#include "replication/cluster_status.h"
#include "replication/group_message.h"
#include "replication/journal_publisher.h"
#include "replication/journal_stream.h"
#include "replication/stream_reader.h"

namespace orderwire::cluster {
namespace {

// How long the link's thread sleeps when nothing is durable and unsent: a
// NoteDurable() wakes it sooner; the bound covers a failure of the
// publisher noticed while idle and a durable mark moved without a note.
constexpr long kIdleSleepNs = 1'000'000;

void FutexWait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
               long timeout_ns) {
  const timespec timeout{.tv_sec = 0, .tv_nsec = timeout_ns};
  (void)::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word),
                  FUTEX_WAIT_PRIVATE, expected, &timeout, nullptr, 0);
}

void FutexWakeOne(std::atomic<std::uint32_t>& word) {
  (void)::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word),
                  FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

// The last journal index the stream holds, from its last message (0 for an
// empty stream), and that message's epoch.
struct StreamEnd {
  std::uint64_t last_sequence = 0;
  std::uint64_t last_index = 0;
  std::uint64_t epoch = 0;
  std::uint64_t journal_id = 0;  // the stream's label (0: none)
};

absl::StatusOr<StreamEnd> ReadStreamEnd(const ReplicationOptions& options,
                                        std::uint64_t journal_id) {
  replication::JournalStreamSpec spec{.engine_name = options.engine_name,
                                      .replicas = options.replicas,
                                      .journal_id = journal_id};
  absl::StatusOr<replication::JournalStreamState> state =
      replication::EnsureJournalStream(options.servers, spec,
                                       options.connect_timeout);
  if (!state.ok()) return state.status();
  StreamEnd end{.last_sequence = state->last_sequence,
                .journal_id = state->journal_id};
  if (end.last_sequence == 0) return end;
  // Read by sequence (one request to the stream's leader), not with a
  // consumer: creating one needs the JetStream meta leader, which may still
  // be in election after a NATS node was lost when the stream already
  // answers (a takeover then waited for it).
  absl::StatusOr<std::unique_ptr<replication::StreamReader>> reader =
      replication::StreamReader::Open(options.servers, options.engine_name,
                                      options.connect_timeout);
  if (!reader.ok()) return reader.status();
  absl::StatusOr<replication::StreamMessage> last =
      (*reader)->Read(end.last_sequence);
  if (!last.ok()) {
    return absl::Status(
        last.status().code(),
        absl::StrFormat("reading the last message (sequence %d) of stream "
                        "%s: %s",
                        end.last_sequence,
                        replication::JournalStreamName(options.engine_name),
                        last.status().message()));
  }
  end.last_index = last->message.last_index();
  end.epoch = last->message.epoch;
  return end;
}

// The link's line for the start-up banner.
std::string LinkDescription(const ReplicationOptions& options,
                            const StreamEnd& end,
                            std::uint64_t local_last_index,
                            std::uint64_t journal_id) {
  std::string out = absl::StrFormat(
      "replicated to stream %s (R%d, %s), epoch %d, window %d: the stream "
      "holds journal indexes up to %d (sequence %d); the local journal up to "
      "%d%s",
      replication::JournalStreamName(options.engine_name), options.replicas,
      options.servers, options.epoch, options.window, end.last_index,
      end.last_sequence, local_last_index,
      local_last_index > end.last_index
          ? absl::StrFormat(" (%d never acknowledged: published first)",
                            local_last_index - end.last_index)
          : std::string());
  if (end.journal_id == 0) {
    absl::StrAppendFormat(
        &out,
        "; the stream names no journal (made before streams were labelled), "
        "so journal %016x is not checked against it",
        journal_id);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReplicationLink>> ReplicationLink::Open(
    const ReplicationOptions& options, const std::string& journal_directory,
    std::uint64_t local_last_index, std::uint64_t journal_id) {
  if (options.servers.empty()) {
    return absl::InvalidArgumentError(
        "replicated durability needs NATS servers (--nats nats://HOST:PORT)");
  }
  if (options.replicas != 1 && options.replicas != 3) {
    return absl::InvalidArgumentError(
        absl::StrFormat("replicas %d: the journal stream has 1 or 3 replicas",
                        options.replicas));
  }
  if (options.max_message_bytes <
      replication::kGroupMessageHeaderSize + journal::kMaxRecordSize) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "max_message_bytes %d: at least %d (one record)",
        options.max_message_bytes,
        replication::kGroupMessageHeaderSize + journal::kMaxRecordSize));
  }
  absl::StatusOr<StreamEnd> end = ReadStreamEnd(options, journal_id);
  if (!end.ok()) return end.status();
  const std::string stream =
      replication::JournalStreamName(options.engine_name);
  if (local_last_index < end->last_index) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "this node is behind the replicated journal: stream %s holds journal "
        "indexes up to %d (sequence %d), the local journal %s only up to %d. "
        "It must not serve as primary: run it as a standby until it has "
        "caught up",
        stream, end->last_index, end->last_sequence, journal_directory,
        local_last_index));
  }
  if (end->epoch > options.epoch) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "stream %s was last written by epoch %d, later than this primary's "
        "epoch %d: another primary has taken over",
        stream, end->epoch, options.epoch));
  }

  std::unique_ptr<ReplicationLink> link(new ReplicationLink());
  link->options_ = options;
  link->builder_ = std::make_unique<replication::GroupMessageBuilder>();
  link->set_replicated_index(end->last_index, std::memory_order_relaxed);
  link->next_index_ = end->last_sequence == 0 ? 0 : end->last_index + 1;
  link->stats_.replicated_index = end->last_index;
  link->stats_.start_stream_sequence = end->last_sequence;
  link->stats_.start_replicated_index = end->last_index;
  // Empty stream: from the journal's first index (which may be past 1 if
  // the journal was pruned); else from the record after the stream's last.
  absl::StatusOr<std::unique_ptr<journal::JournalFollower>> follower =
      journal::JournalFollower::Open(
          journal_directory,
          {.from_index = end->last_sequence == 0 ? 0 : end->last_index + 1});
  if (!follower.ok()) return follower.status();
  link->follower_ = std::move(*follower);
  link->wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (link->wake_fd_ < 0) {
    return absl::InternalError(
        absl::StrFormat("eventfd: %s", std::strerror(errno)));
  }
  ReplicationLink* const self = link.get();
  // Field by field: g++ 12 at -O3 takes the nested designated initializer's
  // strings for uninitialized (-Wmaybe-uninitialized).
  replication::PublisherOptions publisher_options;
  publisher_options.servers = options.servers;
  publisher_options.stream.engine_name = options.engine_name;
  publisher_options.stream.replicas = options.replicas;
  publisher_options.stream.journal_id = journal_id;
  publisher_options.epoch = options.epoch;
  publisher_options.window = options.window;
  publisher_options.ack_timeout = options.ack_timeout;
  publisher_options.expected_last_sequence = end->last_sequence;
  publisher_options.on_ack = [self](const replication::PublishAck& ack) {
    self->OnAck(ack);
  };
  absl::StatusOr<std::unique_ptr<replication::JournalPublisher>> publisher =
      replication::JournalPublisher::Open(std::move(publisher_options));
  if (!publisher.ok()) return publisher.status();
  link->publisher_ = std::move(*publisher);
  link->description_ =
      LinkDescription(options, *end, local_last_index, journal_id);
  if (!options.member_name.empty()) {
    absl::StatusOr<std::unique_ptr<replication::MemberBoard>> board =
        replication::MemberBoard::Open(options.servers, options.engine_name,
                                       options.replicas,
                                       options.connect_timeout);
    if (!board.ok()) return board.status();
    link->board_ = std::move(*board);
    link->report_thread_ =
        base::StartWithStopSignalsBlocked([self] { self->ReportLoop(); });
  }
  link->thread_ = base::StartWithStopSignalsBlocked([self] { self->Loop(); });
  return link;
}

ReplicationLink::~ReplicationLink() {
  stop_.store(true, std::memory_order_release);
  durable_moves_.fetch_add(1, std::memory_order_release);
  FutexWakeOne(durable_moves_);
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    report_wake_.notify_all();
  }
  if (report_thread_.joinable()) report_thread_.join();
  // The publisher's acknowledgement thread calls OnAck: stopped first.
  publisher_.reset();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

absl::Status ReplicationLink::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

service::ReplicationStats ReplicationLink::stats() const {
  service::ReplicationStats stats;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats = stats_;
  }
  // The publisher's own lock, not under the link's (on_ack takes the
  // link's from the publisher's thread).
  if (publisher_ != nullptr) {
    stats.republished_messages = publisher_->progress().republished;
  }
  return stats;
}

void ReplicationLink::NoteDurable(std::uint64_t durable) noexcept {
  if (durable == noted_durable_) return;
  noted_durable_ = durable;
  durable_moves_.fetch_add(1, std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_seq_cst)) FutexWakeOne(durable_moves_);
}

void ReplicationLink::DrainWake() noexcept {
  std::uint64_t count = 0;
  (void)!::read(wake_fd_, &count, sizeof(count));
}

void ReplicationLink::Wake() noexcept {
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

absl::Status ReplicationLink::WaitReplicated(
    std::uint64_t index, std::chrono::milliseconds timeout) {
  const std::int64_t deadline =
      base::MonotonicNs() +
      std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  while (replicated_index() < index) {
    if (failed()) return failure();
    if (base::MonotonicNs() >= deadline) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "journal index %d not acknowledged by the stream within %d ms "
          "(acknowledged up to %d)",
          index, timeout.count(), replicated_index()));
    }
    ::usleep(200);
  }
  return absl::OkStatus();
}

void ReplicationLink::OnAck(const replication::PublishAck& ack) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ack.message != first_in_flight_message_ ||
        in_flight_last_index_.empty()) {
      // The publisher reports in order; anything else is a bug here.
      failure_ = absl::InternalError(absl::StrFormat(
          "replication: acknowledgement for message %d, expected %d",
          ack.message, first_in_flight_message_));
      stats_.failures = 1;
      set_failed();
    } else {
      const std::uint64_t last = in_flight_last_index_.front();
      in_flight_last_index_.pop_front();
      ++first_in_flight_message_;
      ++stats_.acknowledged_messages;
      stats_.replicated_index = last;
      stats_.publish_latency.Record(
          static_cast<std::uint64_t>(ack.latency.count()));
      if (!failed()) set_replicated_index(last, std::memory_order_release);
    }
  }
  Wake();
}

void ReplicationLink::Fail(absl::Status status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed()) return;
    failure_ = std::move(status);
    stats_.failures = 1;
    set_failed();
  }
  Wake();
}

void ReplicationLink::ReportLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_.load(std::memory_order_acquire)) {
    const replication::MemberReport report{
        .name = options_.member_name,
        .role = failed() ? "stopped" : "primary",
        .epoch = options_.epoch,
        .applied_index = replicated_index(),
        .stream_sequence =
            stats_.start_stream_sequence + stats_.acknowledged_messages,
        .stored_unix_ns = 0};
    lock.unlock();
    const absl::Status put = board_->Put(report);
    lock.lock();
    ++(put.ok() ? stats_.member_reports : stats_.member_report_failures);
    report_wake_.wait_for(lock, options_.member_report_interval, [this] {
      return stop_.load(std::memory_order_acquire);
    });
  }
}

void ReplicationLink::Loop() {
  while (!stop_.load(std::memory_order_acquire)) {
    const std::uint32_t seen = durable_moves_.load(std::memory_order_seq_cst);
    if (absl::Status s = publisher_->failure(); !s.ok()) {
      Fail(std::move(s));
      return;
    }
    absl::Status published = PublishReady(seen);
    if (!published.ok()) {
      if (absl::IsCancelled(published)) continue;  // nothing ready
      Fail(std::move(published));
      return;
    }
    // Published something: look again at once.
  }
}

// Publishes what is durable and not yet sent, one message at a time.
// Cancelled: nothing was ready (after sleeping until the durable index moves
// or kIdleSleepNs passes).
absl::Status ReplicationLink::PublishReady(std::uint32_t seen) {
  replication::GroupMessageBuilder& builder = *builder_;
  builder.Start(options_.epoch);
  absl::Status add_error;
  for (;;) {
    const std::size_t room =
        (options_.max_message_bytes - builder.size()) / journal::kMaxRecordSize;
    if (room == 0) break;
    absl::StatusOr<std::size_t> n = follower_->Poll(
        [&](const journal::Record& record) {
          if (absl::Status s = builder.Add(record); !s.ok() && add_error.ok()) {
            add_error = std::move(s);
          }
        },
        room);
    if (!n.ok()) {
      return absl::Status(n.status().code(),
                          absl::StrFormat("replication: reading the local "
                                          "journal: %s",
                                          n.status().message()));
    }
    if (!add_error.ok()) return add_error;
    if (*n < room) break;  // everything durable is in
  }
  if (builder.record_count() == 0) {
    // `seen` was read before the poll: a NoteDurable since changed the word
    // and the wait returns at once.
    sleeping_.store(true, std::memory_order_seq_cst);
    if (!stop_.load(std::memory_order_acquire)) {
      FutexWait(durable_moves_, seen, kIdleSleepNs);
    }
    sleeping_.store(false, std::memory_order_relaxed);
    return absl::CancelledError();
  }
  const std::uint64_t first = builder.first_index();
  const std::uint64_t last = first + builder.record_count() - 1;
  // The replicated index counts on it: every message starts right after
  // the previous one (the first after the stream's last index; on an empty
  // stream, anywhere: the journal's first index).
  if (next_index_ != 0 && first != next_index_) {
    return absl::InternalError(absl::StrFormat(
        "replication: the local journal yielded index %d where %d was "
        "expected; nothing after %d is published",
        first, next_index_, next_index_ - 1));
  }
  next_index_ = last + 1;
  std::uint64_t expected_message = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    expected_message = first_in_flight_message_ + in_flight_last_index_.size();
    in_flight_last_index_.push_back(last);
    ++stats_.published_messages;
    stats_.published_records += builder.record_count();
  }
  const std::span<const std::byte> bytes = builder.Finish();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.published_bytes += bytes.size();
  }
  absl::StatusOr<std::uint64_t> message = publisher_->Publish(first, bytes);
  if (!message.ok()) return message.status();
  if (*message != expected_message) {
    return absl::InternalError(absl::StrFormat(
        "replication: the publisher numbered message %d, expected %d", *message,
        expected_message));
  }
  return absl::OkStatus();
}

}  // namespace orderwire::cluster
