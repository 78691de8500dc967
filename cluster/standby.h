// Standby: the hot standby behind `orderwire serve --standby`
// (docs/REPLICATION.md, plan item 2). It follows an engine's journal stream
// (replication/), writes the primary's records to a local journal of its
// own, with the primary's indexes, and applies them through the same
// StateMachine the service uses, so that at every moment its journal is a
// prefix of the primary's and its state the one that prefix makes. It
// answers no client: it opens no UDP socket.
//
//   Start: the stream's journal_id (replication/journal_stream.h: its
//          description; waited for until connect_timeout while the stream
//          does not exist), then RestartFromJournal (restart.h: the local
//          journal recovered, or created with the stream's journal_id so
//          that it is the primary's journal; the state rebuilt from the
//          newest snapshot and the tail, exactly as Service::Start does),
//          then the journal_id check (a local journal of another id than
//          the stream names is refused, FailedPrecondition: it would
//          diverge; an unlabelled stream checks nothing and a journal
//          created for it gets a random id, logged), then the rejoin check
//          (below), then
//          FindStreamPosition
//          (replication/stream_position.h: a binary search for the stream
//          sequence holding local last index + 1), then a
//          replication::StreamFollower from there.
//   Each message (group_message.h), verified whole by ParseGroupMessage
//   before anything of it is used:
//     epoch marker  its epoch remembered (and logged); a marker whose next
//                   index is not local last + 1 is refused (DataLoss: a gap,
//                   or a local tail the new primary does not have);
//     records       records the local journal already holds (index <= local
//                   last) must be byte-identical to the local ones (index,
//                   receive time, session, flags, frame), else DataLoss
//                   naming the index (an old primary's unacknowledged tail
//                   is dealt with at start: "Rejoining" below);
//                   they are skipped. A message that starts after local
//                   last + 1 is a gap: DataLoss. The new records are
//                   appended, each run of records that share session,
//                   receive time and flags in one JournalWriter::Append, and
//                   each must get the primary's index (checked: Internal
//                   otherwise). Once durable locally they are applied with
//                   StateMachine::Apply; the reports are made and sent to
//                   nobody.
//     an epoch lower than one already seen is refused (FailedPrecondition):
//     a fenced primary's message can never follow its successor's.
//   A refused message appends nothing of itself; everything before it stays
//   (durable and applied); the standby stops with the error.
// Rejoining (docs/REPLICATION.md "Rejoining as a standby"): an old primary
// restarted as a standby on its own journal may hold records L the stream
// never acknowledged (so no client was ever answered for them), which a new
// primary replaced. At start, when the stream does not hold the local last
// record identical, a binary search over the local indexes (each probe a
// StreamReader::FindRecord) finds D, the first local record the stream
// does not hold identical. The local records D..L are cut
// (journal/cut.h: kept in <journal>/cut/D-L/) only when the stream's record
// D-1 ends its message and the very next stream message is an epoch marker
// of an epoch newer than that message's, taking over at index D; the
// operator is told ("REJOINING AS A STANDBY: ..."), stats count it, the
// state is rebuilt from the cut journal and following starts at D. Any
// other divergence (inside a message, no newer marker, nothing agreed at
// all) is DataLoss naming D: nothing is cut. A journal that is a prefix of
// the stream, or that goes on where the stream simply ends (an empty
// stream included), is not cut and followed as before.
// StandbyOptions::rejoin false refuses instead of cutting.
// Seeded (seed.h; docs/REPLICATION.md "Seeding a new standby from a
// snapshot"): a journal that holds no record and starts at F > 1 was seeded
// from a snapshot at F - 1, which RestartFromJournal starts from. Before
// following, the stream must reach F - 1 (its last message's last index, a
// marker's next index - 1), else FailedPrecondition: the snapshot is ahead
// of the stream; and its first message must start at F or before, else
// DataLoss: the stream no longer holds F. The records of a message that
// lie before the local journal's first index (in the snapshot) are skipped
// without being compared (StandbyStats::records_before_start).
//
// Optionally it writes snapshots of its state every N records (as the
// service's snapshot child does) and puts its report (role, epoch, applied
// index, stream sequence) for `orderwire cluster status`.
//
// Shape for the takeover (plan item 3, not built): Stop() leaves everything
// appended durable and applied; Release() then hands over the journal
// writer and the state (Service cannot take them yet), and a process that
// exits instead leaves a journal (with its snapshots) that Service::Start
// restarts from as from its own.
//
// Cost: per message one copy (the follower's), one CRC pass (the parse),
// the journal append; per record one Apply. Not a hot path: it allocates
// per message.
//
// Threads: one thread calls Start, Step/Run, Stop; stats() may be read from
// it only (Run calls on_interval on it).
#ifndef ORDERWIRE_CLUSTER_STANDBY_H_
#define ORDERWIRE_CLUSTER_STANDBY_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/service_config.h"
#include "journal/writer.h"
#include "replication/group_message.h"
#include "state/state_machine.h"

namespace orderwire::replication {
class StreamFollower;
class MemberBoard;
struct FollowedMessage;
}  // namespace orderwire::replication

namespace orderwire::state {
struct RestartedJournal;
}  // namespace orderwire::state

namespace orderwire::cluster {

struct StandbyOptions {
  // comma-separated nats://HOST:PORT, and the engine whose stream to follow
  // (replication/journal_stream.h).
  std::string nats_servers;
  std::string engine_name = "main";
  // The local journal (directory, durability, segment size; the same layout
  // as a primary's) and the configuration: the primary's, which the local
  // journal pins like a primary's does (restart.h).
  journal::WriterOptions journal;
  // The configuration is the one the local journal pins, never changed
  // here: a standby takes no --reconfigure (a new configuration would
  // hold in its journal only; the stream does not carry configurations).
  config::ServiceConfig config;
  std::size_t report_history = state::kDefaultReportHistory;
  // Start from the newest valid snapshot of the local journal.
  bool restart_from_snapshot = true;
  // Snapshots of the state (state/snapshot.h, <journal>/snapshots/), so
  // that a restart, or a Service started on the standby's journal (a
  // takeover by restart), replays only the records after the newest: one
  // after every this many records applied (0: none). Written on the
  // standby's thread (following pauses meanwhile: the standby answers
  // nobody); a failure is logged and counted, never fatal.
  std::uint64_t snapshot_every_records = 0;
  // Bounds connecting, the stream search and creating the consumer; the
  // follower is opened again until this passes (the JetStream meta leader
  // may be being elected).
  std::chrono::milliseconds connect_timeout{30000};
  // Run(): how long one wait for a message lasts before the stop flag and
  // the journal are looked at again.
  std::chrono::milliseconds poll{50};
  // Run(): called on the standby's thread every interval_s seconds (0: off).
  double interval_s = 0;
  std::function<void()> on_interval;
  // Rejoining (see above): cut a local tail that a new primary replaced.
  // false (`serve --standby --no-rejoin`): refuse instead
  // (FailedPrecondition naming the records a rejoin would cut).
  bool rejoin = true;
  // Lines for the operator (an epoch seen, a journal full); null: stderr.
  std::function<void(std::string_view)> on_event;
  // `orderwire cluster status` (replication/cluster_status.h): when set,
  // the standby puts its report (role "standby", epoch, applied index,
  // stream sequence) under this name in the engine's members bucket at
  // start and then at most every report_interval from Step, and role
  // "stopped" when Run ends. A failed put is logged once (on_event) and
  // never stops the standby. Empty: no reports.
  std::string member_name;
  std::chrono::milliseconds report_interval{500};
};

struct StandbyStats {
  std::uint64_t applied_index = 0;   // the state's last index
  std::uint64_t durable_index = 0;   // the local journal's
  std::uint64_t appended_index = 0;  // the local journal's last index
  std::uint64_t messages = 0;        // stream messages followed
  std::uint64_t records_appended = 0;
  std::uint64_t records_held = 0;  // already in the local journal, verified
  // Records before the local journal's first index (a seeded journal's,
  // which its snapshot holds): skipped, not compared.
  std::uint64_t records_before_start = 0;
  std::uint64_t epoch_markers = 0;
  std::uint64_t epoch = 0;            // the latest seen (0: none yet)
  std::uint64_t stream_sequence = 0;  // of the last message followed
  // Stream messages after the last one followed, when it was delivered.
  std::uint64_t lag_messages = 0;
  std::uint64_t start_sequence = 0;  // where following began
  std::uint32_t search_probes = 0;   // messages the search read
  std::uint64_t replayed = 0;        // records replayed at start
  std::uint64_t started_from_snapshot = 0;
  std::uint64_t reports = 0;  // made by Apply, sent to nobody
  std::uint64_t snapshots_taken = 0;
  std::uint64_t snapshots_failed = 0;
  std::uint64_t last_snapshot_index = 0;  // the newest written (or started
                                          // from)
  // Rejoining: cuts of the local journal's tail at start (0 or 1), and the
  // records they moved out.
  std::uint64_t rejoin_cuts = 0;
  std::uint64_t records_cut = 0;
  // Times the follower was opened again after a transient error (Step).
  std::uint64_t follower_reopens = 0;
};

// What Release() hands over.
struct StandbyState {
  std::unique_ptr<journal::JournalWriter> writer;
  std::unique_ptr<state::StateMachine> machine;
  std::uint64_t epoch = 0;
  std::uint64_t stream_sequence = 0;  // of the last message followed
};

class Standby {
 public:
  // See the header comment. Errors: RestartFromJournal's, the stream
  // search's (NotFound: no stream), the journal_id check's
  // (FailedPrecondition), the follower's, options.
  static absl::StatusOr<std::unique_ptr<Standby>> Start(StandbyOptions options);
  ~Standby();
  Standby(const Standby&) = delete;
  Standby& operator=(const Standby&) = delete;

  // Waits up to `timeout` for one message and takes it in (appended; applied
  // once durable), then applies whatever became durable. OK also when no
  // message came. Errors (each ends the standby: every later call returns
  // it): DataLoss / FailedPrecondition / Internal for a message refused (see
  // above), a hole in the stream (the follower's DataLoss), a journal I/O
  // error, Apply's. Any other error of the follower (a timeout, no
  // responders, a connection lost or closed: the stream's leader is being
  // re-elected, or NATS is away) is not the standby's end: the follower is
  // closed and opened again from the sequence it was due next, at the next
  // Step (logged, once per distinct error; counted in
  // StandbyStats::follower_reopens), until it opens: tried again 100 ms
  // after a failed try, doubling to 1 s, and a Step without a follower
  // waits out `timeout` (or until the next try), so a Run loop does not
  // spin while NATS refuses connections.
  absl::Status Step(std::chrono::milliseconds timeout);
  // Step(options.poll) until `stop` is set or an error; then Stop().
  absl::Status Run(const std::atomic<bool>& stop);
  // Makes everything appended durable and applies it. Following can go on
  // afterwards (Step again).
  absl::Status Stop();
  // After Stop(): the journal writer and the state, for a primary to go on
  // from (the standby is empty afterwards).
  StandbyState Release();

  // Puts this member's report with `role` now (StandbyOptions::member_name;
  // nothing without it): Run() puts "stopped" when it ends, and so does a
  // ClusterMember (cluster_member.h) that steps the standby itself.
  void Report(std::string_view role);

  [[nodiscard]] const state::StateMachine& state() const { return *machine_; }
  [[nodiscard]] StandbyStats stats() const;
  // One line: applied index, stream sequence, lag, epoch.
  [[nodiscard]] std::string StatsLine() const;
  // What Start() recovered, replayed and where it follows from.
  [[nodiscard]] const std::string& startup_report() const {
    return startup_report_;
  }
  [[nodiscard]] const std::string& startup_warning() const {
    return startup_warning_;
  }

 private:
  // A message whose records are appended and not all applied yet.
  struct Pending {
    std::vector<std::byte> bytes;       // what `message` points into
    replication::GroupMessage message;  // parsed and verified
    std::uint64_t next_to_apply = 0;    // its first record not applied
  };

  explicit Standby(StandbyOptions options);
  // Start's steps, in this order.
  //
  // The journal just restarted (created with options_.journal.
  // new_journal_id, the stream's journal_id, if the directory held none)
  // must be the stream's journal: FailedPrecondition when the stream names
  // another (an unlabelled stream checks nothing; a journal created for one
  // gets a random id, logged).
  absl::Status CheckJournalOfStream(state::RestartedJournal& restarted);
  //
  // The rejoin check ("Rejoining" above) on the journal just restarted:
  // when a new primary replaced its tail, cuts the tail (logged, counted)
  // and restarts `restarted` from the cut journal. Errors: the stream
  // reads', DataLoss for a divergence that is not a takeover,
  // FailedPrecondition when a cut is due and options.rejoin is false, the
  // cut's, the restart's.
  absl::Status RejoinIfReplaced(state::RestartedJournal& restarted);
  // Takes over `restarted`'s journal writer and state (moved out), its
  // start-up report and warning, and its replay's counts.
  void TakeRestarted(state::RestartedJournal& restarted);
  // Finds the stream sequence of the local last index + 1 and opens the
  // follower there, tried again every 200 ms until connect_timeout, then
  // the last error. `seeded`: the stream must also continue the seed's
  // snapshot ("Seeded" above). Not tried again: the search's DataLoss and
  // InvalidArgument, the seed check's DataLoss, FailedPrecondition and
  // InvalidArgument, the follower's InvalidArgument.
  absl::Status OpenFirstFollower(bool seeded);
  // With options.member_name: opens the engine's members bucket (the
  // stream's replica count) and puts the first "standby" report. Errors:
  // the stream state's, the bucket's, the put's (a name it cannot take).
  absl::Status OpenMemberBoard();
  absl::Status Take(replication::FollowedMessage message);
  // Records the local journal holds at first..last must equal the
  // message's; DataLoss naming the first that differs.
  absl::Status VerifyHeld(std::uint64_t stream_sequence,
                          const replication::GroupMessage& message,
                          std::uint64_t up_to);
  absl::Status Append(std::uint64_t stream_sequence,
                      const replication::GroupMessage& message,
                      std::uint64_t from);
  absl::Status AppendRun(std::uint64_t stream_sequence,
                         std::uint32_t session_id, std::uint64_t receive_ns,
                         std::uint32_t flags, std::uint64_t last_index,
                         std::size_t records);
  // Applies every pending record with index <= the durable index.
  absl::Status ApplyDurable();
  // After a record was applied (all up to it durable): a snapshot when
  // snapshot_every_records have been applied since the last one.
  void MaybeSnapshot();
  void Event(std::string_view line) const;
  absl::Status Fail(absl::Status status);
  // Opens the follower again from reopen_from_; false while it cannot (or
  // before next_reopen_ns_, the next try after a failed one).
  bool ReopenFollower(std::chrono::milliseconds timeout);

  StandbyOptions options_;
  std::unique_ptr<journal::JournalWriter> writer_;
  std::unique_ptr<state::StateMachine> machine_;
  std::unique_ptr<replication::StreamFollower> follower_;
  std::unique_ptr<replication::MemberBoard> board_;
  std::int64_t next_report_ns_ = 0;
  bool report_failed_ = false;       // logged once
  std::uint64_t snapshot_base_ = 0;  // index of the last snapshot tried
  // The local journal's first index (1, or past it when seeded: seed.h).
  std::uint64_t first_local_index_ = 1;
  std::deque<Pending> pending_;
  std::vector<std::byte> run_;  // frames of one Append, reused
  absl::Status failure_;
  // Non-zero: the follower was closed after a transient error and is to be
  // opened again from this stream sequence.
  std::uint64_t reopen_from_ = 0;
  std::string last_reopen_error_;  // logged once until it changes
  // After a failed re-open: no try before this (MonotonicNs), and the wait
  // after the next failure (100 ms doubling to 1 s; 0 after a success).
  std::int64_t next_reopen_ns_ = 0;
  std::chrono::milliseconds reopen_backoff_{0};
  StandbyStats stats_;
  std::string startup_report_;
  std::string startup_warning_;
};

}  // namespace orderwire::cluster

#endif  // ORDERWIRE_CLUSTER_STANDBY_H_
