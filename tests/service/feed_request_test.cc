// The feed's request server and its ring (service/feed_request_server.h,
// service/feed_ring.h; docs/MARKETDATA.md "Retransmission"):
//   - the ring: what it retains, Copy from any retained sequence, wrap-around
//     (F moves, old sequences refused), and a reader on another thread
//     never gets torn bytes while the writer wraps;
//   - the server: the golden request/reply pairs of MARKETDATA.md byte for
//     byte, replies capped at 1024 messages and at the next sequence, each
//     Refused reason with F and next, SnapshotRequest answered Unavailable,
//     malformed requests counted by cause and never answered, the budget
//     per source (RateLimited once a second, beyond that dropped).
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "codec/wire.h"
#include "feed/builder.h"
#include "feed/packet.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "net/udp.h"
#include "service/feed_request_server.h"
#include "service/feed_ring.h"
#include "tests/feed/golden.h"

namespace orderwire::service {
namespace {

using Blob = std::vector<std::byte>;

// Message `sequence`'s bytes in these tests: a 9-byte header (kind 'A' and
// the sequence as timestamp) and `sequence % 29` more bytes, all derived
// from the sequence, so a torn copy shows.
Blob RingMessage(std::uint64_t sequence) {
  Blob m(feed::kMessageSize<feed::OrderAdded>);
  feed::EncodeMessage(
      feed::OrderAdded{.timestamp = sequence,
                       .order_id = sequence * 3,
                       .instrument_id = static_cast<std::uint32_t>(sequence),
                       .side = codec::Side::kBuy,
                       .price = static_cast<std::int64_t>(sequence * 7),
                       .quantity = sequence * 11},
      m.data());
  return m;
}

// Packs messages [first, first + count) as Data packets of `session` and
// appends each to `ring`; returns the packets.
std::vector<Blob> AppendPackets(FeedRing& ring, std::uint64_t session,
                                std::uint64_t first, std::size_t count) {
  std::vector<Blob> packets;
  std::array<std::byte, feed::kMaxPacketBytes> buffer;
  feed::PacketBuilder builder(buffer);
  builder.BeginData(session, first);
  const auto close = [&] {
    const std::span<const std::byte> packet = builder.Finish();
    ring.Append(builder.next_sequence() - builder.count(), builder.count(),
                packet.subspan(feed::kPacketHeaderSize));
    packets.emplace_back(packet.begin(), packet.end());
  };
  for (std::uint64_t s = first; s < first + count; ++s) {
    const Blob m = RingMessage(s);
    if (!builder.FitsLength(m.size())) {
      close();
      builder.BeginData(session, s);
    }
    EXPECT_EQ(builder.AppendMessage(m), codec::CodecError::kOk);
  }
  if (!builder.empty()) close();
  return packets;
}

// The messages of copied blocks from `from` on, checked against
// RingMessage; returns how many were whole and right.
std::size_t CheckCopied(const Blob& blocks, std::uint64_t from) {
  std::size_t at = 0;
  std::size_t n = 0;
  while (at + 2 <= blocks.size()) {
    const auto length = codec::LoadLE<std::uint16_t>(blocks.data() + at);
    const Blob got(
        blocks.begin() + static_cast<std::ptrdiff_t>(at + 2),
        blocks.begin() + static_cast<std::ptrdiff_t>(at + 2 + length));
    if (got != RingMessage(from + n)) return n;
    at += 2 + length;
    ++n;
  }
  return n;
}

TEST(FeedRing, HoldsWhatWasAppendedAndCopiesFromAnyRetainedSequence) {
  FeedRing ring(kMinFeedRingBytes);
  ring.Reset(7);
  Blob out;
  EXPECT_EQ(ring.Retained().first_retained, 7u);
  EXPECT_EQ(ring.Retained().next_sequence, 7u);
  EXPECT_EQ(ring.Copy(7, 1, out), 0u);  // nothing yet
  const std::vector<Blob> packets = AppendPackets(ring, 1, 7, 300);
  ASSERT_GT(packets.size(), 3u);
  EXPECT_EQ(ring.Retained().first_retained, 7u);
  EXPECT_EQ(ring.Retained().next_sequence, 307u);
  for (const std::uint64_t s : {7u, 8u, 100u, 306u}) {
    const std::uint64_t from = ring.Copy(s, 50, out);
    ASSERT_NE(from, 0u) << s;
    EXPECT_LE(from, s);
    const std::size_t whole = CheckCopied(out, from);
    EXPECT_GE(from + whole, std::min<std::uint64_t>(s + 50, 307)) << s;
  }
  EXPECT_EQ(ring.Copy(6, 1, out), 0u);    // below F
  EXPECT_EQ(ring.Copy(307, 1, out), 0u);  // the next: not sent yet
}

TEST(FeedRing, OverwritesTheOldestWhenFullAndSaysSo) {
  FeedRing ring(kMinFeedRingBytes);
  ring.Reset(1);
  // About 40 bytes a message: 20,000 messages are 12 rings' worth.
  (void)AppendPackets(ring, 1, 1, 20000);
  const FeedRing::Range range = ring.Retained();
  EXPECT_EQ(range.next_sequence, 20001u);
  EXPECT_GT(range.first_retained, 18000u);
  EXPECT_LT(range.first_retained, 20001u - 1000);
  Blob out;
  EXPECT_EQ(ring.Copy(range.first_retained - 1, 10, out), 0u);
  EXPECT_EQ(ring.Copy(1, 10, out), 0u);
  const std::uint64_t from = ring.Copy(range.first_retained, 100, out);
  ASSERT_EQ(from, range.first_retained);
  EXPECT_GE(CheckCopied(out, from), 100u);
}

TEST(FeedRing, HoldsAtMostOnePacketPer64BytesOfRing) {
  FeedRing ring(kMinFeedRingBytes);  // 1024 packet entries
  ring.Reset(1);
  for (std::uint64_t s = 1; s <= 5000; ++s) {
    (void)AppendPackets(ring, 1, s, 1);  // one 40-byte message a packet
  }
  const FeedRing::Range range = ring.Retained();
  EXPECT_EQ(range.next_sequence, 5001u);
  EXPECT_EQ(range.first_retained, 5001u - kMinFeedRingBytes / 64);
  Blob out;
  EXPECT_EQ(ring.Copy(range.first_retained - 1, 1, out), 0u);
  EXPECT_EQ(ring.Copy(range.first_retained, 1, out), range.first_retained);
  EXPECT_EQ(CheckCopied(out, range.first_retained), 1u);
  EXPECT_EQ(ring.Copy(5000, 1, out), 5000u);
  EXPECT_EQ(CheckCopied(out, 5000), 1u);
}

TEST(FeedRing, AReaderOnAnotherThreadNeverGetsTornBytes) {
  FeedRing ring(kMinFeedRingBytes);
  ring.Reset(1);
  std::atomic<std::uint64_t> appended{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    std::uint64_t next = 1;
    while (!stop.load()) {
      (void)AppendPackets(ring, 1, next, 200);
      next += 200;
      appended.store(next - 1);
    }
  });
  std::mt19937_64 random(7);
  Blob out;
  std::size_t copies = 0;
  const std::int64_t end = base::MonotonicNs() + 300'000'000;
  const std::int64_t give_up = end + 10'000'000'000;
  while ((base::MonotonicNs() < end || copies < 1000) &&
         base::MonotonicNs() < give_up) {
    const FeedRing::Range range = ring.Retained();
    if (range.next_sequence <= range.first_retained) continue;
    const std::uint64_t span = range.next_sequence - range.first_retained;
    const std::uint64_t s = range.first_retained + random() % span;
    const std::uint64_t from = ring.Copy(s, 64, out);
    if (from == 0) continue;  // overtaken: refused, never wrong
    const std::size_t whole = CheckCopied(out, from);
    // Every copied block is the message of its number.
    ASSERT_FALSE(out.empty());
    std::size_t blocks = 0;
    for (std::size_t at = 0; at + 2 <= out.size(); ++blocks) {
      at += 2u + codec::LoadLE<std::uint16_t>(out.data() + at);
    }
    ASSERT_EQ(whole, blocks) << "a torn copy from " << from;
    ++copies;
  }
  stop.store(true);
  writer.join();
  EXPECT_GE(copies, 1000u) << "copies kept being refused";
  EXPECT_GT(appended.load(), 20000u) << "the writer wrapped the ring";
}

// --- The server ----------------------------------------------------------

// A subscriber's socket that sends requests to the server and reads
// replies.
class Requester {
 public:
  explicit Requester(const net::Endpoint& server,
                     std::string_view local = "127.0.0.1:0")
      : server_(server), rx_(64) {
    socket_.emplace(*net::UdpSocket::Bind(*net::Endpoint::Parse(local)));
  }
  void Send(std::span<const std::byte> bytes) {
    net::DatagramBatch tx(1);
    std::copy(bytes.begin(), bytes.end(), tx.buffer(0).begin());
    tx.set_length(0, bytes.size());
    tx.set_peer(0, server_);
    ASSERT_EQ(socket_->Send(tx, 1), 1);
  }
  void Retransmit(std::uint64_t session, std::uint64_t first,
                  std::uint16_t count, std::uint16_t token) {
    std::array<std::byte, feed::kPacketHeaderSize> out;
    const auto size =
        feed::EncodeRetransmitRequest(out, session, first, count, token);
    Send(std::span(out).first(*size));
  }
  // Replies until `done` holds for them (or 10 s pass: the caller's
  // expectations then fail), then whatever else arrives within 20 ms.
  std::vector<Blob> Await(
      const std::function<bool(const std::vector<Blob>&)>& done) {
    std::vector<Blob> replies;
    const std::int64_t deadline = base::MonotonicNs() + 10'000'000'000;
    while (!done(replies) && base::MonotonicNs() < deadline) Read(100, replies);
    while (Read(20, replies)) {
    }
    return replies;
  }
  // `n` replies (more if they come at once).
  std::vector<Blob> Replies(std::size_t n = 1) {
    return Await([n](const std::vector<Blob>& r) { return r.size() >= n; });
  }
  // Replies until their Data packets hold `messages` messages.
  std::vector<Blob> Messages(std::size_t messages) {
    return Await([messages](const std::vector<Blob>& replies) {
      std::size_t n = 0;
      for (const Blob& r : replies) {
        n += codec::LoadLE<std::uint16_t>(r.data() + 20);
      }
      return n >= messages;
    });
  }

 private:
  bool Read(int timeout_ms, std::vector<Blob>& replies) {
    if (!socket_->WaitReadable(timeout_ms)) return false;
    const int n = socket_->Receive(rx_, rx_.capacity());
    for (int i = 0; i < n; ++i) {
      const auto d = rx_.datagram(static_cast<std::size_t>(i));
      replies.emplace_back(d.begin(), d.end());
    }
    return n > 0;
  }

  net::Endpoint server_;
  std::optional<net::UdpSocket> socket_;
  net::DatagramBatch rx_;
};

std::unique_ptr<FeedRequestServer> OpenServer(double per_second = 100,
                                              double burst = 100) {
  FeedRequestServerOptions options;
  options.listen = *net::Endpoint::Parse("127.0.0.1:0");
  options.ring_bytes = kMinFeedRingBytes;
  options.requests_per_second = per_second;
  options.burst = burst;
  absl::StatusOr<std::unique_ptr<FeedRequestServer>> server =
      FeedRequestServer::Open(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

Blob Golden(const feed::golden::GoldenBytes& g) {
  return feed::golden::FromHex(g.hex);
}

// The golden packets' blocks in the ring: messages 1-4 and 5-6, or only
// 5-6 (a pruned journal's F = 5).
void AppendGolden(FeedRing& ring, bool from_five) {
  const Blob start = Golden(feed::golden::kStartOfFeed);
  const Blob executed = Golden(feed::golden::kExecutedAdded);
  ring.Reset(from_five ? 5 : 1);
  if (!from_five) {
    ring.Append(1, 4, std::span(start).subspan(feed::kPacketHeaderSize));
  }
  ring.Append(5, 2, std::span(executed).subspan(feed::kPacketHeaderSize));
}

TEST(FeedRequestServer, AnswersTheGoldenRequestsByteForByte) {
  auto server = OpenServer();
  ASSERT_NE(server, nullptr);
  AppendGolden(server->ring(), /*from_five=*/false);
  server->Start(feed::golden::kSession);
  Requester requester(server->local_endpoint());
  requester.Send(Golden(feed::golden::kRetransmitRequest5));
  Blob expected = Golden(feed::golden::kExecutedAdded);
  expected[22] = std::byte{0x07};  // the token echoed
  EXPECT_THAT(requester.Replies(), ::testing::ElementsAre(expected));
  requester.Send(Golden(feed::golden::kRetransmitRequest9));
  EXPECT_THAT(requester.Replies(),
              ::testing::ElementsAre(Golden(feed::golden::kRefusedBeyondEnd)));
  const FeedRequestCounters c = server->counters();
  EXPECT_EQ(c.retransmit_requests, 1u);
  EXPECT_EQ(c.retransmit_messages, 2u);
  EXPECT_EQ(
      c.refused[static_cast<std::size_t>(feed::RefusedReason::kBeyondEnd)], 1u);
}

TEST(FeedRequestServer, RefusesWhatItNoLongerHoldsSayingWhereItStarts) {
  auto server = OpenServer();
  ASSERT_NE(server, nullptr);
  AppendGolden(server->ring(), /*from_five=*/true);
  server->Start(feed::golden::kSession);
  Requester requester(server->local_endpoint());
  requester.Send(Golden(feed::golden::kRetransmitRequest1));
  EXPECT_THAT(
      requester.Replies(),
      ::testing::ElementsAre(Golden(feed::golden::kRefusedNotRetained)));
}

// The reason and body of a single Refused reply.
std::optional<feed::RefusedBody> RefusedOf(const std::vector<Blob>& replies) {
  if (replies.size() != 1) return std::nullopt;
  const auto view =
      feed::PacketView::Parse(replies[0], feed::SessionFilter::Any());
  if (!view.ok() || view->type() != feed::PacketType::kRefused) {
    return std::nullopt;
  }
  return view->refused();
}

TEST(FeedRequestServer, ServesAtMost1024MessagesAndNothingBeyondTheEnd) {
  auto server = OpenServer();
  ASSERT_NE(server, nullptr);
  server->ring().Reset(1);
  (void)AppendPackets(server->ring(), 9, 1, 1500);
  server->Start(9);
  Requester requester(server->local_endpoint());
  requester.Retransmit(9, 10, 2000, 5);
  std::vector<std::uint64_t> sequences;
  for (const Blob& reply : requester.Messages(kMaxRetransmitMessages)) {
    const auto view =
        feed::PacketView::Parse(reply, feed::SessionFilter::Only(9));
    ASSERT_TRUE(view.ok());
    ASSERT_EQ(view->type(), feed::PacketType::kData);
    EXPECT_EQ(view->token(), 5u);
    std::uint64_t s = view->sequence();
    for (const feed::MessageBlock block : *view) {
      EXPECT_EQ(Blob(block.bytes().begin(), block.bytes().end()),
                RingMessage(s));
      sequences.push_back(s++);
    }
  }
  ASSERT_EQ(sequences.size(), kMaxRetransmitMessages);
  EXPECT_EQ(sequences.front(), 10u);
  EXPECT_EQ(sequences.back(), 10u + kMaxRetransmitMessages - 1);
  // Near the end: N' = next - S.
  requester.Retransmit(9, 1490, 100, 6);
  std::size_t near_end = 0;
  for (const Blob& reply : requester.Messages(11)) {
    const auto view =
        feed::PacketView::Parse(reply, feed::SessionFilter::Only(9));
    ASSERT_TRUE(view.ok());
    near_end += view->count();
  }
  EXPECT_EQ(near_end, 11u);
}

TEST(FeedRequestServer, RefusesOtherSessionsAndSnapshotsForNow) {
  auto server = OpenServer();
  ASSERT_NE(server, nullptr);
  server->ring().Reset(1);
  (void)AppendPackets(server->ring(), 9, 1, 10);
  server->Start(9);
  Requester requester(server->local_endpoint());
  requester.Retransmit(8, 1, 1, 1);
  std::optional<feed::RefusedBody> body = RefusedOf(requester.Replies());
  ASSERT_TRUE(body.has_value());
  EXPECT_EQ(body->reason, feed::RefusedReason::kWrongSession);
  EXPECT_EQ(body->first_retained, 1u);
  EXPECT_EQ(body->next_sequence, 11u);
  for (const std::uint64_t session : {0u, 9u}) {
    std::array<std::byte, 64> out;
    const auto size = feed::EncodeSnapshotRequest(out, session, 3, 0);
    requester.Send(std::span(out).first(*size));
    body = RefusedOf(requester.Replies());
    ASSERT_TRUE(body.has_value());
    EXPECT_EQ(body->reason, feed::RefusedReason::kUnavailable) << session;
  }
  EXPECT_EQ(server->counters().snapshot_requests, 2u);
}

TEST(FeedRequestServer, DropsMalformedRequestsCountingEachCause) {
  auto server = OpenServer();
  ASSERT_NE(server, nullptr);
  server->ring().Reset(1);
  server->Start(9);
  Requester requester(server->local_endpoint());
  requester.Send(Blob(5, std::byte{0x4f}));  // Truncated
  Blob bad_magic = Golden(feed::golden::kRetransmitRequest5);
  bad_magic[0] = std::byte{'X'};
  requester.Send(bad_magic);
  Blob zero_token = Golden(feed::golden::kRetransmitRequest5);
  zero_token[22] = zero_token[23] = std::byte{0};
  requester.Send(zero_token);
  // Then a valid one (BeyondEnd: nothing sent yet): the thread takes them
  // in order, so its answer comes after the others were counted.
  requester.Retransmit(9, 1, 1, 4);
  const std::optional<feed::RefusedBody> body = RefusedOf(requester.Replies());
  ASSERT_TRUE(body.has_value()) << "only the valid request is answered";
  EXPECT_EQ(body->reason, feed::RefusedReason::kBeyondEnd);
  const FeedRequestCounters c = server->counters();
  const auto at = [&](feed::CheckCause cause) {
    return c.malformed[static_cast<std::size_t>(cause)];
  };
  EXPECT_EQ(at(feed::CheckCause::kTruncated), 1u);
  EXPECT_EQ(at(feed::CheckCause::kBadMagic), 1u);
  EXPECT_EQ(at(feed::CheckCause::kBadToken), 1u);
}

TEST(FeedRequestServer, ASourceOverItsBudgetIsToldOnceThenDropped) {
  auto server = OpenServer(/*per_second=*/1, /*burst=*/10);
  ASSERT_NE(server, nullptr);
  server->ring().Reset(1);
  (void)AppendPackets(server->ring(), 9, 1, 10);
  server->Start(9);
  Requester requester(server->local_endpoint());
  for (int i = 0; i < 40; ++i) requester.Retransmit(9, 1, 1, 1);
  // Another source (its own budget) asks last: answered after the flood
  // was taken, in order.
  Requester probe(server->local_endpoint(), "127.0.0.2:0");
  probe.Retransmit(9, 1, 1, 2);
  ASSERT_EQ(probe.Replies().size(), 1u);
  std::size_t data = 0;
  std::size_t rate_limited = 0;
  for (const Blob& reply : requester.Replies(11)) {
    const auto view =
        feed::PacketView::Parse(reply, feed::SessionFilter::Any());
    ASSERT_TRUE(view.ok());
    if (view->type() == feed::PacketType::kData) ++data;
    if (view->type() == feed::PacketType::kRefused &&
        view->refused().reason == feed::RefusedReason::kRateLimited) {
      ++rate_limited;
    }
  }
  // The burst, perhaps one refilled token, one RateLimited, the rest
  // dropped.
  EXPECT_GE(data, 10u);
  EXPECT_LE(data, 11u);
  EXPECT_EQ(rate_limited, 1u);
  const FeedRequestCounters c = server->counters();
  EXPECT_EQ(c.dropped, 40 - data - 1);
  EXPECT_EQ(c.retransmit_requests, data + 1);  // the probe's too
  EXPECT_EQ(
      c.refused[static_cast<std::size_t>(feed::RefusedReason::kRateLimited)],
      1u);
}

}  // namespace
}  // namespace orderwire::service
