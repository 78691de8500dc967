// Client failover (client/session.h "Failover", docs/CLIENT.md): a session
// with several targets moves to the next one only after the failover
// timeout without a word from the current one, resends from the oldest
// unanswered command, and takes nothing from any other address; with one
// target it never switches. End to end: two sessions (one keyed) trade
// through RunClient against service A, A stops mid-load, service B opens
// the same journal directory (the stand-in for a hot standby holding the
// same journal) on the second target's port, the clients switch to B and
// finish; every command is applied once and each session received exactly
// the per-session replay of B's journal.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "auth/mac.h"
#include "base/clock.h"
#include "client/run_client.h"
#include "client/session.h"
#include "codec/datagram.h"
#include "codec/frame.h"
#include "codec/messages.h"
#include "codec/wire.h"
#include "config/service_config.h"
#include "engine/workload.h"
#include "gtest/gtest.h"
#include "net/udp.h"
#include "tests/support/bytes.h"
#include "tests/support/files.h"
#include "tests/support/journal_replay.h"
#include "tests/support/orders.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::client {
namespace {

using test_support::Bytes;
using test_support::Limit;
using test_support::ReadFromStart;
using test_support::RunningService;
using test_support::ScratchDir;
using test_support::TestOptions;

constexpr std::int64_t kMs = 1'000'000;

// A target played by the test: a loopback socket that records the command
// sequences it receives and answers with report datagrams it is given.
class FakeTarget {
 public:
  FakeTarget()
      : socket_(*net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"))) {}

  [[nodiscard]] net::Endpoint endpoint() const {
    return *socket_.LocalEndpoint();
  }

  // The command sequences of the datagrams waiting (waiting up to
  // `timeout_ms` for the first), in order.
  std::vector<std::uint64_t> Commands(int timeout_ms) {
    std::vector<std::uint64_t> sequences;
    if (!socket_.WaitReadable(timeout_ms)) return sequences;
    std::array<std::byte, codec::kMaxDatagramSize> bytes{};
    for (;;) {
      socklen_t length = sizeof client_;
      const ssize_t n =
          ::recvfrom(socket_.fd(), bytes.data(), bytes.size(), MSG_DONTWAIT,
                     reinterpret_cast<sockaddr*>(&client_), &length);
      if (n <= 0) break;
      client_length_ = length;
      const auto datagram = codec::DatagramView::Parse(
          std::span<const std::byte>(bytes.data(), static_cast<std::size_t>(n)),
          codec::FrameFilter::kCommands);
      EXPECT_TRUE(datagram.ok());
      if (!datagram.ok()) continue;
      for (const codec::FrameView frame : *datagram) {
        if (frame.kind() == codec::Kind::kHeartbeat) {
          ++heartbeats_;
        } else {
          sequences.push_back(frame.sequence());
        }
      }
    }
    return sequences;
  }
  // Heartbeat frames Commands() has received (not in its sequences).
  [[nodiscard]] std::size_t heartbeats() const { return heartbeats_; }

  // Sends a datagram of `session` holding `frames` from this socket to the
  // client last heard by `heard_by` (by default this target).
  void Answer(std::uint32_t session, const std::vector<Bytes>& frames,
              const FakeTarget* heard_by = nullptr) {
    const FakeTarget& heard = heard_by == nullptr ? *this : *heard_by;
    ASSERT_NE(heard.client_length_, 0u) << "no client heard yet";
    const Bytes datagram = test_support::Datagram(session, frames);
    ASSERT_EQ(::sendto(socket_.fd(), datagram.data(), datagram.size(), 0,
                       reinterpret_cast<const sockaddr*>(&heard.client_),
                       heard.client_length_),
              static_cast<ssize_t>(datagram.size()));
  }

 private:
  net::UdpSocket socket_;
  sockaddr_storage client_{};
  socklen_t client_length_ = 0;
  std::size_t heartbeats_ = 0;
};

// Polls `session` at the fixed time `now_ns` (no timer moves) until `done`
// holds or 5 s of real time pass.
bool PollAt(Session& session, std::int64_t now_ns,
            const std::function<bool()>& done) {
  const std::int64_t deadline = base::MonotonicNs() + 5000 * kMs;
  while (!done()) {
    if (base::MonotonicNs() > deadline) return false;
    const absl::StatusOr<PollResult> round = session.Poll(now_ns);
    EXPECT_TRUE(round.ok()) << round.status();
    if (!round.ok()) return false;
    pollfd readable{.fd = session.fd(), .events = POLLIN, .revents = 0};
    (void)::poll(&readable, 1, 1);
  }
  return true;
}

SessionOptions QuietOptions(const net::Endpoint& target,
                            std::vector<std::uint64_t>& delivered) {
  SessionOptions options;
  options.target = target;
  options.session_id = 5;
  // No retransmission timer in these tests: only the failover moves.
  options.retransmit_timeout_ms = 600'000;
  options.explain_after_ms = 600'000;
  options.failover_timeout_ms = 300;
  options.on_report = [&delivered](const codec::FrameView& report) {
    delivered.push_back(report.sequence());
  };
  return options;
}

// A session on targets `a` then `b` with QuietOptions and heartbeats every
// `heartbeat_ms` (0: none); null (the test failed) if it does not open.
std::unique_ptr<Session> OpenOnTwo(const FakeTarget& a, const FakeTarget& b,
                                   std::vector<std::uint64_t>& delivered,
                                   int heartbeat_ms) {
  SessionOptions options = QuietOptions(a.endpoint(), delivered);
  options.failover_targets = {b.endpoint()};
  options.heartbeat_interval_ms = heartbeat_ms;
  auto session = Session::Open(std::move(options));
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(*session) : nullptr;
}

// One target: however long it is silent, the session stays on it (and, as
// before failover existed, takes a report from any address).
TEST(ClientFailover, ASingleTargetNeverSwitches) {
  FakeTarget only;
  FakeTarget elsewhere;  // another address, never a target
  std::vector<std::uint64_t> delivered;
  SessionOptions options = QuietOptions(only.endpoint(), delivered);
  options.failover_timeout_ms = 1;
  auto session = Session::Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  ASSERT_TRUE(s.Submit(Limit({.client_order_id = 1})).ok());
  const std::int64_t t0 = base::MonotonicNs();
  ASSERT_TRUE(s.Poll(t0).ok());
  EXPECT_EQ(only.Commands(5000), (std::vector<std::uint64_t>{1}));
  for (const std::int64_t later : {10 * kMs, 1000 * kMs, 60'000 * kMs}) {
    ASSERT_TRUE(s.Poll(t0 + later).ok());
  }
  EXPECT_EQ(s.counters().failovers, 0u);
  EXPECT_EQ(s.current_target_index(), 0u);
  EXPECT_EQ(s.current_target().ToString(), only.endpoint().ToString());
  EXPECT_TRUE(only.Commands(50).empty()) << "nothing was resent anywhere";
  // A report from another address is taken, as a one-target session always
  // took it.
  elsewhere.Answer(
      5, {test_support::AcceptedFor(1, 1, Limit({.client_order_id = 1}))},
      &only);
  ASSERT_TRUE(PollAt(s, t0 + 60'000 * kMs, [&] { return s.answered() == 1; }));
  EXPECT_EQ(delivered, (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(s.counters().other_target_datagrams, 0u);
}

// Two targets: no switch 1 ms before the timeout, a switch at it; the new
// target gets every unanswered command again; the old one's reports are
// dropped and counted; the next silence goes round to the first target,
// from the oldest command still unanswered.
TEST(ClientFailover, SwitchesOnlyAfterTheTimeoutAndResendsToTheNewTarget) {
  FakeTarget a;
  FakeTarget b;
  std::vector<std::uint64_t> delivered;
  SessionOptions options = QuietOptions(a.endpoint(), delivered);
  options.failover_targets = {b.endpoint()};
  auto session = Session::Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  ASSERT_TRUE(s.Submit(Limit({.client_order_id = 1})).ok());
  ASSERT_TRUE(s.Submit(Limit({.client_order_id = 2})).ok());
  const std::int64_t t0 = base::MonotonicNs();
  ASSERT_TRUE(s.Poll(t0).ok());
  EXPECT_EQ(a.Commands(5000), (std::vector<std::uint64_t>{1, 2}));

  ASSERT_TRUE(s.Poll(t0 + 299 * kMs).ok());
  EXPECT_EQ(s.counters().failovers, 0u) << "switched before the timeout";
  EXPECT_EQ(s.current_target().ToString(), a.endpoint().ToString());
  EXPECT_TRUE(b.Commands(50).empty());

  const std::int64_t t1 = t0 + 300 * kMs;
  ASSERT_TRUE(s.Poll(t1).ok());
  EXPECT_EQ(s.counters().failovers, 1u);
  EXPECT_EQ(s.current_target_index(), 1u);
  EXPECT_EQ(s.current_target().ToString(), b.endpoint().ToString());
  EXPECT_EQ(b.Commands(5000), (std::vector<std::uint64_t>{1, 2}))
      << "the new target must get every unanswered command";
  EXPECT_EQ(s.counters().retransmitted, 2u);
  EXPECT_TRUE(a.Commands(50).empty());

  // The old primary wakes up and answers: not heard.
  a.Answer(5, {test_support::AcceptedFor(1, 1, Limit({.client_order_id = 1}))});
  ASSERT_TRUE(
      PollAt(s, t1, [&] { return s.counters().other_target_datagrams == 1; }));
  EXPECT_EQ(s.answered(), 0u);
  EXPECT_TRUE(delivered.empty());
  // The new one answers command 1: taken.
  b.Answer(5, {test_support::AcceptedFor(1, 1, Limit({.client_order_id = 1}))});
  ASSERT_TRUE(PollAt(s, t1, [&] { return s.answered() == 1; }));
  EXPECT_EQ(delivered, (std::vector<std::uint64_t>{1}));

  // B is silent from t1 on: at t1 + 300 ms the session goes round to A,
  // from command 2.
  ASSERT_TRUE(s.Poll(t1 + 299 * kMs).ok());
  EXPECT_EQ(s.counters().failovers, 1u);
  ASSERT_TRUE(s.Poll(t1 + 300 * kMs).ok());
  EXPECT_EQ(s.counters().failovers, 2u);
  EXPECT_EQ(s.current_target_index(), 0u);
  EXPECT_EQ(a.Commands(5000), (std::vector<std::uint64_t>{2}));
}

// An idle session that submits after a long quiet spell waits a whole
// timeout before it switches: silence counts from when it began waiting
// (without heartbeats: a Heartbeat unanswered is waiting too, below).
TEST(ClientFailover, AnIdleSessionWaitsAWholeTimeoutAfterItSubmits) {
  FakeTarget a;
  FakeTarget b;
  std::vector<std::uint64_t> delivered;
  const std::unique_ptr<Session> session =
      OpenOnTwo(a, b, delivered, /*heartbeat_ms=*/0);
  ASSERT_NE(session, nullptr);
  Session& s = *session;
  const std::int64_t t0 = base::MonotonicNs() + 10'000 * kMs;  // idle 10 s
  ASSERT_TRUE(s.Poll(t0).ok());
  ASSERT_TRUE(s.Submit(Limit({.client_order_id = 1})).ok());
  ASSERT_TRUE(s.Poll(t0 + 1 * kMs).ok());
  EXPECT_EQ(s.counters().failovers, 0u);
  EXPECT_EQ(a.Commands(5000), (std::vector<std::uint64_t>{1}));
  ASSERT_TRUE(s.Poll(t0 + 300 * kMs).ok());
  EXPECT_EQ(s.counters().failovers, 0u);
  ASSERT_TRUE(s.Poll(t0 + 301 * kMs).ok());
  EXPECT_EQ(s.counters().failovers, 1u);
  EXPECT_EQ(b.Commands(5000), (std::vector<std::uint64_t>{1}));
}

// An idle session learns its target is gone from its heartbeats: one
// goes after heartbeat_interval_ms without a send, and when nothing
// answers it for failover_timeout_ms the session moves on and greets the
// next target with a Heartbeat at once (docs/CONTROLS.md "Heartbeats").
// A target that answers keeps it where it is.
TEST(ClientFailover, AnIdleSessionFailsOverWhenItsHeartbeatIsNotAnswered) {
  FakeTarget a;
  FakeTarget b;
  std::vector<std::uint64_t> delivered;
  const std::unique_ptr<Session> session =
      OpenOnTwo(a, b, delivered, /*heartbeat_ms=*/100);
  ASSERT_NE(session, nullptr);
  Session& s = *session;
  // The session's clock started in Open, before t0.
  const std::int64_t t0 = base::MonotonicNs();
  ASSERT_TRUE(s.Poll(t0 + 50 * kMs).ok());
  EXPECT_EQ(s.counters().heartbeats_sent, 0u) << "sent before the interval";
  ASSERT_TRUE(s.Poll(t0 + 150 * kMs).ok());
  EXPECT_EQ(s.counters().heartbeats_sent, 1u);
  EXPECT_TRUE(a.Commands(5000).empty());
  EXPECT_EQ(a.heartbeats(), 1u);
  // Unanswered from the next round (t0 + 200 ms) on: 300 ms later (the
  // failover timeout) the session moves.
  ASSERT_TRUE(s.Poll(t0 + 200 * kMs).ok());
  ASSERT_TRUE(s.Poll(t0 + 499 * kMs).ok());
  EXPECT_EQ(s.counters().failovers, 0u);
  ASSERT_TRUE(s.Poll(t0 + 500 * kMs).ok());
  EXPECT_EQ(s.counters().failovers, 1u);
  EXPECT_EQ(s.current_target().ToString(), b.endpoint().ToString());
  EXPECT_TRUE(b.Commands(5000).empty());
  EXPECT_EQ(b.heartbeats(), 1u) << "the new target is greeted at once";
  // B answers: the session stays, however long it then idles.
  b.Answer(5,
           {test_support::Frame(
               0, codec::HeartbeatAck{
                      .nonce = 2, .expected_sequence = 1, .next_report = 1})});
  ASSERT_TRUE(PollAt(s, t0 + 500 * kMs,
                     [&] { return s.counters().heartbeat_acks == 1; }));
  ASSERT_TRUE(s.Poll(t0 + 850 * kMs).ok());
  EXPECT_EQ(s.counters().failovers, 1u);
  EXPECT_EQ(s.counters().heartbeat_report_holes, 0u);
}

// A HeartbeatAck naming a report the session lacks (a maker's Filled lost
// while it idled): after the retransmission timeout the session sends its
// last acknowledged command again, whose duplicate makes the service send
// the reports from it on (docs/CONTROLS.md "Heartbeats").
TEST(ClientFailover, AHeartbeatAckShowingAMissingReportBringsItBack) {
  FakeTarget only;
  std::vector<std::uint64_t> delivered;
  SessionOptions options = QuietOptions(only.endpoint(), delivered);
  options.retransmit_timeout_ms = 100;
  auto session = Session::Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  ASSERT_TRUE(s.Submit(Limit({.client_order_id = 1})).ok());
  const std::int64_t t0 = base::MonotonicNs();
  ASSERT_TRUE(s.Poll(t0).ok());
  EXPECT_EQ(only.Commands(5000), (std::vector<std::uint64_t>{1}));
  only.Answer(5,
              {test_support::AcceptedFor(1, 1, Limit({.client_order_id = 1}))});
  ASSERT_TRUE(PollAt(s, t0, [&] { return s.answered() == 1; }));
  // Report 2 never came; the ack says the next is 3.
  only.Answer(
      5, {test_support::Frame(
             0, codec::HeartbeatAck{
                    .nonce = 1, .expected_sequence = 2, .next_report = 3})});
  ASSERT_TRUE(PollAt(s, t0, [&] { return s.counters().heartbeat_acks == 1; }));
  EXPECT_EQ(s.counters().heartbeat_report_holes, 1u);
  ASSERT_TRUE(s.Poll(t0 + 101 * kMs).ok());
  EXPECT_EQ(only.Commands(5000), (std::vector<std::uint64_t>{1}))
      << "the last acknowledged command goes again";
  EXPECT_EQ(s.counters().retransmitted, 1u);
}

// The SocketCalls seam: sends to port g_unreachable_port fail with
// ENETUNREACH, as to a target behind a dead route.
std::atomic<int> g_unreachable_port{0};
int UnreachableSendmmsg(int fd, mmsghdr* messages, unsigned count, int flags) {
  const auto* to =
      static_cast<const sockaddr_in*>(messages[0].msg_hdr.msg_name);
  if (count > 0 && to != nullptr &&
      ntohs(to->sin_port) == g_unreachable_port.load()) {
    errno = ENETUNREACH;
    return -1;
  }
  return ::sendmmsg(fd, messages, count, flags);
}

// Several targets: the first one unreachable (the kernel refuses the send)
// does not end the session; the timeout moves it on to the second, which
// gets the command. With one target the same refusal ends the session.
TEST(ClientFailover, AnUnreachableTargetIsSilentNotTheEndOfTheSession) {
  FakeTarget a;
  FakeTarget b;
  g_unreachable_port.store(a.endpoint().port());
  static const net::SocketCalls kUnreachable{.sendmmsg = &UnreachableSendmmsg};
  std::vector<std::uint64_t> delivered;
  SessionOptions options = QuietOptions(a.endpoint(), delivered);
  options.send = net::SendPath::kSendmmsg;
  options.socket_calls_for_testing = &kUnreachable;
  SessionOptions alone = options;
  options.failover_targets = {b.endpoint()};
  auto session = Session::Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  ASSERT_TRUE(s.Submit(Limit({.client_order_id = 1})).ok());
  const std::int64_t t0 = base::MonotonicNs();
  const absl::StatusOr<PollResult> refused = s.Poll(t0);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(s.counters().unreachable_sends, 1u);
  EXPECT_EQ(s.counters().datagrams_sent, 0u);
  ASSERT_TRUE(s.Poll(t0 + 300 * kMs).ok());
  EXPECT_EQ(s.counters().failovers, 1u);
  EXPECT_EQ(b.Commands(5000), (std::vector<std::uint64_t>{1}));

  auto single = Session::Open(std::move(alone));
  ASSERT_TRUE(single.ok()) << single.status();
  ASSERT_TRUE((*single)->Submit(Limit({.client_order_id = 1})).ok());
  const absl::StatusOr<PollResult> ended = (*single)->Poll(t0);
  EXPECT_EQ(ended.status().code(), absl::StatusCode::kUnavailable)
      << ended.status();
  EXPECT_EQ((*single)->counters().unreachable_sends, 0u);
}

TEST(ClientFailover, OpenRefusesAFailoverTargetOfAnotherFamilyOrNoTimeout) {
  std::vector<std::uint64_t> delivered;
  SessionOptions options =
      QuietOptions(*net::Endpoint::Parse("127.0.0.1:7400"), delivered);
  options.failover_targets = {*net::Endpoint::Parse("[::1]:7400")};
  const auto mixed = Session::Open(options);
  EXPECT_EQ(mixed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mixed.status().message().find("failover target 2 ([::1]:7400)"),
            std::string::npos)
      << mixed.status();
  options.failover_targets = {*net::Endpoint::Parse("127.0.0.1:7401")};
  options.failover_timeout_ms = 0;
  const auto no_timeout = Session::Open(options);
  EXPECT_EQ(no_timeout.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_timeout.status().message().find("failover_timeout_ms 0"),
            std::string::npos)
      << no_timeout.status();
}

// RunClient with two silent targets: a line per failover on diagnostics,
// and the silence (explain_after_ms long before the failover timeout)
// explained only after the first failover, once both targets were tried;
// then it gives up.
TEST(ClientFailover, RunClientExplainsASilenceOnlyOnceEveryTargetWasTried) {
  FakeTarget a;
  FakeTarget b;
  std::FILE* diagnostics = std::tmpfile();
  ASSERT_NE(diagnostics, nullptr);
  ClientOptions options;
  options.target = a.endpoint();
  options.failover_targets = {b.endpoint()};
  options.failover_timeout_ms = 200;
  options.explain_after_ms = 20;
  options.give_up_ms = 500;
  options.session_id = 5;
  options.diagnostics = diagnostics;
  const Bytes frames = test_support::Frame(1, Limit({.client_order_id = 1}));
  const std::atomic<bool> stop{false};
  const absl::StatusOr<ClientResult> result = RunClient(options, frames, stop);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded)
      << result.status();
  std::rewind(diagnostics);
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), diagnostics));
  std::fclose(diagnostics);
  const std::size_t failover =
      text.find("nothing heard for 200 ms, failing over to " +
                b.endpoint().ToString() + " (failover 1)");
  const std::size_t explained = text.find("likely causes");
  ASSERT_NE(failover, std::string::npos) << text;
  ASSERT_NE(explained, std::string::npos) << text;
  EXPECT_LT(failover, explained) << text;
  EXPECT_FALSE(a.Commands(100).empty());
  EXPECT_FALSE(b.Commands(100).empty());
}

// ---------------------------------------------------------------------------
// End to end.

constexpr std::string_view kFailoverKeyHex =
    "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

// Session 7 keyed, session 8 not; both may trade any account.
config::ServiceConfig FailoverConfig(const ScratchDir& dir) {
  const std::string key = dir.Sub("session-7.key");
  test_support::WriteText(key, std::string(kFailoverKeyHex) + "\n");
  ::chmod(key.c_str(), 0600);
  absl::StatusOr<config::ServiceConfig> config = config::ParseServiceConfig(
      "[sessions.7]\naccounts = \"any\"\nkey_file = \"" + key +
      "\"\n[sessions.8]\naccounts = \"any\"\n");
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : config::ServiceConfig{};
}

// Service A's address as the clients see it: a relay on its own thread
// between the clients and A. Once `Blackout()` is called it still passes
// commands to A but drops A's reports: A applies and journals commands
// whose answers never arrive, as a primary that dies before its reports
// leave does. `Stop()` ends the relay (its socket closed: silent).
class Relay {
 public:
  explicit Relay(const net::Endpoint& service)
      : service_(service),
        socket_(*net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"))),
        batch_(64) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Relay() { Stop(); }

  [[nodiscard]] net::Endpoint endpoint() const {
    return *socket_.LocalEndpoint();
  }
  void Blackout() { blackout_.store(true); }
  [[nodiscard]] std::uint64_t reports_dropped() const {
    return dropped_.load();
  }
  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Run() {
    while (!stop_.load()) {
      if (!socket_.WaitReadable(1)) continue;
      const int n = socket_.Receive(batch_, 64);
      for (int i = 0; i < n; ++i) {
        const auto k = static_cast<std::size_t>(i);
        const std::span<const std::byte> bytes = batch_.datagram(k);
        if (bytes.size() < codec::kDatagramHeaderSize) continue;
        const std::uint32_t session = codec::LoadLE<std::uint32_t>(
            bytes.data() +
            codec::DatagramOffsetOf<&codec::DatagramHeader::session_id>());
        const bool from_service = batch_.peer(k) == service_;
        if (!from_service) {
          clients_[session] = batch_.peer(k);
        } else if (blackout_.load() || !clients_.contains(session)) {
          ++dropped_;
          continue;
        }
        batch_.set_length(k, bytes.size());
        batch_.set_peer(k, from_service ? clients_[session] : service_);
        (void)socket_.SendRange(batch_, k, 1);
      }
    }
  }

  net::Endpoint service_;
  net::UdpSocket socket_;
  net::DatagramBatch batch_;
  std::map<std::uint32_t, net::Endpoint> clients_;
  std::atomic<bool> blackout_{false};
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> dropped_{0};
  std::thread thread_;
};

// The two sessions of the end-to-end test (7 keyed, 8 plain), each
// RunClient on a thread of its own with kFailoverCommands commands of the
// mixed workload, target A then B, writing the reports it receives to a
// temporary file.
struct FailoverSessions {
  static constexpr std::uint32_t kSessions = 2;
  static constexpr std::size_t kCommands = 6000;
  const std::array<std::uint32_t, kSessions> ids{7, 8};
  std::vector<std::vector<std::byte>> inputs;
  std::vector<std::FILE*> files;
  std::vector<absl::StatusOr<ClientResult>> results =
      std::vector<absl::StatusOr<ClientResult>>(kSessions,
                                                absl::UnknownError("not run"));
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;

  // A test that ends early stops the sessions rather than leave threads.
  ~FailoverSessions() {
    stop.store(true);
    Join();
  }

  // Starts both sessions on `a`, failing over to `b`.
  void Start(const net::Endpoint& a, const net::Endpoint& b) {
    for (std::uint32_t s = 0; s < kSessions; ++s) {
      inputs.push_back(workload::EncodeCommands(
          workload::Generate(workload::Workload::kMixed, kCommands, 300 + s)));
      files.push_back(std::tmpfile());
      ASSERT_NE(files.back(), nullptr);
    }
    for (std::uint32_t s = 0; s < kSessions; ++s) {
      threads.emplace_back([this, s, a, b] {
        ClientOptions client;
        client.target = a;
        client.failover_targets = {b};
        client.failover_timeout_ms = 300;
        client.session_id = ids[s];
        client.window = 256;
        // Paced so that the load is still running when A stops.
        client.rate = 10'000;
        client.give_up_ms = 30'000;
        client.reports_out = files[s];
        if (ids[s] == 7) {
          client.mac.emplace(*auth::ParseKeyHex(kFailoverKeyHex));
        }
        results[s] = RunClient(client, inputs[s], stop);
      });
    }
  }

  void Join() {
    for (std::thread& t : threads) {
      if (t.joinable()) t.join();
    }
  }
};

// A loopback UDP address free now: a port the kernel hands out, given back
// at once for a service to bind later.
void FreeUdpAddress(net::Endpoint* address) {
  auto probe = net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(probe.ok()) << probe.status();
  *address = *probe->LocalEndpoint();
}

// Mid-load, A's reports stop reaching the clients while A goes on applying
// what comes (what was in flight, and new commands until the clients'
// windows are full): once answers have been lost, A stops and its address
// falls silent. Returns how many commands A applied (in `applied_by_a`).
void LoseAnswersThenStopA(std::unique_ptr<RunningService>& a, Relay& relay,
                          std::uint64_t* applied_by_a) {
  constexpr std::size_t kTotal =
      FailoverSessions::kSessions * FailoverSessions::kCommands;
  EXPECT_TRUE(a->WaitFor(
      [&](const service::ServiceStats& stats) {
        return stats.commands_applied >= kTotal / 3;
      },
      30'000));
  relay.Blackout();
  const std::int64_t lost_deadline = base::MonotonicNs() + 30'000 * kMs;
  while (relay.reports_dropped() == 0 && base::MonotonicNs() < lost_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GT(relay.reports_dropped(), 0u) << "no answer of A was lost";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(a->Stop().ok());
  *applied_by_a = a->final_stats().commands_applied;
  a.reset();
  relay.Stop();
}

// Every command applied once, every session finished on B, and each
// received its replayed reports byte for byte.
void ExpectEachSessionFinishedOnB(FailoverSessions& sessions,
                                  const std::string& journal,
                                  const engine::EngineConfig& engine_config,
                                  const net::Endpoint& b_address) {
  constexpr std::size_t kCommands = FailoverSessions::kCommands;
  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(journal, engine_config);
  // Every command applied once: the journal holds each session's commands
  // exactly once (a duplicate would be another record).
  EXPECT_EQ(replay.records, FailoverSessions::kSessions * kCommands);
  for (std::uint32_t s = 0; s < FailoverSessions::kSessions; ++s) {
    const std::uint32_t id = sessions.ids[s];
    SCOPED_TRACE(::testing::Message() << "session " << id);
    ASSERT_TRUE(sessions.results[s].ok()) << sessions.results[s].status();
    const ClientResult& r = *sessions.results[s];
    EXPECT_EQ(r.acknowledged, kCommands);
    EXPECT_EQ(r.unconfirmed, 0u);
    EXPECT_GE(r.failovers, 1u);
    EXPECT_EQ(r.final_target.ToString(), b_address.ToString());
    EXPECT_EQ(replay.records_by_session.at(id), kCommands);
    // What the session received live is its replayed reports, byte for
    // byte, up to where it stopped listening (the other session may trade
    // on and fill this one's resting orders: those reports come after).
    const Bytes live = ReadFromStart(sessions.files[s]);
    std::fclose(sessions.files[s]);
    const std::size_t received = test_support::ExpectLiveIsReplayPrefix(
        id, live, replay.reports_by_session.at(id));
    EXPECT_EQ(r.reports, received);
  }
}

TEST(ClientFailoverEndToEnd, SessionsFinishOnTheServiceThatTookOverTheJournal) {
  ScratchDir dir;
  const std::string journal = dir.Sub("journal");
  service::ServiceOptions options =
      TestOptions(journal, journal::Durability::kBatch, FailoverConfig(dir));
  const engine::EngineConfig engine_config = options.config.engine;
  // B's address, known before B exists (the client is given both at once).
  net::Endpoint b_address;
  ASSERT_NO_FATAL_FAILURE(FreeUdpAddress(&b_address));
  auto a = RunningService::Start(options);
  ASSERT_NE(a, nullptr);
  Relay relay(a->endpoint());
  FailoverSessions sessions;
  ASSERT_NO_FATAL_FAILURE(sessions.Start(relay.endpoint(), b_address));
  std::uint64_t applied_by_a = 0;
  ASSERT_NO_FATAL_FAILURE(LoseAnswersThenStopA(a, relay, &applied_by_a));
  // B takes the same journal over on the second target's address.
  service::ServiceOptions b_options = options;
  b_options.listen = b_address;
  auto b = RunningService::Start(b_options);
  ASSERT_NE(b, nullptr);
  sessions.Join();
  ASSERT_TRUE(b->Stop().ok());
  EXPECT_LT(applied_by_a,
            FailoverSessions::kSessions * FailoverSessions::kCommands)
      << "A stopped after the load";
  // B answered the commands A had applied unanswered from the report
  // history it rebuilt from the journal, and had every report asked for.
  EXPECT_GT(b->final_stats().duplicates, 0u);
  EXPECT_GT(b->final_stats().reports_resent, 0u);
  EXPECT_EQ(b->final_stats().resend_unavailable, 0u);

  SCOPED_TRACE(::testing::Message() << "A applied " << applied_by_a);
  ExpectEachSessionFinishedOnB(sessions, journal, engine_config, b_address);
}

}  // namespace
}  // namespace orderwire::client
