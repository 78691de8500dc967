// The feed's request server and its ring (service/feed_request_server.h,
// service/feed_ring.h; docs/MARKETDATA.md "Retransmission"):
//   - the ring: what it retains, Copy from any retained sequence, wrap-around
//     (F moves, old sequences refused), and a reader on another thread
//     never gets torn bytes while the writer wraps;
//   - the server: the golden request/reply pairs of MARKETDATA.md byte for
//     byte, replies capped at 1024 messages and at the next sequence, each
//     Refused reason with F and next, malformed requests counted by cause
//     and never answered, the budget per source (RateLimited once a second,
//     beyond that dropped);
//   - snapshots (service/feed_replica.h): the golden SnapshotRequest and its
//     reply byte for byte, from a replica that followed the ring and from
//     one seeded; only committed messages followed; one instrument or all,
//     in the canonical order, rebuilding the books; each refusal; a replica
//     lost or not yet knowing S's timestamp; pacing that leaves
//     retransmissions answered; a new request ending the source's snapshot.
#include <sched.h>
#include <sys/resource.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/clock.h"
#include "codec/wire.h"
#include "feed/builder.h"
#include "feed/packet.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "net/udp.h"
#include "service/feed_replica.h"
#include "service/feed_request_server.h"
#include "service/feed_ring.h"
#include "tests/feed/golden.h"
#include "tests/support/feed_requester.h"
#include "tests/support/sanitizers.h"

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

// Minor page faults of this process so far.
long MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

TEST(FeedRing, FillingItTheFirstTimeFaultsNoPageIn) {
  // feed_ring.h "Cost": its pages are populated at construction, so the
  // loop's first lap through them takes no page fault (unpopulated, this
  // 8 MiB ring and its entries fault 2,816 pages in here, or 6 where the
  // kernel gives them huge pages).
  if (ORDERWIRE_TEST_UNDER_ASAN) {
    GTEST_SKIP() << "AddressSanitizer's shadow of the ring's pages faults "
                    "in on the first check of each";
  }
  constexpr std::size_t kBytes = std::size_t{8} << 20;
  FeedRing ring(kBytes);
  ring.Reset(1);
  const std::vector<std::byte> blocks(64, std::byte{0x5A});  // one entry's
  const long before = MinorFaults();
  for (std::uint64_t s = 1; s <= kBytes / blocks.size(); ++s) {
    ring.Append(s, 1, blocks);  // every byte and every entry, once
  }
  const long faults = MinorFaults() - before;
  EXPECT_LE(faults, 1) << "page faults while filling the ring";
  EXPECT_EQ(ring.Retained().next_sequence, kBytes / blocks.size() + 1);
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

using test_support::FeedRequester;

std::unique_ptr<FeedRequestServer> OpenServer(
    double per_second = 100, double burst = 100,
    double reply_messages_per_second = kDefaultRetransmitMessagesPerSecond,
    double datagrams_per_second = kDefaultRequestDatagramsPerSecond) {
  FeedRequestServerOptions options;
  options.datagrams_per_second = datagrams_per_second;
  options.listen = *net::Endpoint::Parse("127.0.0.1:0");
  options.ring_bytes = kMinFeedRingBytes;
  options.requests_per_second = per_second;
  options.burst = burst;
  options.retransmit_messages_per_second = reply_messages_per_second;
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
  FeedRequester requester(server->local_endpoint());
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
  FeedRequester requester(server->local_endpoint());
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
  FeedRequester requester(server->local_endpoint());
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

TEST(FeedRequestServer, RefusesOtherSessions) {
  auto server = OpenServer();
  ASSERT_NE(server, nullptr);
  server->ring().Reset(1);
  (void)AppendPackets(server->ring(), 9, 1, 10);
  server->Start(9);
  FeedRequester requester(server->local_endpoint());
  requester.Retransmit(8, 1, 1, 1);
  std::optional<feed::RefusedBody> body = RefusedOf(requester.Replies());
  ASSERT_TRUE(body.has_value());
  EXPECT_EQ(body->reason, feed::RefusedReason::kWrongSession);
  EXPECT_EQ(body->first_retained, 1u);
  EXPECT_EQ(body->next_sequence, 11u);
  std::array<std::byte, 64> out;
  const auto size = feed::EncodeSnapshotRequest(out, 8, 3, 0);
  requester.Send(std::span(out).first(*size));
  body = RefusedOf(requester.Replies());
  ASSERT_TRUE(body.has_value());
  EXPECT_EQ(body->reason, feed::RefusedReason::kWrongSession);
  EXPECT_EQ(server->counters().snapshot_requests, 1u);
}

// The server's thread is named, SCHED_OTHER at nice kRequestThreadNice:
// it yields a shared CPU to the loop, yet always runs
// (feed_request_server.h). Under SCHED_IDLE a FailoverFeed run beside the
// rest of the suite got no retransmission or snapshot in 60 s.
TEST(FeedRequestServer, ItsThreadIsNamedAndNiced) {
  auto server = OpenServer();
  ASSERT_NE(server, nullptr);
  server->ring().Reset(1);
  server->Start(9);
  // Answered once the thread runs (and has set its name and nice value).
  FeedRequester requester(server->local_endpoint());
  requester.Retransmit(8, 1, 1, 1);
  ASSERT_TRUE(RefusedOf(requester.Replies()).has_value());
  int found = 0;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name != service::kRequestThreadName) continue;
    ++found;
    std::ifstream stat(task.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)),
                     std::istreambuf_iterator<char>());
    // Fields after the parenthesised name, from state (field 3): nice is
    // field 19, policy field 41.
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::vector<std::string> f((std::istream_iterator<std::string>(fields)),
                               std::istream_iterator<std::string>());
    ASSERT_GT(f.size(), 38u);
    EXPECT_EQ(f[16], std::to_string(service::kRequestThreadNice));
    EXPECT_EQ(f[38], std::to_string(SCHED_OTHER));
  }
  EXPECT_EQ(found, 1);
}

TEST(FeedRequestServer, DropsMalformedRequestsCountingEachCause) {
  auto server = OpenServer();
  ASSERT_NE(server, nullptr);
  server->ring().Reset(1);
  server->Start(9);
  FeedRequester requester(server->local_endpoint());
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

// The server reads at most its datagram budget a second (the burst: one
// second's): 300 datagrams at 100 a second take it more than a second and
// a half, the reading throttled meanwhile; none is lost (the socket's
// buffer holds them) and the request sent after them is answered last.
TEST(FeedRequestServer, ReadsAtMostItsDatagramBudgetASecond) {
  auto server =
      OpenServer(/*per_second=*/100, /*burst=*/100,
                 kDefaultRetransmitMessagesPerSecond, /*datagrams=*/100);
  ASSERT_NE(server, nullptr);
  server->ring().Reset(1);
  server->Start(9);
  FeedRequester requester(server->local_endpoint());
  const std::int64_t start = base::MonotonicNs();
  for (int i = 0; i < 300; ++i) requester.Send(Blob(5, std::byte{0x4f}));
  requester.Retransmit(9, 1, 1, 4);
  const std::optional<feed::RefusedBody> body = RefusedOf(requester.Replies());
  const std::int64_t answered_ns = base::MonotonicNs() - start;
  ASSERT_TRUE(body.has_value()) << "the request after the flood";
  EXPECT_EQ(body->reason, feed::RefusedReason::kBeyondEnd);
  const FeedRequestCounters c = server->counters();
  EXPECT_EQ(c.malformed[static_cast<std::size_t>(feed::CheckCause::kTruncated)],
            300u);
  EXPECT_GE(c.throttled, 1u);
  // 301 datagrams: 100 at once, then 100 a second.
  EXPECT_GE(answered_ns, 1'900'000'000) << "read faster than the budget";
}

// All sources together get at most the reply budget's messages a second:
// each of three sources within its own budget asks for 1,024; the third is
// refused RateLimited once, then dropped, while the budget is spent.
TEST(FeedRequestServer, RepliesOfAllSourcesStayWithinTheMessageBudget) {
  auto server = OpenServer(/*per_second=*/100, /*burst=*/100,
                           /*reply_messages_per_second=*/2048);
  ASSERT_NE(server, nullptr);
  server->ring().Reset(1);
  (void)AppendPackets(server->ring(), 9, 1, 1100);
  server->Start(9);
  std::vector<std::unique_ptr<FeedRequester>> sources;
  for (const char* address : {"127.0.0.2:0", "127.0.0.3:0", "127.0.0.4:0"}) {
    sources.push_back(std::make_unique<FeedRequester>(
        server->local_endpoint(), *net::Endpoint::Parse(address)));
  }
  std::vector<std::vector<Blob>> replies;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    sources[i]->Retransmit(9, 1, 1024, static_cast<std::uint16_t>(i + 1));
    replies.push_back(sources[i]->Replies());
    ASSERT_FALSE(replies.back().empty()) << "source " << i;
  }
  sources[2]->Retransmit(9, 1, 1024, 9);  // within the second: dropped
  for (std::size_t i = 0; i < 2; ++i) {
    const auto view =
        feed::PacketView::Parse(replies[i][0], feed::SessionFilter::Any());
    ASSERT_TRUE(view.ok());
    EXPECT_EQ(view->type(), feed::PacketType::kData) << "source " << i;
  }
  std::optional<feed::RefusedBody> body = RefusedOf(replies[2]);
  ASSERT_TRUE(body.has_value());
  EXPECT_EQ(body->reason, feed::RefusedReason::kRateLimited);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const FeedRequestCounters c = server->counters();
  EXPECT_EQ(c.retransmit_requests, 2u);
  EXPECT_EQ(c.retransmit_messages, 2048u);
  EXPECT_EQ(c.dropped, 1u);
  EXPECT_EQ(
      c.refused[static_cast<std::size_t>(feed::RefusedReason::kRateLimited)],
      1u);
}

TEST(FeedRequestServer, ASourceOverItsBudgetIsToldOnceThenDropped) {
  auto server = OpenServer(/*per_second=*/1, /*burst=*/10);
  ASSERT_NE(server, nullptr);
  server->ring().Reset(1);
  (void)AppendPackets(server->ring(), 9, 1, 10);
  server->Start(9);
  FeedRequester requester(server->local_endpoint());
  for (int i = 0; i < 40; ++i) requester.Retransmit(9, 1, 1, 1);
  // Another source (its own budget) asks last: answered after the flood
  // was taken, in order.
  FeedRequester probe(server->local_endpoint(),
                      *net::Endpoint::Parse("127.0.0.2:0"));
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

// --- Snapshots -------------------------------------------------------------

// The golden feed's messages 1 to 6 applied to a book: the seed of a
// replica at S = 6.
FeedReplicaSeed GoldenSeed() {
  FeedReplicaSeed seed;
  for (const auto& g :
       {feed::golden::kStartOfFeed, feed::golden::kExecutedAdded}) {
    const Blob packet = Golden(g);
    const auto view =
        feed::PacketView::Parse(packet, feed::SessionFilter::Any());
    EXPECT_TRUE(view.ok());
    for (const feed::MessageBlock block : *view) {
      EXPECT_EQ(seed.book.Apply(block), marketdata::BookError::kOk);
    }
  }
  seed.sequence = 6;
  seed.timestamp = 1700000000000250000;  // T2
  return seed;
}

Blob SnapshotRequestBytes(std::uint64_t session, std::uint16_t token,
                          std::uint32_t instrument) {
  std::array<std::byte, 64> out;
  const auto size =
      feed::EncodeSnapshotRequest(out, session, token, instrument);
  return Blob(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(*size));
}

void SendSnapshotRequest(FeedRequester& requester, std::uint64_t session,
                         std::uint16_t token, std::uint32_t instrument) {
  requester.Send(SnapshotRequestBytes(session, token, instrument));
}

TEST(FeedRequestServerSnapshots, AnswerTheGoldenRequestByteForByte) {
  // A replica that followed the golden feed through the ring.
  auto followed = OpenServer();
  ASSERT_NE(followed, nullptr);
  AppendGolden(followed->ring(), /*from_five=*/false);
  followed->ring().Commit();
  followed->Start(feed::golden::kSession);
  FeedRequester a(followed->local_endpoint());
  a.Send(Golden(feed::golden::kSnapshotRequest));
  EXPECT_THAT(a.Replies(),
              ::testing::ElementsAre(Golden(feed::golden::kSnapshotReply)));
  // A replica seeded with the same books at S = 6.
  auto seeded = OpenServer();
  ASSERT_NE(seeded, nullptr);
  seeded->ring().Reset(7);
  seeded->Start(feed::golden::kSession, GoldenSeed());
  FeedRequester b(seeded->local_endpoint());
  b.Send(Golden(feed::golden::kSnapshotRequest));
  EXPECT_THAT(b.Replies(),
              ::testing::ElementsAre(Golden(feed::golden::kSnapshotReply)));
  // All instruments, session 0: the same but for SnapshotStart's
  // instrument_id (header 24, block length 2, offset 17).
  SendSnapshotRequest(b, 0, 8, 0);
  Blob expected = Golden(feed::golden::kSnapshotReply);
  expected[24 + 2 + 17] = std::byte{0};
  EXPECT_THAT(b.Replies(), ::testing::ElementsAre(expected));
  EXPECT_EQ(seeded->counters().snapshots_sent, 2u);
  EXPECT_EQ(seeded->counters().snapshot_requests, 2u);
}

// The snapshot's messages, from its packets in position order.
struct ReceivedSnapshot {
  std::vector<Blob> messages;
  std::uint16_t token = 0;
  std::size_t other_packets = 0;  // not the next Snapshot packet
};
ReceivedSnapshot Collect(const std::vector<Blob>& replies) {
  ReceivedSnapshot r;
  std::uint64_t position = 1;
  for (const Blob& reply : replies) {
    EXPECT_LE(reply.size(), feed::kMaxPacketBytes);
    const auto view =
        feed::PacketView::Parse(reply, feed::SessionFilter::Any());
    if (!view.ok() || view->type() != feed::PacketType::kSnapshot ||
        view->sequence() != position) {
      ++r.other_packets;
      continue;
    }
    r.token = view->token();
    for (const feed::MessageBlock block : *view) {
      r.messages.emplace_back(block.bytes().begin(), block.bytes().end());
      ++position;
    }
  }
  return r;
}

TEST(FeedRequestServerSnapshots, FollowOnlyWhatTheRingCommitted) {
  auto server = OpenServer();
  ASSERT_NE(server, nullptr);
  AppendGolden(server->ring(), /*from_five=*/false);
  server->Start(feed::golden::kSession);  // nothing committed: S = 0
  FeedRequester requester(server->local_endpoint());
  SendSnapshotRequest(requester, 0, 3, 0);
  ReceivedSnapshot got = Collect(requester.Snapshot());
  ASSERT_EQ(got.messages.size(), 2u);  // SnapshotStart(0), SnapshotEnd(0)
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(got.messages[0].data() + 9), 0u);
  server->ring().Commit();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  requester.Send(Golden(feed::golden::kSnapshotRequest));
  EXPECT_THAT(requester.Replies(),
              ::testing::ElementsAre(Golden(feed::golden::kSnapshotReply)));
}

// Instruments 1 to 3 listed, 4 Unlisted; `orders_per_book` orders on 1 and
// on 3, several levels and ties on both sides; S = 100 at timestamp 555.
FeedReplicaSeed ThreeBooks(std::size_t orders_per_book) {
  FeedReplicaSeed seed;
  for (std::uint32_t id = 1; id <= 4; ++id) {
    EXPECT_EQ(seed.book.Apply(feed::InstrumentDirectory{.timestamp = 1,
                                                        .instrument_id = id,
                                                        .min_price = 1,
                                                        .max_price = 1000 * id,
                                                        .min_quantity = id,
                                                        .max_quantity = 10000}),
              marketdata::BookError::kOk);
    EXPECT_EQ(seed.book.Apply(feed::TradingStatus{
                  .timestamp = 1,
                  .instrument_id = id,
                  .state = id == 4 ? feed::TradingState::kUnlisted
                                   : feed::TradingState::kTrading}),
              marketdata::BookError::kOk);
  }
  std::uint64_t order_id = 1;
  for (const std::uint32_t id : {1u, 3u}) {
    for (std::size_t i = 0; i < orders_per_book; ++i) {
      const bool buy = i % 2 == 0;
      EXPECT_EQ(seed.book.Apply(feed::OrderAdded{
                    .timestamp = 1,
                    .order_id = order_id++,
                    .instrument_id = id,
                    .side = buy ? codec::Side::kBuy : codec::Side::kSell,
                    .price = static_cast<std::int64_t>(buy ? 100 - (i * 7) % 5
                                                           : 200 + (i * 3) % 4),
                    .quantity = 1 + i % 9}),
                marketdata::BookError::kOk);
    }
  }
  seed.sequence = 100;
  seed.timestamp = 555;
  return seed;
}

// The orders of `book` (canonical order) of one instrument or all (0).
std::vector<marketdata::BookOrder> OrdersOf(const marketdata::Book& book,
                                            std::uint32_t instrument) {
  std::vector<marketdata::BookOrder> orders;
  book.ForEachOrder([&](const marketdata::BookOrder& o) {
    if (instrument == 0 || o.instrument_id.value() == instrument) {
      orders.push_back(o);
    }
  });
  return orders;
}

TEST(FeedRequestServerSnapshots, ListOneInstrumentOrAllInCanonicalOrder) {
  auto server = OpenServer();
  ASSERT_NE(server, nullptr);
  server->ring().Reset(101);
  const FeedReplicaSeed seed = ThreeBooks(300);  // 600 orders: 17 packets
  server->Start(77, seed);
  FeedRequester requester(server->local_endpoint());
  for (const std::uint32_t instrument : {0u, 3u, 2u}) {
    SendSnapshotRequest(requester, 77, 40, instrument);
    const ReceivedSnapshot got = Collect(requester.Snapshot());
    EXPECT_EQ(got.other_packets, 0u);
    EXPECT_EQ(got.token, 40u);
    ASSERT_GE(got.messages.size(), 2u);
    // SnapshotStart(100, instrument, count), ..., SnapshotEnd(100), at 555.
    const Blob& start = got.messages.front();
    ASSERT_EQ(start[0], std::byte{'G'});
    EXPECT_EQ(codec::LoadLE<std::uint64_t>(start.data() + 9), 100u);
    EXPECT_EQ(codec::LoadLE<std::uint32_t>(start.data() + 17), instrument);
    EXPECT_EQ(codec::LoadLE<std::uint32_t>(start.data() + 21),
              got.messages.size());
    ASSERT_EQ(got.messages.back()[0], std::byte{'Z'});
    EXPECT_EQ(codec::LoadLE<std::uint64_t>(got.messages.back().data() + 9),
              100u);
    // Applied to an empty book, in order, they rebuild the books asked for,
    // each queue in its order; the OrderAdded come in the canonical order.
    marketdata::Book rebuilt;
    std::vector<std::uint32_t> instruments;
    std::vector<marketdata::BookOrder> added;
    for (const Blob& m : got.messages) {
      EXPECT_EQ(codec::LoadLE<std::uint64_t>(m.data() + 1), 555u);
      ASSERT_EQ(rebuilt.ApplyMessage(m), marketdata::BookError::kOk);
      if (m[0] == std::byte{'R'}) {
        instruments.push_back(codec::LoadLE<std::uint32_t>(m.data() + 9));
      }
      if (m[0] == std::byte{'A'}) {
        added.push_back(*rebuilt.FindOrder(
            codec::OrderId(codec::LoadLE<std::uint64_t>(m.data() + 9))));
      }
    }
    const std::vector<std::uint32_t> listed =
        instrument == 0 ? std::vector<std::uint32_t>{1, 2, 3}
                        : std::vector<std::uint32_t>{instrument};
    EXPECT_EQ(instruments, listed);
    EXPECT_EQ(added, OrdersOf(seed.book, instrument));
    EXPECT_EQ(OrdersOf(rebuilt, 0), OrdersOf(seed.book, instrument));
    for (const std::uint32_t id : listed) {
      EXPECT_EQ(rebuilt.FindInstrument(codec::InstrumentId(id))->max_price,
                codec::Price(1000 * id));
    }
  }
  EXPECT_EQ(server->counters().snapshots_sent, 3u);
}

// The reason of the Refused among `replies`, if there is one.
std::optional<feed::RefusedReason> ReasonOf(const std::vector<Blob>& replies) {
  for (const Blob& reply : replies) {
    const auto view =
        feed::PacketView::Parse(reply, feed::SessionFilter::Any());
    if (view.ok() && view->type() == feed::PacketType::kRefused) {
      return view->refused().reason;
    }
  }
  return std::nullopt;
}

std::unique_ptr<FeedRequestServer> OpenPacedServer(double bytes_per_second) {
  FeedRequestServerOptions options;
  options.listen = *net::Endpoint::Parse("127.0.0.1:0");
  options.ring_bytes = kMinFeedRingBytes;
  options.snapshot_bytes_per_second = bytes_per_second;
  absl::StatusOr<std::unique_ptr<FeedRequestServer>> server =
      FeedRequestServer::Open(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

TEST(FeedRequestServerSnapshots, RefuseWhatTheContractRefusesInItsOrder) {
  // Slow: a snapshot of 100 orders (3 packets, 4 KB) stays under way for
  // 11 s after its first packet.
  auto server = OpenPacedServer(256);
  ASSERT_NE(server, nullptr);
  server->ring().Reset(101);
  server->Start(77, ThreeBooks(50));
  const net::Endpoint at = server->local_endpoint();
  FeedRequester requester(at);
  SendSnapshotRequest(requester, 78, 1, 0);
  EXPECT_EQ(ReasonOf(requester.Replies()), feed::RefusedReason::kWrongSession);
  SendSnapshotRequest(requester, 77, 2, 9);  // not in the directory
  EXPECT_EQ(ReasonOf(requester.Replies()),
            feed::RefusedReason::kUnknownInstrument);
  SendSnapshotRequest(requester, 77, 3, 4);  // Unlisted
  EXPECT_EQ(ReasonOf(requester.Replies()),
            feed::RefusedReason::kUnknownInstrument);
  // Six snapshots a minute per source address, each ending the one before.
  for (std::uint16_t token = 10; token < 16; ++token) {
    SendSnapshotRequest(requester, 77, token, 0);
    const std::vector<Blob> replies = requester.Replies();
    ASSERT_FALSE(replies.empty());
    EXPECT_EQ(Collect({replies.front()}).token, token);
  }
  SendSnapshotRequest(requester, 77, 16, 0);
  EXPECT_EQ(ReasonOf(requester.Replies()), feed::RefusedReason::kRateLimited);
  // ... the seventh ended the sixth: none under way. Four in all from
  // other addresses; a fifth address gets Unavailable.
  std::vector<std::unique_ptr<FeedRequester>> others;
  for (int i = 2; i <= 6; ++i) {
    others.push_back(std::make_unique<FeedRequester>(
        at, *net::Endpoint::Parse(absl::StrFormat("127.0.0.%d:0", i))));
    SendSnapshotRequest(*others.back(), 0, 30, 0);
    const std::vector<Blob> replies = others.back()->Replies();
    if (i <= 5) {
      ASSERT_FALSE(replies.empty()) << i;
      EXPECT_EQ(Collect({replies.front()}).token, 30u) << i;
    } else {
      EXPECT_EQ(ReasonOf(replies), feed::RefusedReason::kUnavailable);
    }
  }
  const FeedRequestCounters c = server->counters();
  const auto refused = [&](feed::RefusedReason reason) {
    return c.refused[static_cast<std::size_t>(reason)];
  };
  EXPECT_EQ(refused(feed::RefusedReason::kWrongSession), 1u);
  EXPECT_EQ(refused(feed::RefusedReason::kUnknownInstrument), 2u);
  EXPECT_EQ(refused(feed::RefusedReason::kRateLimited), 1u);
  EXPECT_EQ(refused(feed::RefusedReason::kUnavailable), 1u);
  EXPECT_EQ(c.snapshot_requests, 3u + 7u + 5u);
  EXPECT_EQ(c.snapshots_sent, 0u);  // all ended or still under way
}

// Snapshots are replies too: the replies' budget of all sources is
// charged each book (its orders + 2 before it is made, the rest once it
// is: 108 messages here), so that forged sources cannot make the server
// send books beyond it. Two from two sources fit 220 a second; a third
// source is refused RateLimited, then dropped.
TEST(FeedRequestServerSnapshots, AreChargedToTheRepliesBudgetOfAllSources) {
  FeedRequestServerOptions options;
  options.listen = *net::Endpoint::Parse("127.0.0.1:0");
  options.ring_bytes = kMinFeedRingBytes;
  options.retransmit_messages_per_second = 220;
  absl::StatusOr<std::unique_ptr<FeedRequestServer>> server =
      FeedRequestServer::Open(options);
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->ring().Reset(101);
  (*server)->Start(77, ThreeBooks(50));
  const net::Endpoint at = (*server)->local_endpoint();
  for (int i = 2; i <= 3; ++i) {
    FeedRequester source(
        at, *net::Endpoint::Parse(absl::StrFormat("127.0.0.%d:0", i)));
    SendSnapshotRequest(source, 77, 5, 0);
    const ReceivedSnapshot snapshot =
        Collect(source.Await([](const std::vector<Blob>& r) {
          return Collect(r).messages.size() >= 108;
        }));
    EXPECT_EQ(snapshot.messages.size(), 108u) << i;
  }
  FeedRequester third(at, *net::Endpoint::Parse("127.0.0.4:0"));
  SendSnapshotRequest(third, 77, 6, 0);
  EXPECT_EQ(ReasonOf(third.Replies()), feed::RefusedReason::kRateLimited);
  SendSnapshotRequest(third, 77, 7, 0);
  third.Send(SnapshotRequestBytes(77, 8, 0));
  // A retransmission request after them: answered, so they were handled.
  third.Retransmit(78, 1, 1, 9);
  EXPECT_EQ(ReasonOf(third.Replies()), feed::RefusedReason::kWrongSession);
  const FeedRequestCounters c = (*server)->counters();
  EXPECT_EQ(c.snapshots_sent, 2u);
  EXPECT_EQ(
      c.refused[static_cast<std::size_t>(feed::RefusedReason::kRateLimited)],
      1u);
  EXPECT_EQ(c.dropped, 2u);
}

TEST(FeedRequestServerSnapshots, UnavailableWhileSTimestampIsUnknown) {
  auto server = OpenServer();
  ASSERT_NE(server, nullptr);
  // Restarted from a snapshot file at S = 6 whose tail made no message.
  FeedReplicaSeed seed = GoldenSeed();
  seed.timestamp = std::nullopt;
  server->ring().Reset(7);
  server->Start(feed::golden::kSession, std::move(seed));
  FeedRequester requester(server->local_endpoint());
  requester.Send(Golden(feed::golden::kSnapshotRequest));
  EXPECT_EQ(ReasonOf(requester.Replies()), feed::RefusedReason::kUnavailable);
  // Message 7 (OrderReduced order 2 by 40, at T2) is followed: S = 7.
  const Blob reduced = feed::golden::FromHex(
      "5890d02d36fe9c971702000000000000002a0000002800000000000000");
  Blob block(2);
  codec::StoreLE(block.data(), static_cast<std::uint16_t>(reduced.size()));
  block.insert(block.end(), reduced.begin(), reduced.end());
  server->ring().Append(7, 1, block);
  server->ring().Commit();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  requester.Send(Golden(feed::golden::kSnapshotRequest));
  const ReceivedSnapshot got = Collect(requester.Snapshot());
  ASSERT_EQ(got.messages.size(), 5u);
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(got.messages[0].data() + 9), 7u);
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(got.messages[3].data() + 30), 60u);
}

TEST(FeedRequestServerSnapshots, UnavailableForGoodOnceTheReplicaIsLost) {
  auto server = OpenServer();
  ASSERT_NE(server, nullptr);
  // The ring wrapped before the replica (at S = 0) followed it.
  server->ring().Reset(1);
  (void)AppendPackets(server->ring(), 9, 1, 20000);
  server->ring().Commit();
  server->Start(9);
  FeedRequester requester(server->local_endpoint());
  SendSnapshotRequest(requester, 9, 1, 0);
  EXPECT_EQ(ReasonOf(requester.Replies()), feed::RefusedReason::kUnavailable);
  EXPECT_EQ(server->counters().replica_lost, 1u);
  // Retransmission goes on.
  requester.Retransmit(9, 19990, 5, 2);
  const std::vector<Blob> replies = requester.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(
      feed::PacketView::Parse(replies[0], feed::SessionFilter::Any())->count(),
      5u);
}

TEST(FeedRequestServerSnapshots, PacingLeavesRetransmissionsAnswered) {
  // 20,000 orders, about 800 KB, at 100 KB/s: 8 s under way.
  auto server = OpenPacedServer(100'000);
  ASSERT_NE(server, nullptr);
  server->ring().Reset(1);
  (void)AppendPackets(server->ring(), 77, 101, 10);  // not committed
  server->Start(77, ThreeBooks(10000));
  FeedRequester snapshotter(server->local_endpoint());
  FeedRequester retransmitter(server->local_endpoint());
  SendSnapshotRequest(snapshotter, 77, 1, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::int64_t asked_ns = base::MonotonicNs();
  retransmitter.Retransmit(77, 101, 10, 2);
  std::vector<Blob> replies = retransmitter.Replies();
  ASSERT_FALSE(replies.empty());
  EXPECT_LT(base::MonotonicNs() - asked_ns, 1'000'000'000);
  EXPECT_EQ(
      feed::PacketView::Parse(replies[0], feed::SessionFilter::Any())->type(),
      feed::PacketType::kData);
  // Paced: after ~0.4 s, far less than the whole snapshot has come.
  const ReceivedSnapshot first = Collect(snapshotter.RepliesFor(300));
  EXPECT_GT(first.messages.size(), 10u);
  EXPECT_LT(first.messages.size(), 5000u);
  EXPECT_EQ(server->counters().snapshots_sent, 0u);
  // A new request from the source ends it: a small snapshot follows, and
  // nothing more of the first.
  SendSnapshotRequest(snapshotter, 77, 2, 2);
  std::size_t of_first = 0;
  std::size_t of_second = 0;
  for (const Blob& reply : snapshotter.RepliesFor(1000)) {
    const auto view =
        feed::PacketView::Parse(reply, feed::SessionFilter::Any());
    ASSERT_TRUE(view.ok());
    (view->token() == 1 ? of_first : of_second) += 1;
  }
  // At most what fell due before the request was read (not ~70 a second).
  EXPECT_LE(of_first, 10u);
  EXPECT_EQ(of_second, 1u);
  EXPECT_EQ(server->counters().snapshots_sent, 1u);
}

}  // namespace
}  // namespace orderwire::service
