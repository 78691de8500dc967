// The feed's layouts and kind table against docs/MARKETDATA.md's tables
// (typed here from the text), the names of its enumerations, and the
// builder's limits: what fits, what a packet type may carry, what an encoder
// refuses.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "feed/builder.h"
#include "feed/kind_table.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "feed/types.h"
#include "gtest/gtest.h"
#include "tests/feed/feed_test_support.h"

namespace orderwire::feed::test {
namespace {

struct KindRow {
  std::uint8_t kind;
  std::string_view name;
  std::size_t size;
  std::size_t block;
  bool in_data;
  bool in_snapshot;
};

// MARKETDATA.md "Messages" (kind, name, size, block) and "Checks" (which
// packet types carry it).
constexpr std::array<KindRow, 10> kKindRows = {{
    {0x53, "SystemEvent", 10, 12, true, false},
    {0x52, "InstrumentDirectory", 45, 47, true, true},
    {0x48, "TradingStatus", 14, 16, true, true},
    {0x41, "OrderAdded", 38, 40, true, true},
    {0x45, "OrderExecuted", 46, 48, true, false},
    {0x58, "OrderReduced", 29, 31, true, false},
    {0x44, "OrderDeleted", 21, 23, true, false},
    {0x55, "OrderReplaced", 37, 39, true, false},
    {0x47, "SnapshotStart", 25, 27, false, true},
    {0x5A, "SnapshotEnd", 17, 19, false, true},
}};

TEST(FeedKindTableTest, KnowsExactlyTheDocumentsKinds) {
  std::size_t known = 0;
  for (std::size_t i = 0; i < kKindTable.size(); ++i) {
    if (kKindTable[i].size != 0) ++known;
  }
  EXPECT_EQ(known, kKindRows.size());
  for (const KindRow& row : kKindRows) {
    const KindInfo& info = kKindTable[row.kind];
    EXPECT_EQ(info.name, row.name);
    EXPECT_EQ(info.size, row.size) << row.name;
    EXPECT_EQ(kBlockLengthSize + info.size, row.block) << row.name;
    EXPECT_EQ((info.carriers & kInData) != 0, row.in_data) << row.name;
    EXPECT_EQ((info.carriers & kInSnapshot) != 0, row.in_snapshot) << row.name;
    const auto kind = static_cast<MessageKind>(row.kind);
    EXPECT_EQ(Name(kind), row.name);
    EXPECT_EQ(MayCarry(PacketType::kData, kind), row.in_data) << row.name;
    EXPECT_EQ(MayCarry(PacketType::kSnapshot, kind), row.in_snapshot);
    for (const PacketType other :
         {PacketType::kHeartbeat, PacketType::kRefused,
          PacketType::kRetransmitRequest, static_cast<PacketType>(0)}) {
      EXPECT_FALSE(MayCarry(other, kind)) << row.name;
    }
  }
}

TEST(FeedKindTableTest, ReservedTradeKindIsUnknown) {
  const KindInfo& info = Info(MessageKind::kReservedTrade);
  EXPECT_EQ(static_cast<int>(MessageKind::kReservedTrade), 0x50);
  EXPECT_EQ(info.size, 0u);
  EXPECT_EQ(info.name, "");
  // An unknown kind may ride in either packet type that has blocks.
  EXPECT_TRUE(MayCarry(PacketType::kData, MessageKind::kReservedTrade));
  EXPECT_TRUE(MayCarry(PacketType::kSnapshot, MessageKind::kReservedTrade));
  EXPECT_FALSE(MayCarry(PacketType::kHeartbeat, MessageKind::kReservedTrade));
}

TEST(FeedLayoutTest, EveryFieldNamedAsTheDocument) {
  std::vector<std::string_view> names;
  MessageTraits<OrderExecuted>::kLayout.ForEach(
      [&](const auto& field, std::size_t) { names.push_back(field.name); });
  EXPECT_EQ(names, (std::vector<std::string_view>{
                       "timestamp", "order_id", "instrument_id", "side",
                       "match_id", "price", "quantity"}));
  names.clear();
  MessageTraits<PacketHeader>::kLayout.ForEach(
      [&](const auto& field, std::size_t) { names.push_back(field.name); });
  EXPECT_EQ(names, (std::vector<std::string_view>{"magic", "version", "type",
                                                  "session", "sequence",
                                                  "count", "token"}));
}

TEST(FeedLayoutTest, SizesAndOffsetsOfThePacketTables) {
  EXPECT_EQ(kMaxPacketBytes, 1452u);
  EXPECT_EQ(kPacketHeaderSize, 24u);
  EXPECT_EQ(PacketOffsetOf<&PacketHeader::token>(), 22u);
  EXPECT_EQ(kRefusedBodySize, 17u);
  EXPECT_EQ(BodyOffsetOf<&RefusedBody::next_sequence>(), 24u + 9u);
  EXPECT_EQ(kSnapshotRequestBodySize, 4u);
  EXPECT_EQ(kMessageHeaderSize, 9u);
  EXPECT_EQ(MessageOffsetOf<&OrderAdded::quantity>(), 30u);
  EXPECT_EQ(MessageOffsetOf<&OrderExecuted::quantity>(), 38u);
  EXPECT_EQ(MessageOffsetOf<&SnapshotStart::message_count>(), 21u);
  EXPECT_EQ(kMaxMessageSize, 46u);
  // "O" "M" on the wire.
  std::array<std::byte, kPacketHeaderSize> out{};
  ASSERT_TRUE(EncodeHeartbeat(out, 1, 1).ok());
  EXPECT_EQ(out[0], std::byte{'O'});
  EXPECT_EQ(out[1], std::byte{'M'});
}

TEST(FeedTypesTest, EnumerationsHaveTheDocumentsValuesAndNames) {
  EXPECT_EQ(Name(PacketType::kData), "Data");
  EXPECT_EQ(static_cast<int>(PacketType::kRefused), 5);
  EXPECT_EQ(static_cast<int>(PacketType::kRetransmitRequest), 0x11);
  EXPECT_EQ(Name(PacketType::kSnapshotRequest), "SnapshotRequest");
  EXPECT_EQ(Name(static_cast<PacketType>(6)), "");
  EXPECT_EQ(Name(SystemEventCode::kStartOfFeed), "StartOfFeed");
  EXPECT_EQ(static_cast<int>(SystemEventCode::kEndOfFeed), 2);
  EXPECT_EQ(Name(TradingState::kUnlisted), "Unlisted");
  EXPECT_EQ(static_cast<int>(TradingState::kHalted), 2);
  EXPECT_EQ(Name(RefusedReason::kUnknownInstrument), "UnknownInstrument");
  EXPECT_EQ(static_cast<int>(RefusedReason::kUnavailable), 6);
  EXPECT_EQ(Name(static_cast<RefusedReason>(7)), "");
}

TEST(FeedTypesTest, ReservedRefusedReasonsAreTakenAsUnavailable) {
  for (int v = 1; v <= 6; ++v) {
    const auto reason = static_cast<RefusedReason>(v);
    EXPECT_EQ(EffectiveReason(reason), reason);
  }
  for (int v = 7; v < 256; ++v) {
    EXPECT_EQ(EffectiveReason(static_cast<RefusedReason>(v)),
              RefusedReason::kUnavailable);
  }
}

TEST(FeedTypesTest, EveryCheckCauseHasItsName) {
  constexpr std::array<std::string_view, kCheckCauseCount> kNames = {
      "Ok",          "Oversize",      "Truncated",    "BadMagic",
      "BadVersion",  "BadType",       "OtherSession", "BadToken",
      "BadSequence", "BadCount",      "ZeroCount",    "CountMismatch",
      "BadLength",   "MisplacedKind", "TrailingBytes"};
  for (int i = 0; i < kCheckCauseCount; ++i) {
    EXPECT_EQ(Name(static_cast<CheckCause>(i)),
              kNames[static_cast<std::size_t>(i)]);
  }
  EXPECT_EQ(Name(static_cast<CheckCause>(kCheckCauseCount)), "");
}

// ---------------------------------------------------------------------------
// The builder's limits.

constexpr OrderDeleted kDeleted{
    .timestamp = 5, .order_id = 2, .instrument_id = 42};

TEST(FeedBuilderTest, RefusesWhatThePacketTypeMayNotCarry) {
  std::array<std::byte, kMaxPacketBytes> buffer{};
  PacketBuilder builder(buffer);
  EXPECT_EQ(builder.Append(kDeleted), codec::CodecError::kWrongKind)
      << "nothing begun";
  builder.BeginData(1, 1);
  EXPECT_FALSE(builder.Fits(MessageKind::kSnapshotEnd));
  EXPECT_EQ(builder.Append(SnapshotEnd{.timestamp = 1, .feed_sequence = 1}),
            codec::CodecError::kWrongKind);
  builder.BeginSnapshot(1, 1, 8);
  EXPECT_FALSE(builder.Fits(MessageKind::kOrderDeleted));
  EXPECT_EQ(builder.Append(kDeleted), codec::CodecError::kWrongKind);
  EXPECT_TRUE(builder.Fits(MessageKind::kOrderAdded));
  EXPECT_FALSE(builder.Fits(MessageKind::kReservedTrade)) << "no known size";
  EXPECT_TRUE(builder.empty());
  EXPECT_TRUE(builder.Finish().empty()) << "no packet of no block";
}

TEST(FeedBuilderTest, FillsToExactlyTheLargestPacket) {
  std::array<std::byte, 2 * kMaxPacketBytes> buffer{};
  PacketBuilder builder(buffer);  // uses 1452 bytes of it, no more
  builder.BeginData(1, 100);
  std::size_t appended = 0;
  while (builder.Fits(MessageKind::kOrderDeleted)) {
    ASSERT_EQ(builder.Append(kDeleted), codec::CodecError::kOk);
    ++appended;
  }
  // (1452 - 24) / 23 = 62 blocks of OrderDeleted.
  EXPECT_EQ(appended, 62u);
  EXPECT_EQ(builder.Append(kDeleted), codec::CodecError::kBufferTooSmall);
  EXPECT_EQ(builder.next_sequence(), 162u);
  const auto packet = builder.Finish();
  EXPECT_EQ(packet.size(), 24u + 62u * 23u);
  const auto parsed = PacketView::Parse(packet, SessionFilter::Only(1));
  ASSERT_TRUE(parsed.ok()) << Name(parsed.error());
  EXPECT_EQ(parsed->count(), 62u);
  EXPECT_EQ(parsed->sequence(), 100u);
}

TEST(FeedBuilderTest, AppendMessageCopiesAnyWellFormedMessage) {
  std::array<std::byte, kMaxPacketBytes> buffer{};
  PacketBuilder builder(buffer);
  builder.BeginData(1, 1);
  RawPacket unknown;  // kind 0x7E, 12 bytes
  unknown.U8(0x7E).U64(9).Zeros(3);
  EXPECT_EQ(builder.AppendMessage(unknown.bytes()), codec::CodecError::kOk);
  RawPacket short_unknown;  // 8 bytes: below any message
  short_unknown.U8(0x7E).Zeros(7);
  EXPECT_EQ(builder.AppendMessage(short_unknown.bytes()),
            codec::CodecError::kTruncated);
  RawPacket short_deleted;  // 20 bytes of a 21-byte kind
  short_deleted.U8(0x44).Zeros(19);
  EXPECT_EQ(builder.AppendMessage(short_deleted.bytes()),
            codec::CodecError::kTruncated);
  RawPacket snapshot_end;  // a whole SnapshotEnd, misplaced in Data
  snapshot_end.U8(0x5A).Zeros(16);
  EXPECT_EQ(builder.AppendMessage(snapshot_end.bytes()),
            codec::CodecError::kWrongKind);
  EXPECT_EQ(builder.count(), 1u);
  const auto packet = builder.Finish();
  const auto parsed = PacketView::Parse(packet, SessionFilter::Any());
  ASSERT_TRUE(parsed.ok()) << Name(parsed.error());
  const MessageBlock block = *parsed->begin();
  EXPECT_FALSE(block.known());
  EXPECT_EQ(block.length(), 12u);
  EXPECT_EQ(block.timestamp(), 9u);
}

TEST(FeedBuilderTest, EncodersRefuseASmallBufferAndWriteNothing) {
  std::array<std::byte, kPacketHeaderSize + kRefusedBodySize> out{};
  const std::span<std::byte> short_out(out.data(), kPacketHeaderSize - 1);
  EXPECT_EQ(EncodeHeartbeat(short_out, 1, 1).error(),
            codec::CodecError::kBufferTooSmall);
  EXPECT_EQ(EncodeEndOfSession(short_out, 1, 1).error(),
            codec::CodecError::kBufferTooSmall);
  EXPECT_EQ(EncodeRetransmitRequest(short_out, 1, 1, 1, 1).error(),
            codec::CodecError::kBufferTooSmall);
  const std::span<std::byte> header_only(out.data(), kPacketHeaderSize);
  EXPECT_EQ(EncodeSnapshotRequest(header_only, 1, 1, 0).error(),
            codec::CodecError::kBufferTooSmall);
  EXPECT_EQ(EncodeRefused(std::span(out.data(), out.size() - 1), 1, 1, 1,
                          RefusedBody{})
                .error(),
            codec::CodecError::kBufferTooSmall);
  for (const std::byte b : out) EXPECT_EQ(b, std::byte{0});
}

}  // namespace
}  // namespace orderwire::feed::test
