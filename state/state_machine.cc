// The state machine of the service; see state_machine.h.
#include "state/state_machine.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "codec/frame.h"
#include "codec/types.h"
#include "state/record_flags.h"

namespace orderwire::state {

StateMachine::StateMachine(const StateMachineOptions& options)
    : options_(options),
      history_budget_(options.history_budget_bytes),
      engine_(std::make_unique<engine::Engine>(options_.engine)) {
  // Room for sessions grows with them: a configured max_sessions costs
  // nothing until sessions exist.
  outputs_.resize(1 << 10);
}

absl::Status StateMachine::Reconfigure(const engine::EngineConfig& engine,
                                       std::uint32_t max_sessions) {
  if (max_sessions == 0) {
    return absl::InvalidArgumentError("max_sessions must be at least 1");
  }
  if (absl::Status s = engine_->Reconfigure(engine); !s.ok()) return s;
  feed_.ConfigurationChanged();
  options_.engine = engine;
  options_.max_sessions = max_sessions;
  return absl::OkStatus();
}

const SessionState* StateMachine::Find(std::uint32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : sessions_[it->second].get();
}

SessionState* StateMachine::NewSession(std::uint32_t id) {
  // Once per session, when its first record is applied.
  const auto index = static_cast<std::uint32_t>(sessions_.size());
  auto state = std::make_unique<SessionState>();
  state->id = id;
  state->index = index;
  sessions_.push_back(std::move(state));
  by_id_.emplace(id, index);
  return sessions_.back().get();
}

std::size_t StateMachine::ReleaseHistory(std::uint32_t index) noexcept {
  ReportHistory& history = sessions_[index]->history;
  const std::size_t bytes = history.bytes();
  history.Release(history_budget_);
  return bytes;
}

void StateMachine::KeepNoHistory() noexcept {
  for (const std::unique_ptr<SessionState>& session : sessions_) {
    session->history.Release(history_budget_);
  }
  options_.report_history = 1;
}

absl::Status StateMachine::CheckLapse(const Record& record,
                                      const codec::Command& command,
                                      const SessionState* session) const {
  if (command.kind != codec::Kind::kGoodbye || command.sequence != 0 ||
      command.account_id.value() != 0 || command.client_order_id.value() != 0 ||
      (record.flags & kRecordUnauthorized) != 0) {
    return absl::DataLossError(absl::StrFormat(
        "journal record %d is flagged Lapse but is not a Goodbye of sequence "
        "0, account 0 and request 0 (docs/CONTROLS.md)",
        record.index));
  }
  if (session == nullptr) {
    return absl::DataLossError(absl::StrFormat(
        "journal record %d is a lapse of session %d, which no record before "
        "it holds",
        record.index, record.session_id));
  }
  return absl::OkStatus();
}

absl::Status StateMachine::Apply(const Record& record) {
  output_count_ = 0;
  feed_.Clear();
  if (last_index_ != 0 && record.index != last_index_ + 1) {
    return absl::DataLossError(absl::StrFormat(
        "journal record %d follows record %d: records must be applied in "
        "index order without a gap",
        record.index, last_index_));
  }
  if ((record.flags & ~kKnownRecordFlags) != 0) {
    return absl::DataLossError(absl::StrFormat(
        "journal record %d has flags 0x%x: bits 0x%x have no meaning in this "
        "version (docs/PROTOCOL.md, \"Journal record flags\")",
        record.index, record.flags, record.flags & ~kKnownRecordFlags));
  }
  codec::Command command;
  const codec::Result<std::size_t> decoded =
      codec::DecodeCommand(record.frame, command);
  if (!decoded.ok() || *decoded != record.frame.size()) {
    return absl::DataLossError(absl::StrFormat(
        "journal record %d is not a whole command frame", record.index));
  }
  // Everything is checked before anything changes: a refused record leaves
  // the state as it was (a new session is created only once its first
  // record is known to apply).
  // Consecutive records are mostly of one session (a datagram's run): the
  // last one saves the hash lookup.
  SessionState* submitter = last_session_;
  if (submitter == nullptr || submitter->id != record.session_id) {
    const auto found = by_id_.find(record.session_id);
    submitter =
        found == by_id_.end() ? nullptr : sessions_[found->second].get();
  }
  const bool lapse = (record.flags & kRecordLapse) != 0;
  if (lapse) [[unlikely]] {
    if (absl::Status s = CheckLapse(record, command, submitter); !s.ok()) {
      return s;
    }
  } else {
    const std::uint64_t expected =
        submitter == nullptr ? 1 : submitter->next_expected;
    if (command.sequence != expected) {
      return absl::DataLossError(absl::StrFormat(
          "journal record %d: session %d sequence %d, expected %d",
          record.index, record.session_id, command.sequence, expected));
    }
  }
  // A new session is never refused here: the service's SessionTable bounds
  // sessions when their first command arrives (max_sessions unlisted plus
  // every listed one), and what it journaled is applied as it was.
  if (submitter == nullptr) submitter = NewSession(record.session_id);

  // The record is applied from here on.
  last_session_ = submitter;
  last_index_ = record.index;
  ++stats_.records;
  if (!lapse) [[likely]] {
    ++submitter->next_expected;
    ++stats_.commands[static_cast<std::uint8_t>(command.kind)];
  }
  reports_.Clear();
  const engine::OwnerTag owner = submitter->index;
  if ((record.flags & kRecordNewFeedSession) != 0) [[unlikely]] {
    feed_.NewSession(record.index);
  }
  feed_.Begin(record.receive_ns, command, *engine_);
  if ((record.flags & kRecordUnauthorized) != 0) {
    ++stats_.unauthorized;
    submitter->closed = false;
    (void)engine_->RejectUnauthorized(command, owner, reports_);
  } else if (command.kind == codec::Kind::kGoodbye) [[unlikely]] {
    submitter->closed = true;
    engine_->CloseSession(command, owner,
                          lapse ? codec::SessionCloseReason::kLapsed
                                : codec::SessionCloseReason::kGoodbye,
                          (record.flags & kRecordCancelOnDisconnect) != 0,
                          reports_);
  } else {
    submitter->closed = false;
    (void)engine_->Execute(command, owner, reports_);
  }
  feed_.Finish(reports_);

  NumberReports();
  return absl::OkStatus();
}

void StateMachine::NumberReports() {
  const std::size_t count = reports_.size();
  if (count > outputs_.size()) [[unlikely]] {
    outputs_.resize(count);  // a sweep larger than any before
  }
  for (std::size_t i = 0; i < count; ++i) {
    const engine::Report& report = reports_[i];
    SessionState& target = *sessions_[report.owner];
    reports_.SetFrameSequence(i, target.next_report);
    const std::span<const std::byte> numbered = reports_.frame(i);
    // The report follows the last command its session has applied (for the
    // submitter, this one): ReportHistory finds a command's first report by
    // it.
    target.history.Add(target.next_report, target.next_expected - 1, numbered,
                       options_.report_history, history_budget_);
    outputs_[i] = Output{target.index, target.id, target.next_report,
                         report.kind, numbered};
    ++target.next_report;
    ++stats_.reports[static_cast<std::uint8_t>(report.kind)];
    if (report.kind == codec::Kind::kRejected) {
      const auto reason =
          static_cast<std::size_t>(reports_.View<codec::Rejected>(report)
                                       .Get<&codec::Rejected::reason>());
      if (reason < stats_.rejects.size()) ++stats_.rejects[reason];
    }
  }
  output_count_ = count;
}

}  // namespace orderwire::state
