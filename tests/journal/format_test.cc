// The format's layouts, pinned to docs/JOURNAL.md, and its file names.
#include "journal/format.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "journal/crc32c.h"
#include "journal/writer.h"
#include "tests/journal/test_support.h"
#include "tests/support/bytes.h"

namespace orderwire::journal {
namespace {

TEST(FormatTest, OffsetsMatchTheFormatPage) {
  static_assert(kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::version> == 8);
  static_assert(kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::block_size> ==
                12);
  static_assert(kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::first_index> ==
                16);
  static_assert(kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::created_ns> ==
                24);
  static_assert(kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::capacity> ==
                32);
  static_assert(kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::journal_id> ==
                40);
  static_assert(kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::flags> == 48);
  static_assert(
      kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::metadata_size> == 52);
  static_assert(kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::metadata_crc> ==
                56);
  static_assert(kSegmentMetadataOffset == 64);
  static_assert(kMaxSegmentMetadata == 4032);
  static_assert(kOffsetOf<kGroupHeaderLayout, &GroupHeader::records_bytes> ==
                4);
  static_assert(kOffsetOf<kGroupHeaderLayout, &GroupHeader::first_index> == 8);
  static_assert(kOffsetOf<kGroupHeaderLayout, &GroupHeader::stable_index> ==
                16);
  static_assert(kOffsetOf<kGroupHeaderLayout, &GroupHeader::record_count> ==
                24);
  static_assert(kOffsetOf<kGroupHeaderLayout, &GroupHeader::flags> == 28);
  static_assert(kOffsetOf<kGroupTrailerLayout, &GroupTrailer::magic> == 4);
  // Version 3: the compact group header.
  static_assert(kOffsetOf<kCompactGroupHeaderLayout,
                          &CompactGroupHeader::records_bytes> == 4);
  static_assert(
      kOffsetOf<kCompactGroupHeaderLayout, &CompactGroupHeader::first_index> ==
      8);
  static_assert(
      kOffsetOf<kCompactGroupHeaderLayout, &CompactGroupHeader::record_count> ==
      16);
  static_assert(
      kOffsetOf<kCompactGroupHeaderLayout, &CompactGroupHeader::stable_lag> ==
      20);
  static_assert(kCompactGroupHeaderSize == 24);
  static_assert(GroupFormatOf(3).record_header_size == 16 &&
                GroupFormatOf(3).min_record_size == 41 &&
                GroupFormatOf(3).max_record_size == 65 &&
                GroupFormatOf(3).alignment == 8);
  static_assert(GroupFormatOf(2).record_header_size == 24 &&
                GroupFormatOf(2).header_size == 32 &&
                GroupFormatOf(1).alignment == 4096);
  static_assert(kOffsetOf<kRecordHeaderLayout, &RecordHeader::receive_ns> == 8);
  static_assert(kOffsetOf<kRecordHeaderLayout, &RecordHeader::session_id> ==
                16);
  static_assert(kOffsetOf<kRecordHeaderLayout, &RecordHeader::flags> == 20);
  SUCCEED();
}

TEST(FormatTest, MagicsAreTheDocumentedBytes) {
  std::byte b[8];
  codec::StoreLE(b, kSegmentMagic);
  EXPECT_EQ(std::memcmp(b, "OWJOURNL", 8), 0);
  codec::StoreLE(b, kGroupMagic);
  EXPECT_EQ(std::memcmp(b, "OWGH", 4), 0);
  codec::StoreLE(b, kTrailerMagic);
  EXPECT_EQ(std::memcmp(b, "OWGT", 4), 0);
  codec::StoreLE(b, kCompactGroupMagic);
  EXPECT_EQ(std::memcmp(b, "OWG3", 4), 0);
}

// Version 3 stores stable_index as a 32-bit lag behind first_index. A lag
// that does not fit is stored as 0, which reads as stable_index 0: the
// proof horizon read back is never above the writer's.
TEST(FormatTest, TheCompactStableLagRoundTripsOrClaimsNothing) {
  const GroupFormat format = GroupFormatOf(3);
  std::byte bytes[kCompactGroupHeaderSize];
  auto round_trip = [&](std::uint64_t first, std::uint64_t stable) {
    EncodeGroupHeader(format,
                      {.magic = 0,
                       .records_bytes = 41,
                       .first_index = first,
                       .stable_index = stable,
                       .record_count = 1,
                       .flags = 0},
                      bytes);
    return DecodeGroupHeader(format, bytes);
  };
  GroupHeader h = round_trip(1, 0);
  EXPECT_EQ(h.magic, kCompactGroupMagic);
  EXPECT_EQ(h.records_bytes, 41u);
  EXPECT_EQ(h.record_count, 1u);
  EXPECT_EQ(h.first_index, 1u);
  EXPECT_EQ(h.stable_index, 0u);
  EXPECT_EQ(codec::LoadLE<std::uint32_t>(bytes + 20), 1u);  // the lag
  EXPECT_EQ(round_trip(1'000'000, 999'990).stable_index, 999'990u);
  const std::uint64_t far = std::uint64_t{1} << 40;
  // The largest lag that fits is kept exactly.
  EXPECT_EQ(round_trip(far, far - 0xFFFFFFFFu).stable_index, far - 0xFFFFFFFFu);
  // One more does not fit: 0, read as "nothing claimed".
  h = round_trip(far, far - 0x100000000u);
  EXPECT_EQ(codec::LoadLE<std::uint32_t>(bytes + 20), 0u);
  EXPECT_EQ(h.stable_index, 0u);
  EXPECT_EQ(round_trip(far, 0).stable_index, 0u);
  // A lag beyond first_index names no index: it reads as stable_index ==
  // first_index, which the group check refuses ("inconsistent group
  // indexes"; CompactTest covers the reader).
  codec::StoreLE(bytes + 20, std::uint32_t{7});
  codec::StoreLE(bytes + 8, std::uint64_t{6});
  h = DecodeGroupHeader(format, bytes);
  EXPECT_EQ(h.stable_index, h.first_index);
}

TEST(FormatTest, SegmentHeaderRoundTripsWithItsChecksum) {
  const SegmentHeader h{.magic = kSegmentMagic,
                        .version = kFormatVersion,
                        .header_size = kSegmentHeaderSize,
                        .block_size = kBlockSize,
                        .first_index = 12345,
                        .created_ns = 1700000000123456789ull,
                        .capacity = 64 << 20,
                        .journal_id = 0xFEEDFACECAFEBEEFull,
                        .flags = 0,
                        .metadata_size = 0,
                        .metadata_crc = 0,
                        .crc = 0};
  std::vector<std::byte> bytes(kSegmentHeaderSize);
  EncodeSegmentHeader(h, bytes.data());
  const auto back =
      LoadStruct<kSegmentHeaderLayout, SegmentHeader>(bytes.data());
  EXPECT_EQ(back.first_index, 12345u);
  EXPECT_EQ(back.journal_id, 0xFEEDFACECAFEBEEFull);
  EXPECT_EQ(back.crc, Crc32c({bytes.data(), kSegmentHeaderCrcOffset}));
  // Byte 8 is the version, little-endian.
  EXPECT_EQ(bytes[8], std::byte{kFormatVersion});
  EXPECT_EQ(bytes[9], std::byte{0});
}

using test_support::FromHex;
using test_support::Hex;

// The published vectors of docs/JOURNAL.md ("Worked example").
TEST(FormatTest, TheSegmentHeaderOfTheFormatPageEncodesToItsBytes) {
  std::vector<std::byte> bytes(kSegmentHeaderSize);
  EncodeSegmentHeader({.magic = kSegmentMagic,
                       .version = 1,
                       .header_size = 64,
                       .block_size = 4096,
                       .first_index = 1,
                       .created_ns = 1700000000000000000ull,
                       .capacity = 67108864,
                       .journal_id = 0x0123456789ABCDEFull,
                       .flags = 0,
                       .metadata_size = 0,
                       .metadata_crc = 0,
                       .crc = 0},
                      bytes.data());
  EXPECT_EQ(Hex(bytes),
            "4f574a4f55524e4c0100400000100000010000000000000000002a36fe9c9717"
            "0000000400000000efcdab8967452301000000000000000000000000911d5888");
}

// docs/JOURNAL.md "Worked example": the header with the service's default
// pinned configuration as its metadata.
TEST(FormatTest, TheSegmentHeaderWithMetadataOfTheFormatPageEncodesToItsBytes) {
  const std::string metadata =
      "orderwire pinned configuration 1\nmin_instrument = 1\n"
      "max_instrument = 1024\nmin_price = 1\nmax_price = 1000000000\n"
      "min_quantity = 1\nmax_quantity = 1000000000\n"
      "max_live_orders = 1048576\nmax_sessions = 1024\n";
  ASSERT_EQ(metadata.size(), 200u);
  std::vector<std::byte> bytes(kBlockSize);
  EncodeSegmentHeader({.magic = kSegmentMagic,
                       .version = 1,
                       .header_size = 64,
                       .block_size = 4096,
                       .first_index = 1,
                       .created_ns = 1700000000000000000ull,
                       .capacity = 67108864,
                       .journal_id = 0x0123456789ABCDEFull,
                       .flags = 0,
                       .metadata_size = 0,  // computed
                       .metadata_crc = 0,   // computed
                       .crc = 0},
                      std::as_bytes(std::span(metadata)), bytes.data());
  EXPECT_EQ(Hex(std::span(bytes).first(kSegmentHeaderSize)),
            "4f574a4f55524e4c0100400000100000010000000000000000002a36fe9c9717"
            "0000000400000000efcdab896745230100000000c80000002b7aff226c0af9e4");
  EXPECT_EQ(std::memcmp(bytes.data() + 64, metadata.data(), metadata.size()),
            0);
  EXPECT_EQ(Crc32c(std::as_bytes(std::span(metadata))), 0x22FF7A2Bu);
}

TEST(FormatTest, TheWriterWritesTheVersion3GroupOfTheFormatPage) {
  // docs/PROTOCOL.md's first golden frame, journaled as index 1 of session
  // 0xCAFE received at 1700000000000000000 ns, in today's format.
  const std::vector<std::byte> frame = FromHex(
      "0100000000000000010700000000000000e9030000000000002a0000000101"
      "42270000000000002c01000000000000");
  test_support::ScratchDir dir;
  auto writer = JournalWriter::Open({.directory = dir.path(),
                                     .durability = Durability::kNone,
                                     .segment_size = std::uint64_t{64} * 1024,
                                     .backend = IoBackend::kBlocking});
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_EQ((*writer)->Append(frame, 0xCAFE, 1700000000000000000ull),
            AppendStatus::kOk);
  ASSERT_TRUE((*writer)->Close().ok());
  const std::vector<std::byte> bytes =
      test_support::ReadFile(testing::SegmentPaths(dir.path()).at(0));
  ASSERT_GE(bytes.size(), 2 * kBlockSize);
  EXPECT_EQ(bytes[8], std::byte{3});  // the segment's version
  EXPECT_EQ(Hex({bytes.data() + kBlockSize, 95}),
            "4f5747333f000000010000000000000001000000"
            "01000000"                          // group header, lag 1
            "00002a36fe9c9717feca000000000000"  // record header
            "0100000000000000010700000000000000e9030000000000002a00000001014227"
            "0000000000002c01000000000000"  // the frame, verbatim
            "0a123d014f574754");            // trailer
  // Nothing after the group (the next one would start at offset 4192).
  for (std::size_t i = kBlockSize + 95; i < bytes.size(); ++i) {
    ASSERT_EQ(bytes[i], std::byte{0}) << i;
  }
}

TEST(FormatTest, TheWriterWritesTheVersion2GroupOfTheFormatPage) {
  // The same record in a version-2 segment.
  const std::vector<std::byte> frame = FromHex(
      "0100000000000000010700000000000000e9030000000000002a0000000101"
      "42270000000000002c01000000000000");
  test_support::ScratchDir dir;
  auto writer = JournalWriter::Open({.directory = dir.path(),
                                     .durability = Durability::kNone,
                                     .segment_size = std::uint64_t{64} * 1024,
                                     .backend = IoBackend::kBlocking,
                                     .format_version = 2});
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_EQ((*writer)->Append(frame, 0xCAFE, 1700000000000000000ull),
            AppendStatus::kOk);
  ASSERT_TRUE((*writer)->Close().ok());
  const std::vector<std::byte> bytes =
      test_support::ReadFile(testing::SegmentPaths(dir.path()).at(0));
  ASSERT_GE(bytes.size(), 2 * kBlockSize);
  EXPECT_EQ(Hex({bytes.data() + kBlockSize, 111}),
            "4f574748470000000100000000000000000000000000000001000000000000"
            "00"                                                // group header
            "010000000000000000002a36fe9c9717feca000000000000"  // record header
            "0100000000000000010700000000000000e9030000000000002a00000001014227"
            "0000000000002c01000000000000"  // the frame, verbatim
            "606390bd4f574754");            // trailer
  // Zero padding to the next block, and nothing after the group.
  for (std::size_t i = kBlockSize + 111; i < bytes.size(); ++i) {
    ASSERT_EQ(bytes[i], std::byte{0}) << i;
  }
}

TEST(FormatTest, SegmentFileNamesCarryTheFirstIndex) {
  EXPECT_EQ(SegmentFileName(1), "00000000000000000001.owj");
  EXPECT_EQ(SegmentFileName(18446744073709551615ull),
            "18446744073709551615.owj");
  EXPECT_EQ(ParseSegmentFileName("00000000000000000042.owj"), 42u);
  EXPECT_FALSE(ParseSegmentFileName("42.owj").has_value());
  EXPECT_FALSE(ParseSegmentFileName("0000000000000000004x.owj").has_value());
  EXPECT_FALSE(
      ParseSegmentFileName("00000000000000000042.owj.prep").has_value());
  EXPECT_FALSE(ParseSegmentFileName("99999999999999999999.owj").has_value());
  EXPECT_FALSE(ParseSegmentFileName(kPreparedFileName).has_value());
}

TEST(FormatTest, RecordSizesFollowTheCommandKinds) {
  EXPECT_EQ(kMinRecordSize, 49u);  // CancelByOrder / CancelByClient
  EXPECT_EQ(kMaxRecordSize, 73u);  // Replace
  EXPECT_EQ(GroupFormatOf(3).min_record_size, 41u);  // without the index
  EXPECT_EQ(GroupFormatOf(3).max_record_size, 65u);
  EXPECT_EQ(AlignUp(1), 4096u);
  EXPECT_EQ(AlignUp(4096), 4096u);
  EXPECT_EQ(AlignUp(0), 0u);
}

}  // namespace
}  // namespace orderwire::journal
