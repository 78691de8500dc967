// The UDP order-entry service behind `orderwire serve`: the loop that joins
// the transport, the Sequencer, the journal and the StateMachine.
//
// Pipeline, one thread (docs/SERVICE.md says why one thread, with figures;
// docs/ARCHITECTURE.md draws it):
//
//   recvmmsg ─► parse datagram (all or nothing) ─► Sequencer: admit session,
//   check sequences, JournalWriter::Append (the frames' bytes, verbatim, from
//   the receive buffer) ─► pending ring ─► Poll: durable index D ─►
//   StateMachine::Apply for every pending record with index <= D ─► each
//   report to its session's datagram ─► sendmmsg
//
// A command's reports leave only after the command is durable under the
// configured mode. Nothing allocates per command: receive and send buffers,
// the pending ring, the engine's pools and report buffer and the journal's
// group buffers are allocated at start-up; a session's state when its first
// command is journaled and applied, and its report history lazily, growing
// with its reports within a total budget (report_history.h). A session not
// heard from for session_idle_seconds releases its history; a resend that
// needs reports no longer held gets them made again from the journal on a
// worker thread (report_regenerator.h), and ReportsGone only when they are
// older than the retained journal. An unlisted session
// not heard from for session_slot_idle_seconds gives its slot in the
// Sequencer's table back (its state stays in the StateMachine, which the
// journal built; when it comes back it takes a slot again and continues at
// the StateMachine's next sequence, as after a restart), and each source
// address holds at most max_sessions_per_source unlisted sessions (refused
// beyond: TooManyFromSource). Neither touches the journal: admission is the
// Sequencer's, before anything is journaled. Back-pressure: when the
// journal has no free buffer or the pending ring is full, the loop stops
// reading the socket and waits for the disk; datagrams wait in the socket
// buffer or are dropped by the kernel, and clients retransmit.
//
// Disk full (docs/SERVICE.md "Disk full"): when the journal has no room on
// its disk (JournalWriter kJournalFull), new commands are not journaled: the
// session gets Busy (cause JournalFull) and retransmits later; duplicates
// still get their reports sent again, and everything journaled becomes
// durable and is answered. The service logs when the state starts ("journal
// full: need N bytes free in DIR") and when it ends, and resumes by itself
// once the journal has found space. A disk without room for a whole next
// segment gets a smaller one (journal/writer.h): logged when that begins
// and when whole segments fit again, and counted.
//
// Restart: Start() recovers the journal (a torn tail is cut off) and applies
// every record through the same StateMachine::Apply as the live loop, so
// every session's expected sequence and report sequence, every book and the
// report history are as they were; a session takes a slot in the
// Sequencer's table when it is heard from again. The configuration that decides
// how records apply is the journal's own (pinned_config.h): each segment's, in
// force from its first record; a configuration given that differs from the
// journal's current one is refused unless ServiceOptions::reconfigure.
//
// Snapshots (docs/SERVICE.md "Snapshots"): with snapshot_every_records or
// snapshot_every_seconds the loop, at a record boundary (after applying
// index k, all of it durable), forks; the child holds a copy-on-write image
// of the StateMachine at k, writes it with WriteSnapshot (snapshot.h:
// <journal>/snapshots/<k>.ows, published atomically) and exits. The loop
// never waits for it: it reaps the child with waitpid(WNOHANG), runs at most
// one at a time, logs a failure and counts both. The child touches nothing
// the parent owns (ring, sockets, journal files): it writes and _exit()s.
// The loop's only stall is fork() itself (page tables copied; measured in
// docs/BENCHMARKS.md and counted in ServiceStats::fork_ns_max). A child
// still running snapshot_child_limit_s after its fork is killed and counted
// failed (a child that cannot finish must not hold back every later
// snapshot, and so retention); a stop waits for a running one at most
// snapshot_stop_wait_s, then kills it the same way.
//
// Bounded restart: Start() loads the newest snapshot that verifies and
// belongs to this journal (LoadNewestSnapshot, at most the journal's last
// index), then applies only the records after it; a damaged snapshot is
// reported (startup_warning) and the previous one, or the whole journal,
// used. The snapshot holds the configuration in force at its index; the
// segments after it pin theirs as in a full replay.
//
// A pruned journal (journal/start.h) cannot be replayed from its first
// record alone: Start() needs a snapshot that reaches its first index.
//
// Retention (ServiceOptions::retain, docs/SERVICE.md): a helper thread
// prunes old segments behind the newest snapshot that verifies
// (service/retention.h).
#ifndef ORDERWIRE_SERVICE_SERVICE_H_
#define ORDERWIRE_SERVICE_SERVICE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/error.h"
#include "codec/types.h"
#include "config/service_config.h"
#include "journal/retention.h"
#include "journal/writer.h"
#include "net/udp.h"
#include "service/feed_publisher.h"
#include "service/feed_request_server.h"
#include "service/replication_gate.h"
#include "service/service_stats.h"
#include "service/session_table.h"
#include "state/state_machine.h"

namespace orderwire::state {
class StateMachine;
}  // namespace orderwire::state

namespace orderwire::service {

// The default port of `orderwire serve` (and of the Wireshark dissector).
inline constexpr std::uint16_t kDefaultPort = 7400;

class StatsMirror;

// How report datagrams leave (net::SendPath; docs/SERVICE.md "Sending
// reports"): kSegmented groups each session's datagrams into UDP_SEGMENT
// sends, kSendmmsg sends each as its own sendmmsg entry, kAuto takes
// kSegmented when the kernel has UDP_SEGMENT. The datagrams a client
// receives are the same either way.
using net::SendPath;
using net::SendPathName;

struct ServiceOptions {
  net::Endpoint listen;
  journal::WriterOptions journal;  // directory, durability, ...
  config::ServiceConfig config;
  // The journal pins the configuration that decides how its records apply
  // (pinned_config.h). When `config` differs from the one the journal pins,
  // Start() refuses, naming each difference, unless this is set: then it
  // starts a new segment that pins `config` from the next index on.
  bool reconfigure = false;
  // Most commands journaled but not yet applied; beyond it the service
  // stops reading until the journal catches up.
  std::size_t max_pending = 1 << 16;
  // Per session: at most this many reports kept for sending again (the
  // total is config.max_report_history_bytes; report_history.h).
  std::size_t report_history = state::kDefaultReportHistory;
  // Datagrams per recvmmsg / sendmmsg.
  std::size_t batch = 64;
  // `serve --send`. kSegmented on a kernel without UDP_SEGMENT: Start()
  // refuses; kAuto falls back to sendmmsg (and says so in the start-up
  // report). A segmented send the kernel refuses with EIO or EINVAL (the
  // path to a peer cannot segment) sends those datagrams with sendmmsg and
  // stays on sendmmsg, logged once and counted (gso_fallbacks).
  SendPath send = SendPath::kAuto;
  // Tests only: the socket's system calls (net::SocketCalls); null: real.
  const net::SocketCalls* socket_calls_for_testing = nullptr;
  // Called from the service's thread every `interval_s` seconds while it
  // runs (e.g. to print counters); 0 turns it off.
  double interval_s = 0;
  std::function<void()> on_interval;
  // Called from the service's thread with a line for the operator when the
  // service changes state (the journal full, and resumed), and from the
  // feed request server's for its lines (a retransmission the journal
  // could not make again). Null: the line goes to stderr.
  std::function<void(std::string_view)> on_event;
  // Snapshots of the state while serving (see above): after at least this
  // many records since the last one (0: no such trigger), and/or after at
  // least this many seconds with new records (0: no such trigger).
  std::uint64_t snapshot_every_records = 0;
  double snapshot_every_seconds = 0;
  // Start from the newest valid snapshot (false: replay the whole journal,
  // `serve --no-snapshot`).
  bool restart_from_snapshot = true;
  // Tests only: called in the snapshot child before it writes (e.g. to make
  // the write slow); it must not touch the parent's resources.
  std::function<void()> in_snapshot_child;
  // A snapshot child running longer than this is killed (failed), and a
  // stop waits for one at most snapshot_stop_wait_s (both above 0).
  double snapshot_child_limit_s = 600;
  double snapshot_stop_wait_s = 10;
  // Where to write a line naming a refused datagram (session, source,
  // cause, likely reason), at most one per cause per second with the count
  // of those not written since; null: none (`serve --log-refusals`).
  std::FILE* refusal_log = nullptr;
  // `serve --retain`: prune the journal's old segments on a helper thread
  // (service/retention.h), never past the newest snapshot that verifies
  // (a damaged one is reported on on_retention and not relied on); none: keep
  // everything. Its lines go to on_retention (called on that thread; null:
  // stderr).
  std::optional<journal::RetentionPolicy> retain;
  std::function<void(std::string_view)> on_retention;
  // `serve --metrics-listen` (service/metrics/metrics.h): when set, the
  // service's thread publishes its counters here (relaxed atomic stores, no
  // lock, no allocation) at most once a millisecond, busy or idle (so an idle
  // service's counters are exact within its 50 ms wait), after Start() and
  // when Run() returns from a clean stop, for a reader on another thread.
  // Must outlive the Service. Null: nothing is published.
  StatsMirror* metrics = nullptr;
  // `serve --durability replicated` (replication_gate.h; the NATS
  // implementation is cluster/primary_replication.h, docs/SERVICE.md
  // "Durability"): a command is answered only when its record is durable in
  // the local journal (under journal.durability) AND acknowledged by the
  // replica (the gate's replicated index), and, with a LeadershipCheck,
  // while this primary is the leader. Start() calls the hook last, after
  // the journal is recovered, replayed and durable; the hook returns only
  // once every local record is replicated (the socket, bound earlier, is
  // not read before Run()). A replication failure or a lost leadership
  // stops the service: nothing more is answered and Run() returns it.
  // Null: local only.
  std::shared_ptr<const ReplicationStarter> replication;
  // `serve --md-target` (feed_publisher.h, docs/MARKETDATA.md
  // "Publishing"): the feed of every record applied live, sent in the pass
  // that answers the record, after its reports; a Heartbeat when Run()
  // starts and when idle; EndOfSession when Run() stops cleanly. Its
  // socket is made before the journal is opened (a refused target leaves
  // the journal as it was). Null: no feed is sent (the StateMachine makes
  // it all the same: it is state).
  std::optional<FeedPublisherOptions> market_data;
  // `serve --md-request-listen` (feed_request_server.h): the feed's request
  // server, on a thread of its own, answering from the live feed's ring.
  // Needs market_data (Start() refuses it alone). Bound before the journal
  // is opened; answers once Run() starts.
  std::optional<FeedRequestServerOptions> md_requests;
};

class Service {
 public:
  // Binds the socket and chooses the send path, then opens and recovers the
  // journal and replays it: a start refused for the socket (the address in
  // use) leaves the journal directory as it was (a missing one is not
  // created). Datagrams that arrive before Run() wait in the socket buffer.
  // Errors: the bind error (naming the address), those of
  // JournalWriter::Open and JournalReader (DataLoss names the file
  // and offset), a journal that does not replay (a record from a session the
  // table cannot hold, a sequence out of order, a configuration in a
  // segment header that cannot be read), FailedPrecondition when
  // options.config differs from the configuration the journal pins (each
  // difference named) and options.reconfigure is not set, or when the
  // state cannot take the new configuration (e.g. fewer max_live_orders
  // than live orders). With replication: the start hook's errors
  // (ReplicationStarter::Start; for NATS, cluster/primary_replication.h: a
  // refusal at once, DeadlineExceeded when NATS did not answer in time,
  // Cancelled when told to stop while waiting); InvalidArgument with
  // reconfigure.
  static absl::StatusOr<std::unique_ptr<Service>> Start(ServiceOptions options);
  ~Service();

  // Serves until `stop` is set, then stops reading, makes everything
  // journaled durable, applies it, sends the last reports and closes the
  // journal. Errors: a journal I/O error (the service stops at once: it
  // never answers what it cannot make durable), a socket error, or with
  // ServiceOptions::replication a replication failure (the gate's failure,
  // e.g. fenced by another writer, no acknowledgement in time, the
  // connection lost; or the leadership lost: the service stops answering at
  // once and logs it).
  absl::Status Run(const std::atomic<bool>& stop);

  // The state the journal has made (engine, sessions); read only between
  // Start() and Run(), or after Run() returned.
  [[nodiscard]] const state::StateMachine& state() const;
  // The bound address (with the port the kernel chose for port 0).
  [[nodiscard]] const net::Endpoint& local_endpoint() const;
  // The feed's request server's bound address (ServiceOptions::md_requests;
  // null without one).
  [[nodiscard]] const net::Endpoint* md_request_endpoint() const;
  [[nodiscard]] const ServiceStats& stats() const;
  // One line of the main counters (for --stats-interval).
  [[nodiscard]] std::string StatsLine() const;
  // Every counter, readable, one per line (at exit): FormatStatsReport.
  [[nodiscard]] std::string StatsReport() const;
  // Every counter as a JSON object (for --stats-json): FormatStatsJson.
  [[nodiscard]] std::string StatsJson() const;
  // What Start() recovered and replayed, for the start-up banner.
  [[nodiscard]] const std::string& startup_report() const;
  // What Start() had to repair (a torn tail it cut off), empty if nothing:
  // an operator must see it even when the banner is off.
  [[nodiscard]] const std::string& startup_warning() const;

 private:
  class Impl;
  explicit Service(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_SERVICE_H_
