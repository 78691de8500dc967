// StateMachine: the one function from a journal record to its effects.
//
// The service journals each command before it acts on it; what the command
// then does (the engine's reports, which session each report goes to, the
// report's sequence on that session, the history kept for resending) is
// decided here, by Apply(record), and nowhere else. The live loop calls it
// once a record is durable, restart recovery calls it for every record of
// the journal, `orderwire replay` calls it to reproduce every session's
// reports offline, and a follower will call it for records it did not write.
// Because they share this function, live == restart == replay, byte for
// byte, per session.
//
// State kept here, all of it derived from the journal alone:
// - the engine (books, orders with their owner tags, id counters);
// - per session, in order of first appearance in the journal: its id, the
//   next inbound sequence to apply, the next report sequence, and its report
//   history (the recent report frames, for the service to send again);
// - the market-data feed's next sequence, the instrument directory it
//   announced and the record its session began at (feed_producer.h): each
//   record's feed messages are made here too (docs/MARKETDATA.md "From the
//   journal to the feed"); a record flagged kRecordNewFeedSession begins a
//   new feed session.
//
// Routing. A session's dense index (0, 1, 2, ... in order of first
// appearance) is the engine owner tag of every order the session enters; the
// engine returns the tag with each report, so a report's session is one
// field read. docs/PROTOCOL.md: an order belongs to its account and to the
// session that entered it; a maker's Filled and a resting order's self-trade
// Cancelled go to the maker's session; everything else to the submitter.
//
// A record flagged kRecordLapse is not a command: it closes its session
// (record_flags.h), which must exist, without moving its sequence.
//
// Errors from Apply() mean the journal is not one this state machine can
// apply (never a client's fault: the Sequencer only journals what is in
// sequence): a record out of index order, an unknown flag bit, a frame that
// is not a command, a sequence that does not continue its session, a lapse
// that is not a Goodbye of sequence 0 of a known session. The state is
// unchanged by a refused record.
//
// Hot path: Apply() does not allocate once its buffers have held the
// largest command so far, except once per new session (its state) and when
// a session's report history doubles (report_history.h: at most
// log2(report_history / 2) times per session, bounded by the budget; none
// in the steady state).
#ifndef ORDERWIRE_STATE_STATE_MACHINE_H_
#define ORDERWIRE_STATE_STATE_MACHINE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "codec/command.h"
#include "codec/kind_table.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "engine/report.h"
#include "journal/reader.h"
#include "state/feed_producer.h"
#include "state/report_history.h"

namespace orderwire::state {

// A journal record, as the state machine takes it: from the journal reader
// (FromJournal) or from the live loop's pending ring.
struct Record {
  std::uint64_t index = 0;
  std::uint64_t receive_ns = 0;
  std::uint32_t session_id = 0;
  std::uint32_t flags = 0;  // record_flags.h
  std::span<const std::byte> frame;

  static Record FromJournal(const journal::Record& r) {
    return {r.index, r.receive_ns, r.session_id, r.flags, r.frame.bytes()};
  }
};

// One report as a session receives it.
struct Output {
  std::uint32_t session;     // the session's dense index
  std::uint32_t session_id;  // its id on the wire
  std::uint64_t sequence;    // its report sequence on that session
  codec::Kind kind;
  std::span<const std::byte> frame;  // numbered; valid until the next Apply
};

// Reports kept per session for sending again unless configured otherwise
// (the service, the standby and `snapshot` all keep this many).
inline constexpr std::size_t kDefaultReportHistory = std::size_t{1} << 14;

struct StateMachineOptions {
  engine::EngineConfig engine;
  // The configured cap on unlisted sessions, kept as part of the pinned
  // configuration (pinned_config.h). The StateMachine refuses no session
  // for it: the service's SessionTable applies the cap (plus every listed
  // session) before a session's first command is journaled, and a journal
  // is applied as it was written.
  std::uint32_t max_sessions = 1024;
  // Per session: at most this many report frames kept for sending again
  // (rounded up to a power of two).
  std::size_t report_history = kDefaultReportHistory;
  // All sessions' report histories together, in bytes (report_history.h).
  std::size_t history_budget_bytes = std::size_t{64} << 20;
};

// What the journal has made of one session.
struct SessionState {
  std::uint32_t id = 0;
  std::uint32_t index = 0;
  std::uint64_t next_expected = 1;  // next inbound sequence to apply
  std::uint64_t next_report = 1;    // sequence of the next report
  // Closed by a Goodbye or a lapse and no command applied since
  // (docs/CONTROLS.md "Goodbye, liveness and cancel-on-disconnect"): the
  // service journals no lapse for a closed session.
  bool closed = false;
  ReportHistory history;
};

// Counters of what Apply() did.
struct StateMachineStats {
  std::uint64_t records = 0;
  // By kind; a lapse (not a command) is counted in `records` only.
  std::array<std::uint64_t, 256> commands{};
  std::array<std::uint64_t, 256> reports{};  // by kind
  std::array<std::uint64_t, 16> rejects{};   // by RejectReason
  std::uint64_t unauthorized = 0;
};

class StateMachine {
 public:
  // Precondition: engine::ValidateConfig(options.engine).ok(). Allocates the
  // engine's pools (see engine.h).
  explicit StateMachine(const StateMachineOptions& options);

  StateMachine(const StateMachine&) = delete;
  StateMachine& operator=(const StateMachine&) = delete;

  // Applies one journal record: its command through the engine, its reports
  // numbered on their sessions and kept in their histories; outputs() then
  // holds them in emission order. Records must come in index order with no
  // gap (the first may have any index: a journal that starts later, or a
  // snapshot). Errors: DataLoss or ResourceExhausted naming the record (see
  // the header comment); the state is then unchanged.
  absl::Status Apply(const Record& record);

  // Changes the settings that decide how records apply, between two
  // records: the engine's limits (engine::Engine::Reconfigure: new limits
  // for new commands, live orders kept) and max_sessions (at least 1; the
  // service's cap, see StateMachineOptions). The
  // service does it where the journal pins a new configuration (a segment
  // start, pinned_config.h), so live, restart and replay change at the same
  // index. Errors, the state unchanged: InvalidArgument or
  // FailedPrecondition naming the setting (max_sessions 0, or the engine's
  // refusal). Cold.
  absl::Status Reconfigure(const engine::EngineConfig& engine,
                           std::uint32_t max_sessions);

  [[nodiscard]] const StateMachineOptions& options() const noexcept {
    return options_;
  }

  // The reports of the last Apply(), in emission order.
  [[nodiscard]] std::span<const Output> outputs() const noexcept {
    return {outputs_.data(), output_count_};
  }
  // The market-data feed's messages of the last Apply(), in feed order
  // (none after a refused record); valid until the next Apply().
  [[nodiscard]] std::span<const FeedMessage> feed() const noexcept {
    return feed_.messages();
  }
  // The feed's state: its next sequence, the directory it announced and
  // where its session began.
  [[nodiscard]] const FeedProducer& feed_producer() const noexcept {
    return feed_;
  }

  // The session with this id, if the journal has one. O(1).
  [[nodiscard]] const SessionState* Find(std::uint32_t id) const;
  [[nodiscard]] const SessionState& session(std::uint32_t index) const {
    return *sessions_[index];
  }
  [[nodiscard]] std::size_t session_count() const noexcept {
    return sessions_.size();
  }

  // Frees the report history of session `index` (the service's decision,
  // e.g. for an idle session; never part of what a replay reproduces).
  // Returns the bytes given back. Cold.
  std::size_t ReleaseHistory(std::uint32_t index) noexcept;
  // Frees every session's report history and keeps at most one report per
  // session from now on: for a machine that replays the journal for a
  // purpose of its own and takes the reports from outputs() (the report
  // regenerator). The reports made do not change (report_history.h,
  // "Determinism"). Cold.
  void KeepNoHistory() noexcept;
  // Bytes all report histories hold, and their budget.
  [[nodiscard]] const HistoryBudget& history_budget() const noexcept {
    return history_budget_;
  }

  // The index of the last record applied (0: none).
  [[nodiscard]] std::uint64_t last_index() const noexcept {
    return last_index_;
  }
  [[nodiscard]] const engine::Engine& engine() const noexcept {
    return *engine_;
  }
  [[nodiscard]] const StateMachineStats& stats() const noexcept {
    return stats_;
  }

 private:
  // state/snapshot.cc reads and restores the whole state (cold).
  friend class SnapshotCodec;

  SessionState* NewSession(std::uint32_t id);
  // Numbers each report of reports_, in place, on the session it goes to,
  // keeps it in that session's history and lists it in outputs_. Hot.
  void NumberReports();
  // Why a record flagged kRecordLapse cannot apply (OK if it can).
  absl::Status CheckLapse(const Record& record, const codec::Command& command,
                          const SessionState* session) const;

  StateMachineOptions options_;
  HistoryBudget history_budget_;
  std::unique_ptr<engine::Engine> engine_;
  engine::ReportBuffer reports_{1 << 12};
  std::vector<std::unique_ptr<SessionState>> sessions_;  // by index
  absl::flat_hash_map<std::uint32_t, std::uint32_t> by_id_;
  SessionState* last_session_ = nullptr;  // of the last record applied
  // Outputs of the last Apply; their frames are reports_'s, renumbered.
  std::vector<Output> outputs_;
  std::size_t output_count_ = 0;
  FeedProducer feed_;
  std::uint64_t last_index_ = 0;
  StateMachineStats stats_;
};

}  // namespace orderwire::state

#endif  // ORDERWIRE_STATE_STATE_MACHINE_H_
