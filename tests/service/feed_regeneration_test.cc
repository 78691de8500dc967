// Retransmission below the ring, made again from the journal
// (service/feed_regenerator.h, service/feed_request_server.h;
// docs/MARKETDATA.md "Retransmission"), on a real journal of two trading
// sessions whose feed a plain replay gives:
//   - a pass of the regenerator applies at most records_per_pass records;
//   - a request below a small ring gets the journal's feed, byte for byte;
//   - a subscriber catching up request by request goes on from the
//     regenerator's position: one start, each record applied once;
//   - a pruned journal with a snapshot: F is the snapshot's next feed
//     sequence, below it NotRetained naming F, from it the journal's bytes;
//   - a second regeneration meanwhile (the same request again too) is
//     refused Unavailable, and the ring is answered while a regeneration is
//     under way;
//   - a journal that cannot be read: Unavailable, counted and said;
//   - a restarted service answers below its ring (which starts at the
//     restart) with the journal's feed.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "codec/wire.h"
#include "feed/builder.h"
#include "feed/packet.h"
#include "gtest/gtest.h"
#include "journal/format.h"
#include "journal/prune.h"
#include "journal/reader.h"
#include "net/udp.h"
#include "service/feed_regenerator.h"
#include "service/feed_request_server.h"
#include "service/feed_ring.h"
#include "service/service.h"
#include "state/rebuild.h"
#include "state/snapshot.h"
#include "state/state_machine.h"
#include "tests/support/bytes.h"
#include "tests/support/feed_requester.h"
#include "tests/support/journal_replay.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"
#include "tests/support/trading_journal.h"

namespace orderwire::service {
namespace regeneration_test {
namespace {

using Blob = std::vector<std::byte>;

// The trading journal, its feed (feed[i] is sequence i + 1) and, for each
// snapshot written, the next feed sequence it carries.
struct TradingFeed {
  test_support::ScratchDir dir;
  std::string journal;
  std::uint64_t journal_id = 0;
  std::vector<Blob> feed;
  std::vector<std::uint64_t> snapshot_next;  // by snapshots_at
};

std::unique_ptr<TradingFeed> MakeTradingFeed(
    const std::vector<std::uint64_t>& snapshots_at = {}) {
  auto t = std::make_unique<TradingFeed>();
  t->journal = t->dir.path() + "/j";
  t->journal_id = test_support::WriteTradingJournal(t->journal);
  state::StateMachine machine(test_support::TradingMachineOptions());
  auto reader = journal::JournalReader::Open(t->journal);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return t;
  journal::Record record;
  t->snapshot_next.resize(snapshots_at.size());
  while ((*reader)->Next(record) == journal::ReadResult::kRecord) {
    EXPECT_TRUE(machine.Apply(state::Record::FromJournal(record)).ok());
    for (const state::FeedMessage& m : machine.feed()) {
      EXPECT_EQ(m.sequence, t->feed.size() + 1);
      t->feed.emplace_back(m.bytes.begin(), m.bytes.end());
    }
    for (std::size_t i = 0; i < snapshots_at.size(); ++i) {
      if (snapshots_at[i] != record.index) continue;
      EXPECT_TRUE(
          state::WriteSnapshot(machine, t->journal_id, t->journal).ok());
      t->snapshot_next[i] = machine.feed_producer().next_sequence();
    }
  }
  EXPECT_EQ(machine.last_index(), test_support::kTradingRecords);
  return t;
}

FeedRegeneratorOptions JournalOf(const TradingFeed& t,
                                 std::size_t records_per_pass = 64) {
  const state::StateMachineOptions machine =
      test_support::TradingMachineOptions();
  return FeedRegeneratorOptions{
      .journal_dir = t.journal,
      .journal_id = t.journal_id,
      .machine = machine,
      .unpinned = {.engine = machine.engine,
                   .max_sessions = machine.max_sessions},
      .records_per_pass = records_per_pass};
}

// Puts the feed's messages from `first` on in the ring, as the publisher
// packs them.
void FillRing(FeedRing& ring, const std::vector<Blob>& feed,
              std::uint64_t first) {
  ring.Reset(first);
  std::array<std::byte, feed::kMaxPacketBytes> buffer;
  feed::PacketBuilder builder(buffer);
  const auto close = [&] {
    const std::span<const std::byte> packet = builder.Finish();
    ring.Append(builder.next_sequence() - builder.count(), builder.count(),
                packet.subspan(feed::kPacketHeaderSize));
  };
  builder.BeginData(1, first);
  for (std::uint64_t s = first; s <= feed.size(); ++s) {
    const Blob& m = feed[s - 1];
    if (!builder.FitsLength(m.size())) {
      close();
      builder.BeginData(1, s);
    }
    ASSERT_EQ(builder.AppendMessage(m), codec::CodecError::kOk);
  }
  if (!builder.empty()) close();
  ring.Commit();
}

using test_support::FeedRequester;

// What replies held: the messages of Data packets (checked contiguous from
// `first`, with `token`), or the Refused.
struct Answer {
  std::vector<Blob> messages;
  std::optional<feed::RefusedBody> refused;
  bool contiguous = true;
};

Answer Read(const std::vector<Blob>& replies, std::uint64_t first,
            std::uint16_t token) {
  Answer a;
  std::uint64_t next = first;
  for (const Blob& r : replies) {
    const auto view = feed::PacketView::Parse(r, feed::SessionFilter::Any());
    if (!view.ok() || view->token() != token) {
      a.contiguous = false;
      continue;
    }
    if (view->type() == feed::PacketType::kRefused) {
      a.refused = view->refused();
      continue;
    }
    if (view->sequence() != next) a.contiguous = false;
    for (const feed::MessageBlock block : *view) {
      a.messages.emplace_back(block.bytes().begin(), block.bytes().end());
    }
    next = view->sequence() + view->count();
  }
  return a;
}

// A request server whose ring holds the feed from `ring_first`, answering
// below it from the journal.
std::unique_ptr<FeedRequestServer> ServerOver(
    const TradingFeed& t, std::uint64_t ring_first,
    FeedRequestServerOptions options = {}) {
  options.listen = *net::Endpoint::Parse("127.0.0.1:0");
  options.ring_bytes = kMinFeedRingBytes;
  absl::StatusOr<std::unique_ptr<FeedRequestServer>> server =
      FeedRequestServer::Open(options);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  FillRing((*server)->ring(), t.feed, ring_first);
  (*server)->Start(t.journal_id, {}, JournalOf(t));
  return *std::move(server);
}

void ExpectFeed(const Answer& a, const TradingFeed& t, std::uint64_t first,
                std::size_t count) {
  EXPECT_FALSE(a.refused.has_value());
  EXPECT_TRUE(a.contiguous);
  ASSERT_EQ(a.messages.size(), count);
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_EQ(a.messages[i], t.feed[first - 1 + i])
        << "feed message " << first + i;
  }
}

TEST(FeedRegeneration, APassAppliesAtMostRecordsPerPass) {
  auto t = MakeTradingFeed();
  FeedRegenerator regenerator(JournalOf(*t, /*records_per_pass=*/3));
  regenerator.Begin(1, 200);
  ASSERT_TRUE(regenerator.busy());
  // The first pass opens the journal (no snapshot here), applying nothing.
  ASSERT_EQ(regenerator.Work(), FeedRegenerator::Progress::kWorking);
  EXPECT_EQ(regenerator.counters().records_applied, 0u);
  FeedRegenerator::Progress p = FeedRegenerator::Progress::kWorking;
  std::uint64_t passes = 0;
  while (p == FeedRegenerator::Progress::kWorking) {
    const std::uint64_t before = regenerator.counters().records_applied;
    p = regenerator.Work();
    const std::uint64_t applied =
        regenerator.counters().records_applied - before;
    EXPECT_LE(applied, 3u);
    if (p == FeedRegenerator::Progress::kWorking) {
      EXPECT_EQ(applied, 3u);
    }
    ASSERT_LT(++passes, 1000u);
  }
  ASSERT_EQ(p, FeedRegenerator::Progress::kDone) << regenerator.status();
  EXPECT_FALSE(regenerator.busy());
  EXPECT_GT(passes, 10u);
  // The blocks: messages 1 to 200, each as the journal's feed has it.
  std::size_t at = 0;
  for (std::size_t i = 0; i < 200; ++i) {
    const std::span<const std::byte> blocks = regenerator.blocks();
    ASSERT_LE(at + 2, blocks.size());
    const auto length = codec::LoadLE<std::uint16_t>(blocks.data() + at);
    const Blob got(
        blocks.begin() + static_cast<std::ptrdiff_t>(at + 2),
        blocks.begin() + static_cast<std::ptrdiff_t>(at + 2 + length));
    ASSERT_EQ(got, t->feed[i]) << "feed message " << i + 1;
    at += 2 + length;
  }
  EXPECT_EQ(at, regenerator.blocks().size());
}

TEST(FeedRegeneration, BelowTheRingSendsTheJournalsFeedByteForByte) {
  auto t = MakeTradingFeed();
  ASSERT_GT(t->feed.size(), 300u);
  const std::uint64_t ring_first = t->feed.size() - 40;
  auto server = ServerOver(*t, ring_first);
  ASSERT_NE(server, nullptr);
  FeedRequester asker(server->local_endpoint());
  // Within the journal only, and across into the ring's messages.
  asker.Retransmit(t->journal_id, 100, 50, 9);
  ExpectFeed(Read(asker.MessagesOrRefused(50), 100, 9), *t, 100, 50);
  asker.Retransmit(t->journal_id, ring_first - 10, 1024, 10);
  ExpectFeed(Read(asker.MessagesOrRefused(51), ring_first - 10, 10), *t,
             ring_first - 10, 51);
  const FeedRequestCounters c = server->counters();
  EXPECT_EQ(c.regenerations, 2u);
  EXPECT_EQ(c.retransmit_requests, 2u);
  EXPECT_EQ(c.retransmit_messages, 101u);
  EXPECT_EQ(c.first_retained, 1u);  // an unpruned journal: all of it
  EXPECT_EQ(c.regeneration_failures, 0u);
}

TEST(FeedRegeneration, ACatchUpGoesOnFromWhereTheLastRequestEnded) {
  auto t = MakeTradingFeed();
  const std::uint64_t ring_first = t->feed.size() - 40;
  auto server = ServerOver(*t, ring_first);
  ASSERT_NE(server, nullptr);
  FeedRequester asker(server->local_endpoint());
  std::uint64_t requests = 0;
  for (std::uint64_t next = 1; next < ring_first; ++requests) {
    const auto token = static_cast<std::uint16_t>(requests + 1);
    // The last request crosses into the ring, up to the next sequence.
    const std::size_t want =
        std::min<std::size_t>(100, t->feed.size() + 1 - next);
    asker.Retransmit(t->journal_id, next, 100, token);
    const Answer a = Read(asker.MessagesOrRefused(want), next, token);
    ExpectFeed(a, *t, next, want);
    next += a.messages.size();
    if (a.messages.empty()) break;
  }
  const FeedRequestCounters c = server->counters();
  EXPECT_EQ(c.regenerations, requests);
  EXPECT_GT(requests, 3u);
  // One start; each record applied once (no more than the journal holds).
  EXPECT_EQ(c.regeneration_starts, 1u);
  EXPECT_LE(c.regeneration_records, test_support::kTradingRecords);
  // Asking back before the position starts again.
  asker.Retransmit(t->journal_id, 2, 10, 999);
  ExpectFeed(Read(asker.MessagesOrRefused(10), 2, 999), *t, 2, 10);
  EXPECT_EQ(server->counters().regeneration_starts, 2u);
}

TEST(FeedRegeneration, APrunedJournalStartsAtItsOldestSnapshot) {
  auto t = MakeTradingFeed({300, 450});
  // Segments of 15 records: index 301 starts one, so the prune keeps it on.
  absl::StatusOr<journal::PruneReport> pruned =
      journal::PruneJournal({.directory = t->journal, .before_index = 301});
  ASSERT_TRUE(pruned.ok()) << pruned.status();
  const std::uint64_t f = t->snapshot_next[0];
  ASSERT_GT(f, 1u);
  ASSERT_LT(f + 20, t->snapshot_next[1]);
  const std::uint64_t ring_first = t->feed.size() - 40;
  ASSERT_LT(t->snapshot_next[1], ring_first);
  auto server = ServerOver(*t, ring_first);
  ASSERT_NE(server, nullptr);
  FeedRequester asker(server->local_endpoint());
  asker.Retransmit(t->journal_id, f - 1, 10, 1);
  const Answer below = Read(asker.MessagesOrRefused(1), f - 1, 1);
  ASSERT_TRUE(below.refused.has_value());
  EXPECT_EQ(below.refused->reason, feed::RefusedReason::kNotRetained);
  EXPECT_EQ(below.refused->first_retained, f);
  EXPECT_EQ(below.refused->next_sequence, t->feed.size() + 1);
  EXPECT_TRUE(below.messages.empty());
  EXPECT_EQ(server->counters().first_retained, f);
  // From F, and between the snapshots (from the older one: the newer is
  // past it), the journal's bytes.
  asker.Retransmit(t->journal_id, f, 30, 2);
  ExpectFeed(Read(asker.MessagesOrRefused(30), f, 2), *t, f, 30);
  asker.Retransmit(t->journal_id, t->snapshot_next[1] - 5, 10, 3);
  ExpectFeed(Read(asker.MessagesOrRefused(10), t->snapshot_next[1] - 5, 3), *t,
             t->snapshot_next[1] - 5, 10);
  EXPECT_EQ(server->counters().regenerations, 2u);
}

TEST(FeedRegeneration, OneAtATimeAndTheRingIsAnsweredMeanwhile) {
  auto t = MakeTradingFeed();
  const std::uint64_t ring_first = t->feed.size() - 40;
  std::atomic<bool> hold{true};
  FeedRequestServerOptions options;
  options.hold_regeneration_for_testing = &hold;
  auto server = ServerOver(*t, ring_first, options);
  ASSERT_NE(server, nullptr);
  FeedRequester first(server->local_endpoint());
  FeedRequester second(server->local_endpoint());
  first.Retransmit(t->journal_id, 1, 20, 1);
  const std::int64_t deadline = base::MonotonicNs() + 5'000'000'000;
  while (server->counters().regenerations == 0 &&
         base::MonotonicNs() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(server->counters().regenerations, 1u);
  // Another regeneration meanwhile: Unavailable.
  second.Retransmit(t->journal_id, 5, 20, 2);
  const Answer refused = Read(second.MessagesOrRefused(1), 5, 2);
  ASSERT_TRUE(refused.refused.has_value());
  EXPECT_EQ(refused.refused->reason, feed::RefusedReason::kUnavailable);
  EXPECT_EQ(refused.refused->first_retained, 1u);
  // The ring is answered.
  second.Retransmit(t->journal_id, ring_first, 10, 3);
  ExpectFeed(Read(second.MessagesOrRefused(10), ring_first, 3), *t, ring_first,
             10);
  // The same request again: Unavailable too; nothing else comes meanwhile.
  first.Retransmit(t->journal_id, 1, 20, 4);
  const Answer again = Read(first.MessagesOrRefused(1), 1, 4);
  ASSERT_TRUE(again.refused.has_value());
  EXPECT_EQ(again.refused->reason, feed::RefusedReason::kUnavailable);
  EXPECT_TRUE(first.RepliesFor(100).empty());
  hold = false;
  // The reply, with the first request's token.
  ExpectFeed(Read(first.MessagesOrRefused(20), 1, 1), *t, 1, 20);
  const FeedRequestCounters c = server->counters();
  EXPECT_EQ(c.regenerations, 1u);
  EXPECT_EQ(
      c.refused[static_cast<std::size_t>(feed::RefusedReason::kUnavailable)],
      2u);
}

TEST(FeedRegeneration, AJournalThatCannotBeReadIsUnavailableAndSaid) {
  auto t = MakeTradingFeed();
  const std::uint64_t ring_first = t->feed.size() - 40;
  std::vector<std::string> said;
  FeedRequestServerOptions options;
  options.on_event = [&said](std::string_view line) {
    said.emplace_back(line);
  };
  auto server = ServerOver(*t, ring_first, options);
  ASSERT_NE(server, nullptr);
  // The segments go (as if deleted under the server).
  for (const auto& entry : std::filesystem::directory_iterator(t->journal)) {
    if (journal::ParseSegmentFileName(entry.path().filename().string())) {
      std::filesystem::remove(entry.path());
    }
  }
  FeedRequester asker(server->local_endpoint());
  asker.Retransmit(t->journal_id, 10, 10, 5);
  const Answer a = Read(asker.MessagesOrRefused(1), 10, 5);
  ASSERT_TRUE(a.refused.has_value());
  EXPECT_EQ(a.refused->reason, feed::RefusedReason::kUnavailable);
  EXPECT_TRUE(a.messages.empty());
  server->Stop();
  EXPECT_EQ(server->counters().regeneration_failures, 1u);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("sequence 10"), std::string::npos) << said[0];
}

TEST(FeedRegeneration, ARestartedServiceAnswersBelowItsRingFromTheJournal) {
  test_support::ScratchDir dir;
  ServiceOptions options =
      test_support::TestOptions(dir.path() + "/j", journal::Durability::kBatch);
  options.on_event = [](std::string_view) {};
  absl::StatusOr<net::UdpSocket> sink =
      net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(sink.ok()) << sink.status();
  FeedPublisherOptions publish;
  publish.targets = {*sink->LocalEndpoint()};
  options.market_data = publish;
  options.md_requests =
      FeedRequestServerOptions{.listen = *net::Endpoint::Parse("127.0.0.1:0")};
  std::uint64_t sequence = 1;
  std::uint64_t first_run_end = 0;
  {
    auto service = test_support::RunningService::Start(options);
    ASSERT_NE(service, nullptr);
    test_support::TestClient client(service->endpoint());
    // Resting buys at 100 to 109.
    test_support::SendRestingBuys(client, sequence, 5, /*price=*/100,
                                  /*price_step=*/1);
    ASSERT_TRUE(service->Stop().ok());
    first_run_end = service->final_stats().md_next_sequence;
  }
  auto service = test_support::RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  test_support::TestClient client(service->endpoint());
  test_support::SendRestingBuys(client, sequence, 2, /*price=*/100,
                                /*price_step=*/1);
  ASSERT_TRUE(service->WaitFor([&](const ServiceStats& st) {
    return st.md_next_sequence >= first_run_end + 20 && st.md_packets > 0;
  }));
  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(options.journal.directory,
                                           options.config.engine);
  ASSERT_GE(replay.feed.size(), first_run_end + 19);
  FeedRequester asker(*service->service().md_request_endpoint());
  // The session is the journal's id: ask with it (the restart's ring
  // starts at first_run_end, so 1 is below it).
  absl::StatusOr<std::uint64_t> id =
      state::JournalIdOf(options.journal.directory, journal::ReaderOptions{});
  ASSERT_TRUE(id.ok()) << id.status();
  const std::size_t want =
      std::min<std::size_t>(first_run_end + 10 - 1, kMaxRetransmitMessages);
  asker.Retransmit(*id, 1, static_cast<std::uint16_t>(want), 7);
  const Answer a = Read(asker.MessagesOrRefused(want), 1, 7);
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_FALSE(a.refused.has_value());
  EXPECT_TRUE(a.contiguous);
  ASSERT_EQ(a.messages.size(), want);
  for (std::size_t i = 0; i < want; ++i) {
    ASSERT_EQ(a.messages[i], replay.feed[i]) << "feed message " << i + 1;
  }
  EXPECT_EQ(service->final_stats().md_regenerations, 1u);
  EXPECT_EQ(service->final_stats().md_first_retained_sequence, 1u);
}

}  // namespace
}  // namespace regeneration_test
}  // namespace orderwire::service
