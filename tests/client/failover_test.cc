// Client failover (client/session.h "Failover", docs/CLIENT.md): a session
// with several targets moves to the next one only after the failover
// timeout without a word from the current one, resends from the oldest
// unanswered command, and takes nothing from any other address; with one
// target it never switches.
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <atomic>
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
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "codec/wire.h"
#include "engine/workload.h"
#include "gtest/gtest.h"
#include "net/udp.h"
#include "service/service_config.h"
#include "tests/support/bytes.h"
#include "tests/support/files.h"
#include "tests/support/journal_replay.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::client {
namespace {

using codec::Kind;
using codec::Side;
using test_support::Bytes;
using test_support::RunningService;
using test_support::ScratchDir;
using test_support::TestOptions;

constexpr std::int64_t kMs = 1'000'000;

codec::NewLimit Limit(std::uint64_t client_order_id) {
  return codec::NewLimit{.account_id = 1,
                         .client_order_id = client_order_id,
                         .instrument_id = 1,
                         .side = Side::kBuy,
                         .time_in_force = codec::TimeInForce::kGoodTillCancel,
                         .price = 100,
                         .quantity = 1};
}

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
        sequences.push_back(frame.sequence());
      }
    }
    return sequences;
  }

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
  ASSERT_TRUE(s.Submit(Limit(1)).ok());
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
  elsewhere.Answer(5, {test_support::AcceptedFor(1, 1, Limit(1))}, &only);
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
  ASSERT_TRUE(s.Submit(Limit(1)).ok());
  ASSERT_TRUE(s.Submit(Limit(2)).ok());
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
  a.Answer(5, {test_support::AcceptedFor(1, 1, Limit(1))});
  ASSERT_TRUE(
      PollAt(s, t1, [&] { return s.counters().other_target_datagrams == 1; }));
  EXPECT_EQ(s.answered(), 0u);
  EXPECT_TRUE(delivered.empty());
  // The new one answers command 1: taken.
  b.Answer(5, {test_support::AcceptedFor(1, 1, Limit(1))});
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
// timeout before it switches: silence counts from when it began waiting.
TEST(ClientFailover, AnIdleSessionWaitsAWholeTimeoutAfterItSubmits) {
  FakeTarget a;
  FakeTarget b;
  std::vector<std::uint64_t> delivered;
  SessionOptions options = QuietOptions(a.endpoint(), delivered);
  options.failover_targets = {b.endpoint()};
  auto session = Session::Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  const std::int64_t t0 = base::MonotonicNs() + 10'000 * kMs;  // idle 10 s
  ASSERT_TRUE(s.Poll(t0).ok());
  ASSERT_TRUE(s.Submit(Limit(1)).ok());
  ASSERT_TRUE(s.Poll(t0 + 1 * kMs).ok());
  EXPECT_EQ(s.counters().failovers, 0u);
  EXPECT_EQ(a.Commands(5000), (std::vector<std::uint64_t>{1}));
  ASSERT_TRUE(s.Poll(t0 + 300 * kMs).ok());
  EXPECT_EQ(s.counters().failovers, 0u);
  ASSERT_TRUE(s.Poll(t0 + 301 * kMs).ok());
  EXPECT_EQ(s.counters().failovers, 1u);
  EXPECT_EQ(b.Commands(5000), (std::vector<std::uint64_t>{1}));
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

}  // namespace
}  // namespace orderwire::client
