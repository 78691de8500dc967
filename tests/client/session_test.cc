// client::Session against a real in-process service over loopback (the
// service harness of tests/support): reports delivered in order, the
// window, a lost command datagram (through the SocketCalls seam) and lost
// report datagrams (through a proxy on the test's thread), Poll never
// waiting, the silence of a wrong key explained, and two sessions in one
// process. Everything runs on the test's thread but the service.
#include "client/session.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "auth/mac.h"
#include "base/clock.h"
#include "codec/datagram.h"
#include "codec/frame.h"
#include "codec/messages.h"
#include "config/service_config.h"
#include "gtest/gtest.h"
#include "net/udp.h"
#include "tests/support/bytes.h"
#include "tests/support/files.h"
#include "tests/support/orders.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::client {
namespace {

using codec::Kind;
using codec::Side;
using test_support::Bytes;
using test_support::Limit;
using test_support::RunningService;
using test_support::ScratchDir;
using test_support::TestOptions;

// What a session's callback received: each report frame's sequence, kind
// and, for Accepted, the client_order_id.
struct Delivered {
  std::vector<std::uint64_t> sequences;
  std::vector<Kind> kinds;
  std::vector<std::uint64_t> accepted_ids;
};

SessionOptions OptionsFor(const net::Endpoint& target, std::uint32_t session,
                          Delivered& delivered) {
  SessionOptions options;
  options.target = target;
  options.session_id = session;
  // Long enough that a slow start (under AddressSanitizer) retransmits
  // nothing; the tests of loss set their own.
  options.retransmit_timeout_ms = 2000;
  options.on_report = [&delivered](const codec::FrameView& report) {
    delivered.sequences.push_back(report.sequence());
    delivered.kinds.push_back(report.kind());
    if (report.kind() == Kind::kAccepted) {
      delivered.accepted_ids.push_back(
          codec::View<codec::Accepted>::FromFrame(report)
              ->Get<&codec::Accepted::client_order_id>());
    }
  };
  return options;
}

// Polls `sessions` (waiting on their sockets 1 ms at a time, and calling
// `between` each round) until `done` holds; false after `timeout_ms`.
bool PollUntil(const std::vector<Session*>& sessions,
               const std::function<bool()>& done, int timeout_ms = 5000,
               const std::function<void()>& between = nullptr) {
  const std::int64_t deadline =
      base::MonotonicNs() + std::int64_t{timeout_ms} * 1'000'000;
  while (!done()) {
    const std::int64_t now = base::MonotonicNs();
    if (now > deadline) return false;
    std::vector<pollfd> fds;
    for (Session* session : sessions) {
      const absl::StatusOr<PollResult> round = session->Poll(now);
      EXPECT_TRUE(round.ok()) << round.status();
      if (!round.ok()) return false;
      fds.push_back({.fd = session->fd(), .events = POLLIN, .revents = 0});
    }
    if (between) between();
    (void)::poll(fds.data(), fds.size(), 1);
  }
  return true;
}

// Report sequences 1, 2, ..., n.
std::vector<std::uint64_t> OneTo(std::uint64_t n) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t i = 1; i <= n; ++i) out.push_back(i);
  return out;
}

std::unique_ptr<RunningService> StartService(
    const ScratchDir& dir,
    config::ServiceConfig config = config::ServiceConfig{}) {
  return RunningService::Start(TestOptions(
      dir.Sub("journal"), journal::Durability::kNone, std::move(config)));
}

TEST(ClientSession, DeliversAcceptedAndFilledReportsInOrder) {
  ScratchDir dir;
  auto service = StartService(dir);
  ASSERT_NE(service, nullptr);
  Delivered delivered;
  auto session = Session::Open(OptionsFor(service->endpoint(), 1, delivered));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  // A resting buy, a sell that fills it, a buy that rests below.
  EXPECT_EQ(*s.Submit(Limit({.client_order_id = 11, .quantity = 5})), 1u);
  EXPECT_EQ(*s.Submit(Limit({.account_id = 2,
                             .client_order_id = 12,
                             .side = Side::kSell,
                             .quantity = 5})),
            2u);
  EXPECT_EQ(
      *s.Submit(Limit({.client_order_id = 13, .price = 90, .quantity = 5})),
      3u);
  ASSERT_TRUE(PollUntil({&s}, [&] {
    return s.answered() == 3 && delivered.sequences.size() >= 5;
  }));
  // Accepted 11, Accepted 12, the two Filled (maker and taker), Accepted 13.
  EXPECT_EQ(delivered.sequences, OneTo(5));
  EXPECT_EQ(delivered.kinds,
            (std::vector<Kind>{Kind::kAccepted, Kind::kAccepted, Kind::kFilled,
                               Kind::kFilled, Kind::kAccepted}));
  EXPECT_EQ(delivered.accepted_ids, (std::vector<std::uint64_t>{11, 12, 13}));
  const SessionCounters& c = s.counters();
  EXPECT_EQ(c.submitted, 3u);
  EXPECT_EQ(c.acknowledged, 3u);
  EXPECT_EQ(c.accepted, 3u);
  EXPECT_EQ(c.fills, 2u);
  EXPECT_EQ(c.reports, 5u);
  EXPECT_EQ(c.retransmitted, 0u);
  EXPECT_EQ(s.latency_ns().count(), 3u);
  EXPECT_EQ(s.next_sequence(), 4u);
}

// A MassCancel's answer is its Cancelled reports, then its MassCancelDone,
// which acknowledges it (docs/CONTROLS.md): the session takes the
// Cancelled reports as part of the answer and goes on.
TEST(ClientSession, AMassCancelIsAcknowledgedByItsMassCancelDone) {
  ScratchDir dir;
  auto service = StartService(dir);
  ASSERT_NE(service, nullptr);
  Delivered delivered;
  auto session = Session::Open(OptionsFor(service->endpoint(), 1, delivered));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  ASSERT_TRUE(s.Submit(Limit({.client_order_id = 11, .quantity = 5})).ok());
  ASSERT_TRUE(s.Submit(Limit({.client_order_id = 12, .price = 90})).ok());
  EXPECT_EQ(
      *s.Submit(codec::MassCancel{.account_id = 1,
                                  .request_id = 3,
                                  .instrument_id = 0,
                                  .side = codec::MassCancelSide::kBoth,
                                  .scope = codec::MassCancelScope::kAccount}),
      3u);
  ASSERT_TRUE(s.Submit(Limit({.client_order_id = 11, .quantity = 1})).ok());
  ASSERT_TRUE(PollUntil({&s}, [&] {
    return s.answered() == 4 && delivered.sequences.size() >= 6;
  }));
  EXPECT_EQ(delivered.sequences, OneTo(6));
  EXPECT_EQ(delivered.kinds,
            (std::vector<Kind>{Kind::kAccepted, Kind::kAccepted,
                               Kind::kCancelled, Kind::kCancelled,
                               Kind::kMassCancelDone, Kind::kAccepted}));
  const SessionCounters& c = s.counters();
  EXPECT_EQ(c.acknowledged, 4u);
  EXPECT_EQ(c.cancelled, 2u);
  EXPECT_EQ(c.accepted, 3u);
  EXPECT_EQ(s.latency_ns().count(), 4u);
}

// docs/CONTROLS.md: an OrderStatusRequest is acknowledged by its
// OrderStatus (by order id or client order id, live or not); a Goodbye by
// its SessionClosed, after the Cancelled reports it causes (none here: the
// service's default is no cancel-on-disconnect).
TEST(ClientSession, StatusRequestsAndAGoodbyeAreAcknowledgedByTheirAnswers) {
  ScratchDir dir;
  auto service = StartService(dir);
  ASSERT_NE(service, nullptr);
  Delivered delivered;
  auto session = Session::Open(OptionsFor(service->endpoint(), 1, delivered));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  ASSERT_TRUE(s.Submit(Limit({.client_order_id = 11, .quantity = 5})).ok());
  ASSERT_TRUE(
      s.Submit(codec::OrderStatusRequest{
                   .account_id = 1, .order_id = 1, .client_order_id = 0})
          .ok());
  ASSERT_TRUE(
      s.Submit(codec::OrderStatusRequest{
                   .account_id = 1, .order_id = 0, .client_order_id = 11})
          .ok());
  ASSERT_TRUE(
      s.Submit(codec::OrderStatusRequest{
                   .account_id = 1, .order_id = 9, .client_order_id = 0})
          .ok());
  ASSERT_TRUE(s.Submit(codec::Goodbye{.account_id = 1, .request_id = 5}).ok());
  ASSERT_TRUE(PollUntil({&s}, [&] { return s.answered() == 5; }));
  EXPECT_EQ(delivered.sequences, OneTo(5));
  EXPECT_EQ(delivered.kinds,
            (std::vector<Kind>{Kind::kAccepted, Kind::kOrderStatus,
                               Kind::kOrderStatus, Kind::kOrderStatus,
                               Kind::kSessionClosed}));
  const SessionCounters& c = s.counters();
  EXPECT_EQ(c.acknowledged, 5u);
  EXPECT_EQ(c.sessions_closed, 1u);
}

TEST(ClientSession, SubmitPastTheWindowIsRefusedUntilPollAcknowledges) {
  ScratchDir dir;
  auto service = StartService(dir);
  ASSERT_NE(service, nullptr);
  Delivered delivered;
  SessionOptions options = OptionsFor(service->endpoint(), 1, delivered);
  options.window = 2;
  auto session = Session::Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  ASSERT_TRUE(s.Submit(Limit({.client_order_id = 1})).ok());
  ASSERT_TRUE(s.Submit(Limit({.client_order_id = 2, .price = 101})).ok());
  EXPECT_TRUE(s.window_full());
  const absl::StatusOr<std::uint64_t> refused =
      s.Submit(Limit({.client_order_id = 3, .price = 102}));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("window"), std::string::npos);
  EXPECT_EQ(s.counters().submitted, 2u);
  EXPECT_EQ(s.next_sequence(), 3u);  // nothing was queued
  ASSERT_TRUE(PollUntil({&s}, [&] { return !s.window_full(); }));
  const absl::StatusOr<std::uint64_t> taken =
      s.Submit(Limit({.client_order_id = 3, .price = 102}));
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_EQ(*taken, 3u);
  ASSERT_TRUE(PollUntil({&s}, [&] { return s.answered() == 3; }));
  EXPECT_EQ(delivered.accepted_ids, (std::vector<std::uint64_t>{1, 2, 3}));
}

// The callback may Submit (here: a second order when the first is
// accepted), and may not Poll (FailedPrecondition, the session goes on).
TEST(ClientSession, TheCallbackMaySubmitButNotPoll) {
  ScratchDir dir;
  auto service = StartService(dir);
  ASSERT_NE(service, nullptr);
  Delivered delivered;
  SessionOptions options = OptionsFor(service->endpoint(), 1, delivered);
  Session* self = nullptr;
  absl::StatusOr<std::uint64_t> inner_submit = absl::UnknownError("not run");
  absl::StatusOr<PollResult> inner_poll = absl::UnknownError("not run");
  options.on_report = [&](const codec::FrameView& report) {
    delivered.sequences.push_back(report.sequence());
    if (report.sequence() == 1) {
      inner_poll = self->Poll(base::MonotonicNs());
      inner_submit = self->Submit(Limit({.client_order_id = 2, .price = 99}));
    }
  };
  auto session = Session::Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  self = &s;
  ASSERT_TRUE(s.Submit(Limit({.client_order_id = 1})).ok());
  ASSERT_TRUE(PollUntil({&s}, [&] { return s.answered() == 2; }));
  EXPECT_EQ(inner_poll.status().code(), absl::StatusCode::kFailedPrecondition)
      << inner_poll.status();
  ASSERT_TRUE(inner_submit.ok()) << inner_submit.status();
  EXPECT_EQ(*inner_submit, 2u);
  EXPECT_EQ(delivered.sequences, OneTo(2));
  EXPECT_EQ(s.counters().acknowledged, 2u);
}

TEST(ClientSession, RejectsACommandOfAReportKind) {
  ScratchDir dir;
  auto service = StartService(dir);
  ASSERT_NE(service, nullptr);
  Delivered delivered;
  auto session = Session::Open(OptionsFor(service->endpoint(), 1, delivered));
  ASSERT_TRUE(session.ok()) << session.status();
  codec::Command command =
      codec::Command::From(0, Limit({.client_order_id = 1, .price = 1}));
  command.kind = Kind::kAccepted;
  const absl::StatusOr<std::uint64_t> bad = (*session)->Submit(command);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  const Bytes accepted = test_support::AcceptedFor(
      1, 1, Limit({.client_order_id = 1, .price = 1}));
  const absl::StatusOr<std::uint64_t> frame = (*session)->SubmitFrame(accepted);
  EXPECT_EQ(frame.status().code(), absl::StatusCode::kInvalidArgument)
      << frame.status();
  Bytes limit =
      test_support::Frame(9, Limit({.client_order_id = 1, .price = 1}));
  limit.push_back(std::byte{0});  // a frame and one byte more
  const absl::StatusOr<std::uint64_t> longer = (*session)->SubmitFrame(limit);
  EXPECT_EQ(longer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(longer.status().message().find("not one whole command frame"),
            std::string::npos)
      << longer.status();
  limit.resize(limit.size() - 2);  // one byte short
  EXPECT_EQ((*session)->SubmitFrame(limit).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*session)->counters().submitted, 0u);
  EXPECT_EQ((*session)->next_sequence(), 1u);
}

// The SocketCalls seam: the first datagram of the send call number
// g_drop_call (from 0) is lost (reported sent, never sent).
std::atomic<int> g_send_calls{0};
std::atomic<int> g_drop_call{-1};
std::atomic<int> g_dropped{0};
int LosingSendmmsg(int fd, mmsghdr* messages, unsigned count, int flags) {
  if (g_send_calls.fetch_add(1) != g_drop_call.load() || count == 0) {
    return ::sendmmsg(fd, messages, count, flags);
  }
  ++g_dropped;
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < messages[0].msg_hdr.msg_iovlen; ++i) {
    bytes += messages[0].msg_hdr.msg_iov[i].iov_len;
  }
  messages[0].msg_len = static_cast<unsigned>(bytes);
  if (count == 1) return 1;
  const int rest = ::sendmmsg(fd, messages + 1, count - 1, flags);
  return rest < 0 ? 1 : rest + 1;
}

TEST(ClientSession, ALostCommandDatagramIsRetransmittedAndReportsComeOnce) {
  ScratchDir dir;
  auto service = StartService(dir);
  ASSERT_NE(service, nullptr);
  static const net::SocketCalls kLosing{.sendmmsg = &LosingSendmmsg};
  g_send_calls = 0;
  g_drop_call = 1;  // the second round's datagram: commands 4-6
  g_dropped = 0;
  Delivered delivered;
  SessionOptions options = OptionsFor(service->endpoint(), 1, delivered);
  options.send = net::SendPath::kSendmmsg;
  options.socket_calls_for_testing = &kLosing;
  // No timeout within the test: the SequenceGap the service answers to
  // commands 7-9 must bring the session back to 4.
  options.retransmit_timeout_ms = 60'000;
  auto session = Session::Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  std::uint64_t id = 0;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 3; ++i) {
      ++id;
      ASSERT_TRUE(
          s.Submit(Limit({.client_order_id = id,
                          .price = static_cast<std::int64_t>(100 + id)}))
              .ok());
    }
    const absl::StatusOr<PollResult> sent = s.Poll(base::MonotonicNs());
    ASSERT_TRUE(sent.ok()) << sent.status();
    EXPECT_EQ(sent->datagrams_sent, 1u);
  }
  ASSERT_TRUE(PollUntil({&s}, [&] { return s.answered() == 9; }));
  EXPECT_EQ(g_dropped.load(), 1);
  // Every command answered once, in order, and nothing delivered twice.
  EXPECT_EQ(delivered.sequences, OneTo(9));
  EXPECT_EQ(delivered.accepted_ids,
            (std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_GE(s.counters().retransmitted, 3u);
  EXPECT_GE(s.counters().sequence_gaps, 1u);
  EXPECT_EQ(s.refusals().last_gap_expected, 4u);
  EXPECT_EQ(s.counters().acknowledged, 9u);
}

// The SocketCalls seam: the first g_full_calls send calls find the socket
// buffer full (EAGAIN).
std::atomic<int> g_full_calls{0};
std::atomic<int> g_full_seen{0};
int FullSendmmsg(int fd, mmsghdr* messages, unsigned count, int flags) {
  if (g_full_seen.fetch_add(1) < g_full_calls.load()) {
    errno = EAGAIN;
    return -1;
  }
  return ::sendmmsg(fd, messages, count, flags);
}

TEST(ClientSession, AFullSocketBufferLeavesPollAndSendsOnTheNextRound) {
  auto peer = net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(peer.ok());
  static const net::SocketCalls kFull{.sendmmsg = &FullSendmmsg};
  g_full_calls = 2;
  g_full_seen = 0;
  Delivered delivered;
  SessionOptions options = OptionsFor(*peer->LocalEndpoint(), 1, delivered);
  options.send = net::SendPath::kSendmmsg;
  options.socket_calls_for_testing = &kFull;
  auto session = Session::Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  for (std::uint64_t id = 1; id <= 3; ++id) {
    ASSERT_TRUE(s.Submit(Limit({.client_order_id = id})).ok());
  }
  // Two rounds find the buffer full: each tries once and returns, with
  // more to send.
  for (int round = 1; round <= 2; ++round) {
    const absl::StatusOr<PollResult> full = s.Poll(base::MonotonicNs());
    ASSERT_TRUE(full.ok()) << full.status();
    EXPECT_EQ(g_full_seen.load(), round);
    EXPECT_EQ(full->datagrams_sent, 0u);
    EXPECT_TRUE(full->more_to_send);
  }
  const absl::StatusOr<PollResult> room = s.Poll(base::MonotonicNs());
  ASSERT_TRUE(room.ok()) << room.status();
  EXPECT_EQ(room->datagrams_sent, 1u);
  EXPECT_FALSE(room->more_to_send);
  // The datagram built in the first round went out once, whole.
  ASSERT_TRUE(peer->WaitReadable(1000));
  net::DatagramBatch rx(8);
  ASSERT_EQ(peer->Receive(rx, 8), 1);
  const auto datagram =
      codec::DatagramView::Parse(rx.datagram(0), codec::FrameFilter::kCommands);
  ASSERT_TRUE(datagram.ok());
  EXPECT_EQ(datagram->frame_count(), 3u);
  EXPECT_EQ(s.counters().sent, 3u);
  EXPECT_EQ(s.counters().retransmitted, 0u);
  EXPECT_EQ(s.counters().datagrams_sent, 1u);
}

// A UDP proxy pumped on the test's thread: client <-> proxy <-> service.
// Report datagrams for which `drop` says so are lost.
class LossyProxy {
 public:
  LossyProxy(const net::Endpoint& service,
             std::function<bool(const codec::DatagramView&)> drop)
      : service_(service),
        drop_(std::move(drop)),
        socket_(*net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"))),
        batch_(64) {}

  [[nodiscard]] net::Endpoint endpoint() const {
    return *socket_.LocalEndpoint();
  }
  [[nodiscard]] int dropped() const { return dropped_; }

  void Pump() {
    const int n = socket_.Receive(batch_, 64);
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      const bool from_service = batch_.peer(k) == service_;
      if (!from_service) client_ = batch_.peer(k);
      if (from_service) {
        const auto view = codec::DatagramView::Parse(
            batch_.datagram(k), codec::FrameFilter::kReports);
        if (view.ok() && drop_(*view)) {
          ++dropped_;
          continue;
        }
      }
      batch_.set_length(k, batch_.datagram(k).size());
      batch_.set_peer(k, from_service ? client_ : service_);
      ASSERT_EQ(socket_.SendRange(batch_, k, 1), 1);
    }
  }

 private:
  net::Endpoint service_;
  net::Endpoint client_;
  std::function<bool(const codec::DatagramView&)> drop_;
  net::UdpSocket socket_;
  net::DatagramBatch batch_;
  int dropped_ = 0;
};

TEST(ClientSession, LostReportDatagramsAreWaitedForAndDeliveredInOrderOnce) {
  ScratchDir dir;
  auto service = StartService(dir);
  ASSERT_NE(service, nullptr);
  // Lose, once, the report datagram that holds report 2 (the fills of the
  // second order come with it).
  bool lost = false;
  LossyProxy proxy(service->endpoint(), [&](const codec::DatagramView& d) {
    for (const codec::FrameView report : d) {
      if (!lost && report.sequence() == 2 && report.kind() != Kind::kBusy) {
        lost = true;
        return true;
      }
    }
    return false;
  });
  Delivered delivered;
  SessionOptions options = OptionsFor(proxy.endpoint(), 1, delivered);
  options.retransmit_timeout_ms = 50;  // the hole is found by the timeout
  auto session = Session::Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  const auto pump = [&] { proxy.Pump(); };
  ASSERT_TRUE(s.Submit(Limit({.client_order_id = 11, .quantity = 5})).ok());
  ASSERT_TRUE(PollUntil(
      {&s}, [&] { return s.answered() == 1; }, 5000, pump));
  ASSERT_TRUE(s.Submit(Limit({.account_id = 2,
                              .client_order_id = 12,
                              .side = Side::kSell,
                              .quantity = 5}))
                  .ok());
  ASSERT_TRUE(PollUntil(
      {&s}, [&] { return lost; }, 5000, pump));
  ASSERT_TRUE(
      s.Submit(Limit({.client_order_id = 13, .price = 90, .quantity = 5}))
          .ok());
  ASSERT_TRUE(PollUntil(
      {&s},
      [&] { return s.answered() == 3 && delivered.sequences.size() >= 5; },
      5000, pump));
  EXPECT_EQ(proxy.dropped(), 1);
  EXPECT_EQ(delivered.sequences, OneTo(5));
  EXPECT_EQ(delivered.accepted_ids, (std::vector<std::uint64_t>{11, 12, 13}));
  // Report 5 came before 2-4 and was dropped; the resend began at or before
  // report 1, which was skipped as a duplicate.
  EXPECT_GE(s.counters().out_of_order_reports, 1u);
  EXPECT_GE(s.counters().duplicate_reports, 1u);
}

// client/session.h "Retransmission": after a retransmission timeout the
// session sends again in slow start, kRecoveryStart commands past the
// oldest unanswered one, not its whole window (one duplicate makes the
// service resend every report from it on); once reports come, every
// command is answered once and in order without the window ever being
// sent again.
TEST(ClientSession, AfterATimeoutItSendsAgainInSlowStartNotTheWholeWindow) {
  ScratchDir dir;
  auto service = StartService(dir);
  ASSERT_NE(service, nullptr);
  bool losing = true;  // every report datagram, until the first resend
  LossyProxy proxy(service->endpoint(),
                   [&](const codec::DatagramView&) { return losing; });
  Delivered delivered;
  SessionOptions options = OptionsFor(proxy.endpoint(), 1, delivered);
  options.retransmit_timeout_ms = 100;
  auto session = Session::Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  const auto pump = [&] { proxy.Pump(); };
  constexpr std::uint64_t kCommands = 1000;  // resting bids, one Accepted each
  std::vector<std::uint64_t> ids;
  for (std::uint64_t id = 1; id <= kCommands; ++id) {
    ASSERT_TRUE(s.Submit(Limit({.client_order_id = id,
                                .price = static_cast<std::int64_t>(id)}))
                    .ok());
    ids.push_back(id);
  }
  ASSERT_TRUE(PollUntil(
      {&s}, [&] { return s.counters().sent == kCommands; }, 5000, pump));
  // The Poll that times out sends kRecoveryStart commands again, no more.
  ASSERT_TRUE(PollUntil(
      {&s}, [&] { return s.counters().retransmitted != 0; }, 5000, pump));
  EXPECT_EQ(s.counters().retransmitted, kRecoveryStart);
  EXPECT_EQ(s.counters().acknowledged, 0u);
  losing = false;
  ASSERT_TRUE(PollUntil(
      {&s}, [&] { return s.answered() == kCommands; }, 10'000, pump));
  EXPECT_EQ(delivered.sequences, OneTo(kCommands));
  EXPECT_EQ(delivered.accepted_ids, ids);
  EXPECT_LT(s.counters().retransmitted, kCommands);
}

TEST(ClientSession, PollNeverWaits) {
  // A peer that never answers: every Poll has nothing to receive.
  auto silent = net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(silent.ok());
  Delivered delivered;
  SessionOptions options = OptionsFor(*silent->LocalEndpoint(), 1, delivered);
  options.retransmit_timeout_ms = 10'000;
  auto session = Session::Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  constexpr int kRounds = 100;
  const std::int64_t start = base::MonotonicNs();
  for (int i = 0; i < kRounds; ++i) {
    const absl::StatusOr<PollResult> round = s.Poll(base::MonotonicNs());
    ASSERT_TRUE(round.ok()) << round.status();
    EXPECT_EQ(round->datagrams_received, 0u);
    EXPECT_EQ(round->datagrams_sent, 0u);
  }
  // With a command in flight and no answer: Poll still returns at once.
  ASSERT_TRUE(s.Submit(Limit({.client_order_id = 1, .price = 1})).ok());
  for (int i = 0; i < kRounds; ++i) {
    const absl::StatusOr<PollResult> round = s.Poll(base::MonotonicNs());
    ASSERT_TRUE(round.ok()) << round.status();
    EXPECT_EQ(round->datagrams_received, 0u);
  }
  const double ms =
      static_cast<double>(base::MonotonicNs() - start) / 1'000'000.0;
  // 200 non-blocking rounds take microseconds each; 500 ms leaves room for
  // a loaded machine, and a Poll that waited even 5 ms a round would not fit.
  EXPECT_LT(ms, 500.0);
  EXPECT_EQ(s.counters().sent, 1u);
  EXPECT_EQ(s.unanswered(), 1u);
}

constexpr std::string_view kKeyHex =
    "8f2e4c1a9b7d6e5f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071";
constexpr std::string_view kWrongKeyHex =
    "0000000000000000000000000000000000000000000000000000000000000001";

// Session 7 keyed with kKeyHex (the key file in `dir`).
config::ServiceConfig KeyedConfig(const ScratchDir& dir) {
  const std::string key = dir.Sub("session-7.key");
  test_support::WriteText(key, std::string(kKeyHex) + "\n");
  ::chmod(key.c_str(), 0600);
  absl::StatusOr<config::ServiceConfig> config = config::ParseServiceConfig(
      "[sessions.7]\naccounts = \"any\"\nkey_file = \"" + key + "\"\n");
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : config::ServiceConfig{};
}

TEST(ClientSession, AWrongKeyGetsSilenceExplained) {
  ScratchDir dir;
  auto service = StartService(dir, KeyedConfig(dir));
  ASSERT_NE(service, nullptr);
  Delivered delivered;
  SessionOptions options = OptionsFor(service->endpoint(), 7, delivered);
  options.mac.emplace(*auth::ParseKeyHex(kWrongKeyHex));
  options.explain_after_ms = 100;
  auto session = Session::Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  ASSERT_TRUE(s.Submit(Limit({.client_order_id = 1})).ok());
  EXPECT_FALSE(s.refusals().silent);
  ASSERT_TRUE(PollUntil(
      {&s}, [&] { return s.refusals().silent; }, 3000));
  EXPECT_EQ(s.counters().silences, 1u);
  EXPECT_EQ(s.counters().datagrams_received, 0u);
  EXPECT_EQ(s.answered(), 0u);
  const std::string why = s.ExplainSilence();
  EXPECT_NE(why.find("the key is wrong (BadMac)"), std::string::npos) << why;
  EXPECT_NE(why.find("session 7"), std::string::npos) << why;
  EXPECT_TRUE(delivered.sequences.empty());
}

// A program that resumes a keyed session from a new socket: the next
// command sequence and the next report sequence are where the first
// Session stopped.
TEST(ClientSession, AKeyedSessionResumesFromANewSocket) {
  ScratchDir dir;
  auto service = StartService(dir, KeyedConfig(dir));
  ASSERT_NE(service, nullptr);
  const auth::Mac mac(*auth::ParseKeyHex(kKeyHex));
  Delivered first_reports;
  {
    SessionOptions options = OptionsFor(service->endpoint(), 7, first_reports);
    options.mac = mac;
    auto first = Session::Open(std::move(options));
    ASSERT_TRUE(first.ok()) << first.status();
    ASSERT_TRUE((*first)->Submit(Limit({.client_order_id = 1})).ok());
    ASSERT_TRUE(
        (*first)->Submit(Limit({.client_order_id = 2, .price = 101})).ok());
    ASSERT_TRUE(
        PollUntil({first->get()}, [&] { return (*first)->answered() == 2; }));
  }
  ASSERT_EQ(first_reports.sequences, OneTo(2));
  Delivered resumed_reports;
  SessionOptions options = OptionsFor(service->endpoint(), 7, resumed_reports);
  options.mac = mac;
  options.first_sequence = 3;
  options.first_report_sequence = 3;
  auto resumed = Session::Open(std::move(options));
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  Session& s = **resumed;
  const absl::StatusOr<std::uint64_t> sequence =
      s.Submit(Limit({.client_order_id = 3, .price = 102}));
  ASSERT_TRUE(sequence.ok()) << sequence.status();
  EXPECT_EQ(*sequence, 3u);
  ASSERT_TRUE(PollUntil({&s}, [&] { return s.answered() == 1; }));
  EXPECT_EQ(resumed_reports.sequences, (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(resumed_reports.accepted_ids, (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(s.counters().out_of_order_reports, 0u);
  EXPECT_EQ(s.counters().sequence_gaps, 0u);
}

TEST(ClientSession, TwoSessionsInOneProcessTradeWithEachOther) {
  ScratchDir dir;
  auto service = StartService(dir);
  ASSERT_NE(service, nullptr);
  Delivered buyer_reports;
  Delivered seller_reports;
  auto buyer = Session::Open(OptionsFor(service->endpoint(), 1, buyer_reports));
  auto seller =
      Session::Open(OptionsFor(service->endpoint(), 2, seller_reports));
  ASSERT_TRUE(buyer.ok() && seller.ok());
  ASSERT_TRUE(
      (*buyer)->Submit(Limit({.client_order_id = 21, .quantity = 3})).ok());
  ASSERT_TRUE(
      PollUntil({buyer->get()}, [&] { return (*buyer)->answered() == 1; }));
  ASSERT_TRUE((*seller)
                  ->Submit(Limit({.account_id = 2,
                                  .client_order_id = 31,
                                  .side = Side::kSell,
                                  .quantity = 3}))
                  .ok());
  ASSERT_TRUE(PollUntil({buyer->get(), seller->get()}, [&] {
    return (*seller)->answered() == 1 && buyer_reports.kinds.size() >= 2 &&
           seller_reports.kinds.size() >= 2;
  }));
  // Each session has its own report sequence, from 1.
  EXPECT_EQ(buyer_reports.sequences, OneTo(2));
  EXPECT_EQ(buyer_reports.kinds,
            (std::vector<Kind>{Kind::kAccepted, Kind::kFilled}));
  EXPECT_EQ(buyer_reports.accepted_ids, (std::vector<std::uint64_t>{21}));
  EXPECT_EQ(seller_reports.sequences, OneTo(2));
  EXPECT_EQ(seller_reports.kinds,
            (std::vector<Kind>{Kind::kAccepted, Kind::kFilled}));
  EXPECT_EQ(seller_reports.accepted_ids, (std::vector<std::uint64_t>{31}));
  EXPECT_EQ((*buyer)->counters().bad_datagrams, 0u);
  EXPECT_EQ((*seller)->counters().bad_datagrams, 0u);
}

// A report that contradicts the command it answers (here an Accepted with
// another client_order_id) ends the session with DataLoss, and is neither
// delivered nor counted as a report; every later call returns the error.
// The "service" is a bare loopback socket of the test.
TEST(ClientSession, AContradictingReportEndsTheSessionUndeliveredAndUncounted) {
  net::UdpSocket service =
      *net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
  const net::Endpoint service_at = *service.LocalEndpoint();
  Delivered delivered;
  auto session = Session::Open(OptionsFor(service_at, 3, delivered));
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE(
      (*session)->Submit(Limit({.client_order_id = 5, .price = 10})).ok());
  ASSERT_TRUE((*session)->Poll(base::MonotonicNs()).ok());

  sockaddr_storage from{};
  socklen_t from_length = sizeof from;
  std::array<std::byte, codec::kMaxDatagramSize> command{};
  ASSERT_TRUE(service.WaitReadable(5000));
  ASSERT_GT(::recvfrom(service.fd(), command.data(), command.size(), 0,
                       reinterpret_cast<sockaddr*>(&from), &from_length),
            0);
  const Bytes wrong = test_support::AcceptedFor(
      1, 100,
      Limit({.client_order_id = 6, .price = 10}));  // client_order_id 6, not 5
  const Bytes datagram = test_support::Datagram(3, {wrong});
  ASSERT_EQ(::sendto(service.fd(), datagram.data(), datagram.size(), 0,
                     reinterpret_cast<const sockaddr*>(&from), from_length),
            static_cast<ssize_t>(datagram.size()));

  absl::Status failed;
  const std::int64_t deadline = base::MonotonicNs() + 5'000'000'000;
  while (failed.ok() && base::MonotonicNs() < deadline) {
    const absl::StatusOr<PollResult> round =
        (*session)->Poll(base::MonotonicNs());
    failed = round.status();
  }
  EXPECT_EQ(failed.code(), absl::StatusCode::kDataLoss) << failed;
  EXPECT_NE(failed.message().find("client_order_id"), std::string::npos)
      << failed;
  EXPECT_TRUE(delivered.sequences.empty());
  EXPECT_EQ((*session)->counters().reports, 0u);
  EXPECT_EQ((*session)->counters().accepted, 0u);
  EXPECT_EQ((*session)->counters().acknowledged, 0u);
  EXPECT_EQ((*session)->Poll(base::MonotonicNs()).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_FALSE(
      (*session)->Submit(Limit({.client_order_id = 7, .price = 10})).ok());
}

}  // namespace
}  // namespace orderwire::client
