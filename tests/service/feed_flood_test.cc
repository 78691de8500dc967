// The feed's request server under a flood (docs/MARKETDATA.md
// "Retransmission", "Snapshots", "Errors and counters";
// service/feed_request_server.h), end to end in process: a service
// publishing to a subscriber (tests/support/feed_follower.h) with a request
// server, three go-back-N clients (client::RunClient) trading the `mixed`
// workload, and meanwhile a flooder thread (kFloodThreads: one leaves a
// core of two to the service and the clients) sending as fast as it can,
// from kFloodSources source addresses of loopback (sockets bound to
// 127.0.x.y, none of them 127.0.0.1, the subscriber's), every datagram of
// FloodKind in turn: malformed ones of nine causes, RetransmitRequests for
// 65,535 messages from sequence 1 or from far beyond the end, ones of
// another session, SnapshotRequests. The flood goes on until the trading
// is over and every counter checked below has moved (polled: no assertion
// depends on timing), then stops. Then:
//   - every client command is acknowledged;
//   - the subscriber, caught up, followed the journal's feed: every message
//     and every packet it received is the journal's, its books the
//     engine's;
//   - each malformed cause sent is counted, at most as often as it was
//     sent, and no other cause;
//   - the budgets acted: RateLimited refusals and requests dropped;
//     WrongSession and BeyondEnd refused, snapshots asked for; messages
//     retransmitted no more than the replies' budget allows over the
//     service's life (an upper bound, whatever the timing);
//   - the sources known are the flooders' and the subscriber's, no more
//     (at most kMaxRequestSources: not reached here);
//   - the order-entry port saw none of it (nothing malformed there).
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "codec/wire.h"
#include "feed/builder.h"
#include "feed/packet.h"
#include "feed/types.h"
#include "gtest/gtest.h"
#include "journal/reader.h"
#include "net/udp.h"
#include "service/feed_request_server.h"
#include "service/service.h"
#include "service/service_stats.h"
#include "state/rebuild.h"
#include "tests/support/feed_follower.h"
#include "tests/support/journal_replay.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"
#include "tests/support/trading_clients.h"

namespace orderwire::service {
namespace {

using std::chrono::milliseconds;

constexpr std::size_t kFloodCommands = 3'000;  // per client
// The request server's budgets of all sources, below the defaults so that
// they act whatever the machine's speed (a slow or busy one reads fewer
// than the default 20,000 datagrams a second without being throttled).
constexpr double kFloodDatagramsPerSecond = 2'000;
constexpr double kFloodReplyMessagesPerSecond = 10'000;
constexpr int kFloodThreads = 1;
constexpr std::size_t kFloodSources = 256;  // over all flooder threads
constexpr std::int64_t kFloodHeartbeatNs = 50'000'000;

// What the flooders send, each source each in turn.
enum class FloodKind : std::uint8_t {
  kAncient,       // RetransmitRequest (1, 65535): served in part, or bounded
  kFarFuture,     // RetransmitRequest (2^62, 65535): BeyondEnd
  kWrongSession,  // RetransmitRequest of another session: WrongSession
  kSnapshot,      // SnapshotRequest of every instrument
  kRandom,        // 1 to 100 random bytes, the first not 'O': Truncated or
                  // BadMagic
  kTruncated,     // a RetransmitRequest's first 10 bytes
  kBadMagic,
  kBadVersion,
  kBadType,      // a Data packet's type
  kBadToken,     // token 0
  kBadSequence,  // a RetransmitRequest from sequence 0
  kZeroCount,    // a RetransmitRequest for 0 messages
  kBadCount,     // a SnapshotRequest with a count
  kTrailing,     // a RetransmitRequest with a byte more
  kOversize,     // 1460 bytes, more than a packet
};
constexpr std::size_t kFloodKinds =
    static_cast<std::size_t>(FloodKind::kOversize) + 1;

// The causes the malformed kinds are counted under (kRandom: Truncated or
// BadMagic).
constexpr feed::CheckCause kFloodCauses[] = {
    feed::CheckCause::kTruncated,     feed::CheckCause::kBadMagic,
    feed::CheckCause::kBadVersion,    feed::CheckCause::kBadType,
    feed::CheckCause::kBadToken,      feed::CheckCause::kBadSequence,
    feed::CheckCause::kZeroCount,     feed::CheckCause::kBadCount,
    feed::CheckCause::kTrailingBytes, feed::CheckCause::kOversize,
};

std::size_t Cause(feed::CheckCause cause) {
  return static_cast<std::size_t>(cause);
}
std::size_t Reason(feed::RefusedReason reason) {
  return static_cast<std::size_t>(reason);
}

// A loopback UDP endpoint free now (bound and released): the request
// server's, known before the subscriber that asks it is made.
net::Endpoint FreeLoopbackEndpoint() {
  absl::StatusOr<net::UdpSocket> probe =
      net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
  EXPECT_TRUE(probe.ok()) << probe.status();
  return probe.ok() ? *probe->LocalEndpoint() : net::Endpoint{};
}

constexpr std::size_t kVersionAt =
    feed::PacketOffsetOf<&feed::PacketHeader::version>();
constexpr std::size_t kTypeAt =
    feed::PacketOffsetOf<&feed::PacketHeader::type>();
constexpr std::size_t kSequenceAt =
    feed::PacketOffsetOf<&feed::PacketHeader::sequence>();
constexpr std::size_t kCountAt =
    feed::PacketOffsetOf<&feed::PacketHeader::count>();
constexpr std::size_t kTokenAt =
    feed::PacketOffsetOf<&feed::PacketHeader::token>();

// Writes the datagram of `kind` for the feed `session` into `out`, a slot
// of a DatagramBatch; returns its length. kRandom's bytes come from `rng`.
std::size_t FloodDatagram(FloodKind kind, std::uint64_t session,
                          std::mt19937_64& rng, std::span<std::byte> out) {
  const auto retransmit = [&](std::uint64_t s, std::uint64_t first) {
    return *feed::EncodeRetransmitRequest(out, s, first, 65535, 7);
  };
  // A RetransmitRequest from sequence 1 with the field at `at` changed.
  const auto patched = [&](std::size_t at, auto value) {
    const std::size_t size = retransmit(session, 1);
    codec::StoreLE(out.data() + at, value);
    return size;
  };
  switch (kind) {
    case FloodKind::kAncient:
      return retransmit(session, 1);
    case FloodKind::kFarFuture:
      return retransmit(session, std::uint64_t{1} << 62);
    case FloodKind::kWrongSession:
      return retransmit(session ^ 1, 1);
    case FloodKind::kSnapshot:
      return *feed::EncodeSnapshotRequest(out, session, 9, 0);
    case FloodKind::kRandom: {
      const std::size_t size = 1 + rng() % 100;
      for (std::size_t i = 0; i < size; ++i) {
        out[i] = static_cast<std::byte>(rng());
      }
      if (out[0] == std::byte{'O'}) out[0] = std::byte{'X'};
      return size;
    }
    case FloodKind::kTruncated:
      return retransmit(session, 1) - 14;
    case FloodKind::kBadMagic:
      return patched(0, std::uint16_t{0x5A5A});
    case FloodKind::kBadVersion:
      return patched(kVersionAt, std::uint8_t{2});
    case FloodKind::kBadType:
      return patched(kTypeAt,
                     static_cast<std::uint8_t>(feed::PacketType::kData));
    case FloodKind::kBadToken:
      return patched(kTokenAt, std::uint16_t{0});
    case FloodKind::kBadSequence:
      return patched(kSequenceAt, std::uint64_t{0});
    case FloodKind::kZeroCount:
      return patched(kCountAt, std::uint16_t{0});
    case FloodKind::kBadCount: {
      const std::size_t size = *feed::EncodeSnapshotRequest(out, session, 9, 0);
      codec::StoreLE(out.data() + kCountAt, std::uint16_t{1});
      return size;
    }
    case FloodKind::kTrailing:
      out[retransmit(session, 1)] = std::byte{0};
      return feed::kPacketHeaderSize + 1;
    case FloodKind::kOversize:
      std::fill_n(out.begin(), 1460, std::byte{0x4F});
      return 1460;
  }
  return 0;
}

// The flooder threads: each sends every FloodKind in turn from each of its
// sources, round after round, until Stop().
class Flooder {
 public:
  Flooder(const net::Endpoint& server, std::uint64_t session) {
    for (int t = 0; t < kFloodThreads; ++t) {
      threads_.emplace_back(
          [this, t, server, session] { Flood(t, server, session); });
    }
  }
  ~Flooder() { Stop(); }
  Flooder(const Flooder&) = delete;
  Flooder& operator=(const Flooder&) = delete;

  // Stops and joins the threads (idempotent).
  void Stop() {
    stop_.store(true);
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  // After Stop(): the datagrams the kernel took, by kind; the sources that
  // could be bound.
  [[nodiscard]] std::uint64_t sent(FloodKind kind) const {
    return sent_[static_cast<std::size_t>(kind)].load();
  }
  [[nodiscard]] std::size_t sources() const { return sources_.load(); }

 private:
  // Source k: 127.0.(1 + k / 250).(1 + k % 250).
  static std::optional<net::UdpSocket> Source(std::size_t k) {
    const std::string address = "127.0." + std::to_string(1 + k / 250) + "." +
                                std::to_string(1 + k % 250) + ":0";
    // Small buffers: replies to these sockets are never read.
    absl::StatusOr<net::UdpSocket> socket = net::UdpSocket::Bind(
        *net::Endpoint::Parse(address),
        net::UdpSocket::Options{.receive_buffer_bytes = 4096,
                                .send_buffer_bytes = 1 << 16});
    EXPECT_TRUE(socket.ok()) << address << ": " << socket.status();
    if (!socket.ok()) return std::nullopt;
    return *std::move(socket);
  }

  void Flood(int thread, const net::Endpoint& server, std::uint64_t session) {
    std::vector<net::UdpSocket> sockets;
    for (std::size_t k = static_cast<std::size_t>(thread); k < kFloodSources;
         k += kFloodThreads) {
      std::optional<net::UdpSocket> socket = Source(k);
      if (socket.has_value()) sockets.push_back(*std::move(socket));
    }
    sources_.fetch_add(sockets.size());
    std::mt19937_64 rng(static_cast<std::uint64_t>(thread) + 1);
    net::DatagramBatch batch(kFloodKinds);
    for (std::size_t i = 0; i < kFloodKinds; ++i) {
      batch.set_peer(i, server);
      batch.set_length(i, FloodDatagram(static_cast<FloodKind>(i), session, rng,
                                        batch.buffer(i)));
    }
    const auto random = static_cast<std::size_t>(FloodKind::kRandom);
    std::array<std::uint64_t, kFloodKinds> sent{};
    while (!stop_.load(std::memory_order_relaxed)) {
      for (net::UdpSocket& socket : sockets) {
        batch.set_length(random, FloodDatagram(FloodKind::kRandom, session, rng,
                                               batch.buffer(random)));
        const int n = socket.Send(batch, kFloodKinds);
        for (int i = 0; i < n; ++i) ++sent[static_cast<std::size_t>(i)];
      }
    }
    for (std::size_t i = 0; i < kFloodKinds; ++i) sent_[i].fetch_add(sent[i]);
  }

  std::atomic<bool> stop_{false};
  std::array<std::atomic<std::uint64_t>, kFloodKinds> sent_{};
  std::atomic<std::size_t> sources_{0};
  std::vector<std::thread> threads_;
};

// Whether every counter the test checks has moved: each cause sent
// counted, refusals and drops of the budgets, every source known.
bool FloodCounted(const ServiceStats& st) {
  for (const feed::CheckCause cause : kFloodCauses) {
    if (st.md_malformed[Cause(cause)] == 0) return false;
  }
  return st.md_refused[Reason(feed::RefusedReason::kRateLimited)] > 0 &&
         st.md_refused[Reason(feed::RefusedReason::kWrongSession)] > 0 &&
         st.md_refused[Reason(feed::RefusedReason::kBeyondEnd)] > 0 &&
         st.md_requests_dropped > 0 && st.md_requests_throttled > 0 &&
         st.md_snapshot_requests > 0 && st.md_retransmit_requests > 0 &&
         st.md_subscribers >= 1 + kFloodSources;  // the target, the sources
}

ServiceOptions FloodedOptions(const std::string& journal,
                              const net::Endpoint& target,
                              const net::Endpoint& requests) {
  ServiceOptions options =
      test_support::TestOptions(journal, journal::Durability::kBatch);
  options.on_event = [](std::string_view) {};
  FeedPublisherOptions feed;
  feed.targets = {target};
  feed.heartbeat_ns = kFloodHeartbeatNs;
  feed.on_event = [](std::string_view) {};
  options.market_data = feed;
  options.md_requests = FeedRequestServerOptions{
      .listen = requests,
      .retransmit_messages_per_second = kFloodReplyMessagesPerSecond,
      .datagrams_per_second = kFloodDatagramsPerSecond};
  return options;
}

// The counters after the flood: each cause sent counted, no more often
// than sent, and no other; the budgets' refusals and drops; the sources.
void ExpectTheFloodCounted(const ServiceStats& st, const Flooder& flood) {
  std::uint64_t forged = 0;  // malformed datagrams sent
  for (std::size_t k = static_cast<std::size_t>(FloodKind::kRandom);
       k < kFloodKinds; ++k) {
    forged += flood.sent(static_cast<FloodKind>(k));
  }
  std::uint64_t counted = 0;
  for (int c = 0; c < feed::kCheckCauseCount; ++c) {
    const auto cause = static_cast<feed::CheckCause>(c);
    const bool sent =
        std::find(std::begin(kFloodCauses), std::end(kFloodCauses), cause) !=
        std::end(kFloodCauses);
    EXPECT_EQ(st.md_malformed[Cause(cause)] > 0, sent)
        << "cause " << c << ": " << st.md_malformed[Cause(cause)];
    counted += st.md_malformed[Cause(cause)];
  }
  EXPECT_LE(counted, forged);
  const auto at_most = [&](feed::CheckCause cause, FloodKind kind) {
    EXPECT_LE(st.md_malformed[Cause(cause)], flood.sent(kind))
        << "cause " << Cause(cause);
  };
  at_most(feed::CheckCause::kBadVersion, FloodKind::kBadVersion);
  at_most(feed::CheckCause::kBadType, FloodKind::kBadType);
  at_most(feed::CheckCause::kBadToken, FloodKind::kBadToken);
  at_most(feed::CheckCause::kBadSequence, FloodKind::kBadSequence);
  at_most(feed::CheckCause::kZeroCount, FloodKind::kZeroCount);
  at_most(feed::CheckCause::kBadCount, FloodKind::kBadCount);
  at_most(feed::CheckCause::kTrailingBytes, FloodKind::kTrailing);
  at_most(feed::CheckCause::kOversize, FloodKind::kOversize);
  EXPECT_GT(st.md_refused[Reason(feed::RefusedReason::kRateLimited)], 0u);
  EXPECT_GT(st.md_requests_dropped, 0u);
  // More than 20,000 datagrams a second: reading was throttled.
  EXPECT_GT(st.md_requests_throttled, 0u);
  EXPECT_GT(st.md_refused[Reason(feed::RefusedReason::kWrongSession)], 0u);
  EXPECT_GT(st.md_refused[Reason(feed::RefusedReason::kBeyondEnd)], 0u);
  EXPECT_GT(st.md_snapshot_requests, 0u);
  EXPECT_GT(st.md_retransmit_requests, 0u);
  // The target, each flooder source, and the subscriber's if it asked.
  EXPECT_GE(st.md_subscribers, 1 + kFloodSources);
  EXPECT_LE(st.md_subscribers, 1 + kFloodSources + 1);
  EXPECT_LE(st.md_subscribers, 1 + kMaxRequestSources);
  EXPECT_EQ(st.md_snapshot_replica_lost, 0u);
  // The order-entry port is another socket: nothing of it reached there.
  for (const std::uint64_t n : st.malformed) EXPECT_EQ(n, 0u);
}

TEST(FeedFlood, BadAndExcessiveRequestsAreCountedAndMatchingGoesOn) {
  test_support::ScratchDir dir;
  const net::Endpoint requests = FreeLoopbackEndpoint();
  test_support::FeedFollower follower({requests}, kFloodHeartbeatNs);
  const ServiceOptions options =
      FloodedOptions(dir.path() + "/j", follower.endpoint(), requests);
  const auto started = std::chrono::steady_clock::now();
  auto service = test_support::RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  ASSERT_NE(service->service().md_request_endpoint(), nullptr);
  // The feed's session is the journal's id (a fresh journal).
  const absl::StatusOr<std::uint64_t> session =
      state::JournalIdOf(options.journal.directory, journal::ReaderOptions{});
  ASSERT_TRUE(session.ok()) << session.status();
  const auto start = std::chrono::steady_clock::now();
  Flooder flood(*service->service().md_request_endpoint(), *session);
  // Over a second of trading at 2,000 a second each: the flood lands in it.
  test_support::TradingClients clients({.target = service->endpoint(),
                                        .sessions = {1, 2, 3},
                                        .commands = kFloodCommands,
                                        .seed = 60,
                                        .rate = 2000});
  clients.Join();
  const double trading =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  // The flood goes on until every counter checked has moved.
  EXPECT_TRUE(service->WaitFor(FloodCounted, 30'000))
      << "30 s of flood and a counter did not move (below: which)";
  flood.Stop();
  const double flooding =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  clients.ExpectAllAcknowledged();
  EXPECT_TRUE(follower.WaitCaughtUp(milliseconds(30'000)))
      << follower.SummaryNow();
  ASSERT_TRUE(service->Stop().ok());
  const double lifetime =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();

  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(options.journal.directory,
                                           options.config.engine);
  ASSERT_GT(replay.feed.size(), 1000u);
  EXPECT_TRUE(
      follower.WaitForNext(replay.feed.size() + 1, milliseconds(30'000)))
      << "the subscriber expects " << follower.next_sequence() << " of "
      << replay.feed.size() + 1;
  follower.Stop();
  test_support::ExpectFollowedTheJournalsFeed(follower, replay);
  EXPECT_EQ(flood.sources(), kFloodSources);
  ExpectTheFloodCounted(service->final_stats(), flood);
  // The replies' budget held: a second's worth at the start, then its rate
  // over the service's life at most (an upper bound, whatever the timing).
  EXPECT_LE(static_cast<double>(service->final_stats().md_retransmit_messages),
            kFloodReplyMessagesPerSecond * (1 + lifetime));

  std::uint64_t sent = 0;
  for (std::size_t k = 0; k < kFloodKinds; ++k) {
    sent += flood.sent(static_cast<FloodKind>(k));
  }
  const ServiceStats& st = service->final_stats();
  std::printf(
      "trading %.1f s, flood %.1f s: %llu datagrams from %zu sources; "
      "RateLimited %llu, dropped %llu, reading throttled %llu times, "
      "retransmissions served %llu (%llu messages), snapshots sent %llu\n%s\n",
      trading, flooding, static_cast<unsigned long long>(sent), flood.sources(),
      static_cast<unsigned long long>(
          st.md_refused[Reason(feed::RefusedReason::kRateLimited)]),
      static_cast<unsigned long long>(st.md_requests_dropped),
      static_cast<unsigned long long>(st.md_requests_throttled),
      static_cast<unsigned long long>(st.md_retransmit_requests),
      static_cast<unsigned long long>(st.md_retransmit_messages),
      static_cast<unsigned long long>(st.md_snapshots_sent),
      test_support::Summary(follower.subscriber()).c_str());
}

}  // namespace
}  // namespace orderwire::service
