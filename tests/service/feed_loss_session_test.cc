// An accepted loss starts a new feed session (docs/MARKETDATA.md "Sequence
// numbers and sessions", "Decided here"; PROTOCOL.md "Journal record
// flags"), end to end: a service publishes, its journal loses its tail,
// `serve --accept-loss --md-target` starts on what is left:
//   - the first record journaled after that start, and only it, carries
//     NewFeedSession;
//   - the subscriber receives nothing of the old session from that start:
//     a Heartbeat of the new session with next sequence 1, then StartOfFeed
//     at 1 with the directory, numbered on, the journal's bytes;
//   - the new session's id is the 8-byte BLAKE2b of journal_id || index
//     (computed here with libsodium, apart from feed/session.h);
//   - a StateMachine replaying the journal changes session at that record
//     and makes the same (session, sequence, bytes);
//   - a restart continues the new session, from a snapshot taken after it
//     and without snapshots alike; the request server answers for it.
#include <sodium.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "codec/messages.h"
#include "codec/wire.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "feed/session.h"
#include "feed/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/format.h"
#include "net/udp.h"
#include "service/service.h"
#include "state/record_flags.h"
#include "state/state_machine.h"
#include "tests/support/bytes.h"
#include "tests/support/feed_requester.h"
#include "tests/support/files.h"
#include "tests/support/journal_replay.h"
#include "tests/support/orders.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::service {
namespace {

using test_support::Bytes;

// A subscriber on loopback: every datagram, read when asked.
class LossFeedSubscriber {
 public:
  LossFeedSubscriber() : rx_(64) {
    absl::StatusOr<net::UdpSocket> socket =
        net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
    EXPECT_TRUE(socket.ok()) << socket.status();
    socket_.emplace(*std::move(socket));
    endpoint_ = *socket_->LocalEndpoint();
  }
  [[nodiscard]] const net::Endpoint& endpoint() const { return endpoint_; }
  // Reads until `quiet_ms` pass without a datagram.
  std::vector<Bytes> Drain(int quiet_ms = 300) {
    while (socket_->WaitReadable(quiet_ms)) {
      const int n = socket_->Receive(rx_, rx_.capacity());
      for (int i = 0; i < n; ++i) {
        const auto d = rx_.datagram(static_cast<std::size_t>(i));
        packets_.emplace_back(d.begin(), d.end());
      }
    }
    return packets_;
  }

 private:
  std::optional<net::UdpSocket> socket_;
  net::Endpoint endpoint_;
  net::DatagramBatch rx_;
  std::vector<Bytes> packets_;
};

// One packet as a subscriber sees it.
struct LossPacket {
  feed::PacketType type;
  std::uint64_t session;
  std::uint64_t sequence;
  std::vector<Bytes> messages;  // Data only
};

std::vector<LossPacket> ParseLossPackets(const std::vector<Bytes>& packets) {
  std::vector<LossPacket> parsed;
  for (const Bytes& bytes : packets) {
    const auto view =
        feed::PacketView::Parse(bytes, feed::SessionFilter::Any());
    EXPECT_TRUE(view.ok()) << "a malformed packet";
    if (!view.ok()) continue;
    LossPacket p{view->type(), view->session(), view->sequence(), {}};
    if (view->type() == feed::PacketType::kData) {
      for (const feed::MessageBlock block : *view) {
        p.messages.emplace_back(block.bytes().begin(), block.bytes().end());
      }
    }
    parsed.push_back(std::move(p));
  }
  return parsed;
}

// The rule, computed apart from feed/session.h: BLAKE2b with an 8-byte
// digest, no key, of journal_id LE || index LE, read little-endian.
std::uint64_t IndependentSessionHash(std::uint64_t journal_id,
                                     std::uint64_t index) {
  EXPECT_GE(sodium_init(), 0);
  std::array<unsigned char, 16> in{};
  for (int i = 0; i < 8; ++i) {
    in[static_cast<std::size_t>(i)] =
        static_cast<unsigned char>(journal_id >> (8 * i));
    in[static_cast<std::size_t>(8 + i)] =
        static_cast<unsigned char>(index >> (8 * i));
  }
  std::array<unsigned char, 8> out{};
  EXPECT_EQ(crypto_generichash(out.data(), out.size(), in.data(), in.size(),
                               nullptr, 0),
            0);
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) {
    value = (value << 8) | out[static_cast<std::size_t>(i)];
  }
  return value;
}

TEST(FeedSessionId, IsTheJournalIdUntilALossThenTheHashOfTheRecord) {
  EXPECT_EQ(feed::FeedSession(0x1122334455667788ull, 0), 0x1122334455667788ull);
  for (const std::uint64_t index : {1ull, 2ull, 97ull, 1ull << 40}) {
    const std::uint64_t session =
        feed::FeedSession(0x1122334455667788ull, index);
    EXPECT_EQ(session, IndependentSessionHash(0x1122334455667788ull, index));
    EXPECT_NE(session, 0x1122334455667788ull);
  }
  EXPECT_NE(feed::FeedSession(7, 5), feed::FeedSession(8, 5));
  EXPECT_NE(feed::FeedSession(7, 5), feed::FeedSession(7, 6));
}

constexpr std::uint32_t kOldTraders[] = {31, 32};
constexpr std::uint32_t kNewTraders[] = {41, 42};
constexpr std::uint64_t kPerDatagram = 6;

// Command `sequence` of trader `t`: buys of one against sells of the other
// on two instruments, so orders rest and trade.
Bytes LossTraderCommand(std::size_t t, std::uint64_t sequence) {
  return test_support::Frame(sequence, test_support::TraderLimit(t, sequence));
}

// Each trader of `traders` sends `datagrams` datagrams (its commands from
// `first` on); each round waited for until durable.
void TradeAsLoss(test_support::RunningService& service,
                 const std::uint32_t (&traders)[2], std::uint64_t first,
                 std::uint64_t datagrams) {
  std::vector<std::unique_ptr<test_support::TestClient>> clients;
  for (int t = 0; t < 2; ++t) {
    clients.push_back(
        std::make_unique<test_support::TestClient>(service.endpoint()));
  }
  std::uint64_t base = 0;
  ASSERT_TRUE(service.WaitFor([&](const ServiceStats& st) {
    base = st.last_index;
    return true;
  }));
  for (std::uint64_t d = 0; d < datagrams; ++d) {
    for (std::size_t t = 0; t < 2; ++t) {
      std::vector<Bytes> frames;
      const std::uint64_t from = first + d * kPerDatagram;
      for (std::uint64_t q = from; q < from + kPerDatagram; ++q) {
        frames.push_back(LossTraderCommand(t, q));
      }
      clients[t]->Send(traders[t], frames);
    }
    const std::uint64_t want = base + (d + 1) * kPerDatagram * 2;
    ASSERT_TRUE(service.WaitFor(
        [&](const ServiceStats& st) { return st.durable_index >= want; }));
  }
}

ServiceOptions LossOptions(const std::string& journal,
                           const net::Endpoint& target) {
  ServiceOptions options =
      test_support::TestOptions(journal, journal::Durability::kBatch);
  options.on_event = [](std::string_view) {};
  FeedPublisherOptions md;
  md.targets = {target};
  md.heartbeat_ns = 60'000'000'000;  // only the start's
  md.on_event = [](std::string_view) {};
  options.market_data = md;
  return options;
}

// Flips a byte of a record about three quarters into the journal's only
// segment: the records from its group on are lost (they were durable).
void DamageTheTail(const std::string& journal) {
  std::vector<std::string> segments;
  for (const auto& entry : std::filesystem::directory_iterator(journal)) {
    if (journal::ParseSegmentFileName(entry.path().filename().string())) {
      segments.push_back(entry.path().string());
    }
  }
  ASSERT_EQ(segments.size(), 1u);
  std::vector<std::byte> bytes = test_support::ReadFile(segments[0]);
  std::size_t end = bytes.size();
  while (end > 0 && bytes[end - 1] == std::byte{0}) --end;
  std::size_t at = journal::kBlockSize + (end - journal::kBlockSize) * 3 / 4;
  while (at > journal::kBlockSize && bytes[at] == std::byte{0}) --at;
  ASSERT_GT(at, journal::kBlockSize);
  bytes[at] ^= std::byte{0x01};
  test_support::WriteFile(segments[0], bytes);
}

// A journal's feed as a StateMachine makes it: per record, its session
// start, and each message's (sequence, bytes).
struct ReplayedMessage {
  std::uint64_t session_start;
  std::uint64_t sequence;
  Bytes bytes;
};
struct ReplayedFeed {
  std::vector<ReplayedMessage> messages;
  std::vector<std::uint64_t> flagged;  // records with NewFeedSession
};

ReplayedFeed ReplayFeed(const ServiceOptions& options) {
  ReplayedFeed replayed;
  state::StateMachineOptions machine_options;
  machine_options.engine = options.config.engine;
  state::StateMachine machine(machine_options);
  for (const test_support::JournalRecordCopy& r :
       test_support::ReadJournalRecords(options.journal.directory)) {
    if ((r.flags & state::kRecordNewFeedSession) != 0) {
      replayed.flagged.push_back(r.index);
    }
    const absl::Status s = machine.Apply(
        state::Record{r.index, r.receive_ns, r.session_id, r.flags, r.frame});
    EXPECT_TRUE(s.ok()) << s;
    for (const state::FeedMessage& m : machine.feed()) {
      replayed.messages.push_back({machine.feed_producer().session_start(),
                                   m.sequence,
                                   Bytes(m.bytes.begin(), m.bytes.end())});
    }
  }
  return replayed;
}

// The messages `packets` carried in `session`, as (sequence, bytes), in
// order; fails on a Data packet of another session.
std::vector<std::pair<std::uint64_t, Bytes>> DataOf(
    const std::vector<LossPacket>& packets, std::uint64_t session) {
  std::vector<std::pair<std::uint64_t, Bytes>> out;
  for (const LossPacket& p : packets) {
    EXPECT_EQ(p.session, session) << "a packet of another session";
    if (p.type != feed::PacketType::kData) continue;
    std::uint64_t sequence = p.sequence;
    for (const Bytes& m : p.messages) out.emplace_back(sequence++, m);
  }
  return out;
}

// The replayed messages of records from `start` on (a session start), as
// (sequence, bytes).
std::vector<std::pair<std::uint64_t, Bytes>> ReplayedFrom(
    const ReplayedFeed& replayed, std::uint64_t start) {
  std::vector<std::pair<std::uint64_t, Bytes>> out;
  for (const ReplayedMessage& m : replayed.messages) {
    if (m.session_start == start) out.emplace_back(m.sequence, m.bytes);
  }
  return out;
}

// The scenario of the test below, phase by phase; each phase's results are
// the fixture's, for the phases after it.
class ServiceFeedAfterLoss : public ::testing::Test {
 protected:
  // The old session, the journal's own: trades, stops; its id is the
  // journal id, and it ends with EndOfSession.
  void RunTheOldSession(LossFeedSubscriber& before) {
    {
      auto service = test_support::RunningService::Start(
          LossOptions(journal_, before.endpoint()));
      ASSERT_NE(service, nullptr);
      TradeAsLoss(*service, kOldTraders, 1, 8);
      ASSERT_TRUE(service->Stop().ok());
    }
    const std::vector<LossPacket> old_packets =
        ParseLossPackets(before.Drain());
    ASSERT_FALSE(old_packets.empty());
    journal_id_ = old_packets.front().session;
    ASSERT_EQ(old_packets.back().type, feed::PacketType::kEndOfSession);
  }

  // Without --accept-loss the service does not start (the control).
  void ExpectNoStartWithoutAcceptLoss(const LossFeedSubscriber& before) {
    ServiceOptions refused = LossOptions(journal_, before.endpoint());
    absl::StatusOr<std::unique_ptr<Service>> service =
        Service::Start(std::move(refused));
    ASSERT_FALSE(service.ok());
    EXPECT_EQ(service.status().code(), absl::StatusCode::kDataLoss);
  }

  // The new session: --accept-loss with --md-target (and a request server,
  // snapshots every 12 records). Sets accept_, kept_ and new_session_.
  void RunTheNewSession(LossFeedSubscriber& after) {
    accept_ = LossOptions(journal_, after.endpoint());
    accept_.journal.accept_loss = true;
    accept_.snapshot_every_records = 12;
    accept_.md_requests = FeedRequestServerOptions{
        .listen = *net::Endpoint::Parse("127.0.0.1:0")};
    auto service = test_support::RunningService::Start(accept_);
    ASSERT_NE(service, nullptr);
    ASSERT_TRUE(service->WaitFor([&](const ServiceStats& st) {
      kept_ = st.last_index;
      return true;
    }));
    ASSERT_GT(kept_, 0u);
    ASSERT_LT(kept_, 8u * 2 * kPerDatagram) << "nothing was lost";
    // Nothing is sent before the first record: its session does not exist.
    EXPECT_TRUE(after.Drain(200).empty());
    TradeAsLoss(*service, kNewTraders, 1, 4);
    new_session_ = IndependentSessionHash(journal_id_, kept_ + 1);
    ASSERT_NE(new_session_, journal_id_);
    ASSERT_NO_FATAL_FAILURE(ExpectTheRequestServerAnswersForIt(*service));
    ASSERT_TRUE(service->Stop().ok());
  }

  // The request server answers for the new session: messages from 1.
  void ExpectTheRequestServerAnswersForIt(
      test_support::RunningService& service) {
    ASSERT_TRUE(service.WaitFor(
        [](const ServiceStats& st) { return st.md_next_sequence > 3; }));
    test_support::FeedRequester asker(*service.service().md_request_endpoint());
    asker.Retransmit(new_session_, 1, 3, 9);
    // The first reply, then any other until 300 ms pass without one.
    const std::vector<LossPacket> answer = ParseLossPackets(
        asker.Await([](const std::vector<Bytes>& r) { return !r.empty(); },
                    /*settle_ms=*/300));
    ASSERT_EQ(answer.size(), 1u);
    EXPECT_EQ(answer[0].type, feed::PacketType::kData);
    EXPECT_EQ(answer[0].session, new_session_);
    EXPECT_EQ(answer[0].sequence, 1u);
    EXPECT_EQ(answer[0].messages.size(), 3u);
  }

  // What the subscriber of the new session received: first a Heartbeat of
  // the new session with next 1, then StartOfFeed at 1 and the directory:
  // instrument by instrument, its directory then its status; every message
  // numbered from 1, the replay's; then EndOfSession, whose sequence goes
  // to `new_end`.
  void ExpectTheNewSessionsFeed(LossFeedSubscriber& after,
                                const ReplayedFeed& replayed,
                                std::uint64_t& new_end) {
    const std::vector<LossPacket> new_packets = ParseLossPackets(after.Drain());
    ASSERT_GE(new_packets.size(), 5u);
    EXPECT_EQ(new_packets.front().type, feed::PacketType::kHeartbeat);
    EXPECT_EQ(new_packets.front().sequence, 1u);
    const auto live = DataOf(new_packets, new_session_);
    ASSERT_GE(live.size(), 5u);
    EXPECT_EQ(live[0].first, 1u);
    EXPECT_EQ(static_cast<feed::MessageKind>(live[0].second[0]),
              feed::MessageKind::kSystemEvent);
    EXPECT_EQ(codec::LoadLE<std::uint8_t>(live[0].second.data() +
                                          feed::kModelOffset + 8),
              static_cast<std::uint8_t>(feed::SystemEventCode::kStartOfFeed));
    const engine::EngineConfig& engine = accept_.config.engine;
    std::size_t at = 1;
    for (std::uint64_t i = engine.min_instrument; i <= engine.max_instrument;
         ++i) {
      ASSERT_LT(at + 1, live.size());
      EXPECT_EQ(static_cast<feed::MessageKind>(live[at].second[0]),
                feed::MessageKind::kInstrumentDirectory);
      EXPECT_EQ(static_cast<feed::MessageKind>(live[at + 1].second[0]),
                feed::MessageKind::kTradingStatus);
      at += 2;
    }
    EXPECT_EQ(live, ReplayedFrom(replayed, kept_ + 1));
    for (std::size_t i = 0; i < live.size(); ++i) {
      ASSERT_EQ(live[i].first, i + 1);
    }
    EXPECT_EQ(new_packets.back().type, feed::PacketType::kEndOfSession);
    new_end = new_packets.back().sequence;
    EXPECT_EQ(new_end, live.size() + 1);
  }

  // A restart (from a snapshot taken after the new session's first record,
  // or from the journal alone) continues the new session at `next`; trades
  // `first_command` on. Advances both past what it sent.
  void ExpectARestartContinuesTheNewSession(bool from_snapshot,
                                            std::uint64_t& next,
                                            std::uint64_t& first_command) {
    LossFeedSubscriber again;
    ServiceOptions restart = LossOptions(journal_, again.endpoint());
    restart.restart_from_snapshot = from_snapshot;
    auto service = test_support::RunningService::Start(restart);
    ASSERT_NE(service, nullptr);
    ASSERT_TRUE(service->WaitFor([&](const ServiceStats& st) {
      if (from_snapshot) {
        EXPECT_GT(st.started_from_snapshot, kept_ + 1);
      } else {
        EXPECT_EQ(st.started_from_snapshot, 0u);
      }
      return true;
    }));
    TradeAsLoss(*service, kNewTraders, first_command, 2);
    first_command += 2 * kPerDatagram;
    ASSERT_TRUE(service->Stop().ok());
    const std::vector<LossPacket> packets = ParseLossPackets(again.Drain());
    ASSERT_FALSE(packets.empty());
    EXPECT_EQ(packets.front().type, feed::PacketType::kHeartbeat);
    EXPECT_EQ(packets.front().sequence, next);
    const auto more = DataOf(packets, new_session_);
    ASSERT_FALSE(more.empty());
    EXPECT_EQ(more.front().first, next);
    const auto all = ReplayedFrom(ReplayFeed(restart), kept_ + 1);
    ASSERT_EQ(all.size(), next - 1 + more.size());
    EXPECT_TRUE(
        std::equal(more.begin(), more.end(),
                   all.begin() + static_cast<std::ptrdiff_t>(next - 1)));
    next += more.size();
  }

  test_support::ScratchDir dir_;
  const std::string journal_ = dir_.path() + "/j";
  std::uint64_t journal_id_ = 0;  // the old session's
  ServiceOptions accept_;         // the new session's start
  std::uint64_t kept_ = 0;        // the last record the loss left
  std::uint64_t new_session_ = 0;
};

TEST_F(ServiceFeedAfterLoss, AnAcceptedLossStartsANewFeedSessionAtStartOfFeed) {
  LossFeedSubscriber before;
  ASSERT_NO_FATAL_FAILURE(RunTheOldSession(before));
  DamageTheTail(journal_);
  ASSERT_NO_FATAL_FAILURE(ExpectNoStartWithoutAcceptLoss(before));

  LossFeedSubscriber after;
  ASSERT_NO_FATAL_FAILURE(RunTheNewSession(after));

  // The journal: record kept + 1 alone carries NewFeedSession; a replay
  // changes session there and makes what the subscriber received.
  const ReplayedFeed replayed = ReplayFeed(accept_);
  EXPECT_THAT(replayed.flagged, ::testing::ElementsAre(kept_ + 1));
  EXPECT_EQ(feed::FeedSession(journal_id_, kept_ + 1), new_session_);
  std::uint64_t new_end = 0;
  ASSERT_NO_FATAL_FAILURE(ExpectTheNewSessionsFeed(after, replayed, new_end));

  // Restarts continue the new session: from a snapshot taken after its
  // first record, and from the journal alone.
  std::uint64_t next = new_end;
  std::uint64_t first_command = 1 + 4 * kPerDatagram;
  for (const bool from_snapshot : {true, false}) {
    SCOPED_TRACE(from_snapshot ? "from a snapshot" : "from the journal");
    ASSERT_NO_FATAL_FAILURE(ExpectARestartContinuesTheNewSession(
        from_snapshot, next, first_command));
  }
  EXPECT_THAT(ReplayFeed(accept_).flagged, ::testing::ElementsAre(kept_ + 1));
}

}  // namespace
}  // namespace orderwire::service
