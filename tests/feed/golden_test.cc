// The published vectors of docs/MARKETDATA-GOLDEN.md: every
// golden packet and message is built byte for byte by the encoders, and
// parses back to exactly the fields the document states for it. The values
// below are typed from the text of docs/MARKETDATA.md.
#include "tests/feed/golden.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "feed/builder.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "gtest/gtest.h"
#include "tests/feed/feed_test_support.h"

namespace orderwire::feed::test {
namespace {

using golden::FromHex;
using golden::kSession;
using golden::kT1;
using golden::kT2;

// The golden journal's configuration: instrument 42, prices and quantities
// 1 to 1,000,000,000.
InstrumentDirectory Directory42(std::uint64_t timestamp) {
  return {.timestamp = timestamp,
          .instrument_id = 42,
          .min_price = 1,
          .max_price = 1000000000,
          .min_quantity = 1,
          .max_quantity = 1000000000};
}

TradingStatus Trading42(std::uint64_t timestamp) {
  return {.timestamp = timestamp,
          .instrument_id = 42,
          .state = TradingState::kTrading};
}

// 4 OrderAdded T1 order 1, 42, Buy, 10050, 300.
constexpr OrderAdded kAdded1{.timestamp = kT1,
                             .order_id = 1,
                             .instrument_id = 42,
                             .side = Side::kBuy,
                             .price = 10050,
                             .quantity = 300};
// 5 OrderExecuted T2 order 1, 42, Buy, match 1, 10050, 300.
constexpr OrderExecuted kExecuted1{.timestamp = kT2,
                                   .order_id = 1,
                                   .instrument_id = 42,
                                   .side = Side::kBuy,
                                   .match_id = 1,
                                   .price = 10050,
                                   .quantity = 300};
// 6 OrderAdded T2 order 2, 42, Sell, 10040, 100.
constexpr OrderAdded kAdded2{.timestamp = kT2,
                             .order_id = 2,
                             .instrument_id = 42,
                             .side = Side::kSell,
                             .price = 10040,
                             .quantity = 100};

// ---------------------------------------------------------------------------
// Messages: "Other kinds at T2, message bytes only".

template <typename Model>
void ExpectGoldenMessage(const golden::GoldenBytes& golden,
                         const Model& stated) {
  SCOPED_TRACE(std::string(golden.name));
  const std::vector<std::byte> bytes = FromHex(golden.hex);
  ASSERT_EQ(bytes.size(), golden.size);
  ASSERT_EQ(kMessageSize<Model>, golden.size);
  std::vector<std::byte> encoded(kMessageSize<Model>);
  EncodeMessage(stated, encoded.data());
  EXPECT_EQ(Hex(encoded), golden.hex);
  const MessageBlock block(bytes.data(),
                           static_cast<std::uint16_t>(bytes.size()));
  EXPECT_EQ(block.kind(), MessageTraits<Model>::kKind);
  EXPECT_EQ(block.timestamp(), kT2);
  const auto view = MessageView<Model>::FromBlock(block);
  ASSERT_TRUE(view.ok());
  ExpectSameFields(view->ToModel(), stated);
}

TEST(FeedGoldenTest, OrderReducedByFortyMatchesTheDocument) {
  ExpectGoldenMessage(golden::kOrderReduced,
                      OrderReduced{.timestamp = kT2,
                                   .order_id = 2,
                                   .instrument_id = 42,
                                   .cancelled_quantity = 40});
}

TEST(FeedGoldenTest, OrderDeletedMatchesTheDocument) {
  ExpectGoldenMessage(
      golden::kOrderDeleted,
      OrderDeleted{.timestamp = kT2, .order_id = 2, .instrument_id = 42});
}

TEST(FeedGoldenTest, OrderReplacedMatchesTheDocument) {
  ExpectGoldenMessage(golden::kOrderReplaced, OrderReplaced{.timestamp = kT2,
                                                            .order_id = 2,
                                                            .instrument_id = 42,
                                                            .price = 10045,
                                                            .quantity = 150});
}

TEST(FeedGoldenTest, TradingStatusHaltedMatchesTheDocument) {
  ExpectGoldenMessage(golden::kTradingStatusHalted,
                      TradingStatus{.timestamp = kT2,
                                    .instrument_id = 42,
                                    .state = TradingState::kHalted});
}

// ---------------------------------------------------------------------------
// Data and Snapshot packets.

// Parses `bytes` as the subscriber following kSession and as one following
// any session; both must accept it.
PacketView ParseGolden(const std::vector<std::byte>& bytes) {
  const auto any = PacketView::Parse(bytes, SessionFilter::Any());
  EXPECT_TRUE(any.ok()) << Name(any.error());
  const auto followed = PacketView::Parse(bytes, SessionFilter::Only(kSession));
  EXPECT_TRUE(followed.ok()) << Name(followed.error());
  return *followed;
}

// The next block of `it` as a `Model`, checked against `stated`.
template <typename Model>
void ExpectBlock(BlockIterator& it, const Model& stated) {
  const MessageBlock block = *it++;
  EXPECT_TRUE(block.known());
  EXPECT_EQ(block.length(), kMessageSize<Model>);
  const auto view = MessageView<Model>::FromBlock(block);
  ASSERT_TRUE(view.ok()) << "block of kind " << static_cast<int>(block.kind());
  ExpectSameFields(view->ToModel(), stated);
}

TEST(FeedGoldenTest, StartOfFeedPacketIsBuiltByteForByte) {
  std::array<std::byte, kMaxPacketBytes> buffer{};
  PacketBuilder builder(buffer);
  builder.BeginData(kSession, 1);
  ASSERT_EQ(builder.Append(SystemEvent{.timestamp = kT1,
                                       .event = SystemEventCode::kStartOfFeed}),
            codec::CodecError::kOk);
  ASSERT_EQ(builder.Append(Directory42(kT1)), codec::CodecError::kOk);
  ASSERT_EQ(builder.Append(Trading42(kT1)), codec::CodecError::kOk);
  ASSERT_EQ(builder.Append(kAdded1), codec::CodecError::kOk);
  EXPECT_EQ(builder.next_sequence(), 5u);
  const std::span<const std::byte> packet = builder.Finish();
  EXPECT_EQ(packet.size(), golden::kStartOfFeed.size);
  EXPECT_EQ(Hex(packet), golden::kStartOfFeed.hex);
}

TEST(FeedGoldenTest, StartOfFeedPacketParsesToItsFourMessages) {
  const std::vector<std::byte> bytes = FromHex(golden::kStartOfFeed.hex);
  const PacketView packet = ParseGolden(bytes);
  EXPECT_EQ(packet.type(), PacketType::kData);
  EXPECT_EQ(packet.session(), kSession);
  EXPECT_EQ(packet.sequence(), 1u);
  EXPECT_EQ(packet.count(), 4u);
  EXPECT_EQ(packet.token(), 0u);
  BlockIterator it = packet.begin();
  ExpectBlock(it, SystemEvent{.timestamp = kT1,
                              .event = SystemEventCode::kStartOfFeed});
  ExpectBlock(it, Directory42(kT1));
  ExpectBlock(it, Trading42(kT1));
  ExpectBlock(it, kAdded1);
  EXPECT_TRUE(it == packet.end());
}

TEST(FeedGoldenTest, ExecutedAddedPacketIsBuiltAndParsed) {
  std::array<std::byte, kMaxPacketBytes> buffer{};
  PacketBuilder builder(buffer);
  builder.BeginData(kSession, 5);
  ASSERT_EQ(builder.Append(kExecuted1), codec::CodecError::kOk);
  ASSERT_EQ(builder.Append(kAdded2), codec::CodecError::kOk);
  EXPECT_EQ(Hex(builder.Finish()), golden::kExecutedAdded.hex);

  const std::vector<std::byte> bytes = FromHex(golden::kExecutedAdded.hex);
  ASSERT_EQ(bytes.size(), golden::kExecutedAdded.size);
  const PacketView packet = ParseGolden(bytes);
  EXPECT_EQ(packet.type(), PacketType::kData);
  EXPECT_EQ(packet.sequence(), 5u);
  EXPECT_EQ(packet.count(), 2u);
  EXPECT_EQ(packet.token(), 0u);
  BlockIterator it = packet.begin();
  ExpectBlock(it, kExecuted1);
  ExpectBlock(it, kAdded2);
  EXPECT_TRUE(it == packet.end());
}

// "its reply: the packet of messages 5, 6 above with bytes 22-23 0700".
TEST(FeedGoldenTest, RetransmissionReplyIsTheLivePacketWithTheToken) {
  std::vector<std::byte> expected = FromHex(golden::kExecutedAdded.hex);
  expected[22] = std::byte{0x07};
  expected[23] = std::byte{0x00};
  // Built from the live packet's blocks, as a request server copies them.
  const std::vector<std::byte> live = FromHex(golden::kExecutedAdded.hex);
  const PacketView live_view = ParseGolden(live);
  std::array<std::byte, kMaxPacketBytes> buffer{};
  PacketBuilder builder(buffer);
  builder.BeginData(kSession, 5, 7);
  for (const MessageBlock block : live_view) {
    ASSERT_EQ(builder.Append(block), codec::CodecError::kOk);
  }
  EXPECT_EQ(Hex(builder.Finish()), Hex(expected));
  const PacketView reply = ParseGolden(expected);
  EXPECT_EQ(reply.token(), 7u);
  EXPECT_EQ(reply.sequence(), 5u);
}

TEST(FeedGoldenTest, SnapshotReplyIsBuiltByteForByte) {
  std::array<std::byte, kMaxPacketBytes> buffer{};
  PacketBuilder builder(buffer);
  builder.BeginSnapshot(kSession, 1, 8);
  ASSERT_EQ(builder.Append(SnapshotStart{.timestamp = kT2,
                                         .feed_sequence = 6,
                                         .instrument_id = 42,
                                         .message_count = 5}),
            codec::CodecError::kOk);
  ASSERT_EQ(builder.Append(Directory42(kT2)), codec::CodecError::kOk);
  ASSERT_EQ(builder.Append(Trading42(kT2)), codec::CodecError::kOk);
  ASSERT_EQ(builder.Append(kAdded2), codec::CodecError::kOk);
  ASSERT_EQ(builder.Append(SnapshotEnd{.timestamp = kT2, .feed_sequence = 6}),
            codec::CodecError::kOk);
  const std::span<const std::byte> packet = builder.Finish();
  EXPECT_EQ(packet.size(), golden::kSnapshotReply.size);
  EXPECT_EQ(Hex(packet), golden::kSnapshotReply.hex);
}

TEST(FeedGoldenTest, SnapshotReplyParsesToItsFiveMessages) {
  const std::vector<std::byte> bytes = FromHex(golden::kSnapshotReply.hex);
  const PacketView packet = ParseGolden(bytes);
  EXPECT_EQ(packet.type(), PacketType::kSnapshot);
  EXPECT_EQ(packet.session(), kSession);
  EXPECT_EQ(packet.sequence(), 1u);
  EXPECT_EQ(packet.count(), 5u);
  EXPECT_EQ(packet.token(), 8u);
  BlockIterator it = packet.begin();
  ExpectBlock(it, SnapshotStart{.timestamp = kT2,
                                .feed_sequence = 6,
                                .instrument_id = 42,
                                .message_count = 5});
  ExpectBlock(it, Directory42(kT2));
  ExpectBlock(it, Trading42(kT2));
  ExpectBlock(it, kAdded2);
  ExpectBlock(it, SnapshotEnd{.timestamp = kT2, .feed_sequence = 6});
  EXPECT_TRUE(it == packet.end());
}

// ---------------------------------------------------------------------------
// Packets without blocks.

TEST(FeedGoldenTest, HeartbeatAndEndOfSessionMatchTheDocument) {
  std::array<std::byte, kPacketHeaderSize> out{};
  const auto heartbeat = EncodeHeartbeat(out, kSession, 7);
  ASSERT_TRUE(heartbeat.ok());
  EXPECT_EQ(*heartbeat, golden::kHeartbeat.size);
  EXPECT_EQ(Hex(out), golden::kHeartbeat.hex);
  const auto end = EncodeEndOfSession(out, kSession, 7);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(Hex(out), golden::kEndOfSession.hex);

  for (const auto& [golden, type] :
       {std::pair{golden::kHeartbeat, PacketType::kHeartbeat},
        std::pair{golden::kEndOfSession, PacketType::kEndOfSession}}) {
    const std::vector<std::byte> bytes = FromHex(golden.hex);
    const PacketView packet = ParseGolden(bytes);
    EXPECT_EQ(packet.type(), type);
    EXPECT_EQ(packet.session(), kSession);
    EXPECT_EQ(packet.sequence(), 7u);
    EXPECT_EQ(packet.count(), 0u);
    EXPECT_EQ(packet.token(), 0u);
    EXPECT_TRUE(packet.begin() == packet.end());
  }
}

// Encodes and parses a golden RetransmitRequest (S, N, token).
void ExpectRetransmitRequest(const golden::GoldenBytes& golden,
                             std::uint64_t first, std::uint16_t count,
                             std::uint16_t token) {
  SCOPED_TRACE(std::string(golden.name));
  std::array<std::byte, kPacketHeaderSize> out{};
  const auto size = EncodeRetransmitRequest(out, kSession, first, count, token);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, golden.size);
  EXPECT_EQ(Hex(out), golden.hex);
  const std::vector<std::byte> bytes = FromHex(golden.hex);
  const auto request = RequestView::Parse(bytes);
  ASSERT_TRUE(request.ok()) << Name(request.error());
  EXPECT_EQ(request->type(), PacketType::kRetransmitRequest);
  EXPECT_EQ(request->session(), kSession);
  EXPECT_EQ(request->sequence(), first);
  EXPECT_EQ(request->count(), count);
  EXPECT_EQ(request->token(), token);
}

TEST(FeedGoldenTest, RetransmitRequestsMatchTheDocument) {
  ExpectRetransmitRequest(golden::kRetransmitRequest5, 5, 2, 7);
  ExpectRetransmitRequest(golden::kRetransmitRequest9, 9, 4, 9);
  ExpectRetransmitRequest(golden::kRetransmitRequest1, 1, 10, 10);
}

// Encodes and parses a golden Refused.
void ExpectRefused(const golden::GoldenBytes& golden, std::uint64_t sequence,
                   std::uint16_t token, RefusedReason reason,
                   std::uint64_t first_retained, std::uint64_t next_sequence) {
  SCOPED_TRACE(std::string(golden.name));
  std::array<std::byte, kPacketHeaderSize + kRefusedBodySize> out{};
  const auto size = EncodeRefused(out, kSession, sequence, token,
                                  RefusedBody{.reason = reason,
                                              .first_retained = first_retained,
                                              .next_sequence = next_sequence});
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, golden.size);
  EXPECT_EQ(Hex(out), golden.hex);
  const std::vector<std::byte> bytes = FromHex(golden.hex);
  const PacketView packet = ParseGolden(bytes);
  EXPECT_EQ(packet.type(), PacketType::kRefused);
  EXPECT_EQ(packet.session(), kSession);
  EXPECT_EQ(packet.sequence(), sequence);
  EXPECT_EQ(packet.count(), 0u);
  EXPECT_EQ(packet.token(), token);
  const RefusedBody body = packet.refused();
  EXPECT_EQ(body.reason, reason);
  EXPECT_EQ(body.first_retained, first_retained);
  EXPECT_EQ(body.next_sequence, next_sequence);
  EXPECT_TRUE(packet.begin() == packet.end());
}

TEST(FeedGoldenTest, RefusalsMatchTheDocument) {
  // Refused seq=9 token=9 BeyondEnd, F=1, next=7.
  ExpectRefused(golden::kRefusedBeyondEnd, 9, 9, RefusedReason::kBeyondEnd, 1,
                7);
  // Refused seq=1 token=10 NotRetained, F=5, next=7.
  ExpectRefused(golden::kRefusedNotRetained, 1, 10, RefusedReason::kNotRetained,
                5, 7);
}

TEST(FeedGoldenTest, SnapshotRequestMatchesTheDocument) {
  std::array<std::byte, kPacketHeaderSize + kSnapshotRequestBodySize> out{};
  const auto size = EncodeSnapshotRequest(out, kSession, 8, 42);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, golden::kSnapshotRequest.size);
  EXPECT_EQ(Hex(out), golden::kSnapshotRequest.hex);
  const std::vector<std::byte> bytes = FromHex(golden::kSnapshotRequest.hex);
  const auto request = RequestView::Parse(bytes);
  ASSERT_TRUE(request.ok()) << Name(request.error());
  EXPECT_EQ(request->type(), PacketType::kSnapshotRequest);
  EXPECT_EQ(request->session(), kSession);
  EXPECT_EQ(request->sequence(), 0u);
  EXPECT_EQ(request->count(), 0u);
  EXPECT_EQ(request->token(), 8u);
  EXPECT_EQ(request->instrument_id(), 42u);
}

// A subscriber's packet is never a request and a request never a packet a
// subscriber takes: the golden sets are told apart by type alone.
TEST(FeedGoldenTest, GoldenRequestsAndPacketsAreToldApartByType) {
  for (const golden::GoldenBytes& golden : golden::kRequests) {
    const std::vector<std::byte> bytes = FromHex(golden.hex);
    const auto packet = PacketView::Parse(bytes, SessionFilter::Any());
    ASSERT_FALSE(packet.ok()) << golden.name;
    EXPECT_EQ(packet.error(), CheckCause::kBadType) << golden.name;
  }
  for (const golden::GoldenBytes& golden : golden::kSubscriberPackets) {
    const std::vector<std::byte> bytes = FromHex(golden.hex);
    const auto request = RequestView::Parse(bytes);
    ASSERT_FALSE(request.ok()) << golden.name;
    EXPECT_EQ(request.error(), CheckCause::kBadType) << golden.name;
  }
}

// Every cut of every golden packet and request is refused (a shorter packet
// is never taken for a valid one). Each cut is a buffer of its own size, so
// AddressSanitizer sees any read past it.
TEST(FeedGoldenTest, EveryTruncationOfAGoldenPacketIsRefused) {
  for (const golden::GoldenBytes& golden : golden::kSubscriberPackets) {
    const std::vector<std::byte> bytes = FromHex(golden.hex);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      const std::vector<std::byte> cut = Prefix(bytes, n);
      EXPECT_FALSE(PacketView::Parse(cut, SessionFilter::Any()).ok())
          << golden.name << " cut to " << n;
    }
  }
  for (const golden::GoldenBytes& golden : golden::kRequests) {
    const std::vector<std::byte> bytes = FromHex(golden.hex);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      const std::vector<std::byte> cut = Prefix(bytes, n);
      EXPECT_FALSE(RequestView::Parse(cut).ok())
          << golden.name << " cut to " << n;
    }
  }
}

}  // namespace
}  // namespace orderwire::feed::test
