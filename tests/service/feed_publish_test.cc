// The live market-data feed (service/feed_publisher.h, docs/MARKETDATA.md
// "Publishing", "Sequence numbers and sessions", "Durability and
// determinism"):
//   - the publisher alone: refused options, greedy packing of consecutive
//     messages into packets of at most 1452 bytes, the same bytes to every
//     unicast target, more packets in one pass than one send holds,
//     Heartbeat at start and when idle, EndOfSession three times;
//   - multicast to a group on loopback and a send failure counted, in a
//     network namespace of a forked child (as root; CI runs as root);
//   - the service end to end: what a subscriber receives live is the feed a
//     replay of the journal makes, byte for byte, number for number, and a
//     restart continues it (Heartbeat at the recovered next sequence, no
//     message sent twice, one contiguous sequence over both runs); a late
//     joiner that takes a snapshot while traders trade, then the live feed
//     from S + 1, holds the journal's books at S and at the end, also when
//     the snapshot comes from a restarted service's seeded replica.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "codec/messages.h"
#include "codec/wire.h"
#include "feed/builder.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "net/udp.h"
#include "service/feed_publisher.h"
#include "service/service.h"
#include "tests/support/bytes.h"
#include "tests/support/feed_follower.h"
#include "tests/support/journal_replay.h"
#include "tests/support/orders.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::service {
namespace {

using test_support::Bytes;
using ::testing::HasSubstr;

constexpr std::uint64_t kFeedSession = 0x0123456789ABCDEFull;

// A subscriber's socket on loopback that keeps every datagram, received
// on a thread of its own (a pass may send more than a socket buffer holds
// at once).
class FeedListener {
 public:
  FeedListener() : rx_(64) {
    absl::StatusOr<net::UdpSocket> socket =
        net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
    EXPECT_TRUE(socket.ok()) << socket.status();
    socket_.emplace(*std::move(socket));
    endpoint_ = *socket_->LocalEndpoint();
    thread_ = std::thread([this] { Loop(); });
  }
  FeedListener(const FeedListener&) = delete;
  FeedListener& operator=(const FeedListener&) = delete;
  ~FeedListener() {
    stop_ = true;
    thread_.join();
  }

  [[nodiscard]] const net::Endpoint& endpoint() const { return endpoint_; }

  // Waits until `count` datagrams arrived (false after 5 s).
  bool WaitFor(std::size_t count) {
    const std::int64_t deadline = base::MonotonicNs() + 5'000'000'000;
    while (base::MonotonicNs() < deadline) {
      if (size() >= count) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return size() >= count;
  }
  [[nodiscard]] std::size_t size() {
    std::lock_guard lock(mu_);
    return packets_.size();
  }
  // Waits until `count` EndOfSession packets arrived (false after 5 s): a
  // stopped run's last packets are in.
  bool WaitForEnds(std::size_t count) {
    const std::int64_t deadline = base::MonotonicNs() + 5'000'000'000;
    while (base::MonotonicNs() < deadline) {
      std::size_t ends = 0;
      for (const Bytes& p : packets()) {
        if (p.size() > 3 && static_cast<feed::PacketType>(p[3]) ==
                                feed::PacketType::kEndOfSession) {
          ++ends;
        }
      }
      if (ends >= count) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }
  [[nodiscard]] std::vector<Bytes> packets() {
    std::lock_guard lock(mu_);
    return packets_;
  }

 private:
  void Loop() {
    while (!stop_) {
      if (!socket_->WaitReadable(5)) continue;
      const int n = socket_->Receive(rx_, rx_.capacity());
      std::lock_guard lock(mu_);
      for (int i = 0; i < n; ++i) {
        const auto d = rx_.datagram(static_cast<std::size_t>(i));
        packets_.emplace_back(d.begin(), d.end());
      }
    }
  }

  std::optional<net::UdpSocket> socket_;
  net::Endpoint endpoint_;
  net::DatagramBatch rx_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<Bytes> packets_;
};

// What a run of the live feed carried, packet by packet.
struct LiveFeed {
  std::vector<std::uint64_t> heartbeats;      // their next sequences
  std::vector<std::uint64_t> end_of_session;  // theirs
  std::vector<std::uint64_t> data_first;      // each Data packet's first
  std::vector<std::size_t> data_sizes;        // and its bytes
  std::vector<std::uint64_t> sequences;       // every message's number
  std::vector<Bytes> messages;                // and its bytes
  std::size_t malformed = 0;
  std::uint64_t session = 0;
};

LiveFeed Parse(const std::vector<Bytes>& packets) {
  LiveFeed live;
  for (const Bytes& bytes : packets) {
    const auto view =
        feed::PacketView::Parse(bytes, feed::SessionFilter::Any());
    if (!view.ok()) {
      ++live.malformed;
      continue;
    }
    live.session = view->session();
    switch (view->type()) {
      case feed::PacketType::kHeartbeat:
        live.heartbeats.push_back(view->sequence());
        break;
      case feed::PacketType::kEndOfSession:
        live.end_of_session.push_back(view->sequence());
        break;
      case feed::PacketType::kData: {
        live.data_first.push_back(view->sequence());
        live.data_sizes.push_back(bytes.size());
        std::uint64_t sequence = view->sequence();
        for (const feed::MessageBlock block : *view) {
          live.sequences.push_back(sequence++);
          live.messages.emplace_back(block.bytes().begin(),
                                     block.bytes().end());
        }
        break;
      }
      default:
        ++live.malformed;
    }
  }
  return live;
}

// `count` encoded messages of three sizes (OrderAdded 38, OrderDeleted 21,
// OrderExecuted 46 bytes), numbered from `first`.
struct Messages {
  std::vector<Bytes> bytes;
  std::vector<state::FeedMessage> views;
};
Messages MakeMessages(std::uint64_t first, std::size_t count) {
  Messages m;
  m.bytes.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    Bytes b;
    const std::uint64_t id = first + i;
    switch (i % 3) {
      case 0:
        b.resize(feed::kMessageSize<feed::OrderAdded>);
        feed::EncodeMessage(
            feed::OrderAdded{.timestamp = 1000 + id,
                             .order_id = id,
                             .instrument_id = 7,
                             .side = codec::Side::kBuy,
                             .price = static_cast<std::int64_t>(id),
                             .quantity = 3},
            b.data());
        break;
      case 1:
        b.resize(feed::kMessageSize<feed::OrderDeleted>);
        feed::EncodeMessage(
            feed::OrderDeleted{
                .timestamp = 1000 + id, .order_id = id - 1, .instrument_id = 7},
            b.data());
        break;
      default:
        b.resize(feed::kMessageSize<feed::OrderExecuted>);
        feed::EncodeMessage(feed::OrderExecuted{.timestamp = 1000 + id,
                                                .order_id = id,
                                                .instrument_id = 7,
                                                .side = codec::Side::kSell,
                                                .match_id = id,
                                                .price = 5,
                                                .quantity = 1},
                            b.data());
    }
    m.bytes.push_back(std::move(b));
  }
  for (std::size_t i = 0; i < count; ++i) {
    m.views.push_back({first + i, m.bytes[i]});
  }
  return m;
}

// The feed session of the first packet `listener` received (0: none).
std::uint64_t FeedSessionOf(FeedListener& listener) {
  if (!listener.WaitFor(1)) return 0;
  return Parse({listener.packets().front()}).session;
}

FeedPublisherOptions OptionsTo(std::vector<net::Endpoint> targets) {
  FeedPublisherOptions options;
  options.targets = std::move(targets);
  options.heartbeat_ns = 60'000'000'000;  // none unless a test ticks
  options.on_event = [](std::string_view) {};
  return options;
}

std::unique_ptr<FeedPublisher> OpenTo(std::vector<net::Endpoint> targets) {
  absl::StatusOr<std::unique_ptr<FeedPublisher>> publisher =
      FeedPublisher::Open(OptionsTo(std::move(targets)));
  EXPECT_TRUE(publisher.ok()) << publisher.status();
  return publisher.ok() ? *std::move(publisher) : nullptr;
}

// Packets hold consecutive messages, none split, and are full: each Data
// packet but the last of a flush had no room for the next message.
void ExpectGreedyPacking(const LiveFeed& live, const Messages& sent,
                         std::uint64_t first) {
  ASSERT_EQ(live.messages.size(), sent.bytes.size());
  for (std::size_t i = 0; i < live.messages.size(); ++i) {
    ASSERT_EQ(live.sequences[i], first + i);
    ASSERT_EQ(live.messages[i], sent.bytes[i]) << "message " << first + i;
  }
  for (std::size_t p = 0; p + 1 < live.data_first.size(); ++p) {
    EXPECT_LE(live.data_sizes[p], feed::kMaxPacketBytes);
    const std::uint64_t next = live.data_first[p + 1];
    EXPECT_GT(live.data_sizes[p] + feed::kBlockLengthSize +
                  sent.bytes[next - first].size(),
              feed::kMaxPacketBytes)
        << "packet " << p << " had room for message " << next;
  }
}

TEST(FeedPublisherOpen, RefusesTargetsItCannotSendTo) {
  const auto refused = [](FeedPublisherOptions options) {
    absl::StatusOr<std::unique_ptr<FeedPublisher>> publisher =
        FeedPublisher::Open(std::move(options));
    EXPECT_FALSE(publisher.ok());
    return std::string(publisher.status().message());
  };
  EXPECT_THAT(refused(OptionsTo({})), HasSubstr("--md-target: no destination"));
  EXPECT_THAT(refused(OptionsTo({*net::Endpoint::Parse("127.0.0.1:7000"),
                                 *net::Endpoint::Parse("[::1]:7000")})),
              HasSubstr("different address families"));
  EXPECT_THAT(refused(OptionsTo(std::vector<net::Endpoint>(
                  kMaxFeedTargets + 1, *net::Endpoint::Parse("127.0.0.1:1")))),
              HasSubstr("at most 64"));
  EXPECT_THAT(refused(OptionsTo({*net::Endpoint::Parse("127.0.0.1:0")})),
              HasSubstr("has no port"));
  EXPECT_THAT(refused(OptionsTo({*net::Endpoint::Parse("239.1.2.3:7"),
                                 *net::Endpoint::Parse("127.0.0.1:7")})),
              HasSubstr("239.1.2.3:7 is a multicast group: give one group"));
  FeedPublisherOptions ttl = OptionsTo({*net::Endpoint::Parse("239.1.2.3:7")});
  ttl.multicast_ttl = 256;
  EXPECT_THAT(refused(ttl), HasSubstr("--md-ttl: 256"));
  FeedPublisherOptions interface =
      OptionsTo({*net::Endpoint::Parse("239.1.2.3:7")});
  interface.multicast_interface = "no-such-interface0";
  EXPECT_THAT(refused(interface),
              HasSubstr("--md-interface: 'no-such-interface0' is neither"));
}

TEST(FeedPublisher, SendsAHeartbeatAtStartThenPacksMessagesGreedily) {
  FeedListener listener;
  std::unique_ptr<FeedPublisher> publisher = OpenTo({listener.endpoint()});
  ASSERT_NE(publisher, nullptr);
  publisher->Start(kFeedSession, 41, base::MonotonicNs());
  const Messages sent = MakeMessages(41, 500);
  // Records of 1 to 7 messages, one pass.
  for (std::size_t i = 0; i < sent.views.size();) {
    const std::size_t n =
        std::min<std::size_t>(1 + i % 7, sent.views.size() - i);
    publisher->Add(std::span(sent.views).subspan(i, n));
    i += n;
  }
  EXPECT_GT(publisher->Flush(base::MonotonicNs(), base::RealtimeNs()), 0u);
  const std::size_t packets = publisher->stats().packets;
  ASSERT_TRUE(listener.WaitFor(1 + packets));
  const LiveFeed live = Parse(listener.packets());
  EXPECT_EQ(live.malformed, 0u);
  EXPECT_EQ(live.session, kFeedSession);
  EXPECT_THAT(live.heartbeats, ::testing::ElementsAre(41));
  ExpectGreedyPacking(live, sent, 41);
  EXPECT_EQ(publisher->next_sequence(), 541u);
  EXPECT_EQ(publisher->stats().messages, 500u);
  EXPECT_EQ(publisher->stats().datagrams, 1 + packets);
  EXPECT_EQ(publisher->stats().send_failures, 0u);
  // Nothing queued: a Flush sends nothing and reports no lag.
  EXPECT_EQ(publisher->Flush(base::MonotonicNs(), base::RealtimeNs()), 0u);
}

TEST(FeedPublisher, SendsEveryPacketToEveryUnicastTargetAlike) {
  FeedListener a;
  FeedListener b;
  std::unique_ptr<FeedPublisher> publisher =
      OpenTo({a.endpoint(), b.endpoint()});
  ASSERT_NE(publisher, nullptr);
  EXPECT_EQ(publisher->unicast_targets(), 2u);
  publisher->Start(kFeedSession, 1, base::MonotonicNs());
  // More packets than one send holds: sent as the pass goes.
  const Messages sent = MakeMessages(1, 60 * (kFeedPacketsPerSend + 10));
  publisher->Add(sent.views);
  (void)publisher->Flush(base::MonotonicNs(), 0);
  const std::size_t packets = publisher->stats().packets;
  ASSERT_GT(packets, kFeedPacketsPerSend);
  ASSERT_TRUE(a.WaitFor(1 + packets));
  ASSERT_TRUE(b.WaitFor(1 + packets));
  EXPECT_EQ(a.packets(), b.packets());
  const LiveFeed live = Parse(a.packets());
  ExpectGreedyPacking(live, sent, 1);
  EXPECT_EQ(publisher->stats().datagrams, 2 * (1 + packets));
}

TEST(FeedPublisher, HeartbeatsWhenIdleForTheIntervalAndEndsThreeTimes) {
  FeedListener listener;
  FeedPublisherOptions options = OptionsTo({listener.endpoint()});
  options.heartbeat_ns = 1'000'000'000;
  absl::StatusOr<std::unique_ptr<FeedPublisher>> opened =
      FeedPublisher::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  FeedPublisher& publisher = **opened;
  const std::int64_t t0 = 1'000'000'000'000;
  publisher.Start(kFeedSession, 9, t0);
  EXPECT_EQ(publisher.next_heartbeat_ns(), t0 + 1'000'000'000);
  publisher.Tick(t0 + 999'999'999);  // not yet
  EXPECT_EQ(publisher.stats().heartbeats, 1u);
  publisher.Tick(t0 + 1'000'000'000);
  EXPECT_EQ(publisher.stats().heartbeats, 2u);
  // A data packet puts the next Heartbeat off by the interval.
  const Messages sent = MakeMessages(9, 2);
  publisher.Add(sent.views);
  (void)publisher.Flush(t0 + 1'500'000'000, 0);
  publisher.Tick(t0 + 2'000'000'000);
  EXPECT_EQ(publisher.stats().heartbeats, 2u);
  publisher.Tick(t0 + 2'500'000'000);
  EXPECT_EQ(publisher.stats().heartbeats, 3u);
  // Queued messages go before the end.
  const Messages more = MakeMessages(11, 3);
  publisher.Add(more.views);
  publisher.End();
  EXPECT_EQ(publisher.stats().end_of_session, 3u);
  ASSERT_TRUE(listener.WaitFor(8));
  const LiveFeed live = Parse(listener.packets());
  EXPECT_THAT(live.heartbeats, ::testing::ElementsAre(9, 9, 11));
  EXPECT_THAT(live.end_of_session, ::testing::ElementsAre(14, 14, 14));
  EXPECT_THAT(live.sequences, ::testing::ElementsAre(9, 10, 11, 12, 13));
  // The EndOfSession packets came last.
  const std::vector<Bytes> packets = listener.packets();
  for (std::size_t i = packets.size() - 3; i < packets.size(); ++i) {
    EXPECT_EQ(static_cast<feed::PacketType>(packets[i][3]),
              feed::PacketType::kEndOfSession);
  }
}

// A check of MulticastInNamespace failed: said on standard error (the
// parent's), exit code 1.
int Fail(int line) {
  std::fprintf(stderr, "feed_publish_test.cc:%d: check failed\n", line);
  return 1;
}

// In a forked child in a network namespace of its own, with loopback up
// and multicast routed to it: the publisher sends to 239.1.2.3 by
// interface `lo`, a member receives the feed; a unicast target with no
// route (192.0.2.1, TEST-NET-1) fails and is counted. Exit codes: 0 passed,
// 77 no namespace (not root), 78 no `ip`, 1 a check failed (Fail).
int MulticastInNamespace() {
  if (::unshare(CLONE_NEWNET) != 0) return 77;
  if (std::system("ip link set lo up && ip link set lo multicast on && "
                  "ip route add 224.0.0.0/4 dev lo") != 0) {
    return 78;
  }
  const int member = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in bind_to{};
  bind_to.sin_family = AF_INET;
  bind_to.sin_port = htons(7500);
  if (::bind(member, reinterpret_cast<sockaddr*>(&bind_to), sizeof(bind_to)) !=
      0) {
    return Fail(__LINE__);
  }
  ip_mreqn join{};
  ::inet_pton(AF_INET, "239.1.2.3", &join.imr_multiaddr);
  ::inet_pton(AF_INET, "127.0.0.1", &join.imr_address);
  if (::setsockopt(member, IPPROTO_IP, IP_ADD_MEMBERSHIP, &join,
                   sizeof(join)) != 0) {
    return Fail(__LINE__);
  }
  FeedPublisherOptions options =
      OptionsTo({*net::Endpoint::Parse("239.1.2.3:7500")});
  options.multicast_interface = "lo";
  absl::StatusOr<std::unique_ptr<FeedPublisher>> publisher =
      FeedPublisher::Open(options);
  if (!publisher.ok()) return Fail(__LINE__);
  if ((*publisher)->description().find("multicast to 239.1.2.3:7500") ==
      std::string::npos) {
    return Fail(__LINE__);
  }
  (*publisher)->Start(kFeedSession, 1, base::MonotonicNs());
  const Messages sent = MakeMessages(1, 100);
  (*publisher)->Add(sent.views);
  (void)(*publisher)->Flush(base::MonotonicNs(), 0);
  std::vector<Bytes> received;
  std::array<std::byte, 2048> buffer;
  timeval timeout{.tv_sec = 2, .tv_usec = 0};
  ::setsockopt(member, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  const std::size_t want = 1 + (*publisher)->stats().packets;
  while (received.size() < want) {
    const ssize_t n = ::recv(member, buffer.data(), buffer.size(), 0);
    if (n <= 0) return Fail(__LINE__);
    received.emplace_back(buffer.begin(), buffer.begin() + n);
  }
  const LiveFeed live = Parse(received);
  if (live.heartbeats != std::vector<std::uint64_t>{1}) return Fail(__LINE__);
  if (live.messages != sent.bytes) return Fail(__LINE__);
  // No route: counted, reported once, the publisher goes on.
  std::vector<std::string> events;
  FeedPublisherOptions unroutable =
      OptionsTo({*net::Endpoint::Parse("192.0.2.1:7500")});
  unroutable.on_event = [&](std::string_view line) {
    events.emplace_back(line);
  };
  absl::StatusOr<std::unique_ptr<FeedPublisher>> lost =
      FeedPublisher::Open(unroutable);
  if (!lost.ok()) return Fail(__LINE__);
  (*lost)->Start(kFeedSession, 1, base::MonotonicNs());
  (*lost)->Add(sent.views);
  (void)(*lost)->Flush(base::MonotonicNs(), 0);
  if ((*lost)->stats().send_failures != 1 + (*lost)->stats().packets) {
    return Fail(__LINE__);
  }
  if (events.size() != 1 ||
      events[0].find("Network is unreachable") == std::string::npos) {
    return Fail(__LINE__);
  }
  return 0;
}

TEST(FeedPublisher, MulticastsToAGroupAndCountsWhatItCannotSend) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(MulticastInNamespace());
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  const int code = WEXITSTATUS(status);
  if (code == 77) {
    GTEST_SKIP() << "unshare(CLONE_NEWNET) refused: needs root (or "
                    "CAP_SYS_ADMIN) to make a network namespace";
  }
  ASSERT_NE(code, 78) << "`ip` (iproute2) failed in the namespace";
  EXPECT_EQ(code, 0) << "a check in the namespace failed (its line is on "
                        "standard error)";
}

// --- The service end to end -------------------------------------------

constexpr std::uint32_t kTraders[] = {21, 22};
constexpr std::uint64_t kCommandsPerDatagram = 8;

// Command `sequence` of trader `t`: limit orders around one price on two
// instruments, buys of one trader against sells of the other, so orders
// rest, trade and partly fill; every 5th cancels an earlier order.
Bytes TraderCommand(std::size_t t, std::uint64_t sequence) {
  if (sequence % 5 == 0) {
    // An order of the trader's that may or may not rest still.
    return test_support::Frame(
        sequence, codec::CancelByClient{.account_id = t + 1,
                                        .client_order_id = sequence - 3});
  }
  return test_support::Frame(sequence, test_support::TraderLimit(t, sequence));
}

ServiceOptions PublishingOptions(const std::string& journal,
                                 const net::Endpoint& target) {
  ServiceOptions options =
      test_support::TestOptions(journal, journal::Durability::kBatch);
  options.on_event = [](std::string_view) {};
  options.market_data = OptionsTo({target});
  return options;
}

using Traders = std::vector<std::unique_ptr<test_support::TestClient>>;

// A client for each of kTraders.
Traders TradersOf(test_support::RunningService& service) {
  Traders clients;
  for (std::size_t t = 0; t < std::size(kTraders); ++t) {
    clients.push_back(
        std::make_unique<test_support::TestClient>(service.endpoint()));
  }
  return clients;
}

// Both traders send `datagrams` datagrams each (commands from `first` on)
// to `service`, each pair waited for until durable.
void Trade(test_support::RunningService& service, Traders& clients,
           std::uint64_t first, std::uint64_t datagrams) {
  for (std::uint64_t d = 0; d < datagrams; ++d) {
    for (std::size_t t = 0; t < std::size(kTraders); ++t) {
      std::vector<Bytes> frames;
      const std::uint64_t from = first + d * kCommandsPerDatagram;
      for (std::uint64_t q = from; q < from + kCommandsPerDatagram; ++q) {
        frames.push_back(TraderCommand(t, q));
      }
      clients[t]->Send(kTraders[t], frames);
    }
    const std::uint64_t want =
        (first - 1 + (d + 1) * kCommandsPerDatagram) * std::size(kTraders);
    EXPECT_TRUE(service.WaitFor(
        [&](const ServiceStats& st) { return st.durable_index >= want; }));
  }
}

// Runs a service that publishes to `listener` while both traders send
// `datagrams` datagrams each (commands from `first` on), then stops it
// cleanly. Returns the feed's next sequence at the stop.
std::uint64_t TradeAndStop(const ServiceOptions& options, std::uint64_t first,
                           std::uint64_t datagrams) {
  auto service = test_support::RunningService::Start(options);
  if (service == nullptr) return 0;
  Traders clients = TradersOf(*service);
  Trade(*service, clients, first, datagrams);
  EXPECT_TRUE(service->Stop().ok());
  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.md, 1u);
  EXPECT_EQ(stats.md_send_failures, 0u);
  EXPECT_GT(stats.md_publication_lag.count(), 0u);
  return stats.md_next_sequence;
}

TEST(ServiceFeed, WhatASubscriberReceivesLiveIsTheJournalsFeed) {
  test_support::ScratchDir dir;
  FeedListener listener;
  const ServiceOptions options =
      PublishingOptions(dir.path() + "/j", listener.endpoint());
  const std::uint64_t next = TradeAndStop(options, 1, 20);
  ASSERT_TRUE(listener.WaitForEnds(3));
  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(options.journal.directory,
                                           options.config.engine);
  ASSERT_EQ(next, replay.feed.size() + 1);
  ASSERT_GT(replay.feed.size(), 300u);
  const LiveFeed live = Parse(listener.packets());
  EXPECT_EQ(live.malformed, 0u);
  ASSERT_FALSE(live.heartbeats.empty());
  EXPECT_EQ(live.heartbeats.front(), 1u);  // at start, nothing sent yet
  EXPECT_THAT(live.end_of_session, ::testing::ElementsAre(next, next, next));
  // Byte for byte and number for number: the journal's feed, each once.
  ASSERT_EQ(live.messages.size(), replay.feed.size());
  for (std::size_t i = 0; i < live.messages.size(); ++i) {
    ASSERT_EQ(live.sequences[i], i + 1);
    ASSERT_EQ(live.messages[i], replay.feed[i]) << "feed message " << i + 1;
  }
  for (const std::size_t size : live.data_sizes) {
    EXPECT_LE(size, feed::kMaxPacketBytes);
  }
}

TEST(ServiceFeed, ARestartContinuesTheFeedWithoutSendingAMessageAgain) {
  test_support::ScratchDir dir;
  FeedListener listener;
  const ServiceOptions options =
      PublishingOptions(dir.path() + "/j", listener.endpoint());
  const std::uint64_t first_end = TradeAndStop(options, 1, 10);
  ASSERT_TRUE(listener.WaitForEnds(3));
  const std::size_t first_run = listener.size();
  const std::uint64_t second_end = TradeAndStop(options, 81, 10);
  ASSERT_TRUE(listener.WaitForEnds(6));
  ASSERT_GT(second_end, first_end);
  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(options.journal.directory,
                                           options.config.engine);
  ASSERT_EQ(second_end, replay.feed.size() + 1);
  const std::vector<Bytes> packets = listener.packets();
  const LiveFeed second = Parse(std::vector<Bytes>(
      packets.begin() + static_cast<std::ptrdiff_t>(first_run), packets.end()));
  // The second run starts where the first ended: its Heartbeat says so.
  ASSERT_FALSE(second.heartbeats.empty());
  EXPECT_EQ(second.heartbeats.front(), first_end);
  ASSERT_FALSE(second.sequences.empty());
  EXPECT_EQ(second.sequences.front(), first_end);
  // Over both runs: one contiguous sequence, the journal's bytes.
  const LiveFeed live = Parse(packets);
  ASSERT_EQ(live.messages.size(), replay.feed.size());
  for (std::size_t i = 0; i < live.messages.size(); ++i) {
    ASSERT_EQ(live.sequences[i], i + 1);
    ASSERT_EQ(live.messages[i], replay.feed[i]) << "feed message " << i + 1;
  }
  EXPECT_THAT(live.end_of_session,
              ::testing::ElementsAre(first_end, first_end, first_end,
                                     second_end, second_end, second_end));
}

TEST(ServiceFeed, TheRequestServerSendsAgainWhatWasPublishedLive) {
  test_support::ScratchDir dir;
  FeedListener listener;
  ServiceOptions options =
      PublishingOptions(dir.path() + "/j", listener.endpoint());
  options.md_requests =
      FeedRequestServerOptions{.listen = *net::Endpoint::Parse("127.0.0.1:0")};
  auto service = test_support::RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  test_support::TestClient trader(service->endpoint());
  for (std::uint64_t d = 0; d < 10; ++d) {
    std::vector<Bytes> frames;
    for (std::uint64_t q = 1 + d * 8; q < 9 + d * 8; ++q) {
      frames.push_back(TraderCommand(d % 2, q));
    }
    trader.Send(kTraders[0], frames);
    ASSERT_TRUE(service->WaitFor([&](const ServiceStats& st) {
      return st.durable_index >= 8 * (d + 1);
    }));
  }
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& st) { return st.md_packets > 0; }));
  // A subscriber that missed everything asks from 1, 1024 at a time.
  absl::StatusOr<net::UdpSocket> subscriber =
      net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(subscriber.ok());
  ASSERT_NE(service->service().md_request_endpoint(), nullptr);
  const net::Endpoint server = *service->service().md_request_endpoint();
  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(options.journal.directory,
                                           options.config.engine);
  ASSERT_GT(replay.feed.size(), 20u);
  std::vector<Bytes> replies;
  net::DatagramBatch batch(64);
  const std::uint64_t session = FeedSessionOf(listener);
  std::uint64_t asked = 0;
  for (std::uint64_t next = 1; next <= replay.feed.size(); ++asked) {
    std::array<std::byte, feed::kPacketHeaderSize> request;
    const auto size =
        feed::EncodeRetransmitRequest(request, session, next, 1024, 77);
    std::copy(request.begin(), request.begin() + *size,
              batch.buffer(0).begin());
    batch.set_length(0, *size);
    batch.set_peer(0, server);
    ASSERT_EQ(subscriber->Send(batch, 1), 1);
    const std::size_t before = replies.size();
    const std::size_t want =
        std::min<std::size_t>(1024, replay.feed.size() + 1 - next);
    const std::int64_t deadline = base::MonotonicNs() + 10'000'000'000;
    std::size_t got_messages = 0;
    while (got_messages < want && base::MonotonicNs() < deadline) {
      if (!subscriber->WaitReadable(100)) continue;
      const int n = subscriber->Receive(batch, batch.capacity());
      for (int i = 0; i < n; ++i) {
        const auto d = batch.datagram(static_cast<std::size_t>(i));
        replies.emplace_back(d.begin(), d.end());
        got_messages += codec::LoadLE<std::uint16_t>(d.data() + 20);
      }
    }
    const LiveFeed got = Parse(std::vector<Bytes>(
        replies.begin() + static_cast<std::ptrdiff_t>(before), replies.end()));
    ASSERT_FALSE(got.sequences.empty()) << "nothing from " << next;
    ASSERT_EQ(got.sequences.front(), next);
    next = got.sequences.back() + 1;
  }
  ASSERT_TRUE(service->Stop().ok());
  const LiveFeed resent = Parse(replies);
  EXPECT_EQ(resent.malformed, 0u);
  ASSERT_EQ(resent.messages.size(), replay.feed.size());
  for (std::size_t i = 0; i < resent.messages.size(); ++i) {
    ASSERT_EQ(resent.sequences[i], i + 1);
    ASSERT_EQ(resent.messages[i], replay.feed[i]) << "feed message " << i + 1;
  }
  EXPECT_EQ(service->final_stats().md_retransmit_requests, asked);
  EXPECT_EQ(service->final_stats().md_retransmit_messages, replay.feed.size());
}

TEST(ServiceFeed, AnIdleServiceHeartbeatsWithTheNextSequence) {
  test_support::ScratchDir dir;
  FeedListener listener;
  ServiceOptions options =
      PublishingOptions(dir.path() + "/j", listener.endpoint());
  options.market_data->heartbeat_ns = 20'000'000;
  auto service = test_support::RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  ASSERT_TRUE(listener.WaitFor(4));  // the start's, then one per 20 ms
  ASSERT_TRUE(service->Stop().ok());
  ASSERT_TRUE(listener.WaitForEnds(3));
  const LiveFeed live = Parse(listener.packets());
  ASSERT_GE(live.heartbeats.size(), 4u);
  for (const std::uint64_t next : live.heartbeats) EXPECT_EQ(next, 1u);
  EXPECT_TRUE(live.sequences.empty());
}

TEST(ServiceFeed, TheRequestServerStopsAnsweringWhenTheServiceStops) {
  test_support::ScratchDir dir;
  FeedListener listener;
  ServiceOptions options =
      PublishingOptions(dir.path() + "/j", listener.endpoint());
  options.md_requests =
      FeedRequestServerOptions{.listen = *net::Endpoint::Parse("127.0.0.1:0")};
  auto service = test_support::RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  const net::Endpoint server = *service->service().md_request_endpoint();
  const std::uint64_t session = FeedSessionOf(listener);
  absl::StatusOr<net::UdpSocket> subscriber =
      net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(subscriber.ok());
  net::DatagramBatch batch(4);
  const auto ask = [&] {
    std::array<std::byte, feed::kPacketHeaderSize> request;
    const auto size = feed::EncodeRetransmitRequest(request, session, 1, 1, 3);
    std::copy(request.begin(), request.begin() + *size,
              batch.buffer(0).begin());
    batch.set_length(0, *size);
    batch.set_peer(0, server);
    ASSERT_EQ(subscriber->Send(batch, 1), 1);
  };
  ask();  // BeyondEnd: nothing published yet, but answered
  ASSERT_TRUE(subscriber->WaitReadable(10'000));
  ASSERT_EQ(subscriber->Receive(batch, batch.capacity()), 1);
  ASSERT_TRUE(service->Stop().ok());
  ask();
  EXPECT_FALSE(subscriber->WaitReadable(300)) << "answered after the stop";
}

TEST(ServiceFeed, WithoutATargetNothingIsPublishedAndNoCounterShows) {
  test_support::ScratchDir dir;
  ServiceOptions options =
      test_support::TestOptions(dir.path() + "/j", journal::Durability::kBatch);
  options.on_event = [](std::string_view) {};
  auto service = test_support::RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_EQ(service->final_stats().md, 0u);
  EXPECT_THAT(service->service().StatsReport(),
              ::testing::Not(HasSubstr("market data")));
}

// A snapshot collected whole: S, its session and its messages in position
// order (no messages if it did not come whole within 5 s).
struct TakenSnapshot {
  std::uint64_t sequence = 0;
  std::vector<Bytes> messages;
};

// Asks the request server at `server` for every instrument (session 0) from
// a socket of its own, as a late joiner does.
TakenSnapshot TakeSnapshot(const net::Endpoint& server, std::uint16_t token) {
  TakenSnapshot taken;
  absl::StatusOr<net::UdpSocket> socket =
      net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
  EXPECT_TRUE(socket.ok());
  if (!socket.ok()) return taken;
  net::DatagramBatch batch(64);
  std::array<std::byte, 64> request;
  const auto size = feed::EncodeSnapshotRequest(request, 0, token, 0);
  std::copy(request.begin(), request.begin() + *size, batch.buffer(0).begin());
  batch.set_length(0, *size);
  batch.set_peer(0, server);
  EXPECT_EQ(socket->Send(batch, 1), 1);
  std::map<std::uint64_t, Bytes> by_position;
  std::uint64_t count = 0;
  const std::int64_t deadline = base::MonotonicNs() + 5'000'000'000;
  while ((count == 0 || by_position.size() < count) &&
         base::MonotonicNs() < deadline) {
    if (!socket->WaitReadable(100)) continue;
    const int n = socket->Receive(batch, batch.capacity());
    for (int i = 0; i < n; ++i) {
      const auto view =
          feed::PacketView::Parse(batch.datagram(static_cast<std::size_t>(i)),
                                  feed::SessionFilter::Any());
      EXPECT_TRUE(view.ok());
      if (!view.ok()) continue;
      EXPECT_EQ(view->type(), feed::PacketType::kSnapshot);
      EXPECT_EQ(view->token(), token);
      std::uint64_t position = view->sequence();
      for (const feed::MessageBlock block : *view) {
        Bytes m(block.bytes().begin(), block.bytes().end());
        if (position == 1) {
          taken.sequence = codec::LoadLE<std::uint64_t>(m.data() + 9);
          count = codec::LoadLE<std::uint32_t>(m.data() + 21);
        }
        by_position[position++] = std::move(m);
      }
    }
  }
  if (count == 0 || by_position.size() != count) return taken;
  for (auto& [position, m] : by_position) {
    taken.messages.push_back(std::move(m));
  }
  return taken;
}

// A late joiner: the snapshot, then what it received live after S, as
// MARKETDATA.md "A subscriber" step 5 says. Checks the snapshot against
// the journal's books at S and returns the joiner's books at the end.
marketdata::Book JoinLate(const TakenSnapshot& snapshot,
                          const std::vector<Bytes>& live_packets,
                          const std::vector<Bytes>& journal_feed) {
  marketdata::Book book;
  EXPECT_FALSE(snapshot.messages.empty());
  for (const Bytes& m : snapshot.messages) {
    // All at the timestamp of message S.
    EXPECT_EQ(codec::LoadLE<std::uint64_t>(m.data() + 1),
              codec::LoadLE<std::uint64_t>(
                  journal_feed[snapshot.sequence - 1].data() + 1));
    EXPECT_EQ(book.ApplyMessage(m), marketdata::BookError::kOk);
  }
  const marketdata::Book at_s =
      test_support::BookOfFeed(journal_feed, snapshot.sequence);
  EXPECT_EQ(test_support::OrdersOf(book), test_support::OrdersOf(at_s));
  EXPECT_GT(book.order_count(), 0u) << "a snapshot with resting orders";
  const LiveFeed live = Parse(live_packets);
  std::uint64_t next = snapshot.sequence + 1;
  for (std::size_t i = 0; i < live.messages.size(); ++i) {
    if (live.sequences[i] < next) continue;
    EXPECT_EQ(live.sequences[i], next) << "a gap in the live feed";
    EXPECT_EQ(book.ApplyMessage(live.messages[i]), marketdata::BookError::kOk);
    ++next;
  }
  EXPECT_EQ(next, journal_feed.size() + 1);
  return book;
}

ServiceOptions ServingOptions(const std::string& journal,
                              const net::Endpoint& target) {
  ServiceOptions options = PublishingOptions(journal, target);
  options.md_requests =
      FeedRequestServerOptions{.listen = *net::Endpoint::Parse("127.0.0.1:0")};
  return options;
}

TEST(ServiceFeed, ALateJoinerFromASnapshotHoldsTheJournalsBooks) {
  test_support::ScratchDir dir;
  FeedListener listener;
  const ServiceOptions options =
      ServingOptions(dir.path() + "/j", listener.endpoint());
  auto service = test_support::RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  Traders clients = TradersOf(*service);
  Trade(*service, clients, 1, 10);
  ASSERT_NE(service->service().md_request_endpoint(), nullptr);
  const net::Endpoint server = *service->service().md_request_endpoint();
  // Taken while the traders go on, from another thread.
  TakenSnapshot snapshot;
  std::thread joiner([&] { snapshot = TakeSnapshot(server, 5); });
  Trade(*service, clients, 81, 10);
  joiner.join();
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_EQ(service->final_stats().md_snapshots_sent, 1u);
  EXPECT_EQ(service->final_stats().md_snapshot_replica_lost, 0u);
  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(options.journal.directory,
                                           options.config.engine);
  ASSERT_GT(snapshot.sequence, 1u);
  ASSERT_LE(snapshot.sequence, replay.feed.size());
  const marketdata::Book joined =
      JoinLate(snapshot, listener.packets(), replay.feed);
  const marketdata::Book full =
      test_support::BookOfFeed(replay.feed, replay.feed.size());
  EXPECT_EQ(test_support::OrdersOf(joined), test_support::OrdersOf(full));
  EXPECT_GT(full.order_count(), 0u);
}

TEST(ServiceFeed, ARestartedServiceServesSnapshotsOfItsRecoveredBooks) {
  test_support::ScratchDir dir;
  FeedListener listener;
  const ServiceOptions options =
      ServingOptions(dir.path() + "/j", listener.endpoint());
  const std::uint64_t first_end = TradeAndStop(options, 1, 10);
  ASSERT_GT(first_end, 1u);
  ASSERT_TRUE(listener.WaitFor(1));
  const std::size_t first_run = listener.size();
  auto service = test_support::RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  ASSERT_NE(service->service().md_request_endpoint(), nullptr);
  const net::Endpoint server = *service->service().md_request_endpoint();
  // Nothing sent since the start: the seeded replica, S = first_end - 1.
  const TakenSnapshot snapshot = TakeSnapshot(server, 6);
  EXPECT_EQ(snapshot.sequence, first_end - 1);
  Traders clients = TradersOf(*service);
  Trade(*service, clients, 81, 10);
  ASSERT_TRUE(service->Stop().ok());
  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(options.journal.directory,
                                           options.config.engine);
  ASSERT_GT(replay.feed.size(), first_end);
  const std::vector<Bytes> packets = listener.packets();
  const marketdata::Book joined =
      JoinLate(snapshot,
               std::vector<Bytes>(
                   packets.begin() + static_cast<std::ptrdiff_t>(first_run),
                   packets.end()),
               replay.feed);
  EXPECT_EQ(test_support::OrdersOf(joined),
            test_support::OrdersOf(
                test_support::BookOfFeed(replay.feed, replay.feed.size())));
}

}  // namespace
}  // namespace orderwire::service
