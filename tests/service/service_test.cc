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
// RunningService, TestClient) is tests/support/service_harness.h.
#include "service/service.h"

#include <stdlib.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client/run_client.h"
#include "codec/command.h"
#include "codec/datagram.h"
#include "codec/error.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "codec/wire.h"
#include "config/service_config.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "engine/report.h"
#include "engine/workload.h"
#include "gtest/gtest.h"
#include "journal/format.h"
#include "journal/reader.h"
#include "journal/writer.h"
#include "net/udp.h"
#include "service/sequencer.h"
#include "service/session_table.h"
#include "state/record_flags.h"
#include "state/state_machine.h"
#include "tests/support/bytes.h"
#include "tests/support/journal_replay.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::service {
namespace {

using state::kRecordUnauthorized;
using state::Output;
using state::Record;
using state::SessionState;
using state::StateMachine;
using state::StateMachineOptions;

using config::ParseServiceConfig;
using config::ServiceConfig;

using client::ClientOptions;
using client::ClientResult;
using client::Fnv1a;
using client::kFnvOffset;
using client::RunClient;
using net::DatagramBatch;
using net::Endpoint;
using net::UdpSocket;

using codec::CodecError;
using codec::Kind;
using codec::Liquidity;
using codec::Side;
using codec::TimeInForce;
using test_support::AcceptedFor;
using test_support::Bytes;
using test_support::Datagram;
using test_support::Frame;
using test_support::Hex;
using test_support::RunningService;
using test_support::ScratchDir;
using test_support::TestClient;
using test_support::TestOptions;

// ---------------------------------------------------------------------------
// Helpers.

codec::NewLimit Limit(std::uint64_t account, std::uint64_t client_order_id,
                      std::uint32_t instrument, Side side, std::int64_t price,
                      std::uint64_t quantity) {
  return codec::NewLimit{.account_id = account,
                         .client_order_id = client_order_id,
                         .instrument_id = instrument,
                         .side = side,
                         .time_in_force = TimeInForce::kGoodTillCancel,
                         .price = price,
                         .quantity = quantity};
}

std::uint64_t SequenceOf(const Bytes& frame) {
  return codec::LoadLE<std::uint64_t>(frame.data() + codec::kSequenceOffset);
}

Kind KindOf(const Bytes& frame) {
  return codec::LoadLE<Kind>(frame.data() + codec::kKindOffset);
}

// Frames compared as hex, so a failure shows both.
#define EXPECT_FRAME_EQ(actual, expected) EXPECT_EQ(Hex(actual), Hex(expected))

std::uint64_t Sum(std::span<const std::uint64_t> values) {
  std::uint64_t sum = 0;
  for (std::uint64_t v : values) sum += v;
  return sum;
}

std::size_t Malformed(const ServiceStats& stats, CodecError error) {
  return stats.malformed[static_cast<std::size_t>(error)];
}

std::size_t Refused(const ServiceStats& stats, Admission admission) {
  return stats.refused[static_cast<std::size_t>(admission)];
}

// One journal record, copied out of the reader's mapping.
struct JournalRecord {
  std::uint64_t index;
  std::uint32_t session_id;
  std::uint32_t flags;
  Bytes frame;
};

// The journal's records, and the reports of applying them through a fresh
// StateMachine, as `orderwire replay` does: every report in emission order,
// numbered on its session, and the same split by session.
struct Replay {
  std::vector<JournalRecord> records;
  std::vector<Bytes> reports;
  std::map<std::uint32_t, std::vector<Bytes>> by_session;
};

Replay ReplayJournal(const std::string& directory,
                     const engine::EngineConfig& config) {
  Replay replay;
  absl::StatusOr<std::unique_ptr<journal::JournalReader>> reader =
      journal::JournalReader::Open(directory);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return replay;
  StateMachineOptions options;
  options.engine = config;
  auto machine = std::make_unique<StateMachine>(options);
  journal::Record record;
  journal::ReadResult result;
  while ((result = (*reader)->Next(record)) == journal::ReadResult::kRecord) {
    replay.records.push_back(JournalRecord{
        record.index, record.session_id, record.flags,
        Bytes(record.frame.bytes().begin(), record.frame.bytes().end())});
    const absl::Status applied = machine->Apply(Record::FromJournal(record));
    EXPECT_TRUE(applied.ok()) << applied;
    for (const Output& out : machine->outputs()) {
      replay.reports.emplace_back(out.frame.begin(), out.frame.end());
      replay.by_session[out.session_id].emplace_back(out.frame.begin(),
                                                     out.frame.end());
    }
  }
  EXPECT_EQ(result, journal::ReadResult::kEnd) << (*reader)->status();
  return replay;
}

// Expects the journal to hold exactly `frames`, in order, for `session`:
// each command once, verbatim.
void ExpectJournalHolds(const Replay& replay, std::uint32_t session,
                        const std::vector<Bytes>& frames) {
  ASSERT_EQ(replay.records.size(), frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(replay.records[i].index, i + 1);
    EXPECT_EQ(replay.records[i].session_id, session);
    EXPECT_FRAME_EQ(replay.records[i].frame, frames[i]);
  }
}

// ---------------------------------------------------------------------------
// 1. Order in, Accepted out.

TEST(ServiceEndToEnd, ANewLimitIsAnsweredWithAcceptedUnderItsSession) {
  ScratchDir dir;
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch));
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());

  // The golden NewLimit of docs/PROTOCOL.md, in the golden datagram's session.
  const codec::NewLimit order = Limit(7, 1001, 42, Side::kBuy, 10050, 300);
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
// 2. A crossing order: Filled to both sessions.

TEST(ServiceEndToEnd, ACrossingOrderFillsBothSessionsWithOneMatchId) {
  ScratchDir dir;
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kNone));
  ASSERT_NE(service, nullptr);
  TestClient maker(service->endpoint());
  TestClient taker(service->endpoint());
  constexpr std::uint32_t kMaker = 11;
  constexpr std::uint32_t kTaker = 12;

  const codec::NewLimit sell = Limit(1, 501, 5, Side::kSell, 100, 10);
  maker.Send(kMaker, {Frame(1, sell)});
  std::vector<Bytes> maker_reports = maker.Frames(kMaker, 1);
  ASSERT_EQ(maker_reports.size(), 1u);
  EXPECT_FRAME_EQ(maker_reports[0], AcceptedFor(1, 1, sell));

  // The taker buys 4 at a better price: it trades at the maker's price.
  const codec::NewLimit buy = Limit(2, 601, 5, Side::kBuy, 101, 4);
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
  const codec::NewLimit buy2 = Limit(2, 602, 5, Side::kBuy, 100, 3);
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
  // The engine's order of the reports: maker's Filled before the taker's.
  const Replay replay =
      ReplayJournal(dir.Sub("journal"), engine::EngineConfig{});
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
  EXPECT_EQ(replay.records[0].session_id, kMaker);
  EXPECT_EQ(replay.records[1].session_id, kTaker);
}

// ---------------------------------------------------------------------------
// 3. A duplicated datagram is not applied twice.

TEST(ServiceEndToEnd, ADuplicatedDatagramIsAppliedOnceAndItsReportsResent) {
  ScratchDir dir;
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch));
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());
  constexpr std::uint32_t kSession = 3;
  std::vector<Bytes> commands;
  for (std::uint64_t i = 1; i <= 4; ++i) {
    commands.push_back(
        Frame(i, Limit(1, 100 + i, 3, Side::kBuy,
                       1000 + static_cast<std::int64_t>(i), 10)));
  }
  // Report frames by sequence: a report seen again must be the same bytes.
  std::map<std::uint64_t, Bytes> seen;
  std::size_t again = 0;
  const auto take = [&](const std::vector<Bytes>& frames) {
    for (const Bytes& frame : frames) {
      const auto [it, fresh] = seen.emplace(SequenceOf(frame), frame);
      if (!fresh) {
        ++again;
        EXPECT_FRAME_EQ(frame, it->second);
      }
    }
  };

  // Receives until report `sequence` has come.
  const auto until = [&](std::uint64_t sequence) {
    while (!seen.contains(sequence)) {
      const std::vector<Bytes> frames = client.Frames(kSession, 1);
      if (frames.empty()) return;  // timed out: the test has failed
      take(frames);
    }
  };

  const Bytes first = Datagram(kSession, {commands[0]});
  client.Send(first);
  until(1);
  const Bytes accepted1 =
      AcceptedFor(1, 1, Limit(1, 101, 3, Side::kBuy, 1001, 10));
  EXPECT_FRAME_EQ(seen[1], accepted1);
  EXPECT_EQ(again, 0u);

  // The same datagram again, after its answer: not applied, but the
  // session's reports from that command's first report are sent again.
  client.Send(first);
  std::vector<Bytes> reports = client.Frames(kSession, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], accepted1);
  take(reports);
  EXPECT_EQ(again, 1u);

  // A duplicate followed by the next command: the next one is applied and
  // gets order id 2, report 2 (report 1 may come again on the way).
  client.Send(kSession, {commands[0], commands[1]});
  until(2);

  // A datagram that arrives twice back to back (as a network duplicates
  // it): one Accepted; a copy sent again, if any, is the same bytes.
  const Bytes third = Datagram(kSession, {commands[2]});
  client.Send(third);
  client.Send(third);
  until(3);
  // The next command proves no order id was consumed twice.
  client.Send(kSession, {commands[3]});
  until(4);
  ASSERT_TRUE(service->Stop().ok());
  take(client.Drain(kSession, 50));
  ASSERT_EQ(seen.size(), 4u);
  for (std::uint64_t i = 1; i <= 4; ++i) {
    EXPECT_FRAME_EQ(
        seen[i], AcceptedFor(i, i,
                             Limit(1, 100 + i, 3, Side::kBuy,
                                   1000 + static_cast<std::int64_t>(i), 10)));
  }

  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.duplicates, 3u);
  EXPECT_EQ(stats.commands_applied, 4u);
  EXPECT_EQ(stats.frames_in[static_cast<std::size_t>(Kind::kNewLimit)], 4u);
  EXPECT_EQ(stats.frames_out[static_cast<std::size_t>(Kind::kAccepted)], 4u);
  EXPECT_EQ(stats.reports_resent, again);
  EXPECT_GE(stats.reports_resent, 1u);
  EXPECT_EQ(stats.gaps, 0u);
  ExpectJournalHolds(ReplayJournal(dir.Sub("journal"), engine::EngineConfig{}),
                     kSession, commands);
}

// ---------------------------------------------------------------------------
// 4. A gap: SequenceGap, then recovery.

TEST(ServiceEndToEnd, AGapIsAnsweredWithSequenceGapAndRecoveredByResending) {
  ScratchDir dir;
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kNone));
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());
  constexpr std::uint32_t kSession = 4;
  std::vector<codec::NewLimit> orders;
  std::vector<Bytes> commands;
  for (std::uint64_t i = 1; i <= 5; ++i) {
    orders.push_back(Limit(1, 200 + i, 9, Side::kSell,
                           5000 + static_cast<std::int64_t>(i), i));
    commands.push_back(Frame(i, orders.back()));
  }

  client.Send(kSession, {commands[0]});
  std::vector<Bytes> reports = client.Frames(kSession, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(1, 1, orders[0]));

  // 3 and 4 while 2 is expected: dropped, answered with SequenceGap(2).
  client.Send(kSession, {commands[2], commands[3]});
  reports = client.Frames(kSession, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], Frame(0, codec::SequenceGap{2}));
  EXPECT_EQ(SequenceOf(reports[0]), 0u);

  // 2 then 4: 2 is applied, the rest of the datagram is dropped and
  // SequenceGap(3) comes back (before 2's Accepted, in the same session).
  client.Send(kSession, {commands[1], commands[3], commands[4]});
  reports = client.Frames(kSession, 2);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_FRAME_EQ(reports[0], Frame(0, codec::SequenceGap{3}));
  EXPECT_FRAME_EQ(reports[1], AcceptedFor(2, 2, orders[1]));

  // Resending from the expected sequence recovers: 3, 4, 5 in order.
  client.Send(kSession, {commands[2], commands[3], commands[4]});
  reports = client.Frames(kSession, 3);
  ASSERT_EQ(reports.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_FRAME_EQ(reports[i], AcceptedFor(3 + i, 3 + i, orders[2 + i]));
  }
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_TRUE(client.Silent(0));

  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.gaps, 2u);
  EXPECT_EQ(stats.sequence_gaps_sent, 2u);
  EXPECT_EQ(stats.frames_out[static_cast<std::size_t>(Kind::kSequenceGap)], 2u);
  // Dropped: 3 and 4 of the first gap datagram, 4 and 5 of the second.
  EXPECT_EQ(stats.gap_frames_dropped, 4u);
  EXPECT_EQ(stats.duplicates, 0u);
  EXPECT_EQ(stats.commands_applied, 5u);
  ExpectJournalHolds(ReplayJournal(dir.Sub("journal"), engine::EngineConfig{}),
                     kSession, commands);
}

TEST(ServiceEndToEnd, ANewSessionWhoseFirstFrameIsNotOneGetsSequenceGapOne) {
  ScratchDir dir;
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kNone));
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());
  constexpr std::uint32_t kSession = 61;
  const codec::NewLimit order = Limit(1, 1, 9, Side::kBuy, 100, 1);
  client.Send(kSession, {Frame(3, order)});
  std::vector<Bytes> reports = client.Frames(kSession, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], Frame(0, codec::SequenceGap{1}));
  client.Send(kSession, {Frame(1, order)});
  reports = client.Frames(kSession, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(1, 1, order));
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_EQ(service->final_stats().commands_applied, 1u);
}

// docs/PROTOCOL.md "The applied run": a frame below the expected sequence
// after the run ends it; that frame and the rest of the datagram are
// dropped (never journaled inside the run).
TEST(ServiceEndToEnd, ADuplicateAfterTheRunEndsItAndDropsTheRest) {
  ScratchDir dir;
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch));
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());
  constexpr std::uint32_t kSession = 62;
  std::vector<codec::NewLimit> orders;
  std::vector<Bytes> commands;
  for (std::uint64_t i = 1; i <= 4; ++i) {
    orders.push_back(Limit(1, 300 + i, 9, Side::kSell,
                           7000 + static_cast<std::int64_t>(i), i));
    commands.push_back(Frame(i, orders.back()));
  }
  client.Send(kSession, {commands[0], commands[1]});
  ASSERT_EQ(client.Frames(kSession, 2).size(), 2u);
  // 3 (the run), then 2 (a duplicate: ends the run), then 4 (dropped).
  client.Send(kSession, {commands[2], commands[1], commands[3]});
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.commands_applied == 3; }));
  // 3's Accepted, and the resend of 2's reports (its Accepted, report 2).
  std::vector<Bytes> reports = client.Drain(kSession, 100);
  bool saw_three = false;
  for (const Bytes& r : reports) {
    if (SequenceOf(r) == 3) {
      EXPECT_FRAME_EQ(r, AcceptedFor(3, 3, orders[2]));
      saw_three = true;
    }
    EXPECT_LE(SequenceOf(r), 3u) << "4 was applied";
  }
  EXPECT_TRUE(saw_three);
  // 4 is still expected.
  client.Send(kSession, {commands[3]});
  reports = client.Frames(kSession, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(4, 4, orders[3]));
  ASSERT_TRUE(service->Stop().ok());
  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.commands_applied, 4u);
  EXPECT_EQ(stats.duplicates, 1u);
  ExpectJournalHolds(ReplayJournal(dir.Sub("journal"), engine::EngineConfig{}),
                     kSession, commands);
}

// docs/PROTOCOL.md: at most one SequenceGap per session per round trip for
// the same expected sequence.
TEST(ServiceEndToEnd, SequenceGapIsNotRepeatedWithinARoundTrip) {
  ScratchDir dir;
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kNone));
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());
  constexpr std::uint32_t kSession = 63;
  const codec::NewLimit order = Limit(1, 1, 9, Side::kBuy, 100, 1);
  // Five datagrams that each reveal the same gap, back to back (well within
  // the 2 ms repeat interval).
  std::vector<Bytes> datagrams;
  for (int i = 0; i < 5; ++i) {
    datagrams.push_back(Datagram(kSession, {Frame(2, order)}));
  }
  for (const Bytes& d : datagrams) client.Send(d);
  ASSERT_TRUE(
      service->WaitFor([](const ServiceStats& s) { return s.gaps == 5; }));
  const std::vector<Bytes> reports = client.Drain(kSession, 50);
  ASSERT_TRUE(service->Stop().ok());
  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.gaps, 5u);
  // Scheduling can stretch five sends over more than 2 ms on a loaded
  // machine, but never so that each gets its own report.
  EXPECT_GE(stats.sequence_gaps_sent, 1u);
  EXPECT_LT(stats.sequence_gaps_sent, 5u);
  EXPECT_EQ(reports.size(), stats.sequence_gaps_sent);
}

TEST(ServiceEndToEnd, OptionsThatCannotWorkAreRefusedAtStart) {
  ScratchDir dir;
  ServiceOptions options =
      TestOptions(dir.Sub("journal"), journal::Durability::kNone);
  options.max_pending = kMinPending - 1;
  const auto service = Service::Start(options);
  ASSERT_FALSE(service.ok());
  EXPECT_EQ(service.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(service.status().message().find("max_pending"), std::string::npos);
  options = TestOptions(dir.Sub("journal"), journal::Durability::kNone);
  options.report_history = 0;
  EXPECT_FALSE(Service::Start(options).ok());
}

// ---------------------------------------------------------------------------
// 5. Malformed datagrams: counted by cause, never answered, never applied.

TEST(ServiceEndToEnd, EveryMalformedDatagramIsCountedByCauseAndNotAnswered) {
  ScratchDir dir;
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kNone));
  ASSERT_NE(service, nullptr);
  TestClient bad(service->endpoint());
  constexpr std::uint32_t kSession = 21;
  const codec::NewLimit order = Limit(4, 9, 2, Side::kBuy, 77, 5);
  const Bytes command = Frame(1, order);
  const Bytes valid = Datagram(kSession, {command});
  const auto with = [&](std::size_t offset, std::uint8_t value) {
    Bytes d = valid;
    d[offset] = std::byte{value};
    return d;
  };
  const auto header_with_count = [&](std::uint16_t count) {
    Bytes d(valid.begin(), valid.begin() + codec::kDatagramHeaderSize);
    codec::StoreLE<std::uint16_t>(
        d.data() +
            codec::DatagramOffsetOf<&codec::DatagramHeader::frame_count>(),
        count);
    return d;
  };

  std::vector<std::pair<CodecError, Bytes>> cases;
  cases.emplace_back(CodecError::kBadMagic, with(0, 'X'));
  cases.emplace_back(CodecError::kBadVersion, with(2, 2));
  cases.emplace_back(CodecError::kBadFlags, with(3, 0x80));
  cases.emplace_back(CodecError::kBadReserved, with(11, 1));
  cases.emplace_back(CodecError::kZeroFrameCount, header_with_count(0));
  {
    Bytes d = header_with_count(2);  // two announced, one present
    d.insert(d.end(), command.begin(), command.end());
    cases.emplace_back(CodecError::kCountMismatch, d);
  }
  {
    Bytes d = valid;
    d.push_back(std::byte{0});
    cases.emplace_back(CodecError::kTrailingBytes, d);
  }
  // Truncated: a frame cut short, and a datagram shorter than its header.
  cases.emplace_back(CodecError::kTruncated,
                     Bytes(valid.begin(), valid.end() - 5));
  cases.emplace_back(CodecError::kTruncated,
                     Bytes(valid.begin(), valid.begin() + 7));
  cases.emplace_back(
      CodecError::kUnknownKind,
      with(codec::kDatagramHeaderSize + codec::kKindOffset, 0x07));
  cases.emplace_back(CodecError::kNotACommand,
                     Datagram(kSession, {AcceptedFor(1, 1, order)}));
  {
    // 32 NewLimit frames: 1516 bytes, more than the 1472-byte buffer, so the
    // kernel truncates it and says so.
    Bytes d = header_with_count(32);
    for (std::uint64_t i = 1; i <= 32; ++i) {
      const Bytes f = Frame(i, order);
      d.insert(d.end(), f.begin(), f.end());
    }
    ASSERT_GT(d.size(), codec::kMaxDatagramSize);
    cases.emplace_back(CodecError::kOversize, d);
  }
  // Each really is malformed for that cause.
  for (const auto& [error, bytes] : cases) {
    if (error == CodecError::kOversize) continue;
    EXPECT_EQ(codec::DatagramView::Parse(bytes, codec::FrameFilter::kCommands)
                  .error(),
              error)
        << codec::Name(error);
  }
  for (const auto& [error, bytes] : cases) bad.Send(bytes);

  // The service keeps serving: a valid order, from another socket (a
  // malformed datagram pins nothing), is Accepted as report 1 with order
  // id 1: nothing of the malformed ones was applied.
  TestClient good(service->endpoint());
  good.Send(valid);
  const std::vector<Bytes> reports = good.Frames(kSession, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(1, 1, order));
  // Nothing was answered: anything sent to `bad` would already be there.
  EXPECT_TRUE(bad.Silent(0));
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_TRUE(bad.Silent(0));
  EXPECT_TRUE(good.Silent(0));

  const ServiceStats& stats = service->final_stats();
  std::array<std::uint64_t, codec::kCodecErrorCount> expected{};
  for (const auto& [error, bytes] : cases) {
    ++expected[static_cast<std::size_t>(error)];
  }
  for (int e = 0; e < codec::kCodecErrorCount; ++e) {
    const auto error = static_cast<CodecError>(e);
    EXPECT_EQ(Malformed(stats, error), expected[static_cast<std::size_t>(e)])
        << codec::Name(error);
  }
  EXPECT_EQ(Malformed(stats, CodecError::kTruncated), 2u);
  EXPECT_EQ(stats.truncated_by_kernel, 1u);
  EXPECT_EQ(stats.datagrams_in, cases.size() + 1);
  EXPECT_EQ(stats.datagrams_out, 1u);
  EXPECT_EQ(stats.commands_applied, 1u);
  EXPECT_EQ(stats.sessions, 1u);
  EXPECT_EQ(Sum(stats.refused), 0u);
  EXPECT_EQ(stats.duplicates, 0u);
  EXPECT_EQ(stats.gaps, 0u);
  ExpectJournalHolds(ReplayJournal(dir.Sub("journal"), engine::EngineConfig{}),
                     kSession, {command});
}

// ---------------------------------------------------------------------------
// 6. Authorization, admission and pinning.

TEST(ServiceEndToEnd, ACommandForAnotherAccountIsRejectedUnauthorized) {
  ScratchDir dir;
  absl::StatusOr<ServiceConfig> config =
      ParseServiceConfig("[sessions.7]\naccounts = [\"7-8\"]\n");
  ASSERT_TRUE(config.ok()) << config.status();
  const ServiceOptions options =
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch, *config);
  const engine::EngineConfig engine_config = options.config.engine;
  auto service = RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());
  constexpr std::uint32_t kSession = 7;

  const codec::NewLimit own = Limit(7, 1, 42, Side::kBuy, 100, 10);
  const codec::NewLimit foreign = Limit(9, 2, 42, Side::kBuy, 100, 10);
  const codec::NewLimit also_own = Limit(8, 3, 42, Side::kSell, 200, 10);
  const std::vector<Bytes> commands = {
      Frame(1, own),
      // One datagram mixing allowed and foreign accounts.
      Frame(2, foreign),
      Frame(3, also_own),
      Frame(4, codec::CancelByOrder{.account_id = 9, .order_id = 1}),
      Frame(5, codec::CancelByOrder{.account_id = 7, .order_id = 1}),
  };
  client.Send(kSession, {commands[0]});
  std::vector<Bytes> reports = client.Frames(kSession, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(1, 1, own));

  client.Send(kSession, {commands[1], commands[2], commands[3], commands[4]});
  const std::vector<Bytes> more = client.Frames(kSession, 4);
  reports.insert(reports.end(), more.begin(), more.end());
  ASSERT_EQ(reports.size(), 5u);
  EXPECT_FRAME_EQ(
      reports[1],
      Frame(2, codec::Rejected{.account_id = 9,
                               .client_order_id = 2,
                               .order_id = 0,
                               .command_kind = Kind::kNewLimit,
                               .reason = codec::RejectReason::kUnauthorized}));
  EXPECT_FRAME_EQ(reports[2], AcceptedFor(3, 2, also_own));
  EXPECT_FRAME_EQ(
      reports[3],
      Frame(4, codec::Rejected{.account_id = 9,
                               .client_order_id = 0,
                               .order_id = 1,
                               .command_kind = Kind::kCancelByOrder,
                               .reason = codec::RejectReason::kUnauthorized}));
  EXPECT_EQ(KindOf(reports[4]), Kind::kCancelled);  // its own order
  ASSERT_TRUE(service->Stop().ok());

  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.rejects[11], 2u);
  EXPECT_EQ(stats.commands_applied, 5u);
  // The journal keeps the service's decision, and replaying it reproduces
  // the very reports the client received.
  const Replay replay = ReplayJournal(dir.Sub("journal"), engine_config);
  ExpectJournalHolds(replay, kSession, commands);
  ASSERT_EQ(replay.records.size(), 5u);
  EXPECT_EQ(replay.records[0].flags, 0u);
  EXPECT_EQ(replay.records[1].flags, kRecordUnauthorized);
  EXPECT_EQ(replay.records[2].flags, 0u);
  EXPECT_EQ(replay.records[3].flags, kRecordUnauthorized);
  EXPECT_EQ(replay.records[4].flags, 0u);
  ASSERT_EQ(replay.reports.size(), reports.size());
  for (std::size_t i = 0; i < reports.size(); ++i) {
    EXPECT_FRAME_EQ(replay.reports[i], reports[i]);
  }
}

// max_sessions bounds unlisted sessions only (docs/PROTOCOL.md
// "Admission"): here every session is listed, so a third one fits.
TEST(ServiceEndToEnd, UnlistedAndFarAwaySessionsAreRefusedSilently) {
  ScratchDir dir;
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(
      "[service]\n"
      "max_sessions = 2\n"
      "[sessions.5]\n"
      "accounts = \"any\"\n"
      "[sessions.7]\n"
      "accounts = [\"7-8\"]\n"
      "[sessions.8]\n"
      "accounts = \"any\"\n"
      "addresses = [\"10.0.0.1\"]\n"
      "[sessions.9]\n"
      "accounts = \"any\"\n");
  ASSERT_TRUE(config.ok()) << config.status();
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kNone, *config));
  ASSERT_NE(service, nullptr);
  const codec::NewLimit order = Limit(7, 1, 1, Side::kBuy, 10, 1);

  TestClient unlisted(service->endpoint());
  unlisted.Send(6, {Frame(1, order)});
  TestClient far(service->endpoint());
  far.Send(8, {Frame(1, order)});  // only 10.0.0.1 may use session 8

  TestClient first(service->endpoint());
  first.Send(5, {Frame(1, order)});
  std::vector<Bytes> reports = first.Frames(5, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(1, 1, order));

  // Session 5 is pinned to `first`: the same session from another socket
  // (another port) is dropped, whatever it holds.
  TestClient hijacker(service->endpoint());
  const codec::NewLimit other = Limit(7, 2, 1, Side::kBuy, 11, 1);
  hijacker.Send(5, {Frame(2, other)});

  TestClient second(service->endpoint());
  const codec::NewLimit second_order = Limit(8, 1, 1, Side::kBuy, 10, 1);
  second.Send(7, {Frame(1, second_order)});
  reports = second.Frames(7, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(1, 2, second_order));

  // max_sessions = 2, but a listed session is never refused for the cap.
  TestClient third(service->endpoint());
  third.Send(9, {Frame(1, order)});
  reports = third.Frames(9, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(1, 3, order));

  // Session 5 carries on from `first`: sequence 2 was not taken by the
  // hijacker's datagram.
  const codec::NewLimit next = Limit(7, 3, 1, Side::kBuy, 12, 1);
  first.Send(5, {Frame(2, next)});
  reports = first.Frames(5, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(2, 4, next));

  ASSERT_TRUE(service->Stop().ok());
  for (TestClient* c : {&unlisted, &far, &first, &hijacker, &second, &third}) {
    EXPECT_TRUE(c->Silent(0));
  }
  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(Refused(stats, Admission::kUnknownSession), 1u);
  EXPECT_EQ(Refused(stats, Admission::kAddressNotAllowed), 1u);
  EXPECT_EQ(Refused(stats, Admission::kPinnedElsewhere), 1u);
  EXPECT_EQ(Refused(stats, Admission::kTooManySessions), 0u);
  EXPECT_EQ(Refused(stats, Admission::kOk), 0u);
  EXPECT_EQ(stats.sessions, 3u);
  EXPECT_EQ(stats.commands_applied, 4u);
  EXPECT_EQ(stats.datagrams_in, 7u);
  EXPECT_EQ(stats.datagrams_out, 4u);
  const Replay replay =
      ReplayJournal(dir.Sub("journal"), engine::EngineConfig{});
  ASSERT_EQ(replay.records.size(), 4u);
  EXPECT_EQ(replay.records[0].session_id, 5u);
  EXPECT_EQ(replay.records[1].session_id, 7u);
  EXPECT_EQ(replay.records[2].session_id, 9u);
  EXPECT_EQ(replay.records[3].session_id, 5u);
  EXPECT_FRAME_EQ(replay.records[3].frame, Frame(2, next));
}

// ---------------------------------------------------------------------------
// 7. Clean shutdown, and restart.

// `count` commands of the mixed workload, encoded, and packed into
// datagrams of `session` as full as they go.
struct Stream {
  std::vector<Bytes> frames;
  std::vector<Bytes> datagrams;
};

Stream MixedStream(std::uint32_t session, std::size_t count,
                   std::uint64_t seed) {
  Stream stream;
  const std::vector<codec::Command> commands =
      workload::Generate(workload::Workload::kMixed, count, seed);
  const std::vector<std::byte> bytes = workload::EncodeCommands(commands);
  std::size_t pos = 0;
  for (const codec::Command& command : commands) {
    const std::size_t size = codec::Info(command.kind).frame_size;
    stream.frames.emplace_back(
        bytes.begin() + static_cast<std::ptrdiff_t>(pos),
        bytes.begin() + static_cast<std::ptrdiff_t>(pos + size));
    pos += size;
  }
  EXPECT_EQ(pos, bytes.size());
  std::array<std::byte, codec::kMaxDatagramSize> buffer{};
  codec::DatagramBuilder builder(buffer, session);
  for (const Bytes& frame : stream.frames) {
    if (!builder.Fits(frame.size())) {
      stream.datagrams.emplace_back(builder.bytes().begin(),
                                    builder.bytes().end());
      builder.Reset(session);
    }
    EXPECT_EQ(builder.AppendFrame(frame), CodecError::kOk);
  }
  stream.datagrams.emplace_back(builder.bytes().begin(), builder.bytes().end());
  return stream;
}

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
  const codec::NewLimit sell = Limit(1, 1, 8, Side::kSell, 300, 5);
  const codec::NewLimit buy = Limit(2, 1, 8, Side::kBuy, 300, 2);
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

TEST(ServiceEndToEnd,
     ARetransmittedWindowIsAnsweredWithOneResendNotOnePerDatagram) {
  ScratchDir dir;
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kNone));
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());
  constexpr std::uint32_t kSession = 29;
  constexpr std::size_t kCommands = 2000;
  const Stream stream = MixedStream(kSession, kCommands, 3);
  for (const Bytes& d : stream.datagrams) client.Send(d);
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.commands_applied == kCommands; }));
  const std::vector<Bytes> reports = client.Drain(kSession, 50);
  ASSERT_GT(reports.size(), kCommands);
  for (std::size_t i = 0; i < reports.size(); ++i) {
    ASSERT_EQ(SequenceOf(reports[i]), i + 1);
  }

  // The whole window again, as a client that lost every report would send
  // it: each of its datagrams holds duplicates, but the service sends the
  // session's reports again once per round trip, not once per datagram
  // (that would be quadratic in the window).
  for (const Bytes& d : stream.datagrams) client.Send(d);
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.duplicates == kCommands; }));
  const std::vector<Bytes> resent = client.Drain(kSession, 50);
  ASSERT_TRUE(service->Stop().ok());
  for (const Bytes& report : resent) {
    const std::uint64_t sequence = SequenceOf(report);
    ASSERT_GE(sequence, 1u);
    ASSERT_LE(sequence, reports.size());
    ASSERT_EQ(Hex(report), Hex(reports[sequence - 1]));
  }
  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.commands_applied, kCommands);
  EXPECT_EQ(stats.reports_resent, resent.size());
  // Everything from report 1 at least once; a few resends at most (one per
  // round trip: the datagrams may reach the service in several batches).
  EXPECT_GE(resent.size(), reports.size());
  EXPECT_LE(resent.size(), 3 * reports.size())
      << stream.datagrams.size() << " datagrams of duplicates";
}

// ---------------------------------------------------------------------------
// Loss: the go-back-N client and the service's report resend together.

// Forwards datagrams between one client and the service, dropping those of
// the service that `drop` selects.
class LossyProxy {
 public:
  LossyProxy(const Endpoint& service,
             std::function<bool(std::span<const std::byte>)> drop)
      : service_(service), drop_(std::move(drop)) {
    absl::StatusOr<UdpSocket> socket =
        UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
    EXPECT_TRUE(socket.ok()) << socket.status();
    socket_.emplace(std::move(*socket));
    endpoint_ = *socket_->LocalEndpoint();
    thread_ = std::thread([this] { Loop(); });
  }
  ~LossyProxy() {
    stop_.store(true);
    thread_.join();
  }
  [[nodiscard]] const Endpoint& endpoint() const { return endpoint_; }
  [[nodiscard]] std::uint64_t dropped() const { return dropped_.load(); }

 private:
  void Loop() {
    DatagramBatch batch(64);
    std::optional<Endpoint> client;
    while (!stop_.load()) {
      if (!socket_->WaitReadable(10)) continue;
      const int n = socket_->Receive(batch, batch.capacity());
      for (int i = 0; i < n; ++i) {
        const auto slot = static_cast<std::size_t>(i);
        const std::span<const std::byte> bytes = batch.datagram(slot);
        const Endpoint* to = &service_;
        if (batch.peer(slot) == service_) {
          if (!client.has_value()) continue;
          if (drop_(bytes)) {
            ++dropped_;
            continue;
          }
          to = &*client;
        } else {
          client = batch.peer(slot);
        }
        (void)::sendto(socket_->fd(), bytes.data(), bytes.size(), 0, to->addr(),
                       to->length);
      }
    }
  }

  Endpoint service_;
  std::function<bool(std::span<const std::byte>)> drop_;
  std::optional<UdpSocket> socket_;
  Endpoint endpoint_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> dropped_{0};
  std::thread thread_;
};

TEST(ServiceEndToEnd, TheClientRecoversFromALostReportDatagram) {
  ScratchDir dir;
  const ServiceOptions options =
      TestOptions(dir.Sub("journal"), journal::Durability::kNone);
  const engine::EngineConfig engine_config = options.config.engine;
  auto service = RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  // Lose one report datagram that starts with a Filled: a report of a
  // command whose Accepted came in an earlier datagram (the command is
  // acknowledged), followed by the primary reports of later commands.
  std::atomic<bool> lost{false};
  LossyProxy proxy(service->endpoint(), [&](std::span<const std::byte> d) {
    const auto view = codec::DatagramView::Parse(d);
    if (lost.load() || !view.ok() || (*view->begin()).kind() != Kind::kFilled ||
        view->frame_count() < 3) {
      return false;
    }
    lost.store(true);
    return true;
  });
  constexpr std::uint32_t kSession = 31;
  const Stream stream = MixedStream(kSession, 20000, 5);
  Bytes frames;
  for (const Bytes& f : stream.frames)
    frames.insert(frames.end(), f.begin(), f.end());
  ClientOptions client_options;
  client_options.target = proxy.endpoint();
  client_options.session_id = kSession;
  client_options.window = 512;
  client_options.retransmit_timeout_ms = 50;
  client_options.quiet_ms = 50;
  client_options.give_up_ms = 3000;
  const std::atomic<bool> stop{false};
  const absl::StatusOr<ClientResult> result =
      RunClient(client_options, frames, stop);
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_EQ(proxy.dropped(), 1u);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->acknowledged, stream.frames.size());
  // The client ends up with every report, in order, as replay gives them.
  const Replay replay = ReplayJournal(dir.Sub("journal"), engine_config);
  ExpectJournalHolds(replay, kSession, stream.frames);
  std::uint64_t hash = kFnvOffset;
  for (const Bytes& report : replay.reports) hash = Fnv1a(hash, report);
  EXPECT_EQ(result->reports, replay.reports.size());
  EXPECT_EQ(result->report_hash, hash);
  EXPECT_GT(result->out_of_order_reports, 0u);
}

// ---------------------------------------------------------------------------
// Several sessions at once: the protocol gap of two `submit --workload
// mixed` clients on shared accounts (docs/PROTOCOL.md "Sessions and sequence
// numbers").

// Reads a whole FILE* (a tmpfile the client wrote its reports to).
Bytes ReadBack(std::FILE* file) {
  Bytes bytes;
  std::rewind(file);
  std::byte buffer[1 << 16];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) {
    bytes.insert(bytes.end(), buffer, buffer + n);
  }
  return bytes;
}

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
    live[s] = ReadBack(files[s]);
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
}  // namespace orderwire::service
