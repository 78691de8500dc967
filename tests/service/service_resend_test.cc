// End-to-end tests of the UDP service over loopback (service_test.cc says
// how): docs/PROTOCOL.md "Sessions and sequence numbers" - a duplicated
// datagram applied once and its reports sent again, a gap answered with
// SequenceGap and recovered by resending, the applied run, a retransmitted
// window answered once per round trip, and a lost report datagram that the
// go-back-N client recovers from. The helpers are in service_test_support.h.
#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "client/run_client.h"
#include "codec/datagram.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "engine/config.h"
#include "gtest/gtest.h"
#include "net/udp.h"
#include "service/service.h"
#include "tests/service/service_test_support.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::service::end_to_end {
namespace {

// ---------------------------------------------------------------------------
// A duplicated datagram is not applied twice.

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
        Frame(i, Limit({.client_order_id = 100 + i,
                        .instrument_id = 3,
                        .price = 1000 + static_cast<std::int64_t>(i),
                        .quantity = 10})));
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
  const Bytes accepted1 = AcceptedFor(1, 1,
                                      Limit({.client_order_id = 101,
                                             .instrument_id = 3,
                                             .price = 1001,
                                             .quantity = 10}));
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
        seen[i],
        AcceptedFor(i, i,
                    Limit({.client_order_id = 100 + i,
                           .instrument_id = 3,
                           .price = 1000 + static_cast<std::int64_t>(i),
                           .quantity = 10})));
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
// A gap: SequenceGap, then recovery.

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
    orders.push_back(Limit({.client_order_id = 200 + i,
                            .instrument_id = 9,
                            .side = Side::kSell,
                            .price = 5000 + static_cast<std::int64_t>(i),
                            .quantity = i}));
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
  const codec::NewLimit order =
      Limit({.client_order_id = 1, .instrument_id = 9});
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
    orders.push_back(Limit({.client_order_id = 300 + i,
                            .instrument_id = 9,
                            .side = Side::kSell,
                            .price = 7000 + static_cast<std::int64_t>(i),
                            .quantity = i}));
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
  const codec::NewLimit order =
      Limit({.client_order_id = 1, .instrument_id = 9});
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
}  // namespace
}  // namespace orderwire::service::end_to_end
