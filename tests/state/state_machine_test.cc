// StateMachine: the one function from a journal record to its effects
// (state/state_machine.h). Each test fails when the rule it names breaks.
#include "state/state_machine.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "codec/command.h"
#include "codec/frame.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "engine/workload.h"
#include "gtest/gtest.h"
#include "state/record_flags.h"
#include "tests/support/bytes.h"
#include "tests/support/orders.h"

namespace orderwire::state {
namespace {

using test_support::Bytes;
using test_support::Frame;
using test_support::Limit;

// The model of a frame of kind `Model` (the test fails if it is another).
template <typename Model>
Model As(codec::FrameView frame) {
  const auto view = codec::View<Model>::FromFrame(frame);
  EXPECT_TRUE(view.ok()) << "not a " << codec::Info(frame.kind()).name;
  return view.ok() ? view->ToModel() : Model{};
}

// Fails unless `report` is the answer to `command` (docs/PROTOCOL.md: the
// first report of every command, on its own session).
void ExpectAnswers(const codec::Command& command, codec::FrameView report) {
  using codec::Kind;
  switch (report.kind()) {
    case Kind::kRejected:
      EXPECT_EQ(As<codec::Rejected>(report).command_kind, command.kind);
      break;
    case Kind::kAccepted:
      EXPECT_TRUE(command.kind == Kind::kNewLimit ||
                  command.kind == Kind::kNewMarket);
      EXPECT_EQ(As<codec::Accepted>(report).client_order_id,
                command.client_order_id.value());
      break;
    case Kind::kReplaced:
      EXPECT_EQ(command.kind, Kind::kReplace);
      EXPECT_EQ(As<codec::Replaced>(report).order_id, command.order_id.value());
      break;
    case Kind::kCancelled:
      EXPECT_TRUE(command.kind == Kind::kCancelByOrder ||
                  command.kind == Kind::kCancelByClient);
      EXPECT_EQ(As<codec::Cancelled>(report).reason,
                codec::CancelReason::kRequested);
      break;
    default:
      ADD_FAILURE() << codec::Info(report.kind()).name << " answers nothing";
  }
}

// Applies records with consecutive indices, one session sequence each.
class Machine {
 public:
  explicit Machine(StateMachineOptions options = {}) : machine_(options) {}

  absl::Status Apply(std::uint32_t session, const Bytes& frame,
                     std::uint32_t flags = 0) {
    return machine_.Apply(Record{next_index_++, 1000, session, flags, frame});
  }
  // The outputs of the last Apply as (session id, kind, sequence).
  struct Out {
    std::uint32_t session_id;
    codec::Kind kind;
    std::uint64_t sequence;
    codec::FrameView frame;
  };
  std::vector<Out> outputs() const {
    std::vector<Out> out;
    for (const Output& o : machine_.outputs()) {
      auto view = codec::FrameView::Parse(o.frame);
      EXPECT_TRUE(view.ok());
      EXPECT_EQ(view->sequence(), o.sequence);
      EXPECT_EQ(view->kind(), o.kind);
      out.push_back({o.session_id, o.kind, o.sequence, *view});
    }
    return out;
  }
  StateMachine& machine() { return machine_; }
  void set_next_index(std::uint64_t index) { next_index_ = index; }

 private:
  StateMachine machine_;
  std::uint64_t next_index_ = 1;
};

TEST(StateMachine, ReportsGoToTheSessionOfTheOrderTheyConcern) {
  Machine m;
  // Session 10 rests a sell; session 20 buys into it (another account).
  ASSERT_TRUE(m.Apply(10, Frame(1, Limit({.client_order_id = 100,
                                          .instrument_id = 42,
                                          .side = codec::Side::kSell,
                                          .price = 50,
                                          .quantity = 5})))
                  .ok());
  ASSERT_EQ(m.outputs().size(), 1u);
  EXPECT_EQ(m.outputs()[0].session_id, 10u);
  EXPECT_EQ(m.outputs()[0].kind, codec::Kind::kAccepted);
  EXPECT_EQ(m.outputs()[0].sequence, 1u);

  ASSERT_TRUE(m.Apply(20, Frame(1, Limit({.account_id = 2,
                                          .client_order_id = 100,
                                          .instrument_id = 42,
                                          .price = 50,
                                          .quantity = 3})))
                  .ok());
  const auto out = m.outputs();
  ASSERT_EQ(out.size(), 3u);
  // Accepted to the taker's session; the maker's Filled to the maker's
  // session (its 2nd report); the taker's Filled to the taker's (its 2nd).
  EXPECT_EQ(out[0].session_id, 20u);
  EXPECT_EQ(out[0].kind, codec::Kind::kAccepted);
  EXPECT_EQ(out[0].sequence, 1u);
  EXPECT_EQ(out[1].session_id, 10u);
  EXPECT_EQ(out[1].kind, codec::Kind::kFilled);
  EXPECT_EQ(out[1].sequence, 2u);
  EXPECT_EQ(out[2].session_id, 20u);
  EXPECT_EQ(out[2].kind, codec::Kind::kFilled);
  EXPECT_EQ(out[2].sequence, 2u);
  EXPECT_EQ(m.machine().Find(10)->next_report, 3u);
  EXPECT_EQ(m.machine().Find(20)->next_report, 3u);
  EXPECT_EQ(m.machine().Find(10)->next_expected, 2u);
}

TEST(StateMachine, AnotherSessionCannotCancelOrReplaceAnOrderOfTheSameAccount) {
  Machine m;
  ASSERT_TRUE(m.Apply(1, Frame(1, Limit({.account_id = 7,
                                         .client_order_id = 5,
                                         .instrument_id = 42,
                                         .price = 10})))
                  .ok());
  const std::uint64_t order_id =
      As<codec::Accepted>(m.outputs()[0].frame).order_id;
  // Session 2 trades for account 7 too, but did not enter the order.
  ASSERT_TRUE(m.Apply(2, Frame(1, codec::CancelByOrder{7, order_id})).ok());
  auto out = m.outputs();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].session_id, 2u);
  ASSERT_EQ(out[0].kind, codec::Kind::kRejected);
  EXPECT_EQ(As<codec::Rejected>(out[0].frame).reason,
            codec::RejectReason::kNotOwner);
  ASSERT_TRUE(m.Apply(2, Frame(2, codec::Replace{7, order_id, 6, 11, 1})).ok());
  out = m.outputs();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].session_id, 2u);
  EXPECT_EQ(As<codec::Rejected>(out[0].frame).reason,
            codec::RejectReason::kNotOwner);
  // By client order id, session 2 does not find session 1's order.
  ASSERT_TRUE(m.Apply(2, Frame(3, codec::CancelByClient{7, 5})).ok());
  EXPECT_EQ(As<codec::Rejected>(m.outputs()[0].frame).reason,
            codec::RejectReason::kUnknownOrder);
  EXPECT_EQ(m.machine().engine().live_orders(), 1u);
  // Its own session cancels it.
  ASSERT_TRUE(m.Apply(1, Frame(2, codec::CancelByClient{7, 5})).ok());
  out = m.outputs();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].session_id, 1u);
  EXPECT_EQ(out[0].kind, codec::Kind::kCancelled);
  EXPECT_EQ(m.machine().engine().live_orders(), 0u);
}

TEST(StateMachine, UnauthorizedFlagRejectsWithoutEffect) {
  Machine m;
  ASSERT_TRUE(m.Apply(3,
                      Frame(1, Limit({.account_id = 9,
                                      .client_order_id = 1,
                                      .instrument_id = 42,
                                      .price = 10})),
                      kRecordUnauthorized)
                  .ok());
  const auto out = m.outputs();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].kind, codec::Kind::kRejected);
  EXPECT_EQ(As<codec::Rejected>(out[0].frame).reason,
            codec::RejectReason::kUnauthorized);
  EXPECT_EQ(m.machine().engine().live_orders(), 0u);
  EXPECT_EQ(m.machine().stats().unauthorized, 1u);
  // Without the flag the same command rests.
  ASSERT_TRUE(m.Apply(3, Frame(2, Limit({.account_id = 9,
                                         .client_order_id = 1,
                                         .instrument_id = 42,
                                         .price = 10})))
                  .ok());
  EXPECT_EQ(m.outputs()[0].kind, codec::Kind::kAccepted);
}

TEST(StateMachine, RefusesRecordsItCannotApplyAndStaysUnchanged) {
  Machine m;
  ASSERT_TRUE(m.Apply(1, Frame(1, Limit({.client_order_id = 1,
                                         .instrument_id = 42,
                                         .price = 10})))
                  .ok());
  const codec::OrderId orders = m.machine().engine().next_order_id();

  // An unknown flag bit.
  absl::Status s = m.Apply(
      1,
      Frame(2, Limit({.client_order_id = 2, .instrument_id = 42, .price = 10})),
      1u << 7);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("flags"), std::string::npos) << s;
  // A sequence that does not continue the session.
  m.set_next_index(2);
  s = m.Apply(
      1,
      Frame(3,
            Limit({.client_order_id = 2, .instrument_id = 42, .price = 10})));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("expected 2"), std::string::npos) << s;
  // A gap in the record indices.
  m.set_next_index(5);
  s = m.Apply(
      1,
      Frame(2,
            Limit({.client_order_id = 2, .instrument_id = 42, .price = 10})));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  // Not a command frame: a report, and a command with a byte too many.
  m.set_next_index(2);
  s = m.Apply(1, Frame(2, codec::SequenceGap{1}));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  Bytes longer =
      Frame(2, Limit({.client_order_id = 2, .instrument_id = 42, .price = 10}));
  longer.push_back(std::byte{0});
  s = m.Apply(1, longer);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;

  EXPECT_EQ(m.machine().last_index(), 1u);
  EXPECT_EQ(m.machine().Find(1)->next_expected, 2u);
  EXPECT_EQ(m.machine().engine().next_order_id(), orders);
  EXPECT_EQ(m.machine().stats().records, 1u);
  // And the right record is still applied after all that.
  m.set_next_index(2);
  EXPECT_TRUE(m.Apply(1, Frame(2, Limit({.client_order_id = 2,
                                         .instrument_id = 42,
                                         .price = 10})))
                  .ok());
}

// docs/CONTROLS.md "Goodbye, liveness and cancel-on-disconnect": a lapse is
// a Goodbye of sequence 0, account 0, request 0 of a session the journal
// holds; it closes the session without moving its sequence, and cancels
// only when flagged CancelOnDisconnect; anything else flagged Lapse is
// refused, the state unchanged; the session's next command reopens it.
TEST(StateMachine, ALapseClosesWithoutMovingTheSequenceAndOnlyAsItIsFlagged) {
  Machine m;
  ASSERT_TRUE(m.Apply(1, Frame(1, Limit({.client_order_id = 1,
                                         .instrument_id = 42,
                                         .price = 10})))
                  .ok());
  const Bytes lapse = test_support::LapseFrame();
  const auto goodbye = [](std::uint64_t sequence, std::uint64_t account,
                          std::uint64_t request) {
    return Frame(sequence,
                 codec::Goodbye{.account_id = account, .request_id = request});
  };
  // Refused: not a Goodbye, a sequence, an account, a request, together
  // with Unauthorized, a session the journal does not hold.
  const std::vector<std::pair<std::uint32_t, Bytes>> bad = {
      {1,
       Frame(0,
             Limit({.client_order_id = 2, .instrument_id = 42, .price = 10}))},
      {1, goodbye(2, 0, 0)},
      {1, goodbye(0, 7, 0)},
      {1, goodbye(0, 0, 9)},
      {2, lapse}};
  for (const auto& [session, frame] : bad) {
    m.set_next_index(2);
    const absl::Status s = m.Apply(session, frame, kRecordLapse);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  }
  m.set_next_index(2);
  EXPECT_EQ(m.Apply(1, lapse, kRecordLapse | kRecordUnauthorized).code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(m.machine().last_index(), 1u);
  EXPECT_EQ(m.machine().session_count(), 1u);
  EXPECT_FALSE(m.machine().Find(1)->closed);

  // Without CancelOnDisconnect: closed, the order stays, sequence 2 next.
  m.set_next_index(2);
  ASSERT_TRUE(m.Apply(1, lapse, kRecordLapse).ok());
  ASSERT_EQ(m.outputs().size(), 1u);
  EXPECT_EQ(As<codec::SessionClosed>(m.outputs()[0].frame).reason,
            codec::SessionCloseReason::kLapsed);
  EXPECT_TRUE(m.machine().Find(1)->closed);
  EXPECT_EQ(m.machine().Find(1)->next_expected, 2u);
  EXPECT_EQ(m.machine().engine().live_orders(), 1u);
  EXPECT_EQ(m.machine()
                .stats()
                .commands[static_cast<std::uint8_t>(codec::Kind::kGoodbye)],
            0u)
      << "a lapse is not a command";
  // Its next command reopens it; a lapse flagged CancelOnDisconnect then
  // cancels.
  ASSERT_TRUE(m.Apply(1, Frame(2, Limit({.client_order_id = 2,
                                         .instrument_id = 42,
                                         .price = 11})))
                  .ok());
  EXPECT_FALSE(m.machine().Find(1)->closed);
  ASSERT_TRUE(m.Apply(1, lapse, kRecordLapse | kRecordCancelOnDisconnect).ok());
  ASSERT_EQ(m.outputs().size(), 3u);
  EXPECT_EQ(As<codec::Cancelled>(m.outputs()[0].frame).reason,
            codec::CancelReason::kCancelOnDisconnect);
  EXPECT_EQ(As<codec::SessionClosed>(m.outputs()[2].frame).cancelled_orders,
            2u);
  EXPECT_EQ(m.machine().engine().live_orders(), 0u);
  // A Goodbye command flagged CancelOnDisconnect closes as the Goodbye.
  ASSERT_TRUE(m.Apply(1, Frame(3, Limit({.client_order_id = 3,
                                         .instrument_id = 42,
                                         .price = 12})))
                  .ok());
  ASSERT_TRUE(m.Apply(1, goodbye(4, 7, 5), kRecordCancelOnDisconnect).ok());
  ASSERT_EQ(m.outputs().size(), 2u);
  const auto closed = As<codec::SessionClosed>(m.outputs()[1].frame);
  EXPECT_EQ(closed.reason, codec::SessionCloseReason::kGoodbye);
  EXPECT_EQ(closed.request_id, 5u);
  EXPECT_EQ(m.machine().Find(1)->next_expected, 5u);
}

TEST(StateMachine, ARefusedFirstRecordOfASessionCreatesNothing) {
  Machine m;
  // Session 9's first record must carry sequence 1.
  const absl::Status s = m.Apply(
      9,
      Frame(2,
            Limit({.client_order_id = 1, .instrument_id = 42, .price = 10})));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_EQ(m.machine().session_count(), 0u);
  EXPECT_EQ(m.machine().Find(9), nullptr);
  EXPECT_EQ(m.machine().last_index(), 0u);
  // The session that does apply first gets dense index (owner tag) 0.
  m.set_next_index(1);
  ASSERT_TRUE(m.Apply(5, Frame(1, Limit({.client_order_id = 1,
                                         .instrument_id = 42,
                                         .price = 10})))
                  .ok());
  ASSERT_NE(m.machine().Find(5), nullptr);
  EXPECT_EQ(m.machine().Find(5)->index, 0u);
}

// The cap is the SessionTable's (unlisted sessions; listed ones are never
// refused): a journal holding more sessions than max_sessions, as it does
// once listed sessions join, applies in full.
TEST(StateMachine, SessionsBeyondTheUnlistedCapApply) {
  StateMachineOptions options;
  options.max_sessions = 2;
  Machine m(options);
  ASSERT_TRUE(m.Apply(1, Frame(1, codec::CancelByOrder{1, 1})).ok());
  ASSERT_TRUE(m.Apply(2, Frame(1, codec::CancelByOrder{1, 1})).ok());
  const absl::Status s = m.Apply(3, Frame(1, codec::CancelByOrder{1, 1}));
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(m.machine().session_count(), 3u);
  ASSERT_NE(m.machine().Find(3), nullptr);
  EXPECT_EQ(m.machine().Find(3)->index, 2u);
}

TEST(StateMachine, KeepsEachSessionsReportHistory) {
  Machine m;
  ASSERT_TRUE(m.Apply(4, Frame(1, Limit({.client_order_id = 1,
                                         .instrument_id = 42,
                                         .side = codec::Side::kSell,
                                         .price = 10,
                                         .quantity = 2})))
                  .ok());
  ASSERT_TRUE(m.Apply(5, Frame(1, Limit({.account_id = 2,
                                         .client_order_id = 1,
                                         .instrument_id = 42,
                                         .price = 10,
                                         .quantity = 2})))
                  .ok());
  const SessionState* maker = m.machine().Find(4);
  ASSERT_NE(maker, nullptr);
  // Command 1 of session 4 began at its report 1; report 2 is its Filled.
  EXPECT_EQ(maker->history.FirstReportOf(1), 1u);
  const auto filled = codec::FrameView::Parse(maker->history.Get(2));
  ASSERT_TRUE(filled.ok());
  EXPECT_EQ(filled->kind(), codec::Kind::kFilled);
  EXPECT_EQ(filled->sequence(), 2u);
}

// Several sessions trading the same accounts (the generator's 64), their
// commands interleaved: every command is answered first on its own session
// (docs/PROTOCOL.md "Sessions and sequence numbers"), each session's report
// sequences run 1, 2, 3, ... with no gap, and two machines given the same
// records produce the same bytes.
TEST(StateMachine, InterleavedSessionsAreAnsweredOnTheirOwnSessionsInOrder) {
  constexpr std::uint32_t kSessions = 3;
  constexpr std::size_t kPerSession = 20'000;
  std::vector<std::vector<Bytes>> streams(kSessions);
  for (std::uint32_t s = 0; s < kSessions; ++s) {
    const auto commands =
        workload::Generate(workload::Workload::kMixed, kPerSession, 11 + s);
    for (const codec::Command& c : commands) {
      Bytes frame(codec::kMaxFrameSize);
      const auto size = codec::EncodeCommand(c, frame);
      ASSERT_TRUE(size.ok());
      frame.resize(*size);
      streams[s].push_back(std::move(frame));
    }
  }
  Machine a;
  Machine b;
  std::vector<std::size_t> next(kSessions, 0);
  std::map<std::uint32_t, std::uint64_t> last_report;
  std::uint64_t rng = 7;
  std::size_t not_owner = 0;
  for (std::size_t applied = 0; applied < kSessions * kPerSession;) {
    rng = rng * 6364136223846793005u + 1442695040888963407u;
    const auto s = static_cast<std::uint32_t>((rng >> 33) % kSessions);
    if (next[s] == kPerSession) continue;
    const Bytes& frame = streams[s][next[s]++];
    ++applied;
    const std::uint32_t session_id = 100 + s;
    ASSERT_TRUE(a.Apply(session_id, frame).ok());
    ASSERT_TRUE(b.Apply(session_id, frame).ok());
    const auto out_a = a.outputs();
    const auto out_b = b.outputs();
    ASSERT_EQ(out_a.size(), out_b.size());
    ASSERT_FALSE(out_a.empty());
    // The first report answers the command, on the command's session.
    ASSERT_EQ(out_a[0].session_id, session_id) << "record " << applied;
    const codec::Kind first = out_a[0].kind;
    ASSERT_TRUE(
        first == codec::Kind::kAccepted || first == codec::Kind::kRejected ||
        first == codec::Kind::kReplaced || first == codec::Kind::kCancelled);
    if (first == codec::Kind::kRejected &&
        As<codec::Rejected>(out_a[0].frame).reason ==
            codec::RejectReason::kNotOwner) {
      ++not_owner;
    }
    codec::Command command;
    ASSERT_TRUE(codec::DecodeCommand(frame, command).ok());
    ExpectAnswers(command, out_a[0].frame);
    for (std::size_t i = 1; i < out_a.size(); ++i) {
      // Every later report is one that answers no command: a Filled, or a
      // Cancelled that was not requested (IOC/FOK/market remainder on the
      // submitter's session, self-trade on the resting order's).
      const bool unrequested = out_a[i].kind == codec::Kind::kFilled ||
                               (out_a[i].kind == codec::Kind::kCancelled &&
                                As<codec::Cancelled>(out_a[i].frame).reason !=
                                    codec::CancelReason::kRequested);
      ASSERT_TRUE(unrequested)
          << "record " << applied << " report " << i << " is a "
          << codec::Info(out_a[i].kind).name << " after the answer";
      if (out_a[i].session_id != session_id) {
        // Another session's report: a maker's Filled or its resting
        // order's self-trade cancel.
        ASSERT_TRUE(out_a[i].kind == codec::Kind::kFilled
                        ? As<codec::Filled>(out_a[i].frame).liquidity ==
                              codec::Liquidity::kMaker
                        : As<codec::Cancelled>(out_a[i].frame).reason ==
                              codec::CancelReason::kSelfTrade);
      }
    }
    for (std::size_t i = 0; i < out_a.size(); ++i) {
      ASSERT_EQ(out_a[i].session_id, out_b[i].session_id);
      ASSERT_TRUE(std::equal(
          out_a[i].frame.bytes().begin(), out_a[i].frame.bytes().end(),
          out_b[i].frame.bytes().begin(), out_b[i].frame.bytes().end()));
      std::uint64_t& last = last_report[out_a[i].session_id];
      ASSERT_EQ(out_a[i].sequence, last + 1);
      last = out_a[i].sequence;
    }
  }
  // The streams share accounts, so sessions do try each other's orders.
  EXPECT_GT(not_owner, 0u);
  for (std::uint32_t s = 0; s < kSessions; ++s) {
    EXPECT_EQ(a.machine().Find(100 + s)->next_expected, kPerSession + 1);
    EXPECT_EQ(a.machine().Find(100 + s)->next_report, last_report[100 + s] + 1);
  }
}

}  // namespace
}  // namespace orderwire::state
