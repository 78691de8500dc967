// marketdata::Subscriber against docs/MARKETDATA.md "A subscriber" (steps
// 1 to 7) and "Errors and counters": sequencing, duplicates, gaps filled
// by retransmission, retry timing, refusals by reason, snapshot recovery
// (late join, a lost snapshot packet, a contradiction), heartbeats,
// staleness, sessions and malformed packets, one rule to a test.
#include "marketdata/subscriber.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "codec/strong.h"
#include "codec/types.h"
#include "feed/builder.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "feed/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "tests/feed/feed_test_support.h"
#include "tests/marketdata/book_test_support.h"
#include "tests/marketdata/subscriber_test_support.h"

namespace orderwire::marketdata::subscriber_unit {
namespace {

using feed::PacketType;
using feed::RefusedReason;
using subscriber_test::Bytes;
using subscriber_test::FeedScript;
using subscriber_test::Recorder;
using subscriber_test::SnapshotOf;
using test::Side;
using ::testing::ElementsAre;

constexpr std::uint64_t kFeedSession = 0x5EED;
constexpr std::uint32_t kInstrument = 7;
constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kT0 = 1'000 * kMs;

// Messages 1 to 3 list the instrument; then `orders` OrderAdded, one a
// message (ids 1..orders, bids at 100 - id % 5), every fifth executed in
// part by the next message.
FeedScript MakeFeed(int orders) {
  FeedScript feed(kFeedSession);
  feed.Add(feed::SystemEvent{test::kTs, feed::SystemEventCode::kStartOfFeed});
  feed.Add(test::Directory(kInstrument));
  feed.Add(test::Status(kInstrument, feed::TradingState::kTrading));
  for (int i = 1; i <= orders; ++i) {
    const auto id = static_cast<std::uint64_t>(i);
    const std::int64_t price = 100 - i % 5;
    feed.Add(test::Added(id, kInstrument, Side::kBuy, price, 10));
    if (i % 5 == 0) {
      feed.Add(test::Executed(id, kInstrument, Side::kBuy, price, 3));
    }
  }
  return feed;
}

// The book after feed messages 1 to `last`.
Book BookAt(const FeedScript& feed, std::uint64_t last) {
  Book book;
  for (std::uint64_t s = 1; s <= last; ++s) {
    EXPECT_EQ(book.ApplyMessage(feed.message(s)), BookError::kOk);
  }
  return book;
}

SubscriberOptions FromStart() {
  SubscriberOptions options;
  options.first_sequence = 1;
  options.session = kFeedSession;
  return options;
}

class SubscriberTest : public ::testing::Test {
 protected:
  void Start(const SubscriberOptions& options) {
    sub_.emplace(options, recorder_);
    sub_->Poll(now_);
  }
  void Receive(const Bytes& packet) { sub_->OnPacket(packet, now_); }
  void At(std::int64_t t) {
    now_ = t;
    sub_->Poll(now_);
  }
  void ExpectBookAt(std::uint64_t last) {
    EXPECT_EQ(test::Dump(sub_->book()), test::Dump(BookAt(feed_, last)));
    EXPECT_EQ(sub_->next_sequence(), last + 1);
  }
  [[nodiscard]] const SubscriberCounters& counters() const {
    return sub_->counters();
  }

  FeedScript feed_ = MakeFeed(30);  // 39 messages
  Recorder recorder_;
  std::optional<Subscriber> sub_;
  std::int64_t now_ = kT0;
};

TEST_F(SubscriberTest, AppliesInOrderAndTellsTheListener) {
  Start(FromStart());
  ASSERT_EQ(feed_.next(), 40U);
  for (const Bytes& p : feed_.Packets(1, 39)) Receive(p);
  ExpectBookAt(39);
  EXPECT_EQ(recorder_.sequences.size(), 39U);
  EXPECT_EQ(recorder_.sequences.front(), 1U);
  EXPECT_EQ(recorder_.sequences.back(), 39U);
  EXPECT_EQ(recorder_.trades.size(), 6U);  // one OrderExecuted a fifth
  EXPECT_EQ(counters().messages_applied, 39U);
  EXPECT_TRUE(recorder_.requests.empty());
  EXPECT_EQ(sub_->state(), SubscriberState::kFollowing);
  // Best bid: 100 (ids 5, 10, ... at 100 - 0), executed in part.
  ASSERT_FALSE(recorder_.best.empty());
  const BestPrices& last = recorder_.best.back().second;
  ASSERT_TRUE(last.bid.has_value());
  EXPECT_EQ(last.bid->price.value(), 100);
  EXPECT_FALSE(last.ask.has_value());
  EXPECT_EQ(sub_->book().Best(codec::InstrumentId(kInstrument), Side::kBuy),
            last.bid);
}

TEST_F(SubscriberTest, BestPricesAreToldOnlyWhenTheyChange) {
  Start(FromStart());
  Receive(feed_.Data(1, 3));  // listed: no best yet, nothing told
  EXPECT_TRUE(recorder_.best.empty());
  Receive(feed_.Data(4, 4));  // order 1 at 99: bid 99x10
  ASSERT_EQ(recorder_.best.size(), 1U);
  EXPECT_EQ(recorder_.best[0].second.bid->price.value(), 99);
  Receive(feed_.Data(5, 5));  // order 2 at 98: the best is unchanged
  EXPECT_EQ(recorder_.best.size(), 1U);
}

TEST_F(SubscriberTest, SkipsDuplicatesAndCountsThem) {
  Start(FromStart());
  Receive(feed_.Data(1, 10));
  Receive(feed_.Data(1, 10));  // all old
  Receive(feed_.Data(8, 12));  // 8 to 10 old, 11 and 12 new
  ExpectBookAt(12);
  EXPECT_EQ(counters().duplicates, 13U);
  EXPECT_EQ(recorder_.sequences.size(), 12U);  // each applied once
  EXPECT_TRUE(recorder_.requests.empty());
}

TEST_F(SubscriberTest, FillsAGapFromARetransmissionAndHeldPackets) {
  Start(FromStart());
  Receive(feed_.Data(1, 3));
  Receive(feed_.Data(7, 9));  // gap [4, 6]
  ASSERT_EQ(recorder_.requests.size(), 1U);
  const auto& request = recorder_.requests[0];
  EXPECT_EQ(request.type, PacketType::kRetransmitRequest);
  EXPECT_EQ(request.session, kFeedSession);
  EXPECT_EQ(request.sequence, 4U);
  EXPECT_EQ(request.count, 3U);
  EXPECT_NE(request.token, 0U);
  Receive(feed_.Data(10, 12));  // still held, no second request
  EXPECT_EQ(recorder_.requests.size(), 1U);
  EXPECT_EQ(sub_->held(), 2U);
  EXPECT_EQ(sub_->next_sequence(), 4U);
  Receive(feed_.Data(4, 6, request.token));
  ExpectBookAt(12);
  EXPECT_EQ(sub_->held(), 0U);
  EXPECT_EQ(counters().gaps, 1U);
  EXPECT_EQ(counters().messages_missing, 3U);
  EXPECT_EQ(counters().retransmit_replies, 1U);
  EXPECT_EQ(recorder_.sequences.size(), 12U);
  for (std::size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(recorder_.sequences[i], i + 1);  // in sequence order
  }
  At(now_ + 100 * kMs);  // nothing asked again once filled
  EXPECT_EQ(recorder_.requests.size(), 1U);
}

TEST_F(SubscriberTest, AsksForAtMost1024AndThenTheRest) {
  FeedScript big = MakeFeed(1100);  // 1323 messages
  feed_ = big;
  Start(FromStart());
  Receive(feed_.Data(1, 3));
  Receive(feed_.Data(1300, 1301));  // gap [4, 1299]: 1296 messages
  ASSERT_EQ(recorder_.requests.size(), 1U);
  EXPECT_EQ(recorder_.requests[0].sequence, 4U);
  EXPECT_EQ(recorder_.requests[0].count, kMaxRetransmitCount);
  for (const Bytes& p : feed_.Packets(4, 1027, recorder_.requests[0].token)) {
    Receive(p);
  }
  ASSERT_EQ(recorder_.requests.size(), 2U);  // at once, the rest
  EXPECT_EQ(recorder_.requests[1].sequence, 1028U);
  EXPECT_EQ(recorder_.requests[1].count, 1299U - 1028U + 1U);
  EXPECT_NE(recorder_.requests[1].token, recorder_.requests[0].token);
  for (const Bytes& p : feed_.Packets(1028, 1299, 9)) Receive(p);
  ExpectBookAt(1301);
}

TEST_F(SubscriberTest, AsksAgainEvery50MsThenRecoversBySnapshot) {
  Start(FromStart());
  Receive(feed_.Data(1, 3));
  Receive(feed_.Data(7, 9));
  ASSERT_EQ(recorder_.requests.size(), 1U);
  At(kT0 + 49 * kMs);
  EXPECT_EQ(recorder_.requests.size(), 1U);
  At(kT0 + 50 * kMs);
  ASSERT_EQ(recorder_.requests.size(), 2U);
  EXPECT_EQ(recorder_.requests[1].type, PacketType::kRetransmitRequest);
  EXPECT_EQ(recorder_.requests[1].sequence, 4U);
  EXPECT_NE(recorder_.requests[1].token, recorder_.requests[0].token);
  At(kT0 + 99 * kMs);
  EXPECT_EQ(recorder_.requests.size(), 2U);
  At(kT0 + 100 * kMs);
  ASSERT_EQ(recorder_.requests.size(), 3U);
  EXPECT_EQ(recorder_.requests[2].type, PacketType::kRetransmitRequest);
  EXPECT_EQ(sub_->state(), SubscriberState::kFollowing);
  At(kT0 + 150 * kMs);  // three tries without progress
  ASSERT_EQ(recorder_.requests.size(), 4U);
  EXPECT_EQ(recorder_.requests[3].type, PacketType::kSnapshotRequest);
  EXPECT_EQ(recorder_.requests[3].instrument_id, 0U);
  EXPECT_EQ(sub_->state(), SubscriberState::kRecovering);
  EXPECT_EQ(counters().retransmit_requests, 3U);
  EXPECT_EQ(counters().snapshot_requests, 1U);
}

TEST_F(SubscriberTest, AReplyToAnEarlierRequestIsAppliedAllTheSame) {
  Start(FromStart());
  Receive(feed_.Data(1, 3));
  Receive(feed_.Data(7, 9));
  At(kT0 + 50 * kMs);  // asked again, a new token
  ASSERT_EQ(recorder_.requests.size(), 2U);
  Receive(feed_.Data(4, 6, recorder_.requests[0].token));  // the old one's
  ExpectBookAt(9);
  Receive(feed_.Data(4, 6, recorder_.requests[1].token));  // duplicates
  EXPECT_EQ(counters().duplicates, 3U);
  EXPECT_EQ(counters().stale_replies, 0U);
}

TEST_F(SubscriberTest, WrongSessionToASnapshotRequestStops) {
  Start(SubscriberOptions());
  Receive(feed_.Refused(0, recorder_.requests[0].token,
                        RefusedReason::kWrongSession));
  EXPECT_EQ(sub_->state(), SubscriberState::kStopped);
  At(kT0 + 5'000 * kMs);
  EXPECT_EQ(recorder_.requests.size(), 1U);
}

TEST_F(SubscriberTest, ProgressResetsTheTries) {
  Start(FromStart());
  Receive(feed_.Data(1, 3));
  Receive(feed_.Data(10, 12));  // gap [4, 9]
  At(kT0 + 50 * kMs);
  At(kT0 + 100 * kMs);
  ASSERT_EQ(recorder_.requests.size(), 3U);
  Receive(feed_.Data(4, 5, recorder_.requests[2].token));  // part of it
  At(kT0 + 150 * kMs);  // progress: asked again, not a snapshot
  ASSERT_EQ(recorder_.requests.size(), 4U);
  EXPECT_EQ(recorder_.requests[3].type, PacketType::kRetransmitRequest);
  EXPECT_EQ(recorder_.requests[3].sequence, 6U);
  EXPECT_EQ(recorder_.requests[3].count, 4U);
}

class RefusedTest : public SubscriberTest {
 protected:
  // A gap [4, 6] asked for; returns the request's token.
  std::uint16_t Gap() {
    Start(FromStart());
    Receive(feed_.Data(1, 3));
    Receive(feed_.Data(7, 9));
    EXPECT_EQ(recorder_.requests.size(), 1U);
    return recorder_.requests.at(0).token;
  }
};

TEST_F(RefusedTest, NotRetainedRecoversBySnapshot) {
  Receive(feed_.Refused(4, Gap(), RefusedReason::kNotRetained));
  ASSERT_EQ(recorder_.requests.size(), 2U);
  EXPECT_EQ(recorder_.requests[1].type, PacketType::kSnapshotRequest);
  EXPECT_EQ(counters().refused_for(RefusedReason::kNotRetained), 1U);
  EXPECT_EQ(counters().contradictions, 0U);
  EXPECT_EQ(sub_->state(), SubscriberState::kRecovering);
}

TEST_F(RefusedTest, BeyondEndIsAContradictionAndRecoversBySnapshot) {
  Receive(feed_.Refused(4, Gap(), RefusedReason::kBeyondEnd));
  ASSERT_EQ(recorder_.requests.size(), 2U);
  EXPECT_EQ(recorder_.requests[1].type, PacketType::kSnapshotRequest);
  EXPECT_EQ(counters().refused_for(RefusedReason::kBeyondEnd), 1U);
  EXPECT_EQ(counters().contradictions, 1U);
}

TEST_F(RefusedTest, RateLimitedAndUnavailableAskAgainInOneSecond) {
  for (const RefusedReason reason :
       {RefusedReason::kRateLimited, RefusedReason::kUnavailable,
        static_cast<RefusedReason>(9)}) {
    SCOPED_TRACE(static_cast<int>(reason));
    recorder_ = Recorder();
    now_ = kT0;
    Receive(feed_.Refused(4, Gap(), reason));
    At(kT0 + 999 * kMs);  // not at 50 ms
    EXPECT_EQ(recorder_.requests.size(), 1U);
    At(kT0 + 1000 * kMs);
    ASSERT_EQ(recorder_.requests.size(), 2U);
    EXPECT_EQ(recorder_.requests[1].type, PacketType::kRetransmitRequest);
    EXPECT_EQ(recorder_.requests[1].sequence, 4U);
    EXPECT_EQ(counters().refused_for(reason), 1U);
    // A refused request was answered: three unanswered ones from here
    // before a snapshot.
    At(kT0 + 1050 * kMs);
    At(kT0 + 1100 * kMs);
    EXPECT_EQ(recorder_.requests.back().type, PacketType::kRetransmitRequest);
    EXPECT_EQ(recorder_.requests.size(), 4U);
    At(kT0 + 1150 * kMs);
    EXPECT_EQ(recorder_.requests.back().type, PacketType::kSnapshotRequest);
  }
}

TEST_F(RefusedTest, WrongSessionStopsForGood) {
  Receive(feed_.Refused(4, Gap(), RefusedReason::kWrongSession));
  EXPECT_EQ(sub_->state(), SubscriberState::kStopped);
  EXPECT_EQ(recorder_.states.back(), SubscriberState::kStopped);
  EXPECT_EQ(counters().refused_for(RefusedReason::kWrongSession), 1U);
  const std::uint64_t packets = counters().packets;
  Receive(feed_.Data(4, 12));
  At(kT0 + 10'000 * kMs);
  EXPECT_EQ(counters().packets, packets);
  EXPECT_EQ(recorder_.requests.size(), 1U);
  EXPECT_EQ(sub_->next_sequence(), 4U);
}

TEST_F(RefusedTest, ARefusalOfAnotherTokenIsStale) {
  const std::uint16_t token = Gap();
  Receive(feed_.Refused(4, static_cast<std::uint16_t>(token + 100),
                        RefusedReason::kNotRetained));
  EXPECT_EQ(counters().stale_replies, 1U);
  EXPECT_EQ(counters().refused_for(RefusedReason::kNotRetained), 0U);
  EXPECT_EQ(sub_->state(), SubscriberState::kFollowing);
}

TEST_F(SubscriberTest, JoinsLateBySnapshotHoldingLivePackets) {
  SubscriberOptions options;  // first_sequence 0, session from the feed
  Start(options);
  ASSERT_EQ(recorder_.requests.size(), 1U);
  const auto& request = recorder_.requests[0];
  EXPECT_EQ(request.type, PacketType::kSnapshotRequest);
  EXPECT_EQ(request.session, 0U);  // not known yet: whatever is current
  EXPECT_EQ(request.instrument_id, 0U);
  EXPECT_EQ(sub_->state(), SubscriberState::kRecovering);
  Receive(feed_.Data(18, 22));  // live, held
  Receive(feed_.Data(23, 25));
  EXPECT_EQ(sub_->held(), 2U);
  EXPECT_EQ(sub_->session(), kFeedSession);
  const std::vector<Bytes> snapshot =
      SnapshotOf(BookAt(feed_, 20), kFeedSession, request.token, 20, 4);
  ASSERT_GT(snapshot.size(), 2U);
  for (const Bytes& p : snapshot) Receive(p);
  // 21, 22 from the first held packet (18 to 20 dropped), 23 to 25 next.
  ExpectBookAt(25);
  EXPECT_EQ(sub_->state(), SubscriberState::kFollowing);
  EXPECT_THAT(recorder_.snapshots, ElementsAre(20U));
  EXPECT_THAT(recorder_.sequences, ElementsAre(21U, 22U, 23U, 24U, 25U));
  EXPECT_EQ(counters().snapshots_completed, 1U);
  EXPECT_EQ(sub_->held(), 0U);
  EXPECT_TRUE(recorder_.states.back() == SubscriberState::kFollowing);
  EXPECT_EQ(recorder_.requests.size(), 1U);  // no gap left
}

TEST_F(SubscriberTest, AGapLeftAfterASnapshotIsRetransmitted) {
  Start(SubscriberOptions());
  Receive(feed_.Data(25, 27));
  for (const Bytes& p : SnapshotOf(BookAt(feed_, 20), kFeedSession,
                                   recorder_.requests[0].token, 20)) {
    Receive(p);
  }
  ASSERT_EQ(recorder_.requests.size(), 2U);
  EXPECT_EQ(recorder_.requests[1].type, PacketType::kRetransmitRequest);
  EXPECT_EQ(recorder_.requests[1].sequence, 21U);
  EXPECT_EQ(recorder_.requests[1].count, 4U);
  Receive(feed_.Data(21, 24, recorder_.requests[1].token));
  ExpectBookAt(27);
}

TEST_F(SubscriberTest, SnapshotPacketsOutOfOrderAreHeld) {
  Start(SubscriberOptions());
  std::vector<Bytes> snapshot = SnapshotOf(BookAt(feed_, 30), kFeedSession,
                                           recorder_.requests[0].token, 30, 3);
  ASSERT_GE(snapshot.size(), 3U);
  std::swap(snapshot[0], snapshot[2]);
  for (const Bytes& p : snapshot) Receive(p);
  ExpectBookAt(30);
  EXPECT_EQ(recorder_.requests.size(), 1U);
}

TEST_F(SubscriberTest, OverlappingSnapshotPacketsApplyEachPositionOnce) {
  Start(SubscriberOptions());
  const std::uint16_t token = recorder_.requests[0].token;
  const Book at30 = BookAt(feed_, 30);
  const std::vector<Bytes> by3 = SnapshotOf(at30, kFeedSession, token, 30, 3);
  const std::vector<Bytes> by5 = SnapshotOf(at30, kFeedSession, token, 30, 5);
  Receive(by3[0]);  // 1 to 3
  Receive(by5[0]);  // 1 to 5: 4 and 5 new
  Receive(by3[1]);  // 4 to 6: 6 new
  for (std::size_t i = 2; i < by3.size(); ++i) Receive(by3[i]);
  ExpectBookAt(30);
  EXPECT_EQ(counters().contradictions, 0U);
  EXPECT_EQ(recorder_.requests.size(), 1U);
}

TEST_F(SubscriberTest, ALostSnapshotPacketIsAskedAgainWithANewToken) {
  Start(SubscriberOptions());
  const std::uint16_t first_token = recorder_.requests[0].token;
  std::vector<Bytes> snapshot =
      SnapshotOf(BookAt(feed_, 30), kFeedSession, first_token, 30, 3);
  for (std::size_t i = 0; i < snapshot.size(); ++i) {
    if (i != 1) Receive(snapshot[i]);  // the second is lost
  }
  EXPECT_EQ(sub_->state(), SubscriberState::kRecovering);
  At(now_ + 999 * kMs);
  EXPECT_EQ(recorder_.requests.size(), 1U);
  At(now_ + 1 * kMs);
  ASSERT_EQ(recorder_.requests.size(), 2U);
  EXPECT_EQ(recorder_.requests[1].type, PacketType::kSnapshotRequest);
  const std::uint16_t second_token = recorder_.requests[1].token;
  EXPECT_NE(second_token, first_token);
  Receive(snapshot[1]);  // late, of the old token: not used
  EXPECT_EQ(counters().stale_replies, 1U);
  EXPECT_EQ(sub_->state(), SubscriberState::kRecovering);
  for (const Bytes& p :
       SnapshotOf(BookAt(feed_, 32), kFeedSession, second_token, 32, 3)) {
    Receive(p);
  }
  ExpectBookAt(32);
  EXPECT_EQ(counters().snapshots_completed, 1U);
}

TEST_F(SubscriberTest, ARefusedSnapshotIsAskedAgainInOneSecond) {
  Start(SubscriberOptions());
  Receive(feed_.Refused(0, recorder_.requests[0].token,
                        RefusedReason::kRateLimited));
  At(kT0 + 999 * kMs);
  EXPECT_EQ(recorder_.requests.size(), 1U);
  At(kT0 + 1000 * kMs);
  ASSERT_EQ(recorder_.requests.size(), 2U);
  EXPECT_EQ(recorder_.requests[1].type, PacketType::kSnapshotRequest);
}

TEST_F(SubscriberTest, AContradictionRecoversBySnapshot) {
  Start(FromStart());
  Receive(feed_.Data(1, 10));
  // An OrderDeleted of an id never added, then two good messages.
  FeedScript bad(kFeedSession);
  for (std::uint64_t s = 1; s <= 10; ++s) bad.AddBytes(feed_.message(s));
  bad.Add(test::Deleted(999, kInstrument));
  Receive(bad.Data(11, 11));
  EXPECT_EQ(counters().contradictions, 1U);
  ASSERT_EQ(recorder_.requests.size(), 1U);
  EXPECT_EQ(recorder_.requests[0].type, PacketType::kSnapshotRequest);
  EXPECT_EQ(recorder_.requests[0].session, kFeedSession);
  EXPECT_EQ(sub_->next_sequence(), 11U);
  Receive(feed_.Data(12, 14));  // live, held
  for (const Bytes& p : SnapshotOf(BookAt(feed_, 11), kFeedSession,
                                   recorder_.requests[0].token, 11)) {
    Receive(p);
  }
  ExpectBookAt(14);
}

TEST_F(SubscriberTest, AContradictionInAHeldPacketRecoversBySnapshot) {
  Start(FromStart());
  FeedScript bad(kFeedSession);
  for (std::uint64_t s = 1; s <= 10; ++s) bad.AddBytes(feed_.message(s));
  bad.Add(test::Deleted(999, kInstrument));  // 11 contradicts
  bad.AddBytes(feed_.message(12));
  Receive(feed_.Data(1, 5));
  Receive(bad.Data(9, 12));  // held
  ASSERT_EQ(recorder_.requests.size(), 1U);
  Receive(feed_.Data(6, 8, recorder_.requests[0].token));  // drains to 11
  EXPECT_EQ(counters().contradictions, 1U);
  EXPECT_EQ(sub_->next_sequence(), 11U);
  ASSERT_EQ(recorder_.requests.size(), 2U);
  EXPECT_EQ(recorder_.requests[1].type, PacketType::kSnapshotRequest);
  EXPECT_EQ(sub_->held(), 1U);  // kept: the snapshot may not cover it
  for (const Bytes& p : SnapshotOf(BookAt(feed_, 11), kFeedSession,
                                   recorder_.requests[1].token, 11)) {
    Receive(p);
  }
  ExpectBookAt(12);  // 12 from the held packet
}

TEST_F(SubscriberTest, HoldOverflowWhileRecoveringEvictsTheLowest) {
  SubscriberOptions options;
  options.hold_packets = 2;
  Start(options);
  Receive(feed_.Data(10, 12));
  Receive(feed_.Data(13, 15));
  Receive(feed_.Data(16, 18));  // (10, 12) goes
  EXPECT_EQ(counters().hold_overflows, 1U);
  Receive(feed_.Data(5, 6));  // lower than all held: not kept
  EXPECT_EQ(counters().hold_overflows, 2U);
  EXPECT_EQ(sub_->held(), 2U);
  EXPECT_EQ(counters().snapshot_requests, 1U);  // still the one snapshot
  for (const Bytes& p : SnapshotOf(BookAt(feed_, 11), kFeedSession,
                                   recorder_.requests[0].token, 11)) {
    Receive(p);
  }
  ASSERT_EQ(recorder_.requests.size(), 2U);
  EXPECT_EQ(recorder_.requests[1].sequence, 12U);
  EXPECT_EQ(recorder_.requests[1].count, 1U);
  Receive(feed_.Data(12, 12, recorder_.requests[1].token));
  ExpectBookAt(18);
}

TEST_F(SubscriberTest, ASnapshotOfTheWrongShapeIsAskedAgain) {
  Start(SubscriberOptions());
  std::vector<Bytes> snapshot = SnapshotOf(
      BookAt(feed_, 30), kFeedSession, recorder_.requests[0].token, 30, 100);
  ASSERT_EQ(snapshot.size(), 1U);
  // SnapshotEnd naming another S: the last block's feed_sequence.
  snapshot[0][snapshot[0].size() - 8] = std::byte{31};
  Receive(snapshot[0]);
  EXPECT_EQ(counters().contradictions, 1U);
  ASSERT_EQ(recorder_.requests.size(), 2U);
  EXPECT_EQ(recorder_.requests[1].type, PacketType::kSnapshotRequest);
  EXPECT_EQ(counters().snapshots_completed, 0U);
}

// `next` never wraps: a snapshot at S = 2^64 - 2 makes it 2^64 - 1, and a
// Data packet there (whose next would be 0) is dropped as BadSequence.
TEST_F(SubscriberTest, ADataPacketAtTheLastSequenceIsDropped) {
  constexpr std::uint64_t kLast = std::numeric_limits<std::uint64_t>::max();
  Start(SubscriberOptions());
  for (const Bytes& p : SnapshotOf(BookAt(feed_, 3), kFeedSession,
                                   recorder_.requests[0].token, kLast - 1)) {
    Receive(p);
  }
  ASSERT_EQ(counters().snapshots_completed, 1U);
  ASSERT_EQ(sub_->next_sequence(), kLast);
  std::array<std::byte, feed::kMaxPacketBytes> buffer{};
  feed::PacketBuilder builder(buffer);
  builder.BeginData(kFeedSession, kLast, 0);
  ASSERT_EQ(builder.AppendMessage(feed_.message(4)), codec::CodecError::kOk);
  const auto packet = builder.Finish();
  Receive(Bytes(packet.begin(), packet.end()));
  EXPECT_EQ(counters().malformed_for(feed::CheckCause::kBadSequence), 1U);
  EXPECT_EQ(sub_->next_sequence(), kLast);
  EXPECT_TRUE(recorder_.sequences.empty());
  EXPECT_EQ(sub_->book().order_count(), 0U);
  EXPECT_EQ(sub_->state(), SubscriberState::kFollowing);
}

// A snapshot at S = 2^64 - 1 would make `next` 0: it is of the wrong
// shape, asked again.
TEST_F(SubscriberTest, ASnapshotAtTheLastSequenceIsAskedAgain) {
  constexpr std::uint64_t kLast = std::numeric_limits<std::uint64_t>::max();
  Start(SubscriberOptions());
  for (const Bytes& p : SnapshotOf(BookAt(feed_, 3), kFeedSession,
                                   recorder_.requests[0].token, kLast)) {
    Receive(p);
  }
  EXPECT_EQ(counters().contradictions, 1U);
  EXPECT_EQ(counters().snapshots_completed, 0U);
  ASSERT_EQ(recorder_.requests.size(), 2U);
  EXPECT_EQ(recorder_.requests[1].type, PacketType::kSnapshotRequest);
  EXPECT_EQ(sub_->state(), SubscriberState::kRecovering);
  EXPECT_EQ(sub_->next_sequence(), 0U);
}

TEST_F(SubscriberTest, AHeartbeatOrEndOfSessionAheadIsAGap) {
  Start(FromStart());
  Receive(feed_.Data(1, 5));
  Receive(feed_.Heartbeat(6));  // nothing missing
  EXPECT_TRUE(recorder_.requests.empty());
  Receive(feed_.Heartbeat(9));
  ASSERT_EQ(recorder_.requests.size(), 1U);
  EXPECT_EQ(recorder_.requests[0].sequence, 6U);
  EXPECT_EQ(recorder_.requests[0].count, 3U);
  Receive(feed_.Data(6, 8, recorder_.requests[0].token));
  Receive(feed_.EndOfSession(11));
  ASSERT_EQ(recorder_.requests.size(), 2U);
  EXPECT_EQ(recorder_.requests[1].sequence, 9U);
  EXPECT_EQ(recorder_.requests[1].count, 2U);
  EXPECT_EQ(counters().heartbeats, 2U);
  EXPECT_EQ(counters().end_of_session, 1U);
  EXPECT_EQ(counters().gaps, 2U);
  EXPECT_EQ(counters().messages_missing, 5U);
}

TEST_F(SubscriberTest, KeepsTheSequenceOfTheLastEndOfSession) {
  Start(FromStart());
  Receive(feed_.Data(1, 5));
  Receive(feed_.Heartbeat(6));
  EXPECT_EQ(sub_->end_of_session(), std::nullopt);
  Receive(feed_.EndOfSession(6));
  EXPECT_EQ(sub_->end_of_session(), std::optional<std::uint64_t>(6));
  EXPECT_EQ(sub_->next_sequence(), 6U);  // every message below it applied
  // A later publisher of the session goes on, and ends later.
  Receive(feed_.Data(6, 8));
  Receive(feed_.EndOfSession(9));
  EXPECT_EQ(sub_->end_of_session(), std::optional<std::uint64_t>(9));
}

TEST_F(SubscriberTest, StaleAfterThreeHeartbeatIntervals) {
  SubscriberOptions options = FromStart();
  options.heartbeat_interval_ns = 100 * kMs;
  Start(options);
  Receive(feed_.Data(1, 5));
  At(kT0 + 299 * kMs);
  EXPECT_EQ(sub_->state(), SubscriberState::kFollowing);
  At(kT0 + 300 * kMs);
  EXPECT_EQ(sub_->state(), SubscriberState::kStale);
  At(kT0 + 900 * kMs);  // one period, counted once
  EXPECT_EQ(counters().stale_periods, 1U);
  EXPECT_TRUE(recorder_.requests.empty());
  Receive(feed_.Heartbeat(6));
  EXPECT_EQ(sub_->state(), SubscriberState::kFollowing);
  EXPECT_THAT(recorder_.states, ElementsAre(SubscriberState::kStale,
                                            SubscriberState::kFollowing));
  At(kT0 + 1200 * kMs);
  EXPECT_EQ(counters().stale_periods, 2U);
}

TEST_F(SubscriberTest, TakesTheFirstSessionAndCountsOthers) {
  SubscriberOptions options;
  options.first_sequence = 1;  // no session configured
  Start(options);
  Receive(feed_.Data(1, 3));
  EXPECT_EQ(sub_->session(), kFeedSession);
  FeedScript other(kFeedSession + 1);
  for (std::uint64_t s = 1; s <= 6; ++s) other.AddBytes(feed_.message(s));
  Receive(other.Data(4, 6));
  Receive(other.Heartbeat(7));
  EXPECT_EQ(counters().malformed_for(feed::CheckCause::kOtherSession), 2U);
  EXPECT_EQ(sub_->next_sequence(), 4U);
  EXPECT_TRUE(recorder_.requests.empty());
}

TEST_F(SubscriberTest, AConfiguredSessionIsTheOnlyOneFollowed) {
  Start(FromStart());
  FeedScript other(kFeedSession + 1);
  other.AddBytes(feed_.message(1));
  Receive(other.Data(1, 1));
  EXPECT_EQ(counters().malformed_for(feed::CheckCause::kOtherSession), 1U);
  EXPECT_EQ(sub_->next_sequence(), 1U);
}

TEST_F(SubscriberTest, CountsMalformedPacketsByCause) {
  Start(FromStart());
  using feed::test::RawPacket;
  const Bytes good = feed_.Data(1, 3);
  Bytes bad_magic = good;
  bad_magic[0] = std::byte{'X'};
  Bytes bad_version = good;
  bad_version[2] = std::byte{2};
  Receive(feed::test::Prefix(good, 10));
  Receive(bad_magic);
  Receive(bad_version);
  Receive(Bytes(feed::kMaxPacketBytes + 1));
  Receive(RawPacket().Header(1, kFeedSession, 0, 1, 0).Block(0x41, 38).bytes());
  Receive(RawPacket().Header(2, kFeedSession, 5, 0, 3).bytes());
  Receive(RawPacket().Header(1, kFeedSession, 1, 1, 0).Block(0x47, 25).bytes());
  Receive(RawPacket().Header(9, kFeedSession, 1, 1, 0).bytes());
  using feed::CheckCause;
  EXPECT_EQ(counters().malformed_for(CheckCause::kTruncated), 1U);
  EXPECT_EQ(counters().malformed_for(CheckCause::kBadMagic), 1U);
  EXPECT_EQ(counters().malformed_for(CheckCause::kBadVersion), 1U);
  EXPECT_EQ(counters().malformed_for(CheckCause::kOversize), 1U);
  EXPECT_EQ(counters().malformed_for(CheckCause::kBadSequence), 1U);
  EXPECT_EQ(counters().malformed_for(CheckCause::kBadToken), 1U);
  EXPECT_EQ(counters().malformed_for(CheckCause::kMisplacedKind), 1U);
  EXPECT_EQ(counters().malformed_for(CheckCause::kBadType), 1U);
  EXPECT_EQ(counters().packets, 0U);
  EXPECT_EQ(sub_->next_sequence(), 1U);
  Receive(good);  // the good one after them all
  EXPECT_EQ(sub_->next_sequence(), 4U);
}

TEST_F(SubscriberTest, UnknownKindsAreSkippedTakingTheirSequence) {
  Start(FromStart());
  FeedScript script(kFeedSession);
  for (std::uint64_t s = 1; s <= 4; ++s) script.AddBytes(feed_.message(s));
  Bytes unknown(12, std::byte{0});
  unknown[0] = std::byte{0x50};  // 'P': reserved, unknown to version 1
  script.AddBytes(unknown);
  script.AddBytes(feed_.message(5));
  Receive(script.Data(1, 6));
  EXPECT_EQ(counters().unknown_kinds, 1U);
  EXPECT_EQ(counters().messages_applied, 5U);
  EXPECT_EQ(sub_->next_sequence(), 7U);
  EXPECT_THAT(recorder_.sequences, ElementsAre(1U, 2U, 3U, 4U, 6U));
}

TEST_F(SubscriberTest, HoldOverflowWhileFollowingRecoversBySnapshot) {
  SubscriberOptions options = FromStart();
  options.hold_packets = 2;
  Start(options);
  Receive(feed_.Data(1, 3));
  Receive(feed_.Data(10, 11));
  Receive(feed_.Data(12, 13));
  EXPECT_EQ(counters().hold_overflows, 0U);
  Receive(feed_.Data(14, 15));  // a third: the lowest (10, 11) goes
  EXPECT_EQ(counters().hold_overflows, 1U);
  ASSERT_EQ(recorder_.requests.size(), 2U);
  EXPECT_EQ(recorder_.requests[1].type, PacketType::kSnapshotRequest);
  for (const Bytes& p : SnapshotOf(BookAt(feed_, 12), kFeedSession,
                                   recorder_.requests[1].token, 12)) {
    Receive(p);
  }
  ExpectBookAt(15);
}

TEST_F(SubscriberTest, HoldBytesBoundCompactsBeforeEvicting) {
  feed_ = MakeFeed(60);  // 72 messages
  SubscriberOptions options = FromStart();
  options.hold_bytes = feed::kMaxPacketBytes;  // the least allowed
  Start(options);
  Receive(feed_.Data(1, 3));
  const Bytes a = feed_.Data(10, 25);
  const Bytes b = feed_.Data(30, 32);
  const Bytes c = feed_.Data(33, 50);
  ASSERT_GT(a.size() + b.size() + c.size(), feed::kMaxPacketBytes);
  ASSERT_LE(b.size() + c.size(), feed::kMaxPacketBytes);
  Receive(a);
  Receive(b);
  Receive(feed_.Data(4, 9, recorder_.requests.at(0).token));  // a applied
  EXPECT_EQ(sub_->held(), 1U);
  Receive(c);  // fits once b is moved to the front
  EXPECT_EQ(sub_->held(), 2U);
  EXPECT_EQ(counters().hold_overflows, 0U);
  ASSERT_EQ(recorder_.requests.size(), 2U);
  EXPECT_EQ(recorder_.requests[1].sequence, 26U);
  Receive(feed_.Data(26, 29, recorder_.requests[1].token));
  ExpectBookAt(50);
}

// Random packets of every type (out of order, duplicated, truncated, of
// stale or random tokens, refusals of every retryable reason, snapshots at
// random points) at random times: the bounds hold throughout, and once the
// network behaves the subscriber ends at the feed's book.
TEST_F(SubscriberTest, SurvivesChaosThenCatchesUp) {
  feed_ = MakeFeed(200);
  const std::uint64_t last = feed_.next() - 1;
  SubscriberOptions options = FromStart();
  options.hold_packets = 8;
  options.hold_bytes = 4 * feed::kMaxPacketBytes;
  Start(options);
  std::mt19937_64 rng(77);
  auto below = [&](std::uint64_t n) { return rng() % n; };
  auto token = [&]() -> std::uint16_t {
    if (recorder_.requests.empty() || below(4) == 0) {
      return static_cast<std::uint16_t>(1 + below(60000));
    }
    return recorder_.requests.back().token;
  };
  for (int i = 0; i < 4000; ++i) {
    const std::uint64_t roll = below(100);
    std::uint64_t first = 1 + below(last);
    if (roll < 50 && below(4) != 0) {  // near `next`: the apply path
      first = std::clamp<std::uint64_t>(sub_->next_sequence() + below(8), 3,
                                        last + 2) -
              2;
    }
    if (roll < 40) {
      Receive(feed_.Data(first, std::min(first + below(6), last),
                         below(3) == 0 ? token() : 0));
    } else if (roll < 50) {
      Bytes bytes = feed_.Data(first, std::min(first + 3, last));
      bytes.resize(below(bytes.size()));  // fails a check
      Receive(bytes);
    } else if (roll < 58) {
      Receive(feed_.Heartbeat(1 + below(last + 1)));
    } else if (roll < 61) {
      static constexpr RefusedReason kReasons[] = {
          RefusedReason::kNotRetained, RefusedReason::kBeyondEnd,
          RefusedReason::kRateLimited, RefusedReason::kUnknownInstrument,
          RefusedReason::kUnavailable, static_cast<RefusedReason>(8)};
      Receive(feed_.Refused(first, token(), kReasons[below(6)]));
    } else if (roll < 72) {
      std::vector<Bytes> snapshot =
          SnapshotOf(BookAt(feed_, first), kFeedSession, token(), first, 7);
      std::shuffle(snapshot.begin(), snapshot.end() - 1, rng);
      for (const Bytes& p : snapshot) {
        if (below(10) != 0) Receive(p);
      }
    } else {
      At(now_ + static_cast<std::int64_t>(below(200)) * kMs);
    }
    ASSERT_LE(sub_->held(), options.hold_packets);
    ASSERT_NE(sub_->state(), SubscriberState::kStopped);
    ASSERT_LE(sub_->next_sequence(), last + 1);
  }
  EXPECT_GT(counters().snapshots_completed, 0U);
  EXPECT_GT(counters().contradictions, 0U);      // BeyondEnd at least
  EXPECT_GT(counters().messages_applied, 100U);  // not all snapshots
  // The network behaves: every request answered in full.
  for (int round = 0; round < 100; ++round) {
    if (sub_->state() == SubscriberState::kFollowing &&
        sub_->next_sequence() == last + 1) {
      break;
    }
    At(now_ + 60 * kMs);
    Receive(feed_.Heartbeat(last + 1));
    const auto request = recorder_.requests.back();
    if (request.type == PacketType::kSnapshotRequest) {
      for (const Bytes& p :
           SnapshotOf(BookAt(feed_, last), kFeedSession, request.token, last)) {
        Receive(p);
      }
    } else if (request.sequence <= last) {
      Receive(feed_.Data(
          request.sequence,
          std::min<std::uint64_t>(request.sequence + request.count - 1, last),
          request.token));
    }
  }
  EXPECT_EQ(sub_->state(), SubscriberState::kFollowing);
  ExpectBookAt(last);
}

}  // namespace
}  // namespace orderwire::marketdata::subscriber_unit
