// ReplicationLink: the primary's side of the `replicated` durability mode
// (docs/REPLICATION.md, docs/SERVICE.md "Durability"): the service's
// ReplicationGate (service/replication_gate.h) on NATS JetStream, opened by
// the start hook (primary_replication.h). A thread of its own
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
// fence: a writer that appended since is refused with 10071). The stream
// must carry this journal (replication/journal_stream.h: a new stream is
// labelled with the local journal_id; one labelled with another is refused,
// FailedPrecondition naming both; an unlabelled one is accepted as it is,
// and the description says so).
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
#ifndef ORDERWIRE_CLUSTER_REPLICATION_LINK_H_
#define ORDERWIRE_CLUSTER_REPLICATION_LINK_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cluster/replication_options.h"
#include "service/replication_gate.h"

namespace orderwire::replication {
class JournalPublisher;
class MemberBoard;
class GroupMessageBuilder;
struct PublishAck;
}  // namespace orderwire::replication
namespace orderwire::journal {
class JournalFollower;
}  // namespace orderwire::journal

namespace orderwire::cluster {

class ReplicationLink final : public service::ReplicationGate {
 public:
  // See above. `journal_directory` is the local journal (already opened by
  // the service's writer), `local_last_index` its last index (L),
  // `journal_id` its id. Errors: NATS unreachable, the stream with other
  // settings or of another journal, a last message that does not parse,
  // L < R (FailedPrecondition), the publisher's.
  static absl::StatusOr<std::unique_ptr<ReplicationLink>> Open(
      const ReplicationOptions& options, const std::string& journal_directory,
      std::uint64_t local_last_index, std::uint64_t journal_id);

  ReplicationLink(const ReplicationLink&) = delete;
  ReplicationLink& operator=(const ReplicationLink&) = delete;
  // Stops the thread and the publisher (messages in flight are abandoned:
  // they may or may not be in the stream, and were never answered).
  ~ReplicationLink() override;

  // replicated_index() (the last journal index acknowledged by JetStream,
  // in order) and failed(): the gate's, one acquire load each. Hot path.
  [[nodiscard]] absl::Status failure() const override;
  // The local durable index moved to `durable`: wakes the link's thread if
  // it sleeps. Hot path: a store, and a futex wake only when it sleeps.
  void NoteDurable(std::uint64_t durable) noexcept override;
  // Readable (an eventfd) after an acknowledgement or a failure; the
  // service thread polls it and drains it with DrainWake().
  [[nodiscard]] int wake_fd() const noexcept override { return wake_fd_; }
  void DrainWake() noexcept override;
  // Blocks until replicated_index() >= index, the link fails, or `timeout`
  // passes. Cold (start-up and shutdown).
  absl::Status WaitReplicated(std::uint64_t index,
                              std::chrono::milliseconds timeout) override;
  // ReplicationOptions::ack_timeout.
  [[nodiscard]] std::chrono::milliseconds ack_timeout() const override {
    return options_.ack_timeout;
  }

  [[nodiscard]] service::ReplicationStats stats() const override;
  // One line for the start-up banner.
  [[nodiscard]] const std::string& description() const override {
    return description_;
  }

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
  service::ReplicationStats stats_;
};

}  // namespace orderwire::cluster

#endif  // ORDERWIRE_CLUSTER_REPLICATION_LINK_H_
