// ReplicationLink: the primary's side of the `replicated` durability mode
// (docs/REPLICATION.md, docs/SERVICE.md "Durability"). A thread of its own
// tails the LOCAL journal (journal::JournalFollower: records once they are
// durable on this disk), packs consecutive records into group messages
// (replication/group_message.h, at most max_message_bytes each and at most
// what is durable now), publishes them to the engine's journal stream with a
// replication::JournalPublisher, and publishes the "replicated index": the
// last journal index whose message JetStream has acknowledged, in order.
//
// The service thread answers a record only when its index is <= min(local
// durable index, replicated_index()): one acquire load, no lock, no
// allocation. After the durable index moves it calls NoteDurable(), which
// wakes the link's thread (a futex wake, only when that thread sleeps).
// Acknowledgements wake the service thread through wake_fd() (an eventfd it
// polls beside its socket).
//
// Start-up (Open): the stream's last message says the last replicated
// journal index R (its header, ParseGroupMessage). With the local journal's
// last index L: L > R: records R+1..L were durable here but never
// acknowledged (so never answered): they are published first; L < R: this
// node is behind the stream and must not serve: FailedPrecondition (run it
// as a standby first); an empty stream: everything from the journal's first
// index. The publisher expects the stream's last sequence read then (the
// fence: a writer that appended since is refused with 10071).
//
// Failure is fail-stop: the first publisher failure (fenced, acknowledgement
// timeout, connection closed, a local journal read error, ...) sets failed()
// (one acquire load), keeps failure() (what and why), and the replicated
// index never moves again. The service then answers nothing more and Run()
// returns the failure. Nothing acknowledged is lost: the local journal keeps
// every record.
//
// Threads: Open, the destructor and failure() from the service's thread;
// replicated_index(), failed() and NoteDurable() from it on the hot path;
// the link's thread and the publisher's acknowledgement thread inside.
#ifndef ORDERWIRE_SERVICE_REPLICATION_LINK_H_
#define ORDERWIRE_SERVICE_REPLICATION_LINK_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "replication/lease.h"
#include "service/latency_buckets.h"

namespace orderwire::replication {
class JournalPublisher;
class MemberBoard;
class GroupMessageBuilder;
struct PublishAck;
}  // namespace orderwire::replication
namespace orderwire::journal {
class JournalFollower;
}  // namespace orderwire::journal

namespace orderwire::service {

// A lease acquired before the service starts, and its running renewal.
struct HeldLease {
  std::unique_ptr<replication::LeaseMember> member;
  std::unique_ptr<replication::LeaseRenewer> renewer;
};

// The leadership lease (replication/lease.h) the primary holds while it
// serves in the replicated mode: acquired before it serves (its epoch becomes
// the journal messages' epoch), renewed by a LeaseRenewer thread, and checked
// (LeaseMember::StillLeader, one atomic load and a clock read) before each
// batch of answers.
struct LeaseOptions {
  // This member's name in the lease ([A-Za-z0-9_.:-], 1-64, unique per
  // member); empty: "<hostname>:<pid>".
  std::string holder;
  std::chrono::milliseconds duration{3000};  // D
  std::chrono::milliseconds safety_margin{500};
  std::chrono::milliseconds renew_interval{250};
  std::chrono::milliseconds request_timeout{1000};
  // How long Start() waits for a lease another member holds (its expiry
  // takes up to D after its holder stopped renewing).
  std::chrono::milliseconds acquire_wait{0};
};

// ReplicationOptions::start_timeout's default: several NATS re-elections
// (docs/REPLICATION.md "When NATS loses a leader": 4-9 s measured).
inline constexpr std::chrono::milliseconds kDefaultStartTimeout{30000};

struct ReplicationOptions {
  std::string servers;  // nats://HOST:PORT[,nats://HOST:PORT...]
  std::string engine_name = "main";
  int replicas = 1;  // of the journal stream: 1 or 3
  // Messages published and not yet acknowledged, at most (1 to 4096).
  std::uint32_t window = 32;
  // A message not acknowledged within this long fails the link.
  std::chrono::milliseconds ack_timeout{5000};
  // Connecting, reading the stream's last message.
  std::chrono::milliseconds connect_timeout{10000};
  // Service::Start: how long the start waits for NATS in all, counted from
  // its first transient NATS error (replication/nats_error.h: no answer in
  // time, no server reachable, no responders, the connection lost), while
  // it tries each NATS step again (service/internal/nats_start_wait.h); 0:
  // not at all. A definite refusal fails at once. `serve
  // --nats-start-timeout-s`.
  std::chrono::milliseconds start_timeout = kDefaultStartTimeout;
  // At most this many bytes per message (NATS max_payload is 1 MiB); a
  // single record is always sent.
  std::size_t max_message_bytes = std::size_t{256} * 1024;
  // The primary's epoch (the first part of every Nats-Msg-Id); with `lease`
  // the lease's epoch replaces it.
  std::uint64_t epoch = 1;
  // Set: hold the leadership lease while serving (see LeaseOptions).
  std::optional<LeaseOptions> lease;
  // With `lease`: a lease this member holds already, its renewer running (a
  // standby that took over, service/cluster_member.h). Service::Start takes
  // both over instead of acquiring (the renewal never pauses between the
  // acquisition and the first answer); `lease` then only describes it. A
  // lease that is no longer held (StillLeader false) is refused.
  std::shared_ptr<HeldLease> held_lease;
  // Not empty: this member's line in the engine's members bucket
  // (replication/cluster_status.h, `orderwire cluster status`), put every
  // member_report_interval from a thread of the link's own: role
  // "primary", the epoch, the replicated index as its applied index (the
  // service applies up to min(durable, replicated), and the link publishes
  // only durable records) and the stream sequence acknowledged. A put that
  // fails is counted, never fatal. With the lease, the service sets it to
  // the holder's name (':' written as '-': NATS keys cannot hold ':').
  std::string member_name;
  std::chrono::milliseconds member_report_interval{500};
};

// What the link counts; read with stats() from the service's thread.
struct ReplicationStats {
  std::uint64_t published_messages = 0;
  std::uint64_t published_records = 0;
  std::uint64_t published_bytes = 0;  // message bytes, headers included
  std::uint64_t acknowledged_messages = 0;
  std::uint64_t replicated_index = 0;
  std::uint64_t failures = 0;  // 0 or 1: the link stops at the first
  // Messages published again while the stream re-elected its leader
  // (JournalPublisher: no responders, no reply, a 10071 behind a gap).
  std::uint64_t republished_messages = 0;
  std::uint64_t member_reports = 0;          // lines put in the members
  std::uint64_t member_report_failures = 0;  // bucket, and puts that failed
  // Publish to acknowledgement, per message.
  LatencyBuckets publish_latency;
  // What Open found: the stream's last sequence and last replicated index.
  std::uint64_t start_stream_sequence = 0;
  std::uint64_t start_replicated_index = 0;
};

class ReplicationLink {
 public:
  // See above. `journal_directory` is the local journal (already opened by
  // the service's writer), `local_last_index` its last index (L). Errors:
  // NATS unreachable, the stream with other settings, a last message that
  // does not parse, L < R (FailedPrecondition), the publisher's.
  static absl::StatusOr<std::unique_ptr<ReplicationLink>> Open(
      const ReplicationOptions& options, const std::string& journal_directory,
      std::uint64_t local_last_index);

  ReplicationLink(const ReplicationLink&) = delete;
  ReplicationLink& operator=(const ReplicationLink&) = delete;
  // Stops the thread and the publisher (messages in flight are abandoned:
  // they may or may not be in the stream, and were never answered).
  ~ReplicationLink();

  // The last journal index acknowledged by JetStream (in order). Hot path.
  [[nodiscard]] std::uint64_t replicated_index() const noexcept {
    return replicated_.load(std::memory_order_acquire);
  }
  // Whether the link has failed (then failure() says why). Hot path.
  [[nodiscard]] bool failed() const noexcept {
    return failed_.load(std::memory_order_acquire);
  }
  [[nodiscard]] absl::Status failure() const;
  // The local durable index moved to `durable`: wakes the link's thread if
  // it sleeps. Hot path: a store, and a futex wake only when it sleeps.
  void NoteDurable(std::uint64_t durable) noexcept;
  // Readable (an eventfd) after an acknowledgement or a failure; the
  // service thread polls it and drains it with DrainWake().
  [[nodiscard]] int wake_fd() const noexcept { return wake_fd_; }
  void DrainWake() noexcept;
  // Blocks until replicated_index() >= index, the link fails, or `timeout`
  // passes. Cold (start-up and shutdown).
  absl::Status WaitReplicated(std::uint64_t index,
                              std::chrono::milliseconds timeout);

  [[nodiscard]] ReplicationStats stats() const;
  // One line for the start-up banner.
  [[nodiscard]] const std::string& description() const { return description_; }

 private:
  ReplicationLink() = default;
  void Loop();
  // The members-bucket reporter's thread (ReplicationOptions::member_name).
  void ReportLoop();
  void OnAck(const replication::PublishAck& ack);
  void Fail(absl::Status status);
  void Wake() noexcept;
  absl::Status PublishReady(std::uint32_t seen);

  ReplicationOptions options_;
  std::unique_ptr<journal::JournalFollower> follower_;
  std::unique_ptr<replication::JournalPublisher> publisher_;
  std::unique_ptr<replication::GroupMessageBuilder> builder_;
  std::string description_;
  int wake_fd_ = -1;
  std::thread thread_;
  std::unique_ptr<replication::MemberBoard> board_;
  std::thread report_thread_;
  std::condition_variable report_wake_;  // with mutex_; on stop

  std::atomic<std::uint64_t> replicated_{0};
  std::atomic<bool> failed_{false};
  std::atomic<bool> stop_{false};
  // The futex word the link's thread sleeps on (bumped by NoteDurable and
  // the destructor), and whether it sleeps now.
  std::atomic<std::uint32_t> durable_moves_{0};
  std::atomic<bool> sleeping_{false};
  std::uint64_t noted_durable_ = 0;  // the service thread's last NoteDurable
  // The link's thread: the journal index the next message must start at
  // (0: any, on an empty stream before the first message).
  std::uint64_t next_index_ = 0;

  mutable std::mutex mutex_;  // guards what follows
  absl::Status failure_;
  // Message number -> its last journal index, for those in flight.
  std::deque<std::uint64_t> in_flight_last_index_;
  std::uint64_t first_in_flight_message_ = 1;
  ReplicationStats stats_;
};

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_REPLICATION_LINK_H_
