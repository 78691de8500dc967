// The UDP order-entry service; see service.h.
#include "service/service.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "auth/mac.h"
#include "base/clock.h"
#include "codec/command.h"
#include "codec/datagram.h"
#include "codec/frame.h"
#include "feed/session.h"
#include "journal/format.h"
#include "journal/prune.h"
#include "journal/start.h"
#include "service/feed_replica.h"
#include "service/metrics/metrics.h"
#include "service/retention.h"
#include "service/sequencer.h"
#include "state/pinned_config.h"
#include "state/record_flags.h"
#include "state/report_regenerator.h"
#include "state/restart.h"
#include "state/snapshot.h"
#include "state/state_machine.h"

namespace orderwire::service {
namespace {

using state::Output;
using state::PinnedConfigOf;
using state::Record;
using state::RegenerationCounters;
using state::RegenerationRequest;
using state::ReportRegenerator;
using state::ReportRegeneratorOptions;
using state::RestartedJournal;
using state::RestartFromJournal;
using state::SessionState;
using state::SnapshotDirectory;
using state::SnapshotFileName;
using state::SnapshotInfo;
using state::StateMachine;
using state::StateMachineOptions;
using state::StateMachineStats;
using state::WriteSnapshot;

using base::MonotonicNs;
using base::RealtimeNs;

// A SequenceGap is sent at most once per session per this long, unless the
// client has answered the previous one (a round trip on loopback is tens of
// microseconds; a lost gap report is retried after this).
constexpr std::int64_t kGapRepeatNs = 2'000'000;
// The same for sending a session's reports again on a duplicate command.
constexpr std::int64_t kResendRepeatNs = 2'000'000;
// The same for Busy (docs/PROTOCOL.md "Busy").
constexpr std::int64_t kBusyRepeatNs = 2'000'000;
// At most one refusal log line per cause per this long.
constexpr std::int64_t kRefusalLogEveryNs = 1'000'000'000;
// With ServiceOptions::metrics: the counters are published at most this
// often while the loop is busy (and whenever it goes idle).
constexpr std::int64_t kPublishEveryNs = 1'000'000;
// How often sessions are checked for a lapse (docs/CONTROLS.md: a lapse
// comes at most about this late).
constexpr std::int64_t kLapseSweepNs = 100'000'000;
// At most this many lapses a look: a look after a long silence (or a
// liveness timeout newly configured over many sessions) spreads its lapses
// and their cancels over several loops instead of one long stall.
constexpr std::uint32_t kMaxLapsesPerSweep = 64;

// SequenceGap(1) answers to datagrams of sessions the service does not hold
// (docs/PROTOCOL.md "A session begins with frame 1"): at most this many per
// kGapRepeatNs across all such sessions.
constexpr std::uint32_t kNewSessionGapsPerWindow = 64;
// Reports made again from the journal sent per loop pass (about 80 ns
// each: the loop stays responsive while a job streams), and the jobs in a
// row one session's resend may take when its history keeps moving past
// their ends.
constexpr std::size_t kRegeneratedPerPass = 1024;
constexpr std::uint32_t kMaxRegenerationContinuations = 8;
// The owner of a send slot that belongs to no session.
constexpr std::uint32_t kNoOwner = UINT32_MAX;

StateMachineOptions MachineOptions(const ServiceOptions& options) {
  return StateMachineOptions{
      .engine = options.config.engine,
      .max_sessions = options.config.max_sessions,
      .report_history = options.report_history,
      .history_budget_bytes =
          static_cast<std::size_t>(options.config.max_report_history_bytes),
  };
}

// Writes the child's error message to `fd` (at most PIPE_BUF bytes: one
// write, never interleaved) and ignores a failure: the exit status says it
// failed anyway.
void ReportToParent(int fd, std::string_view message) {
  const std::size_t size = std::min<std::size_t>(message.size(), PIPE_BUF);
  (void)!::write(fd, message.data(), size);
}

}  // namespace

class Service::Impl final : public Sequencer::Backpressure,
                            public JournaledSessions {
 public:
  explicit Impl(ServiceOptions options)
      : options_(std::move(options)),
        machine_(std::make_unique<StateMachine>(MachineOptions(options_))),
        rx_(options_.batch),
        tx_(options_.batch),
        tx_owner_(options_.batch),
        tx_next_(options_.batch, -1),
        tx_follows_(options_.batch, 0),
        tx_order_(options_.batch) {}

  ~Impl() {
    // A snapshot still being written is waited for (within the stop's
    // bound): the file it publishes is whole or absent either way, but a
    // stopped service leaves no child.
    FinishSnapshotAtStop();
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  absl::Status Start();
  absl::Status Run(const std::atomic<bool>& stop);
  // With ServiceOptions::retain: starts the retention thread (stopped when
  // Run() returns).
  void StartRetention();
  // Starts the live feed and the request server: from the recovered
  // state (`new_session_at` 0), or at sequence 1 of the feed session the
  // record `new_session_at` begins, before it is applied (after an
  // accepted loss). Once.
  void StartFeed(std::uint64_t new_session_at);
  bool WaitForJournal() override;
  // The StateMachine's next sequence of session `id` (0: the journal holds
  // none): every record of a session the table does not hold is applied.
  std::uint64_t NextExpected(std::uint32_t id) const override {
    const SessionState* state = machine_->Find(id);
    return state != nullptr ? state->next_expected : 0;
  }
  void RefreshStats() const;
  // With ServiceOptions::metrics: the counters, published for the metrics
  // thread. About a microsecond; no allocation.
  void PublishMetrics() {
    RefreshStats();
    options_.metrics->Publish(stats_);
    next_publish_ns_ = now_ns_ + kPublishEveryNs;
  }

  ServiceOptions options_;
  std::unique_ptr<StateMachine> machine_;
  std::unique_ptr<journal::JournalWriter> writer_;
  std::unique_ptr<Sequencer> sequencer_;
  std::unique_ptr<RetentionWorker> retention_;  // while Run() runs
  // ServiceOptions::replication: the gate its start hook gave; records are
  // answered up to min(durable, gate_->replicated_index()).
  std::unique_ptr<ReplicationGate> gate_;
  bool replication_failure_logged_ = false;
  // With a leadership check (the lease): asked before each batch of
  // answers (renewal stopped when Run() returns).
  std::unique_ptr<LeadershipCheck> leadership_;
  // The service's mode:
  //   kServing      journals and answers commands;
  //   kJournalFull  the journal has no room for its next segment: new
  //                 commands are answered Busy, everything journaled is
  //                 answered; back to kServing once the journal has found
  //                 space (EnterJournalFull, CheckJournalResumed);
  //   kStopped      nothing more is journaled or answered, and Run()
  //                 returns StopStatus(). Never left. stop_cause_ says why.
  // The journal's and the stream's failures happen off the loop (in the
  // writer's completions, on the publisher's thread): Stopped() notices
  // them.
  enum class Mode : std::uint8_t { kServing, kJournalFull, kStopped };
  enum class StopCause : std::uint8_t {
    kNone,
    kJournal,       // the writer failed: writer_->status()
    kStateMachine,  // the StateMachine refused a record: state_refusal_
    kReplication,   // the gate failed: gate_->failure()
    kLeaseLost,     // the leadership check said no
  };
  Mode mode_ = Mode::kServing;
  StopCause stop_cause_ = StopCause::kNone;
  absl::Status state_refusal_;
  std::optional<net::UdpSocket> socket_;
  net::Endpoint local_;
  net::DatagramBatch rx_;
  net::DatagramBatch tx_;
  std::size_t tx_used_ = 0;  // slots of tx_ holding datagrams to send
  std::vector<std::uint32_t> tx_owner_;  // Session::index (or kNoOwner)
  // Segmented sending: the slot of the owner's next datagram (-1: none),
  // whether a slot follows another of its owner's, and the send order
  // FlushOutput builds from them (each session's datagrams together, in
  // order; sessions in the order of their first datagram).
  std::vector<std::int32_t> tx_next_;
  std::vector<std::uint8_t> tx_follows_;
  std::vector<std::uint32_t> tx_order_;
  bool send_segmented_ = false;  // the path in use (ServiceOptions::send)
  // The Sequencer's session of each StateMachine session (by its index),
  // found once per session: routing a report is then two array reads.
  std::vector<Session*> by_state_;
  std::uint64_t records_at_start_ = 0;  // machine_'s count after Start()
  // Snapshots while serving (service.h). At most one child at a time.
  std::uint64_t snapshot_base_index_ = 0;  // index of the last one begun
  std::int64_t snapshot_base_ns_ = 0;      // and when
  pid_t snapshot_child_ = -1;
  int snapshot_report_fd_ = -1;  // read end: the child's error message
  std::uint64_t snapshot_child_index_ = 0;
  std::int64_t snapshot_child_started_ns_ = 0;
  std::int64_t next_reap_ns_ = 0;
  // The journal's segments made smaller for lack of space: counted by the
  // writer; whether the service said so (until whole ones fit again).
  std::uint64_t reduced_segments_seen_ = 0;
  bool reduced_segments_logged_ = false;
  // Reports made again from the journal (report_regenerator.h); null until
  // Start() has the journal. Continuations: jobs in a row for the active
  // session because its history moved past a job's end meanwhile.
  std::unique_ptr<ReportRegenerator> regenerator_;
  // ServiceOptions::market_data: the live feed (null: none).
  std::unique_ptr<FeedPublisher> publisher_;
  bool feed_started_ = false;  // StartFeed() ran
  // ServiceOptions::md_requests (null: none); its thread runs from Run().
  std::unique_ptr<FeedRequestServer> request_server_;
  std::uint32_t regeneration_continuations_ = 0;
  // Unlisted sessions that gave their slot back (RecycleIdleSessions), the
  // next sweep, and whether the histories of the sessions not held since
  // the start were released (ReleaseIdleHistories, once).
  std::int64_t next_recycle_sweep_ns_ = 0;
  bool released_unheld_ = false;
  std::int64_t next_publish_ns_ = 0;
  // The current window of SequenceGap(1) answers without a session.
  std::int64_t new_session_gap_window_ns_ = 0;
  std::uint32_t new_session_gaps_in_window_ = 0;
  // The sessions answered so last, by a hash of the id (a collision only
  // lets a second answer through): one SequenceGap(1) per session per
  // round trip without keeping a session.
  struct RecentGap {
    std::uint32_t id = 0;
    std::int64_t sent_ns = 0;
  };
  std::array<RecentGap, 256> recent_new_session_gaps_{};
  std::int64_t started_ns_ = 0;
  std::int64_t snapshot_every_ns_ = 0;
  std::int64_t next_idle_sweep_ns_ = 0;
  // LapseSilentSessions: the next sweep; whether any session may lapse;
  // per StateMachine session index, when a session given back its slot was
  // last heard (0: not since the start) and the index of the last lapse
  // journaled for it (until applied, no other is).
  std::int64_t next_lapse_sweep_ns_ = 0;
  bool any_liveness_ = false;
  std::vector<std::int64_t> released_heard_ns_;
  std::vector<std::uint64_t> lapse_journaled_at_;
  // The counters: the loop's own are counted here directly, the rest filled
  // in by RefreshStats (mutable: the const accessors refresh them).
  mutable ServiceStats stats_;
  std::string startup_report_;
  std::string startup_warning_;
  std::int64_t now_ns_ = 0;
  // Per refusal cause: when a line was last written, and refusals since.
  std::array<std::int64_t, kAdmissionCount> refusal_logged_ns_{};
  std::array<std::uint64_t, kAdmissionCount> refusals_unlogged_{};

 private:
  void LogRefusal(Admission cause, std::uint32_t session_id,
                  const net::Endpoint& source);
  void ProcessDatagram(std::size_t slot, std::uint64_t receive_ns);
  // After records were applied: forks a snapshot child when one is due and
  // none is running. A few comparisons when none is due.
  void MaybeSnapshot() {
    const std::uint64_t index = machine_->last_index();
    if (snapshot_child_ > 0 || index == snapshot_base_index_) return;
    const bool due_records =
        options_.snapshot_every_records != 0 &&
        index - snapshot_base_index_ >= options_.snapshot_every_records;
    const bool due_time = snapshot_every_ns_ != 0 &&
                          now_ns_ - snapshot_base_ns_ >= snapshot_every_ns_;
    if (due_records || due_time) [[unlikely]] {
      StartSnapshot();
    }
  }
  // Forks the child that writes the snapshot at machine_->last_index().
  void StartSnapshot();
  // The child: writes the snapshot from its copy-on-write image, exits.
  [[noreturn]] void RunSnapshotChild(int report_fd);
  // Collects the child if it has exited (never waits): counts it, logs a
  // failure with the child's own message. A child running past
  // snapshot_child_limit_s is killed first (failed, said so).
  void ReapSnapshot();
  // At a stop: waits for a running child at most snapshot_stop_wait_s, then
  // kills it (failed, said so).
  void FinishSnapshotAtStop();
  // Kills the running child and collects it (SIGKILL, then waitpid).
  void KillSnapshotChild();
  // Applies every pending record the journal has made durable (and, with
  // replication, the stream has acknowledged) and sends their reports.
  void ApplyDurable();
  // With replication: runs the start hook (replication_gate.h), which
  // returns once every local record is replicated (Start()).
  absl::Status StartReplication();
  // With replication: blocks until an acknowledgement (or a failure) comes,
  // a datagram arrives on the socket (with_socket), or timeout_ms passes.
  void WaitForReplication(bool with_socket, int timeout_ms);
  // Enters kStopped (once: the first cause stays).
  void Stop(StopCause cause) noexcept {
    if (mode_ == Mode::kStopped) return;
    mode_ = Mode::kStopped;
    stop_cause_ = cause;
  }
  // Whether the service is stopped, noticing a failed journal or stream on
  // the way. While serving: one load of the writer's state and one acquire
  // load of the gate's.
  bool Stopped() noexcept {
    if (mode_ == Mode::kStopped) [[unlikely]] {
      return true;
    }
    if (writer_->failed()) [[unlikely]] {
      Stop(StopCause::kJournal);
      return true;
    }
    if (gate_ != nullptr && gate_->failed()) [[unlikely]] {
      Stop(StopCause::kReplication);
      return true;
    }
    return false;
  }
  // What Run() returns once stopped; a replication failure or the lost
  // lease is also logged (once).
  absl::Status StopStatus();
  // The gate's failure or the lost leadership, as StopStatus() words it.
  absl::Status ReplicationFailed();
  // With a leadership check: whether this primary may still answer now
  // (else the service stops). For the lease: one atomic load and a clock
  // read.
  bool StillLeader() noexcept {
    if (leadership_ == nullptr) return true;
    if (!leadership_->StillLeader()) [[unlikely]] {
      Stop(StopCause::kLeaseLost);
      return false;
    }
    return true;
  }
  // The serving loop (Run() stops the lease's renewal after it).
  absl::Status RunLoop(const std::atomic<bool>& stop);
  // RunLoop's end, once `stop` is set: flush, wait for the stream, apply,
  // answer, close the journal, reap a snapshot child.
  absl::Status Shutdown();
  Session* SessionOfState(std::uint32_t state_index);
  void Emit(Session& session, std::span<const std::byte> frame);
  void SendGap(Session& session);
  void SendBusy(Session& session);
  // The disk-full state: entered on a kJournalFull, left once the journal
  // found space; each change logged once.
  void EnterJournalFull();
  void CheckJournalResumed();
  // Logs when the journal begins to make smaller segments, and when whole
  // ones fit again. A few loads; called while the writer has made a smaller
  // segment not yet seen, or until whole ones fit again.
  void CheckSegmentSizes();
  void Log(const std::string& line);
  // SequenceGap(1) to `peer` for session `id`, which the service does not
  // hold; rate-limited across all such sessions.
  void SendNewSessionGap(std::uint32_t id, const net::Endpoint& peer);
  // HeartbeatAck for `session`, or (null) for session `id` the service
  // holds no state for, at `peer` (docs/CONTROLS.md "Heartbeats").
  void SendHeartbeatAck(Session* session, std::uint32_t id,
                        const net::Endpoint& peer, std::uint64_t nonce);
  // One control frame to a session the table does not hold, at most one
  // per session per 2 ms and kNewSessionGapsPerWindow a window across all
  // (docs/PROTOCOL.md "A session begins with frame 1"); false when not
  // sent (counted).
  bool AnswerUnheldSession(std::uint32_t id, const net::Endpoint& peer,
                           std::span<const std::byte> frame);
  // Sends `state`'s reports from `first_report` on again to `session`,
  // preceded by ReportsGone(`gone_command`, `first_report`) when
  // `gone_command` is not 0.
  void ResendFrom(Session& session, const SessionState& state,
                  std::uint64_t first_report, std::uint64_t gone_command = 0);
  // A duplicate of applied command `command` whose first report the
  // history no longer holds: its reports are made again from the journal.
  void RequestRegeneration(Session& session, std::uint64_t command,
                           std::uint64_t from_report);
  // While a regeneration job is active: sends what it made (at most
  // kRegeneratedPerPass a pass), hands over to the history once it holds
  // the next report, and ends the job (FinishRegeneration).
  void PumpRegeneration();
  void FinishRegeneration(const ReportRegenerator::Finished& done);
  // The answer when reports are gone: ReportsGone, then what is held.
  void ResendGone(Session& session, const SessionState& state);
  // Releases the report history of every session not heard from for
  // session_idle_seconds. Cold: a walk over the sessions, at most every
  // quarter of that time (and at most once per second).
  void ReleaseIdleHistories();
  // Gives back the slot of every unlisted session not heard from for
  // session_slot_idle_seconds that has nothing journaled but not applied
  // (its state stays in the StateMachine; SessionTable::Release). Cold: a
  // walk over the table, at most every quarter of that time (and at most
  // once per second).
  void RecycleIdleSessions();
  // Journals a lapse for every session of the journal with a liveness
  // timeout that has not been heard for that long and is not closed
  // (docs/CONTROLS.md "Goodbye, liveness and cancel-on-disconnect"), at
  // most kMaxLapsesPerSweep, while serving as the leader. Cold: a walk over
  // the StateMachine's sessions every kLapseSweepNs (two hash lookups
  // each), none when no session has a liveness timeout.
  void LapseSilentSessions();
  // When session `state` (not closed, with a liveness timeout) was last
  // heard; nullopt when it has records journaled but not applied (heard
  // just now).
  [[nodiscard]] std::optional<std::int64_t> LastHeard(
      const SessionState& state) const;
  std::span<std::byte> ReserveOutput(Session& session, std::size_t size);
  void FlushOutput();
  // Binds the socket and chooses the send path (Start(), before the journal
  // is opened).
  absl::Status BindSocket();
  // Chooses the send path at start (probe), for the start-up report.
  absl::Status ChooseSendPath();
  absl::Status OpenPublisher();
  // The idle wait: 50 ms (1 ms while a regeneration streams), and not past
  // the feed's next Heartbeat.
  [[nodiscard]] int IdleWaitMs() const {
    const std::int64_t wait_ms = regenerator_->active() ? 1 : 50;
    // Before the feed starts (after an accepted loss) no Heartbeat is due.
    if (publisher_ == nullptr || !feed_started_) {
      return static_cast<int>(wait_ms);
    }
    const std::int64_t until_ns =
        publisher_->next_heartbeat_ns() - MonotonicNs();
    return static_cast<int>(
        std::clamp<std::int64_t>((until_ns + 999'999) / 1'000'000, 0, wait_ms));
  }
  // FlushOutput's two ways: slots from `first` on each as its own sendmmsg
  // entry; all of them in UDP_SEGMENT runs (falling back to the first way
  // on EIO/EINVAL).
  void SendEach(std::size_t first);
  void SendSegmented();
  // One refused send (the socket buffer full: retried briefly; else
  // dropped). True: give up the datagram.
  bool GiveUpAfter(int result, int& attempts);
};

Service::Service(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Service::~Service() = default;

absl::StatusOr<std::unique_ptr<Service>> Service::Start(
    ServiceOptions options) {
  if (absl::Status s = engine::ValidateConfig(options.config.engine); !s.ok()) {
    return s;
  }
  if (options.max_pending < kMinPending || options.report_history == 0 ||
      options.batch == 0 || options.config.max_sessions == 0 ||
      options.config.max_sessions_per_source == 0 ||
      !(options.config.session_idle_seconds > 0) ||
      !(options.config.session_slot_idle_seconds > 0) ||
      !(options.snapshot_every_seconds >= 0 &&
        options.snapshot_every_seconds <= 1e9)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "service options: max_pending %d (at least %d, one datagram of "
        "commands), report_history %d, batch %d, max_sessions %d and "
        "max_sessions_per_source %d (each at least 1), session_idle_seconds "
        "%g and session_slot_idle_seconds %g (above 0), "
        "snapshot_every_seconds %g (0 to 1e9)",
        options.max_pending, kMinPending, options.report_history, options.batch,
        options.config.max_sessions, options.config.max_sessions_per_source,
        options.config.session_idle_seconds,
        options.config.session_slot_idle_seconds,
        options.snapshot_every_seconds));
  }
  if (options.replication != nullptr && options.reconfigure) {
    return absl::InvalidArgumentError(
        "reconfigure with replicated durability: a new configuration would "
        "be pinned in this node's journal only (the journal stream does not "
        "carry configurations), and the standbys would apply the records "
        "after it under the old one; start with the configuration the "
        "journal pins");
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  if (absl::Status s = impl->Start(); !s.ok()) return s;
  if (impl->options_.metrics != nullptr) impl->PublishMetrics();
  return std::unique_ptr<Service>(new Service(std::move(impl)));
}

absl::Status Service::Run(const std::atomic<bool>& stop) {
  return impl_->Run(stop);
}
const net::Endpoint& Service::local_endpoint() const { return impl_->local_; }
const ServiceStats& Service::stats() const {
  impl_->RefreshStats();
  return impl_->stats_;
}
const StateMachine& Service::state() const { return *impl_->machine_; }
const net::Endpoint* Service::md_request_endpoint() const {
  return impl_->request_server_ == nullptr
             ? nullptr
             : &impl_->request_server_->local_endpoint();
}
const std::string& Service::startup_report() const {
  return impl_->startup_report_;
}
const std::string& Service::startup_warning() const {
  return impl_->startup_warning_;
}

absl::Status Service::Impl::Start() {
  // What can be refused without the journal comes first (the socket, the
  // send path): a refused start leaves the journal directory as it was.
  if (absl::Status s = BindSocket(); !s.ok()) return s;
  // Recovery, the replay of the journal's tail (from the newest valid
  // snapshot) through the StateMachine as the live loop applied it, and the
  // configuration (restart.h); then the Sequencer continues each session
  // where the journal left it.
  absl::StatusOr<RestartedJournal> restarted = RestartFromJournal({
      .journal = options_.journal,
      .machine = MachineOptions(options_),
      .given = PinnedConfigOf(options_.config),
      .use_snapshots = options_.restart_from_snapshot,
      .reconfigure = options_.reconfigure,
  });
  if (!restarted.ok()) return restarted.status();
  writer_ = std::move(restarted->writer);
  machine_ = std::move(restarted->machine);
  stats_.replayed = restarted->replayed;
  stats_.started_from_snapshot = restarted->started_from_snapshot;
  // The journal's lines first, then the send path's (BindSocket's).
  startup_report_ = std::move(restarted->report) + startup_report_;
  startup_warning_ = std::move(restarted->warning);
  // Each session of the journal takes a slot when it is heard from again,
  // continuing at its next sequence (NextExpected).
  sequencer_ = std::make_unique<Sequencer>(
      options_.config, options_.max_pending, *writer_, *this, *this);
  // MARKETDATA.md "Sequence numbers and sessions": the feed numbers after
  // the loss may have been published with other messages; the next record
  // begins a new feed session, and the journal keeps that fact.
  if (writer_->recovery().loss_accepted) sequencer_->BeginNewFeedSession();
  regenerator_ = std::make_unique<ReportRegenerator>(
      ReportRegeneratorOptions{.journal_dir = options_.journal.directory,
                               .journal_id = writer_->journal_id(),
                               .machine = MachineOptions(options_),
                               .unpinned = PinnedConfigOf(options_.config)});
  records_at_start_ = machine_->stats().records;
  snapshot_base_index_ = stats_.started_from_snapshot;
  stats_.durable_index = writer_->durable_index();
  return StartReplication();
}

absl::Status Service::Impl::BindSocket() {
  absl::StatusOr<net::UdpSocket> socket = net::UdpSocket::Bind(options_.listen);
  if (!socket.ok()) {
    return absl::Status(
        socket.status().code(),
        absl::StrFormat("%s (the journal %s was not opened)",
                        socket.status().message(), options_.journal.directory));
  }
  socket_.emplace(std::move(*socket));
  socket_->set_calls_for_testing(options_.socket_calls_for_testing);
  absl::StatusOr<net::Endpoint> local = socket_->LocalEndpoint();
  if (!local.ok()) return local.status();
  local_ = *local;
  if (absl::Status s = ChooseSendPath(); !s.ok()) return s;
  return OpenPublisher();
}

absl::Status Service::Impl::OpenPublisher() {
  if (!options_.market_data.has_value()) {
    if (options_.md_requests.has_value()) {
      return absl::InvalidArgumentError(
          "--md-request-listen: the request server answers for the feed "
          "--md-target publishes; give --md-target too");
    }
    return absl::OkStatus();
  }
  if (!options_.market_data->on_event && options_.on_event) {
    options_.market_data->on_event = options_.on_event;
  }
  absl::StatusOr<std::unique_ptr<FeedPublisher>> publisher =
      FeedPublisher::Open(*options_.market_data);
  if (!publisher.ok()) {
    return absl::Status(publisher.status().code(),
                        absl::StrFormat("%s (the journal %s was not opened)",
                                        publisher.status().message(),
                                        options_.journal.directory));
  }
  publisher_ = *std::move(publisher);
  absl::StrAppendFormat(&startup_report_, "\n  %s", publisher_->description());
  if (!options_.md_requests.has_value()) return absl::OkStatus();
  if (!options_.md_requests->on_event && options_.on_event) {
    options_.md_requests->on_event = options_.on_event;
  }
  absl::StatusOr<std::unique_ptr<FeedRequestServer>> server =
      FeedRequestServer::Open(*options_.md_requests);
  if (!server.ok()) {
    return absl::Status(
        server.status().code(),
        absl::StrFormat("%s (the journal %s was not opened)",
                        server.status().message(), options_.journal.directory));
  }
  request_server_ = *std::move(server);
  publisher_->set_ring(&request_server_->ring());
  absl::StrAppendFormat(&startup_report_, "\n  %s",
                        request_server_->description());
  return absl::OkStatus();
}

absl::Status Service::Impl::ChooseSendPath() {
  if (options_.send == SendPath::kSendmmsg) {
    send_segmented_ = false;
    absl::StrAppendFormat(&startup_report_,
                          "\n  send path: sendmmsg (--send sendmmsg)");
    return absl::OkStatus();
  }
  std::string why;
  if (socket_->SupportsSegmentation(&why)) {
    send_segmented_ = true;
    absl::StrAppendFormat(
        &startup_report_,
        "\n  send path: gso (UDP_SEGMENT: each session's datagrams in runs, "
        "one send per run)%s",
        options_.send == SendPath::kAuto ? " (auto)" : "");
    return absl::OkStatus();
  }
  if (options_.send == SendPath::kSegmented) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "--send gso: this kernel does not take UDP_SEGMENT (%s); use --send "
        "sendmmsg or auto",
        why));
  }
  send_segmented_ = false;
  ++stats_.gso_fallbacks;
  absl::StrAppendFormat(&startup_report_,
                        "\n  send path: sendmmsg (auto: no UDP_SEGMENT: %s)",
                        why);
  return absl::OkStatus();
}

absl::Status Service::Impl::StartReplication() {
  if (options_.replication == nullptr) return absl::OkStatus();
  // The replica follows the journal's durable records: everything recovered
  // is.
  if (absl::Status s = writer_->Flush(); !s.ok()) return s;
  absl::StatusOr<StartedReplication> started = options_.replication->Start(
      {.journal_directory = options_.journal.directory,
       .last_index = writer_->last_index(),
       .journal_id = writer_->journal_id(),
       .log = [this](const std::string& line) { Log(line); }});
  if (!started.ok()) return started.status();
  gate_ = std::move(started->gate);
  leadership_ = std::move(started->leadership);
  absl::StrAppendFormat(&startup_report_, "%s\n  %s", started->report,
                        gate_->description());
  return absl::OkStatus();
}

absl::Status Service::Impl::StopStatus() {
  switch (stop_cause_) {
    case StopCause::kJournal:
      return writer_->status();
    case StopCause::kStateMachine:
      return state_refusal_;
    case StopCause::kReplication:
    case StopCause::kLeaseLost:
      return ReplicationFailed();
    case StopCause::kNone:
      break;
  }
  return absl::InternalError("the service stopped for no recorded cause");
}

absl::Status Service::Impl::ReplicationFailed() {
  const absl::Status failure =
      stop_cause_ == StopCause::kLeaseLost
          ? absl::FailedPreconditionError(absl::StrFormat(
                "lost the lease (epoch %d): %s", leadership_->epoch(),
                leadership_->LossReason()))
          : gate_->failure();
  absl::Status stopped(
      failure.code(),
      absl::StrFormat("replication failed, the service stopped answering "
                      "(answered up to journal index %d, every answered "
                      "command acknowledged by the stream; the local journal "
                      "holds up to %d): %s",
                      machine_->last_index(), writer_->last_index(),
                      failure.message()));
  if (!replication_failure_logged_) {
    replication_failure_logged_ = true;
    Log(std::string(stopped.message()));
  }
  return stopped;
}

void Service::Impl::WaitForReplication(bool with_socket, int timeout_ms) {
  std::array<pollfd, 2> fds{pollfd{gate_->wake_fd(), POLLIN, 0},
                            pollfd{socket_->fd(), POLLIN, 0}};
  if (::poll(fds.data(), with_socket ? 2 : 1, timeout_ms) > 0 &&
      (fds[0].revents & POLLIN) != 0) {
    gate_->DrainWake();
  }
}

void Service::Impl::StartRetention() {
  if (!options_.retain.has_value() || retention_ != nullptr) return;
  retention_ = std::make_unique<RetentionWorker>(
      RetentionOptions{.directory = options_.journal.directory,
                       .policy = *options_.retain,
                       .journal_id = writer_->journal_id(),
                       .on_event = options_.on_retention});
}

void Service::Impl::StartFeed(std::uint64_t new_session_at) {
  feed_started_ = true;
  const state::FeedProducer& producer = machine_->feed_producer();
  const std::uint64_t journal_id = writer_->journal_id();
  if (new_session_at == 0) {
    // The live feed goes on from the recovered state: what the records
    // replayed at start made is for the request server, not sent again.
    const std::uint64_t session =
        feed::FeedSession(journal_id, producer.session_start());
    publisher_->Start(session, producer.next_sequence(), MonotonicNs());
    // The snapshot replica starts from the books of the recovered state
    // (O(live orders), once, before the loop runs).
    // Below the ring, retransmissions are made again from the journal
    // (feed_regenerator.h), from its snapshots or its start: for the
    // journal's own session only (a session begun by an accepted loss is
    // answered from the ring: MARKETDATA.md "Retransmission").
    if (request_server_ != nullptr) {
      std::optional<FeedRegeneratorOptions> journal;
      if (producer.session_start() == 0) {
        journal =
            FeedRegeneratorOptions{.journal_dir = options_.journal.directory,
                                   .journal_id = journal_id,
                                   .machine = MachineOptions(options_),
                                   .unpinned = PinnedConfigOf(options_.config)};
      }
      request_server_->Start(
          session, SeedFeedReplica(machine_->engine(), producer), journal);
    }
    return;
  }
  // The record at `new_session_at`, about to be applied, begins a session
  // (its kRecordNewFeedSession flag): the feed starts at its sequence 1,
  // the replica from the books as they are before it.
  const std::uint64_t session = feed::FeedSession(journal_id, new_session_at);
  publisher_->Start(session, 1, MonotonicNs());
  if (request_server_ != nullptr) {
    request_server_->Start(session,
                           SeedNewFeedSession(machine_->engine(), producer));
  }
}

absl::Status Service::Impl::Run(const std::atomic<bool>& stop) {
  absl::Status status = RunLoop(stop);
  // Only a serving primary answers feed requests.
  if (request_server_ != nullptr) request_server_->Stop();
  // A stopped primary stops renewing: a standby takes over after D.
  if (leadership_ != nullptr) leadership_->StopRenewal();
  return status;
}

absl::Status Service::Impl::RunLoop(const std::atomic<bool>& stop) {
  const auto interval_ns = static_cast<std::int64_t>(options_.interval_s * 1e9);
  std::int64_t next_interval_ns = MonotonicNs() + interval_ns;
  started_ns_ = MonotonicNs();
  any_liveness_ =
      options_.config.open_policy.liveness_seconds > 0 ||
      std::any_of(options_.config.sessions.begin(),
                  options_.config.sessions.end(), [](const auto& listed) {
                    return listed.second.liveness_seconds > 0;
                  });
  StartRetention();
  snapshot_base_ns_ = started_ns_;
  snapshot_every_ns_ =
      static_cast<std::int64_t>(options_.snapshot_every_seconds * 1e9);
  // After an accepted loss the feed starts at the first record, in the
  // session it begins (ApplyDurable); nothing is sent before.
  if (publisher_ != nullptr && !sequencer_->new_feed_session_pending()) {
    StartFeed(/*new_session_at=*/0);
  }
  while (!stop.load(std::memory_order_relaxed)) {
    if (Stopped()) [[unlikely]] {
      return StopStatus();
    }
    now_ns_ = MonotonicNs();
    if (snapshot_child_ > 0 && now_ns_ >= next_reap_ns_) [[unlikely]] {
      ReapSnapshot();
    }
    if (interval_ns > 0 && now_ns_ >= next_interval_ns &&
        options_.on_interval) {
      options_.on_interval();
      next_interval_ns = now_ns_ + interval_ns;
    }
    if (now_ns_ >= next_idle_sweep_ns_) ReleaseIdleHistories();
    if (now_ns_ >= next_recycle_sweep_ns_) RecycleIdleSessions();
    if (publisher_ != nullptr) publisher_->Tick(now_ns_);
    if (options_.metrics != nullptr && now_ns_ >= next_publish_ns_) {
      PublishMetrics();
    }
    const int n = socket_->Receive(rx_, rx_.capacity());
    if (n < 0 && n != -EAGAIN && n != -EINTR) {
      return absl::UnavailableError(absl::StrFormat(
          "receive on %s: %s", local_.ToString(), std::strerror(-n)));
    }
    if (n > 0) {
      const std::uint64_t receive_ns = RealtimeNs();
      for (int i = 0; i < n; ++i) {
        ProcessDatagram(static_cast<std::size_t>(i), receive_ns);
      }
    }
    // Only once every datagram waiting was read: after a stall, the
    // sessions heard meanwhile are heard before anyone is judged silent.
    if (now_ns_ >= next_lapse_sweep_ns_ && n < static_cast<int>(rx_.capacity()))
        [[unlikely]] {
      LapseSilentSessions();
    }
    ApplyDurable();
    if (regenerator_->active()) [[unlikely]] {
      PumpRegeneration();
    }
    if (mode_ == Mode::kJournalFull) [[unlikely]] {
      CheckJournalResumed();
    }
    if (writer_->stats().reduced_segments != reduced_segments_seen_ ||
        reduced_segments_logged_) [[unlikely]] {
      CheckSegmentSizes();
    }
    if (n > 0) continue;
    // Nothing arrived: wait for the disk if it has work (with replication:
    // for the stream's acknowledgement once the disk has none), else the
    // network.
    if (sequencer_->pending() > 0) {
      if (gate_ != nullptr &&
          writer_->durable_index() == writer_->last_index()) {
        WaitForReplication(/*with_socket=*/true, 50);
      } else {
        WaitForJournal();
      }
    } else {
      // Idle: a scrape sees every counter as it is once the loop has been
      // idle past the publication interval (at most the 50 ms wait below).
      // The same bound as while busy: a paced client that leaves the loop
      // idle after every command does not buy a publication per command.
      if (options_.metrics != nullptr && now_ns_ >= next_publish_ns_) {
        PublishMetrics();
      }
      // While a regeneration streams, the loop comes back for its reports
      // every millisecond.
      socket_->WaitReadable(IdleWaitMs());
    }
  }
  return Shutdown();
}

// Nothing more is read; what was journaled is made durable, applied and
// answered, then the journal is closed.
absl::Status Service::Impl::Shutdown() {
  retention_.reset();
  if (absl::Status s = writer_->Flush(); !s.ok()) return s;
  if (gate_ != nullptr) {
    // Everything journaled is answered once the stream has it, or not at
    // all (the gate failed or timed out: Run() says so).
    if (absl::Status s =
            gate_->WaitReplicated(writer_->last_index(), gate_->ack_timeout());
        !s.ok()) {
      if (Stopped()) return StopStatus();
      return absl::UnavailableError(absl::StrFormat(
          "stopping: the journal's last records were not acknowledged by "
          "the stream and are not answered: %s",
          s.message()));
    }
  }
  ApplyDurable();
  // A failed journal is closed below, and Close() returns its error.
  if (Stopped() && stop_cause_ != StopCause::kJournal) return StopStatus();
  // Every applied record's messages are out: the feed's end, for now.
  if (publisher_ != nullptr && !Stopped()) publisher_->End();
  absl::Status closed = writer_->Close();
  stats_.durable_index = writer_->durable_index();
  // A snapshot being written is finished (its counters then final).
  FinishSnapshotAtStop();
  if (options_.metrics != nullptr) PublishMetrics();
  return closed;
}

void Service::Impl::StartSnapshot() {
  const std::uint64_t index = machine_->last_index();
  snapshot_base_index_ = index;
  snapshot_base_ns_ = now_ns_;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    ++stats_.snapshots_failed;
    Log(absl::StrFormat("snapshot at index %d not taken: pipe: %s", index,
                        std::strerror(errno)));
    return;
  }
  const std::int64_t before = MonotonicNs();
  const pid_t pid = ::fork();
  if (pid == 0) RunSnapshotChild(fds[1]);
  const auto fork_ns = static_cast<std::uint64_t>(MonotonicNs() - before);
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    ++stats_.snapshots_failed;
    Log(absl::StrFormat("snapshot at index %d not taken: fork: %s", index,
                        std::strerror(errno)));
    return;
  }
  stats_.fork_ns_last = fork_ns;
  stats_.fork_ns_max = std::max(stats_.fork_ns_max, fork_ns);
  snapshot_child_ = pid;
  snapshot_report_fd_ = fds[0];
  snapshot_child_index_ = index;
  snapshot_child_started_ns_ = MonotonicNs();
  next_reap_ns_ = now_ns_ + 1'000'000;
}

void Service::Impl::RunSnapshotChild(int report_fd) {
  // A copy of the parent at one record boundary. It inherited the parent's
  // descriptors (ring, sockets, journal files, the journal's flock) and
  // uses none of them: a write or a ring submission would act on the
  // parent's behalf. It closes its own copies (the parent's stay open), so
  // that a service killed while its child writes leaves no process holding
  // the journal's lock or port: the restart is not refused as "locked".
  // Only standard error and the report pipe stay. It yields the CPU to the
  // service, and leaves by _exit: no destructor, no atexit handler, no
  // stdio flush of the parent's buffers.
  constexpr int kReportFd = STDERR_FILENO + 1;
  if (report_fd != kReportFd) {
    if (::dup2(report_fd, kReportFd) < 0) ::_exit(2);
    report_fd = kReportFd;
  }
  if (::close_range(kReportFd + 1, ~0U, 0) != 0) {
    for (int fd = kReportFd + 1; fd < (1 << 16); ++fd) (void)::close(fd);
  }
  (void)::setpriority(PRIO_PROCESS, 0, 10);
  if (options_.in_snapshot_child) options_.in_snapshot_child();
  absl::StatusOr<SnapshotInfo> written = WriteSnapshot(
      *machine_, writer_->journal_id(), options_.journal.directory);
  if (written.ok()) ::_exit(0);
  ReportToParent(report_fd, written.status().ToString());
  ::_exit(1);
}

void Service::Impl::FinishSnapshotAtStop() {
  const auto wait_ns =
      static_cast<std::int64_t>(options_.snapshot_stop_wait_s * 1e9);
  const std::int64_t deadline_ns = MonotonicNs() + wait_ns;
  while (snapshot_child_ > 0 && MonotonicNs() < deadline_ns) {
    ReapSnapshot();
    if (snapshot_child_ > 0) ::usleep(1000);
  }
  if (snapshot_child_ <= 0) return;
  KillSnapshotChild();
  ++stats_.snapshots_failed;
  Log(absl::StrFormat(
      "snapshot at index %d abandoned at the stop: not finished within %g s "
      "(the child was killed; the journal holds every record)",
      snapshot_child_index_, options_.snapshot_stop_wait_s));
}

void Service::Impl::KillSnapshotChild() {
  ::kill(snapshot_child_, SIGKILL);
  int status = 0;
  while (::waitpid(snapshot_child_, &status, 0) < 0 && errno == EINTR) {
  }
  ::close(snapshot_report_fd_);
  snapshot_report_fd_ = -1;
  snapshot_child_ = -1;
}

void Service::Impl::ReapSnapshot() {
  next_reap_ns_ = now_ns_ + 1'000'000;
  int status = 0;
  pid_t reaped = 0;
  do {
    reaped = ::waitpid(snapshot_child_, &status, WNOHANG);
  } while (reaped < 0 && errno == EINTR);
  if (reaped == 0) {  // still writing
    const auto limit_ns =
        static_cast<std::int64_t>(options_.snapshot_child_limit_s * 1e9);
    if (MonotonicNs() - snapshot_child_started_ns_ < limit_ns) return;
    KillSnapshotChild();
    ++stats_.snapshots_failed;
    Log(absl::StrFormat(
        "snapshot at index %d failed: not finished within %g s (the child "
        "was killed; the next one is tried when due)",
        snapshot_child_index_, options_.snapshot_child_limit_s));
    return;
  }
  const int wait_errno = errno;
  std::array<char, PIPE_BUF> message{};
  const ssize_t n = ::read(snapshot_report_fd_, message.data(), message.size());
  ::close(snapshot_report_fd_);
  snapshot_report_fd_ = -1;
  snapshot_child_ = -1;
  if (reaped > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    ++stats_.snapshots_taken;
    stats_.last_snapshot_index = snapshot_child_index_;
    Log(absl::StrFormat("snapshot at index %d written: %s/%s",
                        snapshot_child_index_,
                        SnapshotDirectory(options_.journal.directory),
                        SnapshotFileName(snapshot_child_index_)));
    return;
  }
  ++stats_.snapshots_failed;
  std::string why;
  if (reaped < 0) {
    why = absl::StrFormat("waitpid: %s", std::strerror(wait_errno));
  } else if (n > 0) {
    why.assign(message.data(), static_cast<std::size_t>(n));
  } else if (WIFSIGNALED(status)) {
    why =
        absl::StrFormat("the child was killed by signal %d", WTERMSIG(status));
  } else {
    why =
        absl::StrFormat("the child exited with status %d", WEXITSTATUS(status));
  }
  Log(absl::StrFormat(
      "snapshot at index %d failed: %s (the service goes on; the next one is "
      "tried when due)",
      snapshot_child_index_, why));
}

void Service::Impl::ProcessDatagram(std::size_t slot,
                                    std::uint64_t receive_ns) {
  // Stopped: nothing more is journaled or answered; Run() returns the
  // error at the top of its loop.
  if (Stopped()) [[unlikely]] {
    return;
  }
  const std::span<const std::byte> bytes = rx_.datagram(slot);
  ++stats_.datagrams_in;
  stats_.bytes_in += bytes.size();
  if (rx_.truncated(slot)) {
    ++stats_.truncated_by_kernel;
    ++stats_.malformed[static_cast<std::size_t>(codec::CodecError::kOversize)];
    return;
  }
  const auto datagram =
      codec::DatagramView::Parse(bytes, codec::FrameFilter::kCommands);
  if (!datagram.ok()) {
    ++stats_.malformed[static_cast<std::size_t>(datagram.error())];
    return;
  }
  const Sequenced result =
      sequencer_->Sequence(*datagram, rx_.peer(slot), receive_ns);
  if (result.admission != Admission::kOk) [[unlikely]] {
    // Never answered (no amplifier for forged sources): counted, and named
    // in the log when asked for.
    if (options_.refusal_log != nullptr) {
      LogRefusal(result.admission, datagram->session_id(), rx_.peer(slot));
    }
    return;
  }
  if (result.journal_failed) return;
  if (result.no_session) {
    if (result.heartbeat) {
      SendHeartbeatAck(nullptr, datagram->session_id(), rx_.peer(slot),
                       result.heartbeat_nonce);
    }
    if (result.gap) SendNewSessionGap(datagram->session_id(), rx_.peer(slot));
    return;
  }
  Session& session = *result.session;
  session.last_heard_ns = now_ns_;
  if (result.journal_full) [[unlikely]] {
    EnterJournalFull();
    SendBusy(session);
  }
  if (result.duplicates) {
    // A retransmission of commands already journaled: the client lacks
    // their reports (a datagram lost, or a restart between durable and
    // sent). Send the session's reports again from the first of them, once
    // per round trip; the client drops those it has by report sequence. A
    // command journaled but not yet applied has no reports yet: they go out
    // when it is durable.
    const SessionState* state =
        session.state >= 0
            ? &machine_->session(static_cast<std::uint32_t>(session.state))
            : machine_->Find(session.id);
    const bool applied =
        state != nullptr && result.first_duplicate < state->next_expected;
    // A duplicate of a command journaled but not yet applied needs nothing:
    // its reports go out when it is durable.
    if (applied) {
      const std::optional<std::uint64_t> from =
          state->history.FirstReportOf(result.first_duplicate);
      if (from.has_value()) {
        ResendFrom(session, *state, *from);
      } else {
        // Older than the history holds (docs/PROTOCOL.md "Reports the
        // history no longer holds"): made again from the journal.
        ++stats_.resend_unavailable;
        RequestRegeneration(session, result.first_duplicate, 0);
      }
    }
  }
  // After the run: the SequenceGap names the sequence expected now.
  if (result.gap) SendGap(session);
  if (result.heartbeat) {
    SendHeartbeatAck(&session, session.id, rx_.peer(slot),
                     result.heartbeat_nonce);
  }
}

void Service::Impl::LogRefusal(Admission cause, std::uint32_t session_id,
                               const net::Endpoint& source) {
  const auto c = static_cast<std::size_t>(cause);
  const std::int64_t now = MonotonicNs();
  if (refusal_logged_ns_[c] != 0 &&
      now - refusal_logged_ns_[c] < kRefusalLogEveryNs) {
    ++refusals_unlogged_[c];
    return;
  }
  refusal_logged_ns_[c] = now;
  std::string since;
  if (refusals_unlogged_[c] != 0) {
    since = absl::StrFormat(
        " (%d more %s refusals not logged since the last "
        "line)",
        refusals_unlogged_[c], Name(cause));
    refusals_unlogged_[c] = 0;
  }
  std::fprintf(options_.refusal_log,
               "orderwire serve: refused a datagram for session %u from %s: "
               "%s, %s%s\n",
               session_id, source.ToString().c_str(),
               std::string(Name(cause)).c_str(),
               std::string(Explain(cause)).c_str(), since.c_str());
  std::fflush(options_.refusal_log);
}

bool Service::Impl::WaitForJournal() {
  ++stats_.backpressure_waits;
  const std::int64_t wait_start = MonotonicNs();
  if (gate_ != nullptr && writer_->durable_index() == writer_->last_index()) {
    // Everything is on the disk: what holds the pending records is the
    // stream's acknowledgement.
    WaitForReplication(/*with_socket=*/false, 50);
  } else {
    (void)writer_->Wait();
  }
  const std::int64_t waited_until = MonotonicNs();
  stats_.journal_wait.Record(
      static_cast<std::uint64_t>(waited_until - wait_start));
  // A long wait for the disk does not silence the feed's Heartbeats.
  if (publisher_ != nullptr) publisher_->Tick(waited_until);
  ApplyDurable();
  return !Stopped();
}

Session* Service::Impl::SessionOfState(std::uint32_t state_index) {
  if (state_index < by_state_.size()) [[likely]] {
    if (Session* session = by_state_[state_index]; session != nullptr)
        [[likely]] {
      return session;
    }
    // Not held (since the start, or since it gave its slot back): held
    // again now? One hash lookup per report to a session that is away.
    Session* session =
        sequencer_->sessions().Find(machine_->session(state_index).id);
    if (session != nullptr) {
      session->state = static_cast<std::int32_t>(state_index);
      by_state_[state_index] = session;
    }
    return session;
  }
  // Once per session: its first record has just been applied.
  while (by_state_.size() <= state_index) {
    const SessionState& state =
        machine_->session(static_cast<std::uint32_t>(by_state_.size()));
    Session* session = sequencer_->sessions().Find(state.id);
    if (session != nullptr)
      session->state = static_cast<std::int32_t>(state.index);
    by_state_.push_back(session);
  }
  return by_state_[state_index];
}

void Service::Impl::ApplyDurable() {
  std::uint64_t durable = writer_->Poll();
  stats_.durable_index = durable;
  if (gate_ != nullptr) {
    // Answered only once the stream has it too, and while this primary
    // holds the lease; after a failure, nothing.
    gate_->NoteDurable(durable);
    if (gate_->failed()) [[unlikely]] {
      Stop(StopCause::kReplication);
      return;
    }
    if (!StillLeader()) [[unlikely]] {
      return;
    }
    durable = std::min(durable, gate_->replicated_index());
  }
  std::uint64_t pass_ns = 0;  // when this pass found records durable
  sequencer_->ForEachDurable(durable, [&](const Record& record) {
    if (mode_ == Mode::kStopped) return;
    if (pass_ns == 0) pass_ns = RealtimeNs();
    // The receive time is CLOCK_REALTIME (it is journaled): a clock stepped
    // back counts as 0.
    stats_.command_latency.Record(
        pass_ns > record.receive_ns ? pass_ns - record.receive_ns : 0);
    if (publisher_ != nullptr && !feed_started_) [[unlikely]] {
      // The first record journaled since a start that accepted a loss.
      assert((record.flags & state::kRecordNewFeedSession) != 0);
      StartFeed(record.index);
    }
    if (absl::Status s = machine_->Apply(record); !s.ok()) [[unlikely]] {
      // The Sequencer journals only whole commands in sequence: a refusal
      // here is a bug, and answering anything after it would be wrong. The
      // service stops (Run returns this); the journal holds the record.
      state_refusal_ = absl::InternalError(absl::StrFormat(
          "the state machine refused a record the service journaled: %s",
          s.message()));
      Stop(StopCause::kStateMachine);
      return;
    }
    if (publisher_ != nullptr) publisher_->Add(machine_->feed());
    for (const Output& out : machine_->outputs()) {
      Session* target = SessionOfState(out.session);
      // Recovered from the journal and not heard from since: nowhere to
      // send (the report is in the session's history for a resend).
      if (target == nullptr || !target->pinned) continue;
      ++stats_.frames_out[static_cast<std::uint8_t>(out.kind)];
      Emit(*target, out.frame);
    }
  });
  FlushOutput();
  if (publisher_ != nullptr) {
    // The feed after the reports (MARKETDATA.md: nothing orders them).
    if (const std::uint64_t lag = publisher_->Flush(MonotonicNs(), pass_ns);
        lag != 0) {
      stats_.md_publication_lag.Record(lag);
    }
  }
  // After the reports went out: a fork here delays no report of these.
  if (mode_ != Mode::kStopped) MaybeSnapshot();
}

std::span<std::byte> Service::Impl::ReserveOutput(Session& session,
                                                  std::size_t size) {
  // A keyed session's datagrams keep room for the MAC trailer, added when
  // the datagram is closed (FlushOutput).
  const bool keyed = session.policy != nullptr && session.policy->mac;
  const std::size_t limit =
      codec::kMaxDatagramSize - (keyed ? codec::kMacSize : 0);
  if (session.tx_slot >= 0) {
    const auto slot = static_cast<std::size_t>(session.tx_slot);
    const std::size_t used = tx_.datagram(slot).size();
    if (used + size <= limit) {
      return tx_.buffer(slot).subspan(used, size);
    }
    session.tx_slot = -1;  // full: it is sent with the batch
  }
  if (tx_used_ == tx_.capacity()) FlushOutput();
  const std::size_t slot = tx_used_++;
  tx_owner_[slot] = session.index;
  // The session's previous datagram in this batch (closed when full) is
  // followed by this one: FlushOutput sends them together.
  tx_next_[slot] = -1;
  tx_follows_[slot] = 0;
  if (session.tx_last_slot >= 0) {
    tx_next_[static_cast<std::size_t>(session.tx_last_slot)] =
        static_cast<std::int32_t>(slot);
    tx_follows_[slot] = 1;
  }
  session.tx_last_slot = static_cast<std::int32_t>(slot);
  codec::DatagramBuilder builder(tx_.buffer(slot), session.id, keyed);
  tx_.set_length(slot, builder.size());
  tx_.set_peer(slot, session.peer);
  session.tx_slot = static_cast<std::int32_t>(slot);
  return tx_.buffer(slot).subspan(builder.size(), size);
}

void Service::Impl::Emit(Session& session, std::span<const std::byte> frame) {
  if (!session.pinned) return;  // recovered, not heard from since: nowhere
  const std::span<std::byte> dst = ReserveOutput(session, frame.size());
  std::memcpy(dst.data(), frame.data(), frame.size());
  const auto slot = static_cast<std::size_t>(session.tx_slot);
  const std::size_t length = tx_.datagram(slot).size() + frame.size();
  tx_.set_length(slot, length);
  // frame_count is the header's u16 at a layout-derived offset.
  std::byte* const header = tx_.buffer(slot).data();
  constexpr std::size_t kCount =
      codec::DatagramOffsetOf<&codec::DatagramHeader::frame_count>();
  codec::StoreLE<std::uint16_t>(
      header + kCount, static_cast<std::uint16_t>(
                           codec::LoadLE<std::uint16_t>(header + kCount) + 1));
}

void Service::Impl::SendGap(Session& session) {
  if (session.gap_sent_for == session.next_expected &&
      now_ns_ - session.gap_sent_ns < kGapRepeatNs) {
    return;  // one per round trip
  }
  session.gap_sent_for = session.next_expected;
  session.gap_sent_ns = now_ns_;
  std::array<std::byte, codec::kFrameSize<codec::SequenceGap>> frame;
  (void)codec::EncodeFrame(0, codec::SequenceGap{session.next_expected}, frame);
  ++stats_.sequence_gaps_sent;
  ++stats_.frames_out[static_cast<std::uint8_t>(codec::Kind::kSequenceGap)];
  Emit(session, frame);
}

void Service::Impl::SendBusy(Session& session) {
  if (session.busy_sent_for == session.next_expected &&
      now_ns_ - session.busy_sent_ns < kBusyRepeatNs) {
    return;  // one per 2 ms for the same expected sequence
  }
  session.busy_sent_for = session.next_expected;
  session.busy_sent_ns = now_ns_;
  std::array<std::byte, codec::kFrameSize<codec::Busy>> frame;
  (void)codec::EncodeFrame(
      0,
      codec::Busy{.expected_sequence = session.next_expected,
                  .cause = codec::BusyCause::kJournalFull},
      frame);
  ++stats_.busy_sent;
  ++stats_.frames_out[static_cast<std::uint8_t>(codec::Kind::kBusy)];
  Emit(session, frame);
}

void Service::Impl::Log(const std::string& line) {
  if (options_.on_event) {
    options_.on_event(line);
  } else {
    std::fprintf(stderr, "orderwire serve: %s\n", line.c_str());
  }
}

void Service::Impl::EnterJournalFull() {
  if (mode_ != Mode::kServing) return;
  mode_ = Mode::kJournalFull;
  ++stats_.journal_full_episodes;
  Log(absl::StrFormat(
      "journal full: need %d bytes free in %s (%s); new commands are "
      "answered Busy until then, everything journaled is answered",
      writer_->space_needed(), options_.journal.directory,
      writer_->space_reason()));
}

void Service::Impl::CheckJournalResumed() {
  // ApplyDurable() has just polled the writer, which retries the
  // preparation of the next segment when it is due.
  if (writer_->space_needed() != 0 || Stopped()) return;
  mode_ = Mode::kServing;
  Log(
      absl::StrFormat("journal resumed: space found in %s; taking commands "
                      "again (journal at index %d)",
                      options_.journal.directory, writer_->last_index()));
}

void Service::Impl::CheckSegmentSizes() {
  const std::uint64_t reduced = writer_->stats().reduced_segments;
  const std::uint64_t whole = writer_->segment_size();
  if (reduced != reduced_segments_seen_) {
    reduced_segments_seen_ = reduced;
    if (reduced_segments_logged_) return;
    reduced_segments_logged_ = true;
    Log(absl::StrFormat(
        "journal: no room in %s for a whole segment of %d bytes: the next "
        "one is a smaller segment of %d bytes (smaller ones, down to %d "
        "bytes, until space is freed; then the journal is full)",
        options_.journal.directory, whole, writer_->last_prepared_size(),
        writer_->smallest_segment()));
  } else if (reduced_segments_logged_ &&
             writer_->last_prepared_size() == whole) {
    reduced_segments_logged_ = false;
    Log(absl::StrFormat("journal: whole segments of %d bytes fit in %s again",
                        whole, options_.journal.directory));
  }
}

void Service::Impl::ResendFrom(Session& session, const SessionState& state,
                               std::uint64_t first_report,
                               std::uint64_t gone_command) {
  // Once per round trip: a resend from this point or an earlier one went out
  // less than a round trip ago (e.g. for the previous datagram of the same
  // retransmitted window) and covered these reports, and those made since
  // went out live. Resending for every such datagram would send
  // O(window^2) reports.
  if (session.resent_from != 0 && first_report >= session.resent_from &&
      now_ns_ - session.resent_ns < kResendRepeatNs) {
    return;
  }
  session.resent_from = first_report;
  session.resent_ns = now_ns_;
  if (gone_command != 0) {
    std::array<std::byte, codec::kFrameSize<codec::ReportsGone>> frame;
    (void)codec::EncodeFrame(0, codec::ReportsGone{gone_command, first_report},
                             frame);
    ++stats_.reports_gone_sent;
    ++stats_.frames_out[static_cast<std::uint8_t>(codec::Kind::kReportsGone)];
    Emit(session, frame);
  }
  for (std::uint64_t seq = first_report; seq < state.next_report; ++seq) {
    const std::span<const std::byte> frame = state.history.Get(seq);
    if (frame.empty()) break;
    Emit(session, frame);
    ++stats_.reports_resent;
  }
}

void Service::Impl::ResendGone(Session& session, const SessionState& state) {
  // Never silence (docs/PROTOCOL.md "Reports gone"): from the oldest command
  // whose first report is held, else from what comes next.
  const auto start = state.history.OldestCommandStart();
  session.resent_from = 0;
  ResendFrom(session, state, start ? start->report : state.next_report,
             start ? start->command : state.next_expected);
}

void Service::Impl::RequestRegeneration(Session& session, std::uint64_t command,
                                        std::uint64_t from_report) {
  const ReportRegenerator::Queued queued = regenerator_->Request(
      RegenerationRequest{.session_id = session.id,
                          .from_command = command,
                          .from_report = from_report,
                          .up_to_index = machine_->last_index()},
      now_ns_);
  if (queued == ReportRegenerator::Queued::kFull)
    ++stats_.regenerations_refused;
}

void Service::Impl::PumpRegeneration() {
  const std::uint32_t id = regenerator_->active_session();
  Session* session = sequencer_->sessions().Find(id);
  const SessionState* state = machine_->Find(id);
  if (session == nullptr || state == nullptr) {
    regenerator_->Cancel();
  } else {
    std::uint64_t held_from = 0;  // the history holds the rest from here
    regenerator_->Take(
        [&](std::uint64_t sequence, std::span<const std::byte> frame) {
          if (!state->history.Get(sequence).empty()) {
            held_from = sequence;
            return false;
          }
          ++stats_.reports_regenerated;
          Emit(*session, frame);
          return true;
        },
        kRegeneratedPerPass);
    if (held_from != 0) {
      regenerator_->Cancel();
      session->resent_from = 0;
      ResendFrom(*session, *state, held_from);
    }
    FlushOutput();
  }
  const std::optional<ReportRegenerator::Finished> done =
      regenerator_->TakeFinished(now_ns_);
  if (done.has_value()) FinishRegeneration(*done);
}

void Service::Impl::FinishRegeneration(
    const ReportRegenerator::Finished& done) {
  Session* session = sequencer_->sessions().Find(done.session_id);
  const SessionState* state = machine_->Find(done.session_id);
  // Cancelled: the history held the rest (sent), or the session is gone.
  if (done.cancelled || session == nullptr || state == nullptr) {
    regeneration_continuations_ = 0;
    return;
  }
  if (!done.status.ok()) {
    regeneration_continuations_ = 0;
    ++stats_.regenerations_gone;
    if (!absl::IsNotFound(done.status)) {
      ++stats_.regeneration_failures;
      Log(absl::StrFormat(
          "session %d: its reports could not be made again from the journal "
          "(answered ReportsGone): %s",
          done.session_id, done.status.message()));
    }
    ResendGone(*session, *state);
    FlushOutput();
    return;
  }
  const std::uint64_t next = done.next_report;
  if (next == 0 || next >= state->next_report) {
    regeneration_continuations_ = 0;  // every report made was sent
    return;
  }
  if (!state->history.Get(next).empty()) {
    regeneration_continuations_ = 0;
    session->resent_from = 0;
    ResendFrom(*session, *state, next);
    FlushOutput();
    return;
  }
  // The history moved past the job's end while it ran: the reports after
  // it are made by another job, from there. Bounded: the client's next
  // retransmission asks again after that.
  if (++regeneration_continuations_ <= kMaxRegenerationContinuations) {
    RequestRegeneration(*session, 0, next);
  } else {
    regeneration_continuations_ = 0;
  }
}

void Service::Impl::SendNewSessionGap(std::uint32_t id,
                                      const net::Endpoint& peer) {
  std::array<std::byte, codec::kFrameSize<codec::SequenceGap>> frame;
  (void)codec::EncodeFrame(0, codec::SequenceGap{1}, frame);
  if (AnswerUnheldSession(id, peer, frame)) ++stats_.sequence_gaps_sent;
}

void Service::Impl::SendHeartbeatAck(Session* session, std::uint32_t id,
                                     const net::Endpoint& peer,
                                     std::uint64_t nonce) {
  // A session with no state: it would begin at 1 (docs/CONTROLS.md).
  codec::HeartbeatAck ack{
      .nonce = nonce, .expected_sequence = 1, .next_report = 1};
  if (session != nullptr) {
    ack.expected_sequence = session->next_expected;
    const SessionState* state =
        session->state >= 0
            ? &machine_->session(static_cast<std::uint32_t>(session->state))
            : machine_->Find(session->id);
    if (state != nullptr) ack.next_report = state->next_report;
  }
  std::array<std::byte, codec::kFrameSize<codec::HeartbeatAck>> frame;
  (void)codec::EncodeFrame(0, ack, frame);
  if (session != nullptr) {
    ++stats_.heartbeat_acks_sent;
    ++stats_.frames_out[static_cast<std::uint8_t>(codec::Kind::kHeartbeatAck)];
    Emit(*session, frame);
  } else if (AnswerUnheldSession(id, peer, frame)) {
    ++stats_.heartbeat_acks_sent;
  }
}

bool Service::Impl::AnswerUnheldSession(std::uint32_t id,
                                        const net::Endpoint& peer,
                                        std::span<const std::byte> frame) {
  if (now_ns_ - new_session_gap_window_ns_ >= kGapRepeatNs) {
    new_session_gap_window_ns_ = now_ns_;
    new_session_gaps_in_window_ = 0;
  }
  RecentGap& recent = recent_new_session_gaps_[(id * 2654435761u) >> 24];
  if (recent.id == id && recent.sent_ns != 0 &&
      now_ns_ - recent.sent_ns < kGapRepeatNs) {
    return false;  // one per round trip
  }
  if (new_session_gaps_in_window_ == kNewSessionGapsPerWindow) {
    ++stats_.new_session_gaps_dropped;
    return false;
  }
  ++new_session_gaps_in_window_;
  recent = RecentGap{id, now_ns_};
  if (tx_used_ == tx_.capacity()) FlushOutput();
  const std::size_t slot = tx_used_++;
  tx_owner_[slot] = kNoOwner;
  tx_next_[slot] = -1;
  tx_follows_[slot] = 0;
  // A keyed session's answer is sealed here (its slot has no owner for
  // FlushOutput to seal): the policy admitted the datagram's MAC.
  const config::SessionPolicy* policy = options_.config.PolicyFor(id);
  const bool keyed = policy != nullptr && policy->mac;
  codec::DatagramBuilder builder(tx_.buffer(slot), id, keyed);
  (void)builder.AppendFrame(frame);
  tx_.set_length(slot, keyed ? auth::SealDatagram(*policy->mac, builder).size()
                             : builder.size());
  tx_.set_peer(slot, peer);
  ++stats_.frames_out[codec::LoadLE<std::uint8_t>(frame.data() +
                                                  codec::kKindOffset)];
  return true;
}

void Service::Impl::ReleaseIdleHistories() {
  const auto idle_ns =
      static_cast<std::int64_t>(options_.config.session_idle_seconds * 1e9);
  next_idle_sweep_ns_ =
      now_ns_ + std::clamp<std::int64_t>(idle_ns / 4, 1'000'000, 1'000'000'000);
  if (machine_->history_budget().used() == 0) return;
  SessionTable& table = sequencer_->sessions();
  if (!released_unheld_ && now_ns_ - started_ns_ >= idle_ns) {
    // Once: the sessions of the journal the table does not hold (not heard
    // from since the start, or given back their slot). Later, a session
    // that gives its slot back keeps its history (within the budget) for
    // when it comes back. A walk over every session.
    released_unheld_ = true;
    for (std::uint32_t i = 0; i < machine_->session_count(); ++i) {
      const SessionState& state = machine_->session(i);
      if (state.history.bytes() == 0 || table.Find(state.id) != nullptr) {
        continue;
      }
      (void)machine_->ReleaseHistory(i);
      ++stats_.histories_released;
    }
  }
  for (std::size_t i = 0; i < table.size(); ++i) {
    Session& session = table.at(static_cast<std::uint32_t>(i));
    if (!session.held) continue;
    // Not heard from since the service started: idle since then.
    const std::int64_t heard =
        session.last_heard_ns != 0 ? session.last_heard_ns : started_ns_;
    if (now_ns_ - heard < idle_ns) continue;
    const SessionState* state =
        session.state >= 0
            ? &machine_->session(static_cast<std::uint32_t>(session.state))
            : machine_->Find(session.id);
    if (state == nullptr || state->history.bytes() == 0) continue;
    (void)machine_->ReleaseHistory(state->index);
    ++stats_.histories_released;
  }
}

void Service::Impl::RecycleIdleSessions() {
  const auto idle_ns = static_cast<std::int64_t>(
      options_.config.session_slot_idle_seconds * 1e9);
  next_recycle_sweep_ns_ =
      now_ns_ + std::clamp<std::int64_t>(idle_ns / 4, 1'000'000, 1'000'000'000);
  SessionTable& table = sequencer_->sessions();
  if (table.unlisted() == 0) return;
  for (std::size_t i = 0; i < table.size(); ++i) {
    Session& session = table.at(static_cast<std::uint32_t>(i));
    if (!session.held || table.Listed(session.id) || session.tx_slot >= 0) {
      continue;
    }
    const std::int64_t heard =
        session.last_heard_ns != 0 ? session.last_heard_ns : started_ns_;
    if (now_ns_ - heard < idle_ns) continue;
    const SessionState* state =
        session.state >= 0
            ? &machine_->session(static_cast<std::uint32_t>(session.state))
            : machine_->Find(session.id);
    // Every record of it applied: the journal's next sequence is the
    // table's, so NextExpected() continues it exactly when it comes back.
    if ((state != nullptr ? state->next_expected : 1) !=
        session.next_expected) {
      continue;
    }
    if (state != nullptr && state->index < by_state_.size()) {
      by_state_[state->index] = nullptr;
    }
    if (state != nullptr) {
      if (released_heard_ns_.size() <= state->index) {
        released_heard_ns_.resize(state->index + 1, 0);
      }
      released_heard_ns_[state->index] = session.last_heard_ns;
    }
    if (table.Release(session)) ++stats_.sessions_recycled;
  }
}

std::optional<std::int64_t> Service::Impl::LastHeard(
    const SessionState& state) const {
  const Session* session = sequencer_->sessions().Find(state.id);
  std::int64_t heard = 0;
  if (session != nullptr) {
    if (session->next_expected != state.next_expected) return std::nullopt;
    heard = session->last_heard_ns;
  } else if (state.index < released_heard_ns_.size()) {
    heard = released_heard_ns_[state.index];
  }
  // Not heard since the service started: counted from the start.
  return heard != 0 ? heard : started_ns_;
}

void Service::Impl::LapseSilentSessions() {
  next_lapse_sweep_ns_ = now_ns_ + kLapseSweepNs;
  if (!any_liveness_ || mode_ != Mode::kServing || !StillLeader()) return;
  std::uint32_t lapsed = 0;
  for (std::uint32_t i = 0;
       i < machine_->session_count() && lapsed < kMaxLapsesPerSweep; ++i) {
    const SessionState& state = machine_->session(i);
    if (state.closed) continue;
    const config::SessionPolicy* policy = options_.config.PolicyFor(state.id);
    if (policy == nullptr || policy->liveness_seconds == 0) continue;
    if (i < lapse_journaled_at_.size() &&
        lapse_journaled_at_[i] > machine_->last_index()) {
      continue;  // journaled, not applied yet
    }
    const std::optional<std::int64_t> heard = LastHeard(state);
    const std::int64_t liveness_ns =
        std::int64_t{policy->liveness_seconds} * 1'000'000'000;
    if (!heard.has_value() || now_ns_ - *heard < liveness_ns) continue;
    const Sequencer::JournalOutcome outcome = sequencer_->JournalLapse(
        state.id, policy->cancel_on_disconnect, RealtimeNs());
    if (outcome == Sequencer::JournalOutcome::kJournalFull) {
      EnterJournalFull();
      return;
    }
    if (outcome != Sequencer::JournalOutcome::kOk) return;  // Stopped()
    if (lapse_journaled_at_.size() <= i) lapse_journaled_at_.resize(i + 1, 0);
    lapse_journaled_at_[i] = writer_->last_index();
    ++lapsed;
  }
}

void Service::Impl::FlushOutput() {
  if (tx_used_ == 0) return;
  // The datagrams being filled are closed: their sessions start new ones.
  // A keyed session's datagram gets its MAC trailer now, over its header
  // (the flag set) and frames.
  for (std::size_t i = 0; i < tx_used_; ++i) {
    if (tx_owner_[i] == kNoOwner) continue;  // sealed when built
    Session& owner = sequencer_->sessions().at(tx_owner_[i]);
    owner.tx_slot = -1;
    owner.tx_last_slot = -1;
    if (owner.policy != nullptr && owner.policy->mac) {
      const std::size_t length = tx_.datagram(i).size();
      const auth::Tag tag = owner.policy->mac->Compute(tx_.datagram(i));
      std::memcpy(tx_.buffer(i).data() + length, tag.data(), tag.size());
      tx_.set_length(i, length + tag.size());
    }
  }
  if (send_segmented_) {
    SendSegmented();
  } else {
    SendEach(0);
  }
  tx_used_ = 0;
}

bool Service::Impl::GiveUpAfter(int result, int& attempts) {
  // The socket buffer is full (or the peer is gone): retry briefly, then
  // drop; the client recovers by retransmitting (see ReportHistory).
  if (++attempts > 1000 || (result < 0 && result != -EAGAIN &&
                            result != -ENOBUFS && result != -EINTR)) {
    ++stats_.send_failures;
    attempts = 0;
    return true;
  }
  return false;
}

void Service::Impl::SendEach(std::size_t first) {
  std::size_t sent = first;
  int attempts = 0;
  while (sent < tx_used_) {
    const int n = socket_->SendRange(tx_, sent, tx_used_ - sent);
    if (n > 0) {
      for (std::size_t i = sent; i < sent + static_cast<std::size_t>(n); ++i) {
        stats_.bytes_out += tx_.datagram(i).size();
      }
      sent += static_cast<std::size_t>(n);
      stats_.datagrams_out += static_cast<std::uint64_t>(n);
      attempts = 0;
      continue;
    }
    if (GiveUpAfter(n, attempts)) ++sent;
  }
}

void Service::Impl::SendSegmented() {
  // Each session's datagrams one after another, in their order: the slots
  // that follow no other of their owner's start a chain.
  std::size_t count = 0;
  for (std::size_t i = 0; i < tx_used_; ++i) {
    if (tx_follows_[i] != 0) continue;
    for (auto slot = static_cast<std::int32_t>(i); slot >= 0;
         slot = tx_next_[static_cast<std::size_t>(slot)]) {
      tx_order_[count++] = static_cast<std::uint32_t>(slot);
    }
  }
  const std::span<const std::uint32_t> order(tx_order_.data(), count);
  std::size_t sent = 0;
  int attempts = 0;
  while (sent < count) {
    std::size_t messages = 0;
    const int n = socket_->SendSegmented(tx_, order.subspan(sent), &messages);
    if (n > 0) {
      for (std::size_t k = sent; k < sent + static_cast<std::size_t>(n); ++k) {
        stats_.bytes_out += tx_.datagram(order[k]).size();
      }
      sent += static_cast<std::size_t>(n);
      stats_.datagrams_out += static_cast<std::uint64_t>(n);
      stats_.segmented_sends += messages;
      stats_.segmented_datagrams += static_cast<std::uint64_t>(n);
      attempts = 0;
      continue;
    }
    if (n == -EIO || n == -EINVAL) [[unlikely]] {
      // The path cannot segment (no checksum offload towards the peer, an
      // MTU below the datagram): the rest goes out with sendmmsg, in the
      // same order, and so does everything after.
      send_segmented_ = false;
      ++stats_.gso_fallbacks;
      Log(absl::StrFormat(
          "send path: a segmented send to %s failed (%s); sending with "
          "sendmmsg from now on",
          tx_.peer(order[sent]).ToString(), std::strerror(-n)));
      // Cold, once: one sendmmsg per datagram keeps the order.
      while (sent < count) {
        const int one = socket_->SendRange(tx_, order[sent], 1);
        if (one == 1) {
          stats_.bytes_out += tx_.datagram(order[sent]).size();
          ++stats_.datagrams_out;
          ++sent;
          attempts = 0;
        } else if (GiveUpAfter(one, attempts)) {
          ++sent;
        }
      }
      return;
    }
    if (GiveUpAfter(n, attempts)) ++sent;
  }
}

void Service::Impl::RefreshStats() const {
  // What the loop counts is in stats_ already; the rest comes from the
  // state it keeps and from its parts.
  ServiceStats& s = stats_;
  s.send_segmented = send_segmented_ ? 1 : 0;
  s.snapshot_running = snapshot_child_ > 0 ? 1 : 0;
  s.journal_full = mode_ == Mode::kJournalFull ? 1 : 0;
  s.sessions_listed = options_.config.sessions.size();
  const SequencerStats& q = sequencer_->stats();
  s.frames_in = q.journaled;
  s.refused = q.refused;
  s.duplicates = q.duplicates;
  s.gaps = q.gaps;
  s.heartbeats = q.heartbeats;
  s.session_lapses = q.lapses;
  s.gap_frames_dropped = q.gap_frames_dropped;
  s.refused_journal_full_datagrams = q.journal_full_datagrams;
  s.refused_journal_full_frames = q.journal_full_frames;
  s.sessions = sequencer_->sessions().held();
  s.sessions_moved = sequencer_->sessions().moves();
  const StateMachineStats& m = machine_->stats();
  s.rejects = m.rejects;
  // The machine's count goes on from a snapshot's: what this service
  // applied is its count since Start() plus the tail it replayed.
  s.commands_applied = m.records - records_at_start_ + s.replayed;
  s.history_bytes = machine_->history_budget().used();
  if (regenerator_ != nullptr) {
    const RegenerationCounters r = regenerator_->counters();
    s.regenerations = r.jobs;
    s.regeneration_records = r.records_applied;
    s.regeneration_snapshots = r.snapshots_loaded;
  }
  if (writer_ != nullptr) {
    const journal::WriterStats& w = writer_->stats();
    s.last_index = writer_->last_index();
    s.journal_records = w.records;
    s.journal_groups = w.groups;
    s.journal_bytes_written = w.bytes_written;
    s.journal_reduced_segments = w.reduced_segments;
  }
  if (publisher_ != nullptr) {
    const FeedPublisherStats& f = publisher_->stats();
    s.md = 1;
    s.md_messages = f.messages;
    s.md_packets = f.packets;
    s.md_heartbeats = f.heartbeats;
    s.md_send_failures = f.send_failures;
    s.md_subscribers = publisher_->unicast_targets();
  }
  if (request_server_ != nullptr) {
    const FeedRequestCounters r = request_server_->counters();
    s.md_subscribers += r.sources;
    s.md_first_retained_sequence = r.first_retained;
    s.md_retransmit_requests = r.retransmit_requests;
    s.md_retransmit_messages = r.retransmit_messages;
    s.md_snapshot_requests = r.snapshot_requests;
    s.md_snapshots_sent = r.snapshots_sent;
    s.md_snapshot_replica_lost = r.replica_lost;
    s.md_requests_dropped = r.dropped;
    s.md_requests_throttled = r.throttled;
    s.md_reply_send_failures = r.send_failures;
    s.md_regenerations = r.regenerations;
    s.md_regeneration_starts = r.regeneration_starts;
    s.md_regeneration_records = r.regeneration_records;
    s.md_regenerated_messages = r.regenerated_messages;
    s.md_regeneration_failures = r.regeneration_failures;
    std::copy(r.refused.begin(), r.refused.end(), s.md_refused.begin());
    std::copy(r.malformed.begin(), r.malformed.end(), s.md_malformed.begin());
  }
  s.md_next_sequence = machine_->feed_producer().next_sequence();
  if (gate_ != nullptr) {
    const ReplicationStats r = gate_->stats();
    s.replication = 1;
    s.replication_published_messages = r.published_messages;
    s.replication_acknowledged_messages = r.acknowledged_messages;
    s.replication_published_records = r.published_records;
    s.replication_published_bytes = r.published_bytes;
    s.replicated_index = r.replicated_index;
    s.replication_failures = r.failures;
    s.replication_republished_messages = r.republished_messages;
    s.replication_publish_latency = r.publish_latency;
  }
}

// ---------------------------------------------------------------------------
// Counters.

std::string Service::StatsLine() const {
  const ServiceStats& s = stats();
  std::uint64_t malformed = 0;
  for (std::uint64_t v : s.malformed) malformed += v;
  std::uint64_t refused = 0;
  for (std::uint64_t v : s.refused) refused += v;
  std::uint64_t frames_in = 0;
  for (std::uint64_t v : s.frames_in) frames_in += v;
  std::uint64_t frames_out = 0;
  for (std::uint64_t v : s.frames_out) frames_out += v;
  return absl::StrFormat(
      "datagrams in %d out %d | commands %d reports %d | durable %d/%d | "
      "dup %d gaps %d malformed %d refused %d | sessions %d | send %s%s%s",
      s.datagrams_in, s.datagrams_out, frames_in, frames_out, s.durable_index,
      s.last_index, s.duplicates, s.gaps, malformed, refused, s.sessions,
      s.send_segmented ? "gso" : "sendmmsg",
      s.snapshots_taken + s.snapshots_failed == 0 && !s.snapshot_running
          ? std::string()
          : absl::StrFormat(
                " | snapshots %d (last at %d), %d failed%s, fork %.2f ms max",
                s.snapshots_taken, s.last_snapshot_index, s.snapshots_failed,
                s.snapshot_running ? ", one being written" : "",
                static_cast<double>(s.fork_ns_max) * 1e-6),
      s.journal_full_episodes == 0
          ? std::string()
          : absl::StrFormat(" | journal full%s: %d frames refused, %d Busy",
                            s.journal_full ? " NOW" : " (resumed)",
                            s.refused_journal_full_frames, s.busy_sent));
}

std::string Service::StatsReport() const { return FormatStatsReport(stats()); }

std::string Service::StatsJson() const { return FormatStatsJson(stats()); }

}  // namespace orderwire::service
