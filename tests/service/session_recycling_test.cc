// Unlisted sessions under a flood, end to end over loopback (docs/PROTOCOL.md
// "Admission", "Idle unlisted sessions give their slot back"): one source
// address cannot take every place for unlisted sessions; an idle unlisted
// session gives its place back to a new one, and when it comes back it
// continues at its next sequence with its reports (those made while it was
// away included) as the journal has them; a listed session keeps its place;
// a journal with more unlisted sessions than places restarts.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "codec/frame.h"
#include "codec/messages.h"
#include "config/service_config.h"
#include "gtest/gtest.h"
#include "net/udp.h"
#include "service/service.h"
#include "tests/support/bytes.h"
#include "tests/support/journal_replay.h"
#include "tests/support/orders.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::service {
namespace {

using config::ParseServiceConfig;
using config::ServiceConfig;

using codec::Kind;
using codec::Side;
using net::Endpoint;
using test_support::AcceptedFor;
using test_support::Bytes;
using test_support::Frame;
using test_support::Hex;
using test_support::Limit;
using test_support::RunningService;
using test_support::ScratchDir;
using test_support::TestClient;
using test_support::TestOptions;

#define EXPECT_FRAME_EQ(actual, expected) EXPECT_EQ(Hex(actual), Hex(expected))

std::uint64_t RecyclingRefused(const ServiceStats& stats, Admission admission) {
  return stats.refused[static_cast<std::size_t>(admission)];
}

Kind RecycledKindOf(const Bytes& frame) {
  return codec::LoadLE<Kind>(frame.data() + codec::kKindOffset);
}

ServiceConfig Config(const std::string& text) {
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(text);
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : ServiceConfig{};
}

// The flood, scaled down: with the default configuration (1,024
// places, 256 per source address), 1,500 new session ids from one socket
// take 256 places, and a new session from another address is admitted.
TEST(SessionRecycling, AFloodOfIdsFromOneSourceLeavesPlacesForOthers) {
  constexpr std::uint32_t kIds = 1500;
  ScratchDir dir;
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kNone));
  ASSERT_NE(service, nullptr);
  const ServiceConfig defaults;
  ASSERT_LT(defaults.max_sessions_per_source, kIds);
  TestClient flooder(service->endpoint());
  const codec::CancelByOrder cancel{.account_id = 1, .order_id = 1};
  for (std::uint32_t i = 0; i < kIds; i += 100) {
    for (std::uint32_t k = i; k < i + 100; ++k) {
      flooder.Send(1000 + k, {Frame(1, cancel)});
    }
    ASSERT_TRUE(service->WaitFor([&](const ServiceStats& s) {
      return s.datagrams_in >= i + 100;
    })) << "the service did not read the flood";
  }

  TestClient other(service->endpoint(), *Endpoint::Parse("127.0.0.2:0"));
  const codec::NewLimit order =
      Limit({.account_id = 7, .client_order_id = 1, .price = 10});
  other.Send(9, {Frame(1, order)});
  const std::vector<Bytes> reports = other.Frames(9, 1, 5000);
  ASSERT_EQ(reports.size(), 1u) << "a session from another address was not "
                                   "admitted after the flood";
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(1, 1, order));

  ASSERT_TRUE(service->Stop().ok());
  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.sessions, defaults.max_sessions_per_source + 1);
  EXPECT_EQ(RecyclingRefused(stats, Admission::kTooManyFromSource),
            kIds - defaults.max_sessions_per_source);
  EXPECT_EQ(RecyclingRefused(stats, Admission::kTooManySessions), 0u);
  EXPECT_EQ(stats.commands_applied, defaults.max_sessions_per_source + 1);
}

// The journal replayed: 6 records, and session 11's reports are the Accepted
// of `sell1` then `resent` (reports 2 to 4, as a retransmission brought
// them).
void ExpectSession11ReplaysAsReceived(const std::string& journal,
                                      const engine::EngineConfig& engine,
                                      const codec::NewLimit& sell1,
                                      const std::vector<Bytes>& resent) {
  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(journal, engine);
  EXPECT_EQ(replay.records, 6u);
  const std::vector<Bytes>& reports = replay.reports_by_session.at(11);
  ASSERT_EQ(reports.size(), 4u);
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(1, 1, sell1));
  for (std::size_t i = 1; i < 4; ++i) {
    EXPECT_FRAME_EQ(reports[i], resent[i - 1]);
  }
}

// Sessions 11 and 12 take both places; 13 is refused; once both are idle
// for session_slot_idle_seconds they give their places back and 13 gets
// one. 12 comes back and trades against 11's resting order while 11 is
// away; once 12 and 13 are idle too, 11 comes back from another port: its next
// command is taken (no SequenceGap) and answered with the next report sequence
// (the maker's Filled made meanwhile has the one before), and a retransmission
// brings every report from its command 2 on, the Filled included, as the
// journal replays them.
TEST(SessionRecycling, AnIdleSessionGivesItsPlaceBackAndComesBackWhereItWas) {
  ScratchDir dir;
  const ServiceConfig config = Config(
      "[service]\n"
      "max_sessions = 2\n"
      "session_slot_idle_seconds = 1\n");
  ServiceOptions options =
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch, config);
  const engine::EngineConfig engine = options.config.engine;
  auto service = RunningService::Start(options);
  ASSERT_NE(service, nullptr);

  const codec::NewLimit sell1 =
      Limit({.client_order_id = 1, .side = Side::kSell, .quantity = 5});
  const codec::NewLimit sell2 = Limit(
      {.client_order_id = 2, .side = Side::kSell, .price = 200, .quantity = 5});
  const codec::NewLimit sell3 = Limit(
      {.client_order_id = 3, .side = Side::kSell, .price = 300, .quantity = 5});
  const codec::NewLimit bid =
      Limit({.account_id = 2, .client_order_id = 1, .price = 50});
  const codec::NewLimit cross =
      Limit({.account_id = 2, .client_order_id = 2, .quantity = 2});
  const codec::NewLimit late =
      Limit({.account_id = 3, .client_order_id = 1, .price = 40});
  TestClient first(service->endpoint());
  first.Send(11, {Frame(1, sell1), Frame(2, sell2)});
  std::vector<Bytes> got = first.Frames(11, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_FRAME_EQ(got[0], AcceptedFor(1, 1, sell1));
  EXPECT_FRAME_EQ(got[1], AcceptedFor(2, 2, sell2));
  TestClient second(service->endpoint());
  second.Send(12, {Frame(1, bid)});
  got = second.Frames(12, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FRAME_EQ(got[0], AcceptedFor(1, 3, bid));

  // Both places are taken: 13 is refused.
  TestClient third(service->endpoint());
  third.Send(13, {Frame(1, late)});
  EXPECT_TRUE(third.Silent(200));
  ASSERT_TRUE(service->WaitFor([](const ServiceStats& s) {
    return s.refused[static_cast<std::size_t>(Admission::kTooManySessions)] ==
           1;
  }));

  // Idle: both give their places back; 13 now gets one.
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) {
        return s.sessions_recycled == 2 && s.sessions == 0;
      },
      5000))
      << "the idle sessions kept their places";
  third.Send(13, {Frame(1, late)});
  got = third.Frames(13, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FRAME_EQ(got[0], AcceptedFor(1, 4, late));

  // 12 comes back (its command 2, the next one) and buys from 11's order 1:
  // 11's maker Filled is made while 11 holds no place.
  second.Send(12, {Frame(2, cross)});
  got = second.Frames(12, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(
      codec::LoadLE<std::uint64_t>(got[0].data() + codec::kSequenceOffset), 2u);

  // 13 and 12 go idle in turn and leave both places free.
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) {
        return s.sessions_recycled == 4 && s.sessions == 0;
      },
      5000));

  // 11 comes back from another port, with its command 3.
  TestClient back(service->endpoint());
  back.Send(11, {Frame(3, sell3)});
  got = back.Frames(11, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FRAME_EQ(got[0], AcceptedFor(4, 6, sell3));
  EXPECT_TRUE(back.Silent(100)) << "more than the one report";
  // A retransmission of command 2: reports 2, 3 (the Filled), 4.
  back.Send(11, {Frame(2, sell2)});
  got = back.Frames(11, 3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_FRAME_EQ(got[0], AcceptedFor(2, 2, sell2));
  EXPECT_EQ(RecycledKindOf(got[1]), Kind::kFilled);
  EXPECT_FRAME_EQ(got[2], AcceptedFor(4, 6, sell3));
  // The port it came from first is not its endpoint any more.
  first.Send(11, {Frame(4, sell3)});
  EXPECT_TRUE(first.Silent(100));

  ASSERT_TRUE(service->Stop().ok());
  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.commands_applied, 6u);
  EXPECT_EQ(stats.sequence_gaps_sent, 0u);
  EXPECT_EQ(stats.duplicates, 1u);
  EXPECT_EQ(RecyclingRefused(stats, Admission::kPinnedElsewhere), 1u);
  ExpectSession11ReplaysAsReceived(dir.Sub("journal"), engine, sell1, got);
}

// A session that heartbeats is not idle (docs/CONTROLS.md "Heartbeats"):
// with two places and a 1 s idle limit, 21 heartbeats every 200 ms and
// keeps its place while 22, silent, gives its place back.
TEST(SessionRecycling, AHeartbeatingSessionKeepsItsPlace) {
  ScratchDir dir;
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch,
                  Config("[service]\n"
                         "max_sessions = 2\n"
                         "session_slot_idle_seconds = 1\n")));
  ASSERT_NE(service, nullptr);
  TestClient alive(service->endpoint());
  TestClient silent(service->endpoint());
  alive.Send(21, {Frame(1, Limit({.client_order_id = 1}))});
  ASSERT_EQ(alive.Frames(21, 1).size(), 1u);
  silent.Send(22, {Frame(1, Limit({.account_id = 2, .client_order_id = 1}))});
  ASSERT_EQ(silent.Frames(22, 1).size(), 1u);
  for (std::uint64_t nonce = 1; nonce <= 12; ++nonce) {
    alive.Send(21, {Frame(0, codec::Heartbeat{.nonce = nonce})});
    const std::vector<Bytes> ack = alive.Frames(21, 1);
    ASSERT_EQ(ack.size(), 1u);
    EXPECT_FRAME_EQ(ack[0], Frame(0, codec::HeartbeatAck{.nonce = nonce,
                                                         .expected_sequence = 2,
                                                         .next_report = 2}));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(service->WaitFor([](const ServiceStats& s) {
    return s.sessions_recycled == 1 && s.sessions == 1;
  }));
  // 21 still holds its endpoint: its next command is answered there.
  alive.Send(21, {Frame(2, Limit({.client_order_id = 2}))});
  ASSERT_EQ(alive.Frames(21, 1).size(), 1u);
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_EQ(service->final_stats().heartbeats, 12u);
  EXPECT_EQ(service->final_stats().heartbeat_acks_sent, 12u);
  EXPECT_EQ(service->final_stats().commands_applied, 3u);
}

// A listed session is never given up: idle as long as an unlisted one that
// is, it keeps its endpoint (another port is still refused for it).
TEST(SessionRecycling, AListedSessionKeepsItsPlace) {
  ScratchDir dir;
  const ServiceConfig config = Config(
      "[service]\n"
      "max_sessions = 1\n"
      "open_sessions = true\n"
      "session_slot_idle_seconds = 0.2\n"
      "[sessions.5]\n"
      "accounts = \"any\"\n");
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kNone, config));
  ASSERT_NE(service, nullptr);
  const codec::NewLimit order =
      Limit({.account_id = 7, .client_order_id = 1, .price = 10});
  TestClient listed(service->endpoint());
  listed.Send(5, {Frame(1, order)});
  ASSERT_EQ(listed.Frames(5, 1).size(), 1u);
  TestClient unlisted(service->endpoint());
  unlisted.Send(20, {Frame(1, order)});
  ASSERT_EQ(unlisted.Frames(20, 1).size(), 1u);
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.sessions_recycled == 1; }, 5000));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));

  TestClient hijacker(service->endpoint());
  hijacker.Send(5, {Frame(2, order)});
  EXPECT_TRUE(hijacker.Silent(100));
  listed.Send(5, {Frame(2, order)});
  EXPECT_EQ(listed.Frames(5, 1).size(), 1u);
  ASSERT_TRUE(service->Stop().ok());
  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.sessions_recycled, 1u);
  EXPECT_EQ(stats.sessions, 1u);
  EXPECT_EQ(RecyclingRefused(stats, Admission::kPinnedElsewhere), 1u);
}

// Places given back let the journal hold more unlisted sessions than there
// are places: it restarts all the same, and each session continues when it
// comes back.
TEST(SessionRecycling, AJournalWithMoreSessionsThanPlacesRestarts) {
  ScratchDir dir;
  const ServiceConfig config = Config(
      "[service]\n"
      "max_sessions = 1\n"
      "session_slot_idle_seconds = 0.1\n");
  const ServiceOptions options =
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch, config);
  const codec::NewLimit order =
      Limit({.account_id = 7, .client_order_id = 1, .price = 10});
  {
    auto service = RunningService::Start(options);
    ASSERT_NE(service, nullptr);
    for (std::uint32_t id = 1; id <= 3; ++id) {
      TestClient client(service->endpoint());
      client.Send(id, {Frame(1, order)});
      ASSERT_EQ(client.Frames(id, 1).size(), 1u) << "session " << id;
      ASSERT_TRUE(service->WaitFor(
          [id](const ServiceStats& s) { return s.sessions_recycled == id; },
          5000));
    }
    ASSERT_TRUE(service->Stop().ok());
  }
  auto service = RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  EXPECT_NE(service->service().startup_report().find("3 session(s)"),
            std::string::npos)
      << service->service().startup_report();
  TestClient client(service->endpoint());
  const codec::NewLimit next =
      Limit({.account_id = 7, .client_order_id = 2, .price = 11});
  client.Send(2, {Frame(2, next)});
  const std::vector<Bytes> got = client.Frames(2, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FRAME_EQ(got[0], AcceptedFor(2, 4, next));
  ASSERT_TRUE(service->Stop().ok());
}

}  // namespace
}  // namespace orderwire::service
