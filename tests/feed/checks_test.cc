// docs/MARKETDATA.md "Checks": one test per cause with a packet that fails
// exactly there and also breaks a later check, so that the cause reported
// proves the order; then the block rules (unknown kinds skipped, longer
// known kinds accepted, misplaced kinds refused) and the request server's
// checks alike.
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "feed/builder.h"
#include "feed/packet.h"
#include "gtest/gtest.h"
#include "tests/feed/feed_test_support.h"

namespace orderwire::feed::test {
namespace {

constexpr std::uint64_t kFollowed = 0x0123456789ABCDEF;
constexpr std::uint64_t kOther = 0x1111;
constexpr std::uint8_t kData = 1;
constexpr std::uint8_t kHeartbeat = 2;
constexpr std::uint8_t kEndOfSession = 3;
constexpr std::uint8_t kSnapshot = 4;
constexpr std::uint8_t kRefused = 5;
constexpr std::uint8_t kRetransmit = 0x11;
constexpr std::uint8_t kSnapshotRequest = 0x12;
// Message kinds and sizes, typed from MARKETDATA.md "Messages".
constexpr std::uint8_t kS = 0x53;
constexpr std::uint8_t kA = 0x41;
constexpr std::uint8_t kD = 0x44;
constexpr std::uint8_t kG = 0x47;
constexpr std::uint8_t kZ = 0x5A;
constexpr std::uint8_t kP = 0x50;  // reserved: unknown to version 1

CheckCause CauseOf(const RawPacket& raw,
                   SessionFilter followed = SessionFilter::Only(kFollowed)) {
  const auto parsed = PacketView::Parse(raw.bytes(), followed);
  return parsed.ok() ? CheckCause::kOk : parsed.error();
}

CheckCause RequestCauseOf(const RawPacket& raw) {
  const auto parsed = RequestView::Parse(raw.bytes());
  return parsed.ok() ? CheckCause::kOk : parsed.error();
}

// ---------------------------------------------------------------------------
// The subscriber's checks, in order.

TEST(FeedPacketChecksTest, OversizeComesFirst) {
  RawPacket raw;
  raw.Zeros(kMaxPacketBytes + 1);  // bad magic, version, type too
  EXPECT_EQ(CauseOf(raw), CheckCause::kOversize);
  // 1452 bytes is allowed: a valid Data packet of exactly that size.
  RawPacket full;
  full.Header(kData, kFollowed, 1, 1, 0).Block(kA, kMaxPacketBytes - 26);
  ASSERT_EQ(full.bytes().size(), kMaxPacketBytes);
  EXPECT_EQ(CauseOf(full), CheckCause::kOk);
}

TEST(FeedPacketChecksTest, ShorterThanTheHeaderIsTruncated) {
  RawPacket raw;
  raw.Zeros(kPacketHeaderSize - 1);  // bad magic too
  EXPECT_EQ(CauseOf(raw), CheckCause::kTruncated);
  EXPECT_EQ(CauseOf(RawPacket{}), CheckCause::kTruncated);
}

TEST(FeedPacketChecksTest, BadMagicBeforeVersion) {
  RawPacket raw;
  raw.Header(kData, kOther, 0, 0, 0, /*version=*/2, /*magic=*/0x574F);
  EXPECT_EQ(CauseOf(raw), CheckCause::kBadMagic);
}

TEST(FeedPacketChecksTest, BadVersionBeforeType) {
  RawPacket raw;
  raw.Header(0x09, kOther, 0, 0, 0, /*version=*/2);
  EXPECT_EQ(CauseOf(raw), CheckCause::kBadVersion);
}

TEST(FeedPacketChecksTest, OnlyTypesOneToFivePass) {
  for (int type = 0; type < 256; ++type) {
    RawPacket raw;
    raw.Header(static_cast<std::uint8_t>(type), kOther, 0, 0, 0);
    const bool subscriber_type = type >= 1 && type <= 5;
    EXPECT_EQ(CauseOf(raw) == CheckCause::kBadType, !subscriber_type)
        << "type " << type;
  }
  RawPacket request;  // a request on the feed: other session, token 0 too
  request.Header(kRetransmit, kOther, 0, 0, 0);
  EXPECT_EQ(CauseOf(request), CheckCause::kBadType);
}

TEST(FeedPacketChecksTest, OtherSessionBeforeTokenOnTypesOneToFour) {
  for (const std::uint8_t type :
       {kData, kHeartbeat, kEndOfSession, kSnapshot}) {
    RawPacket raw;  // the token is wrong for either type group: 5 or 0
    raw.Header(type, kOther, 0, 0, type == kSnapshot ? 0 : 5);
    EXPECT_EQ(CauseOf(raw), CheckCause::kOtherSession) << int{type};
  }
}

TEST(FeedPacketChecksTest, RefusedIsNotMatchedBySession) {
  RawPacket raw;
  raw.Header(kRefused, kOther, 9, 0, 9).U8(2).U64(1).U64(7);
  EXPECT_EQ(CauseOf(raw), CheckCause::kOk);
}

TEST(FeedPacketChecksTest, AnySessionAcceptsEverySession) {
  RawPacket raw;
  raw.Header(kHeartbeat, kOther, 7, 0, 0);
  EXPECT_EQ(CauseOf(raw), CheckCause::kOtherSession);
  EXPECT_EQ(CauseOf(raw, SessionFilter::Any()), CheckCause::kOk);
}

TEST(FeedPacketChecksTest, BadTokenBeforeSequence) {
  // Not 0 on Heartbeat and EndOfSession (sequence 0 too).
  for (const std::uint8_t type : {kHeartbeat, kEndOfSession}) {
    RawPacket raw;
    raw.Header(type, kFollowed, 0, 1, 3);
    EXPECT_EQ(CauseOf(raw), CheckCause::kBadToken) << int{type};
  }
  // 0 on Snapshot and Refused (count wrong too).
  RawPacket snapshot;
  snapshot.Header(kSnapshot, kFollowed, 0, 0, 0);
  EXPECT_EQ(CauseOf(snapshot), CheckCause::kBadToken);
  RawPacket refused;
  refused.Header(kRefused, kFollowed, 0, 1, 0);
  EXPECT_EQ(CauseOf(refused), CheckCause::kBadToken);
  // Data takes either: 0 live, a request's in a reply.
  for (const std::uint16_t token : {std::uint16_t{0}, std::uint16_t{7}}) {
    RawPacket data;
    data.Header(kData, kFollowed, 1, 1, token).Block(kD, 21);
    EXPECT_EQ(CauseOf(data), CheckCause::kOk) << token;
  }
}

TEST(FeedPacketChecksTest, BadSequenceBeforeCount) {
  RawPacket data;  // count 0 too
  data.Header(kData, kFollowed, 0, 0, 0);
  EXPECT_EQ(CauseOf(data), CheckCause::kBadSequence);
  RawPacket heartbeat;  // count 1 too
  heartbeat.Header(kHeartbeat, kFollowed, 0, 1, 0);
  EXPECT_EQ(CauseOf(heartbeat), CheckCause::kBadSequence);
  RawPacket end;
  end.Header(kEndOfSession, kFollowed, 0, 0, 0);
  EXPECT_EQ(CauseOf(end), CheckCause::kBadSequence);
  RawPacket snapshot;
  snapshot.Header(kSnapshot, kFollowed, 0, 0, 8);
  EXPECT_EQ(CauseOf(snapshot), CheckCause::kBadSequence);
  // A Refused carries the request's sequence: 0 for a SnapshotRequest's.
  RawPacket refused;
  refused.Header(kRefused, kFollowed, 0, 0, 8).U8(4).U64(1).U64(7);
  EXPECT_EQ(CauseOf(refused), CheckCause::kOk);
}

TEST(FeedPacketChecksTest, BadCountOnTypesWithoutBlocks) {
  for (const std::uint8_t type : {kHeartbeat, kEndOfSession}) {
    RawPacket raw;  // trailing bytes too
    raw.Header(type, kFollowed, 7, 1, 0).Zeros(3);
    EXPECT_EQ(CauseOf(raw), CheckCause::kBadCount) << int{type};
  }
  RawPacket refused;  // a short body too
  refused.Header(kRefused, kFollowed, 9, 2, 9).Zeros(3);
  EXPECT_EQ(CauseOf(refused), CheckCause::kBadCount);
}

TEST(FeedPacketChecksTest, ZeroCountOnTypesWithBlocks) {
  RawPacket data;  // a block follows all the same
  data.Header(kData, kFollowed, 1, 0, 0).Block(kD, 21);
  EXPECT_EQ(CauseOf(data), CheckCause::kZeroCount);
  RawPacket snapshot;
  snapshot.Header(kSnapshot, kFollowed, 1, 0, 8);
  EXPECT_EQ(CauseOf(snapshot), CheckCause::kZeroCount);
}

TEST(FeedPacketChecksTest, RefusedBodyMustBeSeventeenBytes) {
  RawPacket short_body;
  short_body.Header(kRefused, kFollowed, 9, 0, 9).Zeros(16);
  EXPECT_EQ(CauseOf(short_body), CheckCause::kTruncated);
  RawPacket no_body;
  no_body.Header(kRefused, kFollowed, 9, 0, 9);
  EXPECT_EQ(CauseOf(no_body), CheckCause::kTruncated);
  RawPacket long_body;
  long_body.Header(kRefused, kFollowed, 9, 0, 9).Zeros(18);
  EXPECT_EQ(CauseOf(long_body), CheckCause::kTrailingBytes);
}

TEST(FeedPacketChecksTest, BytesAfterAHeartbeatAreTrailing) {
  for (const std::uint8_t type : {kHeartbeat, kEndOfSession}) {
    RawPacket raw;
    raw.Header(type, kFollowed, 7, 0, 0).Zeros(1);
    EXPECT_EQ(CauseOf(raw), CheckCause::kTrailingBytes) << int{type};
  }
}

// ---------------------------------------------------------------------------
// Blocks.

TEST(FeedPacketChecksTest, EndingOnABlockBoundaryEarlyIsCountMismatch) {
  RawPacket raw;
  raw.Header(kData, kFollowed, 1, 2, 0).Block(kD, 21);
  EXPECT_EQ(CauseOf(raw), CheckCause::kCountMismatch);
}

TEST(FeedPacketChecksTest, OneByteLeftForALengthIsTruncated) {
  RawPacket raw;
  raw.Header(kData, kFollowed, 1, 2, 0).Block(kD, 21).U8(21);
  EXPECT_EQ(CauseOf(raw), CheckCause::kTruncated);
}

TEST(FeedPacketChecksTest, FewerBytesThanTheLengthIsTruncated) {
  RawPacket raw;  // length 8 (BadLength) but only 5 bytes after it
  raw.Header(kData, kFollowed, 1, 1, 0).U16(8).U8(kG).Zeros(4);
  EXPECT_EQ(CauseOf(raw), CheckCause::kTruncated);
  RawPacket cut;  // a whole OrderAdded announced, one byte missing
  cut.Header(kData, kFollowed, 1, 1, 0).U16(38).U8(kA).Zeros(36);
  EXPECT_EQ(CauseOf(cut), CheckCause::kTruncated);
}

TEST(FeedPacketChecksTest, LengthBelowNineIsBadLengthBeforeMisplaced) {
  RawPacket raw;  // kind G in a Data packet, length 8, trailing bytes
  raw.Header(kData, kFollowed, 1, 1, 0).U16(8).U8(kG).Zeros(7).Zeros(2);
  EXPECT_EQ(CauseOf(raw), CheckCause::kBadLength);
  RawPacket unknown;  // an unknown kind must have 9 bytes too
  unknown.Header(kData, kFollowed, 1, 1, 0).U16(8).U8(kP).Zeros(7);
  EXPECT_EQ(CauseOf(unknown), CheckCause::kBadLength);
}

TEST(FeedPacketChecksTest, LengthBelowAKnownKindsSizeIsBadLength) {
  RawPacket raw;  // OrderAdded is 38 bytes; SnapshotStart in Data too
  raw.Header(kData, kFollowed, 1, 1, 0).Block(kA, 37);
  EXPECT_EQ(CauseOf(raw), CheckCause::kBadLength);
  RawPacket misplaced;
  misplaced.Header(kData, kFollowed, 1, 1, 0).Block(kG, 24);
  EXPECT_EQ(CauseOf(misplaced), CheckCause::kBadLength);
}

TEST(FeedPacketChecksTest, SnapshotKindsOnlyInSnapshotPackets) {
  for (const std::uint8_t kind : {kG, kZ}) {
    RawPacket raw;  // trailing bytes too
    raw.Header(kData, kFollowed, 1, 1, 0)
        .Block(kind, kind == kG ? 25 : 17)
        .Zeros(1);
    EXPECT_EQ(CauseOf(raw), CheckCause::kMisplacedKind) << int{kind};
  }
}

TEST(FeedPacketChecksTest, DataKindsOnlyInDataPackets) {
  // S, E, X, D, U with their sizes.
  const std::array<std::pair<std::uint8_t, std::uint16_t>, 5> data_only = {
      {{kS, 10}, {0x45, 46}, {0x58, 29}, {kD, 21}, {0x55, 37}}};
  for (const auto& [kind, size] : data_only) {
    RawPacket raw;
    raw.Header(kSnapshot, kFollowed, 1, 1, 8).Block(kind, size);
    EXPECT_EQ(CauseOf(raw), CheckCause::kMisplacedKind) << int{kind};
    RawPacket data;
    data.Header(kData, kFollowed, 1, 1, 0).Block(kind, size);
    EXPECT_EQ(CauseOf(data), CheckCause::kOk) << int{kind};
  }
  // R, H, A in both.
  for (const auto& [kind, size] :
       std::array<std::pair<std::uint8_t, std::uint16_t>, 3>{
           {{0x52, 45}, {0x48, 14}, {kA, 38}}}) {
    for (const std::uint8_t type : {kData, kSnapshot}) {
      RawPacket raw;
      raw.Header(type, kFollowed, 1, 1, 8).Block(kind, size);
      EXPECT_EQ(CauseOf(raw), CheckCause::kOk) << int{kind} << " " << int{type};
    }
  }
}

TEST(FeedPacketChecksTest, TheFirstBadBlockIsTheCause) {
  RawPacket raw;  // block 2 misplaced, block 3 truncated
  raw.Header(kData, kFollowed, 1, 3, 0)
      .Block(kD, 21)
      .Block(kZ, 17)
      .U16(40)
      .U8(kA);
  EXPECT_EQ(CauseOf(raw), CheckCause::kMisplacedKind);
}

TEST(FeedPacketChecksTest, BytesAfterTheLastBlockAreTrailing) {
  RawPacket raw;
  raw.Header(kData, kFollowed, 1, 1, 0).Block(kD, 21).Zeros(1);
  EXPECT_EQ(CauseOf(raw), CheckCause::kTrailingBytes);
  RawPacket block;  // a whole extra block beyond count
  block.Header(kData, kFollowed, 1, 1, 0).Block(kD, 21).Block(kD, 21);
  EXPECT_EQ(CauseOf(block), CheckCause::kTrailingBytes);
}

TEST(FeedPacketChecksTest, UnknownKindIsSkippedNotRefused) {
  RawPacket raw;  // D, then P (reserved), then an unassigned kind 0x7E
  raw.Header(kData, kFollowed, 10, 3, 0)
      .Block(kD, 21)
      .Block(kP, 12)
      .Block(0x7E, 9);
  const auto packet = PacketView::Parse(raw.bytes(), SessionFilter::Any());
  ASSERT_TRUE(packet.ok()) << Name(packet.error());
  std::vector<std::pair<MessageKind, bool>> seen;
  std::vector<std::uint16_t> lengths;
  for (const MessageBlock block : *packet) {
    seen.emplace_back(block.kind(), block.known());
    lengths.push_back(block.length());
  }
  ASSERT_EQ(seen.size(), 3u);  // three messages: sequences 10, 11, 12
  EXPECT_EQ(seen[0], std::pair(MessageKind::kOrderDeleted, true));
  EXPECT_EQ(seen[1], std::pair(MessageKind::kReservedTrade, false));
  EXPECT_EQ(seen[2], std::pair(static_cast<MessageKind>(0x7E), false));
  EXPECT_EQ(lengths, (std::vector<std::uint16_t>{21, 12, 9}));
  // Unknown kinds are taken in Snapshot packets too.
  RawPacket snapshot;
  snapshot.Header(kSnapshot, kFollowed, 1, 1, 8).Block(kP, 30);
  EXPECT_EQ(CauseOf(snapshot), CheckCause::kOk);
}

TEST(FeedPacketChecksTest, KnownKindWithLongerLengthIsReadAsItsKind) {
  RawPacket raw;  // an OrderDeleted with 4 bytes a later revision appended
  raw.Header(kData, kFollowed, 1, 1, 0)
      .U16(25)
      .U8(kD)
      .U64(1700000000000250000)
      .U64(2)
      .U32(42)
      .U32(0xFFFFFFFF);
  const auto packet = PacketView::Parse(raw.bytes(), SessionFilter::Any());
  ASSERT_TRUE(packet.ok()) << Name(packet.error());
  const MessageBlock block = *packet->begin();
  EXPECT_TRUE(block.known());
  EXPECT_EQ(block.length(), 25u);
  EXPECT_EQ(block.bytes().size(), 25u);
  const auto deleted = MessageView<OrderDeleted>::FromBlock(block);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(deleted->Get<&OrderDeleted::timestamp>(), 1700000000000250000u);
  EXPECT_EQ(deleted->Get<&OrderDeleted::order_id>(), 2u);
  EXPECT_EQ(deleted->Get<&OrderDeleted::instrument_id>(), 42u);
  EXPECT_EQ(deleted->bytes().size(), 21u);
  EXPECT_EQ(MessageView<OrderAdded>::FromBlock(block).error(),
            codec::CodecError::kWrongKind);
}

// ---------------------------------------------------------------------------
// The request server's checks, in order.

TEST(FeedRequestChecksTest, FramingChecksComeFirst) {
  RawPacket oversize;
  oversize.Zeros(kMaxPacketBytes + 1);
  EXPECT_EQ(RequestCauseOf(oversize), CheckCause::kOversize);
  RawPacket truncated;
  truncated.Zeros(23);
  EXPECT_EQ(RequestCauseOf(truncated), CheckCause::kTruncated);
  RawPacket magic;
  magic.Header(0, 0, 0, 0, 0, 2, 0x4D4E);
  EXPECT_EQ(RequestCauseOf(magic), CheckCause::kBadMagic);
  RawPacket version;
  version.Header(0, 0, 0, 0, 0, 0);
  EXPECT_EQ(RequestCauseOf(version), CheckCause::kBadVersion);
}

TEST(FeedRequestChecksTest, OnlyTheTwoRequestTypesPass) {
  for (int type = 0; type < 256; ++type) {
    RawPacket raw;  // token 0 too
    raw.Header(static_cast<std::uint8_t>(type), kFollowed, 0, 0, 0);
    const bool request = type == kRetransmit || type == kSnapshotRequest;
    EXPECT_EQ(RequestCauseOf(raw) == CheckCause::kBadType, !request) << type;
  }
}

TEST(FeedRequestChecksTest, TokenZeroIsBadTokenBeforeTheTypesOwnChecks) {
  RawPacket retransmit;  // sequence 0 and count 0 too
  retransmit.Header(kRetransmit, kFollowed, 0, 0, 0);
  EXPECT_EQ(RequestCauseOf(retransmit), CheckCause::kBadToken);
  RawPacket snapshot;  // sequence 1 and no body too
  snapshot.Header(kSnapshotRequest, kFollowed, 1, 0, 0);
  EXPECT_EQ(RequestCauseOf(snapshot), CheckCause::kBadToken);
}

TEST(FeedRequestChecksTest, RetransmitRequestChecksInOrder) {
  RawPacket sequence;  // count 0 and a byte after too
  sequence.Header(kRetransmit, kFollowed, 0, 0, 1).Zeros(1);
  EXPECT_EQ(RequestCauseOf(sequence), CheckCause::kBadSequence);
  RawPacket count;
  count.Header(kRetransmit, kFollowed, 5, 0, 1).Zeros(1);
  EXPECT_EQ(RequestCauseOf(count), CheckCause::kZeroCount);
  RawPacket trailing;
  trailing.Header(kRetransmit, kFollowed, 5, 2, 1).Zeros(1);
  EXPECT_EQ(RequestCauseOf(trailing), CheckCause::kTrailingBytes);
  RawPacket good;  // any session: the server answers WrongSession itself
  good.Header(kRetransmit, kOther, 5, 2, 1);
  EXPECT_EQ(RequestCauseOf(good), CheckCause::kOk);
}

TEST(FeedRequestChecksTest, SnapshotRequestChecksInOrder) {
  RawPacket sequence;  // count not 0 and no body too
  sequence.Header(kSnapshotRequest, kFollowed, 1, 1, 1);
  EXPECT_EQ(RequestCauseOf(sequence), CheckCause::kBadSequence);
  RawPacket count;
  count.Header(kSnapshotRequest, kFollowed, 0, 1, 1);
  EXPECT_EQ(RequestCauseOf(count), CheckCause::kBadCount);
  RawPacket short_body;
  short_body.Header(kSnapshotRequest, kFollowed, 0, 0, 1).Zeros(3);
  EXPECT_EQ(RequestCauseOf(short_body), CheckCause::kTruncated);
  RawPacket long_body;
  long_body.Header(kSnapshotRequest, kFollowed, 0, 0, 1).Zeros(5);
  EXPECT_EQ(RequestCauseOf(long_body), CheckCause::kTrailingBytes);
  RawPacket good;  // session 0: whatever the current one is
  good.Header(kSnapshotRequest, 0, 0, 0, 1).U32(0);
  const auto request = RequestView::Parse(good.bytes());
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->session(), 0u);
  EXPECT_EQ(request->instrument_id(), 0u);
}

}  // namespace
}  // namespace orderwire::feed::test
