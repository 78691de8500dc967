// ClusterMember: a member of an engine's cluster that is a hot standby until
// the primary goes away, then takes over and serves (`orderwire serve
// --standby`, docs/REPLICATION.md "The takeover", plan item 3).
//
// It runs a Standby (standby.h) and, after each Standby::Step, looks at the
// leadership lease (replication/lease.h) at most every lease_poll (D/12 by
// default) with LeaseMember::TryAcquire. The lease is taken only when its
// holder stopped renewing for D on this member's clock (epoch = previous +
// 1); a key that was never written is not taken (a standby replaces a
// primary, it never starts an engine). A lease step that fails (NATS
// unreachable, a timeout) is logged and following goes on: a NATS hiccup
// never ends a standby. Then, in this order:
//
//   1. the renewer starts at once (LeaseRenewer), and keeps running until
//      the service that serves takes it over: the lease never lapses;
//   2. catch up: the stream's last sequence S is read; Step until the
//      standby has followed S. Everything the old primary answered was
//      acknowledged by the stream, so it is in the stream by now;
//   3. Standby::Stop: everything appended durable and applied;
//   4. the epoch marker of the new epoch, next index = local last + 1, with
//      Nats-Expected-Last-Sequence = S. If another writer appended after S
//      (a paused old primary, JetStream error 10071), the marker is refused:
//      follow to the new last sequence, Stop, try again (at most
//      max_marker_attempts, then FailedPrecondition). The marker moves the
//      stream's last sequence: from now on the old primary is fenced;
//   5. the standby is closed and Service::Start runs on the SAME journal
//      directory (state/restart.h: the standby's snapshots and tail) with
//      the `replicated` durability (primary_replication.h), the held lease
//      and its renewer handed over (ReplicationOptions::held_lease). Its
//      ReplicationLink reads the marker
//      as the stream's end and publishes after it (expected last sequence = the
//      marker's).
// If the lease is lost before the marker (no renewal for D), the member
// goes back to following; after it, the service's own lease check stops it.
//
// A transient NATS error (replication/nats_error.h: a timeout, no
// responders, a connection lost or reconnecting: the stream's or a bucket's
// leader re-elected) in steps 2 and 4, opening the members bucket before
// step 5 and the service's replication link in step 5 (the service waits
// for NATS itself for up to ReplicationOptions::start_timeout, then hands
// the lease back), never ends the member while it holds the lease: logged
// ("... (transient; trying again while the lease is held, try N)"), retried
// after replication::TransientRetryWait (100 ms doubling to 1 s) while the
// lease is held (the same marker each time: a try that landed is
// acknowledged as a duplicate); lost meanwhile: following again. The
// standby's own follower re-opens after such errors (Standby::Step).
// Each step is logged with the UTC time (on_event): "lease acquired epoch
// N", "caught up to stream sequence S (index I)", "epoch marker published at
// sequence S", "serving on HOST:PORT as primary of epoch N".
//
// Stop (the flag given to Run) is honoured everywhere: while following, while
// catching up (the standby stops cleanly, no marker is published, the lease
// lapses) and while serving (Service::Run's clean stop).
//
// Threads: one thread calls Start and Run. role(), epoch() and
// serving_endpoint() may be read from any thread.
#ifndef ORDERWIRE_CLUSTER_CLUSTER_MEMBER_H_
#define ORDERWIRE_CLUSTER_CLUSTER_MEMBER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cluster/replication_options.h"
#include "cluster/standby.h"
#include "net/udp.h"
#include "replication/lease.h"
#include "service/service.h"

namespace orderwire::replication {
class JournalPublisher;
struct JournalStreamState;
}  // namespace orderwire::replication

namespace orderwire::cluster {

struct ClusterMemberOptions {
  // Following: NATS, the engine, the local journal, the configuration,
  // snapshots, member_name, on_event (also this member's lines).
  StandbyOptions standby;
  // false: a pure follower that never takes the lease (`--no-takeover`).
  bool takeover = true;
  // The primary this member becomes: listen, send path, snapshots, ...
  // (its `replication` hook is set by the member), and its `replication`
  // (window, ack timeout, replicas, lease: holder, D, margin, renew
  // interval, request timeout). The journal, the configuration, the NATS
  // servers, the engine and the member name are the standby's (set by the
  // member); the lease is the one taken (ReplicationOptions::held_lease).
  // `replication` and replication->lease must be set when takeover is.
  service::ServiceOptions primary;
  std::optional<ReplicationOptions> replication;
  // How often the lease is looked at while following; 0: D / 12.
  std::chrono::milliseconds lease_poll{0};
  // Epoch-marker attempts before the takeover gives up (fenced each time).
  int max_marker_attempts = 5;
  // Called on Run's thread once the primary has started (before it
  // serves), e.g. for the start-up banner. May be empty.
  std::function<void(const service::Service&)> on_primary_started;
  // Tests only, on Run's thread: right after the lease was acquired, and
  // right before each epoch marker is published.
  std::function<void()> after_acquire_for_tests;
  std::function<void()> before_marker_for_tests;
  // Tests only, on Run's thread: right before the primary is started.
  std::function<void()> before_primary_start_for_tests;
};

enum class MemberRole { kStandby, kTakingOver, kPrimary, kStopped };
std::string_view MemberRoleName(MemberRole role);

// What a takeover did (for tests and the log).
struct TakeoverReport {
  std::uint64_t epoch = 0;
  std::uint64_t caught_up_sequence = 0;  // the last one followed
  std::uint64_t caught_up_index = 0;     // the local journal's last index
  std::uint64_t marker_sequence = 0;
  int marker_attempts = 0;  // 1 unless fenced
  // Steps tried again after a transient NATS error while holding the lease.
  int transient_retries = 0;
};

class ClusterMember {
 public:
  // Starts the Standby (Standby::Start's errors) and opens the lease
  // (LeaseMember::Open; a failure here is logged and retried while
  // following). InvalidArgument: takeover without replication and its
  // lease.
  static absl::StatusOr<std::unique_ptr<ClusterMember>> Start(
      ClusterMemberOptions options);
  ~ClusterMember();
  ClusterMember(const ClusterMember&) = delete;
  ClusterMember& operator=(const ClusterMember&) = delete;

  // Follows, takes over when the lease expires (see above), then serves,
  // until `stop` or an error. OK after a clean stop in any role. Errors:
  // the standby's (a refused message), the takeover's (the marker fenced
  // max_marker_attempts times, the publish failed, Service::Start's), the
  // service's (Run).
  absl::Status Run(const std::atomic<bool>& stop);

  [[nodiscard]] MemberRole role() const { return role_.load(); }
  // The epoch held (0: none yet).
  [[nodiscard]] std::uint64_t epoch() const { return epoch_.load(); }
  // Where the primary listens, once serving.
  [[nodiscard]] std::optional<net::Endpoint> serving_endpoint() const;
  // On Run's thread, or after Run returned.
  [[nodiscard]] const TakeoverReport& takeover() const { return takeover_; }
  // The standby (null once closed for the takeover), the primary (null
  // before): on Run's thread (on_interval), or after Run returned.
  [[nodiscard]] Standby* standby() const { return standby_.get(); }
  [[nodiscard]] service::Service* primary() const { return primary_.get(); }

 private:
  explicit ClusterMember(ClusterMemberOptions options);
  // Follows until the lease is acquired (true), or stop (false).
  absl::StatusOr<bool> Follow(const std::atomic<bool>& stop);
  // One lease step (at most every lease_poll). true: acquired.
  bool PollLease();
  // Steps 2-4; Cancelled when stopped, Aborted when the lease was lost
  // (follow again).
  absl::Status CatchUpAndMark(const std::atomic<bool>& stop);
  // Step 2's read of the stream's state, a transient NATS error retried as
  // WaitToRetry says (its Cancelled or Aborted then); any other error
  // GetJournalStreamState's.
  absl::StatusOr<replication::JournalStreamState> ReadStreamState(
      const std::atomic<bool>& stop);
  // Step 4 after catching up to stream sequence `followed` (local last
  // index `last_index`), the `attempt`-th time: the marker published (a
  // transient failure retried as WaitToRetry says) and logged: true.
  // Fenced by another writer with attempts left: logged, false (follow
  // again). Errors: WaitToRetry's, the publisher's opening, any other
  // publish failure (its code, naming the epoch), FailedPrecondition when
  // fenced for the max_marker_attempts-th time.
  absl::StatusOr<bool> PublishMarker(int attempt, std::uint64_t followed,
                                     std::uint64_t last_index,
                                     const std::atomic<bool>& stop);
  // One try of the marker: a publisher opened into `publisher` (null when
  // it does not open; a previous one is replaced), the marker published and
  // flushed. Returns the opening's, the publish's or the flush's status.
  absl::Status TryPublishMarker(
      std::uint64_t followed, std::uint64_t last_index,
      std::unique_ptr<replication::JournalPublisher>& publisher);
  // Step until the standby has followed `sequence`.
  absl::Status FollowTo(std::uint64_t sequence, const std::atomic<bool>& stop);
  // After `step` failed on a transient NATS error: logs it and waits (100 ms
  // doubling to 1 s by `retries`). OK: try again; Cancelled: stopped;
  // Aborted: the lease was lost meanwhile (follow again).
  absl::Status WaitToRetry(std::string_view step, const absl::Status& error,
                           int& retries, const std::atomic<bool>& stop);
  [[nodiscard]] std::uint64_t Followed() const;
  // After the marker, before Service::Start (whose replication link opens
  // the members bucket, waiting for it only up to its start timeout):
  // waits while the bucket does not answer (a transient error, its leader
  // re-elected), retrying as WaitToRetry does. Other errors are left to
  // Service::Start.
  absl::Status WaitForTheMembersBucket(const std::atomic<bool>& stop);
  // Service::Start with the held lease (`stop` ends its own wait for
  // NATS); a transient NATS error it still fails on (the lease is handed
  // back) is retried as WaitToRetry does while the lease is held.
  absl::Status StartPrimary(const std::atomic<bool>& stop);
  void Event(std::string_view line) const;

  ClusterMemberOptions options_;
  replication::LeaseSpec lease_spec_;
  std::unique_ptr<Standby> standby_;
  std::unique_ptr<replication::LeaseMember> lease_;
  std::unique_ptr<replication::LeaseRenewer> renewer_;
  std::unique_ptr<service::Service> primary_;
  std::chrono::steady_clock::time_point next_lease_poll_{};
  std::string last_lease_error_;  // logged once until it changes
  std::string last_holder_;       // logged when it changes
  std::int64_t next_interval_ns_ = 0;
  TakeoverReport takeover_;
  std::atomic<MemberRole> role_{MemberRole::kStandby};
  std::atomic<std::uint64_t> epoch_{0};
  mutable std::mutex mutex_;
  std::optional<net::Endpoint> serving_;  // guarded by mutex_
};

}  // namespace orderwire::cluster

#endif  // ORDERWIRE_CLUSTER_CLUSTER_MEMBER_H_
