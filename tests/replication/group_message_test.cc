// The journal stream's message format (replication/group_message.h): what
// the builder writes parses back to the same records, and every kind of
// damage is refused whole, naming where.
#include "replication/group_message.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "codec/messages.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/crc32c.h"
#include "journal/format.h"
#include "tests/support/bytes.h"

namespace orderwire::replication {
namespace {

using test_support::Bytes;
using ::testing::HasSubstr;

// One record as the journal would hand it out, owning its frame's bytes.
struct OwnedRecord {
  std::uint64_t index;
  std::uint64_t receive_ns;
  std::uint32_t session_id;
  std::uint32_t flags;
  Bytes frame;

  [[nodiscard]] journal::Record View() const {
    journal::Record record;
    record.index = index;
    record.receive_ns = receive_ns;
    record.session_id = session_id;
    record.flags = flags;
    record.frame = *codec::FrameView::Parse(frame);
    return record;
  }
};

// Records first..first+count-1 of mixed kinds and sizes.
std::vector<OwnedRecord> Records(std::uint64_t first, std::uint32_t count) {
  std::vector<OwnedRecord> records;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint64_t index = first + i;
    Bytes frame =
        i % 2 == 0
            ? test_support::Frame(
                  index,
                  codec::NewLimit{
                      .account_id = 7,
                      .client_order_id = index,
                      .instrument_id = 3,
                      .side = codec::Side::kBuy,
                      .time_in_force = codec::TimeInForce::kGoodTillCancel,
                      .price = 100 + i,
                      .quantity = 5})
            : test_support::Frame(
                  index, codec::CancelByOrder{.account_id = 7, .order_id = i});
    records.push_back(
        {index, 1'000'000 + index * 3, 1 + i % 3, i % 4, std::move(frame)});
  }
  return records;
}

Bytes Build(std::uint64_t epoch, const std::vector<OwnedRecord>& records) {
  GroupMessageBuilder builder;
  builder.Start(epoch);
  for (const OwnedRecord& record : records) {
    EXPECT_TRUE(builder.Add(record.View()).ok());
  }
  const std::span<const std::byte> bytes = builder.Finish();
  return {bytes.begin(), bytes.end()};
}

// Rewrites the checksum after a deliberate change, so that the check under
// test is the one that refuses it.
void Reseal(Bytes& bytes) {
  codec::StoreLE(bytes.data() + 32, std::uint32_t{0});
  Bytes header(bytes.begin(), bytes.begin() + kGroupMessageHeaderSize);
  std::uint32_t crc = journal::Crc32c(header);
  crc = journal::Crc32cExtend(
      crc, std::span(bytes).subspan(kGroupMessageHeaderSize));
  codec::StoreLE(bytes.data() + 32, crc);
}

TEST(GroupMessage, RecordsRoundTripFieldForField) {
  const std::vector<OwnedRecord> records = Records(41, 9);
  const Bytes bytes = Build(3, records);
  auto message = ParseGroupMessage(bytes);
  ASSERT_TRUE(message.ok()) << message.status();
  EXPECT_EQ(message->kind, GroupMessageKind::kRecords);
  EXPECT_EQ(message->epoch, 3u);
  EXPECT_EQ(message->first_index, 41u);
  EXPECT_EQ(message->record_count, 9u);
  EXPECT_EQ(message->last_index(), 49u);
  std::size_t n = 0;
  message->ForEachRecord([&](const journal::Record& record) {
    ASSERT_LT(n, records.size());
    const OwnedRecord& want = records[n++];
    EXPECT_EQ(record.index, want.index);
    EXPECT_EQ(record.receive_ns, want.receive_ns);
    EXPECT_EQ(record.session_id, want.session_id);
    EXPECT_EQ(record.flags, want.flags);
    const auto frame = record.frame.bytes();
    EXPECT_EQ(Bytes(frame.begin(), frame.end()), want.frame);
  });
  EXPECT_EQ(n, records.size());
}

// The header's bytes are those the format declares: anyone reading the
// stream without this code (a dissector, another language) relies on them.
TEST(GroupMessage, HeaderBytesAreTheDeclaredLayout) {
  const Bytes bytes = Build(0x0102030405060708, Records(5, 1));
  ASSERT_GE(bytes.size(), kGroupMessageHeaderSize);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), 4),
            "OWRM");
  EXPECT_EQ(codec::LoadLE<std::uint16_t>(bytes.data() + 4), 1u);  // version
  EXPECT_EQ(codec::LoadLE<std::uint16_t>(bytes.data() + 6), 1u);  // records
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(bytes.data() + 8),
            0x0102030405060708u);
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(bytes.data() + 16), 5u);
  EXPECT_EQ(codec::LoadLE<std::uint32_t>(bytes.data() + 24), 1u);
  EXPECT_EQ(codec::LoadLE<std::uint32_t>(bytes.data() + 28),
            bytes.size() - kGroupMessageHeaderSize);
  // The body is the record header of journal/format.h, then the frame.
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(bytes.data() + 40), 5u);
  EXPECT_EQ(bytes.size(), kGroupMessageHeaderSize + journal::kRecordHeaderSize +
                              codec::kFrameSize<codec::NewLimit>);
}

TEST(GroupMessage, BuilderReusedForTheNextMessageForgetsTheLast) {
  GroupMessageBuilder builder;
  builder.Start(1);
  for (const OwnedRecord& record : Records(1, 20)) {
    ASSERT_TRUE(builder.Add(record.View()).ok());
  }
  (void)builder.Finish();
  const std::vector<OwnedRecord> second = Records(21, 2);
  builder.Start(2);
  for (const OwnedRecord& record : second) {
    ASSERT_TRUE(builder.Add(record.View()).ok());
  }
  const auto bytes = builder.Finish();
  auto message = ParseGroupMessage(bytes);
  ASSERT_TRUE(message.ok()) << message.status();
  EXPECT_EQ(message->first_index, 21u);
  EXPECT_EQ(message->record_count, 2u);
  EXPECT_EQ(Bytes(bytes.begin(), bytes.end()), Build(2, second));
}

TEST(GroupMessage, BuilderRefusesARecordOutOfSequence) {
  const std::vector<OwnedRecord> records = Records(10, 3);
  GroupMessageBuilder builder;
  builder.Start(1);
  ASSERT_TRUE(builder.Add(records[0].View()).ok());
  const absl::Status skipped = builder.Add(records[2].View());
  EXPECT_EQ(skipped.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(skipped.message(), HasSubstr("12 does not follow 10"));
  EXPECT_EQ(builder.record_count(), 1u);
  ASSERT_TRUE(builder.Add(records[1].View()).ok());
  EXPECT_EQ(builder.record_count(), 2u);
}

TEST(GroupMessage, EpochMarkerRoundTrips) {
  const std::vector<std::byte> bytes = EncodeEpochMarker(9, 1234);
  EXPECT_EQ(bytes.size(), kGroupMessageHeaderSize);
  auto message = ParseGroupMessage(bytes);
  ASSERT_TRUE(message.ok()) << message.status();
  EXPECT_EQ(message->kind, GroupMessageKind::kEpochMarker);
  EXPECT_EQ(message->epoch, 9u);
  EXPECT_EQ(message->first_index, 1234u);
  EXPECT_EQ(message->record_count, 0u);
  std::size_t n = 0;
  message->ForEachRecord([&](const journal::Record&) { ++n; });
  EXPECT_EQ(n, 0u);
}

// Every single-byte change anywhere in a message is caught (by the checksum
// if by nothing earlier): a message is applied whole or not at all.
TEST(GroupMessage, EveryFlippedByteIsRefused) {
  const Bytes good = Build(4, Records(100, 6));
  for (std::size_t i = 0; i < good.size(); ++i) {
    Bytes bad = good;
    bad[i] ^= std::byte{0x20};
    auto message = ParseGroupMessage(bad);
    ASSERT_FALSE(message.ok()) << "byte " << i << " flipped was accepted";
    EXPECT_EQ(message.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(GroupMessage, TruncatedOrExtendedIsRefused) {
  const Bytes good = Build(4, Records(100, 3));
  for (std::size_t size = 0; size < good.size(); ++size) {
    auto message = ParseGroupMessage(std::span(good).first(size));
    EXPECT_FALSE(message.ok()) << size << " bytes accepted";
  }
  Bytes longer = good;
  longer.push_back(std::byte{0});
  auto message = ParseGroupMessage(longer);
  ASSERT_FALSE(message.ok());
  EXPECT_THAT(message.status().message(), HasSubstr("body_bytes"));
}

// Damage that keeps a valid checksum (a writer's bug, not a flipped bit)
// is refused by the structural checks, each naming what it found.
TEST(GroupMessage, StructuralDamageUnderAValidChecksumIsNamed) {
  const Bytes good = Build(4, Records(100, 3));
  struct Case {
    std::size_t offset;
    std::uint64_t value;
    int width;
    const char* expect;
  };
  const std::size_t second_record = kGroupMessageHeaderSize +
                                    journal::kRecordHeaderSize +
                                    codec::kFrameSize<codec::NewLimit>;
  const Case cases[] = {
      {4, 2, 2, "version 2"},
      {6, 7, 2, "unknown message kind 7"},
      {16, 0, 8, "first_index 0"},
      {24, 0, 4, "without records"},
      {24, 4, 4, "record 4 of 4 is cut off"},
      {24, 2, 4, "bytes after the last record"},
      {36, 1, 4, "reserved"},
      {second_record, 999, 8, "record 2 has index 999, expected 101"},
      {second_record + journal::kRecordHeaderSize + codec::kKindOffset, 0x80, 1,
       "not a command"},
  };
  for (const Case& c : cases) {
    Bytes bad = good;
    switch (c.width) {
      case 1:
        codec::StoreLE(bad.data() + c.offset,
                       static_cast<std::uint8_t>(c.value));
        break;
      case 2:
        codec::StoreLE(bad.data() + c.offset,
                       static_cast<std::uint16_t>(c.value));
        break;
      case 4:
        codec::StoreLE(bad.data() + c.offset,
                       static_cast<std::uint32_t>(c.value));
        break;
      default:
        codec::StoreLE(bad.data() + c.offset, c.value);
    }
    Reseal(bad);
    auto message = ParseGroupMessage(bad);
    ASSERT_FALSE(message.ok()) << c.expect;
    EXPECT_THAT(message.status().message(), HasSubstr(c.expect));
  }
  Bytes bad_magic = good;
  bad_magic[0] = std::byte{'X'};
  EXPECT_THAT(ParseGroupMessage(bad_magic).status().message(),
              HasSubstr("magic"));
}

TEST(GroupMessage, MarkerWithRecordsOrEpochZeroIsRefused) {
  Bytes marker = EncodeEpochMarker(2, 10);
  codec::StoreLE(marker.data() + 24, std::uint32_t{1});
  Reseal(marker);
  EXPECT_THAT(ParseGroupMessage(marker).status().message(),
              HasSubstr("carries records"));
  Bytes zero = EncodeEpochMarker(0, 10);
  EXPECT_THAT(ParseGroupMessage(zero).status().message(), HasSubstr("epoch 0"));
}

}  // namespace
}  // namespace orderwire::replication
