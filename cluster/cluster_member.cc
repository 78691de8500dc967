// A standby that takes over; see cluster_member.h.
#include "cluster/cluster_member.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/clock.h"
#include "cluster/primary_replication.h"
#include "journal/writer.h"
#include "replication/cluster_status.h"
#include "replication/journal_publisher.h"
#include "replication/journal_stream.h"
#include "replication/nats_error.h"

namespace orderwire::cluster {
namespace {

// "2026-12-02T10:40:01.123456Z": the wall clock, for timing a takeover
// from the logs of several processes.
std::string UtcNow() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  tm utc{};
  ::gmtime_r(&now.tv_sec, &utc);
  return absl::StrFormat(
      "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", utc.tm_year + 1900, utc.tm_mon + 1,
      utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, now.tv_nsec / 1000);
}

// Bounds each request of the takeover (the stream's state, the members
// bucket). Short: a request sent while the stream has no leader is never
// answered, and one that failed is tried again (transient) while the lease
// is held, so a long bound only delays the takeover past the re-election.
constexpr std::chrono::milliseconds kRequestTimeout{2000};

// A NATS error that a later try may not have (replication/nats_error.h),
// e.g. while the stream's or the lease bucket's leader is re-elected.
using replication::IsTransientNatsError;

// Whether a try at publishing the epoch marker that failed with `published`
// may succeed again: `publisher` null (it did not open): a transient NATS
// error; else an ack timeout, a closed connection, or a transient NATS
// error the publisher did not classify.
bool IsTransientMarkerFailure(const replication::JournalPublisher* publisher,
                              const absl::Status& published) {
  return publisher == nullptr
             ? IsTransientNatsError(published)
             : publisher->failure_kind() ==
                       replication::PublisherFailure::kAckTimeout ||
                   publisher->failure_kind() ==
                       replication::PublisherFailure::kConnectionClosed ||
                   (publisher->failure_kind() ==
                        replication::PublisherFailure::kNone &&
                    IsTransientNatsError(published));
}

}  // namespace

std::string_view MemberRoleName(MemberRole role) {
  switch (role) {
    case MemberRole::kStandby:
      return "standby";
    case MemberRole::kTakingOver:
      return "taking over";
    case MemberRole::kPrimary:
      return "primary";
    case MemberRole::kStopped:
      return "stopped";
  }
  return "unknown";
}

ClusterMember::ClusterMember(ClusterMemberOptions options)
    : options_(std::move(options)) {}

ClusterMember::~ClusterMember() {
  // The renewal ends before the member it renews.
  renewer_.reset();
}

absl::StatusOr<std::unique_ptr<ClusterMember>> ClusterMember::Start(
    ClusterMemberOptions options) {
  if (options.takeover && (!options.replication.has_value() ||
                           !options.replication->lease.has_value())) {
    return absl::InvalidArgumentError(
        "a cluster member that takes over needs the primary's replication "
        "and lease options");
  }
  if (options.max_marker_attempts < 1) {
    return absl::InvalidArgumentError("max_marker_attempts: at least 1");
  }
  std::unique_ptr<ClusterMember> member(new ClusterMember(std::move(options)));
  ClusterMemberOptions& o = member->options_;
  if (o.takeover) {
    const LeaseOptions& lease = *o.replication->lease;
    replication::LeaseSpec& spec = member->lease_spec_;
    spec.servers = o.standby.nats_servers;
    spec.engine_name = o.standby.engine_name;
    spec.replicas = o.replication->replicas;
    spec.holder = lease.holder.empty() ? o.standby.member_name : lease.holder;
    spec.duration = lease.duration;
    spec.safety_margin = lease.safety_margin;
    spec.renew_interval = lease.renew_interval;
    spec.request_timeout = lease.request_timeout;
    spec.create_if_absent = false;
    if (absl::Status s = replication::ValidateLeaseHolder(spec.holder);
        !s.ok()) {
      return s;
    }
    if (o.lease_poll.count() <= 0) {
      o.lease_poll = std::max(std::chrono::milliseconds(1),
                              std::chrono::milliseconds(lease.duration / 12));
    }
  }
  absl::StatusOr<std::unique_ptr<Standby>> standby = Standby::Start(o.standby);
  if (!standby.ok()) return standby.status();
  member->standby_ = std::move(*standby);
  return member;
}

void ClusterMember::Event(std::string_view line) const {
  const std::string stamped = absl::StrFormat("%s %s", UtcNow(), line);
  if (options_.standby.on_event) {
    options_.standby.on_event(stamped);
  } else {
    std::fprintf(stderr, "%s\n", stamped.c_str());
  }
}

std::optional<net::Endpoint> ClusterMember::serving_endpoint() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return serving_;
}

std::uint64_t ClusterMember::Followed() const {
  const StandbyStats stats = standby_->stats();
  // A standby whose journal held everything follows from last + 1 and may
  // not have received a message yet.
  return std::max(stats.stream_sequence,
                  stats.start_sequence == 0 ? 0 : stats.start_sequence - 1);
}

bool ClusterMember::PollLease() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_lease_poll_) return false;
  next_lease_poll_ = now + options_.lease_poll;
  const auto log_error = [&](const absl::Status& status) {
    const std::string text(status.message());
    if (text != last_lease_error_) {
      Event(absl::StrFormat(
          "lease %s: %s (following goes on)",
          replication::LeaseBucketName(options_.standby.engine_name), text));
      last_lease_error_ = text;
    }
  };
  if (lease_ == nullptr) {
    absl::StatusOr<std::unique_ptr<replication::LeaseMember>> opened =
        replication::LeaseMember::Open(lease_spec_);
    if (!opened.ok()) {
      log_error(opened.status());
      return false;
    }
    lease_ = std::move(*opened);
  }
  absl::StatusOr<replication::AcquireResult> step = lease_->TryAcquire();
  if (!step.ok()) {
    log_error(step.status());
    return false;
  }
  last_lease_error_.clear();
  if (step->outcome != replication::AcquireOutcome::kAcquired) {
    const std::string holder =
        step->holder.empty()
            ? std::string("nobody (the lease was never taken)")
            : absl::StrFormat("%s (epoch %d)", step->holder, step->epoch);
    if (holder != last_holder_) {
      Event(absl::StrFormat("lease held by %s", holder));
      last_holder_ = holder;
    }
    return false;
  }
  epoch_.store(step->epoch);
  takeover_ = TakeoverReport{.epoch = step->epoch};
  // Renewed from now on, until the service takes the renewal over.
  renewer_ = std::make_unique<replication::LeaseRenewer>(*lease_);
  Event(absl::StrFormat("lease acquired epoch %d (was held by %s)", step->epoch,
                        last_holder_));
  return true;
}

absl::StatusOr<bool> ClusterMember::Follow(const std::atomic<bool>& stop) {
  const StandbyOptions& o = options_.standby;
  const auto interval_ns = static_cast<std::int64_t>(o.interval_s * 1e9);
  if (next_interval_ns_ == 0) {
    next_interval_ns_ = base::MonotonicNs() + interval_ns;
  }
  while (!stop.load(std::memory_order_relaxed)) {
    if (absl::Status s = standby_->Step(o.poll); !s.ok()) return s;
    if (interval_ns > 0 && o.on_interval &&
        base::MonotonicNs() >= next_interval_ns_) {
      o.on_interval();
      next_interval_ns_ = base::MonotonicNs() + interval_ns;
    }
    if (options_.takeover && PollLease()) return true;
  }
  return false;
}

absl::Status ClusterMember::FollowTo(std::uint64_t sequence,
                                     const std::atomic<bool>& stop) {
  for (;;) {
    // Looked at before the first step too: a stop asked for during the
    // takeover publishes no marker, even when nothing is left to follow.
    if (stop.load(std::memory_order_relaxed)) {
      return absl::CancelledError("stopped while catching up");
    }
    if (Followed() >= sequence) break;
    if (!lease_->StillLeader(replication::LeaseClock::now())) {
      return absl::AbortedError(absl::StrFormat(
          "lost the lease (epoch %d) while catching up to stream sequence %d "
          "(followed %d)",
          takeover_.epoch, sequence, Followed()));
    }
    if (absl::Status s = standby_->Step(options_.standby.poll); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status ClusterMember::WaitToRetry(std::string_view step,
                                        const absl::Status& error, int& retries,
                                        const std::atomic<bool>& stop) {
  ++retries;
  ++takeover_.transient_retries;
  Event(absl::StrFormat(
      "%s: %s (transient; trying again while the lease is held, try %d)", step,
      error.message(), retries + 1));
  const auto until = std::chrono::steady_clock::now() +
                     replication::TransientRetryWait(retries);
  for (;;) {
    if (stop.load(std::memory_order_relaxed)) {
      return absl::CancelledError(
          absl::StrFormat("stopped while retrying: %s", step));
    }
    if (!lease_->StillLeader(replication::LeaseClock::now())) {
      return absl::AbortedError(absl::StrFormat(
          "lost the lease (epoch %d) while retrying %s (last error: %s)",
          takeover_.epoch, step, error.message()));
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return absl::OkStatus();
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(
        until - now, std::chrono::milliseconds(20)));
  }
}

absl::Status ClusterMember::CatchUpAndMark(const std::atomic<bool>& stop) {
  for (int attempt = 1;; ++attempt) {
    absl::StatusOr<replication::JournalStreamState> stream =
        ReadStreamState(stop);
    if (!stream.ok()) return stream.status();
    if (absl::Status s = FollowTo(stream->last_sequence, stop); !s.ok()) {
      return s;
    }
    if (absl::Status s = standby_->Stop(); !s.ok()) return s;
    const std::uint64_t followed = Followed();
    const std::uint64_t last_index = standby_->stats().appended_index;
    takeover_.caught_up_sequence = followed;
    takeover_.caught_up_index = last_index;
    Event(absl::StrFormat("caught up to stream sequence %d (index %d)",
                          followed, last_index));
    if (options_.before_marker_for_tests) options_.before_marker_for_tests();
    if (!lease_->StillLeader(replication::LeaseClock::now())) {
      return absl::AbortedError(
          absl::StrFormat("lost the lease (epoch %d) before the epoch marker",
                          takeover_.epoch));
    }
    takeover_.marker_attempts = attempt;
    absl::StatusOr<bool> published =
        PublishMarker(attempt, followed, last_index, stop);
    if (!published.ok()) return published.status();
    if (*published) return absl::OkStatus();
  }
}

absl::StatusOr<replication::JournalStreamState> ClusterMember::ReadStreamState(
    const std::atomic<bool>& stop) {
  const StandbyOptions& o = options_.standby;
  for (int retries = 0;;) {
    absl::StatusOr<replication::JournalStreamState> stream =
        replication::GetJournalStreamState(o.nats_servers, o.engine_name,
                                           kRequestTimeout);
    if (stream.ok() || !IsTransientNatsError(stream.status())) return stream;
    if (absl::Status s = WaitToRetry("reading the stream's last sequence",
                                     stream.status(), retries, stop);
        !s.ok()) {
      return s;
    }
  }
}

absl::StatusOr<bool> ClusterMember::PublishMarker(
    int attempt, std::uint64_t followed, std::uint64_t last_index,
    const std::atomic<bool>& stop) {
  const StandbyOptions& o = options_.standby;
  // The same marker (Msg-Id "<epoch>-marker", expected last sequence
  // `followed`) until it is acknowledged or refused: a try that did land
  // is acknowledged again as a duplicate.
  std::unique_ptr<replication::JournalPublisher> publisher;
  absl::Status published;
  for (int retries = 0;;) {
    published = TryPublishMarker(followed, last_index, publisher);
    if (published.ok() ||
        !IsTransientMarkerFailure(publisher.get(), published)) {
      break;
    }
    if (absl::Status s = WaitToRetry("publishing the epoch marker", published,
                                     retries, stop);
        !s.ok()) {
      return s;
    }
  }
  if (publisher == nullptr) return published;
  if (published.ok()) {
    takeover_.marker_sequence = publisher->progress().last_stream_sequence;
    Event(absl::StrFormat(
        "epoch marker published at sequence %d (epoch %d, next index %d)",
        takeover_.marker_sequence, takeover_.epoch, last_index + 1));
    return true;
  }
  if (publisher->failure_kind() != replication::PublisherFailure::kFenced) {
    return absl::Status(published.code(),
                        absl::StrFormat("publishing the epoch %d marker: %s",
                                        takeover_.epoch, published.message()));
  }
  if (attempt >= options_.max_marker_attempts) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the epoch %d marker was fenced %d times (another writer keeps "
        "appending to stream %s after the sequence followed): not taking "
        "over; last: %s",
        takeover_.epoch, attempt, replication::JournalStreamName(o.engine_name),
        published.message()));
  }
  Event(absl::StrFormat(
      "epoch marker fenced (another writer appended after sequence %d): "
      "following again (attempt %d of %d)",
      followed, attempt + 1, options_.max_marker_attempts));
  return false;
}

absl::Status ClusterMember::TryPublishMarker(
    std::uint64_t followed, std::uint64_t last_index,
    std::unique_ptr<replication::JournalPublisher>& publisher) {
  const StandbyOptions& o = options_.standby;
  const ReplicationOptions& r = *options_.replication;
  replication::PublisherOptions publisher_options;
  publisher_options.servers = o.nats_servers;
  publisher_options.stream.engine_name = o.engine_name;
  publisher_options.stream.replicas = r.replicas;
  publisher_options.epoch = takeover_.epoch;
  publisher_options.window = 1;
  publisher_options.ack_timeout = r.ack_timeout;
  publisher_options.expected_last_sequence = followed;
  publisher_options.on_event = [this](const std::string& line) { Event(line); };
  absl::StatusOr<std::unique_ptr<replication::JournalPublisher>> opened =
      replication::JournalPublisher::Open(std::move(publisher_options));
  if (!opened.ok()) {
    publisher.reset();
    return opened.status();
  }
  publisher = *std::move(opened);
  absl::Status published =
      publisher->PublishEpochMarker(last_index + 1).status();
  if (published.ok()) published = publisher->Flush(r.ack_timeout);
  return published;
}

absl::Status ClusterMember::WaitForTheMembersBucket(
    const std::atomic<bool>& stop) {
  const StandbyOptions& o = options_.standby;
  const ReplicationOptions& r = *options_.replication;
  for (int retries = 0;;) {
    absl::StatusOr<std::unique_ptr<replication::MemberBoard>> board =
        replication::MemberBoard::Open(o.nats_servers, o.engine_name,
                                       r.replicas, kRequestTimeout);
    if (board.ok() || !IsTransientNatsError(board.status())) {
      return absl::OkStatus();
    }
    if (absl::Status s = WaitToRetry("opening the members bucket",
                                     board.status(), retries, stop);
        !s.ok()) {
      return s;
    }
  }
}

absl::Status ClusterMember::StartPrimary(const std::atomic<bool>& stop) {
  service::ServiceOptions options = options_.primary;
  const StandbyOptions& o = options_.standby;
  options.journal.directory = o.journal.directory;
  // The replicated mode's local durability (a group and a sync, then
  // published), whatever the standby wrote with.
  options.journal.durability = journal::Durability::kBatch;
  options.journal.segment_size = o.journal.segment_size;
  options.journal.accept_loss = o.journal.accept_loss;
  options.config = o.config;
  options.reconfigure = false;  // the standby pinned what it was given
  options.restart_from_snapshot = o.restart_from_snapshot;
  if (!options.on_event) options.on_event = o.on_event;
  ReplicationOptions r = *options_.replication;
  r.servers = o.nats_servers;
  r.engine_name = o.engine_name;
  if (r.member_name.empty()) r.member_name = o.member_name;
  LeaseOptions& lease = *r.lease;
  lease.holder = lease_spec_.holder;
  // The standby's writer and follower are closed before the service opens
  // the journal again.
  standby_.reset();
  if (options_.before_primary_start_for_tests) {
    options_.before_primary_start_for_tests();
  }
  absl::StatusOr<std::unique_ptr<service::Service>> service;
  for (int retries = 0;;) {
    const auto held = std::make_shared<HeldLease>();
    held->member = std::move(lease_);
    held->renewer = std::move(renewer_);
    r.held_lease = held;
    // The service's own wait for NATS (ReplicationOptions::start_timeout)
    // ends on a stop too.
    options.replication = ReplicatedDurability(r, &stop);
    service = service::Service::Start(options);
    if (service.ok()) break;
    // The service gives a lease it could not serve with back (its
    // replication link failed to open: the stream or the members bucket
    // did not answer in time).
    lease_ = std::move(held->member);
    renewer_ = std::move(held->renewer);
    if (lease_ == nullptr || renewer_ == nullptr ||
        !IsTransientNatsError(service.status())) {
      return service.status();
    }
    if (absl::Status s = WaitToRetry("starting the primary", service.status(),
                                     retries, stop);
        !s.ok()) {
      return s;
    }
  }
  primary_ = std::move(*service);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    serving_ = primary_->local_endpoint();
  }
  role_.store(MemberRole::kPrimary);
  Event(absl::StrFormat("serving on %s as primary of epoch %d",
                        primary_->local_endpoint().ToString(),
                        takeover_.epoch));
  if (options_.on_primary_started) options_.on_primary_started(*primary_);
  return absl::OkStatus();
}

absl::Status ClusterMember::Run(const std::atomic<bool>& stop) {
  absl::Status status;
  bool marked = false;
  for (;;) {
    absl::StatusOr<bool> acquired = Follow(stop);
    if (!acquired.ok() || !*acquired) {
      status = acquired.ok() ? absl::OkStatus() : acquired.status();
      break;
    }
    role_.store(MemberRole::kTakingOver);
    if (options_.after_acquire_for_tests) options_.after_acquire_for_tests();
    status = CatchUpAndMark(stop);
    if (status.ok()) {
      marked = true;
      break;
    }
    // Not taking over: the renewal stops, the lease lapses.
    renewer_.reset();
    epoch_.store(0);
    if (absl::IsAborted(status)) {
      Event(absl::StrFormat("%s: following again", status.message()));
      lease_.reset();
      role_.store(MemberRole::kStandby);
      status = absl::OkStatus();
      continue;
    }
    if (absl::IsCancelled(status)) {
      Event(
          "stopped while taking over: no epoch marker published, the "
          "lease lapses");
      status = absl::OkStatus();
    }
    break;
  }
  if (marked && !stop.load()) status = WaitForTheMembersBucket(stop);
  if (marked && status.ok() && !stop.load()) {
    status = StartPrimary(stop);
    if (status.ok()) {
      status = primary_->Run(stop);
      role_.store(MemberRole::kStopped);
      return status;
    }
  }
  if (standby_ != nullptr) {
    if (absl::Status s = standby_->Stop(); !s.ok() && status.ok()) status = s;
    standby_->Report("stopped");
  }
  renewer_.reset();
  role_.store(MemberRole::kStopped);
  return status;
}

}  // namespace orderwire::cluster
