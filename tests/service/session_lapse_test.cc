// Goodbye, liveness and cancel-on-disconnect (docs/CONTROLS.md) over
// loopback: a session that falls silent past its liveness timeout lapses
// once (a journaled lapse record), its resting orders cancelled only with
// cancel-on-disconnect; a restart between the silence and the timeout
// still lapses it, counted from the start, and never twice; a Goodbye
// closes at once. Every case is replayed from the journal: the same
// reports, the same feed, the same books.
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "codec/messages.h"
#include "codec/types.h"
#include "config/service_config.h"
#include "gtest/gtest.h"
#include "state/record_flags.h"
#include "tests/service/service_test_support.h"
#include "tests/support/journal_replay.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::service::end_to_end {
namespace {

using codec::CancelReason;
using codec::SessionCloseReason;
using test_support::JournalRecordCopy;
using test_support::ReadJournalRecords;
using test_support::ReplayJournalBySession;

constexpr std::uint32_t kCancelling = 41;  // liveness 1 s, cancel on disc.
constexpr std::uint32_t kKeeping = 42;     // liveness 1 s, orders stay
constexpr std::uint32_t kForever = 43;     // no liveness timeout

// Sessions 41, 42 and 43 as above, any account; unlisted ones too.
ServiceOptions LapseOptions(const std::string& journal,
                            std::uint32_t liveness_seconds = 1) {
  config::ServiceConfig config;
  config.open_sessions = true;
  config.sessions[kCancelling].liveness_seconds = liveness_seconds;
  config.sessions[kCancelling].cancel_on_disconnect = true;
  config.sessions[kKeeping].liveness_seconds = liveness_seconds;
  config.sessions[kForever].cancel_on_disconnect = true;
  return TestOptions(journal, journal::Durability::kBatch, std::move(config));
}

codec::NewLimit Buy(std::uint64_t coid, std::int64_t price) {
  return Limit({.account_id = 7,
                .client_order_id = coid,
                .instrument_id = 5,
                .price = price,
                .quantity = 10});
}

// `session` rests two buys (sequences 1, 2) and reads their Accepted.
void RestTwo(TestClient& client, std::uint32_t session, std::int64_t price) {
  client.Send(session, {Frame(1, Buy(1, price)), Frame(2, Buy(2, price + 1))});
  ASSERT_EQ(client.Frames(session, 2).size(), 2u);
}

Bytes CancelledFrame(std::uint64_t report, std::uint64_t order_id,
                     std::uint64_t coid) {
  return Frame(report,
               codec::Cancelled{.order_id = order_id,
                                .account_id = 7,
                                .client_order_id = coid,
                                .instrument_id = 5,
                                .cancelled_quantity = 10,
                                .reason = CancelReason::kCancelOnDisconnect});
}

Bytes ClosedFrame(std::uint64_t report, SessionCloseReason reason,
                  std::uint32_t cancelled, std::uint64_t account = 0,
                  std::uint64_t request = 0) {
  return Frame(report, codec::SessionClosed{.account_id = account,
                                            .request_id = request,
                                            .reason = reason,
                                            .cancelled_orders = cancelled});
}

// The lapse records of the journal in `dir`, as (session, flags).
std::vector<std::pair<std::uint32_t, std::uint32_t>> Lapses(
    const std::string& dir) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> lapses;
  for (const JournalRecordCopy& r : ReadJournalRecords(dir)) {
    if ((r.flags & state::kRecordLapse) != 0) {
      lapses.emplace_back(r.session_id, r.flags);
    }
  }
  return lapses;
}

TEST(SessionLapse, ASilentSessionLapsesOnceAndOnlyCancelOnDisconnectCancels) {
  ScratchDir dir;
  std::vector<Bytes> cancelling_live;
  {
    auto service = RunningService::Start(LapseOptions(dir.Sub("journal")));
    ASSERT_NE(service, nullptr);
    TestClient cancelling(service->endpoint());
    TestClient keeping(service->endpoint());
    TestClient forever(service->endpoint());
    RestTwo(cancelling, kCancelling, 100);  // orders 1, 2
    RestTwo(keeping, kKeeping, 90);         // orders 3, 4
    RestTwo(forever, kForever, 80);         // orders 5, 6
    const auto started = std::chrono::steady_clock::now();
    // All three fall silent; the two with a liveness timeout lapse.
    ASSERT_TRUE(service->WaitFor(
        [](const ServiceStats& s) { return s.session_lapses == 2; }, 5000));
    EXPECT_GE(std::chrono::steady_clock::now() - started,
              std::chrono::milliseconds(900));
    // Reports still go to where the session was last heard.
    cancelling_live = cancelling.Frames(kCancelling, 3);
    ASSERT_EQ(cancelling_live.size(), 3u);
    EXPECT_FRAME_EQ(cancelling_live[0], CancelledFrame(3, 1, 1));
    EXPECT_FRAME_EQ(cancelling_live[1], CancelledFrame(4, 2, 2));
    EXPECT_FRAME_EQ(cancelling_live[2],
                    ClosedFrame(5, SessionCloseReason::kLapsed, 2));
    const std::vector<Bytes> keeping_live = keeping.Frames(kKeeping, 1);
    ASSERT_EQ(keeping_live.size(), 1u);
    EXPECT_FRAME_EQ(keeping_live[0],
                    ClosedFrame(3, SessionCloseReason::kLapsed, 0));
    EXPECT_TRUE(forever.Silent(50));
    // Closed: no second lapse while they stay silent.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    EXPECT_TRUE(cancelling.Silent(50));
    EXPECT_TRUE(keeping.Silent(50));
    // A command opens the session again; silent again, it lapses again.
    cancelling.Send(kCancelling, {Frame(3, Buy(3, 101))});  // order 7
    ASSERT_EQ(cancelling.Frames(kCancelling, 1).size(), 1u);
    ASSERT_TRUE(service->WaitFor(
        [](const ServiceStats& s) { return s.session_lapses == 3; }, 5000));
    const std::vector<Bytes> again = cancelling.Frames(kCancelling, 2);
    ASSERT_EQ(again.size(), 2u);
    EXPECT_FRAME_EQ(again[0], CancelledFrame(7, 7, 3));
    EXPECT_FRAME_EQ(again[1], ClosedFrame(8, SessionCloseReason::kLapsed, 1));
    ASSERT_TRUE(service->Stop().ok());
    EXPECT_EQ(service->final_stats().session_lapses, 3u);
  }
  // The journal holds the three lapses, flagged as the sessions were.
  using state::kRecordCancelOnDisconnect;
  using state::kRecordLapse;
  const auto lapses = Lapses(dir.Sub("journal"));
  ASSERT_EQ(lapses.size(), 3u);
  EXPECT_EQ(
      lapses[2],
      std::make_pair(kCancelling, kRecordLapse | kRecordCancelOnDisconnect));
  // Replayed: the same reports; the keeping and forever sessions' orders
  // are the books.
  const test_support::SessionReplay replay =
      ReplayJournalBySession(dir.Sub("journal"), engine::EngineConfig{});
  const std::vector<Bytes>& replayed =
      replay.reports_by_session.at(kCancelling);
  ASSERT_EQ(replayed.size(), 8u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_FRAME_EQ(replayed[2 + i], cancelling_live[i]);
  }
  ASSERT_EQ(replay.live_orders.size(), 4u);
  for (const engine::OrderInfo& order : replay.live_orders) {
    EXPECT_GE(order.order_id.value(), 3u);
    EXPECT_LE(order.order_id.value(), 6u);
  }
  // Records: 6 orders, the lapses of 41 and 42, order 7, 41's lapse again.
  // On the feed, each lapse deletes the orders it cancelled.
  ASSERT_EQ(replay.records, 10u);
  ASSERT_EQ(replay.feed_after.size(), 10u);
  EXPECT_EQ(replay.feed_after[6] - replay.feed_after[5], 2u);
  EXPECT_EQ(replay.feed_after[7] - replay.feed_after[6], 0u);
  EXPECT_EQ(replay.feed_after[9] - replay.feed_after[8], 1u);
}

// A service stopped between the client's last word and its timeout: the
// restarted service counts the silence from its start, lapses the session
// (its orders cancelled) and, restarted again, does not lapse it twice.
TEST(SessionLapse, ARestartBeforeTheTimeoutStillLapsesAndNeverTwice) {
  ScratchDir dir;
  {
    auto service = RunningService::Start(LapseOptions(dir.Sub("journal"), 2));
    ASSERT_NE(service, nullptr);
    TestClient client(service->endpoint());
    RestTwo(client, kCancelling, 100);
    ASSERT_TRUE(service->Stop().ok());
    EXPECT_EQ(service->final_stats().session_lapses, 0u);
  }
  {
    auto service = RunningService::Start(LapseOptions(dir.Sub("journal"), 2));
    ASSERT_NE(service, nullptr);
    const auto started = std::chrono::steady_clock::now();
    // The client never comes back: no datagram of it to this service.
    ASSERT_TRUE(service->WaitFor(
        [](const ServiceStats& s) { return s.session_lapses == 1; }, 6000));
    EXPECT_GE(std::chrono::steady_clock::now() - started,
              std::chrono::milliseconds(1900));
    ASSERT_TRUE(service->Stop().ok());
  }
  {
    auto service = RunningService::Start(LapseOptions(dir.Sub("journal"), 2));
    ASSERT_NE(service, nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(2600));
    ASSERT_TRUE(service->Stop().ok());
    EXPECT_EQ(service->final_stats().session_lapses, 0u)
        << "a closed session lapses again only after a command";
  }
  ASSERT_EQ(Lapses(dir.Sub("journal")).size(), 1u);
  const test_support::SessionReplay replay =
      ReplayJournalBySession(dir.Sub("journal"), engine::EngineConfig{});
  const std::vector<Bytes>& reports = replay.reports_by_session.at(kCancelling);
  ASSERT_EQ(reports.size(), 5u);
  EXPECT_FRAME_EQ(reports[2], CancelledFrame(3, 1, 1));
  EXPECT_FRAME_EQ(reports[3], CancelledFrame(4, 2, 2));
  EXPECT_FRAME_EQ(reports[4], ClosedFrame(5, SessionCloseReason::kLapsed, 2));
  EXPECT_TRUE(replay.live_orders.empty());
}

// Heartbeats are hearing from the session: one that only heartbeats, more
// often than its timeout, never lapses; once they stop, it does.
TEST(SessionLapse, HeartbeatsKeepASessionFromLapsing) {
  ScratchDir dir;
  auto service = RunningService::Start(LapseOptions(dir.Sub("journal")));
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());
  RestTwo(client, kCancelling, 100);
  for (std::uint64_t nonce = 1; nonce <= 8; ++nonce) {  // 2.4 s, timeout 1 s
    client.Send(kCancelling, {Frame(0, codec::Heartbeat{.nonce = nonce})});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  (void)client.Drain(kCancelling, 50);  // the HeartbeatAcks
  EXPECT_TRUE(service->WaitFor(
      [](const ServiceStats& s) {
        return s.heartbeats == 8 && s.session_lapses == 0;
      },
      1000));
  const auto stopped = std::chrono::steady_clock::now();
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.session_lapses == 1; }, 5000));
  EXPECT_GE(std::chrono::steady_clock::now() - stopped,
            std::chrono::milliseconds(300));
  ASSERT_TRUE(service->Stop().ok());
}

// An unlisted session (the [service] defaults) that gave its slot back is
// judged from when it was last heard, not from the service's start.
TEST(SessionLapse, ASessionThatGaveItsSlotBackLapsesFromWhenItWasLastHeard) {
  ScratchDir dir;
  ServiceOptions options = LapseOptions(dir.Sub("journal"));
  options.config.open_policy.liveness_seconds = 2;
  options.config.open_policy.cancel_on_disconnect = true;
  options.config.session_slot_idle_seconds = 0.3;
  auto service = RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  TestClient client(service->endpoint());
  constexpr std::uint32_t kUnlisted = 77;
  RestTwo(client, kUnlisted, 100);
  const auto heard = std::chrono::steady_clock::now();
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.sessions_recycled == 1; }, 3000));
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.session_lapses == 1; }, 5000));
  EXPECT_GE(std::chrono::steady_clock::now() - heard,
            std::chrono::milliseconds(1900));
  ASSERT_TRUE(service->Stop().ok());
  const test_support::SessionReplay replay =
      ReplayJournalBySession(dir.Sub("journal"), engine::EngineConfig{});
  EXPECT_TRUE(replay.live_orders.empty());
}

// A Goodbye closes at once: with cancel-on-disconnect the orders go first;
// without, they stay; either way the session, closed, does not lapse.
TEST(SessionLapse, AGoodbyeClosesAtOnceAndTheSessionDoesNotLapse) {
  ScratchDir dir;
  auto service = RunningService::Start(LapseOptions(dir.Sub("journal")));
  ASSERT_NE(service, nullptr);
  TestClient cancelling(service->endpoint());
  TestClient keeping(service->endpoint());
  RestTwo(cancelling, kCancelling, 100);
  RestTwo(keeping, kKeeping, 90);
  cancelling.Send(kCancelling,
                  {Frame(3, codec::Goodbye{.account_id = 7, .request_id = 9})});
  const std::vector<Bytes> bye = cancelling.Frames(kCancelling, 3);
  ASSERT_EQ(bye.size(), 3u);
  EXPECT_FRAME_EQ(bye[0], CancelledFrame(3, 1, 1));
  EXPECT_FRAME_EQ(bye[1], CancelledFrame(4, 2, 2));
  EXPECT_FRAME_EQ(bye[2],
                  ClosedFrame(5, SessionCloseReason::kGoodbye, 2, 7, 9));
  keeping.Send(kKeeping,
               {Frame(3, codec::Goodbye{.account_id = 7, .request_id = 10})});
  const std::vector<Bytes> kept = keeping.Frames(kKeeping, 1);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_FRAME_EQ(kept[0],
                  ClosedFrame(3, SessionCloseReason::kGoodbye, 0, 7, 10));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_EQ(service->final_stats().session_lapses, 0u);
  EXPECT_EQ(service->final_stats()
                .frames_in[static_cast<std::size_t>(Kind::kGoodbye)],
            2u);
  const test_support::SessionReplay replay =
      ReplayJournalBySession(dir.Sub("journal"), engine::EngineConfig{});
  EXPECT_EQ(replay.live_orders.size(), 2u);  // the keeping session's
}

}  // namespace
}  // namespace orderwire::service::end_to_end
