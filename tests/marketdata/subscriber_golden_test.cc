// marketdata::Subscriber on docs/MARKETDATA-GOLDEN.md: the live
// packets followed from the start; a gap after the start of feed asked for
// with the golden RetransmitRequest's bytes (token 7) and filled by its
// golden reply; a refusal of the golden BeyondEnd; a late join rebuilt from
// the golden snapshot reply (token 8); EndOfSession counted.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/strong.h"
#include "codec/types.h"
#include "feed/types.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "marketdata/subscriber.h"
#include "tests/feed/feed_test_support.h"
#include "tests/feed/golden.h"
#include "tests/marketdata/book_test_support.h"
#include "tests/marketdata/subscriber_test_support.h"

namespace orderwire::marketdata::subscriber_golden {
namespace {

namespace golden = feed::golden;
using subscriber_test::Recorder;

std::vector<std::byte> GoldenPacket(const golden::GoldenBytes& g) {
  std::vector<std::byte> bytes = golden::FromHex(g.hex);
  EXPECT_EQ(bytes.size(), g.size) << g.name;
  return bytes;
}

// The book after golden message 6: order 2, Sell 10040, 100, alone.
void ExpectGoldenBook(const Book& book) {
  EXPECT_EQ(test::Orders(book), std::vector<BookOrder>{test::Order(
                                    2, 42, test::Side::kSell, 10040, 100)});
  const auto info = book.FindInstrument(codec::InstrumentId(42));
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->max_price.value(), 1000000000);
  EXPECT_EQ(info->state, feed::TradingState::kTrading);
}

TEST(SubscriberGolden, FollowsTheGoldenFeed) {
  Recorder recorder;
  SubscriberOptions options;
  options.first_sequence = 1;
  Subscriber sub(options, recorder);
  sub.OnPacket(GoldenPacket(golden::kStartOfFeed), 0);
  sub.OnPacket(GoldenPacket(golden::kExecutedAdded), 0);
  sub.OnPacket(GoldenPacket(golden::kHeartbeat), 0);
  sub.OnPacket(GoldenPacket(golden::kEndOfSession), 0);
  EXPECT_EQ(sub.session(), golden::kSession);
  EXPECT_EQ(sub.next_sequence(), 7U);
  ExpectGoldenBook(sub.book());
  EXPECT_EQ(recorder.trades, std::vector<std::uint64_t>{5});
  EXPECT_EQ(sub.counters().end_of_session, 1U);
  EXPECT_TRUE(recorder.requests.empty());
}

TEST(SubscriberGolden, AsksWithTheGoldenRequestAndAppliesItsReply) {
  Recorder recorder;
  SubscriberOptions options;
  options.first_sequence = 1;
  options.first_token = 7;
  Subscriber sub(options, recorder);
  sub.OnPacket(GoldenPacket(golden::kStartOfFeed), 0);
  sub.OnPacket(GoldenPacket(golden::kHeartbeat), 0);  // 5, 6 missing
  ASSERT_EQ(recorder.raw.size(), 1U);
  EXPECT_EQ(feed::test::Hex(recorder.raw[0]), golden::kRetransmitRequest5.hex);
  std::vector<std::byte> reply = GoldenPacket(golden::kExecutedAdded);
  reply[22] = std::byte{0x07};  // "bytes 22-23 0700"
  sub.OnPacket(reply, 0);
  EXPECT_EQ(sub.next_sequence(), 7U);
  EXPECT_EQ(sub.counters().retransmit_replies, 1U);
  ExpectGoldenBook(sub.book());
}

TEST(SubscriberGolden, TheGoldenBeyondEndOfItsTokenStartsASnapshot) {
  Recorder recorder;
  SubscriberOptions options;
  options.first_sequence = 1;
  options.first_token = 9;
  Subscriber sub(options, recorder);
  sub.OnPacket(GoldenPacket(golden::kStartOfFeed), 0);
  // A Heartbeat of next 13 (made, not golden): a gap from 5.
  subscriber_test::FeedScript script(golden::kSession);
  sub.OnPacket(script.Heartbeat(13), 0);
  ASSERT_EQ(recorder.requests.size(), 1U);
  ASSERT_EQ(recorder.requests[0].token, 9U);
  sub.OnPacket(GoldenPacket(golden::kRefusedBeyondEnd), 0);
  EXPECT_EQ(sub.counters().refused_for(feed::RefusedReason::kBeyondEnd), 1U);
  ASSERT_EQ(recorder.requests.size(), 2U);
  EXPECT_EQ(recorder.requests[1].type, feed::PacketType::kSnapshotRequest);
}

TEST(SubscriberGolden, JoinsLateFromTheGoldenSnapshot) {
  Recorder recorder;
  SubscriberOptions options;
  options.session = golden::kSession;
  options.first_token = 8;
  Subscriber sub(options, recorder);
  sub.Poll(0);
  ASSERT_EQ(recorder.requests.size(), 1U);
  EXPECT_EQ(recorder.requests[0].token, 8U);
  EXPECT_EQ(recorder.requests[0].session, golden::kSession);
  sub.OnPacket(GoldenPacket(golden::kSnapshotReply), 0);
  EXPECT_EQ(sub.state(), SubscriberState::kFollowing);
  EXPECT_EQ(sub.next_sequence(), 7U);
  EXPECT_EQ(recorder.snapshots, std::vector<std::uint64_t>{6});
  ExpectGoldenBook(sub.book());
  ASSERT_FALSE(recorder.best.empty());
  EXPECT_EQ(recorder.best.back().first, 42U);
  ASSERT_TRUE(recorder.best.back().second.ask.has_value());
  EXPECT_EQ(recorder.best.back().second.ask->price.value(), 10040);
  sub.OnPacket(GoldenPacket(golden::kExecutedAdded), 0);  // all duplicates
  EXPECT_EQ(sub.counters().duplicates, 2U);
  ExpectGoldenBook(sub.book());
}

}  // namespace
}  // namespace orderwire::marketdata::subscriber_golden
