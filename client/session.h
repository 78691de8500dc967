// orderwire::client::Session: one order-entry session, for a trading program
// that sends orders from its own event loop. Non-blocking: Submit() queues a
// command, Poll() does one round of I/O and returns; fd() is the session's
// UDP socket, for the caller's poll(2) or epoll. docs/CLIENT.md has an
// example and the rules.
//
// What a session does (docs/PROTOCOL.md for the wire):
//
// Framing. Submit() gives the command the session's next sequence and
// encodes it once, into a slot of the session's own ring of frames; Poll()
// packs the queued frames into datagrams (as many as fit, at most 64
// datagrams a round) and sends them. Retransmissions copy the same bytes
// again: nothing is encoded twice.
//
// Window. At most `window` commands are unacknowledged at once; Submit()
// past it returns ResourceExhausted (absl::IsResourceExhausted) without
// queuing anything: Poll until acknowledgements free a slot. The protocol
// has no ack frame: a command is acknowledged by its first report, its
// "primary" (Accepted or Rejected for a new order, Cancelled with reason
// Requested or Rejected for a cancel, Replaced or Rejected for a replace),
// checked against the command (kind, client_order_id or order_id); a
// mismatch is DataLoss and ends the session. A MassCancel's primary is its
// last report, MassCancelDone (or Rejected): the Cancelled reports (reason
// MassCancel) before it are delivered as part of its answer; a Goodbye's is
// its SessionClosed (reason Goodbye) after its Cancelled reports (reason
// CancelOnDisconnect). A lapse's reports (docs/CONTROLS.md) answer no
// command: delivered like a maker's fill.
//
// Order. Reports are delivered to the `on_report` callback (set at Open)
// strictly in report-sequence order, each once: an older report is a
// duplicate and skipped; a newer one means one was lost, so it is dropped
// and the session waits for the service to resend (it does when it sees a
// retransmitted command).
//
// Retransmission, go-back-N: from the expected sequence of a SequenceGap
// (once per gap value and round trip); from the oldest unacknowledged
// command after `retransmit_timeout_ms` without progress, or, while a
// report is missing, from the last acknowledged command (the missing
// report may be one of its own, after its primary). After such a timeout
// (and after a failover) the session sends again in slow start: at most
// kRecoveryStart commands past the oldest unanswered one, one more for
// each acknowledgement (twice as many each round trip) until the window:
// one duplicate makes the service resend every report from it on, so a
// whole window sent again only multiplies the work of both ends. Busy (the
// service takes no commands for now, e.g. its journal's disk is full): nothing
// is sent for a back-off (1 ms, doubling while Busy repeats, at most 50 ms,
// back to 1 ms on the next acknowledgement), then from the Busy's expected
// sequence. ReportsGone (docs/PROTOCOL.md "Reports gone"): the session
// continues from the report and command it names and counts the commands
// it skipped as unconfirmed (applied, results unknown: reconcile them).
//
// Keyed sessions: with a MAC, every datagram sent is signed, and a report
// datagram without a valid MAC is dropped and counted.
//
// Heartbeats (docs/CONTROLS.md). When nothing has been sent for
// `heartbeat_interval_ms`, Poll sends a Heartbeat; until a datagram of the
// service comes back, a Heartbeat is outstanding like a command (so an
// idle session notices a dead service: failover, silence). A HeartbeatAck
// whose next_report is above the report expected next is a lost report:
// the session goes back to its last acknowledged command, as for a hole.
//
// Failover. With more than one target (`target`, then `failover_targets`),
// when nothing has been heard from the current target for
// `failover_timeout_ms` while commands, reports or a Heartbeat are
// outstanding, the
// session moves to the next target (round robin, counted in `failovers`,
// current_target() names it) and goes back, as a retransmission timeout
// does, to the oldest unanswered command (to the last acknowledged one
// while a report is missing): the new primary holds the same journal, so it
// knows the session's expected sequence and answers duplicates from its
// report history. Reports stay in order and once each across the switch
// (the expected report sequence is the session's, not the target's). With
// several targets only the current one is heard: a datagram from any other
// address (an old primary waking up after the switch) is dropped and
// counted in `other_target_datagrams`; a send the kernel refuses as
// unreachable (ENETUNREACH, EHOSTUNREACH, EHOSTDOWN, ENETDOWN,
// ECONNREFUSED) loses its datagrams (`unreachable_sends`) instead of ending
// the session, and the failover timeout moves on. With one target nothing
// of this happens: datagrams are taken from any address and a send error
// ends the session, as before.
//
// Silence. The service never answers what it refuses (unknown session,
// address not allowed, wrong key, ...). When nothing has been heard for
// `explain_after_ms` while commands or reports are outstanding,
// refusals().silent is set (and counted) until a datagram arrives;
// ExplainSilence() lists the likely causes for a person.
//
// Transport: with SendPath::kSegmented (or kAuto where the kernel has
// UDP_SEGMENT) datagrams go out as UDP_SEGMENT sends and come in with
// UDP_GRO, split back into the service's datagrams; with kSendmmsg, one
// datagram per sendmmsg entry. A segmented send refused with EIO/EINVAL
// falls back to the plain way for good (counted).
//
// Costs. Open() allocates everything (the frame ring, the datagram
// batches); Submit() and Poll() allocate nothing and never block (Poll:
// a sendmmsg per batch of datagrams and one recvmmsg, on a non-blocking
// socket; datagrams a full socket buffer refuses wait, built, for the next
// Poll, which sends them before anything else). Errors that end the session
// (DataLoss, Unavailable) carry a message and allocate it once.
//
// Threads: a Session is not thread-safe; one thread at a time calls it.
// The callback runs inside Poll() on that thread; it may call Submit(), not
// Poll().
#ifndef ORDERWIRE_CLIENT_SESSION_H_
#define ORDERWIRE_CLIENT_SESSION_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "auth/mac.h"
#include "base/latency_histogram.h"
#include "codec/command.h"
#include "codec/frame.h"
#include "codec/messages.h"
#include "net/udp.h"

namespace orderwire::client {

// Called with each report frame (Accepted, Filled, Cancelled, Rejected,
// Replaced, ...), strictly in report-sequence order, each once. The view is
// valid during the call only. SequenceGap, Busy and ReportsGone are not
// reports of the session's orders: they are handled and counted, not
// delivered.
using ReportHandler = std::function<void(const codec::FrameView& report)>;

struct SessionOptions {
  net::Endpoint target;  // the service (the first target)
  // More targets, in the order the session fails over to them after
  // `target` (round robin; docs/CLIENT.md "Failover"): the hot standbys.
  // Same address family as `target`. Empty: one target, no failover.
  std::vector<net::Endpoint> failover_targets;
  // With several targets: nothing heard from the current one for this long
  // while commands or reports are outstanding moves to the next.
  int failover_timeout_ms = 1500;
  std::uint32_t session_id = 1;
  // Most commands unacknowledged at once: 1 to kMaxWindow.
  std::uint32_t window = 4096;
  int retransmit_timeout_ms = 200;
  // A program that resumes a session (after a restart, from its own
  // records): the sequence of its next command, and of the next report it
  // expects (one past the last report it holds). A keyed session may resume
  // from a new socket; an unkeyed one stays pinned to its first address and
  // port until the service restarts, or, unlisted, gives its place back
  // when idle (docs/PROTOCOL.md "Admission").
  std::uint64_t first_sequence = 1;
  std::uint64_t first_report_sequence = 1;
  // The session's key: sign what is sent, check what is received.
  std::optional<auth::Mac> mac;
  net::SendPath send = net::SendPath::kAuto;
  // Nothing heard for this long while waiting: refusals().silent.
  int explain_after_ms = 1000;
  // Nothing sent for this long: a Heartbeat goes (docs/CONTROLS.md
  // "Heartbeats"), so that an idle session learns the service is alive
  // (and fails over when it is not) and whether it lacks a report. 0: no
  // heartbeats.
  int heartbeat_interval_ms = 1000;
  // Where the reports go; may be empty (then they are only counted).
  ReportHandler on_report;
  // Tests only: the socket's system calls; null: the real ones. Must
  // outlive the session.
  const net::SocketCalls* socket_calls_for_testing = nullptr;
};

inline constexpr std::uint32_t kMaxWindow = 1 << 20;
// Commands past the oldest unanswered one that a session sends after a
// retransmission timeout or a failover, before acknowledgements widen it.
inline constexpr std::uint32_t kRecoveryStart = 64;

struct SessionCounters {
  std::uint64_t submitted = 0;      // commands Submit() took
  std::uint64_t sent = 0;           // first transmissions
  std::uint64_t retransmitted = 0;  // frames sent again
  std::uint64_t acknowledged = 0;   // primaries received and checked
  std::uint64_t accepted = 0;
  std::uint64_t rejected = 0;
  std::uint64_t replaced = 0;
  std::uint64_t cancelled = 0;        // Cancelled reports, any reason
  std::uint64_t fills = 0;            // Filled reports
  std::uint64_t sessions_closed = 0;  // SessionClosed reports (Goodbye, lapse)
  std::uint64_t reports = 0;          // reports delivered (in order)
  std::uint64_t report_bytes = 0;
  std::uint64_t duplicate_reports = 0;
  std::uint64_t out_of_order_reports = 0;  // dropped, waited for again
  std::uint64_t sequence_gaps = 0;         // SequenceGap frames received
  std::uint64_t busy = 0;                  // Busy frames received
  std::uint64_t heartbeats_sent = 0;
  std::uint64_t heartbeat_acks = 0;  // HeartbeatAck frames received
  // HeartbeatAcks that showed a report this session lacks.
  std::uint64_t heartbeat_report_holes = 0;
  // ReportsGone frames that told something new, the reports they said are
  // gone, and the commands whose acknowledgement was among them.
  std::uint64_t reports_gone = 0;
  std::uint64_t reports_lost = 0;
  std::uint64_t unconfirmed = 0;
  std::uint64_t datagrams_sent = 0;
  std::uint64_t datagrams_received = 0;
  std::uint64_t segmented_sends = 0;     // sendmmsg entries of GSO sends
  std::uint64_t coalesced_receives = 0;  // receive slots holding several
  std::uint64_t gso_fallbacks = 0;       // the segmented path given up
  std::uint64_t bad_datagrams = 0;       // malformed or another session's
  std::uint64_t bad_mac_datagrams = 0;   // keyed: MAC missing or wrong
  std::uint64_t silences = 0;            // times refusals().silent was set
  // Several targets: switches to the next target, datagrams dropped
  // because they came from an address other than the current target, and
  // datagrams not sent because the kernel could not reach the target.
  std::uint64_t failovers = 0;
  std::uint64_t other_target_datagrams = 0;
  std::uint64_t unreachable_sends = 0;
};

// What the session knows about the service refusing or losing things.
struct Refusals {
  // The cause of the last Busy, if any, and the time (base::MonotonicNs)
  // before which the session sends nothing because of it.
  std::optional<codec::BusyCause> busy_cause;
  std::int64_t busy_until_ns = 0;
  // The expected_sequence of the last SequenceGap (0: none yet).
  std::uint64_t last_gap_expected = 0;
  // The last ReportsGone that told something new (0: none yet): reports
  // below reports_gone_from that the session lacked will never come;
  // commands below unconfirmed_below were applied, results unknown.
  std::uint64_t reports_gone_from = 0;
  std::uint64_t unconfirmed_below = 0;
  // Nothing heard for explain_after_ms while waiting for the service (set
  // until a datagram of the session arrives): see ExplainSilence().
  bool silent = false;
};

// What one Poll() did.
struct PollResult {
  std::size_t datagrams_sent = 0;
  std::size_t datagrams_received = 0;  // including malformed ones
  std::size_t reports = 0;             // delivered to on_report
  // Commands are queued that may go out now (a round sends at most 64
  // datagrams), or datagrams wait for room in the socket buffer: poll again
  // without waiting for fd() to be readable.
  bool more_to_send = false;
};

class Session {
 public:
  // Opens a UDP socket (an ephemeral port of the target's family) and
  // allocates the session's buffers. Errors: InvalidArgument (window 0 or
  // above kMaxWindow, a first sequence 0, a target without an address or a
  // failover target of another family than `target`, retransmit, explain
  // or failover time not positive), Unavailable (the socket),
  // FailedPrecondition (SendPath::kSegmented on a kernel without UDP_SEGMENT).
  static absl::StatusOr<std::unique_ptr<Session>> Open(SessionOptions options);

  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();

  // Queues `model` (NewLimit, NewMarket, CancelByOrder, CancelByClient,
  // Replace, MassCancel, Goodbye, OrderStatusRequest) under the next sequence
  // and returns that sequence. Errors: ResourceExhausted (the window is full:
  // nothing queued; Poll and try again), the session's error once Poll failed.
  // Hot path: no allocation.
  template <typename Model>
  absl::StatusOr<std::uint64_t> Submit(const Model& model) {
    return Submit(codec::Command::From(0, model));
  }
  // The same for a Command (its `sequence` is ignored). Also
  // InvalidArgument when `command.kind` is not a command kind.
  absl::StatusOr<std::uint64_t> Submit(const codec::Command& command);
  // The same for one already encoded command frame (exactly one whole
  // frame); the session writes its next sequence into its copy. Errors
  // also: InvalidArgument when `frame` is not one whole command frame.
  absl::StatusOr<std::uint64_t> SubmitFrame(std::span<const std::byte> frame);

  // One non-blocking round at time `now_ns` (base::MonotonicNs): decides on
  // retransmissions and silence, sends what is queued and may go, receives
  // what is waiting and delivers its reports in order. Errors end the
  // session (every later call returns them): Unavailable (the socket failed),
  // DataLoss (a report that contradicts its command). FailedPrecondition
  // when called from the report callback (nothing done; the session goes
  // on). Hot path: no allocation, no waiting.
  absl::StatusOr<PollResult> Poll(std::int64_t now_ns);

  // The socket: readable when reports are waiting.
  [[nodiscard]] int fd() const;
  // The target in use: `target` until a failover, then the one switched to.
  [[nodiscard]] const net::Endpoint& current_target() const {
    return current_target_ == 0
               ? options_.target
               : options_.failover_targets[current_target_ - 1];
  }
  // Its place in the list: 0 is `target`, i is failover_targets[i - 1].
  [[nodiscard]] std::size_t current_target_index() const {
    return current_target_;
  }
  // The sequence the next Submit gets.
  [[nodiscard]] std::uint64_t next_sequence() const;
  // Commands submitted and not yet answered (acknowledged or given up as
  // unconfirmed after ReportsGone).
  [[nodiscard]] std::uint64_t unanswered() const { return submitted_ - acked_; }
  // Commands answered, from the first: acknowledged or unconfirmed.
  [[nodiscard]] std::uint64_t answered() const { return acked_; }
  [[nodiscard]] bool window_full() const { return unanswered() >= window_; }
  // A report is known to be missing (one newer came first).
  [[nodiscard]] bool report_missing() const { return report_hole_; }
  // The times (base::MonotonicNs) of the last progress (an acknowledgement,
  // a Busy or a ReportsGone), the last acknowledgement, and the last
  // datagram of this session heard. All start at Open.
  [[nodiscard]] std::int64_t last_progress_ns() const {
    return last_progress_ns_;
  }
  [[nodiscard]] std::int64_t last_ack_ns() const { return last_ack_ns_; }
  [[nodiscard]] std::int64_t last_heard_ns() const { return last_heard_ns_; }
  [[nodiscard]] const SessionCounters& counters() const { return counters_; }
  [[nodiscard]] const Refusals& refusals() const { return refusals_; }
  // First send to primary report, per acknowledged command.
  [[nodiscard]] const LatencyHistogram& latency_ns() const {
    return latency_ns_;
  }
  // Whether datagrams go out segmented (UDP_SEGMENT) now, and whether the
  // socket receives with UDP_GRO.
  [[nodiscard]] bool segmented() const { return segmented_; }
  [[nodiscard]] bool gro() const { return gro_; }
  // The likely causes of hearing nothing, for a person (ExplainSilence
  // below). Cold: allocates.
  [[nodiscard]] std::string ExplainSilence() const;

 private:
  struct Storage;
  explicit Session(SessionOptions options);

  absl::StatusOr<std::uint64_t> Queue(std::size_t frame_size);
  [[nodiscard]] std::size_t Slot(std::uint64_t index) const {
    return static_cast<std::size_t>(index % ring_slots_);
  }
  [[nodiscard]] std::size_t target_count() const {
    return 1 + options_.failover_targets.size();
  }
  // One past the last command index that may be sent now (slow start).
  [[nodiscard]] std::uint64_t send_end() const {
    return std::min(submitted_, acked_ + send_window_);
  }
  // Go back to the oldest unanswered command (to the last acknowledged
  // one while a report is missing) and send again in slow start.
  void GoBack();
  void FailOver(std::int64_t now_ns);
  void Flush(std::int64_t now_ns, PollResult& result);
  void SendBuilt(PollResult& result);
  // A Heartbeat datagram in the send batch's first slot.
  void BuildHeartbeat();
  absl::Status Fail(absl::Status status);
  absl::Status Receive(std::int64_t now_ns, PollResult& result);
  // Receive's steps (always inlined into it): one datagram, and the
  // refusals a report datagram may carry.
  absl::Status HandleDatagram(std::span<const std::byte> bytes,
                              std::int64_t now_ns, PollResult& result);
  void OnSequenceGap(const codec::FrameView& report, std::int64_t now_ns);
  void OnReportsGone(const codec::FrameView& report);
  void OnBusy(const codec::FrameView& report, std::int64_t now_ns);
  void OnHeartbeatAck(const codec::FrameView& report);
  absl::Status TakeReport(const codec::FrameView& report, PollResult& result);

  SessionOptions options_;
  std::uint64_t window_;
  // Slow start: commands past acked_ that may be in flight now; window_
  // but after a timeout or failover (then kRecoveryStart, + 1 an ack).
  std::uint64_t send_window_;
  std::uint64_t ring_slots_;  // window + 1: the last acknowledged one stays
  std::unique_ptr<Storage> storage_;
  absl::Status failed_;       // set once Poll failed
  absl::Status window_full_;  // made once, copied without allocating
  std::int64_t timeout_ns_;
  std::int64_t explain_ns_;
  std::int64_t failover_ns_;

  // Command indexes count from 0 = first_sequence.
  std::uint64_t submitted_ = 0;     // commands queued
  std::uint64_t next_to_send_ = 0;  // index of the next to transmit
  std::uint64_t high_water_ = 0;    // commands transmitted at least once
  std::uint64_t acked_ = 0;         // commands answered
  std::uint64_t expected_report_;
  bool report_hole_ = false;
  std::uint64_t last_gap_handled_ = 0;
  std::int64_t last_gap_ns_ = 0;
  std::int64_t busy_backoff_ns_;
  std::int64_t last_progress_ns_;
  std::int64_t last_ack_ns_;
  std::int64_t last_heard_ns_;
  // Heartbeats: the interval (0: none), when a datagram last went out,
  // the last nonce sent, and whether nothing was heard since a Heartbeat
  // went (the session then waits for its answer).
  std::int64_t heartbeat_ns_;
  std::int64_t last_sent_ns_;
  std::uint64_t heartbeat_nonce_ = 0;
  bool heartbeat_unanswered_ = false;
  // Failover: the target in use (0: options_.target), when the session
  // switched to it, and when it began waiting (a command or report
  // outstanding) after being idle: silence is measured from the latest.
  std::size_t current_target_ = 0;
  std::int64_t target_since_ns_;
  std::int64_t waiting_since_ns_;
  bool was_waiting_ = false;
  // Datagrams built in the send batch, and how many of them went out (the
  // rest wait for room in the socket buffer).
  std::size_t tx_built_ = 0;
  std::size_t tx_sent_ = 0;
  bool segmented_ = false;
  bool gro_ = false;
  bool in_poll_ = false;
  SessionCounters counters_;
  Refusals refusals_;
  LatencyHistogram latency_ns_;
};

// The likely causes of hearing nothing from `target` for `session_id`, for
// a person: the service not running or another port, the session not
// configured, max_sessions reached, the address not allowed or the session
// pinned to another endpoint, and for the key: missing (the session is
// keyed and this client has none) or wrong (`keyed`). Several lines, each
// cause starting with "  - ".
[[nodiscard]] std::string ExplainSilence(const net::Endpoint& target,
                                         std::uint32_t session_id, bool keyed);

}  // namespace orderwire::client

#endif  // ORDERWIRE_CLIENT_SESSION_H_
