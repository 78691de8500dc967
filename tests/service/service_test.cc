// End-to-end tests of the UDP service over loopback, in one process: a
// Service bound to 127.0.0.1 port 0 runs in its own thread, and raw test
// clients (a UdpSocket each, datagrams built with codec::DatagramBuilder or
// byte by byte for the malformed ones) send every byte and check every byte
// that comes back. docs/PROTOCOL.md "Datagram", "Sessions and sequence numbers"
// and "Durability" are the contract under test.
//
// Counters are read race-free: ServiceOptions::on_interval runs on the
// service's thread and copies stats() into a snapshot under a mutex; after
// Stop() (the thread joined) stats() is read directly. Each test has its own
// journal directory (test_support::ScratchDir). The harness (TestOptions,
// RunningService, TestClient) is tests/support/service_harness.h, the helpers
// these files share service_test_support.h.
//
// Here: orders in and reports out, a clean shutdown and a restart, several
// sessions trading at once. Duplicates, gaps and resends are in
// service_resend_test.cc; what the service refuses (malformed datagrams,
// foreign accounts, sessions not admitted, options) in
// service_refusal_test.cc.
#include "service/service.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/run_client.h"
#include "codec/datagram.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "engine/config.h"
#include "engine/workload.h"
#include "gtest/gtest.h"
#include "state/state_machine.h"
#include "tests/service/service_test_support.h"
#include "tests/support/files.h"
#include "tests/support/journal_replay.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::service::end_to_end {
namespace {

// ---------------------------------------------------------------------------
// Order in, Accepted out.

TEST(ServiceEndToEnd, ANewLimitIsAnsweredWithAcceptedUnderItsSession) {
  ScratchDir dir;
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch));
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());

  // The golden NewLimit of docs/PROTOCOL.md, in the golden datagram's session.
  const codec::NewLimit order = Limit({.account_id = 7,
                                       .client_order_id = 1001,
                                       .instrument_id = 42,
                                       .price = 10050,
                                       .quantity = 300});
  client.Send(0xCAFE, {Frame(1, order)});

  const std::optional<Bytes> datagram = client.Receive(5000);
  ASSERT_TRUE(datagram.has_value());
  const auto view =
      codec::DatagramView::Parse(*datagram, codec::FrameFilter::kReports);
  ASSERT_TRUE(view.ok()) << codec::Name(view.error());
  const codec::DatagramHeader header = view->header();
  EXPECT_EQ(header.magic, codec::kDatagramMagic);
  EXPECT_EQ(header.version, 1);
  EXPECT_EQ(header.flags, 0);
  EXPECT_EQ(header.session_id, 0xCAFEu);
  EXPECT_EQ(header.frame_count, 1);
  EXPECT_EQ(header.reserved, 0);
  // Report sequence 1, order id 1, every field of the order.
  const Bytes expected = AcceptedFor(1, 1, order);
  EXPECT_FRAME_EQ(view->frame_bytes(), expected);
  EXPECT_EQ(datagram->size(), codec::kDatagramHeaderSize + 55);

  ASSERT_TRUE(service->Stop().ok());
  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.datagrams_in, 1u);
  EXPECT_EQ(stats.datagrams_out, 1u);
  EXPECT_EQ(stats.bytes_out, datagram->size());
  EXPECT_EQ(stats.frames_in[static_cast<std::size_t>(Kind::kNewLimit)], 1u);
  EXPECT_EQ(stats.frames_out[static_cast<std::size_t>(Kind::kAccepted)], 1u);
  EXPECT_EQ(Sum(stats.frames_out), 1u);
  EXPECT_EQ(stats.commands_applied, 1u);
  EXPECT_EQ(stats.durable_index, 1u);
  EXPECT_EQ(stats.sessions, 1u);
  EXPECT_TRUE(client.Silent(0));
}

// ---------------------------------------------------------------------------
// A crossing order: Filled to both sessions.

// The engine's order of the reports of the two crosses in `replay`: the
// maker's Filled before the taker's; the maker's command journaled first.
void ExpectTheMakersFillsComeFirst(const Replay& replay, std::uint32_t maker,
                                   std::uint32_t taker) {
  ASSERT_EQ(replay.reports.size(), 7u);
  EXPECT_EQ(KindOf(replay.reports[2]), Kind::kFilled);
  EXPECT_EQ(codec::View<codec::Filled>::Parse(replay.reports[2])
                ->Get<&codec::Filled::liquidity>(),
            Liquidity::kMaker);
  EXPECT_EQ(codec::View<codec::Filled>::Parse(replay.reports[3])
                ->Get<&codec::Filled::liquidity>(),
            Liquidity::kTaker);
  EXPECT_EQ(codec::View<codec::Filled>::Parse(replay.reports[5])
                ->Get<&codec::Filled::liquidity>(),
            Liquidity::kMaker);
  EXPECT_EQ(replay.records[0].session_id, maker);
  EXPECT_EQ(replay.records[1].session_id, taker);
}

TEST(ServiceEndToEnd, ACrossingOrderFillsBothSessionsWithOneMatchId) {
  ScratchDir dir;
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kNone));
  ASSERT_NE(service, nullptr);
  TestClient maker(service->endpoint());
  TestClient taker(service->endpoint());
  constexpr std::uint32_t kMaker = 11;
  constexpr std::uint32_t kTaker = 12;

  const codec::NewLimit sell = Limit({.client_order_id = 501,
                                      .instrument_id = 5,
                                      .side = Side::kSell,
                                      .quantity = 10});
  maker.Send(kMaker, {Frame(1, sell)});
  std::vector<Bytes> maker_reports = maker.Frames(kMaker, 1);
  ASSERT_EQ(maker_reports.size(), 1u);
  EXPECT_FRAME_EQ(maker_reports[0], AcceptedFor(1, 1, sell));

  // The taker buys 4 at a better price: it trades at the maker's price.
  const codec::NewLimit buy = Limit({.account_id = 2,
                                     .client_order_id = 601,
                                     .instrument_id = 5,
                                     .price = 101,
                                     .quantity = 4});
  taker.Send(kTaker, {Frame(1, buy)});
  std::vector<Bytes> taker_reports = taker.Frames(kTaker, 2);
  ASSERT_EQ(taker_reports.size(), 2u);
  EXPECT_FRAME_EQ(taker_reports[0], AcceptedFor(1, 2, buy));
  EXPECT_FRAME_EQ(taker_reports[1],
                  Frame(2, codec::Filled{.order_id = 2,
                                         .account_id = 2,
                                         .client_order_id = 601,
                                         .match_id = 1,
                                         .instrument_id = 5,
                                         .side = Side::kBuy,
                                         .liquidity = Liquidity::kTaker,
                                         .price = 100,
                                         .quantity = 4,
                                         .leaves_quantity = 0}));
  // The maker's Filled goes to the maker's session, as its report 2.
  maker_reports = maker.Frames(kMaker, 1);
  ASSERT_EQ(maker_reports.size(), 1u);
  EXPECT_FRAME_EQ(maker_reports[0],
                  Frame(2, codec::Filled{.order_id = 1,
                                         .account_id = 1,
                                         .client_order_id = 501,
                                         .match_id = 1,
                                         .instrument_id = 5,
                                         .side = Side::kSell,
                                         .liquidity = Liquidity::kMaker,
                                         .price = 100,
                                         .quantity = 4,
                                         .leaves_quantity = 6}));

  // A second cross: each session's report numbering carries on on its own.
  const codec::NewLimit buy2 = Limit({.account_id = 2,
                                      .client_order_id = 602,
                                      .instrument_id = 5,
                                      .quantity = 3});
  taker.Send(kTaker, {Frame(2, buy2)});
  taker_reports = taker.Frames(kTaker, 2);
  ASSERT_EQ(taker_reports.size(), 2u);
  EXPECT_FRAME_EQ(taker_reports[0], AcceptedFor(3, 3, buy2));
  EXPECT_EQ(KindOf(taker_reports[1]), Kind::kFilled);
  EXPECT_EQ(SequenceOf(taker_reports[1]), 4u);
  maker_reports = maker.Frames(kMaker, 1);
  ASSERT_EQ(maker_reports.size(), 1u);
  EXPECT_EQ(SequenceOf(maker_reports[0]), 3u);
  const auto maker_fill =
      codec::View<codec::Filled>::Parse(maker_reports[0])->ToModel();
  const auto taker_fill =
      codec::View<codec::Filled>::Parse(taker_reports[1])->ToModel();
  EXPECT_EQ(maker_fill.match_id, 2u);
  EXPECT_EQ(taker_fill.match_id, maker_fill.match_id);
  EXPECT_EQ(maker_fill.leaves_quantity, 3u);
  EXPECT_EQ(taker_fill.leaves_quantity, 0u);
  EXPECT_TRUE(maker.Silent(0));
  EXPECT_TRUE(taker.Silent(0));

  ASSERT_TRUE(service->Stop().ok());
  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.sessions, 2u);
  EXPECT_EQ(stats.frames_out[static_cast<std::size_t>(Kind::kFilled)], 4u);
  ExpectTheMakersFillsComeFirst(
      ReplayJournal(dir.Sub("journal"), engine::EngineConfig{}), kMaker,
      kTaker);
}

// ---------------------------------------------------------------------------
// Clean shutdown, and restart.

TEST(ServiceEndToEnd, ACleanShutdownAppliesAndAnswersEverythingItRead) {
  ScratchDir dir;
  const ServiceOptions options =
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch);
  const engine::EngineConfig engine_config = options.config.engine;
  auto service = RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());
  constexpr std::uint32_t kSession = 17;
  constexpr std::size_t kCommands = 3000;
  const Stream stream = MixedStream(kSession, kCommands, 11);
  const std::size_t datagrams = stream.datagrams.size();

  // Stop as soon as the service has read the last datagram: whatever it has
  // journaled but not yet applied and answered is the shutdown's to finish.
  service->StopWhen([datagrams](const ServiceStats& s) {
    return s.datagrams_in >= datagrams;
  });
  for (const Bytes& d : stream.datagrams) client.Send(d);
  ASSERT_TRUE(service->WaitFor(
      [datagrams](const ServiceStats& s) {
        return s.datagrams_in >= datagrams;
      },
      10000));
  const absl::Status run = service->Stop();
  ASSERT_TRUE(run.ok()) << run;
  const ServiceStats at_stop = service->stats_at_stop();
  EXPECT_EQ(at_stop.datagrams_in, datagrams);

  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.datagrams_in, datagrams);
  EXPECT_EQ(stats.commands_applied, kCommands);
  EXPECT_EQ(stats.durable_index, kCommands);
  EXPECT_EQ(stats.last_index, kCommands);
  EXPECT_EQ(Sum(stats.frames_in), kCommands);
  EXPECT_EQ(stats.duplicates, 0u);
  EXPECT_EQ(stats.gaps, 0u);
  EXPECT_EQ(stats.send_failures, 0u);
  std::printf("at stop: %llu of %llu commands applied, durable index %llu\n",
              static_cast<unsigned long long>(at_stop.commands_applied),
              static_cast<unsigned long long>(kCommands),
              static_cast<unsigned long long>(at_stop.durable_index));

  // Every report was sent before Run() returned: all of them are waiting in
  // the client's socket, and they are exactly what replaying the journal
  // gives, in order.
  const std::vector<Bytes> received = client.Drain(kSession, 50);
  EXPECT_EQ(received.size(), Sum(stats.frames_out));
  const Replay replay = ReplayJournal(dir.Sub("journal"), engine_config);
  ExpectJournalHolds(replay, kSession, stream.frames);
  ASSERT_EQ(received.size(), replay.reports.size());
  for (std::size_t i = 0; i < received.size(); ++i) {
    ASSERT_EQ(Hex(received[i]), Hex(replay.reports[i])) << "report " << i + 1;
  }
}

TEST(ServiceEndToEnd, ARestartRecoversSessionsAndReportsFromTheJournal) {
  ScratchDir dir;
  constexpr std::uint32_t kSession = 23;
  const codec::NewLimit sell = Limit({.client_order_id = 1,
                                      .instrument_id = 8,
                                      .side = Side::kSell,
                                      .price = 300,
                                      .quantity = 5});
  const codec::NewLimit buy = Limit({.account_id = 2,
                                     .client_order_id = 1,
                                     .instrument_id = 8,
                                     .price = 300,
                                     .quantity = 2});
  std::vector<Bytes> first_run;
  {
    auto service = RunningService::Start(
        TestOptions(dir.Sub("journal"), journal::Durability::kBatch));
    ASSERT_NE(service, nullptr);
    TestClient client(service->endpoint());
    client.Send(kSession, {Frame(1, sell), Frame(2, buy)});
    // Accepted, Accepted, Filled (maker), Filled (taker).
    first_run = client.Frames(kSession, 4);
    ASSERT_EQ(first_run.size(), 4u);
    for (std::uint64_t i = 0; i < 4; ++i)
      EXPECT_EQ(SequenceOf(first_run[i]), i + 1);
    ASSERT_TRUE(service->Stop().ok());
  }
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch));
  ASSERT_NE(service, nullptr);
  // The session is the journal's (replayed), but takes a place in the
  // session table only when it is heard from again.
  EXPECT_TRUE(service->WaitFor([](const ServiceStats& s) {
    return s.sessions == 0 && s.replayed == 2;
  })) << "the counters after a restart";
  TestClient client(service->endpoint());  // a new port: pinned afresh
  // A retransmission of command 2 gets its reports again, from history
  // rebuilt by the replay: the same bytes as the first time.
  client.Send(kSession, {Frame(2, buy)});
  const std::vector<Bytes> resent = client.Frames(kSession, 3);
  ASSERT_EQ(resent.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_FRAME_EQ(resent[i], first_run[1 + i]);
  // The session carries on: 4 is a gap (3 expected), 3 is report 5.
  const codec::CancelByOrder cancel{.account_id = 1, .order_id = 1};
  client.Send(kSession, {Frame(4, cancel)});
  std::vector<Bytes> reports = client.Frames(kSession, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], Frame(0, codec::SequenceGap{3}));
  client.Send(kSession, {Frame(3, cancel)});
  reports = client.Frames(kSession, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(
      reports[0],
      Frame(5, codec::Cancelled{.order_id = 1,
                                .account_id = 1,
                                .client_order_id = 1,
                                .instrument_id = 8,
                                .cancelled_quantity = 3,
                                .reason = codec::CancelReason::kRequested}));
  ASSERT_TRUE(service->Stop().ok());
  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.replayed, 2u);
  EXPECT_EQ(stats.commands_applied, 3u);  // 2 replayed + 1 new
  EXPECT_EQ(stats.duplicates, 1u);
  EXPECT_EQ(stats.reports_resent, 3u);
  EXPECT_EQ(stats.sessions, 1u);  // back
}

// A MassCancel (docs/CONTROLS.md) over the wire: the sending session's
// orders of the account go, in id order, then its MassCancelDone; another
// session's order of the same account stays. After a restart the journal
// gives the same reports and books, and the service resends them from it.
TEST(ServiceEndToEnd, AMassCancelCancelsOnlyTheSessionsOrdersAndReplays) {
  ScratchDir dir;
  constexpr std::uint32_t kMine = 31;
  constexpr std::uint32_t kOther = 32;
  const auto buy = [](std::uint64_t coid, std::uint32_t instrument,
                      std::int64_t price) {
    return Limit({.account_id = 7,
                  .client_order_id = coid,
                  .instrument_id = instrument,
                  .price = price,
                  .quantity = coid});
  };
  const codec::MassCancel mass_cancel{
      .account_id = 7,
      .request_id = 77,
      .instrument_id = 0,
      .side = codec::MassCancelSide::kBoth,
      .scope = codec::MassCancelScope::kAccount};
  std::vector<Bytes> live;
  {
    auto service = RunningService::Start(
        TestOptions(dir.Sub("journal"), journal::Durability::kBatch));
    ASSERT_NE(service, nullptr);
    TestClient mine(service->endpoint());
    TestClient other(service->endpoint());
    other.Send(kOther, {Frame(1, buy(9, 5, 100))});  // order 1
    ASSERT_EQ(other.Frames(kOther, 1).size(), 1u);
    // Orders 2, 3, 4; the best (order 3) not first.
    mine.Send(kMine, {Frame(1, buy(1, 5, 100)), Frame(2, buy(2, 6, 101)),
                      Frame(3, buy(3, 5, 99))});
    ASSERT_EQ(mine.Frames(kMine, 3).size(), 3u);
    mine.Send(kMine, {Frame(4, mass_cancel)});
    live = mine.Frames(kMine, 4);
    ASSERT_EQ(live.size(), 4u);
    const auto cancelled = [](std::uint64_t sequence, std::uint64_t order_id,
                              std::uint64_t coid, std::uint32_t instrument) {
      return Frame(sequence, codec::Cancelled{
                                 .order_id = order_id,
                                 .account_id = 7,
                                 .client_order_id = coid,
                                 .instrument_id = instrument,
                                 .cancelled_quantity = coid,
                                 .reason = codec::CancelReason::kMassCancel});
    };
    EXPECT_FRAME_EQ(live[0], cancelled(4, 2, 1, 5));
    EXPECT_FRAME_EQ(live[1], cancelled(5, 3, 2, 6));
    EXPECT_FRAME_EQ(live[2], cancelled(6, 4, 3, 5));
    EXPECT_FRAME_EQ(live[3],
                    Frame(7, codec::MassCancelDone{
                                 .account_id = 7,
                                 .request_id = 77,
                                 .instrument_id = 0,
                                 .side = codec::MassCancelSide::kBoth,
                                 .scope = codec::MassCancelScope::kAccount,
                                 .cancelled_orders = 3}));
    EXPECT_TRUE(other.Silent(50)) << "the other session hears nothing";
    ASSERT_TRUE(service->Stop().ok());
    EXPECT_EQ(service->final_stats()
                  .frames_in[static_cast<std::size_t>(Kind::kMassCancel)],
              1u);
  }
  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(dir.Sub("journal"),
                                           engine::EngineConfig{});
  ASSERT_EQ(replay.reports_by_session.at(kMine).size(), 7u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_FRAME_EQ(replay.reports_by_session.at(kMine)[3 + i], live[i]);
  }
  ASSERT_EQ(replay.live_orders.size(), 1u);
  EXPECT_EQ(replay.live_orders[0].order_id.value(), 1u);
  // Restarted, the service answers a retransmitted MassCancel from the
  // history the journal rebuilt: the same four reports.
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch));
  ASSERT_NE(service, nullptr);
  TestClient mine(service->endpoint());
  mine.Send(kMine, {Frame(4, mass_cancel)});
  const std::vector<Bytes> resent = mine.Frames(kMine, 4);
  ASSERT_EQ(resent.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_FRAME_EQ(resent[i], live[i]);
  ASSERT_TRUE(service->Stop().ok());
}

// Order status (docs/CONTROLS.md): journaled and sequenced like every
// command, answered with the order as it rests and what it traded; after a
// restart a retransmitted request gets the same bytes (from the history),
// a new one the same answer (from the executed quantity the journal
// rebuilt), and so does a replay.
TEST(ServiceEndToEnd, AnOrderStatusIsAnsweredJournaledAndReplayed) {
  ScratchDir dir;
  constexpr std::uint32_t kMaker = 51;
  constexpr std::uint32_t kTaker = 52;
  const codec::OrderStatusRequest request{
      .account_id = 7, .order_id = 1, .client_order_id = 0};
  const Bytes expected =
      Frame(3, codec::OrderStatus{.order_id = 1,
                                  .account_id = 7,
                                  .client_order_id = 1,
                                  .instrument_id = 5,
                                  .side = Side::kBuy,
                                  .state = codec::OrderState::kLive,
                                  .price = 100,
                                  .leaves_quantity = 60,
                                  .executed_quantity = 40});
  {
    auto service = RunningService::Start(
        TestOptions(dir.Sub("journal"), journal::Durability::kBatch));
    ASSERT_NE(service, nullptr);
    TestClient maker(service->endpoint());
    TestClient taker(service->endpoint());
    maker.Send(kMaker, {Frame(1, Limit({.account_id = 7,
                                        .client_order_id = 1,
                                        .instrument_id = 5,
                                        .price = 100,
                                        .quantity = 100}))});
    ASSERT_EQ(maker.Frames(kMaker, 1).size(), 1u);
    taker.Send(kTaker, {Frame(1, Limit({.account_id = 8,
                                        .client_order_id = 1,
                                        .instrument_id = 5,
                                        .side = Side::kSell,
                                        .price = 100,
                                        .quantity = 40}))});
    ASSERT_EQ(taker.Frames(kTaker, 2).size(), 2u);  // Accepted, Filled
    ASSERT_EQ(maker.Frames(kMaker, 1).size(), 1u);  // the maker's Filled
    maker.Send(kMaker, {Frame(2, request)});
    const std::vector<Bytes> answer = maker.Frames(kMaker, 1);
    ASSERT_EQ(answer.size(), 1u);
    EXPECT_FRAME_EQ(answer[0], expected);
    ASSERT_TRUE(service->Stop().ok());
    EXPECT_EQ(
        service->final_stats()
            .frames_in[static_cast<std::size_t>(Kind::kOrderStatusRequest)],
        1u);
  }
  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(dir.Sub("journal"),
                                           engine::EngineConfig{});
  ASSERT_EQ(replay.reports_by_session.at(kMaker).size(), 3u);
  EXPECT_FRAME_EQ(replay.reports_by_session.at(kMaker)[2], expected);
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch));
  ASSERT_NE(service, nullptr);
  TestClient maker(service->endpoint());
  maker.Send(kMaker, {Frame(2, request)});
  const std::vector<Bytes> resent = maker.Frames(kMaker, 1);
  ASSERT_EQ(resent.size(), 1u);
  EXPECT_FRAME_EQ(resent[0], expected);
  // A new request, answered by the engine the journal rebuilt.
  maker.Send(kMaker, {Frame(3, request)});
  const std::vector<Bytes> again = maker.Frames(kMaker, 1);
  ASSERT_EQ(again.size(), 1u);
  Bytes renumbered = expected;
  codec::StoreLE(renumbered.data() + codec::kSequenceOffset, std::uint64_t{4});
  EXPECT_FRAME_EQ(again[0], renumbered);
  ASSERT_TRUE(service->Stop().ok());
}

// Heartbeats (docs/CONTROLS.md): answered with the session's next command
// and report sequences, never journaled; one before commands in a
// datagram is answered after them, one after the run ends it; a session
// with no state gets 1 and 1 and keeps none.
TEST(ServiceEndToEnd, AHeartbeatIsAnsweredWithTheSessionsNextSequences) {
  ScratchDir dir;
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch));
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());
  const auto ack = [](std::uint64_t nonce, std::uint64_t expected,
                      std::uint64_t next_report) {
    return Frame(0, codec::HeartbeatAck{.nonce = nonce,
                                        .expected_sequence = expected,
                                        .next_report = next_report});
  };
  // No state yet: 1 and 1, and nothing kept.
  client.Send(41, {Frame(0, codec::Heartbeat{.nonce = 7})});
  std::vector<Bytes> got = client.Frames(41, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FRAME_EQ(got[0], ack(7, 1, 1));
  EXPECT_TRUE(service->WaitFor([](const ServiceStats& s) {
    return s.heartbeats == 1 && s.sessions == 0;
  }));
  // Before two commands: answered at once, when they are journaled (in
  // expected_sequence) and not yet durable (no report made: next_report
  // 1); their reports follow. A heartbeat's own sequence means nothing.
  const codec::NewLimit buy = Limit({.client_order_id = 1, .price = 90});
  const codec::NewLimit sell =
      Limit({.account_id = 2, .client_order_id = 1, .side = Side::kSell});
  client.Send(41, {Frame(5, codec::Heartbeat{.nonce = 8}), Frame(1, buy),
                   Frame(2, sell)});
  got = client.Frames(41, 3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_FRAME_EQ(got[0], ack(8, 3, 1));
  EXPECT_FRAME_EQ(got[1], AcceptedFor(1, 1, buy));
  EXPECT_FRAME_EQ(got[2], AcceptedFor(2, 2, sell));
  // After a command: the run ends at it, and what follows is dropped.
  const codec::NewLimit third = Limit({.client_order_id = 3, .price = 80});
  client.Send(41, {Frame(3, third), Frame(0, codec::Heartbeat{.nonce = 9}),
                   Frame(4, Limit({.client_order_id = 4, .price = 70}))});
  got = client.Frames(41, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FRAME_EQ(got[0], AcceptedFor(3, 3, third));
  EXPECT_TRUE(client.Silent(100)) << "answered a heartbeat after the run";
  client.Send(41, {Frame(0, codec::Heartbeat{.nonce = 10})});
  got = client.Frames(41, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FRAME_EQ(got[0], ack(10, 4, 4));
  ASSERT_TRUE(service->Stop().ok());
  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.commands_applied, 3u);
  EXPECT_EQ(stats.durable_index, 3u) << "a heartbeat was journaled";
  EXPECT_EQ(stats.heartbeats, 3u);
  EXPECT_EQ(stats.heartbeat_acks_sent, 3u);
  EXPECT_EQ(stats.frames_out[static_cast<std::size_t>(Kind::kHeartbeatAck)],
            3u);
}

// ---------------------------------------------------------------------------
// Several sessions at once: the protocol gap of two `submit --workload
// mixed` clients on shared accounts (docs/PROTOCOL.md "Sessions and sequence
// numbers").

// Three go-back-N clients run `mixed` at once on three sessions that trade
// the same 64 accounts, so each tries to cancel and replace orders another
// session entered. Every client checks every acknowledgement against its
// command (RunClient fails on the first that does not answer it). Then:
// live == replay == restart, per session, byte for byte.
TEST(ServiceEndToEnd, SessionsSharingAccountsAreEachAnsweredInOrder) {
  ScratchDir dir;
  const ServiceOptions options =
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch);
  const engine::EngineConfig engine_config = options.config.engine;
  auto service = RunningService::Start(options);
  ASSERT_NE(service, nullptr);

  constexpr std::uint32_t kSessions = 3;
  constexpr std::size_t kCommands = 20'000;
  std::vector<std::vector<std::byte>> inputs;
  std::vector<std::FILE*> files;
  std::vector<absl::StatusOr<ClientResult>> results(
      kSessions, absl::UnknownError("not run"));
  for (std::uint32_t s = 0; s < kSessions; ++s) {
    inputs.push_back(workload::EncodeCommands(
        workload::Generate(workload::Workload::kMixed, kCommands, 100 + s)));
    files.push_back(std::tmpfile());
    ASSERT_NE(files.back(), nullptr);
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (std::uint32_t s = 0; s < kSessions; ++s) {
    threads.emplace_back([&, s] {
      ClientOptions client;
      client.target = service->endpoint();
      client.session_id = 40 + s;
      client.window = 512;
      client.reports_out = files[s];
      results[s] = RunClient(client, inputs[s], stop);
    });
  }
  for (std::thread& t : threads) t.join();
  for (std::uint32_t s = 0; s < kSessions; ++s) {
    ASSERT_TRUE(results[s].ok())
        << "session " << 40 + s << ": " << results[s].status();
    EXPECT_EQ(results[s]->acknowledged, kCommands);
  }
  ASSERT_TRUE(service->Stop().ok());
  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.commands_applied, kSessions * kCommands);
  EXPECT_GT(
      stats.rejects[static_cast<std::size_t>(codec::RejectReason::kNotOwner)],
      0u)
      << "the sessions never touched each other's orders: no test";

  // Replay: each session's reports, byte for byte what it received.
  const Replay replay = ReplayJournal(dir.Sub("journal"), engine_config);
  ASSERT_EQ(replay.records.size(), kSessions * kCommands);
  std::vector<Bytes> live(kSessions);
  for (std::uint32_t s = 0; s < kSessions; ++s) {
    live[s] = test_support::ReadFromStart(files[s]);
    std::fclose(files[s]);
    const auto it = replay.by_session.find(40 + s);
    ASSERT_NE(it, replay.by_session.end());
    // A client listens for its quiet period (200 ms) after its last
    // acknowledgement; the other sessions may trade on for longer (on a
    // loaded machine, seconds): what it received live is a prefix of its
    // replayed reports, and what follows was caused by the others.
    test_support::ExpectLiveIsReplayPrefix(40 + s, live[s], it->second);
  }

  // Restart: the recovered state is the replayed one, and a session's
  // history answers a retransmission with the bytes it received live.
  auto restarted = RunningService::Start(options);
  ASSERT_NE(restarted, nullptr);
  const StateMachine& state = restarted->service().state();
  EXPECT_EQ(state.last_index(), kSessions * kCommands);
  for (std::uint32_t s = 0; s < kSessions; ++s) {
    const SessionState* session = state.Find(40 + s);
    ASSERT_NE(session, nullptr);
    EXPECT_EQ(session->next_expected, kCommands + 1);
    EXPECT_EQ(session->next_report - 1, replay.by_session.at(40 + s).size());
  }
  // Session 40 retransmits its last command, as a client that lost its
  // reports would: the service answers from the rebuilt history.
  std::size_t last = 0;
  for (std::size_t pos = 0; pos < inputs[0].size();) {
    last = pos;
    pos += codec::Info(static_cast<Kind>(std::to_integer<std::uint8_t>(
                           inputs[0][pos + codec::kKindOffset])))
               .frame_size;
  }
  TestClient client(restarted->endpoint());
  client.Send(40, {Bytes(inputs[0].begin() + static_cast<std::ptrdiff_t>(last),
                         inputs[0].end())});
  const std::vector<Bytes> resent = client.Drain(40, 200);
  ASSERT_FALSE(resent.empty());
  const std::vector<Bytes>& live_frames = replay.by_session.at(40);
  for (const Bytes& frame : resent) {
    const std::uint64_t sequence = SequenceOf(frame);
    ASSERT_GE(sequence, 1u);
    ASSERT_LE(sequence, live_frames.size());
    EXPECT_EQ(Hex(frame), Hex(live_frames[sequence - 1]));
  }
  EXPECT_EQ(SequenceOf(resent.back()), live_frames.size());
  ASSERT_TRUE(restarted->Stop().ok());
}
}  // namespace
}  // namespace orderwire::service::end_to_end
