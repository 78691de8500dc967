// The metadata area of a segment's header block: written with every new
// segment, copied by rotation, changed only by StartSegment() at the next
// index, read back by the reader per segment, and refused when damaged.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/format.h"
#include "journal/reader.h"
#include "journal/writer.h"
#include "tests/journal/journal_model.h"
#include "tests/journal/test_support.h"
#include "tests/support/files.h"

namespace orderwire::journal {
namespace {

using ::orderwire::journal::testing::AppendRange;
using ::orderwire::journal::testing::FlipBits;
using ::orderwire::journal::testing::ReadAndCheck;
using ::orderwire::journal::testing::SegmentPaths;
using ::orderwire::test_support::ScratchDir;
using ::testing::HasSubstr;

// Metadata of `size` bytes, different for each `seed`.
std::string MetadataOf(std::size_t size, char seed) {
  std::string text(size, '\0');
  for (std::size_t i = 0; i < size; ++i) {
    text[i] = static_cast<char>(seed + static_cast<char>(i % 23));
  }
  return text;
}

WriterOptions SmallSegments(const std::string& dir, std::string metadata) {
  WriterOptions o;
  o.directory = dir;
  o.durability = Durability::kNone;
  o.segment_size = 64 * 1024;  // rotates every ~850 records
  o.group_size = 8 * 1024;
  o.backend = IoBackend::kBlocking;
  o.metadata = std::move(metadata);
  return o;
}

std::vector<SegmentInfo> Segments(const std::string& dir) {
  const auto back = ReadAndCheck(dir, 0);  // appends start anywhere
  EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
  return back.segments;
}

TEST(MetadataTest, ANewJournalCarriesItInEverySegmentThroughRotations) {
  ScratchDir dir;
  const std::string metadata = MetadataOf(700, 'a');  // spans two sectors
  auto writer = JournalWriter::Open(SmallSegments(dir.path(), metadata));
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_EQ((*writer)->metadata(), metadata);
  AppendRange(**writer, 1, 3000, 7);
  ASSERT_TRUE((*writer)->Close().ok());
  const std::vector<SegmentInfo> segments = Segments(dir.path());
  ASSERT_GE(segments.size(), 3u);
  for (const SegmentInfo& s : segments) {
    EXPECT_EQ(s.metadata, metadata) << s.path;
    EXPECT_EQ(s.header.metadata_size, 700u);
  }
}

TEST(MetadataTest, StartSegmentPinsNewMetadataFromTheNextIndex) {
  ScratchDir dir;
  const std::string first = MetadataOf(40, 'a');
  const std::string second = MetadataOf(4032, 'A');  // the largest
  {
    auto writer = JournalWriter::Open(SmallSegments(dir.path(), first));
    ASSERT_TRUE(writer.ok()) << writer.status();
    AppendRange(**writer, 1, 100, 7);
    ASSERT_TRUE((*writer)->StartSegment(second).ok()) << (*writer)->status();
    EXPECT_EQ((*writer)->metadata(), second);
    EXPECT_EQ((*writer)->durable_index(), 100u);
    AppendRange(**writer, 101, 50, 7);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  {
    // An existing journal keeps its own metadata, whatever the options say;
    // rotations copy it.
    auto writer =
        JournalWriter::Open(SmallSegments(dir.path(), MetadataOf(9, 'z')));
    ASSERT_TRUE(writer.ok()) << writer.status();
    EXPECT_EQ((*writer)->metadata(), second);
    AppendRange(**writer, 151, 2000, 7);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  const std::vector<SegmentInfo> segments = Segments(dir.path());
  ASSERT_GE(segments.size(), 3u);
  EXPECT_EQ(segments[0].header.first_index, 1u);
  EXPECT_EQ(segments[0].last_index, 100u);
  EXPECT_EQ(segments[0].metadata, first);
  EXPECT_EQ(segments[1].header.first_index, 101u);
  for (std::size_t i = 1; i < segments.size(); ++i) {
    EXPECT_EQ(segments[i].metadata, second) << segments[i].path;
  }
}

TEST(MetadataTest, StartSegmentReplacesASegmentThatHasNoRecordYet) {
  ScratchDir dir;
  const std::string second = MetadataOf(100, 'B');
  {
    auto writer =
        JournalWriter::Open(SmallSegments(dir.path(), MetadataOf(50, 'a')));
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE((*writer)->StartSegment(second).ok()) << (*writer)->status();
    AppendRange(**writer, 1, 10, 7);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  const std::vector<SegmentInfo> segments = Segments(dir.path());
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].header.first_index, 1u);
  EXPECT_EQ(segments[0].metadata, second);
  EXPECT_EQ(segments[0].records, 10u);
}

TEST(MetadataTest, NoMetadataIsZeroSizeAndZeroChecksum) {
  ScratchDir dir;
  auto writer = JournalWriter::Open(SmallSegments(dir.path(), ""));
  ASSERT_TRUE(writer.ok()) << writer.status();
  AppendRange(**writer, 1, 10, 7);
  ASSERT_TRUE((*writer)->Close().ok());
  const std::vector<SegmentInfo> segments = Segments(dir.path());
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_TRUE(segments[0].metadata.empty());
  EXPECT_EQ(segments[0].header.metadata_size, 0u);
  EXPECT_EQ(segments[0].header.metadata_crc, 0u);
}

TEST(MetadataTest, MoreThanTheAreaHoldsIsRefused) {
  ScratchDir dir;
  auto too_large = JournalWriter::Open(
      SmallSegments(dir.path(), MetadataOf(kMaxSegmentMetadata + 1, 'a')));
  ASSERT_FALSE(too_large.ok());
  EXPECT_EQ(too_large.status().code(), absl::StatusCode::kInvalidArgument);
  auto writer = JournalWriter::Open(SmallSegments(dir.path(), "x"));
  ASSERT_TRUE(writer.ok()) << writer.status();
  const absl::Status s =
      (*writer)->StartSegment(MetadataOf(kMaxSegmentMetadata + 1, 'a'));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ((*writer)->metadata(), "x");
}

// A bit flipped in the metadata of a segment: the reader and recovery
// refuse the journal with DataLoss naming that segment; nothing of the
// metadata is handed out.
TEST(MetadataTest, ADamagedMetadataAreaIsDataLossNamingTheSegment) {
  for (const bool in_last : {false, true}) {
    SCOPED_TRACE(in_last ? "last segment" : "first of two segments");
    ScratchDir dir;
    {
      auto writer =
          JournalWriter::Open(SmallSegments(dir.path(), MetadataOf(300, 'a')));
      ASSERT_TRUE(writer.ok()) << writer.status();
      AppendRange(**writer, 1, 20, 7);
      ASSERT_TRUE((*writer)->StartSegment(MetadataOf(300, 'b')).ok());
      AppendRange(**writer, 21, 20, 7);
      ASSERT_TRUE((*writer)->Close().ok());
    }
    const std::vector<std::string> paths = SegmentPaths(dir.path());
    ASSERT_EQ(paths.size(), 2u);
    const std::string& damaged = paths[in_last ? 1 : 0];
    FlipBits(damaged, kSegmentMetadataOffset + 123, std::byte{0x10});

    auto reader = JournalReader::Open(dir.path());
    ASSERT_TRUE(reader.ok());
    Record r;
    ReadResult result;
    std::uint64_t records = 0;
    while ((result = (*reader)->Next(r)) == ReadResult::kRecord) ++records;
    EXPECT_EQ(result, ReadResult::kError);
    EXPECT_EQ(records, in_last ? 20u : 0u);
    EXPECT_EQ((*reader)->status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT((*reader)->status().message(), HasSubstr(damaged));
    EXPECT_THAT((*reader)->status().message(),
                HasSubstr("metadata checksum mismatch"));
    for (const SegmentInfo& s : (*reader)->segments()) {
      EXPECT_NE(s.path, damaged);
    }

    auto writer = JournalWriter::Open(SmallSegments(dir.path(), ""));
    ASSERT_FALSE(writer.ok());
    EXPECT_EQ(writer.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(writer.status().message(), HasSubstr(damaged));
  }
}

// A crash while the header block of the last segment was being written can
// leave a sector of its metadata unwritten (zero): that segment never
// counted (StartSegment had not returned), so recovery cuts it off like a
// segment without a header, and the journal goes on with the metadata of
// the segment before.
TEST(MetadataTest, AMetadataSectorNeverWrittenInTheLastSegmentIsATornTail) {
  ScratchDir dir;
  const std::string first = MetadataOf(900, 'a');
  {
    auto writer = JournalWriter::Open(SmallSegments(dir.path(), first));
    ASSERT_TRUE(writer.ok()) << writer.status();
    AppendRange(**writer, 1, 20, 7);
    ASSERT_TRUE((*writer)->StartSegment(MetadataOf(900, 'b')).ok());
    ASSERT_TRUE((*writer)->Close().ok());
  }
  const std::vector<std::string> paths = SegmentPaths(dir.path());
  ASSERT_EQ(paths.size(), 2u);
  std::vector<std::byte> bytes = test_support::ReadFile(paths[1]);
  std::fill(bytes.begin() + 512, bytes.begin() + 1024, std::byte{0});
  test_support::WriteFile(paths[1], bytes);
  auto writer = JournalWriter::Open(SmallSegments(dir.path(), ""));
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_TRUE((*writer)->recovery().torn_tail);
  EXPECT_EQ((*writer)->last_index(), 20u);
  EXPECT_EQ((*writer)->metadata(), first);
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(SegmentPaths(dir.path()).size(), 1u);
}

}  // namespace
}  // namespace orderwire::journal
